"""zkgpu.analysis.chrome_trace and ``zkgpu trace export``: the event tables as Chrome / Perfetto trace JSON.

The checks of the format are written here from the Trace Event Format's definition (required
fields per phase type, complete events of one thread must nest), independently of the exporter.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from zkgpu.analysis import chrome_trace as ct
from zkgpu.analysis.replay import Recording, find_recordings
from zkgpu.app.cli import main
from zkgpu.core.events import normalize_events

RECORDINGS = find_recordings()
METADATA_NAMES = {"process_name", "thread_name", "process_sort_index", "thread_sort_index"}


def _strict_load(text: str) -> dict:
    """json.loads that refuses NaN / Infinity (not JSON; Perfetto rejects them)."""
    def bad(c):
        raise ValueError(f"non-JSON constant {c}")
    return json.loads(text, parse_constant=bad)


def validate(trace: dict) -> list[str]:
    """Problems of a trace object against the Trace Event Format (JSON Object Format); [] = valid."""
    problems = []
    if not isinstance(trace.get("traceEvents"), list):
        return ["no traceEvents array"]
    if trace.get("displayTimeUnit") not in (None, "ms", "ns"):
        problems.append(f"displayTimeUnit {trace.get('displayTimeUnit')!r}")
    named_threads, named_procs, used = set(), set(), set()
    slices: dict[tuple[int, int], list[tuple[float, float]]] = {}
    for i, e in enumerate(trace["traceEvents"]):
        if not isinstance(e.get("name"), str) or not isinstance(e.get("ph"), str):
            problems.append(f"event {i}: name and ph must be strings")
            continue
        if not isinstance(e.get("pid"), int) or not isinstance(e.get("tid", 0), int):
            problems.append(f"event {i}: pid/tid must be integers")
        if e["ph"] == "X":
            for k in ("ts", "dur", "tid"):
                if not isinstance(e.get(k), (int, float)) or isinstance(e.get(k), bool):
                    problems.append(f"event {i}: X needs numeric {k}")
            if not isinstance(e.get("ts"), (int, float)) or not isinstance(e.get("dur"), (int, float)):
                continue
            if e["dur"] < 0:
                problems.append(f"event {i}: negative dur")
            if "args" in e and not isinstance(e["args"], dict):
                problems.append(f"event {i}: args must be an object")
            used.add((e["pid"], e["tid"]))
            slices.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
        elif e["ph"] == "M":
            if e["name"] not in METADATA_NAMES:
                problems.append(f"event {i}: unknown metadata {e['name']}")
            key = "name" if e["name"].endswith("_name") else "sort_index"
            if key not in e.get("args", {}):
                problems.append(f"event {i}: {e['name']} needs args.{key}")
            if e["name"] == "thread_name":
                named_threads.add((e["pid"], e["tid"]))
            if e["name"] == "process_name":
                named_procs.add(e["pid"])
        else:
            problems.append(f"event {i}: unexpected ph {e['ph']!r}")
    problems += [f"thread {t} has no thread_name" for t in used - named_threads]
    problems += [f"process {p} has no process_name" for p in {p for p, _ in used} - named_procs]
    for key, iv in slices.items():  # complete events on one thread nest or are disjoint
        stack: list[float] = []
        for s, e in sorted(iv, key=lambda t: (t[0], -t[1])):
            while stack and stack[-1] <= s:
                stack.pop()
            if stack and e > stack[-1] + 1e-9:
                problems.append(f"thread {key}: slice [{s}, {e}] overlaps its parent without nesting")
                break
            stack.append(e)
    return problems


def _slices(trace: dict) -> list[dict]:
    return [e for e in trace["traceEvents"] if e["ph"] == "X"]


def _thread_names(trace: dict) -> dict[tuple[int, int], str]:
    return {(e["pid"], e["tid"]): e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}


def _process_names(trace: dict) -> dict[int, str]:
    return {e["pid"]: e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "process_name"}


def _check_every_row_once(trace: dict, tables: dict[str, pd.DataFrame]) -> None:
    seen = Counter((e["args"]["scenario"], e["args"]["row"]) for e in _slices(trace))
    expected = Counter((s, i) for s, t in tables.items() for i in range(len(t)))
    assert seen == expected  # every row exactly once, nothing else
    by_key = {(e["args"]["scenario"], e["args"]["row"]): e for e in _slices(trace)}
    for s, t in tables.items():
        for i, r in enumerate(normalize_events(t).itertuples(index=False)):
            e = by_key[(s, i)]
            assert e["name"] == r.phase
            assert round(e["ts"] * 1000) == r.start_ns and round((e["ts"] + e["dur"]) * 1000) == r.end_ns
            assert e["args"].get("bytes") == (None if pd.isna(r.bytes) else int(r.bytes))
            if pd.isna(r.gpu_ms):
                assert "gpu_ms" not in e["args"]
            else:
                assert e["args"]["gpu_ms"] == pytest.approx(float(r.gpu_ms))
            assert e["args"].get("partition") == (None if pd.isna(r.partition) else int(r.partition))


def _table(rows: list[tuple]) -> pd.DataFrame:
    cols = ["run", "worker", "gpu", "partition", "phase", "start_ns", "end_ns", "gpu_ms", "bytes", "detail"]
    return normalize_events(pd.DataFrame(rows, columns=cols))


def test_synthetic_table_layout_lanes_and_args():
    na = pd.NA
    ev = _table([
        ("r", na, na, 0, "synthesize", 0, 100, float("nan"), 96, "synth_worker=1,is_pinned=false"),
        ("r", 0, 0, 0, "gpu_queue", 100, 300, float("nan"), na, na),
        ("r", 0, 0, 1, "gpu_queue", 150, 500, float("nan"), na, na),  # overlaps the first: a second lane
        ("r", 0, 0, 0, "prove", 300, 900, float("nan"), na, na),
        ("r", 0, 0, 0, "mutex_held", 310, 800, float("nan"), na, na),
        ("r", 0, 0, 0, "ntt_msm_h", 320, 600, 2.5, 3000, na),
        ("r", 0, 0, 0, "h2d", 320, 420, 0.1, 3000, "path=pageable"),
        ("r", 0, 0, 0, "prep_msm", 315, 700, float("nan"), na, na),  # beside the GPU work: CPU thread
        ("r", 0, 0, 0, "finalize", 810, 850, float("nan"), na, na),
    ])
    trace = ct.chrome_trace({"r": ev}, gpu_names={0: "Test GPU"})
    assert validate(_strict_load(json.dumps(trace, allow_nan=False))) == []
    _check_every_row_once(trace, {"r": ev})
    names = _thread_names(trace)
    track = {e["args"]["row"]: names[(e["pid"], e["tid"])] for e in _slices(trace)}
    assert track[0] == "synthesis 1"
    assert track[1] == "worker 0 · queue" and track[2] == "worker 0 · queue (2)"
    assert track[3] == "worker 0 · prove"
    assert track[4] == track[5] == track[6] == "worker 0"
    assert track[7] == "worker 0 · CPU prep" and track[8] == "worker 0 · finalizer"
    assert sorted(_process_names(trace).values()) == ["r · GPU 0 (Test GPU)", "r · host CPU"]
    h2d = next(e for e in _slices(trace) if e["name"] == "h2d")
    assert h2d["args"]["GB/s"] == pytest.approx(30.0)  # 3000 bytes in 100 ns
    assert h2d["args"]["detail"] == "path=pageable" and h2d["args"]["gpu_ms"] == 0.1
    assert h2d["ts"] == 0.32 and h2d["dur"] == 0.1  # µs
    syn = next(e for e in _slices(trace) if e["name"] == "synthesize")
    assert "gpu_ms" not in syn["args"] and "GB/s" not in syn["args"] and syn["args"]["bytes"] == 96


def test_lanes_keep_nesting_and_use_few_lanes():
    iv = [(0, 10, 0), (1, 5, 1), (2, 12, 2), (6, 9, 3), (10, 11, 4), (12, 20, 5)]
    lanes = ct._lanes(iv)
    assert lanes == {0: 0, 1: 0, 2: 1, 3: 0, 4: 0, 5: 0}  # [10, 11] starts where [0, 10] ends


@pytest.mark.skipif(not RECORDINGS, reason="no recording in data/")
@pytest.mark.parametrize("rec", RECORDINGS, ids=[r.path.name for r in RECORDINGS])
def test_recordings_export_every_event_once(rec: Recording, tmp_path: Path):
    out, rows = ct.export_recording(rec, tmp_path / "t.json")
    trace = _strict_load(out.read_text(encoding="utf-8"))
    assert validate(trace) == []
    tables = {s: rec.events(s) for s in rec.scenarios if rec.scenario(s).get("events")}
    assert rows == sum(len(t) for t in tables.values()) == len(_slices(trace))
    _check_every_row_once(trace, tables)
    procs = _process_names(trace)
    for s in tables:  # one process per GPU and scenario, the host CPU apart
        assert any(n.startswith(f"{s} · GPU 0") for n in procs.values()) and f"{s} · host CPU" in procs.values()
    assert trace["otherData"]["recording"] == rec.path.name


def _run(args: list[str]):
    return CliRunner().invoke(main, ["trace", "export", *args])


@pytest.mark.skipif(not RECORDINGS, reason="no recording in data/")
def test_cli_exports_one_scenario_by_name_and_by_path(tmp_path: Path):
    rec = RECORDINGS[0]
    scen = rec.scenarios[0]
    for run in (rec.path.name, str(rec.path)):
        out = tmp_path / f"{len(run)}" / "t.json"
        res = _run([run, "--scenario", scen, "--out", str(out)])
        assert res.exit_code == 0, res.output
        trace = _strict_load(out.read_text(encoding="utf-8"))
        assert validate(trace) == [] and trace["otherData"]["scenarios"] == [scen]
        _check_every_row_once(trace, {scen: rec.events(scen)})


@pytest.mark.parametrize("case", ["unknown run", "unknown scenario", "existing out", "no scenarios"])
def test_cli_errors_are_one_line_exit_2_nothing_written(case: str, tmp_path: Path):
    if not RECORDINGS and case != "unknown run":
        pytest.skip("no recording in data/")
    out = tmp_path / "t.json"
    run = RECORDINGS[0].path.name if RECORDINGS else "x"
    args = {"unknown run": ["no-such-run", "--out", str(out)],
            "unknown scenario": [run, "--scenario", "no_such_scenario", "--out", str(out)],
            "existing out": [run, "--out", str(out)],
            "no scenarios": [str(tmp_path / "bench"), "--out", str(out)]}[case]
    if case == "existing out":
        out.write_text("keep me", encoding="utf-8")
    if case == "no scenarios":
        (tmp_path / "bench").mkdir()
        (tmp_path / "bench" / "manifest.json").write_text('{"kind": "bench"}', encoding="utf-8")
    res = _run(args)
    assert res.exit_code == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "Traceback" not in res.output
    assert {"unknown run": "no-such-run", "unknown scenario": "no_such_scenario", "existing out": "exists",
            "no scenarios": "no recorded scenario"}[case] in lines[0]
    if case == "existing out":
        assert out.read_text(encoding="utf-8") == "keep me"
    else:
        assert not out.exists()
    assert res.stdout == ""


def test_write_refuses_to_overwrite_and_nan(tmp_path: Path):
    p = ct.write_chrome_trace({"traceEvents": []}, tmp_path / "a" / "t.json")
    with pytest.raises(FileExistsError):
        ct.write_chrome_trace({"traceEvents": []}, p)
    ct.write_chrome_trace({"traceEvents": [], "otherData": {"x": 1}}, p, overwrite=True)
    assert _strict_load(p.read_text())["otherData"] == {"x": 1}
    with pytest.raises(ValueError):
        ct.write_chrome_trace({"traceEvents": [{"ts": float("nan")}]}, tmp_path / "nan.json")
    assert not (tmp_path / "nan.json").exists()


def test_validator_catches_what_it_checks():
    meta = [{"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "p"}},
            {"name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": {"name": "t"}}]
    ok = {"name": "a", "ph": "X", "ts": 0.0, "dur": 10.0, "pid": 1, "tid": 1}
    assert validate({"traceEvents": meta + [ok]}) == []
    misnested = dict(ok, name="b", ts=5.0)
    assert validate({"traceEvents": meta + [ok, misnested]})
    assert validate({"traceEvents": meta + [dict(ok, tid=2)]})  # unnamed thread
    assert validate({"traceEvents": meta + [{k: v for k, v in ok.items() if k != "dur"}]})


@pytest.mark.skipif(not RECORDINGS, reason="no recording in data/")
@pytest.mark.parametrize("case", ["truncated", "outside"])
def test_cli_bad_events_file_is_one_line_exit_2(case: str, tmp_path: Path):
    """break1 item 11: a truncated events parquet was "internal error ArrowInvalid" (rc 1); a
    manifest naming ../../../../etc/passwd read outside the run folder."""
    import json

    rec = RECORDINGS[0]
    scen = rec.scenarios[0]
    copy = tmp_path / "rec"
    copy.mkdir()
    m = json.loads((rec.path / "manifest.json").read_text(encoding="utf-8"))
    rel = m["scenarios"][scen]["events"]
    if case == "truncated":
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        data = (rec.path / rel).read_bytes()
        (copy / rel).write_bytes(data[: len(data) // 2])
    else:
        m["scenarios"][scen]["events"] = "../../../../etc/passwd"
    (copy / "manifest.json").write_text(json.dumps(m), encoding="utf-8")
    out = tmp_path / "t.json"
    res = _run([str(copy), "--scenario", scen, "--out", str(out)])
    assert res.exit_code == 2, res.output
    line = res.stderr.strip()
    assert "\n" not in line and line.startswith("Error: ")
    assert ("unreadable events file" if case == "truncated" else "outside the run folder") in line
    assert not out.exists()
