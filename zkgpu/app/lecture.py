"""The report's teaching rendering, written by :func:`write_teaching_pages` after the notebooks ran: the landing
page ``index.html`` (:func:`landing_html`: kept figures, the seed table, one line per notebook),
``lecture/<name>.html`` per notebook (:func:`lecture_notebook`: code folded, long tables folded, previous/next
links) and ``glossary.html`` (:mod:`zkgpu.story.glossary`).
"""

from __future__ import annotations

import base64
import copy
import html
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zkgpu.analysis import replay
from zkgpu.core.optional import notebook_tools
from zkgpu.story import glossary, seed

__all__ = ["LONG_TABLE_ROWS", "LANDING_FIGURES", "STORY_PAGE", "Page", "table_rows", "fold_long_tables", "lecture_notebook", "lecture_exporter",
           "landing_html", "seed_table_html", "write_teaching_pages",
           "page_recordings", "baselines_html"]

#: A table with more body rows than this is folded in the lecture view (and counts as long in the page budgets).
LONG_TABLE_ROWS = 12

#: The landing page's figures, in order: (key a notebook passes to ``view.figure(landing=...)``, heading).
LANDING_FIGURES = (
    ("story", "Where the GPU's time goes, per partition, at every step"),
    ("staircase", "Throughput, step by step, with compute utilization"),
)

#: The page whose finding is the whole story in one sentence (the landing page quotes it as "ours").
STORY_PAGE = "08_report"

_CSS = """body{font-family:sans-serif;line-height:1.45}
.zkgpu-prose{margin:.4em 1em;max-width:80em}
.zkgpu-nav{margin:.5em 1em;font-family:sans-serif;display:flex;gap:1.2em;flex-wrap:wrap}
details.zkgpu-code>summary{cursor:pointer;color:#666;font-size:.85em;margin:.2em 0 .2em 1em}
details.zkgpu-long>summary{cursor:pointer;color:#444;margin:.3em 0}
.jp-InputPrompt,.jp-OutputPrompt{display:none}
.jp-OutputArea-output{max-width:0;overflow-x:auto}
.jp-RenderedHTMLCommon table{display:block;max-width:100%;overflow-x:auto}
.jp-RenderedHTMLCommon{overflow-wrap:break-word;word-break:normal}
.jp-OutputArea-output pre{word-break:normal;overflow-wrap:break-word}
"""

_TEMPLATE = ("{%- extends 'lab/index.html.j2' -%}\n{% block html_head_css %}{{ super() }}"
             "<style type=\"text/css\">" + _CSS + "</style>\n{% endblock html_head_css %}\n"
             "{% block body_header %}{{ super() }}{{ resources.zkgpu_nav }}{% endblock body_header %}\n"
             "{% block body_footer %}{{ resources.zkgpu_nav }}{{ super() }}{% endblock body_footer %}\n"
             "{% block input_group %}<details class=\"zkgpu-code\"><summary>code</summary>{{ super() }}</details>{% endblock input_group %}\n"
             "{% block data_png scoped %}<div class=\"jp-RenderedImage jp-OutputArea-output {{ extra_class }}\">"
             "<img src=\"data:image/png;base64,{{ output.data['image/png'] | escape_html }}\" "
             "alt=\"{{ (output | get_metadata('alt', 'image/png') or 'figure: see the caption below it') | escape_html }}\">"
             "</div>{% endblock data_png %}")


def table_rows(fragment: str) -> list[int]:
    """The body rows of every ``<table>`` in an HTML fragment (rows outside ``<thead>``), in order."""
    out = []
    for tab in re.findall(r"<table\b.*?</table>", fragment, flags=re.S | re.I):
        body = re.sub(r"<thead\b.*?</thead>", "", tab, flags=re.S | re.I)
        rows = len(re.findall(r"<tr\b", body, flags=re.I))
        header_rows = 0 if "<thead" in tab.lower() else int(bool(re.search(r"<tr\b[^>]*>\s*<th\b", body, flags=re.I)))
        out.append(rows - header_rows)
    return out


def fold_long_tables(fragment: str, limit: int = LONG_TABLE_ROWS) -> str:
    """``fragment`` with every table longer than ``limit`` body rows folded in a ``<details>`` that names its size."""
    def fold(m: re.Match[str]) -> str:
        n = table_rows(m.group(0))[0]
        if n <= limit:
            return m.group(0)
        return f"<details class='zkgpu-long'><summary>table of {n} rows (click to show)</summary>{m.group(0)}</details>"
    return re.sub(r"<table\b.*?</table>", fold, fragment, flags=re.S | re.I)


def _is_figure(out: Any) -> bool:
    return out.get("output_type") in ("display_data", "execute_result") and "image/png" in out.get("data", {})


def _is_caption(out: Any) -> bool:
    return str(out.get("data", {}).get("text/markdown", "")).startswith("*Figure.*")


def _figures_first(outputs: list[Any]) -> list[Any]:
    """A cell's outputs with its figures (each with the caption right after it) before everything else, order kept."""
    figs: list[Any] = []
    rest: list[Any] = []
    for i, out in enumerate(outputs):
        if _is_figure(out) or (_is_caption(out) and i > 0 and _is_figure(outputs[i - 1])):
            figs.append(out)
        else:
            rest.append(out)
    return figs + rest


#: A printed line at least this long is a sentence (a finding, a verdict), not a table or a banner: the lecture view
#: sets it as prose.
PROSE_LINE = 160


def _as_prose(out: Any) -> Any:
    """A ``stdout`` stream whose every line is a sentence (:data:`PROSE_LINE`) as an HTML paragraph per line, so
    that a printed finding reads as prose, not as a wall of monospace; any other output unchanged."""
    if out.get("output_type") != "stream" or out.get("name") != "stdout":
        return out
    lines = [ln for ln in str(out.get("text", "")).splitlines() if ln.strip()]
    if not lines or any(len(ln) < PROSE_LINE for ln in lines):
        return out
    body = "".join(f"<p class='zkgpu-prose'>{html.escape(ln.strip())}</p>" for ln in lines)
    return notebook_tools().nbformat.v4.new_output("display_data", data={"text/html": body})


def lecture_notebook(nb: Any) -> Any:
    """A copy of an executed notebook as the lecture view shows it: the parameters cells left out,
    outputs that are only a raw repr (``text/plain``) dropped, long tables folded
    (:func:`fold_long_tables`), printed sentences set as prose (:func:`_as_prose`), each cell's figures before its
    other outputs."""
    nb = copy.deepcopy(nb)
    cells = []
    for cell in nb.cells:
        tags = set(cell.get("metadata", {}).get("tags", []))
        if tags & {"parameters", "injected-parameters"}:
            continue
        if cell.cell_type == "code":
            outs = []
            for out in cell.get("outputs", []):
                data = out.get("data", {})
                if out.get("output_type") in ("display_data", "execute_result") and set(data) <= {"text/plain"}:
                    continue  # a raw repr says nothing to a reader
                if "text/html" in data:
                    data["text/html"] = fold_long_tables(str(data["text/html"]))
                outs.append(_as_prose(out))
            cell.outputs = _figures_first(outs)
        cells.append(cell)
    nb.cells = cells
    return nb


def lecture_exporter() -> Any:
    """nbconvert's HTML exporter (lab template) for the lecture view: code folded behind a "code"
    toggle, no prompts, the page's navigation (``resources["zkgpu_nav"]``) above and below."""
    nt = notebook_tools()
    return nt.HTMLExporter(extra_loaders=[nt.DictLoader({"zkgpu_lecture.html.j2": _TEMPLATE})], template_file="zkgpu_lecture.html.j2")


@dataclass
class Page:
    """One notebook page of the report: file stem, title (without "zkgpu "), its one-line finding."""

    name: str
    title: str
    finding: str = ""


def _nav(pages: Sequence[Page], i: int, glossary_href: str, full_href: str) -> str:
    # no empty place-holders: the first page has no "previous", the last says it is the last (an empty "next" read as a dead link)
    prev = f"<a href='{html.escape(pages[i - 1].name)}.html'>&larr; {html.escape(pages[i - 1].name)}</a>" if i > 0 else ""
    nxt = (f"<a href='{html.escape(pages[i + 1].name)}.html'>{html.escape(pages[i + 1].name)} &rarr;</a>"
           if i + 1 < len(pages) else "<span class='zkgpu-last'>the last page</span>")
    return (f"<nav class='zkgpu-nav'>{prev}<a href='index.html'>the story (start)</a>{nxt}"
            f"<a href='{glossary_href}'>glossary</a><a href='{full_href}'>this page with its code</a></nav>")


def seed_table_html() -> str:
    """The seed-against-ours table of the landing page (:func:`zkgpu.story.seed.seed_table` of the newest GPU
    recording: the median over the baseline's runs with their range), or a line saying why there is none."""
    src = replay.recorded_source()
    if src is None or not src.on_gpu or not src.has("baseline"):
        return "<p class='hook'>No GPU recording with a baseline in the data folder: the seed table needs one.</p>"
    t = seed.shown_table(seed.seed_table(src))  # notebook 00 shows the same text, with each row's note
    rows = "".join(f"<tr><td>{html.escape(str(fig))}</td><td>{html.escape(str(r.seed))}</td><td>{html.escape(r.ours)}</td>"
                   f"<td>{html.escape(r.test)}</td><td>{r.reproduced}</td></tr>" for fig, r in zip(t.index, t.itertuples(), strict=True))
    return (f"<p>Ours: {html.escape(t.attrs['recording'])}, the median over "
            f"{t.attrs['runs']} runs of the baseline (range in brackets); milliseconds are compared as ratios and shares, "
            "since our partitions are 2^22 constraints. 'reproduced' says whether our median lies in the tested range (the "
            "seed's figure, widened to what this project accepts as its proportions); notebook 00 gives each row's note.</p>"
            f"<table><tr><th>figure</th><th>seed</th><th>ours</th><th>tested range</th><th>reproduced</th></tr>{rows}</table>")


def _numbers(key_dir: Path, name: str) -> dict[str, Any]:
    """The key numbers a page saved (``{}`` when it saved none or the file is not readable)."""
    f = key_dir / f"{name}.json"
    try:
        nums = json.loads(f.read_text(encoding="utf-8")).get("numbers", {}) if f.is_file() else {}
    except (OSError, ValueError):
        return {}
    return nums if isinstance(nums, dict) else {}


def page_recordings(key_dir: Path, name: str) -> list[str]:
    """The recordings a page's key numbers name, the most named first."""
    counts: dict[str, int] = {}
    for e in _numbers(key_dir, name).values():
        rec = str(e.get("recording") or "") if isinstance(e, dict) else ""
        if rec:
            counts[rec] = counts.get(rec, 0) + 1
    return sorted(counts, key=lambda r: -counts[r])


def baselines_html(key_dir: Path, pages: Sequence[Page]) -> str:
    """One line naming every recording whose baseline throughput a page shows, with that throughput, where there
    are several (the investigation's and the last mile's: two runs of one configuration, two numbers)."""
    seen: dict[str, tuple[float, str]] = {}
    for p in pages:
        for e in _numbers(key_dir, p.name).values():
            if (isinstance(e, dict) and e.get("scenario") == "baseline" and e.get("unit") == "partitions/min" and e.get("recording")
                    and isinstance(e.get("value"), (int, float)) and str(e["recording"]) not in seen):
                seen[str(e["recording"])] = (float(e["value"]), p.name)
    if len(seen) < 2:
        return ""
    each = "; ".join(f"<b>{html.escape(r)}</b> {v:,.0f} partitions/min (first in {html.escape(n)})" for r, (v, n) in seen.items())
    return (f"<p class='baselines'>The baseline was run in each of {len(seen)} recordings, so it has {len(seen)} throughputs, "
            f"one per recording: {each}. Each figure and each line below names its recording; compare steps within one.</p>")


def _figure_html(fig_dir: Path, key: str, heading: str, link_prefix: str) -> str:
    png, meta = fig_dir / f"{key}.png", fig_dir / f"{key}.json"
    if not png.is_file():
        return f"<h2>{html.escape(heading)}</h2><p class='failed'>Not drawn: no notebook kept the figure '{key}' in this run.</p>"
    info = json.loads(meta.read_text(encoding="utf-8")) if meta.is_file() else {}
    cap, nb, rec = str(info.get("caption", "")), str(info.get("notebook", "")), str(info.get("recording") or "")
    link = f" (<a href='{link_prefix}{html.escape(nb)}.html'>{html.escape(nb)}</a>)" if nb else ""
    link += f" Recording: <b>{html.escape(rec)}</b>." if rec else ""
    data = base64.b64encode(png.read_bytes()).decode("ascii")
    return (f"<h2>{html.escape(heading)}</h2><figure><img src='data:image/png;base64,{data}' alt='{html.escape(cap)}' "
            f"style='max-width:100%'><figcaption>{html.escape(cap)}{link}</figcaption></figure>")


def _story_html(key_dir: Path, link_prefix: str) -> str:
    """The story in short: the seed's (:func:`zkgpu.story.seed.story_text`) and ours, :data:`STORY_PAGE`'s finding."""
    f = key_dir / f"{STORY_PAGE}.json"
    ours = str(json.loads(f.read_text(encoding="utf-8")).get("finding", "")) if f.is_file() else ""
    # the finding's own numbers come first in the page's key numbers (notebook 08): their recording is the story's
    first = next((str(e["recording"]) for e in _numbers(key_dir, STORY_PAGE).values() if isinstance(e, dict) and e.get("recording")), "")
    rec = f"; recording <b>{html.escape(first)}</b>" if first else ""
    ours_html = (f"<p><b>Ours.</b> {html.escape(ours)} (<a href='{link_prefix}{STORY_PAGE}.html'>{STORY_PAGE}</a>{rec})</p>" if ours else
                 f"<p><b>Ours.</b> Not in this run: {STORY_PAGE} wrote no finding.</p>")
    return f"<h2>The story in short</h2><p><b>The seed.</b> {html.escape(seed.story_text())}</p>{ours_html}"


def step_names_html(glossary_href: str) -> str:
    """One line that reads the steps' names, part by part (the glossary's scenario names)."""
    parts = {t: d for t, d in glossary.SECTIONS["Scenario names"].items() if t not in ("scenario name", "baseline")}
    return (f"<p class='names'>Step names read left to right, one setting per part, changed from the baseline (pageable copies, "
            f"coarse lock, two GPU workers; <a href='{glossary_href}#{glossary.anchor('scenario name')}'>glossary</a>): "
            + "; ".join(f"<b>{html.escape(t)}</b>: {_code_spans(d[:1].lower() + d[1:].rstrip('.'))}" for t, d in parts.items()) + ".</p>")


def _code_spans(text: str) -> str:
    """``text`` escaped for HTML, its markdown `code` spans as <code> (a glossary entry read out on the landing page
    showed its backticks)."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


def landing_html(pages: Sequence[Page], key_dir: Path, *, data_note: str, link_prefix: str = "", nav: str = "",
                 glossary_href: str = "glossary.html") -> str:
    """The landing page: the story in short (the seed's and ours), the story's two figures (kept by the notebooks
    under ``key_dir/figures``) with the steps' names read out, the seed-against-ours table
    (:func:`seed_table_html`), one line per notebook (finding and link, ``link_prefix`` before each file name) and the data note."""
    fig_dir = key_dir / "figures"
    recs = {p.name: page_recordings(key_dir, p.name) for p in pages}
    lines = "".join(
        f"<li><a href='{link_prefix}{html.escape(p.name)}.html'>{html.escape(p.name)}</a> {html.escape(p.title)}"
        + (f": <span class='finding'>{html.escape(p.finding)}</span>" if p.finding else "")
        + (f" <span class='rec'>[{html.escape(', '.join(recs[p.name][:2]))}]</span>" if recs[p.name] else "") + "</li>" for p in pages)
    figs = "".join(_figure_html(fig_dir, k, h, link_prefix) for k, h in LANDING_FIGURES)
    return f"""{nav}<h1>zkgpu: GPU bottlenecks in a Groth16 prover</h1>
<p>A Groth16 prover of Filecoin's PoRep proves partitions on a GPU that computes only part of the time. The notebooks
re-create the seed's investigation step by step: the symptom, the host ruled out, the lock, the smoking gun (pageable
H2D), the pinned pool that fixes it, and the bottlenecks beyond.</p>
{_story_html(key_dir, link_prefix)}
{baselines_html(key_dir, pages)}
{figs}
{step_names_html(glossary_href)}
<h2>The seed against ours</h2>{seed_table_html()}
<h2>The notebooks, one line each</h2><ul class='pages'>{lines}</ul>
<h2>The data</h2><p>{html.escape(data_note)}</p>"""


def _page_doc(body: str, title: str, css: str) -> str:
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{css}</style></head><body>{body}</body></html>")


def write_teaching_pages(out_dir: Path, pages: Sequence[Page], *, data_note: str, css: str, details_href: str = "") -> list[Path]:
    """Write ``index.html`` (the landing page), ``glossary.html`` and the lecture view
    (``lecture/index.html`` and ``lecture/<name>.html`` for each page whose executed notebook
    ``<out_dir>/<name>.ipynb`` exists). Returns the files written."""
    nt = notebook_tools()
    key_dir = out_dir / "key_numbers"
    written = []
    more = f" · <a href='{details_href}'>key numbers, recordings, traces, environment</a>" if details_href else ""
    top = f"<nav class='zkgpu-nav'><a href='lecture/index.html'>lecture view</a> · <a href='glossary.html'>glossary</a>{more}</nav>"
    index = out_dir / "index.html"
    index.write_text(_page_doc(landing_html(pages, key_dir, data_note=data_note, nav=top), "zkgpu report", css), encoding="utf-8")
    gl = out_dir / "glossary.html"
    gl.write_text(glossary.html_page("<nav class='zkgpu-nav'><a href='index.html'>the story (start)</a>"
                                     " · <a href='lecture/index.html'>lecture view</a></nav>", css), encoding="utf-8")
    lect = out_dir / "lecture"
    lect.mkdir(exist_ok=True)
    shown = [p for p in pages if (out_dir / f"{p.name}.ipynb").is_file()]
    lnav = "<nav class='zkgpu-nav'><a href='../index.html'>full report</a> · <a href='../glossary.html'>glossary</a></nav>"
    li = lect / "index.html"
    li.write_text(_page_doc(landing_html(shown, key_dir, data_note=data_note, nav=lnav, glossary_href="../glossary.html"), "zkgpu lecture", css),
                  encoding="utf-8")
    # the notebooks' own links to the glossary ("[glossary](glossary.html)") resolve beside the lecture pages too
    lgl = lect / "glossary.html"
    lgl.write_text(glossary.html_page("<nav class='zkgpu-nav'><a href='index.html'>the story (start)</a>"
                                      " · <a href='../index.html'>full report</a></nav>", css), encoding="utf-8")
    written += [index, gl, li, lgl]
    exporter = lecture_exporter()
    for i, p in enumerate(shown):
        nb = lecture_notebook(nt.nbformat.read(out_dir / f"{p.name}.ipynb", as_version=4))
        nav = _nav(shown, i, "../glossary.html", f"../{p.name}.html")
        body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": f"zkgpu {p.title}"}, "zkgpu_nav": nav})
        f = lect / f"{p.name}.html"
        f.write_text(body, encoding="utf-8")
        written.append(f)
    return written
