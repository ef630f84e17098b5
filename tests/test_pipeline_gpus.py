"""The pipeline on N GPUs (issue 26), on the CPU backend's emulated devices: one worker set, mutex and
stream per GPU, synthesis shared; events and TIMELINE lines carry the GPU; a shared pinned pool or one per
GPU; one device failing mid-run without a hang; per-GPU metrics. The GPU test runs N = 1 on the H200."""

from __future__ import annotations

import itertools
import types

import numpy as np
import pandas as pd
import pytest
from test_pipeline import cfg, no_pipeline_threads_left, reference, run_bounded

from zkgpu.analysis import metrics
from zkgpu.analysis.logs import parse_lines, to_events
from zkgpu.pipeline import DeviceLost, PipelineConfig, prepare_backend, run_pipeline
from zkgpu.pipeline.sync import STICKY_CUDA_ERRORS, is_device_failure
from zkgpu.transfer.host_alloc import PageableAllocator
from zkgpu.transfer.pinned_pool import PinnedPool


@pytest.fixture(scope="module")
def prepared():
    return prepare_backend(cfg())


def _held(ev: pd.DataFrame, gpu: int) -> list[tuple[int, int, int]]:
    sel = ev[(ev.phase == "mutex_held") & (ev.gpu == gpu)]
    return sorted(zip(sel.start_ns, sel.end_ns, sel.worker, strict=True))


def _check_per_gpu_mutex(ev: pd.DataFrame, gpus: int, gw: int) -> None:
    """mutex_held intervals never overlap within a GPU, and only the GPU's own workers hold its mutex."""
    for g in range(gpus):
        held = _held(ev, g)
        for (_, e0, _), (s1, _, _) in itertools.pairwise(held):
            assert e0 <= s1, f"mutex_held intervals of gpu {g} overlap"
        assert {w for *_, w in held} <= set(range(g * gw, (g + 1) * gw)), (g, {w for *_, w in held})


def _overlap_across_gpus(ev: pd.DataFrame) -> bool:
    """Whether some mutex_held interval of one GPU overlaps one of another GPU (the GPUs ran at once)."""
    rows = ev[ev.phase == "mutex_held"]
    for (s0, e0, g0), (s1, e1, g1) in itertools.combinations(zip(rows.start_ns, rows.end_ns, rows.gpu, strict=True), 2):
        if g0 != g1 and s0 < e1 and s1 < e0:
            return True
    return False


# ----------------------------------------------------------------------------------------------
# configuration
# ----------------------------------------------------------------------------------------------
def test_gpus_and_pool_scope_in_config_and_run_name():
    c = PipelineConfig(device="cpu", gpus=2, transfer="pinned_pool")
    assert c.pool_scope == "shared" and c.effective_queue_depth == 2 * c.gw * 2
    assert "-gpus2" in c.run_name and "pool_per_gpu" not in c.run_name
    assert c.with_(pool_scope="per_gpu").run_name.endswith("-gpus2-pool_per_gpu")
    assert "-gpus" not in PipelineConfig(device="cpu").run_name  # one GPU: the names of earlier recordings
    with pytest.raises(ValueError, match="PipelineConfig.pool_scope must be one of .*'numa'"):
        PipelineConfig(device="cpu", pool_scope="numa")
    with pytest.raises(ValueError, match="PipelineConfig.gpus must be in"):
        PipelineConfig(device="cpu", gpus=0)
    PipelineConfig(device="gpu", gpus=2)  # the devices present are checked when the run starts


def test_pool_argument_must_match_the_pool_scope(prepared):
    pool = PinnedPool(PageableAllocator())
    with pytest.raises(ValueError, match="a list of one pool per GPU"):
        run_pipeline(cfg(gpus=2, transfer="pinned_pool", pool_scope="per_gpu"), prepared=prepared, pool=pool)
    with pytest.raises(ValueError, match="takes 2 pools"):
        run_pipeline(cfg(gpus=2, transfer="pinned_pool", pool_scope="per_gpu"), prepared=prepared, pool=[pool])
    with pytest.raises(ValueError, match="one PinnedPool"):
        run_pipeline(cfg(gpus=2, transfer="pinned_pool"), prepared=prepared, pool=[pool, pool])
    assert pool.stats().checkouts == 0
    pool.close()


def test_cpu_backend_emulates_devices_sharing_the_bases(prepared):
    _, be = prepared
    other = be.for_device(3)
    assert other.device_id == 3 and be.device_id == 0 and be.for_device(0) is be
    assert other.bases is be.bases  # the same (read-only) bases: one set-up for N emulated devices


# ----------------------------------------------------------------------------------------------
# scheduling, mutexes, events, results
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("gpus", [1, 2, 4])
def test_n_emulated_gpus_prove_every_partition_with_per_gpu_mutexes(prepared, gpus):
    c = cfg(partitions=2 * gpus + 1, gpus=gpus, gw=2, transfer="pinned_pool")
    res, err = run_bounded(c, limit=120, prepared=prepared)
    assert err is None and res.ok, res.errors if res else err
    ev = res.events
    _check_per_gpu_mutex(ev, gpus, 2)
    gpu_rows = ev[ev.phase.isin(["mutex_wait", "mutex_held", "ntt_msm_h", "batch_add", "tail_msm", "prove"])]
    assert set(gpu_rows.gpu.astype(int)) <= set(range(gpus))
    # every row of a worker is on that worker's GPU (worker id = gpu * gw + i)
    w = gpu_rows.dropna(subset=["worker"])
    assert (w.worker.astype(int) // 2 == w.gpu.astype(int)).all()
    # each partition's results are on the GPU (and worker) that proved it
    for r in res.partitions:
        assert r.gpu == r.worker // 2 and set(ev[(ev.partition == r.partition) & (ev.phase == "mutex_held")].gpu) == {r.gpu}
    # synthesis is shared: its rows carry no GPU
    assert ev.loc[ev.phase == "synthesize", "gpu"].isna().all()
    assert res.pool_stats["buffers_in_use"] == 0 and res.pool_stats["checkouts"] == res.pool_stats["checkins"]
    assert no_pipeline_threads_left()


def test_two_gpus_results_match_the_reference(prepared):
    circuit, backend = prepared
    c = cfg(partitions=4, gpus=2, gw=1)
    res = run_pipeline(c, prepared=prepared)
    assert res.ok and {r.gpu for r in res.partitions} <= {0, 1}
    for r in res.partitions:
        ref = reference(c, circuit, backend, r.partition)
        for nm in ("h", "l", "a", "b_g1"):
            assert np.array_equal(getattr(r, nm), ref[nm]), (r.partition, nm)


def test_the_gpus_run_at_once_while_each_mutex_is_exclusive(prepared):
    """With slow GPU phases (a sleep inside ntt_msm_h) two GPUs hold their mutexes at the same time:
    the per-GPU mutexes are independent; within a GPU they never overlap."""
    import time

    def slow(step, p, w):
        if step == "ntt_msm_h":
            time.sleep(0.15)

    c = cfg(partitions=4, gpus=2, gw=1, fault_hook=slow)
    res, err = run_bounded(c, limit=60, prepared=prepared)
    assert err is None and res.ok
    _check_per_gpu_mutex(res.events, 2, 1)
    assert _overlap_across_gpus(res.events)
    assert {r.gpu for r in res.partitions} == {0, 1}


def test_timeline_lines_carry_the_gpu_and_parse_back(prepared):
    res = run_pipeline(cfg(partitions=4, gpus=2, gw=1), prepared=prepared)
    tl = [ln for ln in res.log_lines if ln.startswith("TIMELINE,")]
    for kind in ("GPU_PICKUP", "GPU_START", "GPU_END"):
        lines = [ln for ln in tl if f",{kind}," in ln]
        assert len(lines) == 4 and all(",gpu=" in ln for ln in lines), lines
    for r in res.partitions:  # the line's gpu is the GPU whose worker proved it
        assert any(f",GPU_START,{res.run},worker={r.worker},partition={r.partition},gpu={r.gpu}" in ln for ln in tl)
    assert not any(",gpu=" in ln for ln in tl if ",SYNTH_" in ln or ",GPU_QUEUE," in ln)
    parsed = parse_lines(res.log_lines)
    assert parsed.summary()["malformed"] == 0
    assert len(to_events(parsed, run=res.run)) > 0
    # one GPU: the TIMELINE lines stay upstream's (no gpu field)
    one = run_pipeline(cfg(partitions=1), prepared=prepared)
    assert not any(",gpu=" in ln for ln in one.log_lines if ln.startswith("TIMELINE,"))


def test_metrics_per_gpu_utilization(prepared):
    res = run_pipeline(cfg(partitions=5, gpus=2, gw=1), prepared=prepared)
    ev = res.events
    per = metrics.utilization_per_gpu(ev)
    run = metrics.utilization(ev)
    assert list(per.index.get_level_values("gpu")) == [0, 1]
    assert (per["wall_ms"] == float(run["wall_ms"].iloc[0])).all()  # one window: the run's wall span
    for c in ("compute_util", "kernel_util", "timeline_util"):
        assert ((per[c] > 0) & (per[c] <= 1.0)).all(), per[c]
        # the run's utilization (busy over n_gpus x wall) is the mean of the GPUs'
        assert per[c].mean() == pytest.approx(float(run[c].iloc[0]), rel=1e-6)
    assert per["partitions"].sum() == 5 and per["partitions_per_min"].sum() == pytest.approx(float(run["partitions_per_min"].iloc[0]))
    assert metrics.utilization_per_gpu(ev.iloc[0:0]).empty


# ----------------------------------------------------------------------------------------------
# pools
# ----------------------------------------------------------------------------------------------
def test_per_gpu_pools_route_each_partition_to_its_pool(prepared):
    pools = [PinnedPool(PageableAllocator()) for _ in range(2)]
    c = cfg(partitions=6, gpus=2, gw=1, transfer="pinned_pool", pool_scope="per_gpu")
    res, err = run_bounded(c, limit=60, prepared=prepared, pool=pools)
    assert err is None and res.ok, res.errors
    per = [pl.stats() for pl in pools]
    assert all(s.checkouts > 0 and s.buffers_in_use == 0 and s.checkouts == s.checkins for s in per)
    assert res.pool_stats["checkouts"] == sum(s.checkouts for s in per) == 6 * 3
    assert [d["checkouts"] for d in res.pool_stats["per_gpu"]] == [s.checkouts for s in per]
    # the synthesize row names the GPU the partition was routed to, and that GPU proved it
    syn = res.events[res.events.phase == "synthesize"]
    for r in res.partitions:
        detail = syn[syn.partition == r.partition]["detail"].iloc[0]
        assert f"gpu={r.gpu}" in detail, (r.partition, r.gpu, detail)
    for pl in pools:
        pl.close()


def test_own_per_gpu_pools_are_made_and_closed(prepared):
    res = run_pipeline(cfg(partitions=4, gpus=2, gw=1, transfer="pinned_pool", pool_scope="per_gpu"), prepared=prepared)
    assert res.ok and len(res.pool_stats["per_gpu"]) == 2 and res.pool_stats["buffers_in_use"] == 0


# ----------------------------------------------------------------------------------------------
# one device failing mid-run
# ----------------------------------------------------------------------------------------------
GPU_STEPS = frozenset({"h2d", "ntt_msm_h", "barrier_wait", "batch_add", "tail_msm", "gpu_wait"})


def _lose_gpu(gpu: int, gw: int, after: int, step: str = "ntt_msm_h"):
    """A fault hook: from its ``after``-th ``step`` on the GPU's workers, GPU ``gpu`` is lost (every
    later GPU step of its workers raises DeviceLost; the host-side finalize of a partition already
    through the GPU does not)."""
    state = {"n": 0, "lost": False}

    def hook(s, p, w):
        if w is None or w // gw != gpu or s not in GPU_STEPS:
            return
        if s == step:
            state["n"] += 1
            if state["n"] > after:
                state["lost"] = True
        if state["lost"]:
            raise DeviceLost(f"emulated gpu {gpu} lost at {s} of partition {p}")

    return hook


@pytest.mark.parametrize("gpus, pool_scope", [(2, "shared"), (2, "per_gpu"), (4, "shared"), (4, "per_gpu")])
def test_one_device_failing_mid_run_leaves_the_others_proving(prepared, gpus, pool_scope):
    gw = 2
    c = cfg(partitions=4 * gpus, gpus=gpus, gw=gw, transfer="pinned_pool", pool_scope=pool_scope, fault_hook=_lose_gpu(1, gw, after=1))
    res, err = run_bounded(c, limit=120, prepared=prepared)
    assert err is None, err
    failed = [r for r in res.partitions if r.status != "ok"]
    # the lost GPU's partitions in flight fail naming the device; no other partition is lost
    assert failed and all(r.gpu == 1 and "DeviceLost" in r.error for r in failed), [(r.partition, r.gpu, r.error) for r in failed]
    assert len(failed) <= gw  # at most what its workers held when it failed
    ok = [r for r in res.partitions if r.status == "ok"]
    assert len(ok) == len(res.partitions) - len(failed) and any(r.gpu == 1 for r in ok)  # it proved one first
    assert any("zkgpu: gpu 1 lost (DeviceLost" in ln for ln in res.log_lines)
    after = [r for r in ok if r.gpu == 1]
    assert len(after) == 1
    _check_per_gpu_mutex(res.events, gpus, gw)
    assert res.pool_stats["buffers_in_use"] == 0 and res.pool_stats["checkouts"] == res.pool_stats["checkins"]
    assert no_pipeline_threads_left()


def test_every_device_lost_cancels_the_queue_without_a_hang(prepared):
    gw = 1
    hooks = [_lose_gpu(g, gw, after=0) for g in range(2)]

    def hook(s, p, w):
        for h in hooks:
            h(s, p, w)

    c = cfg(partitions=8, gpus=2, gw=gw, transfer="pinned_pool", queue_depth=2, fault_hook=hook)
    res, err = run_bounded(c, limit=60, prepared=prepared)
    assert err is None and not res.ok
    st = [r.status for r in res.partitions]
    assert "ok" not in st and st.count("failed") == 2, res.errors
    assert all("every GPU failed" in r.error for r in res.partitions if r.status == "cancelled"), res.errors
    assert res.pool_stats["buffers_in_use"] == 0
    assert no_pipeline_threads_left()


def test_one_gpu_lost_and_the_other_hung_cancels_the_queue(prepared):
    """GPU 0 lost, GPU 1's worker hung in ntt_msm_h: nothing can take the queued partitions, so the
    watchdog stops the run with that reason instead of waiting for the overall deadline."""
    import threading

    release = threading.Event()

    def hook(s, p, w):
        if s == "ntt_msm_h" and w == 0:
            raise DeviceLost("emulated gpu 0 lost")
        if s == "ntt_msm_h" and w == 1:
            release.wait(30)

    c = cfg(partitions=8, gpus=2, gw=1, transfer="pinned_pool", queue_depth=3, timeout_s=0.5, fault_hook=hook)
    try:
        res, err = run_bounded(c, limit=30, prepared=prepared)
    finally:
        release.set()
    assert err is None and not res.ok
    st = [r.status for r in res.partitions]
    assert "ok" not in st and st.count("failed") == 2, res.errors
    assert any("StageTimeout" in r.error for r in res.partitions if r.status == "failed")
    assert any("DeviceLost" in r.error for r in res.partitions if r.status == "failed")
    assert all("every GPU worker hung or lost its GPU" in r.error for r in res.partitions if r.status == "cancelled"), res.errors


def test_a_partition_failure_is_not_a_device_failure(prepared):
    """An ordinary error (a bad value, a non-sticky CUDA error) fails its partition; the GPU goes on."""
    def hook(s, p, w):
        if s == "ntt_msm_h" and p == 1:
            raise RuntimeError("injected fault")

    res = run_pipeline(cfg(partitions=4, gpus=2, gw=1, fault_hook=hook), prepared=prepared)
    assert [r.status for r in res.partitions] == ["ok", "failed", "ok", "ok"]
    assert not any("lost" in ln for ln in res.log_lines if ln.startswith("zkgpu: gpu"))


def test_is_device_failure_only_for_sticky_cuda_errors():
    def err(name, status):
        e = types.new_class(name, (RuntimeError,))("x")
        e.status = status
        return e

    assert is_device_failure(DeviceLost("gone"))
    assert is_device_failure(err("CUDARuntimeError", 700)) and is_device_failure(err("CUDADriverError", 719))
    assert not is_device_failure(err("CUDADriverError", 1))  # invalid value (a launch configuration)
    assert not is_device_failure(err("CUDARuntimeError", 2))  # out of memory
    assert not is_device_failure(err("OutOfMemoryError", 700)) and not is_device_failure(ValueError("a >= r"))
    wrapped = RuntimeError("wrapped")
    wrapped.__cause__ = err("CUDARuntimeError", 700)
    assert is_device_failure(wrapped) and 700 in STICKY_CUDA_ERRORS


# ----------------------------------------------------------------------------------------------
# GPU (H200): N = 1 through the per-device backend
# ----------------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_gpu_one_device_per_device_backend():
    """gpus=1 on the GPU: the backend drives device 0 (``device_id``), binds the worker threads to it, and
    the run proves; gpus above the devices present is refused before anything runs."""
    from zkgpu.pipeline.runner import gpu_count

    c = PipelineConfig(n=1 << 12, partitions=3, device="gpu", transfer="pinned_pool", timeout_s=60.0)
    prepared = prepare_backend(c)
    assert prepared[1].device_id == 0 and prepared[1].for_device(0) is prepared[1]
    res = run_pipeline(c, prepared=prepared)
    assert res.ok and {r.gpu for r in res.partitions} == {0}
    too_many = gpu_count() + 1
    with pytest.raises(ValueError, match=f"gpus={too_many}: this host has {too_many - 1} CUDA device"):
        run_pipeline(c.with_(gpus=too_many), prepared=prepared)


def test_device_tables_are_cached_per_device(monkeypatch):
    """zkgpu.core.cuda.device_cache (the NTT's twiddle and coset tables): one entry per (current device,
    arguments), so the second GPU of a run never reads a table that lives on the first."""
    from zkgpu.core import cuda as _cuda

    current = {"dev": 0}
    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=types.SimpleNamespace(getDevice=lambda: current["dev"])))
    monkeypatch.setattr(_cuda, "cupy", lambda: fake)
    built = []

    @_cuda.device_cache
    def table(n, scale=1):
        """a table"""
        built.append((current["dev"], n, scale))
        return object()

    a0 = table(4)
    assert table(4) is a0 and built == [(0, 4, 1)] and table.__doc__ == "a table"
    current["dev"] = 1
    a1 = table(4)
    assert a1 is not a0 and built[-1] == (1, 4, 1) and table(4, scale=2) is not a1
    current["dev"] = 0
    assert table(4) is a0
    table.cache_clear()
    assert table(4) is not a0
    # a stand-in for CuPy without devices (the kernel emulation): device 0
    monkeypatch.setattr(_cuda, "cupy", lambda: types.SimpleNamespace())
    assert _cuda.current_device() == 0


# ----------------------------------------------------------------------------------------------
# zkgpu pipeline --gpus N
# ----------------------------------------------------------------------------------------------
def test_pipeline_command_runs_emulated_gpus(tmp_path):
    from click.testing import CliRunner

    from zkgpu.app import pipeline_cmd

    res = CliRunner().invoke(pipeline_cmd.main, ["--device", "cpu", "--log-n", "5", "--partitions", "3", "--gpus", "2", "--transfer", "pinned_pool",
                                                 "--pool-scope", "per_gpu", "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    assert "pinned_pool-coarse-gw2-n5-cpu-gpus2-pool_per_gpu" in res.output and "on 2 emulated GPUs" in res.output
    (log,) = (tmp_path / "o").glob("*/cuzk.log")
    assert ",gpu=1" in log.read_text() or ",gpu=0" in log.read_text()


def test_pipeline_command_refuses_more_gpus_than_present(monkeypatch):
    from click.testing import CliRunner

    from zkgpu.app import pipeline_cmd

    monkeypatch.setattr(pipeline_cmd, "gpu_available", lambda: True)
    monkeypatch.setattr(pipeline_cmd, "gpu_count", lambda: 1)
    res = CliRunner().invoke(pipeline_cmd.main, ["--device", "gpu", "--gpus", "2"])
    assert res.exit_code == 2 and "--gpus 2: this host has 1 CUDA device(s)" in res.output and "Traceback" not in res.output


# ----------------------------------------------------------------------------------------------
# zkgpu record --gpus N (the option, its check, the manifest's gpus)
# ----------------------------------------------------------------------------------------------
def test_record_on_emulated_gpus_records_gpus_in_the_manifest(tmp_path):
    import json

    from zkgpu.app import record

    run_dir = record.record(out=tmp_path, device="cpu", n=32, partitions=3, scenarios=["baseline", "pinned_pool"], gpus=2)
    m = json.loads((run_dir / "manifest.json").read_text())
    assert m["gpus"] == 2
    for name in ("baseline", "pinned_pool"):
        e = m["scenarios"][name]
        assert "error" not in e and e["config"]["gpus"] == 2, e
        ev = pd.read_parquet(run_dir / e["events"])
        assert set(ev.loc[ev.phase == "mutex_held", "gpu"].astype(int)) <= {0, 1}


@pytest.mark.parametrize("gpus, match", [(0, "gpus=0: give a whole number of GPUs from 1 to 16"), (17, "gpus=17"), (True, "gpus=True")])
def test_record_refuses_bad_gpus_before_a_folder(tmp_path, gpus, match):
    from zkgpu.app import record

    with pytest.raises(ValueError, match=match):
        record.record(out=tmp_path / "d", device="cpu", n=32, partitions=1, scenarios=["baseline"], gpus=gpus)
    assert not (tmp_path / "d").exists()


def test_record_refuses_more_gpus_than_present(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from zkgpu.app import record

    monkeypatch.setattr(record, "gpu_available", lambda: True)
    monkeypatch.setattr(record, "gpu_count", lambda: 1)
    with pytest.raises(ValueError, match="gpus=2: this host has 1 CUDA device"):
        record.record(out=tmp_path / "d", device="gpu", gpus=2)
    res = CliRunner().invoke(record.record_command, ["--device", "gpu", "--gpus", "2", "--out", str(tmp_path / "d")])
    assert res.exit_code == 2 and "gpus=2: this host has 1 CUDA device(s)" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "d").exists()
