"""Fault injection into the pipeline, the pinned pool and the GPU mutex (issue 10). CPU faults run
here; the GPU faults (pinned allocation failure, GPU out of memory in a partition, a kernel error)
are ``@pytest.mark.gpu`` and run on the H200. Each case is a row of RELIABILITY.md."""

from __future__ import annotations

import threading
import time
import warnings

import numpy as np
import pytest
from test_pipeline import cfg, no_pipeline_threads_left, run_bounded

from zkgpu.core import cuda as _cuda
from zkgpu.pipeline import PipelineConfig, prepare_backend, run_pipeline
from zkgpu.pipeline.sync import Cancelled, GpuMutex, StageTimeout
from zkgpu.transfer.host_alloc import CudaHostAllocator, PageableAllocator
from zkgpu.transfer.pinned_pool import PinnedPool, PoolError


@pytest.fixture(scope="module")
def prepared():
    return prepare_backend(cfg())


@pytest.fixture
def release():
    """An event that hung hooks wait on; set at the end of the test so abandoned threads exit."""
    ev = threading.Event()
    yield ev
    ev.set()
    assert no_pipeline_threads_left()


def _hang_at(step, partition, release):
    def hook(s, p, w):
        if s == step and p == partition:
            release.wait(60)

    return hook


HUNG_STEPS = ["synthesize", "prep_msm", "b_g2_msm", "ntt_msm_h", "barrier_wait", "batch_add", "tail_msm", "finalize"]


@pytest.mark.parametrize("step", HUNG_STEPS)
def test_a_hung_step_fails_its_partition_and_the_run_returns(prepared, release, step):
    c = cfg(partitions=4, gw=2, transfer="pinned_pool", timeout_s=0.6, fault_hook=_hang_at(step, 1, release))
    t0 = time.monotonic()
    res, err = run_bounded(c, limit=30, prepared=prepared)
    assert err is None, err
    st = {r.partition: r.status for r in res.partitions}
    assert st[1] == "failed" and all(st[p] == "ok" for p in (0, 2, 3)), (st, res.errors)
    r1 = res.partitions[1]
    assert "partition 1" in r1.error and "timeout_s=0.6" in r1.error, r1.error
    if step != "b_g2_msm":  # a hung b_g2_msm surfaces when the finalizer's join of the prep thread times out
        assert step in r1.error and r1.stage == step, (r1.error, r1.stage)
    # the buffers came back to the pool, the mutex is free
    assert res.pool_stats["buffers_in_use"] == 0, res.pool_stats
    assert time.monotonic() - t0 < 20


def test_a_hung_ntt_msm_h_releases_the_mutex_for_the_other_worker(prepared, release):
    c = cfg(partitions=4, gw=2, timeout_s=0.5, fault_hook=_hang_at("ntt_msm_h", 0, release))
    res, err = run_bounded(c, limit=30, prepared=prepared)
    assert err is None, err
    assert [r.status for r in res.partitions] == ["failed", "ok", "ok", "ok"], res.errors
    assert isinstance(res.partitions[0].exception, StageTimeout)


def test_every_gpu_worker_hung_queued_partitions_cancelled_with_reason(prepared, release):
    def hook(s, p, w):
        if s == "ntt_msm_h":
            release.wait(60)

    c = cfg(partitions=4, gw=1, timeout_s=0.4, fault_hook=hook)
    res, err = run_bounded(c, limit=30, prepared=prepared)
    assert err is None, err
    # the hung one is the first partition the single GPU worker picked up: 0, or under load the
    # partition whose synthesis finished first (two synthesis threads)
    hung = [r for r in res.partitions if r.status == "failed" and "ntt_msm_h" in (r.error or "")]
    assert len(hung) == 1, res.errors
    rest = [r for r in res.partitions if r is not hung[0]]
    assert all(r.status in ("cancelled", "failed") for r in rest)
    assert all("hung" in r.error or "timeout" in r.error for r in rest), [r.error for r in rest]


def test_finalize_that_never_returns_does_not_hang_the_run(prepared, release):
    """The issue's first bullet: the loop over pending finalizers never gave up."""
    c = cfg(partitions=2, gw=1, timeout_s=0.5, fault_hook=_hang_at("finalize", 0, release))
    res, err = run_bounded(c, limit=20, prepared=prepared)
    assert err is None, err
    assert res.partitions[0].status == "failed" and res.partitions[0].stage == "finalize"
    assert res.partitions[1].status == "ok"


@pytest.mark.parametrize("exc", [MemoryError("injected"), OSError("disk full"), ValueError("bad witness")])
def test_other_exceptions_in_synthesis_fail_only_that_partition(prepared, exc):
    def hook(s, p, w):
        if s == "synthesize" and p == 2:
            raise exc

    res, err = run_bounded(cfg(partitions=4, transfer="pinned_pool", fault_hook=hook), prepared=prepared)
    assert err is None
    assert [r.status for r in res.partitions] == ["ok", "ok", "failed", "ok"]
    assert res.partitions[2].stage == "synthesize" and type(exc).__name__ in res.partitions[2].error
    assert res.pool_stats["buffers_in_use"] == 0


def test_pinned_allocation_failure_falls_back_and_the_run_succeeds(prepared):
    class Failing(PageableAllocator):
        def alloc(self, nbytes):
            raise MemoryError("injected cudaHostAlloc failure")

    pool = PinnedPool(Failing())
    with pytest.warns(RuntimeWarning, match="FAILED"):
        res, err = run_bounded(cfg(partitions=3, transfer="pinned_pool"), prepared=prepared, pool=pool)
    assert err is None and res.ok
    assert res.pool_stats["fallbacks"] == 9 and res.pool_stats["allocations"] == 0
    assert any("pinned pool checkout FAILED" in line for line in res.log_lines)
    pool.close()


def test_pool_allocation_failure_without_fallback_fails_the_partition(prepared):
    class FailSecond(PageableAllocator):
        calls = 0

        def alloc(self, nbytes):
            FailSecond.calls += 1
            if FailSecond.calls == 5:
                raise MemoryError("injected")
            return super().alloc(nbytes)

    pool = PinnedPool(FailSecond(), max_bytes=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res, err = run_bounded(cfg(partitions=3, transfer="pinned_pool"), prepared=prepared, pool=pool)
    assert err is None and res.ok  # the rollback + fallback path (checkout_abc) keeps going
    assert pool.stats().buffers_in_use == 0
    pool.close()


# ---------------------------------------------------------------------------- GpuMutex


def test_mutex_refuses_reentry_at_once():
    m = GpuMutex(0)
    stop = threading.Event()
    m.acquire(0, 300.0, stop, partition=3)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="already holds"):
        m.acquire(0, 300.0, stop, partition=4)
    assert time.monotonic() - t0 < 1.0
    assert m.release() and not m.lock.locked()


def test_mutex_force_release_and_late_release_is_a_noop():
    m = GpuMutex(0)
    stop = threading.Event()
    m.acquire(1, 5.0, stop, partition=7)
    assert not m.force_release(8) and m.force_release(7)
    m.acquire(0, 5.0, stop, partition=9)  # another worker gets it at once
    done = []
    th = threading.Thread(target=lambda: done.append(m.release()))
    th.start()
    th.join()
    assert done == [False] and m.owner == 0  # a thread that does not hold it cannot release it
    assert m.release()


def test_mutex_wait_timeout_names_the_partition_and_holder():
    m = GpuMutex(0)
    stop = threading.Event()
    m.acquire(1, 5.0, stop, partition=2)
    out = []

    def other():
        try:
            m.acquire(0, 0.2, stop, partition=5)
        except TimeoutError as e:
            out.append(str(e))

    th = threading.Thread(target=other)
    th.start()
    th.join(5)
    assert out and "partition 5" in out[0] and "partition 2" in out[0]
    m.release()


def test_mutex_wait_cancelled_by_stop():
    m = GpuMutex(0)
    stop = threading.Event()
    m.acquire(1, 5.0, stop)
    out = []

    def other():
        try:
            m.acquire(0, 30.0, stop)
        except Cancelled as e:
            out.append(e)

    th = threading.Thread(target=other)
    th.start()
    stop.set()
    th.join(5)
    assert out
    m.release()


# ---------------------------------------------------------------------------- PinnedPool


@pytest.mark.parametrize(("dtype", "exc"), [(object, TypeError), ("V0", ValueError), ("not-a-dtype", TypeError), ([("a", "O")], TypeError)])
def test_pool_checkout_bad_dtype_changes_nothing(dtype, exc):
    pool = PinnedPool(PageableAllocator())
    with pool.checkout(64) as buf:  # one buffer, checked back in: it is free now
        pass
    before = pool.stats().as_dict()
    with pytest.raises(exc):
        pool.checkout(64, dtype=dtype)
    after = pool.stats().as_dict()
    assert after == before and after["buffers_in_use"] == 0
    pool.close()
    del buf


@pytest.mark.parametrize("make", [lambda b: b[:8], lambda b: b.reshape(8, 8), lambda b: b.view(np.ndarray)])
def test_pool_checkin_of_a_view_is_refused_and_the_buffer_stays_in_use(make):
    """break1 item 9: checkin(b[:8]) freed b while it was in use."""
    pool = PinnedPool(PageableAllocator())
    b = pool.checkout(64)
    with pytest.raises(PoolError, match="view of a checkout"):
        pool.checkin(make(b))
    assert pool.stats().as_dict()["buffers_in_use"] == 1
    pool.checkin(b)
    assert pool.stats().as_dict()["buffers_in_use"] == 0
    pool.close()


# ---------------------------------------------------------------------------- GPU faults (H200)


@pytest.mark.gpu
def test_gpu_pinned_allocation_failure_in_a_pipeline_run(monkeypatch):
    """cudaHostAlloc fails for every buffer: the pool falls back to pageable memory with cuzk's
    FAILED line and the run still proves every partition (pageable-speed H2D)."""
    class Failing(CudaHostAllocator):
        def alloc(self, nbytes):
            return super().alloc(1 << 50)  # a real cudaHostAlloc failure: 1 PiB of page-locked memory

    pool = PinnedPool(Failing())
    c = PipelineConfig(n=1 << 12, partitions=3, device="gpu", transfer="pinned_pool", timeout_s=60.0)
    with pytest.warns(RuntimeWarning, match="FAILED"):
        res = run_pipeline(c, pool=pool)
    assert res.ok and res.pool_stats["fallbacks"] == 9
    pool.close()


@pytest.mark.gpu
def test_gpu_out_of_memory_in_one_partition_fails_only_that_partition(monkeypatch):
    """A real device allocation failure (CuPy OutOfMemoryError, a 1 PiB request) inside ntt_msm_h
    of the second partition to start: that partition fails with the error, the others are proved,
    the mutex and buffers are released."""
    cp = _cuda.cupy()
    c = PipelineConfig(n=1 << 12, partitions=4, device="gpu", transfer="pinned_pool", timeout_s=60.0)
    prepared = prepare_backend(c)
    orig = type(prepared[1]).start_h
    calls = {"n": 0}

    def start_h(self, inputs, stream):
        calls["n"] += 1
        if calls["n"] == 2:
            cp.empty(1 << 50, dtype=cp.uint8)  # a real device allocation failure (1 PiB): OutOfMemoryError
        return orig(self, inputs, stream)

    monkeypatch.setattr(type(prepared[1]), "start_h", start_h)
    res = run_pipeline(c, prepared=prepared)
    st = [r.status for r in res.partitions]
    assert st.count("failed") == 1 and st.count("ok") == 3, res.errors
    failed = next(r for r in res.partitions if r.status == "failed")
    assert "OutOfMemoryError" in failed.error and failed.stage == "ntt_msm_h"
    assert res.pool_stats["buffers_in_use"] == 0


@pytest.mark.gpu
def test_gpu_kernel_error_fails_the_partition_with_the_cuda_error(monkeypatch):
    """A kernel launch error (an invalid launch configuration: 2048 threads per block) inside
    tail_msm of partition 2; that partition fails naming the CUDA error, later partitions run on
    a healthy context."""
    cp = _cuda.cupy()
    c = PipelineConfig(n=1 << 12, partitions=4, gw=1, device="gpu", timeout_s=60.0)
    prepared = prepare_backend(c)

    def hook(s, p, w):
        if s == "tail_msm" and p == 2:
            k = cp.RawKernel(r'extern "C" __global__ void zk_fault(int *x) { if (threadIdx.x == 0) x[0] = 1; }', "zk_fault")
            x = cp.zeros(1, dtype=cp.int32)
            k((1,), (2048,), (x,))  # 2048 threads per block > 1024: the launch fails (CUDA_ERROR_INVALID_VALUE)
            cp.cuda.get_current_stream().synchronize()  # and any error the launch reports late

    res = run_pipeline(c.with_(fault_hook=hook), prepared=prepared)
    st = [r.status for r in res.partitions]
    assert st == ["ok", "ok", "failed", "ok"], res.errors
    assert "cuda" in res.partitions[2].error.lower() and res.partitions[2].stage == "tail_msm", res.partitions[2].error


def test_hung_synthesis_that_comes_back_returns_its_late_checkout(prepared, release):
    """A synthesis thread hung before its checkout, abandoned, then woken with a shared pool still
    open: its late a/b/c checkout goes back to the pool."""
    pool = PinnedPool(PageableAllocator())
    c = cfg(partitions=3, gw=1, transfer="pinned_pool", timeout_s=0.4, fault_hook=_hang_at("synthesize", 0, release))
    res, err = run_bounded(c, limit=30, prepared=prepared, pool=pool)
    assert err is None and res.partitions[0].status == "failed"
    release.set()  # the hung thread comes back, checks out, synthesizes and must check in
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (pool.stats().buffers_in_use or not no_pipeline_threads_left()):
        time.sleep(0.05)
    assert pool.stats().buffers_in_use == 0
    pool.close()


@pytest.mark.parametrize("step", ["synthesize", "ntt_msm_h", "barrier_wait", "batch_add", "tail_msm", "finalize"])
def test_failed_partition_names_its_stage(prepared, step):
    def hook(s, p, w):
        if s == step and p == 1:
            raise RuntimeError("injected fault")

    res, err = run_bounded(cfg(partitions=3, fault_hook=hook), prepared=prepared)
    assert err is None
    assert res.partitions[1].status == "failed" and res.partitions[1].stage == step, (res.partitions[1].stage, res.errors)


@pytest.mark.parametrize("scope, step", [("narrow", "ntt_msm_h"), ("narrow", "barrier_wait"), ("narrow", "tail_msm"),
                                         ("submit", "ntt_msm_h"), ("submit", "tail_msm"), ("submit", "gpu_wait")])
def test_a_hung_step_with_the_narrow_lock(prepared, release, scope, step):
    # submit: a hang while submitting (mutex held) or while waiting for the GPU (mutex released)
    c = cfg(partitions=4, gw=2, lock_scope=scope, transfer="pinned_pool", timeout_s=0.6, fault_hook=_hang_at(step, 1, release))
    res, err = run_bounded(c, limit=30, prepared=prepared)
    assert err is None, err
    st = [r.status for r in res.partitions]
    assert st == ["ok", "failed", "ok", "ok"], (st, res.errors)
    assert step in res.partitions[1].error and res.pool_stats["buffers_in_use"] == 0


# ----------------------------------------------------------------------------------------------
# h2d_stage="pre_lock": the copy of a/b/c before the mutex (fault-hook step "h2d")
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("scope", ["narrow", "coarse", "submit"])
def test_a_failed_pre_lock_copy_fails_its_partition_and_returns_its_buffers(prepared, scope):
    def hook(s, p, w):
        if s == "h2d" and p == 1:
            raise RuntimeError("injected copy fault")

    c = cfg(partitions=4, gw=2, lock_scope=scope, transfer="pinned_pool", h2d_stage="pre_lock", fault_hook=hook)
    res, err = run_bounded(c, limit=30, prepared=prepared)
    assert err is None, err
    st = [r.status for r in res.partitions]
    assert st == ["ok", "failed", "ok", "ok"], (st, res.errors)
    r1 = res.partitions[1]
    assert "injected copy fault" in r1.error and r1.stage == "h2d", (r1.error, r1.stage)
    assert res.pool_stats["buffers_in_use"] == 0 and res.pool_stats["checkouts"] == res.pool_stats["checkins"]
    ev = res.events
    # the failed copy never held the mutex: partition 1 has no mutex_wait / mutex_held, its h2d row carries the error
    assert ev[(ev.partition == 1) & ev.phase.isin(["mutex_wait", "mutex_held"])].empty
    e1 = ev[(ev.partition == 1) & (ev.phase == "h2d")]
    assert len(e1) == 1 and "error=RuntimeError" in e1["detail"].iloc[0] and "stage=pre_lock" in e1["detail"].iloc[0]
    assert no_pipeline_threads_left()


def test_a_hung_pre_lock_copy_times_out_without_blocking_the_other_worker(prepared, release):
    c = cfg(partitions=4, gw=2, lock_scope="narrow", transfer="pinned_pool", h2d_stage="pre_lock", timeout_s=0.6,
            fault_hook=_hang_at("h2d", 1, release))
    res, err = run_bounded(c, limit=30, prepared=prepared)
    assert err is None, err
    st = [r.status for r in res.partitions]
    assert st == ["ok", "failed", "ok", "ok"], (st, res.errors)
    r1 = res.partitions[1]
    assert "h2d" in r1.error and "timeout_s=0.6" in r1.error and r1.stage == "h2d", (r1.error, r1.stage)
    assert res.pool_stats["buffers_in_use"] == 0
    # no mutex was held while the copy hung: the other partitions never waited for partition 1
    ev = res.events
    assert ev[(ev.partition == 1) & (ev.phase == "mutex_held")].empty


def test_ctrl_c_in_the_pre_lock_copy_cancels_cleanly(prepared):
    def hook(s, p, w):
        if s == "h2d" and p == 2:
            raise KeyboardInterrupt

    c = cfg(partitions=6, gw=2, transfer="pinned_pool", lock_scope="narrow", h2d_stage="pre_lock", queue_depth=2, fault_hook=hook)
    res, err = run_bounded(c, limit=60, prepared=prepared)
    assert res is None and isinstance(err, KeyboardInterrupt), (res, err)
    r = err.result
    assert r.interrupted and r.partitions[2].status == "cancelled" and r.partitions[2].stage == "h2d"
    assert all(p.status in ("ok", "cancelled") for p in r.partitions)
    assert r.pool_stats["buffers_in_use"] == 0
    assert no_pipeline_threads_left()


def test_pre_lock_copies_with_three_workers_and_a_small_pool_do_not_deadlock(prepared):
    # every worker copies before asking for the mutex while the others hold it; a pool of exactly the
    # queue's buffers (queue_depth=3 partitions x 3 vectors) is drained and refilled many times
    pool = PinnedPool(PageableAllocator())
    c = cfg(partitions=12, gw=3, synth_workers=3, queue_depth=3, lock_scope="narrow", transfer="pinned_pool", h2d_stage="pre_lock")
    res, err = run_bounded(c, limit=60, prepared=prepared, pool=pool)
    assert err is None, err
    assert res.ok and all(p.status == "ok" for p in res.partitions)
    st = res.pool_stats
    assert st["buffers_in_use"] == 0 and st["checkouts"] == st["checkins"] == 36
    assert no_pipeline_threads_left()
