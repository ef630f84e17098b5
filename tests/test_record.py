"""`zkgpu record` on the CPU into a temporary folder, and how zkgpu.analysis.replay finds and reads recordings."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3

import pandas as pd
import pytest
from click.testing import CliRunner

from zkgpu.analysis import calibration, keynumbers, model, replay
from zkgpu.app import live, record
from zkgpu.app.cli import main as cli_main
from zkgpu.core.events import COLUMNS
from zkgpu.pipeline.config import PipelineConfig

N, PARTS = 1 << 6, 2


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    base = tmp_path_factory.mktemp("data")
    run_dir = record.record(out=base, device="cpu", n=N, partitions=PARTS)
    return base, run_dir


def test_record_writes_one_fresh_folder_with_manifest(recorded):
    base, run_dir = recorded
    assert run_dir.parent == base and re.fullmatch(r"cpu-\d{8}-record", run_dir.name)
    m = json.loads((run_dir / "manifest.json").read_text())
    assert m["kind"] == "record" and m["device"] == "cpu" and m["n"] == N and m["partitions"] == PARTS
    assert m["sizes"]["abc_bytes_per_partition"] == 3 * N * 32
    assert "commit" in m and "environment" in m and m["environment"]["gpu"] is None
    sc = m["scenarios"]
    assert set(record.MAIN_SCENARIOS) == set(sc) and m["repeats"] >= 1
    assert "cudaHostRegister" in sc["registered"]["skipped"]
    ran = [k for k, v in sc.items() if "skipped" not in v]
    assert {"baseline", "pinned_pool", "pinned_narrow", "pinned_gw1", "pinned_gw3"} <= set(ran)
    for name in ran:
        e = sc[name]
        assert "error" not in e, e.get("traceback")
        assert e["config"]["transfer"] == record.SCENARIOS[name]["transfer"]
        assert e["config"]["gw"] == record.SCENARIOS[name]["gw"] and e["config"]["device"] == "cpu"
        ev = pd.read_parquet(run_dir / e["events"])
        assert list(ev.columns) == COLUMNS and len(ev) == e["rows"] > 0
        assert ev.loc[ev["phase"] == "tail_msm", "partition"].nunique() == PARTS
        assert "CUZK_TIMING:" in (run_dir / e["log"]).read_text()
    assert any("CPU duration" in n for n in m["notes"])
    # bases are generated once per transfer path: the later pinned_pool scenarios reuse them
    assert sc["pinned_pool"]["setup_s"] >= 0 and sc["pinned_narrow"]["setup_s"] == sc["pinned_gw3"]["setup_s"] == 0.0
    assert m["sweep"] is None and m["benchmarks"] == {}
    files = [p for p in run_dir.rglob("*") if p.is_file()]
    assert not [p for p in files if p.suffix in (".pkl", ".pickle", ".npy", ".npz")]
    assert sum(p.stat().st_size for p in files) < 2_000_000


def test_second_recording_never_reuses_the_folder(recorded, tmp_path):
    base, run_dir = recorded
    again = record.record(out=base, device="cpu", n=N, partitions=1, scenarios=["baseline"])
    assert again != run_dir and again.name == run_dir.name + "-1"
    assert json.loads((again / "manifest.json").read_text())["partitions"] == 1
    shutil.rmtree(again)


def test_record_command_and_bad_arguments(tmp_path):
    res = CliRunner().invoke(record.record_command, ["--device", "cpu", "--out", str(tmp_path), "--n", "32", "--partitions", "1",
                                                    "--scenario", "baseline", "--scenario", "pinned_pool"])
    assert res.exit_code == 0, res.output
    assert "recorded" in res.output
    (run_dir,) = tmp_path.iterdir()
    assert set(json.loads((run_dir / "manifest.json").read_text())["scenarios"]) == {"baseline", "pinned_pool"}
    with pytest.raises(ValueError, match="unknown scenario"):
        record.record(out=tmp_path, device="cpu", scenarios=["nope"])
    with pytest.raises(ValueError, match="device"):
        record.record(out=tmp_path, device="tpu")
    bad = CliRunner().invoke(record.record_command, ["--device", "cpu", "--out", str(tmp_path), "--n", "100", "--scenario", "baseline"])
    assert bad.exit_code != 0 and "power of two" in bad.output
    assert list(tmp_path.iterdir()) == [run_dir]  # rejected before any folder was made


def test_per_scenario_partitions(tmp_path):
    res = CliRunner().invoke(record.record_command, ["--device", "cpu", "--out", str(tmp_path), "--n", "32", "--partitions", "2",
                                                    "--scenario", "baseline", "--scenario", "pinned_narrow", "--scenario-partitions", "pinned_narrow=1"])
    assert res.exit_code == 0, res.output
    (run_dir,) = tmp_path.iterdir()
    sc = json.loads((run_dir / "manifest.json").read_text())["scenarios"]
    assert sc["baseline"]["config"]["partitions"] == 2 and sc["pinned_narrow"]["config"]["partitions"] == 1
    assert sc["pinned_narrow"]["partitions_ok"] == 1
    for arg, msg in (("pinned_narrow", "NAME=K"), ("pinned_narrow=x", "NAME=K"), ("pinned_gw3=4", "does not run"), ("pinned_narrow=0", "must be in")):
        bad = CliRunner().invoke(record.record_command, ["--device", "cpu", "--out", str(tmp_path), "--n", "32", "--scenario", "baseline",
                                                         "--scenario", "pinned_narrow", "--scenario-partitions", arg])
        assert bad.exit_code == 2 and msg in bad.output and "Traceback" not in bad.output, (arg, bad.output)
    assert list(tmp_path.iterdir()) == [run_dir]  # rejected before any folder was made
    # the last-mile set: the story over LAST_MILE_PARTITIONS, the alternatives (and only they) over fewer
    assert set(record.LAST_MILE_ALTERNATIVE_PARTITIONS) < set(record.LAST_MILE_SCENARIOS) <= set(record.SCENARIOS)
    assert "narrow_prep_gpu_h2d_pre_lock" in record.LAST_MILE_SCENARIOS
    # the story's last step: the pre-lock step with every G1 MSM over precomputed bases, all its partitions
    step = "narrow_prep_gpu_h2d_pre_lock_msm_precomp"
    s = record.LAST_MILE_SCENARIOS
    assert s.index(step) == s.index("narrow_prep_gpu_h2d_pre_lock") + 1 and step not in record.LAST_MILE_ALTERNATIVE_PARTITIONS
    assert record.SCENARIOS[step] == {**record.SCENARIOS["narrow_prep_gpu_h2d_pre_lock"], "msm_bases": "precomputed"}
    assert PipelineConfig(n=1 << 6, device="cpu", **{**record.SCENARIOS[step], "prep": "cpu"}).msm_bases == "precomputed"
    assert all(0 < k < record.LAST_MILE_PARTITIONS for k in record.LAST_MILE_ALTERNATIVE_PARTITIONS.values())


def test_replay_reads_a_recording(recorded, monkeypatch):
    base, run_dir = recorded
    monkeypatch.setenv("ZKGPU_DATA", str(base))
    src = live.open_source("replay")
    assert src.kind == "recorded-cpu" and not src.on_gpu and src.recording.path == run_dir
    assert "NOT GPU numbers" in src.banner()
    ev = src.events("baseline")
    assert list(ev.columns) == COLUMNS
    assert src.sweep() is None and src.benchmarks() == {}
    assert not src.has("registered")
    with pytest.raises(KeyError, match="registered"):
        src.events("registered")
    tab = replay.scenario_table(src)
    assert {"baseline", "pinned_pool"} <= set(tab.index)
    assert ((tab["timeline_util"] >= 0) & (tab["timeline_util"] <= 1)).all()
    assert (tab["partitions"] == PARTS).all()
    params = calibration.calibrated_params(src, "pinned_pool")
    sim = model.simulate(params, partitions=PARTS, gw=2, transfer="pinned")
    cmp = model.compare(sim, src.events("pinned_pool"))
    assert cmp.loc["ntt_msm_h_ms", "rel_err"] == pytest.approx(0.0, abs=1e-6)  # calibrated to the median


def test_replay_prefers_the_newest_gpu_recording(recorded, tmp_path):
    _, run_dir = recorded
    m = json.loads((run_dir / "manifest.json").read_text())

    def fake(name, date, gpu, device):
        d = tmp_path / name
        shutil.copytree(run_dir, d)
        mm = dict(m, date_utc=date, device=device, environment=dict(m["environment"], gpu=gpu))
        (d / "manifest.json").write_text(json.dumps(mm))
        return d

    fake("nvidia-h200-20260101-record", "2026-01-01T00:00:00+00:00", "NVIDIA H200", "gpu")
    fake("nvidia-h200-20260102-record", "2026-01-02T00:00:00+00:00", "NVIDIA H200", "gpu")
    fake("cpu-20260105-record", "2026-01-05T00:00:00+00:00", None, "cpu")
    (tmp_path / "nvidia-h200-20260109-record").mkdir()  # interrupted: no manifest
    names = [r.path.name for r in replay.find_recordings(tmp_path)]
    assert names == ["cpu-20260105-record", "nvidia-h200-20260102-record", "nvidia-h200-20260101-record"]
    best = replay.latest_recording(tmp_path)
    assert best.path.name == "nvidia-h200-20260102-record" and best.is_gpu
    assert live.open_source("replay", base=tmp_path).kind == "recorded-gpu"
    assert replay.latest_recording(tmp_path / "missing") is None


def test_resolve_mode_and_key_numbers(monkeypatch, tmp_path):
    monkeypatch.setenv("ZKGPU_MODE", "replay")
    assert live.resolve_mode() == "replay"
    monkeypatch.setenv("ZKGPU_MODE", "auto")
    assert live.resolve_mode() in ("live", "replay")
    with pytest.raises(ValueError, match="ZKGPU_MODE"):
        live.resolve_mode("sometimes")
    assert keynumbers.save_key_numbers("x", {"a": 1}) is None  # no folder configured: nothing written
    monkeypatch.setenv("ZKGPU_NB_OUT", str(tmp_path))
    live.configure_from_env()  # as live.open_source does in a notebook
    import numpy as np

    p = keynumbers.save_key_numbers("x", {"a": np.float64(1.5), "b": [np.int64(2)]})
    assert json.loads(p.read_text()) == {"finding": "", "numbers": {"a": 1.5, "b": [2]}}
    p = keynumbers.save_key_numbers("y", {"u": keynumbers.number(np.float64(0.5), "%", "compute utilization", "baseline")}, finding="f.")
    got = json.loads(p.read_text())
    got["numbers"]["u"].pop("recording", None)  # which recording the number came from, when one is named
    assert got == {"finding": "f.", "numbers": {"u": {"value": 0.5, "unit": "%", "label": "compute utilization", "scenario": "baseline"}}}
    with pytest.raises(ValueError, match="unit"):
        keynumbers.number(1.0, "s")
    with pytest.raises(ValueError, match="fraction"):
        keynumbers.number(43.5, "%", "compute utilization")
    keynumbers.configure(out_dir=None)
    q = keynumbers.save_key_numbers("z", {"a": 1}, out_dir=tmp_path / "kw")
    assert q == tmp_path / "kw" / "z.json" and q.is_file()
    with pytest.raises(ValueError, match="out_dir"):
        keynumbers.configure(out_dir="")
    with pytest.raises(ValueError, match="out_dir"):
        keynumbers.configure(out_dir=q)  # a file, not a folder
    monkeypatch.setenv("ZKGPU_DATA", str(tmp_path / "elsewhere"))
    live.configure_from_env()
    assert replay.data_dir() == tmp_path / "elsewhere"
    monkeypatch.setenv("ZKGPU_NB_OUT", str(q))  # the zkgpu command names the variable in one line
    res = CliRunner().invoke(cli_main, ["info"], standalone_mode=True)
    assert res.exit_code == 2 and "ZKGPU_NB_OUT" in res.output and "Traceback" not in res.output
    with pytest.raises(ValueError, match="data_dir"):
        replay.configure(data_dir="")


def test_live_mode_without_gpu_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("ZKGPU_DISABLE_GPU", "1")
    from zkgpu.core import cuda as _cuda

    if _cuda.gpu_available():
        pytest.skip("a GPU is present")
    with pytest.raises(RuntimeError, match="needs a CUDA GPU"):
        live.open_source("live")


def test_demo_nsys_sqlite_round_trip(recorded, tmp_path):
    from zkgpu.analysis import logs

    _, run_dir = recorded
    ev = replay.Recording.open(run_dir).events("baseline")
    db = logs.demo_nsys_sqlite(ev, tmp_path / "demo.sqlite")
    with pytest.raises(FileExistsError):
        logs.demo_nsys_sqlite(ev, db)
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT COUNT(*) FROM NVTX_EVENTS WHERE eventType = 59").fetchone()[0] == len(ev)
    ns = logs.read_nsys_sqlite(db, run="demo")
    nvtx = ns[ns["detail"].str.contains("domain=zkgpu", na=False)]
    assert len(nvtx) == len(ev)
    assert sorted(nvtx["phase"]) == sorted(ev["phase"])
    assert sorted(nvtx["partition"].dropna()) == sorted(ev["partition"].dropna())
    assert sorted(nvtx["worker"].dropna()) == sorted(ev["worker"].dropna())
    copies = ns[ns["phase"] == "memcpy_htod"]
    assert len(copies) == (ev["phase"] == "h2d").sum()
    assert int(copies["bytes"].sum()) == int(ev.loc[ev["phase"] == "h2d", "bytes"].sum())
    assert copies["detail"].str.contains("src=pageable").all()


def test_interrupted_recording_keeps_what_finished(tmp_path, monkeypatch):
    real = record.run_scenario
    calls = []

    def flaky(name, *a, **kw):
        calls.append(name)
        if len(calls) == 2:
            raise KeyboardInterrupt("signal 15")
        return real(name, *a, **kw)

    monkeypatch.setattr(record, "run_scenario", flaky)
    with pytest.raises(KeyboardInterrupt, match="partial results"):
        record.record(out=tmp_path, device="cpu", n=32, partitions=1, scenarios=["baseline", "pinned_pool", "pinned_gw1"])
    (run_dir,) = tmp_path.iterdir()
    rec = replay.Recording.open(run_dir)
    assert "signal 15" in rec.manifest["interrupted"]
    assert rec.scenario("baseline").get("events") and "interrupted" in rec.scenario("pinned_gw1")["skipped"]
    assert list(rec.events("baseline").columns) == COLUMNS


def test_sweep_and_benchmarks_plumbing_without_gpu(tmp_path, monkeypatch):
    """The GPU-only steps, with the measuring functions replaced by stand-ins (no GPU here)."""
    from zkgpu.app.bench import msm as bench_msm
    from zkgpu.app.bench import ntt as bench_ntt
    from zkgpu.app.bench import transfer as bench_transfer

    seen = {}

    def fake_sweep(sizes, repeat=5, time_budget_s=None, **_):
        seen["sweep"] = (tuple(sizes), repeat, time_budget_s)
        df = pd.DataFrame({"path": ["pageable", "pinned_pool"], "size_bytes": [1 << 20] * 2, "fresh_buffer": [False] * 2, "gbps": [5.0, 50.0]})
        df.attrs["skipped_sizes"] = [1 << 30]
        return df

    def fake_costs(sizes, repeat=3):
        seen["costs"] = (tuple(sizes), repeat)
        return pd.DataFrame({"op": ["hostAlloc"], "size_bytes": [1 << 20], "repeat": [0], "ms": [0.5], "gbps": [2.0]})

    monkeypatch.setattr(bench_transfer, "bandwidth_sweep", fake_sweep)
    monkeypatch.setattr(bench_transfer, "host_alloc_costs", fake_costs)
    monkeypatch.setattr(bench_ntt, "run_benchmark", lambda min_log, max_log, repeat: [{"log_n": min_log, "variant": "forward-nn", "median_ms": 1.0}])
    monkeypatch.setattr(bench_msm, "run_benchmark", lambda min_log, max_log, repeat: [{"log2_n": lg, "mode": "device", "scalars": "uniform", "median_ms": 2.0} for lg in range(min_log, max_log + 1)])
    notes: list[str] = []
    assert record._sweep(tmp_path, True, notes) == "sweep.parquet"
    assert seen["sweep"][0] == tuple(1 << s for s in range(20, 29, 2)) and seen["costs"] == ((1 << 20,), 2)
    assert any("not measured" in n for n in notes)
    assert (tmp_path / "sweep.csv").is_file() and (tmp_path / "host_alloc.csv").is_file()
    bench = record._benchmarks(tmp_path, True, notes)
    assert bench["ntt"] == "bench/ntt.csv" and pd.read_csv(tmp_path / "bench/ntt.csv")["median_ms"].tolist() == [1.0]
    msm_rows = pd.read_csv(tmp_path / bench["msm"])  # the MSM benchmark is recorded, not skipped with a note
    assert bench["msm"] == "bench/msm.csv" and msm_rows["log2_n"].tolist() == [12, 13, 14, 15, 16]
    assert not any("skipped" in n or "failed" in n for n in notes)
    m = {"sweep": "sweep.parquet", "benchmarks": bench, "scenarios": {}}
    rec = replay.Recording(tmp_path, m)
    assert rec.sweep()["gbps"].tolist() == [5.0, 50.0] and rec.host_alloc()["op"].tolist() == ["hostAlloc"]
    assert "ntt" in rec.benchmarks()


def test_replay_labels_host_load_and_finds_the_load_benchmark(recorded, tmp_path, monkeypatch):
    _, run_dir = recorded
    d = tmp_path / "nvidia-h200-20260103-record"
    shutil.copytree(run_dir, d)
    m = json.loads((d / "manifest.json").read_text())
    m.update(device="gpu", environment=dict(m["environment"], gpu="NVIDIA H200"), host_load={"threads": 8, "buffer_bytes": 1 << 28})
    (d / "manifest.json").write_text(json.dumps(m))
    rec = replay.Recording.open(d)
    assert rec.host_load_threads == 8 and "host memory load: 8 threads" in rec.label
    assert replay.Recording.open(run_dir).host_load_threads == 0 and "host memory load" not in replay.Recording.open(run_dir).label
    monkeypatch.setenv("ZKGPU_DATA", str(tmp_path))
    src = live.open_source("replay")
    assert src.kind == "recorded-gpu" and src.h2d_under_load() is None  # no bench-load folder yet
    b = tmp_path / "nvidia-h200-20260103-bench-load"
    b.mkdir()
    (b / "load.csv").write_text("load_threads,path,size_bytes,rep,host_ms,stream_ms,gbps,load_gbps\n0,pageable,1,0,1,1,6.0,0\n")
    assert src.h2d_under_load() is None  # no manifest.json yet: not a finished benchmark
    (b / "manifest.json").write_text("{}")
    assert src.h2d_under_load()["gbps"].tolist() == [6.0]


def test_live_source_passes_the_host_load(monkeypatch, tmp_path, recorded):
    from zkgpu.app import record as rec_mod
    from zkgpu.core import cuda as _cuda

    _, run_dir = recorded
    seen = []
    monkeypatch.setattr(_cuda, "gpu_available", lambda: True)
    monkeypatch.setattr(rec_mod, "record", lambda **kw: seen.append(kw["host_load"]) or run_dir)
    monkeypatch.delenv("ZKGPU_HOST_LOAD", raising=False)
    live.open_source("live")
    live.open_source("live", host_load=0)
    monkeypatch.setenv("ZKGPU_HOST_LOAD", "3")
    live.open_source("live")
    assert seen == [live.LIVE_HOST_LOAD, 0, 3]
    monkeypatch.setenv("ZKGPU_HOST_LOAD", "-1")
    with pytest.raises(ValueError, match="ZKGPU_HOST_LOAD must be an integer >= 0, got '-1'"):
        live.open_source("live")


def test_benchmark_pivot_keeps_modes_and_scalars_apart():
    import pandas as pd

    df = pd.DataFrame({
        "log2_n": [24, 24, 24, 24],
        "mode": ["device", "device", "pinned_h2d", "phase:sort"],
        "scalars": ["uniform", "porep", "uniform", "uniform"],
        "variant": ["k"] * 4,
        "median_ms": [207.9, 99.4, 210.0, 5.0],
    })
    piv = replay.benchmark_pivot(df)
    assert piv.loc[24, ("device", "uniform")] == 207.9 and piv.loc[24, ("device", "porep")] == 99.4
    assert replay.benchmark_pivot(df.drop(columns=["log2_n"])) is None
    one = replay.benchmark_pivot(df.iloc[:1])
    assert one.loc[24, "median_ms"] == 207.9


def test_find_benchmarks_where_passes_over_kernel_experiments(tmp_path):
    """An NTT kernel experiment (other kernels only, no compute_h) is newer than the full run:
    find_benchmarks(..., where=is_default_ntt_run) returns the full run, the plain call the newest."""
    full = tmp_path / "gpu-20990101-bench-ntt"
    exp = tmp_path / "gpu-20990101-bench-ntt-1"
    for d, rows in ((full, [("stagewise", "forward-nn"), ("stagewise", "compute_h")]), (exp, [("fused-r2-auto", "forward-nn")])):
        d.mkdir()
        pd.DataFrame([{"log_n": 22, "kernel": k, "variant": v, "median_ms": 1.0} for k, v in rows]).to_csv(d / "ntt.csv", index=False)
        (d / "manifest.json").write_text("{}")
    # a newer run killed before its manifest (ntt.csv grows size by size) is not a finished benchmark
    killed = tmp_path / "gpu-20990101-bench-ntt-2"
    shutil.copytree(exp, killed)
    (killed / "manifest.json").unlink()
    assert replay.find_benchmarks("ntt", tmp_path)[0] == exp
    assert replay.find_benchmarks("ntt", tmp_path, where=replay.is_default_ntt_run)[0] == full
    assert replay.find_benchmarks("ntt", tmp_path, where=lambda t: False) is None
