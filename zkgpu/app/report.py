"""``zkgpu report``: execute the notebook suite and render it to HTML with an index page.

Each notebook is executed with nbclient in its own kernel (:func:`kernel_config`), its settings injected as
papermill parameters (:func:`notebook_parameters`), and exported to HTML (:func:`html_exporter`). This module is
the one place that reads the notebooks' environment variables (``ZKGPU_MODE``, ``ZKGPU_HOST_LOAD``,
``ZKGPU_NB_OUT``). The index page names the data read, each notebook's finding and key numbers
(:func:`read_key_numbers`), one trace per scenario and the environment; a failing notebook is reported by name
and the rest still run.
"""

from __future__ import annotations

import datetime as _dt
import html
import json
import math
import os
import re
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from zkgpu.analysis.chrome_trace import export_recording, trace_file_name
from zkgpu.analysis.replay import (
    Recording,
    data_dir,
    find_benchmarks,
    inventory,
    inventory_by_kind,
    latest_recording,
    shown_path,
    story_order,
)
from zkgpu.app.lecture import Page, write_teaching_pages
from zkgpu.app.live import open_source, resolve_mode
from zkgpu.core.optional import notebook_tools
from zkgpu.story.bottleneck import last_mile_recordings

__all__ = ["NotebookResult", "KeyNumber", "SHOWN_KEY_NUMBERS", "page_title", "TraceFile", "run_report", "find_notebooks", "html_exporter",
           "kernel_config", "format_value", "infer_unit", "read_key_numbers", "export_traces", "notebook_parameters",
           "resolve_report_mode"]

REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class NotebookResult:
    """Outcome of one notebook: name, status ("ok" or "failed"), seconds, HTML path, error text, and
    the page's title (:func:`page_title`, '' if unknown)."""

    name: str
    status: str
    seconds: float
    html: Path | None
    error: str = ""
    title: str = ""


def find_notebooks(root: Path | None = None, only: tuple[str, ...] = ()) -> list[Path]:
    """The notebooks of the suite, sorted by name; ``only`` keeps names containing any given text."""
    nb_dir = (root or REPO_ROOT) / "notebooks"
    paths = sorted(p for p in nb_dir.glob("*.ipynb") if not p.name.startswith("_"))
    if only:
        paths = [p for p in paths if any(s in p.name for s in only)]
    return paths


_NOTEBOOK_CSS = """
/* zkgpu report: wide tables and long code lines scroll sideways instead of being cut off */
.jp-OutputArea-output { max-width: 0; overflow-x: auto; }
.jp-RenderedHTMLCommon table { display: block; max-width: 100%; overflow-x: auto; }
.jp-InputArea-editor .highlight pre { overflow-x: auto; }
/* printed findings wrap between words, never inside a number (JupyterLab's outputs use break-all: "15⏎8") */
.jp-OutputArea-output pre { word-break: normal; overflow-wrap: break-word; }
"""
# nbconvert's lab template, with the CSS above in its last head block (after the lab styles it overrides)
_NOTEBOOK_CSS += ".zkgpu-nav { margin: .5em 1em; font-family: sans-serif; }\n"
# nbconvert's lab template with: the CSS above in its last head block (after the lab styles it
# overrides); a link back to the index at the top of every page; each figure's caption as its alt
# text (zkgpu.app.view.figure puts it in the output's image/png metadata under "alt")
_TEMPLATE = ("{%- extends 'lab/index.html.j2' -%}\n{% block html_head_css %}{{ super() }}"
             "<style type=\"text/css\">" + _NOTEBOOK_CSS + "</style>\n{% endblock html_head_css %}\n"
             "{% block body_header %}{{ super() }}<nav class=\"zkgpu-nav\"><a href=\"index.html\">&larr; zkgpu report: the story "
             "(start)</a> · <a href=\"lecture/{{ resources.metadata.stem }}.html\">lecture view</a> · "
             "<a href=\"glossary.html\">glossary</a></nav>{% endblock body_header %}\n"
             "{% block data_png scoped %}<div class=\"jp-RenderedImage jp-OutputArea-output {{ extra_class }}\">"
             "<img src=\"data:image/png;base64,{{ output.data['image/png'] | escape_html }}\" "
             "alt=\"{{ (output | get_metadata('alt', 'image/png') or 'figure: see the caption below it') | escape_html }}\">"
             "</div>{% endblock data_png %}")


def html_exporter() -> Any:
    """nbconvert's HTML exporter (lab template) whose pages let wide tables and code scroll sideways;
    papermill's injected-parameters cell is left out of the page (the page's banner names the mode)."""
    nt = notebook_tools()
    exporter = nt.HTMLExporter(extra_loaders=[nt.DictLoader({"zkgpu_report.html.j2": _TEMPLATE})], template_file="zkgpu_report.html.j2")
    exporter.register_preprocessor(nt.TagRemovePreprocessor(remove_cell_tags={"injected-parameters"}, enabled=True), enabled=True)
    return exporter


def kernel_config(kernel_name: str = "python3") -> Any:
    """traitlets config for the notebooks' kernels, so that ipykernel does not warn about unencrypted TCP: CurveZMQ
    where available, else IPC on POSIX, else the default TCP transport.
    """
    nt = notebook_tools()
    cfg = nt.Config()
    try:
        meta = nt.KernelSpecManager().get_kernel_spec(kernel_name).metadata or {}
    except nt.NoSuchKernel:
        meta = {}
    declared = meta.get("supported_encryption") or ()
    declared = {declared} if isinstance(declared, str) else set(declared)
    if "transport_encryption" in nt.KernelManager.class_trait_names() and nt.zmq.has("curve") and "curve" in declared:
        cfg.KernelManager.transport_encryption = "auto"
    elif os.name == "posix":
        cfg.KernelManager.transport = "ipc"
    return cfg


def page_title(nb: Any, fallback: str) -> str:
    """A notebook page's title: "zkgpu " + the text of its first markdown heading (``fallback``,
    e.g. the file stem, when it has none)."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in str(cell.source).splitlines():
                if line.startswith("#"):
                    text = line.lstrip("#").strip().replace("`", "")
                    return text if text.startswith("zkgpu") else "zkgpu " + text
    return "zkgpu " + fallback


def resolve_report_mode(mode: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """``live`` or ``replay`` (:func:`zkgpu.app.live.resolve_mode`) from ``mode``, else
    ``$ZKGPU_MODE``, else ``auto`` (live iff a GPU is present).

    Raises:
        ValueError: an unknown mode (names it).
    """
    env = os.environ if environ is None else environ
    return resolve_mode(mode if mode is not None else (env.get("ZKGPU_MODE") or "auto"))


def notebook_parameters(mode: str, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The papermill parameters every notebook of the suite gets (names of its ``parameters`` cell):
    ``MODE`` (``live`` or ``replay``, as resolved by :func:`resolve_report_mode`) and, when
    ``$ZKGPU_HOST_LOAD`` is set, ``HOST_LOAD`` (host memory-load threads of live runs, an int >= 0).

    Raises:
        ValueError: ``mode`` is not ``live``/``replay``, or ``ZKGPU_HOST_LOAD`` is not an integer >= 0.
    """
    if mode not in ("live", "replay"):
        raise ValueError(f"mode must be 'live' or 'replay', got {mode!r}")
    env = os.environ if environ is None else environ
    params: dict[str, Any] = {"MODE": mode}
    load = env.get("ZKGPU_HOST_LOAD", "").strip()
    if load:
        if not load.isdigit():
            raise ValueError(f"ZKGPU_HOST_LOAD must be an integer >= 0, got {load!r}")
        params["HOST_LOAD"] = int(load)
    return params


def _execute(path: Path, out_dir: Path, params: Mapping[str, Any], timeout: int) -> NotebookResult:
    nt = notebook_tools()
    nb = nt.parameterize_notebook(nt.load_notebook_node(str(path)), dict(params), kernel_name="python3", language="python")
    t0 = time.perf_counter()
    status, error = "ok", ""
    try:
        client = nt.NotebookClient(
            nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}},
            config=kernel_config(),
        )
        client.execute()
    except nt.CellExecutionError as exc:
        status, error = "failed", str(exc)
    except Exception as exc:  # noqa: BLE001 - any failure of one notebook (kernel died, timeout, ...) is reported, the others still run
        status, error = "failed", f"{type(exc).__name__}: {exc}"
    seconds = time.perf_counter() - t0
    title = page_title(nb, path.stem)
    body, _ = html_exporter().from_notebook_node(nb, resources={"metadata": {"name": title, "stem": path.stem}})
    out = out_dir / f"{path.stem}.html"
    out.write_text(body, encoding="utf-8")
    nt.nbformat.write(nb, out_dir / path.name)
    return NotebookResult(path.stem, status, seconds, out, error, title)


def _data_note(mode: str) -> str:
    """One sentence naming the data the notebooks read (see zkgpu.analysis.replay)."""
    if mode == "live":
        return "Data: measured live on this machine's GPU while the notebooks ran."
    rec = latest_recording()
    if rec is None:
        return ("Data: no recording in data/ yet, so every notebook uses a tiny CPU stand-in run of the pipeline "
                "(CPU milliseconds, NOT GPU numbers). Record one on a GPU with `zkgpu record`.")
    others = []
    last_mile = last_mile_recordings()
    if last_mile:
        lm = last_mile[0].path
        others.append(f"07b and 08's last-mile page replay data/{lm.relative_to(data_dir()).as_posix() if lm.is_relative_to(data_dir()) else lm.name}")
    prove = find_benchmarks("prove")
    if prove is not None:
        others.append(f"10 replays data/{prove[0].name}")
    extra = f" ({'; '.join(others)}: their own runs, so their baselines differ from this one's)" if others else ""
    kinds = inventory_by_kind(inventory())["recordings"]
    counted = f" data/ holds {int(kinds.sum())} recordings: " + ", ".join(f"{n} {k}" for k, n in kinds.items()) + f" ({DETAILS_PAGE} says what each kind is)."
    return f"Data: replay of {rec.label}{extra}.{counted}"


def _code(text: str) -> str:
    """``text`` as HTML, its markdown `code` spans as <code>."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


def _recordings_html() -> str:
    """The recordings in the data folder counted by kind, with what each kind is
    (:func:`zkgpu.analysis.replay.inventory_by_kind`); '' when there is none."""
    by = inventory_by_kind(inventory())
    if not len(by):
        return ""
    rows = "".join(f"<tr><td>{html.escape(str(k))}</td><td class='num'>{int(r['recordings'])}</td><td>{html.escape(str(r['details']))}</td>"
                   f"<td>{_code(str(r['what']))}</td></tr>" for k, r in by.iterrows())
    return (f"<h2>Recordings in data/</h2><p>Every folder with a <code>manifest.json</code> in <code>{html.escape(shown_path(data_dir()))}</code> "
            f"and its sub-folders, {int(by['recordings'].sum())} in all, by kind:</p><div class='scroll'><table><tr><th>kind</th>"
            f"<th class='num'>recordings</th><th>details</th><th>what it is</th></tr>{rows}</table></div>")


# --------------------------------------------------------------------------- key numbers

def _fixed(x: float, sig: int = 3) -> str:
    """``x`` in positional notation with ``sig`` significant digits (never scientific), integer
    digits kept, trailing zeros too: 0.000295 -> "0.000295", 42.0 -> "42.0", 484.2 -> "484",
    12345.6 -> "12,346"."""
    if x == 0:
        return "0"
    if abs(x) >= 10 ** sig:
        return f"{x:,.0f}"
    return np.format_float_positional(x, precision=sig, unique=False, fractional=False, trim="k").rstrip(".")


def format_value(value: Any, unit: str = "") -> str:
    """A key number as text: ``"%"`` fractions as percentages with one decimal (0.435 -> "43.5%";
    under 1%: two significant digits, 0.00029 -> "0.029%"), floats with 3
    significant digits in positional notation, integers with thousands separators, then the unit
    (``"ms"``, ``"GB/s"``, ``"partitions/min"``; ``"x"`` as "2.13×"). None / NaN -> "—"; lists are
    joined with ", "; strings are returned as given."""
    if isinstance(value, (list, tuple)):
        return ", ".join(format_value(v, unit) for v in value)
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        if unit == "%":
            pct = float(value) * 100
            return (f"{pct:.1f}" if abs(pct) >= 1 else _fixed(pct, 2)) + "%"
        text = f"{value:,}" if isinstance(value, int) else _fixed(float(value))
        if unit == "x":
            return text + "×"
        return f"{text}\u00a0{unit}" if unit else text  # no-break space: a number stays with its unit
    return str(value)


def infer_unit(key: str, value: Any) -> str:
    """The unit of an old flat ``key: scalar`` entry, from its name: ``*util*``, ``*share*``,
    ``*rel_err*`` fractions -> "%", ``*_ms`` -> "ms", ``*gbps*`` -> "GB/s", ``*per_min*`` ->
    "partitions/min", ``*speedup*`` -> "x"; else ""."""
    k = key.lower()
    nums = [v for v in (value if isinstance(value, (list, tuple)) else [value])
            if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if not nums:
        return ""
    if any(t in k for t in ("util", "share", "rel_err", "fraction")) and all(abs(v) <= 1.5 for v in nums):
        return "%"
    if k.endswith("_ms") or "_ms_" in k:
        return "ms"
    if "gbps" in k:
        return "GB/s"
    if "per_min" in k:
        return "partitions/min"
    if "speedup" in k:
        return "x"
    return ""


def _is_number(value: Any) -> bool:
    items = value if isinstance(value, (list, tuple)) else [value]
    return all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in items)


@dataclass
class KeyNumber:
    """One row of a notebook's key numbers on the index page."""

    label: str
    scenario: str
    text: str
    numeric: bool = True  # right-aligned in its column
    recording: str = ""  # the recording it was computed from ('' where none applies)


def read_key_numbers(path: Path) -> tuple[str, list[KeyNumber]]:
    """A notebook's ``$ZKGPU_NB_OUT/<name>.json`` as (finding, rows): the key-numbers contract, or the old flat
    ``{key: scalar | list | {scenario: scalar}}`` format (units from :func:`infer_unit`).

    Raises:
        ValueError: the file is not valid JSON or not an object.
    """
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except RecursionError:  # nested deeper than json's stack: damaged, said as the other unreadable files are
        raise ValueError(f"{path.name}: JSON nested too deeply to read") from None
    if not isinstance(obj, dict):
        raise ValueError(f"{path.name}: key numbers must be a JSON object")
    finding = str(obj.get("finding") or "")
    numbers = obj["numbers"] if isinstance(obj.get("numbers"), dict) else {k: v for k, v in obj.items() if k != "finding"}
    rows: list[KeyNumber] = []
    for key, entry in numbers.items():
        if isinstance(entry, dict) and "value" in entry:
            # a relative error (may be negative, so not a "%" of the contract) still reads as a percentage
            unit = str(entry.get("unit") or ("%" if "rel_err" in str(key) and infer_unit(key, entry["value"]) == "%" else ""))
            rows.append(KeyNumber(str(entry.get("label") or key), str(entry.get("scenario") or ""),
                                  format_value(entry["value"], unit), _is_number(entry["value"]), str(entry.get("recording") or "")))
        elif isinstance(entry, dict):
            for scen, v in entry.items():
                rows.append(KeyNumber(key, str(scen), format_value(v, infer_unit(key, v)), _is_number(v)))
        else:
            rows.append(KeyNumber(key, "", format_value(entry, infer_unit(key, entry)), _is_number(entry)))
    return finding, rows


#: Key numbers shown on a notebook's card before the rest fold away under "all N key numbers".
SHOWN_KEY_NUMBERS = 12


def _key_numbers_html(rows: list[KeyNumber], shown: int = SHOWN_KEY_NUMBERS) -> str:
    """A notebook's key numbers as a table: the first ``shown`` rows (the notebook lists its
    finding's numbers first), the others in a folded ``<details>`` table below it."""
    scen = any(k.scenario for k in rows)  # the scenario column only where one is named
    recs = any(k.recording for k in rows)  # the recording column too: one name may hold different values in two recordings

    def tab(part: list[KeyNumber]) -> str:
        trs = "".join(f"<tr><td>{html.escape(k.label)}</td>"
                      + (f"<td>{html.escape(k.scenario)}</td>" if scen else "")
                      + (f"<td>{html.escape(k.recording)}</td>" if recs else "")
                      + f"<td class='{'num' if k.numeric else 'txt'}'>{html.escape(k.text)}</td></tr>" for k in part)
        return ("<div class='scroll'><table class='kn'><tr><th>key number</th>" + ("<th>scenario</th>" if scen else "")
                + ("<th>recording</th>" if recs else "") + f"<th class='num'>value</th></tr>{trs}</table></div>")

    if len(rows) <= shown + 2:  # folding away one or two rows would hide more than it saves
        return tab(rows)
    return (tab(rows[:shown]) + f"<details><summary>all {len(rows)} key numbers of this notebook</summary>"
            + tab(rows[shown:]) + "</details>")


def _reading_guide(results: list[NotebookResult]) -> str:
    """One paragraph on how to read the cards below: in story order, each with its own finding,
    and where the whole story is on one page (``08_report``, when it ran)."""
    one_page = next((r for r in results if r.name.startswith("08_") and r.html is not None), None)
    return ("<p>The notebooks tell one story, in this order: the symptom, the host ruled out, the mutex and the barrier, "
            "the smoking gun (pageable H2D), the H2D bandwidth, the pinned-pool fix, the next and the last bottleneck, "
            "the report, the diagnosis of any cuzk log (zkgpu diagnose), real proofs. Each card gives the notebook's title, its one-sentence finding and its key numbers, "
            "all computed from <code>data/</code>"
            + (f"; <a href='{html.escape(one_page.html.name)}'>{html.escape(one_page.name)}</a> puts the whole story on one page"
               if one_page is not None and one_page.html is not None else "") + ".</p>")


def _notebooks_html(results: list[NotebookResult], key_dir: Path) -> str:
    """Per notebook: link, status, seconds, its one-line finding and its key numbers."""
    parts = []
    for r in results:
        link = html.escape(r.html.name) if r.html else "#"
        # the page's title without the "zkgpu " prefix and the number the link already gives ("01 — ")
        title = r.title.removeprefix("zkgpu").strip().split("— ", 1)[-1].strip()
        head = (f"<h3><a href='{link}'>{html.escape(r.name)}</a>" + (f" <span class='title'>{html.escape(title)}</span>" if title else "")
                + f" <span class='{r.status}'>{r.status}</span> <span class='secs'>{r.seconds:.1f} s</span></h3>")
        body = ""
        if r.error:
            body += f"<pre class='failed'>{html.escape(r.error.strip().splitlines()[-1])}</pre>"
        f = key_dir / f"{r.name}.json"
        if f.is_file():
            try:
                finding, rows = read_key_numbers(f)
            except ValueError as exc:
                finding, rows = f"(key numbers unreadable: {exc})", []
            if finding:
                body += f"<p class='finding'>{html.escape(finding)}</p>"
            if rows:
                body += _key_numbers_html(rows)
        parts.append(f"<section class='nb'>{head}{body}</section>")
    return "\n".join(parts)


# --------------------------------------------------------------------------- traces


@dataclass
class TraceFile:
    """One exported trace: scenario, file, events written."""

    scenario: str
    path: Path
    events: int


def _traced_recording(mode: str, live_dir: Path):
    """The recording the notebooks read: replay's choice, or in live mode the live run under
    ``live_dir`` with the most scenarios (newest on ties); None if there is none."""
    if mode != "live":
        return open_source("replay").recording
    runs = []
    for mf in live_dir.glob("*/*/manifest.json"):
        try:
            rec = Recording.open(mf.parent)
        except (OSError, ValueError):
            continue
        runs.append((len([s for s in rec.scenarios if rec.scenario(s).get("events")]), mf.stat().st_mtime, rec))
    return max(runs, key=lambda t: t[:2])[2] if runs else None


def export_traces(rec, trace_dir: Path) -> list[TraceFile]:
    """One Chrome/Perfetto trace per scenario of ``rec`` into ``trace_dir/<slug>.json``, in story order; earlier
    ``*.json`` files are removed first and each trace is created exclusively.

    Raises:
        ValueError: ``trace_dir`` is a symbolic link or not a folder; ExportError for an unreadable table.
    """
    if trace_dir.is_symlink() or (trace_dir.exists() and not trace_dir.is_dir()):
        raise ValueError(f"{trace_dir} is a link or a file, not the report's traces folder (remove it)")
    trace_dir.mkdir(parents=True, exist_ok=True)
    for old in trace_dir.glob("*.json"):
        old.unlink()  # a link itself, never its target
    out: list[TraceFile] = []
    taken: set[str] = set()
    for s in story_order(rec.scenarios):  # the story's order, as every table and figure
        if rec.scenario(s).get("events"):
            path, n = export_recording(rec, trace_dir / trace_file_name(s, taken), [s])
            out.append(TraceFile(s, path, n))
    return out


def _traces_html(traces: list[TraceFile], rec, out_dir: Path, problem: str = "") -> str:
    if problem:
        return f"<h2>Zoomable timelines</h2><p class='failed'>No traces written: {html.escape(problem)}</p>"
    if not traces:
        return ""
    rows = "".join(
        f"<tr><td>{html.escape(t.scenario)}</td><td><a href='{html.escape(t.path.relative_to(out_dir).as_posix())}'>"
        f"{html.escape(t.path.relative_to(out_dir).as_posix())}</a></td><td class='num'>{t.events:,}</td>"
        f"<td class='num'>{t.path.stat().st_size / 1e3:,.0f} kB</td></tr>" for t in traces)
    return (
        "<h2>Zoomable timelines</h2>"
        f"<p>Every event of every scenario of <code>{html.escape(rec.folder)}</code> as a Chrome / Perfetto trace: "
        "open <a href='https://ui.perfetto.dev'>ui.perfetto.dev</a> and drop the file on it (or <i>Open trace file</i>), "
        "or load it in <code>chrome://tracing</code>. One process per GPU with a thread per worker (its CPU prep, "
        "finalizer and queue threads apart) and one for the host's synthesis threads; click a slice for its "
        "partition, bytes, GPU ms and GB/s. Any recording: <code>zkgpu trace export RUN --scenario S --out F.json</code>.</p>"
        f"<div class='scroll'><table><tr><th>scenario</th><th>trace</th><th class='num'>events</th>"
        f"<th class='num'>size</th></tr>{rows}</table></div>"
    )


_INDEX_CSS = """body{font-family:sans-serif;max-width:64em;margin:2em auto;padding:0 1em;line-height:1.4}
table{border-collapse:collapse} td,th{padding:.2em .8em;text-align:left;vertical-align:top}
tr:nth-child(even) td{background:#f6f6f6} th{border-bottom:1px solid #999}
.num{text-align:right;font-variant-numeric:tabular-nums}
.scroll{max-width:100%;overflow-x:auto} section.nb{margin:1.2em 0} section.nb h3{margin:.2em 0}
.finding{margin:.3em 0 .5em 0;font-size:1.05em} .title{font-weight:normal} .secs{color:#666;font-weight:normal;font-size:.85em}
details{margin:.3em 0} summary{cursor:pointer;color:#444}
.ok{color:#070;font-size:.85em} .failed{color:#b00;font-weight:bold} pre{margin:0;white-space:pre-wrap}"""


#: The page with every notebook's key numbers, the recordings, the traces and the environment.
DETAILS_PAGE = "details.html"


def _pages(results: list[NotebookResult], key_dir: Path) -> list[Page]:
    """The landing page's line per notebook: name, title without the "zkgpu NN —" prefix, finding."""
    pages = []
    for r in results:
        finding = ""
        f = key_dir / f"{r.name}.json"
        if f.is_file():
            try:
                finding = read_key_numbers(f)[0]
            except ValueError:
                finding = ""
        title = r.title.removeprefix("zkgpu").strip().split("— ", 1)[-1].strip()
        pages.append(Page(r.name, title + ("" if r.status == "ok" else " (failed)"), finding))
    return pages


def _write_index(out_dir: Path, results: list[NotebookResult], mode: str, note: str, extra_html: str = "",
                 environment: Mapping[str, Any] | None = None) -> Path:
    env = dict(environment or {})
    if mode == "replay":  # nothing on this machine ran the GPU code: say so instead of "None"
        env = {k: ("none (replay)" if v is None and k in ("gpu", "cupy", "cuda", "driver", "runtime") else v) for k, v in env.items()}
    env_rows = "\n".join(f"<tr><td>{html.escape(str(k))}</td><td>{html.escape(str(v))}</td></tr>" for k, v in env.items())
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>zkgpu report</title>
<style>{_INDEX_CSS}</style></head><body>
<nav><a href="index.html">&larr; the story (start)</a> · <a href="glossary.html">glossary</a></nav>
<h1>zkgpu report: key numbers, recordings, traces, environment</h1>
<p>Generated {_dt.datetime.now().isoformat(timespec='seconds')} in <b>{html.escape(mode)}</b> mode. {html.escape(note)}</p>
<h2>Key numbers and findings, per notebook</h2>
{_reading_guide(results)}
{_notebooks_html(results, out_dir / "key_numbers")}
{extra_html}
{f"<h2>Environment</h2><div class='scroll'><table>{env_rows}</table></div>" if env_rows else ""}</body></html>"""
    index = out_dir / DETAILS_PAGE
    index.write_text(page, encoding="utf-8")
    return index


def run_report(out_dir: str | Path = "reports", mode: str | None = None, only: tuple[str, ...] = (), timeout: int = 1800,
               environment: Mapping[str, Any] | None = None) -> bool:
    """Execute the notebooks into ``out_dir``; True when every notebook ran without error. Writes per notebook
    ``<name>.html`` and ``<name>.ipynb``, ``key_numbers/``, ``traces/`` and ``index.html``.

    Args:
        out_dir: output folder.
        mode: ``live``, ``replay`` or ``auto`` (default ``$ZKGPU_MODE`` or auto: live with a GPU).
        only: run only notebooks whose file name contains one of these strings.
        timeout: seconds allowed per cell.
        environment: ``zkgpu info --json``'s fields for the index page (None: no section).

    Raises:
        ValueError: an unknown mode, or a bad ``ZKGPU_HOST_LOAD``.
    """
    mode = resolve_report_mode(mode)
    params = notebook_parameters(mode)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    notebooks = find_notebooks(only=only)
    note = _data_note(mode) if notebooks else "No notebooks exist yet in notebooks/: nothing was executed."
    key_dir = out / "key_numbers"
    key_dir.mkdir(exist_ok=True)
    live_dir = out / "live"
    if mode == "live":
        shutil.rmtree(live_dir, ignore_errors=True)  # this report's live runs only
    env = {"ZKGPU_MODE": mode,  # for zkgpu.analysis.replay's defaults (the notebooks get MODE as a parameter)
           "ZKGPU_NB_OUT": str(key_dir.resolve())}  # key numbers go here, live runs into its sibling live/ (traces below)
    env_before = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    results: list[NotebookResult] = []
    try:
        with tqdm(notebooks, desc="notebooks", unit="nb", dynamic_ncols=True) as bar:
            for path in bar:
                bar.set_postfix_str(path.stem)
                (key_dir / f"{path.stem}.json").unlink(missing_ok=True)  # no stale numbers from an earlier run
                res = _execute(path, out, params, timeout)
                results.append(res)
                if res.status != "ok":
                    bar.write(f"FAILED {path.name}:\n{res.error[-3000:]}")
    finally:
        for k, v in env_before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    traces_html = ""
    if results:
        try:
            rec = _traced_recording(mode, live_dir)
            traces = export_traces(rec, out / "traces") if rec is not None else []
            traces_html = _traces_html(traces, rec, out) if rec is not None else ""
        except (OSError, ValueError, KeyError) as exc:
            traces_html = _traces_html([], None, out, problem=f"{type(exc).__name__}: {exc}")
            print(f"report: traces not written: {exc}")
    _write_index(out, results, mode, note, _recordings_html() + traces_html, environment)
    index = out / "index.html"
    write_teaching_pages(out, _pages(results, key_dir), data_note=note, css=_INDEX_CSS, details_href=DETAILS_PAGE)
    failed = [r.name for r in results if r.status != "ok"]
    print(f"report: {len(results) - len(failed)}/{len(results)} notebooks ok -> {index} (lecture view: {index.parent / 'lecture' / 'index.html'})")
    if note:
        print(f"report: {note}")
    if failed:
        print(f"report: failed: {', '.join(failed)}")
    return not failed
