"""The report's story: every recording counted by kind, each notebook's card with its own finding,
notebook 08's one-page summaries on shared axes, and a new recording flowing through without code
edits (tonight's final GPU run adds a last-mile and a bench-sppark recording)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import matplotlib
import pandas as pd
import pytest

matplotlib.use("Agg")

from zkgpu.analysis import metrics, plots, replay
from zkgpu.analysis.keynumbers import number
from zkgpu.app import report
from zkgpu.core.manifest import DATA_DIR
from zkgpu.story import bottleneck, conclusions

ROOT = Path(__file__).resolve().parent.parent


def _manifest(folder: Path, **fields) -> Path:
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps(fields), encoding="utf-8")
    return folder


def test_inventory_counts_every_folder_with_a_manifest_by_kind(tmp_path: Path):
    _manifest(tmp_path / "gpu-20990101-record", date_utc="2099-01-01", scenarios={"baseline": {}}, environment={"gpu": "G"})
    _manifest(tmp_path / "gpu-20990102-bench-sppark-1", date_utc="2099-01-02", environment={"gpu": "G"})
    _manifest(tmp_path / "gpu-20990103-bench-ntt", date_utc="2099-01-03")
    _manifest(tmp_path / "last-mile" / "gpu-20990104-record", date_utc="2099-01-04", scenarios={"a": {}, "b": {}})
    _manifest(tmp_path / "real" / "gpu-20990105-record", date_utc="2099-01-05", device="cpu")
    (tmp_path / "gpu-20990106-record-1").mkdir()  # killed hard: no manifest, not a recording
    (tmp_path / "odd").mkdir()
    (tmp_path / "odd" / "manifest.json").write_text("[1, 2]", encoding="utf-8")
    inv = replay.inventory(tmp_path)
    assert list(inv["folder"])[:2] == ["real/gpu-20990105-record", "last-mile/gpu-20990104-record"]  # newest first
    assert dict(zip(inv["folder"], inv["kind"], strict=True)) == {
        "real/gpu-20990105-record": "real", "last-mile/gpu-20990104-record": "last-mile", "gpu-20990103-bench-ntt": "bench",
        "gpu-20990102-bench-sppark-1": "bench", "gpu-20990101-record": "record", "odd": "other"}
    assert inv.set_index("folder").loc["gpu-20990102-bench-sppark-1", "detail"] == "sppark"
    assert inv.set_index("folder").loc["odd", "detail"] == "unreadable manifest"
    by = replay.inventory_by_kind(inv)
    assert list(by.index) == ["record", "bench", "last-mile", "real", "other"]
    assert by["recordings"].to_dict() == {"record": 1, "bench": 2, "last-mile": 1, "real": 1, "other": 1}
    assert by.loc["bench", "details"] == "ntt, sppark" and by.loc["last-mile", "details"] == "2 scenarios"
    assert all(by.loc[k, "what"] for k in by.index)  # every kind says what it is, "other" too (00 printed empty cells)
    _manifest(tmp_path / "last-mile" / "gpu-20990107-record", date_utc="2099-01-07", scenarios={f"s{i}": {} for i in range(12)})
    assert replay.inventory_by_kind(replay.inventory(tmp_path)).loc["last-mile", "details"] == "2–12 scenarios"  # a range, not a list


def test_inventory_of_the_repository_counts_more_than_the_record_folders():
    inv = replay.inventory()
    kinds = replay.inventory_by_kind(inv)["recordings"]
    assert kinds.sum() == len(list(DATA_DIR.glob("*/manifest.json"))) + len(list(DATA_DIR.glob("*/*/manifest.json")))
    assert kinds.get("record", 0) == len(replay.find_recordings())


def test_index_card_folds_long_key_number_tables():
    rows = [report.KeyNumber(f"n{i}", "s", str(i)) for i in range(30)]
    page = report._key_numbers_html(rows)
    shown, folded = page.split("<details>")
    assert shown.count("<tr><td>") == report.SHOWN_KEY_NUMBERS and folded.count("<tr><td>") == 30 - report.SHOWN_KEY_NUMBERS
    assert "all 30 key numbers" in folded
    assert "<details>" not in report._key_numbers_html(rows[: report.SHOWN_KEY_NUMBERS + 2])  # nothing worth folding


def _items() -> list[conclusions.Conclusion]:
    return [conclusions.Conclusion("fix", "06_pinned_pool_fix", "", {
        "baseline_h2d_share": number(0.58, "%", "x", "baseline"), "pinned_pool_h2d_share": number(0.047, "%", "x", "pinned_pool"),
        "baseline_per_min": number(190.4, "partitions/min", "x", "baseline"),
        "pinned_pool_per_min": number(228.9, "partitions/min", "x", "pinned_pool"),
        "fix_throughput_ratio": number(228.9 / 190.4, "x", "x", "pinned_pool")}),
        conclusions.Conclusion("next bottleneck", "07_next_bottleneck", "", {"pinned_pool_barrier_in_held": number(0.383, "%", "x", "pinned_pool"),
                                                                           "pinned_pool_next_limit": number("prep_msm_barrier", "", "x", "pinned_pool")}),
        conclusions.Conclusion("beyond the fix", "07b_last_bottleneck", "", {
            "last_mile_recording": number("rec-9", "", "recording"),
            "last_mile_best_partitions_per_min": number(514.0, "partitions/min", "x", "best_run"),
            "last_mile_best_x_baseline": number(1.98, "x", "x", "best_run"),
            "last_mile_best_compute_util": number(0.877, "%", "x", "best_run"),
            "last_mile_best_vs_bound": number(0.8, "x", "x", "best_run")})]


def test_story_finding_is_one_sentence_from_the_numbers():
    items = _items()
    text = conclusions.story_finding(items)
    assert text == ("Pageable H2D of a, b, c took 58.0% of ntt_msm_h in the baseline and the pinned pool cut it to 4.7%, taking "
                    "throughput from 190 to 229 partitions/min (1.20×); the GPU then waited inside the lock for the CPU's prep_msm "
                    "(38.3% of the held mutex); with prep_msm off the critical path (rec-9) the best configuration, best_run, "
                    "reached 514 partitions/min, 1.98× that recording's baseline, at 87.7% compute utilization.")
    assert list(conclusions.story_numbers(items)) == list(conclusions.STORY_KEYS)
    assert conclusions.last_mile_bound(items) == pytest.approx(514.0 / 0.8)
    # a step without its numbers is left out; with none, no sentence
    assert conclusions.story_finding(items[2:]).startswith("With prep_msm off the critical path (rec-9)")
    assert conclusions.story_finding([]) == "" and conclusions.last_mile_bound(items[:2]) is None
    # the next limit is the pool's log's (issue 24): where the GPU did not wait for prep_msm, the sentence does not say it did
    items[1].numbers["pinned_pool_barrier_in_held"] = number(0.049, "%", "x", "pinned_pool")
    items[1].numbers["pinned_pool_next_limit"] = number("gpu_bound", "", "x", "pinned_pool")
    assert ("the barrier wait then took 4.9% of the held mutex and the next limit was the GPU phases themselves, not prep_msm; "
            in conclusions.story_finding(items))
    assert "waited inside the lock" not in conclusions.story_finding(items)


def test_summary_figures_share_their_axes():
    def run(ppm, ms, h2d):
        idx = [f"s{i}" for i in range(len(ppm))]
        tab = pd.DataFrame({"partitions_per_min": ppm, "compute_util": 0.5, "kernel_util": 0.6, "timeline_util": 0.9, "h2d_gbps": 3.0}, index=idx)
        path = pd.DataFrame({c: 0.0 for c in metrics.GPU_PATH}, index=idx)
        path["ntt"] = ms
        path["ms_per_partition"] = ms
        split = pd.DataFrame({"h2d": h2d, "ntt": 10.0, "h_msm": 20.0, "ntt_msm_h": [h + 30.0 for h in h2d]}, index=idx)
        return tab, path, split

    small, big = (*run([100.0, 150.0], [600.0, 400.0], [5.0, 1.0]), 300.0), (*run([400.0], [150.0], [100.0]), None)
    scale = plots.summary_scale(small, big)
    assert scale == {"partitions_per_min": 400.0, "ms_per_partition": 600.0, "ntt_msm_h": 130.0}
    lims = []
    for r in (small, big):
        fig, axes = plots.summary(*r, scale=scale)
        lims.append((axes[1].get_xlim(), axes[2].get_xlim(), axes[3].get_xlim()))
        assert "share their axes" in plots.caption(fig)
    assert lims[0] == lims[1]
    fig, axes = plots.summary(*small)  # alone: its own axes, no such claim
    assert "share their axes" not in plots.caption(fig) and axes[2].get_xlim()[1] >= 600.0
    with pytest.raises(ValueError, match="at least one run"):
        plots.summary_scale()


def _data_with_newer_recordings(tmp_path: Path) -> tuple[Path, str, str]:
    """A data folder that links every folder of data/ and adds a copy of the newest last-mile and
    bench-sppark recordings under newer names (as tonight's final run will), dated a day later."""
    data = tmp_path / "data"
    (data / bottleneck.PILOT_DIR).mkdir(parents=True)
    for p in DATA_DIR.iterdir():
        if p.is_dir() and p.name != bottleneck.PILOT_DIR:
            (data / p.name).symlink_to(p)
    for p in (DATA_DIR / bottleneck.PILOT_DIR).iterdir():
        (data / bottleneck.PILOT_DIR / p.name).symlink_to(p)
    lm = bottleneck.last_mile_recordings()[0]
    sp = replay.find_benchmarks("sppark")
    assert sp is not None
    new_lm, new_sp = "nvidia-h200-20991231-record", "nvidia-h200-20991231-bench-sppark"
    for src, dst in ((lm.path, data / bottleneck.PILOT_DIR / new_lm), (sp[0], data / new_sp)):
        shutil.copytree(src, dst)
        m = json.loads((dst / "manifest.json").read_text(encoding="utf-8"))
        m["date_utc"] = "2099-12-31T00:00:00+00:00"
        (dst / "manifest.json").write_text(json.dumps(m), encoding="utf-8")
    return data, new_lm, new_sp


def test_a_newer_recording_is_picked_by_the_librarys_rule(tmp_path: Path):
    data, new_lm, new_sp = _data_with_newer_recordings(tmp_path)
    src = bottleneck.last_mile_source("replay", base=data)
    assert src is not None and src.recording.path.name == new_lm
    assert conclusions.last_mile_scenarios(src)[0] == "baseline"
    found = replay.find_benchmarks("sppark", base=data)
    assert found is not None and found[0].name == new_sp
    assert replay.inventory_by_kind(replay.inventory(data))["recordings"].sum() == len(replay.inventory()) + 2


nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")


@pytest.mark.slow
def test_notebook_08_shows_the_newest_recordings_without_code_edits(tmp_path: Path, monkeypatch):
    """Notebook 08 in replay on a data folder with a newer last-mile and bench-sppark recording:
    its last-mile page, its conclusions, its finding and its sppark section name the new ones."""
    data, new_lm, new_sp = _data_with_newer_recordings(tmp_path)
    out = tmp_path / "out"
    for k, v in {"ZKGPU_DATA": str(data), "ZKGPU_MODE": "replay", "ZKGPU_NB_OUT": str(out), "MPLBACKEND": "Agg",
                 "XDG_CACHE_HOME": str(tmp_path / "cache")}.items():
        monkeypatch.setenv(k, v)
    nb = nbformat.read(ROOT / "notebooks" / "08_report.ipynb", as_version=4)
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT / "notebooks")}}).execute()
    text = "\n".join(str(o.get("text", "")) + "\n".join(str(v) for v in o.get("data", {}).values())
                     for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    key = json.loads((out / "08_report.json").read_text(encoding="utf-8"))
    assert key["numbers"]["last_mile_recording"]["value"] == f"data/last-mile/{new_lm}"
    assert new_lm in key["finding"] and key["finding"].endswith(".")
    assert f"Data: data/last-mile/{new_lm}" in text  # the last-mile page's banner names the recording by folder


def test_readme_lists_the_notebooks_in_story_order_with_their_titles():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## The notebooks\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    paths = report.find_notebooks()
    assert [r.split("`")[1] for r in rows] == [p.stem for p in paths]  # the suite, in the order make report runs it
    for row, p in zip(rows, paths, strict=True):
        heading = nbformat.read(p, as_version=4).cells[0].source.splitlines()[0].lstrip("# ")
        title = heading.split(" — ", 1)[1] if heading.split(" — ", 1)[0].split()[0] in (p.stem.split("_")[0], "Appendix") else heading
        assert f"| {title} |" in row, (p.stem, title)


def test_proof_phases_use_the_reports_colour_map():
    tl = pd.DataFrame({"phase": ["read", "msm_a", "msm_b2_g2", "g2_wait"], "start_ms": [0.0, 100.0, 50.0, 130.0],
                       "ms": [100.0, 30.0, 400.0, 320.0], "on": ["CPU", "GPU", "CPU thread", "CPU"]})
    fig, ax = plots.proof_phases(tl)
    faces = [matplotlib.colors.to_hex(p.get_facecolor()) for p in ax.patches]
    assert faces == [matplotlib.colors.to_hex(plots.PROOF_SIDES[o][1]) for o in tl["on"]]
    assert plots.PROOF_SIDES["GPU"][1] == plots.phase_color("kernel") and plots.PROOF_SIDES["CPU thread"][1] == plots.phase_color("b_g2_msm")
    # the main thread's grey means nothing else: no phase, utilization or H2D path has it
    others = {*plots.PHASE_COLORS.values(), *plots.METRIC_COLORS.values(), *(c for c, _ in plots.PATH_STYLES.values())}
    assert plots.PROOF_SIDES["CPU"][1] not in others
    text = plots.caption(fig)
    assert "The phases, from reading the key to the last one's end, take 450 ms; the longest phase is msm_b2_g2 (400 ms, CPU thread)." in text
    # the whole command is another number under another name (notebook 10 showed "one proof" as 11.8 s and 15.3 s)
    assert "take 450 ms, of a whole `zkgpu prove` command of 1,200 ms (median;" in plots.caption(plots.proof_phases(tl, command_ms=1200.0)[0])
    assert "CPU references" in plots.caption(plots.proof_phases(tl, on_gpu=False)[0])
    with pytest.raises(ValueError, match="'on' must be one of"):
        plots.proof_phases(tl.assign(on="TPU"))


def test_index_card_shows_the_notebooks_title_and_its_own_finding(tmp_path: Path):
    keys = tmp_path / "key_numbers"
    keys.mkdir()
    for name, finding in (("06_pinned_pool_fix", "The fix finding."), ("08_report", "The whole story.")):
        (keys / f"{name}.json").write_text(json.dumps({"finding": finding, "numbers": {}}), encoding="utf-8")
    index = report.NotebookResult("00_index", "ok", 1.0, tmp_path / "00.html", title="zkgpu — why it idled")
    assert "<span class='title'>why it idled</span>" in report._notebooks_html([index], keys)
    results = [report.NotebookResult("06_pinned_pool_fix", "ok", 1.0, tmp_path / "06.html", title="zkgpu 06 — The fix: a pool"),
               report.NotebookResult("08_report", "ok", 1.0, tmp_path / "08.html", title="zkgpu 08 — Report: one page")]
    page = report._notebooks_html(results, keys)
    six, eight = page.split("<section class='nb'>")[1:]
    assert "The fix: a pool" in six and "The fix finding." in six and "The whole story." not in six
    assert "Report: one page" in eight and "The whole story." in eight and "The fix finding." not in eight


def test_tables_left_align_text_and_right_align_numbers():
    from zkgpu.app import view

    html = view.table(pd.DataFrame({"what": ["a b", "c"], "ms": [1.0, 2.0]})).to_html()
    assert "text-align: left" in html
    assert "text-align: left" not in view.table(pd.DataFrame({"ms": [1.0, 2.0]})).to_html()


def test_ms_per_partition_columns_carry_their_unit():
    from zkgpu.app import view

    assert view.fmt(112.766, "gpu_ms_per_partition") == "112.8 ms" and view.fmt(262.0, "ms_per_partition") == "262.0 ms"
    assert view.fmt(1.0667, "x_baseline") == "1.07×"  # times the baseline's throughput


def test_index_says_how_to_read_the_cards():
    with_08 = report._reading_guide([report.NotebookResult("08_report", "ok", 1.0, Path("08_report.html"))])
    assert "one story, in this order" in with_08 and "<a href='08_report.html'>08_report</a>" in with_08
    assert "<a " not in report._reading_guide([report.NotebookResult("01_symptom", "ok", 1.0, Path("01_symptom.html"))])


def test_index_lists_the_recordings_by_kind_with_what_each_is(tmp_path: Path):
    _manifest(tmp_path / "gpu-20990101-record", date_utc="2099-01-01", scenarios={"baseline": {}})
    _manifest(tmp_path / "last-mile" / "gpu-20990104-record", date_utc="2099-01-04", scenarios={"a": {}})
    replay.configure(tmp_path)
    try:
        page = report._recordings_html()
    finally:
        replay.configure(None)
    assert "2 in all" in page and replay.RECORDING_KINDS["last-mile"] in page and "<td>record</td><td class='num'>1</td>" in page
    replay.configure(tmp_path / "empty")
    try:
        assert report._recordings_html() == ""
    finally:
        replay.configure(None)


#: The report's table area at the 1400 px window the report is read in (lab template: the page's margins and the
#: output prompt's column taken off), and what a character of a table takes there (13 px sans-serif, bold headers).
TABLE_AREA_PX = 1290
PX_PER_CHAR = 8.5
CELL_PADDING_PX = 10


def _min_table_width_px(html: str) -> float:
    """The narrowest a rendered table can be: per column its longest unbreakable word (a browser wraps cells at
    spaces, never inside ``narrow_prep_gpu_h2d_pre_lock``), summed with the cells' padding."""
    import re

    widest: dict[int, int] = {}
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", html, flags=re.S):
        for k, cell in enumerate(re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, flags=re.S)):
            words = re.sub(r"<[^>]+>", " ", cell).split()
            widest[k] = max(widest.get(k, 0), max((len(w) for w in words), default=0))
    return sum(PX_PER_CHAR * n + CELL_PADDING_PX for n in widest.values())


def test_a_table_too_wide_for_the_report_is_caught():
    narrow = "<table><tr><th>scenario</th><th>model /min</th></tr><tr><th>narrow_prep_gpu</th><td>1,144.1 /min</td></tr></table>"
    wide = "<table><tr>" + "".join(f"<th>prior_partitions_per_min_{k}</th>" for k in range(8)) + "</tr></table>"
    assert _min_table_width_px(narrow) < TABLE_AREA_PX < _min_table_width_px(wide)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["07b_last_bottleneck", "08_report"])
def test_every_table_fits_the_reports_width(name: str, tmp_path: Path, monkeypatch):
    """07b and 08 in replay: every table they show fits the report's width at 1400 px (07b's prediction table was cut)."""
    for k, v in {"ZKGPU_MODE": "replay", "ZKGPU_NB_OUT": str(tmp_path / "out"), "MPLBACKEND": "Agg",
                 "XDG_CACHE_HOME": str(tmp_path / "cache")}.items():
        monkeypatch.setenv(k, v)
    nb = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(ROOT / "notebooks")}}).execute()
    tables = [str(o["data"]["text/html"]) for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if "<table" in str(o.get("data", {}).get("text/html", ""))]
    assert tables
    too_wide = {html.split("<tr", 2)[1][:300]: _min_table_width_px(html) for html in tables if _min_table_width_px(html) > TABLE_AREA_PX}
    assert not too_wide, too_wide


def test_notebook_00_lists_every_notebook_of_the_suite():
    """00's table of notebooks names every page in the order make report runs them (09 and two appendices were missing)."""
    import re

    head = nbformat.read(ROOT / "notebooks" / "00_index.ipynb", as_version=4).cells[0].source
    listed = re.findall(r"^\| `([^`]+)` \|", head, flags=re.M)
    assert listed == [p.stem for p in report.find_notebooks() if p.stem != "00_index"]
