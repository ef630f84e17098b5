"""zkgpu.app.report: key-number formatting and the index page, the exported notebook pages, the traces
per scenario, the kernels' transport (no warning on stderr), and one small end-to-end report."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pandas as pd
import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from zkgpu.analysis.keynumbers import UNITS
from zkgpu.analysis.replay import Recording
from zkgpu.app import report
from zkgpu.core.events import normalize_events
from zkgpu.core.optional import notebook_tools

# --------------------------------------------------------------------------- formatting


@pytest.mark.parametrize("value, unit, text", [
    (0.43463114907027495, "%", "43.5%"),
    (0.870481100832991, "%", "87.0%"),
    (1.0, "%", "100.0%"),
    (-0.0463, "%", "-4.6%"),
    (0.00029, "%", "0.029%"),
    (0.0, "%", "0%"),
    (0.0471, "%", "4.7%"),
    (42.0, "GB/s", "42.0 GB/s"),
    (1.2, "", "1.20"),
    (484.22082350000005, "ms", "484 ms"),
    (86.925, "ms", "86.9 ms"),
    (3.3217, "GB/s", "3.32 GB/s"),
    (228.861, "partitions/min", "229 partitions/min"),
    (2.13, "x", "2.13×"),
    (4194304, "", "4,194,304"),
    (16, "", "16"),
    (12345.6, "ms", "12,346 ms"),
    (0.000295, "", "0.000295"),
    (float("nan"), "ms", "—"),
    (None, "", "—"),
    ([404.0, 407.0, None], "ms", "404 ms, 407 ms, —"),
    ("recorded-gpu", "", "recorded-gpu"),
    (True, "", "yes"),
])
def test_format_value(value, unit, text):
    assert report.format_value(value, unit).replace("\u00a0", " ") == text


@pytest.mark.parametrize("unit", UNITS)
def test_never_scientific_notation(unit):
    for exp in range(-12, 13):
        for mant in (1.0, 2.2049, 5.5, 9.999):
            for sign in (1, -1):
                text = report.format_value(sign * mant * 10.0 ** exp, unit)
                assert not re.search(r"\de[+-]?\d", text, re.IGNORECASE), text


@pytest.mark.parametrize("key, value, unit", [
    ("compute_util", 0.43, "%"), ("h2d_share", 0.58, "%"), ("prediction_rel_err", -0.05, "%"),
    ("prove_median_ms", 484.2, "ms"), ("h2d_gbps", 3.3, "GB/s"), ("partitions_per_min", 229.0, "partitions/min"),
    ("ntt_msm_h_speedup", 2.1, "x"), ("partitions", 16, ""), ("source", "recorded-gpu", ""),
    ("kernel_util", 80.6, ""),  # not a fraction: no percent sign on a guess
])
def test_infer_unit_of_old_flat_entries(key, value, unit):
    assert report.infer_unit(key, value) == unit


def test_read_key_numbers_contract_and_old_format(tmp_path: Path):
    new = tmp_path / "01_symptom.json"
    new.write_text(json.dumps({"finding": "The baseline GPU computes 43.5% of the time.", "numbers": {
        "compute_util": {"value": 0.4346, "unit": "%", "label": "compute utilization", "scenario": "baseline"},
        "tput": {"value": 228.86, "unit": "partitions/min", "label": "throughput", "scenario": "pinned_pool"},
        "plain": 3,
    }}), encoding="utf-8")
    finding, rows = report.read_key_numbers(new)
    assert finding == "The baseline GPU computes 43.5% of the time."
    rows = [(r.label, r.scenario, r.text.replace("\u00a0", " ")) for r in rows]
    assert rows == [
        ("compute utilization", "baseline", "43.5%"), ("throughput", "pinned_pool", "229 partitions/min"), ("plain", "", "3")]
    old = tmp_path / "07.json"
    old.write_text(json.dumps({"compute_bound_per_min": 490.3, "prediction_rel_err": {"pinned_gw1": -0.0463, "pinned_pool": 0.0256},
                               "seed_residual_ms": [404.0, None], "source": "recorded-gpu"}), encoding="utf-8")
    finding, rows = report.read_key_numbers(old)
    assert finding == ""
    assert [(r.label, r.scenario, r.text.replace("\u00a0", " ")) for r in rows] == [
        ("compute_bound_per_min", "", "490 partitions/min"), ("prediction_rel_err", "pinned_gw1", "-4.6%"),
        ("prediction_rel_err", "pinned_pool", "2.6%"), ("seed_residual_ms", "", "404 ms, —"), ("source", "", "recorded-gpu")]
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ValueError, match="bad.json"):
        report.read_key_numbers(bad)


class _Checker(HTMLParser):
    """Collects text and checks that every opened non-void element is closed in order."""

    VOID = {"meta", "br", "img", "hr", "input", "link"}

    def __init__(self):
        super().__init__()
        self.stack, self.text, self.errors = [], [], []

    def handle_starttag(self, tag, attrs):
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack.pop() != tag:
            self.errors.append(tag)

    def handle_data(self, data):
        if not self.stack or self.stack[-1] != "style":
            self.text.append(data)


def test_index_page(tmp_path: Path):
    (tmp_path / "key_numbers").mkdir()
    (tmp_path / "key_numbers" / "01_symptom.json").write_text(json.dumps({
        "finding": "Compute <utilization> is 43.5%.", "numbers": {
            "cu": {"value": 0.4346, "unit": "%", "label": "compute utilization", "scenario": "baseline"},
            "x_rel_err": {"value": -0.1136, "unit": "", "label": "model − measured, relative", "scenario": "baseline"}}}), encoding="utf-8")
    (tmp_path / "key_numbers" / "00_index.json").write_text(json.dumps({"recordings": 3, "mode": "replay"}), encoding="utf-8")
    results = [report.NotebookResult("00_index", "ok", 1.25, tmp_path / "00_index.html"),
               report.NotebookResult("01_symptom", "ok", 2.5, tmp_path / "01_symptom.html"),
               report.NotebookResult("02_x", "failed", 0.5, tmp_path / "02_x.html", "Traceback...\nValueError: boom")]
    trace = tmp_path / "traces" / "baseline.json"
    trace.parent.mkdir()
    trace.write_text("{}", encoding="utf-8")
    rec = Recording(tmp_path / "rec-x", {})
    extra = report._traces_html([report.TraceFile("baseline", trace, 304)], rec, tmp_path)
    env = {"zkgpu": "0.test", "gpu": None, "cuda": None}
    page = report._write_index(tmp_path, results, "replay", "Data: a test.", extra, env).read_text(encoding="utf-8")
    checker = _Checker()
    checker.feed(page)
    assert checker.errors == [] and checker.stack == []
    text = " ".join(checker.text)
    assert "Compute <utilization> is 43.5%." in text  # escaped in the page, the reader sees it as written
    assert "compute utilization" in text and "baseline" in text and "43.5%" in text
    assert "{" not in text and "':" not in text  # no raw dicts
    assert "ValueError: boom" in text and "failed" in text
    assert "href='traces/baseline.json'" in page and "ui.perfetto.dev" in page and "chrome://tracing" in page
    assert "href='01_symptom.html'" in page
    assert "<td class='num'>43.5%</td>" in page and "<td class='txt'>replay</td>" in page
    assert "overflow-x:auto" in page  # wide tables scroll
    assert "replay" in text and "3" in text
    assert "-11.4%" in text  # a relative error reads as a percentage, not -0.114
    assert "none (replay)" in text and "None" not in text  # nothing ran a GPU here: said so


# --------------------------------------------------------------------------- notebook pages and kernels


def _wide_notebook():
    nb = new_notebook(cells=[
        new_code_cell("import pandas as pd\npd.DataFrame([[1.5] * 40], columns=[f'a_rather_long_column_{i}' for i in range(40)])"),
        new_code_cell("import sys\nprint('out'); print('err', file=sys.stderr)"),
    ])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def test_kernel_runs_without_transport_warning(capfd):
    nb = _wide_notebook()
    NotebookClient(nb, timeout=60, kernel_name="python3", config=report.kernel_config()).execute()
    err = capfd.readouterr().err
    assert "without encryption" not in err and "WARNING" not in err, err
    assert nb.cells[1].outputs[0]["text"] == "out\n"  # the kernel works over the transport


@pytest.mark.skipif(report.os.name != "posix", reason="IPC sockets need POSIX")
def test_kernel_without_curve_uses_ipc(capfd, monkeypatch):
    monkeypatch.setattr(notebook_tools().zmq, "has", lambda feature: False)
    cfg = report.kernel_config()
    assert cfg.KernelManager.transport == "ipc" and "transport_encryption" not in cfg.KernelManager
    nb = _wide_notebook()
    NotebookClient(nb, timeout=60, kernel_name="python3", config=cfg).execute()
    assert "without encryption" not in capfd.readouterr().err
    assert nb.cells[1].outputs[0]["text"] == "out\n"


def test_kernel_config_uses_curve_only_where_the_kernelspec_declares_it(monkeypatch):
    class Spec:
        metadata: dict = {}

    monkeypatch.setattr(notebook_tools().KernelSpecManager, "get_kernel_spec", lambda self, name: Spec())
    cfg = report.kernel_config()
    assert "transport_encryption" not in cfg.KernelManager
    if report.os.name == "posix":
        assert cfg.KernelManager.transport == "ipc"


def test_pages_have_a_title_a_link_back_to_the_index_and_alt_text():

    nb = new_notebook(cells=[new_markdown_cell("# 07 — The `next` bottleneck\n\ntext"),
                             new_code_cell("from matplotlib.figure import Figure\nfrom zkgpu.app import view\n"
                                           "fig = Figure(); fig.add_subplot().set_title('a plot')\nview.figure(fig)")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    assert report.page_title(nb, "07_x") == "zkgpu 07 — The next bottleneck"
    assert report.page_title(new_notebook(), "07_x") == "zkgpu 07_x"
    NotebookClient(nb, timeout=60, kernel_name="python3", config=report.kernel_config()).execute()
    body, _ = report.html_exporter().from_notebook_node(nb, resources={"metadata": {"name": report.page_title(nb, "x")}})
    assert "<title>zkgpu 07 — The next bottleneck</title>" in body
    assert '<a href="index.html">' in body
    assert 'alt="a plot"' in body and "No description has been provided" not in body


def test_exported_page_lets_wide_tables_scroll():
    nb = _wide_notebook()
    NotebookClient(nb, timeout=60, kernel_name="python3", config=report.kernel_config()).execute()
    body, _ = report.html_exporter().from_notebook_node(nb)
    assert "a_rather_long_column_39" in body
    ours = body.index("scroll sideways instead of being cut off")
    lab = body.index(".jp-InputArea-editor {\n  overflow: hidden")  # the lab template's rule we override
    assert ours > lab
    assert ".jp-RenderedHTMLCommon table { display: block; max-width: 100%; overflow-x: auto; }" in body


# --------------------------------------------------------------------------- traces


def _tiny_recording(root: Path, name: str, scenarios: list[str]) -> Path:
    rec = root / name
    (rec / "events").mkdir(parents=True)
    entries = {}
    for s in scenarios:
        ev = normalize_events(pd.DataFrame({"run": [s, s], "worker": [0, 0], "gpu": [0, 0], "partition": [0, 0],
                                            "phase": ["prove", "ntt_msm_h"], "start_ns": [0, 10], "end_ns": [100, 50]}))
        ev.to_parquet(rec / "events" / f"{s}.parquet")
        entries[s] = {"events": f"events/{s}.parquet", "config": {}}
    (rec / "manifest.json").write_text(json.dumps({"device": "cpu", "scenarios": entries}), encoding="utf-8")
    return rec


def test_live_report_traces_the_run_with_most_scenarios(tmp_path: Path):
    live = tmp_path / "live"
    _tiny_recording(live / "zkgpu-live-a", "cpu-20990101-record", ["baseline"])
    _tiny_recording(live / "zkgpu-live-b", "cpu-20990101-record", ["baseline", "pinned_pool"])
    _tiny_recording(live / "zkgpu-live-c", "cpu-20990101-record", ["pinned_pool"])
    rec = report._traced_recording("live", live)
    assert rec.path.parent.name == "zkgpu-live-b"
    assert report._traced_recording("live", tmp_path / "nothing") is None
    traces = tmp_path / "traces"
    traces.mkdir()
    (traces / "stale.json").write_text("{}", encoding="utf-8")
    out = report.export_traces(rec, traces)
    assert [(t.scenario, t.path.name, t.events) for t in out] == [("baseline", "baseline.json", 2), ("pinned_pool", "pinned_pool.json", 2)]
    assert sorted(p.name for p in traces.iterdir()) == ["baseline.json", "pinned_pool.json"]
    assert json.loads((traces / "baseline.json").read_text())["otherData"]["scenarios"] == ["baseline"]


@pytest.mark.slow
def test_report_end_to_end_one_notebook(tmp_path: Path, capfd, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    (tmp_path / "key_numbers").mkdir()
    (tmp_path / "key_numbers" / "00_index.json").write_text('{"stale": 1}', encoding="utf-8")
    assert report.run_report(out_dir=tmp_path, mode="replay", only=("00_index",))
    captured = capfd.readouterr()
    assert "without encryption" not in captured.err and "Traceback" not in captured.err
    page = (tmp_path / "index.html").read_text(encoding="utf-8")
    assert "00_index.html" in page and "stale" not in page
    nb_page = (tmp_path / "00_index.html").read_text(encoding="utf-8")
    assert "scroll sideways instead of being cut off" in nb_page
    rec = report._traced_recording("replay", tmp_path / "live")
    scenarios = [s for s in rec.scenarios if rec.scenario(s).get("events")]
    assert sorted(p.stem for p in (tmp_path / "traces").glob("*.json")) == sorted(scenarios)
    details = (tmp_path / report.DETAILS_PAGE).read_text(encoding="utf-8")  # the landing page links it
    assert f"href='{report.DETAILS_PAGE}'" in page and (tmp_path / "lecture" / "00_index.html").is_file()
    for s in scenarios:
        assert f"href='traces/{s}.json'" in details
    executed = nbformat.read(tmp_path / "00_index.ipynb", as_version=4)
    injected = [c for c in executed.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1 and 'MODE = "replay"' in injected[0].source  # the mode reaches the notebook as a parameter


def test_notebook_parameters_read_the_environment_once_and_check_it():
    assert report.notebook_parameters("replay", {}) == {"MODE": "replay"}
    assert report.notebook_parameters("live", {"ZKGPU_HOST_LOAD": " 4 "}) == {"MODE": "live", "HOST_LOAD": 4}
    with pytest.raises(ValueError, match="ZKGPU_HOST_LOAD must be an integer >= 0, got 'x'"):
        report.notebook_parameters("replay", {"ZKGPU_HOST_LOAD": "x"})
    with pytest.raises(ValueError, match="'auto'"):
        report.notebook_parameters("auto", {})
    assert report.resolve_report_mode(None, {"ZKGPU_MODE": "replay"}) == "replay"
    assert report.resolve_report_mode("replay", {"ZKGPU_MODE": "live"}) == "replay"  # the argument wins
    with pytest.raises(ValueError, match="bogus"):
        report.resolve_report_mode(None, {"ZKGPU_MODE": "bogus"})


def test_zkgpu_help_imports_no_notebook_machinery():
    # the report's nbconvert / papermill / nbclient / nbformat come through zkgpu.core.optional.notebook_tools
    # when notebooks run, not at start-up: `zkgpu --help` (and every other command) starts without them
    import subprocess
    import sys

    code = ("import sys\nfrom zkgpu.app.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print('LOADED', sorted(m for m in sys.modules if m.split('.')[0] in ('nbconvert', 'papermill', 'nbclient', 'nbformat', 'jupyter_client')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True).stdout
    assert "Usage:" in out and "LOADED []" in out, out[-500:]
    assert callable(notebook_tools().HTMLExporter) and notebook_tools() is notebook_tools()  # imported once, on use


def test_printed_findings_never_wrap_inside_a_number():
    """JupyterLab's CSS breaks printed outputs anywhere (word-break: break-all, "15⏎8"); both renderings override it."""
    from zkgpu.app import lecture

    nb = new_notebook(cells=[new_markdown_cell("# t")])
    for body in (report.html_exporter().from_notebook_node(nb)[0],
                 lecture.lecture_exporter().from_notebook_node(nb, resources={"zkgpu_nav": ""})[0]):
        tail = body[body.rindex("break-all") if "break-all" in body else 0:]
        assert re.search(r"\.jp-OutputArea-output pre ?\{ ?word-break: ?normal", tail), "the override must come after the lab CSS"
