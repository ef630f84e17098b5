"""Tests of zkgpu.transfer: the PinnedPool on the CPU (fake allocators), the H2D paths on the GPU."""

from __future__ import annotations

import ctypes
import gc
import json
import logging
import math
import random
import sys
import threading
import time
import warnings

import numpy as np
import pandas as pd
import pytest

import zkgpu.transfer as tr
from zkgpu._cuda import gpu_available
from zkgpu.transfer import PinnedAllocationError, PinnedPool, PoolError

MIB = 1 << 20


class FakeAllocator:
    """Pageable numpy memory that can be told to fail, counts alloc/free and checks double frees."""

    pinned = True

    def __init__(self, *, fail: bool = False, fail_after: int | None = None, delay_s: float = 0.0):
        self.fail = fail
        self.fail_after = fail_after
        self.delay_s = delay_s
        self.allocs: list[int] = []
        self.freed: list[int] = []
        self.live: dict[int, np.ndarray] = {}
        self._next = 0
        self._lock = threading.Lock()

    def alloc(self, nbytes):
        if self.delay_s:
            time.sleep(self.delay_s)
        with self._lock:
            if self.fail or (self.fail_after is not None and len(self.allocs) >= self.fail_after):
                raise MemoryError(f"fake cudaErrorMemoryAllocation ({nbytes} bytes)")
            self._next += 1
            handle = self._next
            arr = np.zeros(nbytes, dtype=np.uint8)
            self.live[handle] = arr
            self.allocs.append(nbytes)
        return arr, handle

    def free(self, handle):
        with self._lock:
            assert handle in self.live, f"double free or unknown handle {handle}"
            del self.live[handle]
            self.freed.append(handle)


def capacities_free(pool: PinnedPool) -> list[int]:
    return sorted(b.capacity for b in pool._free)


# ---------------------------------------------------------------------------------------------
# CPU: PinnedPool
# ---------------------------------------------------------------------------------------------


def test_best_fit_picks_smallest_free_buffer_that_fits():
    fa = FakeAllocator()
    pool = PinnedPool(fa)
    bufs = [pool.checkout(n) for n in (100, 300, 200)]
    for b in bufs:
        pool.checkin(b)
    assert fa.allocs == [100, 300, 200]
    b150 = pool.checkout(150)
    assert b150.capacity == 200 and b150.nbytes == 150
    b250 = pool.checkout(250)
    assert b250.capacity == 300
    b50 = pool.checkout(50)
    assert b50.capacity == 100
    b10 = pool.checkout(10)  # nothing free any more: a new allocation of exactly 10 bytes
    assert b10.capacity == 10 and fa.allocs[-1] == 10
    b400 = pool.checkout(400)
    assert b400.capacity == 400
    s = pool.stats()
    assert (s.allocations, s.reuses, s.checkouts, s.checkins) == (5, 3, 8, 3)


def test_exact_fit_preferred_and_request_larger_than_all_allocates():
    fa = FakeAllocator()
    pool = PinnedPool(fa)
    for n in (64, 128, 256):
        pool.checkin(pool.checkout(n))
    assert pool.checkout(128).capacity == 128
    big = pool.checkout(1000)
    assert big.capacity == 1000 and capacities_free(pool) == [64, 256]


def test_reuse_versus_allocation_counts():
    fa = FakeAllocator()
    pool = PinnedPool(fa)
    for _ in range(10):
        with pool.checkout(4096) as buf:
            buf[:] = 7
    s = pool.stats()
    assert s.allocations == 1 and s.reuses == 9 and s.checkouts == 10 and s.checkins == 10
    assert len(fa.allocs) == 1
    # 3 at once (a, b, c) twice: 3 allocations, then 3 reuses (cuzk's 24 allocs / 48 reuses pattern)
    pool2 = PinnedPool(FakeAllocator())
    for _ in range(3):
        abc = pool2.checkout_abc(10)
        abc.release()
    s2 = pool2.stats()
    assert s2.allocations == 3 and s2.reuses == 6


def test_returned_array_dtype_shape_views_share_the_buffer():
    pool = PinnedPool(FakeAllocator())
    a = pool.checkout(shape=(5, 4), dtype=np.uint64)
    assert isinstance(a, tr.PinnedArray) and isinstance(a, np.ndarray)
    assert a.shape == (5, 4) and a.dtype == np.uint64 and a.nbytes == 160 and a.flags.c_contiguous
    a[:] = np.arange(20, dtype=np.uint64).reshape(5, 4)
    pool.checkin(a)
    b = pool.checkout(160, dtype=np.uint32, shape=(40,))
    assert b.dtype == np.uint32 and b.shape == (40,)
    assert np.array_equal(b.view(np.uint64), np.arange(20, dtype=np.uint64))  # same memory, reused
    assert b.pinned is True and b.capacity == 160
    with pytest.raises(tr.PoolError, match="view of a checkout"):
        pool.checkin(b.reshape(8, 5))  # a view would free the buffer while b is in use
    pool.checkin(b)
    assert pool.stats().buffers_in_use == 0
    c = pool.checkout(shape=7)  # an int shape
    assert c.shape == (7,) and c.dtype == np.uint8


@pytest.mark.parametrize(
    "kwargs, exc",
    [
        (dict(nbytes=0), ValueError),
        (dict(nbytes=-5), ValueError),
        (dict(nbytes=10, dtype=np.uint64), ValueError),  # not a multiple of 8
        (dict(nbytes=16, shape=(3,), dtype=np.uint64), ValueError),  # mismatch
        (dict(), ValueError),
        (dict(nbytes=1.5), TypeError),
        (dict(nbytes=True), TypeError),
        (dict(shape=(2, -1)), ValueError),
    ],
)
def test_checkout_bad_requests(kwargs, exc):
    pool = PinnedPool(FakeAllocator())
    with pytest.raises(exc):
        pool.checkout(**kwargs)
    assert pool.stats().checkouts == 0


def test_shrink_frees_largest_first_and_never_in_use(caplog):
    fa = FakeAllocator()
    pool = PinnedPool(fa)
    bufs = [pool.checkout(n) for n in (100, 400, 200, 300)]
    keep = bufs[3]  # 300 stays checked out
    for b in bufs[:3]:
        pool.checkin(b)
    assert pool.stats().bytes_held == 1000
    with caplog.at_level(logging.INFO, logger="zkgpu.transfer"):
        freed = pool.shrink(600)
    assert freed == 400 and capacities_free(pool) == [100, 200]
    assert pool.stats().bytes_held == 600
    freed_msgs = [r.getMessage() for r in caplog.records if "freed buffer (evictor)" in r.getMessage()]
    assert len(freed_msgs) == 1 and "size_gib=" in freed_msgs[0] and "total_buffers=3" in freed_msgs[0]
    assert pool.shrink(450) == 200  # held 600 (300 of it in use): freeing the 200 reaches 400 <= 450
    assert capacities_free(pool) == [100]
    assert pool.shrink(0) == 100
    s = pool.stats()
    assert s.bytes_held == 300 and s.bytes_in_use == 300 and s.buffers_total == 1 and s.frees == 3
    assert len(fa.live) == 1  # the checked-out buffer was not freed
    assert keep.capacity == 300
    with pytest.raises(ValueError):
        pool.shrink(-1)


def test_stats_bytes_and_peak():
    pool = PinnedPool(FakeAllocator())
    a, b = pool.checkout(1000), pool.checkout(3000)
    s = pool.stats()
    assert (s.bytes_held, s.bytes_in_use, s.bytes_free, s.buffers_total, s.buffers_in_use) == (4000, 4000, 0, 2, 2)
    pool.checkin(a)
    s = pool.stats()
    assert (s.bytes_held, s.bytes_in_use, s.bytes_free, s.buffers_free) == (4000, 3000, 1000, 1)
    pool.checkin(b)
    pool.shrink(0)
    s = pool.stats()
    assert s.bytes_held == 0 and s.peak_bytes_held == 4000 and s.frees == 2
    assert s.alloc_ms >= 0 and set(s.as_dict()) >= {"allocations", "reuses", "checkouts", "checkins", "fallbacks", "bytes_held", "bytes_in_use"}


def test_thread_safety_no_buffer_handed_out_twice():
    fa = FakeAllocator(delay_s=0.0005)
    pool = PinnedPool(fa)
    in_use: set[int] = set()
    guard = threading.Lock()
    errors: list[str] = []
    n_threads, iters = 8, 150
    sizes = [256, 512, 1024, 4096]
    warm = [pool.checkout(n) for n in sizes * 12]  # a long free list: long best-fit scans
    for w in warm:
        pool.checkin(w)

    def worker(tid: int) -> None:
        try:
            work(tid)
        except Exception as exc:
            errors.append(f"thread {tid}: {exc!r}")

    def work(tid: int) -> None:
        rng = random.Random(tid)
        for i in range(iters):
            n = rng.choice(sizes)
            buf = pool.checkout(n)
            ptr = buf.__array_interface__["data"][0]
            with guard:
                if ptr in in_use:
                    errors.append(f"buffer 0x{ptr:x} handed out twice")
                in_use.add(ptr)
            buf[:] = tid
            time.sleep(0)
            if not (buf == tid).all():
                errors.append(f"thread {tid}: buffer overwritten by another thread")
            with guard:
                in_use.discard(ptr)
            pool.checkin(buf)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(n_threads)]
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible to provoke races
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert not errors, errors[:5]
    s = pool.stats()
    assert s.checkouts == s.checkins == n_threads * iters + len(warm)
    assert s.allocations + s.reuses == n_threads * iters + len(warm)
    assert s.buffers_in_use == 0 and s.buffers_free == s.buffers_total == len(fa.live)
    assert s.allocations == len(sizes) * 12  # every later checkout found a free buffer
    pool.close()
    assert not fa.live


def test_fallback_with_warning_and_log_when_allocator_fails(caplog):
    fa = FakeAllocator(fail=True)
    pool = PinnedPool(fa)
    with caplog.at_level(logging.WARNING, logger="zkgpu.transfer"):
        with pytest.warns(RuntimeWarning, match="falling back to unpinned"):
            buf = pool.checkout(1024, dtype=np.uint32)
    assert buf.pinned is False and buf.shape == (256,) and buf.dtype == np.uint32
    msgs = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("pinned pool checkout FAILED — falling back to unpinned") for m in msgs), msgs
    assert any(r.levelno == logging.WARNING for r in caplog.records)
    buf[:] = 3  # usable memory
    s = pool.stats()
    assert s.fallbacks == 1 and s.allocations == 0 and s.bytes_held == 0 and s.checkouts == 1
    pool.checkin(buf)
    assert pool.stats().checkins == 1
    with pytest.raises(PoolError):
        pool.checkin(buf)  # a fallback buffer cannot be checked in twice either
    with pytest.raises(PinnedAllocationError, match="could not allocate"):
        pool.checkout(1024, fallback=False)
    assert pool.stats().fallbacks == 1


def test_max_bytes_evicts_free_buffers_then_falls_back():
    fa = FakeAllocator()
    pool = PinnedPool(fa, max_bytes=1000)
    pool.checkin(pool.checkout(600))
    b = pool.checkout(700)  # 600 free does not fit: evicted, then 700 allocated
    assert b.capacity == 700 and pool.stats().bytes_held == 700 and pool.stats().frees == 1
    with pytest.warns(RuntimeWarning):
        c = pool.checkout(400)  # 700 in use + 400 > 1000
    assert c.pinned is False and pool.stats().fallbacks == 1
    with pytest.raises(PinnedAllocationError, match="max_bytes"):
        pool.checkout(400, fallback=False)


def test_granularity_rounds_allocations_up():
    pool = PinnedPool(FakeAllocator(), granularity=4096)
    a = pool.checkout(5000)
    assert a.capacity == 8192 and a.nbytes == 5000
    pool.checkin(a)
    assert pool.checkout(8000).capacity == 8192 and pool.stats().reuses == 1
    with pytest.raises(ValueError):
        PinnedPool(FakeAllocator(), granularity=0)


def test_buffer_comes_back_on_exception():
    pool = PinnedPool(FakeAllocator())
    with pytest.raises(KeyError), pool.checkout(128) as buf:
        buf[:] = 1
        raise KeyError("boom")
    s = pool.stats()
    assert s.checkins == 1 and s.buffers_in_use == 0 and s.buffers_free == 1
    with pytest.raises(RuntimeError), pool.checkout_abc(4) as abc:
        assert abc.pinned
        raise RuntimeError("synthesis failed")
    s = pool.stats()
    assert s.buffers_in_use == 0 and s.checkins == 4


def test_double_checkin_and_foreign_arrays_are_errors():
    pool = PinnedPool(FakeAllocator())
    a = pool.checkout(64)
    pool.checkin(a)
    with pytest.raises(PoolError, match="already checked in"):
        pool.checkin(a)
    b = pool.checkout(64)  # the same memory handed out again
    assert b.__array_interface__["data"] == a.__array_interface__["data"]
    with pytest.raises(PoolError, match="already checked in"):
        pool.checkin(a)  # the stale array must not return b's buffer
    assert pool.stats().buffers_in_use == 1
    pool.checkin(b)
    with pytest.raises(PoolError, match="not checked out from this pool"):
        pool.checkin(np.zeros(64, dtype=np.uint8))
    other = PinnedPool(FakeAllocator())
    o = other.checkout(64)
    with pytest.raises(PoolError, match="another pool"):
        pool.checkin(o)
    with pytest.raises(TypeError):
        pool.checkin([1, 2, 3])
    c = pool.checkout(64)
    with pytest.raises(PoolError, match="not checked out"):
        pool.checkin(c[8:])  # a view that does not start at the buffer
    pool.checkin(c)
    with pytest.raises(PoolError), c[:4]:  # a view is not a checkout
        pass


def test_checkout_abc_shapes_and_release():
    pool = PinnedPool(FakeAllocator())
    abc = pool.checkout_abc(1000)
    assert [x.shape for x in abc] == [(1000, 4)] * 3 and all(x.dtype == np.uint64 for x in abc)
    ptrs = {x.__array_interface__["data"][0] for x in abc}
    assert len(ptrs) == 3 and abc.pinned
    abc.release()
    with pytest.raises(PoolError):
        abc.release()
    abc6 = pool.checkout_abc(10, limbs=6)
    assert abc6.a.shape == (10, 6)
    abc6.release()
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError):
            pool.checkout_abc(bad)


def test_checkout_abc_rolls_back_when_one_fails():
    fa = FakeAllocator(fail_after=2)  # a and b allocate, c fails
    pool = PinnedPool(fa)
    with pytest.raises(PinnedAllocationError):
        pool.checkout_abc(100, fallback=False)
    s = pool.stats()
    assert s.buffers_in_use == 0 and s.buffers_free == 2 and s.checkins == 2 and s.fallbacks == 0
    with pytest.warns(RuntimeWarning, match="falling back to unpinned"):
        abc = pool.checkout_abc(100)  # a, b reuse the two, c fails -> all three roll back, all pageable
    assert not abc.pinned and not abc.a.pinned and not abc.c.pinned
    s = pool.stats()
    assert s.buffers_in_use == 0 and s.buffers_free == 2 and s.fallbacks == 3
    abc.a[:] = 1
    abc.release()
    assert pool.stats().buffers_in_use == 0


def test_log_messages(caplog):
    pool = PinnedPool(FakeAllocator())
    with caplog.at_level(logging.DEBUG, logger="zkgpu.transfer"):
        a = pool.checkout(2 * MIB)
        pool.checkin(a)
        b = pool.checkout(MIB)
        pool.checkin(b)
        pool.shrink(0)
    msgs = [r.getMessage() for r in caplog.records if r.name == "zkgpu.transfer"]
    assert msgs[0] == "pinned pool: allocated new buffer size_gib=0.002 total_buffers=1 total_gib=0.002"
    assert msgs[1] == "pinned pool: checkin size_gib=0.002 free_buffers=1"
    assert msgs[2] == "pinned pool: checkout (reuse) size_gib=0.002 free_remaining=0"
    assert msgs[3] == "pinned pool: checkin size_gib=0.002 free_buffers=1"
    assert msgs[4] == "pinned pool: freed buffer (evictor) size_gib=0.002 total_buffers=0 total_gib=0.000"


def test_close_frees_everything_and_is_a_context_manager():
    fa = FakeAllocator()
    with pytest.warns(RuntimeWarning, match="1 buffer"), PinnedPool(fa) as pool:
        x = pool.checkout(100)
        pool.checkin(pool.checkout(200))
    assert pool.closed and len(fa.live) == 1  # the 200 is freed; x is still out
    assert pool.stats().bytes_held == 100
    with pytest.raises(PoolError, match="closed"):
        pool.checkout(10)
    pool.checkin(x)  # freed at checkin
    assert not fa.live and pool.stats().bytes_held == 0
    pool.close()  # idempotent

    fa2 = FakeAllocator()
    pool2 = PinnedPool(fa2)
    y = pool2.checkout(10)
    with pytest.warns(RuntimeWarning, match="still checked out"):
        pool2.close()
    pool2.checkin(y)
    assert not fa2.live


def test_garbage_collected_pool_frees_its_free_buffers():
    fa = FakeAllocator()
    pool = PinnedPool(fa)
    pool.checkin(pool.checkout(100))
    del pool
    gc.collect()
    assert not fa.live


def test_pageable_allocator_and_default_allocator():
    pool = PinnedPool(tr.PageableAllocator())
    assert pool.pinned is False
    with pool.checkout(64) as buf:
        assert buf.pinned is False
    if not gpu_available():
        assert isinstance(PinnedPool().allocator, tr.PageableAllocator)


# ---------------------------------------------------------------------------------------------
# CPU: everything else that runs without a GPU
# ---------------------------------------------------------------------------------------------


@pytest.mark.skipif(gpu_available(), reason="checks the no-GPU behaviour")
@pytest.mark.parametrize("path", tr.PATHS)
def test_transfer_paths_raise_runtime_error_without_gpu(path):
    with pytest.raises(RuntimeError, match="no CUDA GPU"):
        tr.TRANSFER_PATHS[path](np.zeros(16, dtype=np.uint8))


@pytest.mark.skipif(gpu_available(), reason="checks the no-GPU behaviour")
def test_gpu_entry_points_without_gpu():
    with pytest.raises(RuntimeError):
        tr.bandwidth_sweep([MIB], repeat=1)
    with pytest.raises(RuntimeError):
        tr.host_alloc_costs([MIB], repeat=1)
    with pytest.raises(RuntimeError):
        tr.CudaHostAllocator().alloc(10)
    assert tr.is_pinned(np.zeros(4)) is False
    from click.testing import CliRunner

    res = CliRunner().invoke(tr.bench_command, ["--max-size", "1MiB"])
    assert res.exit_code != 0 and "needs a CUDA GPU" in res.output


def test_sweep_argument_validation_happens_first():
    with pytest.raises(ValueError, match="unknown transfer path"):
        tr.bandwidth_sweep([MIB], paths=["pageable", "teleport"])
    with pytest.raises(ValueError):
        tr.bandwidth_sweep([0])
    with pytest.raises(ValueError):
        tr.bandwidth_sweep([MIB], repeat=0)
    with pytest.raises(ValueError):
        tr.bandwidth_sweep([MIB], fresh=())


def test_default_sizes_and_paths():
    assert tr.DEFAULT_SIZES[0] == MIB and tr.DEFAULT_SIZES[-1] == 4 << 30
    assert all(b == 4 * a for a, b in zip(tr.DEFAULT_SIZES, tr.DEFAULT_SIZES[1:]))
    assert set(tr.PATHS) == {"pageable", "pageable_memcpy", "cupy_asarray", "registered", "pinned_staging", "pinned_pool", "pinned_raw"}
    assert "h2d" == tr.bench_command.name


def test_parse_bytes():
    assert tr._parse_bytes("1MiB") == MIB and tr._parse_bytes("4GiB") == 4 << 30
    assert tr._parse_bytes("4096") == 4096 and tr._parse_bytes("256m") == 256 * MIB
    with pytest.raises(ValueError):
        tr._parse_bytes("lots")


def test_fill_pattern_any_size():
    tile = tr._pattern()
    for n in (1, 1000, tr._TILE, 3 * tr._TILE + 17):
        buf = np.empty(n, dtype=np.uint8)
        tr._fill(buf, tile)
        expect = np.resize(tile, n)
        assert np.array_equal(buf, expect)


def test_host_bytes_validation():
    with pytest.raises(TypeError):
        tr._host_bytes([1, 2])
    with pytest.raises(ValueError, match="C-contiguous"):
        tr._host_bytes(np.zeros((4, 4))[:, 1])
    with pytest.raises(ValueError, match="empty"):
        tr._host_bytes(np.zeros(0))
    v = tr._host_bytes(np.zeros((3, 4), dtype=np.uint64))
    assert v.dtype == np.uint8 and v.shape == (96,)


def _synthetic_sweep() -> pd.DataFrame:
    rows = []
    for size in (MIB, 256 * MIB, 1 << 30):
        for path, g in (("pinned_pool", 50.0), ("pinned_raw", 52.0), ("pageable", 7.0)):
            for fresh in (False, True):
                for r in range(3):
                    gbps = g * (0.5 if fresh else 1.0) + r * 0.1
                    row = dict.fromkeys(tr.SWEEP_COLUMNS, math.nan)
                    row.update(path=path, size_bytes=size, fresh_buffer=fresh, repeat=r, gbps=gbps, stream_ms=size / gbps / 1e6, host_ms=0.1, src_pinned=path != "pageable")
                    rows.append(row)
    return pd.DataFrame(rows, columns=list(tr.SWEEP_COLUMNS))


def test_summarize_sweep_medians():
    df = _synthetic_sweep()
    s = tr.summarize_sweep(df)
    assert len(s) == 3 * 3 * 2
    assert {"path", "size_bytes", "fresh_buffer", "n", "gbps", "stream_ms", "host_ms"} <= set(s.columns)
    row = s[(s.path == "pinned_pool") & (s.size_bytes == MIB) & (~s.fresh_buffer)].iloc[0]
    assert row["n"] == 3 and row["gbps"] == pytest.approx(50.1)
    with pytest.raises(ValueError):
        tr.summarize_sweep(df.drop(columns=["path"]))


def test_pool_efficiency_check():
    df = _synthetic_sweep()
    eff = tr.pool_efficiency(df)
    assert list(eff.size_bytes) == [256 * MIB, 1 << 30]  # 1 MiB is below the 256 MiB floor
    assert eff.ratio.iloc[0] == pytest.approx(50.1 / 52.1)
    assert eff.attrs["passed"] is True and eff.ok.all()
    slow = df.copy()
    slow.loc[slow.path == "pinned_pool", "gbps"] = 30.0
    eff2 = tr.pool_efficiency(slow)
    assert eff2.attrs["passed"] is False and not eff2.ok.any()
    with pytest.raises(ValueError, match="no size"):
        tr.pool_efficiency(df[df.path != "pinned_raw"])
    with pytest.raises(ValueError):
        tr.pool_efficiency(df, min_size=2 << 30)


def test_transfer_result_row():
    r = tr.TransferResult(path="registered", nbytes=10**9, host_ms=1.0, stream_ms=20.0, wall_ms=21.0, gbps=50.0, overhead_ms=5.0, extra={"register_ms": 4.0, "unregister_ms": 1.0}, src_pinned=True, dst=object())
    assert r.effective_gbps == pytest.approx(40.0)
    row = r.as_row()
    assert row["register_ms"] == 4.0 and "dst" not in row and row["effective_gbps"] == pytest.approx(40.0)
    assert "dst" not in repr(r)


# ---------------------------------------------------------------------------------------------
# GPU (run by the lead on the H200): quick, < 60 s together
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def cp():
    from zkgpu._cuda import cupy

    return cupy()


def _random_bytes(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


GPU_SIZES = [MIB, 4 * MIB + 12345, 4096 * 3 + 5]


@pytest.mark.gpu
@pytest.mark.parametrize("n", GPU_SIZES)
@pytest.mark.parametrize("path", tr.PATHS)
def test_gpu_each_path_copies_the_right_bytes(cp, path, n):
    import cupyx

    data = _random_bytes(n, seed=n + len(path))
    pool = PinnedPool()  # the CUDA allocator on a GPU machine
    try:
        stream = cp.cuda.Stream(non_blocking=True)
        dst = cp.zeros(n, dtype=cp.uint8)
        if path == "pinned_pool":
            src = pool.checkout(n)
            src[:] = data
            res = tr.pinned_pool(src, dst, stream=stream)
            pool.checkin(src)
        elif path == "pinned_raw":
            src = cupyx.empty_pinned(n, dtype=np.uint8)
            src[:] = data
            res = tr.pinned_raw(src, dst, stream=stream)
        elif path == "pinned_staging":
            with pool.checkout(n + 100) as staging:
                res = tr.pinned_staging(data, dst, stream=stream, staging=staging)
        elif path == "cupy_asarray":
            res = tr.cupy_asarray(data, stream=stream)
            dst = res.dst
            assert res.extra["staging_bytes"] >= n  # pageable source: staged through pinned memory
        else:
            res = tr.TRANSFER_PATHS[path](data, dst, stream=stream)
        assert res.dst is dst
        assert np.array_equal(cp.asnumpy(dst), data)
        assert res.path == path and res.nbytes == n
        assert res.gbps > 0 and res.stream_ms > 0 and res.host_ms >= 0 and res.wall_ms >= res.host_ms
        assert math.isfinite(res.effective_gbps) and res.effective_gbps <= res.gbps + 1e-9
        assert res.src_pinned == (path in ("registered", "pinned_pool", "pinned_raw"))
        if path == "registered":
            assert res.extra["register_ms"] >= 0 and res.extra["unregister_ms"] >= 0
            assert res.overhead_ms == pytest.approx(res.extra["register_ms"] + res.extra["unregister_ms"])
            assert not tr.is_pinned(data)  # unregistered again
        if path == "pinned_staging":
            assert res.extra["stage_ms"] >= 0
    finally:
        pool.close()


@pytest.mark.gpu
def test_gpu_dtype_shape_independent_and_default_dst(cp):
    host = np.random.default_rng(1).integers(0, 2**63, (1000, 4), dtype=np.uint64)
    dst = cp.empty((1000, 8), dtype=cp.uint32)
    res = tr.pageable(host, dst)
    assert res.dst is dst and np.array_equal(cp.asnumpy(dst).view(np.uint64), host)
    res2 = tr.pageable_memcpy(host)  # dst allocated: uint8 bytes
    assert res2.dst.dtype == cp.uint8 and np.array_equal(cp.asnumpy(res2.dst), host.reshape(-1).view(np.uint8))
    res3 = tr.cupy_asarray(host)
    assert res3.dst.shape == host.shape and res3.dst.dtype == cp.uint64
    res4 = tr.pinned_staging(host)  # allocates and frees its own staging buffer
    assert res4.extra["alloc_ms"] >= 0 and res4.extra["free_ms"] >= 0
    assert np.array_equal(cp.asnumpy(res4.dst), host.reshape(-1).view(np.uint8))


@pytest.mark.gpu
def test_gpu_errors(cp):
    host = np.zeros(1024, dtype=np.uint8)
    with pytest.raises(ValueError, match="bytes"):
        tr.pageable(host, cp.empty(1000, dtype=cp.uint8))
    with pytest.raises(TypeError):
        tr.pageable(host, np.empty(1024, dtype=np.uint8))
    with pytest.raises(ValueError, match="C-contiguous"):
        tr.pageable(np.zeros((64, 64))[:, 0])
    with pytest.raises(ValueError, match="not page-locked"):
        tr.pinned_pool(host)
    with pytest.raises(ValueError, match="not page-locked"):
        tr.pinned_staging(host, staging=np.empty(2048, dtype=np.uint8))
    with pytest.raises(ValueError):
        tr.cupy_asarray(host, cp.empty(1024, dtype=cp.uint8))
    import cupyx

    pinned = cupyx.empty_pinned(1024, dtype=np.uint8)
    with pytest.raises(ValueError, match="already page-locked"):
        tr.registered(pinned)
    with pytest.raises(ValueError, match="bytes"):
        tr.pinned_staging(np.zeros(4096, dtype=np.uint8), staging=pinned)
    res = tr.pinned_pool(host, require_pinned=False)
    assert res.src_pinned is False


@pytest.mark.gpu
def test_gpu_cupy_asarray_from_pinned_source_is_not_staged(cp):
    import cupyx

    src = cupyx.empty_pinned(MIB, dtype=np.uint8)
    src[:] = 5
    res = tr.cupy_asarray(src)
    assert res.extra["staging_bytes"] == 0 and res.src_pinned
    assert int(res.dst.sum()) == 5 * MIB


@pytest.mark.gpu
def test_gpu_pool_hands_out_real_pinned_memory(cp):
    rt = cp.cuda.runtime
    with PinnedPool() as pool:
        assert isinstance(pool.allocator, tr.CudaHostAllocator) and pool.pinned
        with pool.checkout(shape=(1000, 4), dtype=np.uint64) as buf:
            attrs = rt.pointerGetAttributes(buf.__array_interface__["data"][0])
            assert attrs.type == rt.memoryTypeHost
            assert buf.pinned and tr.is_pinned(buf)
            buf[:] = 7
            assert int(buf.sum()) == 7 * 4000
        with pool.checkout_abc(1000) as abc:
            assert abc.pinned and all(tr.is_pinned(x) for x in abc)
        assert pool.stats().reuses >= 1
    assert not tr.is_pinned(np.zeros(1000))
    with PinnedPool(tr.PageableAllocator()) as pp, pp.checkout(4096) as b:
        assert not tr.is_pinned(b)


@pytest.mark.gpu
def test_gpu_small_sweep_columns_and_helpers(cp):
    sizes = [MIB, 4 * MIB]
    df = tr.bandwidth_sweep(sizes, repeat=2, warmup=1)
    assert list(df.columns) == list(tr.SWEEP_COLUMNS)
    assert len(df) == len(sizes) * len(tr.PATHS) * 2 * 2
    assert (df.gbps > 0).all() and (df.stream_ms > 0).all() and (df.verified == True).all()
    assert set(df.path) == set(tr.PATHS) and set(df.fresh_buffer) == {False, True}
    pinned = df[df.path.isin(["pinned_pool", "pinned_raw", "registered"])]
    assert pinned.src_pinned.all() and not df[df.path == "pageable"].src_pinned.any()
    assert (df[df.path == "registered"].register_ms >= 0).all()
    assert (df[df.path == "cupy_asarray"].staging_bytes >= df[df.path == "cupy_asarray"].size_bytes).all()
    fresh_pool = df[(df.path == "pinned_pool") & df.fresh_buffer]
    assert (fresh_pool.alloc_ms > 0).all() and (fresh_pool.overhead_ms >= fresh_pool.alloc_ms).all()
    s = tr.summarize_sweep(df)
    assert len(s) == len(sizes) * len(tr.PATHS) * 2 and (s.n == 2).all()
    eff = tr.pool_efficiency(df, min_size=MIB)
    assert list(eff.size_bytes) == sizes and (eff.ratio > 0).all()
    costs = tr.host_alloc_costs([MIB], repeat=1)
    assert set(costs.op) == {"hostAlloc", "freeHost", "touch", "hostRegister", "hostUnregister"}
    assert (costs.ms >= 0).all()


@pytest.mark.gpu
def test_gpu_bench_command_writes_run_folder(cp, tmp_path):
    from click.testing import CliRunner

    res = CliRunner().invoke(tr.bench_command, ["--out", str(tmp_path), "--max-size", "4MiB", "--repeat", "1", "--warmup", "0", "--alloc-repeat", "1"])
    assert res.exit_code == 0, res.output
    (run,) = list(tmp_path.iterdir())
    for name in ("sweep.csv", "sweep.parquet", "summary.csv", "host_alloc.csv", "manifest.json"):
        assert (run / name).exists(), name
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["sizes"] == [MIB, 4 * MIB] and manifest["repeat"] == 1
    df = pd.read_parquet(run / "sweep.parquet")
    assert list(df.columns) == list(tr.SWEEP_COLUMNS) and len(df) == 2 * len(tr.PATHS) * 2


def test_sweep_frame_dtypes_and_parquet_roundtrip(tmp_path):
    rows = []
    for i, verified in enumerate((True, math.nan, False)):
        row = dict.fromkeys(tr.SWEEP_COLUMNS, math.nan)
        row.update(path="pageable", size_bytes=MIB, fresh_buffer=bool(i % 2), repeat=i, host_ms=1.0, stream_ms=1.2, gbps=0.87, src_pinned=False, verified=verified)
        rows.append(row)
    df = tr._sweep_frame(rows)
    assert list(df.columns) == list(tr.SWEEP_COLUMNS)
    assert str(df["verified"].dtype) == "boolean" and df["verified"].isna().sum() == 1
    assert df["register_ms"].dtype == np.float64 and df["size_bytes"].dtype == np.int64
    df.to_parquet(tmp_path / "s.parquet", index=False)
    df.to_csv(tmp_path / "s.csv", index=False)
    back = pd.read_parquet(tmp_path / "s.parquet")
    assert list(back.columns) == list(tr.SWEEP_COLUMNS) and len(back) == 3


def test_fallback_log_line_is_parsed_by_zkgpu_logs(caplog):
    logs = pytest.importorskip("zkgpu.logs")
    pool = PinnedPool(FakeAllocator(fail=True))
    with caplog.at_level(logging.DEBUG, logger="zkgpu.transfer"):
        with pytest.warns(RuntimeWarning):
            buf = pool.checkout(3 << 20)
        pool.checkin(buf)
    lines = [f"2026-01-01T00:00:00Z {r.levelname} zkgpu.transfer: {r.getMessage()}" for r in caplog.records]
    assert '"fake cudaErrorMemoryAllocation (3145728 bytes)"' in lines[0]
    parsed = logs.parse_lines(lines)
    assert "checkout_failed" in set(parsed.pool["event"])


# ---------------------------------------------------------------------------------------------
# CPU: the GPU tests above, run against a fake CuPy (host memory, ctypes.memmove as the DMA).
# It checks the Python plumbing of every path, the sweep, the cost table and `bench h2d` here;
# the real behaviour (pinned memory, bandwidth) is checked by the gpu tests on the H200.
# ---------------------------------------------------------------------------------------------


class _FakeRuntime:
    memcpyHostToDevice = 1
    memoryTypeUnregistered = 0
    memoryTypeHost = 1

    def __init__(self):
        self.ranges: dict[int, tuple[int, object]] = {}  # start -> (end, keepalive or None)

    def _find(self, ptr):
        for start, (end, _) in self.ranges.items():
            if start <= ptr < end:
                return start
        return None

    def hostAlloc(self, n, flags):
        buf = np.empty(n + 4096, dtype=np.uint8)
        ptr = buf.__array_interface__["data"][0]
        ptr += (-ptr) % 4096
        self.ranges[ptr] = (ptr + n, buf)
        return ptr

    def freeHost(self, ptr):
        assert self.ranges.pop(ptr)[1] is not None, "freeHost of registered memory"

    def hostRegister(self, ptr, n, flags):
        if self._find(ptr) is not None or self._find(ptr + n - 1) is not None:
            raise RuntimeError("cudaErrorHostMemoryAlreadyRegistered")
        self.ranges[ptr] = (ptr + n, None)

    def hostUnregister(self, ptr):
        assert self.ranges.pop(ptr)[1] is None, "hostUnregister of hostAlloc'd memory"

    def pointerGetAttributes(self, ptr):
        class A:
            pass

        a = A()
        a.type = 1 if self._find(ptr) is not None else 0
        return a

    def memcpyAsync(self, dst, src, n, kind, stream):
        assert kind == 1
        ctypes.memmove(dst, src, n)


class _FakeDeviceArray(np.ndarray):
    @property
    def data(self):
        class D:
            pass

        d = D()
        d.ptr = self.__array_interface__["data"][0]
        return d

    def set(self, arr, stream=None):
        assert isinstance(arr, np.ndarray) and arr.shape == self.shape and arr.dtype == self.dtype
        np.copyto(np.asarray(self).view(np.ndarray), arr)

    def get(self):
        return np.array(self.view(np.ndarray))


def _make_fake_cupy():
    import types

    cp = types.SimpleNamespace()
    rt = _FakeRuntime()
    cp.ndarray = _FakeDeviceArray
    cp.uint8, cp.uint32, cp.uint64 = np.uint8, np.uint32, np.uint64
    cp.empty = lambda shape, dtype=float: np.empty(shape, dtype).view(_FakeDeviceArray)
    cp.zeros = lambda shape, dtype=float: np.zeros(shape, dtype).view(_FakeDeviceArray)
    cp.asnumpy = lambda a: np.array(np.asarray(a).view(np.ndarray))
    state = {"stream": None, "allocator": None}

    class Stream:
        ptr = 0

        def __init__(self, non_blocking=False):
            self.non_blocking = non_blocking

        def synchronize(self):
            pass

        def __enter__(self):
            state["prev"] = state["stream"]
            state["stream"] = self
            return self

        def __exit__(self, *exc):
            state["stream"] = state.pop("prev")

    class Event:
        def record(self, stream=None):
            self.t = time.perf_counter()

        def synchronize(self):
            pass

    class PinnedPoolFake:
        def __init__(self):
            self.blocks = []

        def malloc(self, size):
            ptr = rt.hostAlloc(size, 1)
            self.blocks.append(ptr)
            return ptr

        def free_all_blocks(self):
            pass

    ppool = PinnedPoolFake()
    state["allocator"] = ppool.malloc

    def set_pinned_memory_allocator(a=None):
        state["allocator"] = a or ppool.malloc

    def asarray(a):
        a = np.asarray(a)
        ptr = a.__array_interface__["data"][0]
        if rt.pointerGetAttributes(ptr).type != 1:
            state["allocator"](a.nbytes)  # the staging buffer CuPy would take
        return np.array(a).view(_FakeDeviceArray)

    cp.asarray = asarray
    cp.get_default_pinned_memory_pool = lambda: ppool
    cp.get_default_memory_pool = lambda: types.SimpleNamespace(free_all_blocks=lambda: None)
    cp.cuda = types.SimpleNamespace(
        runtime=rt,
        Stream=Stream,
        Event=Event,
        get_current_stream=lambda: state["stream"] or Stream(),
        get_elapsed_time=lambda s, e: (e.t - s.t) * 1e3 + 1e-6,
        Device=lambda *a: types.SimpleNamespace(synchronize=lambda: None),
        set_pinned_memory_allocator=set_pinned_memory_allocator,
    )

    def empty_pinned(shape, dtype=float):
        n = int(np.prod(shape)) * np.dtype(dtype).itemsize
        ptr = rt.hostAlloc(n, 1)
        return np.frombuffer((ctypes.c_ubyte * n).from_address(ptr), dtype=np.uint8).view(dtype).reshape(shape)

    cupyx = types.SimpleNamespace(empty_pinned=empty_pinned)
    return cp, cupyx


@pytest.fixture
def fake_cp(monkeypatch):
    import zkgpu._cuda as cuda_mod

    cp, cupyx = _make_fake_cupy()
    monkeypatch.setattr(cuda_mod, "cupy", lambda: cp)
    monkeypatch.setattr(cuda_mod, "gpu_available", lambda: True)
    monkeypatch.setitem(sys.modules, "cupyx", cupyx)
    return cp


@pytest.mark.parametrize("n", GPU_SIZES)
@pytest.mark.parametrize("path", tr.PATHS)
def test_fake_cupy_each_path(fake_cp, path, n):
    test_gpu_each_path_copies_the_right_bytes(fake_cp, path, n)


def test_fake_cupy_dtype_shape_errors_and_pool(fake_cp):
    test_gpu_dtype_shape_independent_and_default_dst(fake_cp)
    test_gpu_errors(fake_cp)
    test_gpu_cupy_asarray_from_pinned_source_is_not_staged(fake_cp)
    test_gpu_pool_hands_out_real_pinned_memory(fake_cp)
    assert not fake_cp.cuda.runtime.ranges or all(v[1] is not None for v in fake_cp.cuda.runtime.ranges.values())  # nothing left registered


def test_fake_cupy_sweep_and_bench(fake_cp, tmp_path):
    test_gpu_small_sweep_columns_and_helpers(fake_cp)
    test_gpu_bench_command_writes_run_folder(fake_cp, tmp_path)


def test_fake_cupy_sweep_detects_wrong_bytes(fake_cp, monkeypatch):
    rt = fake_cp.cuda.runtime
    real = rt.memcpyAsync
    monkeypatch.setattr(rt, "memcpyAsync", lambda d, s, n, k, st: real(d, s, n - 1, k, st))  # drop the last byte
    with pytest.raises(RuntimeError, match="wrong bytes"):
        tr.bandwidth_sweep([MIB], paths=["pinned_raw"], fresh=(False,), repeat=1, warmup=0)


def test_fake_cupy_sweep_time_budget(fake_cp):
    with pytest.warns(RuntimeWarning, match="time budget"):
        df = tr.bandwidth_sweep([MIB, 4 * MIB], paths=["pinned_pool"], fresh=(False,), repeat=1, warmup=0, time_budget_s=0.0)
    assert df.attrs["skipped_sizes"] == [MIB, 4 * MIB] and len(df) == 0


@pytest.mark.gpu
def test_gpu_bench_command_large_sizes_run_a_path_subset(cp, tmp_path):
    """Sizes from --large-from run only the --large-path paths with reused buffers (the 4 GiB
    points of the full sweep), and --verify-max limits the byte comparison to small sizes."""
    from click.testing import CliRunner

    args = ["--out", str(tmp_path), "--max-size", "4MiB", "--repeat", "1", "--warmup", "0", "--alloc-repeat", "0",
            "--large-from", "4MiB", "--large-path", "pinned_raw", "--large-path", "pageable", "--verify-max", "1MiB"]
    res = CliRunner().invoke(tr.bench_command, args)
    assert res.exit_code == 0, res.output
    (run,) = list(tmp_path.iterdir())
    df = pd.read_parquet(run / "sweep.parquet")
    big = df[df.size_bytes == 4 * MIB]
    assert set(big.path) == {"pinned_raw", "pageable"} and not big.fresh_buffer.any()
    assert len(df[df.size_bytes == MIB]) == 2 * len(tr.PATHS)
    assert big.verified.isna().all() or not big.verified.astype(bool).any()
    assert json.loads((run / "manifest.json").read_text())["large_sizes"]["from_bytes"] == 4 * MIB


def test_fake_cupy_bench_large_sizes(fake_cp, tmp_path):
    test_gpu_bench_command_large_sizes_run_a_path_subset(fake_cp, tmp_path)


def test_stale_view_of_an_earlier_checkout_is_refused():
    """A view keeps the token of its checkout: checking in a stale view after the memory was
    handed out again must not return the new owner's buffer (two live checkouts would alias)."""
    pool = tr.PinnedPool(tr.PageableAllocator())
    first = pool.checkout(64)
    stale = first[:]
    pool.checkin(first)
    second = pool.checkout(64)
    with pytest.raises(tr.PoolError, match="double checkin"):
        pool.checkin(stale)
    third = pool.checkout(64)
    assert not np.shares_memory(second, third)
    with pytest.raises(tr.PoolError, match="view of a checkout"):
        pool.checkin(second[:])  # a view of a live checkout is refused: only the checkout itself
    pool.checkin(second)
    pool.checkin(third)
    assert pool.stats().buffers_in_use == 0


def test_huge_shape_does_not_wrap_or_leak():
    pool = tr.PinnedPool(tr.PageableAllocator())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for shape in ((2**62 + 1, 4), (2**40, 2**40)):
            with pytest.raises((ValueError, MemoryError)):
                pool.checkout(shape=shape, dtype=np.uint64)
    assert pool.stats().buffers_in_use == 0
