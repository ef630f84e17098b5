"""Tests of zkgpu.transfer.pinned_pool on the CPU: best fit, counters, fallback, misuse, threads (fake allocators).

The pool's GPU tests (real page-locked memory) are in test_transfer.py, next to the H2D paths.
"""

from __future__ import annotations

import gc
import logging
import random
import sys
import threading
import time
import warnings

import numpy as np
import pytest

from zkgpu.core.cuda import gpu_available
from zkgpu.transfer.host_alloc import PageableAllocator
from zkgpu.transfer.pinned_pool import PinnedAllocationError, PinnedArray, PinnedPool, PoolError

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
    assert isinstance(a, PinnedArray) and isinstance(a, np.ndarray)
    assert a.shape == (5, 4) and a.dtype == np.uint64 and a.nbytes == 160 and a.flags.c_contiguous
    a[:] = np.arange(20, dtype=np.uint64).reshape(5, 4)
    pool.checkin(a)
    b = pool.checkout(160, dtype=np.uint32, shape=(40,))
    assert b.dtype == np.uint32 and b.shape == (40,)
    assert np.array_equal(b.view(np.uint64), np.arange(20, dtype=np.uint64))  # same memory, reused
    assert b.pinned is True and b.capacity == 160
    with pytest.raises(PoolError, match="view of a checkout"):
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
    with caplog.at_level(logging.INFO, logger="zkgpu.transfer.pinned_pool"):
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
        except Exception as exc:  # noqa: BLE001 - a worker thread's failure is collected and reported by the assert below
            errors.append(f"thread {tid}: {exc!r}")

    def work(tid: int) -> None:
        rng = random.Random(tid)
        for _ in range(iters):
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
    with caplog.at_level(logging.WARNING, logger="zkgpu.transfer.pinned_pool"), pytest.warns(RuntimeWarning, match="falling back to unpinned"):
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
    with caplog.at_level(logging.DEBUG, logger="zkgpu.transfer.pinned_pool"):
        a = pool.checkout(2 * MIB)
        pool.checkin(a)
        b = pool.checkout(MIB)
        pool.checkin(b)
        pool.shrink(0)
    msgs = [r.getMessage() for r in caplog.records if r.name == "zkgpu.transfer.pinned_pool"]
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
    pool = PinnedPool(PageableAllocator())
    assert pool.pinned is False
    with pool.checkout(64) as buf:
        assert buf.pinned is False
    if not gpu_available():
        assert isinstance(PinnedPool().allocator, PageableAllocator)


def test_fallback_log_line_is_parsed_by_zkgpu_logs(caplog):
    logs = pytest.importorskip("zkgpu.analysis.logs")
    pool = PinnedPool(FakeAllocator(fail=True))
    with caplog.at_level(logging.DEBUG, logger="zkgpu.transfer.pinned_pool"):
        with pytest.warns(RuntimeWarning):
            buf = pool.checkout(3 << 20)
        pool.checkin(buf)
    lines = [f"2026-01-01T00:00:00Z {r.levelname} zkgpu.transfer.pinned_pool: {r.getMessage()}" for r in caplog.records]
    assert '"fake cudaErrorMemoryAllocation (3145728 bytes)"' in lines[0]
    parsed = logs.parse_lines(lines)
    assert "checkout_failed" in set(parsed.pool["event"])


def test_stale_view_of_an_earlier_checkout_is_refused():
    """A view keeps the token of its checkout: checking in a stale view after the memory was
    handed out again must not return the new owner's buffer (two live checkouts would alias)."""
    pool = PinnedPool(PageableAllocator())
    first = pool.checkout(64)
    stale = first[:]
    pool.checkin(first)
    second = pool.checkout(64)
    with pytest.raises(PoolError, match="double checkin"):
        pool.checkin(stale)
    third = pool.checkout(64)
    assert not np.shares_memory(second, third)
    with pytest.raises(PoolError, match="view of a checkout"):
        pool.checkin(second[:])  # a view of a live checkout is refused: only the checkout itself
    pool.checkin(second)
    pool.checkin(third)
    assert pool.stats().buffers_in_use == 0


def test_huge_shape_does_not_wrap_or_leak():
    pool = PinnedPool(PageableAllocator())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for shape in ((2**62 + 1, 4), (2**40, 2**40)):
            with pytest.raises((ValueError, MemoryError)):
                pool.checkout(shape=shape, dtype=np.uint64)
    assert pool.stats().buffers_in_use == 0
