"""The teaching rendering (issue 21): the glossary, the lecture view's folding and navigation, the landing
page, key numbers keyed by (name, recording, scenario). The page budgets on the executed notebooks are
in tests/test_notebooks.py (they need the executed suite)."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest

pytest.importorskip("nbformat")
import nbformat
import pagebudget

from zkgpu.analysis import gpu_time, keynumbers, metrics, plots
from zkgpu.app import lecture
from zkgpu.story import glossary

SEED_TERMS = ("PoRep", "sector", "partition", "C2", "upstream", "split_vectors", "gpu_queue", "b_g2_msm", "QAP", "Pippenger", "XYZZ")


def test_glossary_defines_every_legend_term_both_bounds_and_the_seeds_vocabulary():
    legend = [*plots.PHASE_COLORS, *plots.METRIC_COLORS, *plots.PATH_STYLES, *plots.SERIES_STYLE, *metrics.GPU_PATH, *gpu_time.IDLE_PARTS]
    missing = [t for t in [*legend, *SEED_TERMS, "GPU-phase bound", "compute-only bound", "H2D share"] if not glossary.defined(t)]
    assert not missing, f"terms without a definition in zkgpu.story.glossary: {missing}"
    page = glossary.html_page()
    assert page.count("<tr id='term-") == len(glossary.TERMS) and "<code>" in page


def test_long_tables_are_counted_by_body_rows_and_folded():
    rows = "".join(f"<tr><td>{i}</td></tr>" for i in range(13))
    long_tab, short_tab = f"<table><thead><tr><th>x</th></tr></thead><tbody>{rows}</tbody></table>", "<table><tr><th>x</th></tr><tr><td>1</td></tr></table>"
    assert lecture.table_rows(long_tab + short_tab) == [13, 1]
    folded = lecture.fold_long_tables(long_tab + short_tab)
    assert folded.startswith("<details class='zkgpu-long'><summary>table of 13 rows") and folded.endswith(short_tab)


def test_lecture_notebook_drops_parameters_and_raw_reprs_and_puts_figures_first():
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell("MODE = None", metadata={"tags": ["parameters"]})
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [nbformat.v4.new_output("execute_result", data={"text/plain": "<Styler at 0x7f>"}, execution_count=1),
                    nbformat.v4.new_output("display_data", data={"text/html": "<table><tr><td>1</td></tr></table>", "text/plain": "t"}),
                    nbformat.v4.new_output("display_data", data={"image/png": "AAAA", "text/plain": "<Figure>"}),
                    nbformat.v4.new_output("display_data", data={"text/markdown": "*Figure.* a caption", "text/plain": "c"})]
    nb.cells = [nbformat.v4.new_markdown_cell("# t"), params, cell]
    out = lecture.lecture_notebook(nb)
    assert len(out.cells) == 2 and len(nb.cells) == 3  # a copy: the executed notebook is kept as it ran
    kinds = [next(k for k in ("image/png", "text/markdown", "text/html") if k in o["data"]) for o in out.cells[1].outputs]
    assert kinds == ["image/png", "text/markdown", "text/html"]


def test_teaching_pages_link_every_page_to_its_neighbours_and_the_glossary(tmp_path: Path):
    names = ["01_a", "02_b", "03_c"]
    for n in names:
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_markdown_cell(f"# {n}"), nbformat.v4.new_code_cell("1")]
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nbformat.write(nb, tmp_path / f"{n}.ipynb")
    (tmp_path / "key_numbers").mkdir()
    pages = [lecture.Page(n, f"title {n}", f"finding of {n}") for n in names]
    written = lecture.write_teaching_pages(tmp_path, pages, data_note="Data: a test.", css="", details_href="details.html")
    assert {p.relative_to(tmp_path).as_posix() for p in written} == {"index.html", "glossary.html", "lecture/index.html", "lecture/glossary.html",
                                                                       *(f"lecture/{n}.html" for n in names)}
    mid = (tmp_path / "lecture" / "02_b.html").read_text()
    assert 'href="01_a.html"' in mid and 'href="03_c.html"' in mid and 'href="../glossary.html"' in mid
    assert "<details class=\"zkgpu-code\"><summary>code</summary>" in mid
    index = (tmp_path / "index.html").read_text()
    assert all(f"finding of {n}" in index for n in names) and "glossary.html" in index
    assert "Not drawn: no notebook kept the figure 'staircase'" in index and "ntt_msm_h / prep_msm (baseline)" in index  # the seed table of the newest recording


def test_key_numbers_name_their_recording(tmp_path: Path):
    keynumbers.recorded_from("rec-A", last_mile_="rec-B")
    try:
        keynumbers.save_key_numbers("x", {"baseline_per_min": keynumbers.number(190.0, "partitions/min", "throughput", "baseline"),
                                          "last_mile_best": keynumbers.number(1150.0, "partitions/min", "throughput", "best"),
                                          "own": keynumbers.number(1.0, "", "own", "", recording="rec-C"), "plain": 3}, out_dir=tmp_path)
    finally:
        keynumbers.recorded_from("")
    nums = json.loads((tmp_path / "x.json").read_text())["numbers"]
    assert [keynumbers.identity(k, e)[1] for k, e in nums.items()] == ["rec-A", "rec-B", "rec-C", ""]
    with pytest.raises(ValueError, match="plain name"):
        keynumbers.save_figure("../x", b"", "", out_dir=tmp_path)


def test_key_numbers_one_value_per_name_and_recording():
    """The rule the report's test applies to the executed notebooks (tests/test_notebooks.py), on a case that breaks it."""
    a = {"n": {"value": 190.0, "label": "throughput", "scenario": "baseline", "recording": ""}}
    b = {"m": {"value": 268.0, "label": "throughput", "scenario": "baseline", "recording": "rec-4"}}
    assert pagebudget.conflicting_numbers({"01": a, "07b": b})  # one of them names no recording
    a["n"]["recording"] = "rec-2"
    assert not pagebudget.conflicting_numbers({"01": a, "07b": b})


def test_key_number_cards_name_the_recording(tmp_path: Path):
    from zkgpu.app import report

    f = tmp_path / "x.json"
    f.write_text(json.dumps({"finding": "f", "numbers": {"a": keynumbers.number(268.0, "partitions/min", "throughput", "baseline", recording="rec-4")}}))
    _, rows = report.read_key_numbers(f)
    assert rows[0].recording == "rec-4"
    assert "<th>recording</th>" in report._key_numbers_html(rows) and "<td>rec-4</td>" in report._key_numbers_html(rows)


def _local_links(page: Path) -> list[str]:
    import re

    hrefs = re.findall(r"href=[\"']([^\"'#]+)", page.read_text(encoding="utf-8"))
    return [h for h in hrefs if not h.startswith(("http:", "https:", "data:", "mailto:"))]


def test_landing_page_tells_the_seeds_story_and_ours_and_every_link_resolves(tmp_path: Path):
    """A reader of the landing page alone can state the seed's story and our result; the glossary the notebooks
    link as "glossary.html" exists beside the lecture pages too (it did not: two dead links)."""
    from zkgpu.story import seed

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# 08\n\nTerms: the [glossary](glossary.html)."), nbformat.v4.new_code_cell("1")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / f"{lecture.STORY_PAGE}.ipynb")
    (tmp_path / "key_numbers").mkdir()
    (tmp_path / "key_numbers" / f"{lecture.STORY_PAGE}.json").write_text(json.dumps({"finding": "The whole story.", "numbers": {}}))
    written = lecture.write_teaching_pages(tmp_path, [lecture.Page(lecture.STORY_PAGE, "report")], data_note="Data: a test.", css="")
    for page in (tmp_path / "index.html", tmp_path / "lecture" / "index.html"):
        text = page.read_text(encoding="utf-8")
        story = text.split("<h2>The story in short</h2>", 1)[1]
        assert story.index(html.escape(seed.story_text())) < story.index("The whole story.") < story.index("<h2>")  # the seed's, then ours, first
        assert "ntt_msm_h (2699–2958 ms per partition) outlasting prep_msm (1488–1768 ms)" in seed.story_text()
        assert text.index("<h2>The data</h2>") > text.index("The notebooks, one line each") and "Data: a test." in text
        assert "<b>h2d_pre_lock</b>" in text  # the steps' names, read out
        names = text.split("<p class='names'>", 1)[1].split("</p>", 1)[0]
        assert "`" not in names and ("prep_parallel" not in names or "<code>cpu_parallel</code>" in names)  # code spans, not backticks
    dead = [f"{p.relative_to(tmp_path)} -> {h}" for p in written for h in _local_links(p) if not (p.parent / h).exists()
            and not h.endswith(("details.html", "_report.html"))]  # details.html: report.py's; ../08_report.html: the full page
    assert not dead, dead


def test_every_recorded_scenario_name_is_read_out_by_the_glossary():
    import glob

    names = {n for f in glob.glob(str(Path(__file__).resolve().parents[1] / "data" / "**" / "manifest.json"), recursive=True)
             for n in (json.loads(Path(f).read_text()).get("scenarios") or {})}
    assert {"baseline", "submit_prep_gpu_msm_precomp_gw3"} <= names
    for n in names:
        assert all(glossary.defined(t) for t in glossary.scenario_parts(n)), n
    assert glossary.scenario_parts("narrow_prep_gpu_h2d_pre_lock") == ["narrow", "prep_gpu", "h2d_pre_lock"]
    with pytest.raises(ValueError, match="no glossary entry for 'warp_drive'"):
        glossary.scenario_parts("narrow_warp_drive")


def test_the_seed_table_reads_the_same_on_the_landing_page_and_in_notebook_00():
    """00 printed fractions (0.650, unit 'fraction') and True/False where the landing page printed 65.0% and yes."""
    import pandas as pd

    from zkgpu.story import seed

    t = pd.DataFrame({"figure": ["a share", "a rate", "a ratio"], "seed": ["~50%", "1-4 GB/s", "1.8"], "ours": [0.65, 3.748, 1.462],
                      "ours_min": [0.623, 3.554, 1.44], "ours_max": [0.671, 4.465, 1.558], "unit": ["fraction", "GB/s", "ratio"],
                      "reproduced": [True, None, False], "note": ["n1", "n2", "n3"]})
    shown = seed.shown_table(t)
    assert list(shown["ours"]) == ["65.0% (62.3–67.1%)", "3.7 GB/s (3.6–4.5)", "1.46 (1.44–1.56)"]
    assert list(shown["reproduced"]) == ["yes", "", "no"] and shown.index.name == "figure" and list(shown["note"]) == ["n1", "n2", "n3"]
    from zkgpu.story.seed import _test_text

    assert [_test_text(0.0, 0.55, "fraction"), _test_text(0.85, 1.0, "fraction"), _test_text(1.0, 4.5, "GB/s"),
            _test_text(1.4, 2.2, "ratio"), _test_text(None, None, "ratio")] == ["≤ 55%", "≥ 85%", "in 1.0–4.5 GB/s", "in 1.40–2.20", ""]
    page = lecture.seed_table_html()  # the newest GPU recording's: every row as 00 shows it
    from zkgpu.analysis import replay

    src = replay.recorded_source()
    if src is not None and src.on_gpu and src.has("baseline"):
        assert all(html.escape(v) in page for v in seed.shown_table(seed.seed_table(src))["ours"])


def _noted(tmp_path: Path, show) -> list[dict]:
    """What ``show()`` (view.table / view.figure calls) noted under keynumbers.STATISTICS names, as a page saves it."""
    keynumbers.save_key_numbers("drain", {}, out_dir=tmp_path)  # what earlier tests noted is not this page's
    show()
    f = keynumbers.save_key_numbers("page", {}, out_dir=tmp_path)
    return json.loads(f.read_text())["shown"]


def test_one_statistic_per_name_catches_what_a_fresh_reader_found(tmp_path: Path):
    """Issue 21's reader found one name with two values: 03 "mutex held" 187.9 (mean per event) against 180.4 ms (median);
    04's H2D share 9.7% (a caption's share of one run) against 10.2% (median over the runs); 05/06 exposed H2D 99.4 (median
    per partition) against 104.9 ms (mean); 10's one proof 11.8 s (the phases) against 15.3 s (the whole command). Each,
    as the pages noted it, is caught; said with its statistic, or drawn from the one statistic, it passes."""
    pd = pytest.importorskip("pandas")
    pytest.importorskip("IPython")
    import matplotlib

    matplotlib.use("Agg")
    from zkgpu.app import view

    keynumbers.opened("rec-1")
    held = pd.DataFrame({"mutex_held_mean_ms": [187.9]}, index=pd.Index(["baseline"], name="run"))
    cmp = pd.DataFrame({"model": [186.3], "measured": [180.4]}, index=pd.Index(["mutex_held_ms"], name="metric"))
    tab = pd.DataFrame({"h2d_share": [0.102], "h2d_exposed_ms": [99.4]}, index=pd.Index(["registered"], name="scenario"))
    split = pd.DataFrame({"ntt_msm_h": [93.0], "h2d": [9.0], "ntt": [50.0], "h_msm": [34.0]}, index=pd.Index(["registered"], name="run"))

    def before():  # the pages as the reader saw them
        view.table(held)
        view.table(cmp, by_row=True, scenario="baseline", value_column="measured")
        view.table(tab)
        keynumbers.show("h2d_share", 9.0 / 93.0, "9.7%", scenario="registered", unit="%")  # 04's caption printed its own share
        keynumbers.show("h2d_exposed", 9.0, "9.0 ms", scenario="registered", unit="ms")  # 06's caption: the representative run's mean
        keynumbers.show("prove", 11844.0, "11,844 ms", unit="ms")  # 10's caption: "the proof takes"
        keynumbers.show("prove", 15260.0, "15,260 ms", unit="ms")  # 10's finding: the whole command

    bad = pagebudget.conflicting_shown({"p": _noted(tmp_path, before)})
    assert {b.split(" ")[0] for b in bad} == {"'mutex_held'", "'h2d_share'", "'h2d_exposed'", "'prove'"}, bad

    def after():  # the fix: one statistic per name, or the statistic said beside the number
        mean = "the representative run's mean per event"
        view.table(held, statistic=mean)
        view.table(cmp.assign(measured=187.9).rename(index={"mutex_held_ms": "mutex_held_mean_ms"}), by_row=True, scenario="baseline",
                   value_column="measured", statistic=mean)
        view.table(tab[["h2d_share"]])
        view.figure(plots.ntt_msm_h_split(split, share={"registered": 0.102})[0])
        tl = pd.DataFrame({"phase": ["read", "msm_a"], "start_ms": [0.0, 1000.0], "ms": [1000.0, 10844.0], "on": ["CPU", "GPU"]})
        view.figure(plots.proof_phases(tl, command_ms=15260.0)[0])
        keynumbers.show("prove", 15260.0, "15,260 ms", unit="ms")

    shown = _noted(tmp_path, after)
    assert not pagebudget.conflicting_shown({"p": shown}), pagebudget.conflicting_shown({"p": shown})
    assert {e["name"] for e in shown} >= {"mutex_held", "h2d_share", "h2d_exposed", "prove", "proof_phases"}
    assert all(e["recording"] == "rec-1" for e in shown)
    keynumbers.opened("")
    # a key number <scenario>_<name> joins the names it shares: 06's baseline_h2d_share against a table's
    k = {"baseline_h2d_share": keynumbers.number(0.65, "%", "exposed H2D share", "baseline", recording="rec-1")}
    s = [{"name": "h2d_share", "value": 0.61, "text": "61.0%", "scenario": "baseline", "recording": "rec-1", "statistic": "", "unit": "%"}]
    assert pagebudget.conflicting_shown({"05": s}, {"06": k}) and not pagebudget.conflicting_shown({"05": s}, {"06": {}})
    # two recordings may show two values under one name (they name them)
    s2 = [dict(s[0], recording="rec-2", value=0.5, text="50.0%")]
    assert not pagebudget.conflicting_shown({"05": s, "07b": s2})


def test_landing_page_names_the_recording_of_each_baseline_figure_and_line(tmp_path: Path):
    """The landing page showed the baseline at 304 (the story, from the investigation's recording) and at 317 /min (the
    staircase, from the last mile's) without saying they are two runs: it now names both recordings, with each number."""
    key_dir = tmp_path / "key_numbers"
    base = {"01_x": ("rec-main", 304.4), lecture.STORY_PAGE: ("rec-main", 304.4), "07b_y": ("rec-last", 317.3)}
    for name, (rec, v) in base.items():
        keynumbers.save_key_numbers(name, {"baseline_per_min": keynumbers.number(v, "partitions/min", "throughput", "baseline", recording=rec)},
                                    finding=f"finding of {name}.", out_dir=key_dir)
    keynumbers.save_figure("staircase", b"png", "baseline 317/min", "07b_y", out_dir=key_dir, recording="rec-last")
    pages = [lecture.Page(n, n, f"finding of {n}.") for n in base]
    page = lecture.landing_html(pages, key_dir, data_note="Data.")
    assert "<b>rec-main</b> 304 partitions/min (first in 01_x); <b>rec-last</b> 317 partitions/min (first in 07b_y)" in page
    assert "baseline 317/min (<a href='07b_y.html'>07b_y</a>) Recording: <b>rec-last</b>." in page
    assert f">{lecture.STORY_PAGE}</a>; recording <b>rec-main</b>)" in page
    assert "finding of 07b_y.</span> <span class='rec'>[rec-last]</span>" in page
    one = lecture.landing_html(pages[:2], key_dir, data_note="Data.")  # one recording: nothing to tell apart
    assert "class='baselines'" not in one


def test_no_describe_dumps_and_long_benchmarks_come_as_small_tables_with_units(monkeypatch):
    """00, 01, 04, 05 and appendix_kernels printed describe() dumps and a 42-row benchmark pivot without units: the notebooks
    now call view.spread (median, min, max per quantity, each in its unit) and view.benchmark (tables of at most 12 rows, ms)."""
    pd = pytest.importorskip("pandas")
    pytest.importorskip("IPython")
    from zkgpu.app import view

    root = Path(__file__).resolve().parents[1] / "notebooks"
    code = {p.stem: "\n".join(c.source for c in nbformat.read(p, as_version=4).cells if c.cell_type == "code") for p in root.glob("*.ipynb")}
    dumps = {n: line.strip() for n, src in code.items() for line in src.splitlines()
             if any(m in line for m in (".describe(", ".head(", "display(pd.", "display(df")) and "view.table(" not in line}
    assert not dumps, f"raw DataFrame dumps in the notebooks: {dumps}"
    shown: list = []
    monkeypatch.setattr(view, "display", shown.append)
    rows = [{"kernel": k, "variant": v, "radix": 2 if k.endswith("r2") else 4, "log_n": n, "median_ms": 0.5 * 2 ** (n - 20) * (1 + i)}
            for i, k in enumerate(("a-r2", "b-r4", "c-r4", "d-r4")) for v in ("forward", "inverse", "coset", "compute_h")
            for n in range(20, 27) if not (v == "compute_h" and n > 24)]
    piv = pytest.importorskip("zkgpu.analysis.replay").benchmark_pivot(pd.DataFrame(rows))
    assert piv.shape[1] == 16  # 16 kinds of measurement: one row each would be a 16-row dump
    view.benchmark(piv, "NTT")
    tables = [s.data for s in shown]
    assert len(tables) == 2 and all(len(t) <= lecture.LONG_TABLE_ROWS for t in tables)
    assert list(tables[0].columns) == ["a-r2", "b-r4", "c-r4", "d-r4"] and "2^24" in shown[0].caption  # the largest size all ran
    assert list(tables[1].columns) == [f"2^{n}" for n in range(20, 27)] and "kernel a-r2" in shown[1].caption  # the fastest
    assert "0.500 ms" in shown[1].to_html() and "32.0 ms" in shown[1].to_html()  # units, three digits
    s = view.spread(pd.DataFrame({"partition": [0, 1, 2], "prep_msm_ms": [1.0, 2.0, 4.0], "rel_residual": [0.01, 0.02, 0.03]}).drop(columns="partition"))
    assert list(s.data.index) == ["prep_msm_ms", "rel_residual"] and "2.0 ms" in s.to_html() and "2.0%" in s.to_html()


def test_navigation_has_no_empty_links_and_headings_number_their_own_notebook(tmp_path: Path):
    """appendix_nsight's lecture page had an empty "next" (a place-holder read as a dead link) and appendix_kernels's heading said
    "Appendix 08": every nav item is a link or says why there is none, and a heading's number is its own file's."""
    import re

    pages = [lecture.Page(n, n) for n in ("01_a", "02_b", "appendix_c")]
    navs = [lecture._nav(pages, i, "../glossary.html", "x.html") for i in range(3)]
    for nav in navs:
        assert "<span></span>" not in nav and "href=''" not in nav and 'href=""' not in nav
        assert all(text.strip() for text in re.findall(r"<a [^>]*>(.*?)</a>", nav))
    assert "the last page" in navs[2] and "appendix_c.html" in navs[1] and "&larr;" not in navs[0]
    for f in sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb")):
        head = nbformat.read(f, as_version=4).cells[0].source.splitlines()[0]
        m = re.match(r"# (?:Appendix )?(\d\d\w?) —", head)
        own = re.match(r"(?:appendix_)?(\d\d\w?)_", f.stem)
        assert (m.group(1) if m else None) == (own.group(1) if own else None) or f.stem == "00_index", f"{f.stem}: {head!r}"


def test_gpu_phases_is_one_name_with_one_statistic():
    """Issue 21's reader found "GPU phases" per partition at four values on four pages: 06/07's tables (gpu_phase_ms, 110 ms,
    pinned_pool's mean), 07's bound (the model's 89 ms), 07b's budget (50 ms, the median partition of another recording's
    step) and the appendix. One name now: a page that shows another statistic says it, and each value names its scenario and
    recording; the same name at two values without that is caught."""
    assert {keynumbers.base_name(n) for n in ("gpu_phase_ms", "GPU phases", "GPU phases per partition", "gpu_ms_per_partition")} == {"gpu_phases"}
    keynumbers.save_key_numbers("drain", {})  # what earlier tests noted is not this page's

    def note(v, scenario, rec, statistic=""):
        return {"name": "gpu_phases", "value": v, "text": f"{v:.0f} ms", "scenario": scenario, "recording": rec, "statistic": statistic, "unit": "ms"}

    table = note(109.9, "pinned_pool", "rec-main")
    bound = note(88.7, "pinned_pool", "rec-main")  # 07's prose printed the model's value under the same name
    assert pagebudget.conflicting_shown({"06": [table], "07": [table, bound]})
    bound["statistic"] = keynumbers.GPU_PHASES_MODEL
    budget = note(49.8, "submit_prep_gpu_msm_precomp_gw3", "rec-last", keynumbers.GPU_PHASES_MEDIAN)
    assert not pagebudget.conflicting_shown({"06": [table], "07": [table, bound], "07b": [budget, dict(budget)]})
    assert pagebudget.conflicting_shown({"07b": [budget, note(65.3, "submit_prep_gpu_msm_precomp_gw3", "rec-last", keynumbers.GPU_PHASES_MEDIAN)]})
    # 10's key number was named gpu_phase_ms (one proof's kernel phases): under its own name it joins no GPU-phase group
    assert keynumbers.base_name("kernel_phases") is None


def test_a_printed_finding_reads_as_prose_in_the_lecture_view():
    """07's finding (one printed line of ~180 words) was a wall of monospace in the lecture view: a printed sentence is
    now a paragraph; a banner, a short line or an aligned table stays as printed."""
    long = "With the pool, barrier_wait takes 0.0% of the held mutex <and> " + "x" * lecture.PROSE_LINE
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("print(finding)")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=long + "\n"),
                    nbformat.v4.new_output("stream", name="stdout", text="REPLAY of a GPU recording.\n" + long + "\n")]
    nb.cells = [cell]
    outs = lecture.lecture_notebook(nb).cells[0].outputs
    assert outs[0]["output_type"] == "display_data" and outs[0]["data"]["text/html"].startswith("<p class='zkgpu-prose'>With the pool")
    assert "&lt;and&gt;" in outs[0]["data"]["text/html"]
    assert outs[1]["output_type"] == "stream"  # a banner line beside it: left as printed
