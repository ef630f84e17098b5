"""Issue 22 (reliability round 3): recordings, replay, forecasts, outputs, `zkgpu parse` and the run's bounds.
Everything read from a file is untrusted: checked at the door, refused in one line naming the file and the field;
nothing overwritten, nothing written outside its target, a run that did not finish never read as one that did.
Each case is a row of RELIABILITY.md."""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import subprocess
import sys
import time
import tracemalloc
import warnings

import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zkgpu.analysis import logs, model, replay
from zkgpu.analysis.logs import MARKERS
from zkgpu.analysis.logs.parse import MAX_LINE_CHARS
from zkgpu.analysis.replay import Recording, story_order
from zkgpu.app import pipeline_cmd, record, report
from zkgpu.app.cli import main
from zkgpu.core import manifest
from zkgpu.core.events import normalize_events
from zkgpu.pipeline.config import MAX_PARTITIONS, MAX_TIMEOUT_S, PipelineConfig
from zkgpu.story import forecast


class _Res:
    def __init__(self, r):
        self.returncode, self.stdout, self.stderr = r.exit_code, r.stdout, r.stderr


def _run(args, command=None):
    """The CLI in-process (CliRunner), as a subprocess-like result."""
    return _Res(CliRunner().invoke(pipeline_cmd.main if command == "pipeline" else main, args))


def _cli(args, env=None, cwd=None):
    e = dict(os.environ, **(env or {}))
    e.setdefault("ZKGPU_DISABLE_GPU", "1")
    return subprocess.run([sys.executable, "-m", "zkgpu.app.cli", *args], capture_output=True, text=True, env=e, cwd=cwd, timeout=120)


def _one_line_error(res, *words):
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    err = res.stderr.strip()
    assert "Traceback" not in res.stderr and "\n" not in err, res.stderr
    assert err.startswith("Error: "), err
    for w in words:
        assert w in err, (w, err)


# --------------------------------------------------------------------------- bounds


@pytest.mark.parametrize("args, words", [
    (["--timeout", "1e10"], ["--timeout", "10000000000", f"{MAX_TIMEOUT_S:g}"]),
    (["--timeout", "inf"], ["--timeout", "inf"]),
    (["--timeout", "nan"], ["timeout", "nan"]),
    (["--partitions", "100000000"], ["--partitions", "100000000", str(MAX_PARTITIONS)]),
    (["--partitions", "1e8"], ["--partitions", "1e8"]),
])
def test_pipeline_timeout_and_partitions_are_bounded(args, words):
    _one_line_error(_run(["--device", "cpu", *args], command="pipeline"), *words)


@pytest.mark.parametrize("field, value", [("timeout_s", 1e10), ("timeout_s", math.inf), ("timeout_s", math.nan), ("partitions", MAX_PARTITIONS + 1)])
def test_pipeline_config_refuses_unbounded_values(field, value):
    with pytest.raises(ValueError, match=f"PipelineConfig.{field}"):
        PipelineConfig(device="cpu", n=16, **{field: value})


@pytest.mark.parametrize("kw", [{"max_queue": math.nan}, {"max_queue": math.inf}, {"max_queue": 2.5}, {"max_queue": True}, {"max_queue": "4"},
                                {"jitter": math.nan}, {"jitter": "0.1"}, {"prep_speedup": math.nan}, {"h2d_gbps": math.nan}])
def test_model_refuses_non_finite_parameters(kw):
    name = next(iter(kw))
    with pytest.raises(ValueError, match=name):
        model.simulate(model.ModelParams(prep_msm_ms=100.0, ntt_ms=300.0, batch_add_ms=150.0, tail_msm_ms=50.0, h2d_bytes=2e9, pageable_gbps=2.0,
                                         pinned_gbps=20.0), partitions=4, transfer="pageable", **kw)


def test_zkgpu_data_that_is_a_file_is_one_clear_error(tmp_path):
    f = tmp_path / "afile"
    f.write_text("x")
    res = _cli(["forecast"], env={"ZKGPU_DATA": str(f)})
    _one_line_error(res, "ZKGPU_DATA", str(f), "is a file", "must be a folder")


# --------------------------------------------------------------------------- recordings and replay


def _recording(folder, scenarios, manifest_extra=None, events=None):
    """A recording folder with one tiny event table per scenario (``events/<i>.parquet``); returns its path."""
    (folder / "events").mkdir(parents=True)
    entries = {}
    for i, s in enumerate(scenarios):
        ev = events if events is not None else normalize_events(pd.DataFrame({
            "run": [s, s], "worker": [0, 0], "gpu": [0, 0], "partition": [0, 0], "phase": ["prove", "ntt_msm_h"],
            "start_ns": [0, 10], "end_ns": [100, 50]}))
        ev.to_parquet(folder / "events" / f"{i}.parquet")
        entries[s] = {"events": f"events/{i}.parquet", "config": {}}
    m = {"device": "cpu", "scenarios": entries, **(manifest_extra or {})}
    (folder / "manifest.json").write_text(json.dumps(m), encoding="utf-8")
    return folder


def test_report_trace_names_are_safe_slugs_inside_the_folder(tmp_path):
    victim = tmp_path / "victim.json"
    victim.write_text("keep", encoding="utf-8")
    names = ["baseline", f"{victim.with_suffix('')}", "../../victim", "..", "a/b", "a\\b", "x" * 300, "Base line", "base-line", "\u00e9t\u00e9"]
    rec = Recording.open(_recording(tmp_path / "data" / "cpu-20990101-record", names))
    traces = tmp_path / "out" / "traces"
    got = report.export_traces(rec, traces)
    assert victim.read_text(encoding="utf-8") == "keep"
    files = sorted(p.name for p in traces.iterdir())
    assert len(files) == len(names) == len(got)  # one file per scenario: none overwrote another
    assert all(t.path.parent == traces and "/" not in t.path.name and len(t.path.name) <= 90 for t in got)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "out", "victim.json"]
    assert [t.scenario for t in got] == list(story_order(names))


def test_report_traces_folder_that_is_a_link_is_refused(tmp_path):
    rec = Recording.open(_recording(tmp_path / "data" / "cpu-20990101-record", ["baseline"]))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.json").write_text("keep", encoding="utf-8")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "traces").symlink_to(elsewhere)
    with pytest.raises(ValueError, match="link"):
        report.export_traces(rec, tmp_path / "out" / "traces")
    assert [p.name for p in elsewhere.iterdir()] == ["keep.json"]


# --------------------------------------------------------------------------- zkgpu parse: memory and fuzzing


def _peak_bytes(fn):
    tracemalloc.start()
    try:
        out = fn()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_parse_memory_of_a_long_quoted_value_is_a_small_multiple_of_the_line(tmp_path):
    n = 600_000  # under MAX_LINE_CHARS: read whole
    log = tmp_path / "q.log"
    log.write_text("CUZK_TIMING: kind=partition partition=0 prep_msm_ms=5\n"
                   f'CUZK_TIMING: kind=partition partition=1 note="{"a" * n}" ntt_msm_h_ms=7\n', encoding="utf-8")
    parsed, peak = _peak_bytes(lambda: logs.parse_file(log, rows=False))
    assert parsed.summary()["cuzk_timing"] == 2 and parsed.summary()["overlong"] == 0
    assert peak < 20 * n, f"peak {peak / 1e6:.1f} MB for a {n / 1e6:.1f} MB line"  # was ~190 bytes per byte (regex backtracking)


def test_an_overlong_line_is_cut_counted_and_never_read_whole(tmp_path):
    log = tmp_path / "nul.log"
    with open(log, "w", encoding="utf-8") as f:
        f.write("CUZK_TIMING: kind=partition partition=0 prep_msm_ms=5\n")
        f.write("CUZK_TIMING: kind=partition partition=1 prep_msm_ms=6 note=" + "x" * (3 * MAX_LINE_CHARS) + "\n")
        f.write("CUZK_TIMING: kind=partition partition=2 prep_msm_ms=7\n")
        f.write("\x00" * (24 * MAX_LINE_CHARS))  # a NUL tail without a line end (a log cut by a crash)
    parsed, peak = _peak_bytes(lambda: logs.parse_file(log, rows=False))
    s = parsed.summary()
    assert s["overlong"] == 2 and s["undecodable"] == 1 and s["no_final_newline"] == 1, s
    assert s["cuzk_timing"] == 3 and s["truncated"] >= 1, s  # the cut line's record kept, flagged, its cut token dropped
    assert peak < 12 * MAX_LINE_CHARS, f"peak {peak / 1e6:.1f} MB"  # was the whole 24 MiB line, twice
    res = _run(["parse", str(log)])
    assert res.returncode == 0 and "overlong=2" in res.stdout, (res.stdout, res.stderr)


_PIECES = st.one_of(
    st.sampled_from([*MARKERS, "CUZK_TIMING: kind=partition", "TIMELINE,", "partition=", "worker=", "gpu=", "job=", "_ms=",
                     "prep_msm_ms=", "ntt_msm_h_ms=", "=", '"', '\\"', "\\", " ", "\t", "\r", "\n", "\r\n", ",", "...", "\u2026",
                     "\x1b[31m", "\x1b]0;", "\x07", "\x00", "\ufffd", "nan", "inf", "-inf", "1e308", "-5", "2147483648",
                     "12ms", "1.5s", "3us", "kind=", "start", "end", "GPU_START", "GPU_END", "2026-12-03T10:00:00Z INFO ",
                     "\u00e9", "\U0001f600"]),
    st.integers(-10**20, 10**20).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(max_size=12),
)


@st.composite
def _log_text(draw):
    parts = draw(st.lists(_PIECES, max_size=120))
    if draw(st.booleans()):  # one long token, quoted or not: the regex-backtracking and overlong-line cases
        long = draw(st.sampled_from(["a", '\\"', "\x00", "=", "1", " "])) * draw(st.integers(1, 200_000))
        parts.insert(draw(st.integers(0, len(parts))), draw(st.sampled_from(['note="{}"', "note={}", "{}"])).format(long))
    return "".join(parts)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.data_too_large])
@given(text=_log_text(), tail=st.binary(max_size=64))
def test_fuzz_parse_never_crashes_and_stays_bounded(tmp_path, text, tail):
    """`zkgpu parse` of any text (and trailing bytes that need not be UTF-8): no exception but the documented ones,
    every line counted, memory within a small multiple of the input, and the CLI one line or a summary."""
    log = tmp_path / "fuzz.log"
    log.write_bytes(text.encode("utf-8", "surrogatepass") + tail)
    started = time.monotonic()
    parsed, peak = _peak_bytes(lambda: logs.parse_file(log, rows=False))
    s = parsed.summary()
    assert all(isinstance(v, int) and v >= 0 for v in s.values()), s
    logs.partition_table(parsed)
    try:
        logs.to_events(parsed, run="fuzz")
    except ValueError as exc:  # documented: durations past the int64 ns clock
        assert "\n" not in str(exc)
    assert peak < 16_000_000 + 40 * log.stat().st_size, f"peak {peak / 1e6:.1f} MB for {log.stat().st_size} bytes"
    res = _run(["parse", str(log)])
    assert res.returncode in (0, 2), (res.returncode, res.stdout, res.stderr)
    assert "Traceback" not in res.stderr and (res.returncode == 0 or "\n" not in res.stderr.strip()), res.stderr
    assert time.monotonic() - started < 30


def _record_cpu(out, **kw):
    return record.record(out=out, device="cpu", n=32, partitions=1, scenarios=["baseline", "pinned_pool"], sweep=False, bench=False, **kw)


@pytest.mark.parametrize("how", ["KeyboardInterrupt", "SIGTERM", "RuntimeError", "OSError"])
def test_a_cut_recording_is_marked_incomplete_and_replay_skips_it(tmp_path, monkeypatch, how):
    good = _record_cpu(tmp_path)  # an older, finished recording
    real = record.run_scenario
    calls = []

    def cut(name, *a, **kw):
        calls.append(name)
        if len(calls) == 2:
            raise {"KeyboardInterrupt": KeyboardInterrupt("signal 2"), "SIGTERM": KeyboardInterrupt("signal 15"),
                   "RuntimeError": RuntimeError("boom"), "OSError": OSError(28, "No space left on device")}[how]
        return real(name, *a, **kw)

    monkeypatch.setattr(record, "run_scenario", cut)
    with pytest.raises(KeyboardInterrupt if how in ("KeyboardInterrupt", "SIGTERM") else RuntimeError, match="incomplete"):
        _record_cpu(tmp_path)
    (cut_dir,) = [p for p in tmp_path.iterdir() if p != good]
    assert cut_dir.name.endswith("-record-1-incomplete"), cut_dir.name
    m = json.loads((cut_dir / "manifest.json").read_text(encoding="utf-8"))
    assert m["complete"] is False and m["incomplete"] and m["scenarios"]["baseline"]["events"], m
    with pytest.warns(UserWarning, match="skipping incomplete recording"):
        assert [r.path for r in replay.find_recordings(tmp_path)] == [good]


def test_a_recording_whose_every_scenario_failed_is_incomplete(tmp_path, monkeypatch):
    monkeypatch.setattr(record, "run_scenario", lambda name, settings, *a, **kw: {"settings": settings, "error": "3 of 3 proofs rejected by snarkjs",
                                                                                       "seconds": 0.0})
    run_dir = _record_cpu(tmp_path)
    assert run_dir.name.endswith("-incomplete") and json.loads((run_dir / "manifest.json").read_text())["complete"] is False
    with pytest.warns(UserWarning, match="skipping incomplete"):
        assert replay.find_recordings(tmp_path) == []
    res = _run(["trace", "export", run_dir.name.removesuffix("-incomplete")])
    assert res.returncode != 0


def test_a_full_disk_at_the_manifest_leaves_an_incomplete_folder(tmp_path, monkeypatch):
    def full(path, obj):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(manifest, "write_json_new", full)
    with pytest.raises(OSError):
        _record_cpu(tmp_path)
    (run_dir,) = tmp_path.iterdir()
    assert run_dir.name.endswith("-incomplete") and not (run_dir / "manifest.json").exists()


def test_an_old_interrupted_manifest_under_a_normal_name_is_skipped(tmp_path):
    _recording(tmp_path / "cpu-20990101-record", ["baseline"], {"interrupted": "KeyboardInterrupt: signal 15"})
    good = _recording(tmp_path / "cpu-20980101-record", ["baseline"], {"interrupted": None})
    with pytest.warns(UserWarning, match="signal 15"):
        assert [r.path for r in replay.find_recordings(tmp_path)] == [good]


@pytest.mark.parametrize("drop, word", [(["start_ns", "end_ns"], "start_ns"), (["phase"], "phase"), (["end_ns"], "end_ns")])
def test_an_event_table_without_its_columns_is_refused_naming_the_column(tmp_path, drop, word):
    ev = pd.DataFrame({"run": ["a"], "worker": [0], "gpu": [0], "partition": [0], "phase": ["prove"], "start_ns": [0], "end_ns": [100]})
    rec = Recording.open(_recording(tmp_path / "cpu-20990101-record", ["baseline"], events=ev.drop(columns=drop)))
    with pytest.raises(ValueError, match=f"0.parquet: no column '{word}'"):
        rec.events("baseline")
    res = _run(["trace", "export", str(rec.path), "--out", str(tmp_path / "t.json")])
    _one_line_error(res, "0.parquet", word)
    assert not (tmp_path / "t.json").exists()


@pytest.mark.parametrize("col, values, word", [("start_ns", [0.5], "float64"), ("phase", [None], "null"), ("end_ns", ["100"], "expected integer")])
def test_an_event_table_with_wrong_values_is_refused_naming_the_column(tmp_path, col, values, word):
    ev = pd.DataFrame({"phase": ["prove"], "start_ns": [0], "end_ns": [100]})
    ev[col] = values
    rec = Recording.open(_recording(tmp_path / "cpu-20990101-record", ["baseline"], events=ev))
    with pytest.raises(ValueError, match=f"column '{col}'.*{word}|{word}.*column '{col}'|column '{col}' has"):
        rec.events("baseline")


def test_an_events_entry_that_names_a_folder_is_refused(tmp_path):
    folder = _recording(tmp_path / "cpu-20990101-record", ["baseline"])
    m = json.loads((folder / "manifest.json").read_text())
    m["scenarios"]["baseline"]["events"] = "events"
    (folder / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(ValueError, match="a folder"):
        Recording.open(folder).events("baseline")


@pytest.mark.parametrize("patch, word", [
    ({"scenarios": {"baseline": {"events": 5}}}, "'events' is an integer"),
    ({"host_load": "x"}, "'host_load' is a string"),
    ({"host_load": {"threads": "x"}}, "'host_load.threads'"),
    ({"host_load": {"threads": -1}}, "'host_load.threads'"),
    ({"scenarios": {"baseline": {"events": "events/0.parquet", "config": [1, 2]}}}, "'config' is an array"),
    ({"scenarios": {"baseline": {"events": "events/0.parquet", "log": {"a": 1}}}}, "'log' is an object"),
    ({"n": "big"}, "'n' is a string"),
    ({"n": True}, "'n' is true/false"),
    ({"partitions": 1.5}, "'partitions' is a number"),
    ({"benchmarks": {"ntt": 3}}, "benchmarks 'ntt'"),
    ({"scenarios": [1]}, "'scenarios' is an array"),
])
def test_manifest_fields_of_the_wrong_type_are_refused_at_load(tmp_path, patch, word):
    folder = _recording(tmp_path / "cpu-20990101-record", ["baseline"])
    m = json.loads((folder / "manifest.json").read_text())
    m.update(patch)
    (folder / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(ValueError, match=re.escape(word)):
        Recording.open(folder)
    with pytest.warns(UserWarning, match=re.escape(word)):
        assert replay.find_recordings(tmp_path) == []
    res = _run(["trace", "export", str(folder), "--out", str(tmp_path / "t.json")])
    _one_line_error(res, "manifest.json", word)


# --------------------------------------------------------------------------- manifests: the command


def test_manifest_command_is_zkgpu_args_with_paths_relative_to_the_data_folder(tmp_path, monkeypatch):
    data = tmp_path / "data"
    (data / "in").mkdir(parents=True)
    (data / "in" / "a b.log").write_text("x")
    monkeypatch.chdir(data)
    argv = [str(manifest.REPO_ROOT / "zkgpu" / "app" / "cli.py"), "record", "--out", str(data), f"--zkey={manifest.REPO_ROOT}/build/c.zkey",
            "in/a b.log", "--scenario", "baseline", "/home/someone/secret/x.wtns", "--partitions", "4"]
    got = manifest.portable_command(argv, data)
    assert got == "zkgpu record --out . --zkey=build/c.zkey 'in/a b.log' --scenario baseline .../x.wtns --partitions 4", got
    assert str(tmp_path) not in got and "/home" not in got
    monkeypatch.setattr(sys, "argv", argv)
    manifest.configure(data_dir=data)
    try:
        assert manifest.build_manifest()["command"] == got
    finally:
        manifest.configure(data_dir=None)


def test_old_manifests_with_absolute_commands_are_read_in_the_new_form(tmp_path):
    old = "/work/main/zkgpu/cli.py bench prove --zkey build/c.zkey --out /tmp/abc/data --sppark /root/x/sppark.txt"
    assert manifest.command_of({"command": old}, tmp_path / "data") == "zkgpu bench prove --zkey build/c.zkey --out .../data --sppark .../sppark.txt"
    assert manifest.command_of({"command": "zkgpu parse x.log"}) == "zkgpu parse x.log"
    assert manifest.command_of({"command": 5}) is None and manifest.command_of({}) is None and manifest.command_of([1]) is None
    assert shlex.split(manifest.command_of({"command": "/x/cli.py parse 'unbalanced"})) == ["zkgpu", "parse", "'unbalanced"]
    rec = Recording.open(_recording(tmp_path / "cpu-20990101-record", ["baseline"], {"command": old}))
    assert rec.command.startswith("zkgpu bench prove") and "/tmp" not in rec.command
    committed = [json.loads(p.read_text(encoding="utf-8")) for p in (manifest.REPO_ROOT / "data").rglob("manifest.json")]
    for m in committed:  # the data committed before: read in the new form, never rewritten
        c = manifest.command_of(m)
        assert c is None or not any(t.startswith("/") for t in c.split()), c


# --------------------------------------------------------------------------- forecast files

LAST_MILE = manifest.REPO_ROOT / "data" / "last-mile" / "nvidia-h200-20261201-record-4"


def test_forecast_of_dot_names_the_folder_not_an_empty_source(tmp_path, monkeypatch):
    monkeypatch.chdir(LAST_MILE)
    res = _run(["forecast", ".", "--out", str(tmp_path)])
    assert res.returncode == 0, (res.stdout, res.stderr)
    (f,) = tmp_path.iterdir()
    assert f.name == "forecast-from-nvidia-h200-20261201-record-4.json"
    doc = json.loads(f.read_text())
    assert doc["from_recording"] == LAST_MILE.name and doc["from_recording_path"] == "data/last-mile/nvidia-h200-20261201-record-4"


def _forecast_file(folder, **patch):
    doc = {"kind": "forecast", "made_utc": "2026-12-01T12:00:00+00:00", "from_recording": LAST_MILE.name,
           "from_recording_path": "data/last-mile/nvidia-h200-20261201-record-4",
           "scenarios": {"submit_prep_gpu": {"partitions_per_min": 1.0, "compute_util": 0.5, "measured_per_min": 1.0}}, **patch}
    path = folder / f"forecast-from-{LAST_MILE.name}.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("patch, word", [
    ({"from_recording_path": 5}, "from_recording_path 5"),
    ({"from_recording_path": ["data"]}, "from_recording_path ['data']"),
    ({"from_recording_path": "../../etc"}, "from_recording_path '../../etc'"),
    ({"from_recording_path": "/etc"}, "from_recording_path '/etc'"),
    ({"from_recording_path": "data/../../x"}, "from_recording_path 'data/../../x'"),
    ({"from_recording": "../x"}, "from_recording '../x'"),
    ({"from_recording": ""}, "from_recording ''"),
])
def test_forecast_files_with_a_bad_or_escaping_source_are_refused(tmp_path, patch, word):
    path = _forecast_file(tmp_path, **patch)
    with pytest.raises(ValueError, match=re.escape(f"{path}: {word}")):
        forecast.read_forecasts(tmp_path)


def test_a_forecast_source_outside_the_repository_is_never_opened(tmp_path):
    outside = _recording(tmp_path / "cpu-20990101-record", ["baseline"])
    rel = os.path.relpath(outside, manifest.REPO_ROOT)
    assert rel.startswith("..")
    assert forecast._from_source({"from_recording_path": rel, "from_recording": "nope"}) is None
    assert forecast._relative(outside) is None  # a forecast made from outside stores no absolute path


# --------------------------------------------------------------------------- one data folder everywhere


def test_notebook_00_inventory_reads_the_data_folder_its_banner_replays(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    data = tmp_path / "data"
    run = record.record(out=data, device="cpu", n=32, partitions=2, scenarios=["baseline"], sweep=False, bench=False)
    out = tmp_path / "out"
    for k, v in {"ZKGPU_DATA": str(data), "ZKGPU_MODE": "replay", "ZKGPU_NB_OUT": str(out), "MPLBACKEND": "Agg"}.items():
        monkeypatch.setenv(k, v)
    nb = nbformat.read(manifest.REPO_ROOT / "notebooks" / "00_index.ipynb", as_version=4)
    nbclient.NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "stream")
    assert run.name in text and "1 recordings in data/" in text, text[-2000:]  # was: the repository's data/ (dozens)
    numbers = json.loads((out / "00_index.json").read_text())["numbers"]
    assert (numbers["recordings"]["value"] if isinstance(numbers["recordings"], dict) else numbers["recordings"]) == 1


_JSON = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False) | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=8)
_FIELDS = ["scenarios", "environment", "host_load", "benchmarks", "circuit", "sweep", "device", "date_utc", "command", "n", "partitions",
           "complete", "interrupted", "incomplete", "notes"]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(top=st.dictionaries(st.sampled_from(_FIELDS), _JSON, max_size=4),
       entry=st.dictionaries(st.sampled_from(["events", "log", "config", "settings", "error", "host_load", "seconds"]), _JSON, max_size=3))
def test_fuzz_manifest_fields_load_or_are_refused_in_one_line(tmp_path_factory, top, entry):
    """Any JSON in the fields a reader uses: Recording.open either refuses it (one-line ValueError naming the file)
    or every property the notebooks and commands read works; find_recordings never raises."""
    root = tmp_path_factory.mktemp("fz")
    folder = _recording(root / "cpu-20990101-record", ["baseline"])
    m = json.loads((folder / "manifest.json").read_text())
    m["scenarios"]["baseline"].update(entry)
    m.update(top)
    (folder / "manifest.json").write_text(json.dumps(m))
    try:
        rec = Recording.open(folder)
    except ValueError as exc:
        assert "manifest.json" in str(exc) and "\n" not in str(exc)
        return
    for prop in ("label", "scenarios", "gpu", "host_load_threads", "incomplete", "command", "date"):
        getattr(rec, prop)
    for s in rec.scenarios:
        if rec.scenario(s).get("events"):
            try:
                rec.events(s)
            except ValueError as exc:
                assert "\n" not in str(exc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        replay.find_recordings(root)


def test_an_event_table_with_negative_times_is_refused(tmp_path):
    ev = pd.DataFrame({"phase": ["prove"], "start_ns": [-5], "end_ns": [10]})
    rec = Recording.open(_recording(tmp_path / "cpu-20990101-record", ["baseline"], events=ev))
    with pytest.raises(ValueError, match="column 'start_ns' has 1 negative value"):
        rec.events("baseline")


def test_a_forecast_that_is_a_folder_or_a_fifo_is_refused_without_blocking(tmp_path):
    (tmp_path / "forecast-a-folder.json").mkdir()
    with pytest.raises(ValueError, match="forecast-a-folder.json: not a regular file"):
        forecast.read_forecasts(tmp_path)
    (tmp_path / "forecast-a-folder.json").rmdir()
    os.mkfifo(tmp_path / "forecast-fifo.json")
    with pytest.raises(ValueError, match="forecast-fifo.json: not a regular file"):
        forecast.read_forecasts(tmp_path)
