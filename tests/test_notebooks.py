"""The notebook suite: committed without outputs, and every notebook runs in replay mode.

Each notebook is executed with nbclient (kernel python3) with ``ZKGPU_MODE=replay``; it reads the
newest recording in data/ or, without one, makes a tiny CPU stand-in run (cached for the session in
a temporary ``ZKGPU_CACHE``). Notebooks write their key numbers as JSON into ``ZKGPU_NB_OUT``; the
tests below check them against the data (and against zkgpu functions on the same data).
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = Path(__file__).resolve().parent.parent
NB_DIR = ROOT / "notebooks"
EXPECTED = [
    "00_index", "01_symptom", "02_host_instrumentation", "03_mutex_barrier", "04_smoking_gun",
    "05_h2d_bandwidth", "06_pinned_pool_fix", "07_next_bottleneck", "07b_last_bottleneck", "08_report", "appendix_nsight",
]
TIMINGS: dict[str, float] = {}


def test_suite_is_complete():
    assert sorted(p.stem for p in NB_DIR.glob("*.ipynb")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", EXPECTED)
def test_committed_clean(name):
    path = NB_DIR / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    # canonical form (nbformat 4.5 with cell ids, as nbformat.write emits it): reviewable diffs
    assert (nb.nbformat, nb.nbformat_minor) == (4, 5) and all("id" in c for c in nb.cells)
    assert path.read_text(encoding="utf-8") == nbformat.writes(nb) + "\n", f"{name}: not in canonical nbformat form"
    assert nb.metadata["kernelspec"]["name"] == "python3"
    code = [c for c in nb.cells if c.cell_type == "code"]
    for c in code:
        assert c.outputs == [] and c.execution_count is None, f"{name}: commit notebooks without outputs"
    params = [c for c in code if "parameters" in c.metadata.get("tags", [])]
    assert len(params) == 1 and "MODE" in params[0].source, f"{name}: needs one cell tagged 'parameters'"
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")
    src = "\n".join(c.source for c in code)
    assert "zkgpu" in src  # notebooks call the package, they do not carry their own logic
    assert "def " not in src.replace("def col(", ""), f"{name}: shared logic belongs in zkgpu modules"


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """Run every notebook once in replay mode; returns {name: (notebook, key numbers or None)}."""
    out = tmp_path_factory.mktemp("nb_out")
    cache = tmp_path_factory.mktemp("zk_cache")
    saved = {k: os.environ.get(k) for k in ("ZKGPU_MODE", "ZKGPU_NB_OUT", "ZKGPU_CACHE", "MPLBACKEND")}
    os.environ.update(ZKGPU_MODE="replay", ZKGPU_NB_OUT=str(out), ZKGPU_CACHE=str(cache), MPLBACKEND="Agg")
    results = {}
    try:
        for name in EXPECTED:
            nb = nbformat.read(NB_DIR / f"{name}.ipynb", as_version=4)
            t0 = time.perf_counter()
            err = None
            try:
                nbclient.NotebookClient(nb, timeout=180, kernel_name="python3",
                                        resources={"metadata": {"path": str(NB_DIR)}}).execute()
            except Exception as exc:  # noqa: BLE001 -- reported per notebook below
                err = exc
            TIMINGS[name] = time.perf_counter() - t0
            f = out / f"{name}.json"
            results[name] = (nb, json.loads(f.read_text()) if f.exists() else None, err)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    print("\nnotebook seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in TIMINGS.items()))
    results["_cache"] = str(cache)
    from zkgpu import replay

    best = replay.latest_recording()
    results["_load_threads"] = best.host_load_threads if best is not None and best.is_gpu else 0
    return results


@pytest.mark.parametrize("name", EXPECTED)
def test_notebook_runs_in_replay(executed, name):
    nb, key, err = executed[name]
    assert err is None, f"{name} failed:\n{str(err)[-3000:]}"
    assert key is not None, f"{name} wrote no key numbers"
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors


def _banner(nb) -> str:
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "stream")


def test_sources_are_labelled(executed):
    for name in EXPECTED[1:]:
        nb, key, _ = executed[name]
        text = _banner(nb)
        if key and key.get("source") in ("cpu-standin", "recorded-cpu"):
            assert "NOT GPU numbers" in text, f"{name} must say its numbers are CPU numbers"
        elif key and key.get("source") == "recorded-gpu":
            assert "REPLAY of a GPU recording" in text


def test_key_numbers_04_recover_the_seed_identity(executed, monkeypatch):
    from zkgpu import logs, metrics, replay

    monkeypatch.setenv("ZKGPU_CACHE", executed["_cache"])  # the same data the notebooks read
    _, key, _ = executed["04_smoking_gun"]
    # seed: gpu_total - ntt_msm_h - tail_msm = barrier_wait + batch_add (3425 - 2825 - 196 = 404)
    assert key["seed_residual_ms"] == [404.0, 407.0, 403.0, None]
    assert key["seed_partitions"] == 4 and key["seed_ntt_minus_prep_min_ms"] == 1190.0
    # ours: every line is present, so the identity closes up to integer-ms rounding and thread overhead
    src = replay.open_source("replay")
    pt = logs.partition_table(logs.parse_file(src.log_path("baseline")))
    idc = metrics.identity_check(pt)
    assert (idc["missing"] == "").all()
    assert (idc["residual_ms"].abs() <= 5 + 0.05 * idc["gpu_total_ms"]).all()
    assert key["ours_max_abs_residual_ms"] == pytest.approx(float(idc["residual_ms"].abs().max()))
    for share in key["h2d_share"].values():
        assert 0.0 <= share <= 1.0


def test_key_numbers_other_notebooks(executed):
    k0 = executed["00_index"][1]
    assert k0["mode"] == "replay"
    k1 = executed["01_symptom"][1]
    for u in ("timeline_util", "kernel_util", "compute_util"):
        assert 0.0 <= k1[u] <= 1.0
    assert k1["partitions"] >= 1 and k1["prove_median_ms"] > 0
    k2 = executed["02_host_instrumentation"][1]
    assert k2["prove_start_ms"] > 0 and 0.0 <= k2["host_share"] < 1.0
    k3 = executed["03_mutex_barrier"][1]
    assert math.isfinite(k3["throughput_rel_err"]) and 0.0 <= k3["barrier_in_held"] <= 1.0
    k5 = executed["05_h2d_bandwidth"][1]
    if k5["source"] == "recorded-gpu" and "under_load_gbps" in k5:  # data/ holds a bench-load run
        ul = k5["under_load_gbps"]
        levels = sorted({int(k.split("@")[1]) for k in ul})
        assert ul[f"pageable@{levels[0]}"] > ul[f"pageable@{levels[-1]}"]  # load slows pageable copies
        assert all(ul[f"pinned_raw@{t}"] > ul[f"pageable@{t}"] for t in levels)
    k6 = executed["06_pinned_pool_fix"][1]
    assert k6["ntt_msm_h_speedup"] > 0 and k6["throughput_ratio"] > 0
    if k6["source"] == "recorded-gpu":  # on a GPU the pool must make the copy faster
        assert k6["h2d_speedup"] > 1.0
        if executed["_load_threads"]:  # the seed's regime (a loaded host): issue 4's acceptance
            assert k6["h2d_share"]["baseline"] > 0.5 and k6["h2d_share"]["pinned_pool"] <= 0.10
            assert k6["compute_util"]["baseline"] <= 0.60
            assert k6["compute_util"]["pinned_pool"] > k6["compute_util"]["baseline"]
    k7 = executed["07_next_bottleneck"][1]
    assert k7["compute_bound_per_min"] > 0 and all(math.isfinite(v) for v in k7["prediction_rel_err"].values())
    k8 = executed["08_report"][1]
    assert k8["upstream_ntt_ratio"] == pytest.approx(2430 / 690)
    assert {"baseline", "pinned_pool"} <= set(k8["scenarios"])
    ka = executed["appendix_nsight"][1]
    assert ka["nvtx_rows"] == ka["events"] and ka["memcpy_rows"] == ka["h2d_rows"] > 0


def test_key_numbers_07b_last_bottleneck(executed, monkeypatch):
    from zkgpu import bottleneck

    monkeypatch.setenv("ZKGPU_CACHE", executed["_cache"])  # the same data the notebook read
    k = executed["07b_last_bottleneck"][1]
    src = bottleneck.open_last_mile("replay")
    assert k["recording"] == src.recording.path.name
    shown_ev = src.events(k["shown"])
    assert k["gpu_ms_per_partition"] == pytest.approx(bottleneck.gpu_ms_per_partition(shown_ev))
    assert 0.0 < k["after_fix_compute_share"] <= 1.0 and 0.0 <= k["after_fix_top_idle_share"] <= 1.0
    preds = {key: v for key, v in k.items() if key.startswith("predicted_per_min_")}
    assert preds and all(v > 0 and math.isfinite(v) for v in preds.values())
    if k["source"] == "recorded-gpu" and not k["has_new_scenarios"]:
        # the committed recordings: after the fix the GPU mostly waits for prep_msm
        assert k["after_fix_top_idle_cause"] == "barrier_wait (prep_msm)"
    if k["has_new_scenarios"]:
        assert k["acceptance_best"] in bottleneck.prep_scenarios()
        assert k["acceptance_compute_util_ok"] == (k["acceptance_compute_util"] >= 0.9)


def test_total_time_is_reasonable(executed):
    # the whole suite in replay must stay CI-sized (2 cores): well under 5 minutes
    assert sum(TIMINGS.values()) < 300, TIMINGS


def test_report_renders_html_with_data_note_and_key_numbers(executed, tmp_path, monkeypatch):
    from zkgpu.report import run_report

    monkeypatch.setenv("ZKGPU_CACHE", executed["_cache"])
    assert run_report(out_dir=tmp_path, mode="replay", only=("04_smoking",), timeout=180)
    index = (tmp_path / "index.html").read_text()
    assert "04_smoking_gun.html" in index and "Data:" in index
    assert "Key numbers" in index and "seed_residual_ms" in index
    assert (tmp_path / "04_smoking_gun.html").stat().st_size > 10_000


def _fake_gpu_recording(base: Path, cpu_run: Path) -> Path:
    """A test-only copy of a CPU recording relabelled as a GPU one, with a synthetic sweep, pinning
    costs and kernel benchmarks, so the notebooks' GPU-only code paths run here. Never data."""
    import shutil

    import pandas as pd

    from zkgpu.transfer import SWEEP_COLUMNS

    d = base / "fake-gpu-20990101-record"
    shutil.copytree(cpu_run, d)
    m = json.loads((d / "manifest.json").read_text())
    m.update(device="gpu", environment=dict(m["environment"], gpu="FAKE-GPU (test fixture)"), sweep="sweep.parquet",
             benchmarks={"ntt": "bench/ntt.csv"})
    (d / "manifest.json").write_text(json.dumps(m))
    rows = []
    for path, rate in (("pageable", 5.0), ("cupy_asarray", 8.0), ("registered", 50.0), ("pinned_pool", 52.0), ("pinned_raw", 53.0)):
        for size in (1 << 20, 1 << 24, 1 << 28):
            for fresh in (False, True):
                ms = size / rate / 1e6
                row = {c: float("nan") for c in SWEEP_COLUMNS}
                row.update(path=path, size_bytes=size, fresh_buffer=fresh, repeat=0, host_ms=ms, stream_ms=ms, wall_ms=ms, gbps=rate,
                           overhead_ms=0.0, effective_gbps=rate, src_pinned=path != "pageable", alloc_ms=1.0 if fresh else float("nan"))
                rows.append(row)
    pd.DataFrame(rows).to_parquet(d / "sweep.parquet", index=False)
    pd.DataFrame({"op": ["hostAlloc", "hostRegister"], "size_bytes": [1 << 28] * 2, "repeat": [0, 0], "ms": [40.0, 30.0], "gbps": [6.7, 8.9]}).to_csv(d / "host_alloc.csv", index=False)
    (d / "bench").mkdir(exist_ok=True)
    pd.DataFrame({"log_n": [16, 16], "variant": ["forward-nn", "inverse-nn"], "median_ms": [0.1, 0.1]}).to_csv(d / "bench/ntt.csv", index=False)
    return d


def test_gpu_only_paths_on_a_synthetic_gpu_recording(tmp_path, monkeypatch):
    from zkgpu import record

    cpu_run = record.record(out=tmp_path / "cpu", device="cpu", n=1 << 6, partitions=2)
    data = tmp_path / "data"
    data.mkdir()
    _fake_gpu_recording(data, cpu_run)
    out = tmp_path / "out"
    monkeypatch.setenv("ZKGPU_DATA", str(data))
    monkeypatch.setenv("ZKGPU_MODE", "replay")
    monkeypatch.setenv("ZKGPU_NB_OUT", str(out))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    for name in ("05_h2d_bandwidth", "06_pinned_pool_fix", "08_report"):
        nb = nbformat.read(NB_DIR / f"{name}.ipynb", as_version=4)
        nbclient.NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(NB_DIR)}}).execute()
        assert "REPLAY of a GPU recording on FAKE-GPU" in _banner(nb)
    k5 = json.loads((out / "05_h2d_bandwidth.json").read_text())
    assert k5["sweep"] and k5["pool_efficiency_passed"] is True
    assert k5["gbps_at_max_size"]["pageable"] == pytest.approx(5.0)
    assert json.loads((out / "08_report.json").read_text())["source"] == "recorded-gpu"
