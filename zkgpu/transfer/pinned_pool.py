"""Pinned-buffer pool: page-locked host buffers handed out best-fit and reused (cuzk ``pinned_pool.rs``)."""

from __future__ import annotations

import contextlib
import itertools
import logging
import math
import threading
import time
import warnings
import weakref
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from zkgpu.core import cuda as _cuda
from zkgpu.transfer.host_alloc import CudaHostAllocator, HostAllocator, PageableAllocator, host_ptr

__all__ = ["PinnedArray", "PinnedAbc", "PoolStats", "PoolError", "PinnedAllocationError", "PinnedPool"]

log = logging.getLogger(__name__)

GIB = 1 << 30


class PoolError(ValueError):
    """Misuse of a :class:`PinnedPool`: checking in twice, a foreign array, a closed pool."""


class PinnedAllocationError(MemoryError):
    """The pool's allocator could not provide a buffer (and fallback was not allowed)."""


class PinnedArray(np.ndarray):
    """A numpy array from :meth:`PinnedPool.checkout`; ``with`` checks it in. ``pinned``, ``capacity`` (bytes), ``pool``."""

    pool: PinnedPool | None
    pinned: bool
    capacity: int

    def __array_finalize__(self, obj: Any) -> None:
        self.pool = None
        self.pinned = False
        self.capacity = 0
        # the pool that handed it out (kept after checkin) and the checkout it belongs to; views
        # inherit both, so checking in a stale view of an earlier checkout is detected
        self._origin = getattr(obj, "_origin", None)
        self._token = getattr(obj, "_token", None)

    def __enter__(self) -> PinnedArray:
        if self.pool is None:
            raise PoolError("this array is not a pool checkout (a view or a derived array?)")
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.pool is not None:
            self.pool.checkin(self)


@dataclass(eq=False)  # identity: list.remove must not compare the numpy arrays
class _Buffer:
    base: np.ndarray  # uint8, the allocator's array
    handle: Any
    capacity: int
    pinned: bool
    ptr: int
    token: int = 0


@dataclass(frozen=True)
class PoolStats:
    """Counters of a :class:`PinnedPool`; byte counts are buffer capacities, ``alloc_ms`` time in the allocator."""

    allocations: int
    reuses: int
    checkouts: int
    checkins: int
    fallbacks: int
    frees: int
    bytes_held: int
    bytes_in_use: int
    bytes_free: int
    buffers_total: int
    buffers_free: int
    buffers_in_use: int
    peak_bytes_held: int
    alloc_ms: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _quote(x: Any) -> str:
    """A log field value in double quotes (``key="a b"``), as the cuzk log parsers read it."""
    return '"' + str(x).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _free_all(allocator: Any, free: list[_Buffer]) -> None:
    """weakref.finalize target: free what is still on the free list of a collected pool."""
    while free:
        b = free.pop()
        # a finalizer at interpreter shutdown or with the driver gone: nothing to report a failure to
        with contextlib.suppress(Exception):
            allocator.free(b.handle)


class PinnedPool:
    """A thread-safe pool of page-locked host buffers: best-fit checkout, largest-first shrink (curio ``pinned_pool.rs``).

    Args:
        allocator: ``alloc(nbytes) -> (uint8 array, handle)``, ``free(handle)``, optional ``pinned``; None:
            CudaHostAllocator with a GPU, else PageableAllocator.
        granularity: allocations rounded up to a multiple of this many bytes.
        max_bytes: cap on bytes held (free buffers are freed first; concurrent allocations may overshoot).

    Logs cuzk's ``pinned pool: ...`` lines on logger ``zkgpu.transfer.pinned_pool``."""

    def __init__(self, allocator: HostAllocator | None = None, *, granularity: int = 1, max_bytes: int | None = None) -> None:
        if allocator is None:
            if _cuda.gpu_available():
                allocator = CudaHostAllocator()
            else:
                allocator = PageableAllocator()
                log.info("pinned pool: no GPU, using pageable memory (PageableAllocator)")
        if granularity < 1:
            raise ValueError(f"granularity must be >= 1, got {granularity}")
        if max_bytes is not None and max_bytes < 0:
            raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")
        self.allocator = allocator
        self.granularity = int(granularity)
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._free: list[_Buffer] = []  # the free list (order irrelevant: best fit scans it)
        self._in_use: dict[int, _Buffer] = {}  # data pointer -> buffer
        self._fallback: dict[int, tuple[np.ndarray, int]] = {}  # data pointer -> (pageable base, token)
        self._tokens = itertools.count(1)
        self._closed = False
        self._c = dict(allocations=0, reuses=0, checkouts=0, checkins=0, fallbacks=0, frees=0, bytes_held=0, buffers_total=0, peak_bytes_held=0)
        self._alloc_ms = 0.0
        self._finalizer = weakref.finalize(self, _free_all, allocator, self._free)

    # -- properties ---------------------------------------------------------------------------

    @property
    def pinned(self) -> bool:
        """Whether this pool's allocator hands out page-locked memory."""
        return bool(getattr(self.allocator, "pinned", True))

    @property
    def closed(self) -> bool:
        return self._closed

    def stats(self) -> PoolStats:
        """A consistent snapshot of the counters (see :class:`PoolStats`)."""
        with self._lock:
            free_bytes = sum(b.capacity for b in self._free)
            in_use = sum(b.capacity for b in self._in_use.values())
            c = self._c
            return PoolStats(
                allocations=c["allocations"],
                reuses=c["reuses"],
                checkouts=c["checkouts"],
                checkins=c["checkins"],
                fallbacks=c["fallbacks"],
                frees=c["frees"],
                bytes_held=c["bytes_held"],
                bytes_in_use=in_use,
                bytes_free=free_bytes,
                buffers_total=c["buffers_total"],
                buffers_free=len(self._free),
                buffers_in_use=len(self._in_use),
                peak_bytes_held=c["peak_bytes_held"],
                alloc_ms=self._alloc_ms,
            )

    # -- checkout / checkin -------------------------------------------------------------------

    @staticmethod
    def _request(nbytes: int | None, shape: Any, dtype: Any) -> tuple[int, tuple[int, ...], np.dtype]:
        """Check a request before the pool's state changes (no buffer is marked in use for a
        request that cannot be handed out)."""
        try:
            dt = np.dtype(dtype)
        except TypeError as exc:
            raise TypeError(f"dtype {dtype!r} is not a numpy dtype: {exc}") from exc
        if dt.hasobject:
            raise TypeError(f"dtype {dt} holds Python objects; a pinned buffer holds plain numbers (e.g. uint64)")
        if dt.itemsize < 1:
            raise ValueError(f"dtype {dt!r} has item size 0; give a dtype with a size (e.g. uint8)")
        if shape is not None:
            shp = (int(shape),) if np.ndim(shape) == 0 else tuple(int(s) for s in shape)
            if any(s < 0 for s in shp):
                raise ValueError(f"shape must be non-negative, got {shp}")
            need = math.prod(shp) * dt.itemsize  # Python ints: no int64 wrap-around
            if nbytes is not None and int(nbytes) != need:
                raise ValueError(f"nbytes={nbytes} does not match shape {shp} of {dt} ({need} bytes)")
            nbytes = need
        if nbytes is None:
            raise ValueError("give nbytes or shape")
        if isinstance(nbytes, bool) or not isinstance(nbytes, (int, np.integer)):
            raise TypeError(f"nbytes must be an int, got {type(nbytes).__name__}")
        nbytes = int(nbytes)
        if nbytes < 1:
            raise ValueError(f"nbytes must be >= 1, got {nbytes}")
        if nbytes % dt.itemsize:
            raise ValueError(f"nbytes={nbytes} is not a multiple of the {dt} item size {dt.itemsize}")
        if shape is None:
            shp = (nbytes // dt.itemsize,)
        return nbytes, shp, dt

    def _hand_out(self, base: np.ndarray, nbytes: int, shape: tuple[int, ...], dtype: np.dtype, pinned: bool, capacity: int, token: int) -> PinnedArray:
        arr = base[:nbytes].view(dtype).reshape(shape).view(PinnedArray)
        arr.pool, arr.pinned, arr.capacity = self, pinned, capacity
        arr._origin, arr._token = self, token
        return arr

    def _take_best_fit(self, nbytes: int) -> _Buffer | None:
        """Under the lock: remove and return the smallest free buffer ≥ nbytes."""
        best = None
        for i, b in enumerate(self._free):
            if b.capacity >= nbytes and (best is None or b.capacity < self._free[best].capacity):
                best = i
        return None if best is None else self._free.pop(best)

    def _evict_for(self, size: int) -> list[_Buffer]:
        """Under the lock: pick free buffers (largest first) to free so that size fits under max_bytes."""
        victims: list[_Buffer] = []
        if self.max_bytes is None:
            return victims
        held = self._c["bytes_held"]
        for b in sorted(self._free, key=lambda b: b.capacity, reverse=True):
            if held + size <= self.max_bytes:
                break
            victims.append(b)
            held -= b.capacity
        for b in victims:
            self._free.remove(b)
            self._c["bytes_held"] -= b.capacity
            self._c["buffers_total"] -= 1
        return victims

    def _free_buffers(self, victims: Iterable[_Buffer], reason: str = "evictor") -> None:
        for b in victims:
            self.allocator.free(b.handle)
            with self._lock:
                self._c["frees"] += 1
                total, gib = self._c["buffers_total"], self._c["bytes_held"] / GIB
            log.info("pinned pool: freed buffer (%s) size_gib=%.3f total_buffers=%d total_gib=%.3f", reason, b.capacity / GIB, total, gib)

    def checkout(self, nbytes: int | None = None, *, shape: Any = None, dtype: Any = np.uint8, fallback: bool = True) -> PinnedArray:
        """A buffer of ``nbytes`` (or ``shape``) of ``dtype`` as a :class:`PinnedArray`: best fit, else a new
        allocation. If allocation fails, ``fallback`` gives a pageable buffer (``.pinned`` False, RuntimeWarning, cuzk's
        log line). Raises ValueError/TypeError: bad size/shape/dtype. PoolError: closed. PinnedAllocationError: failed,
        no fallback."""
        nbytes, shape, dt = self._request(nbytes, shape, dtype)
        size = -(-nbytes // self.granularity) * self.granularity
        with self._lock:
            if self._closed:
                raise PoolError("checkout from a closed PinnedPool")
            buf = self._take_best_fit(nbytes)
            if buf is not None:
                buf.token = next(self._tokens)
                self._in_use[buf.ptr] = buf
                self._c["reuses"] += 1
                self._c["checkouts"] += 1
                free_remaining = len(self._free)
            victims = [] if buf is not None else self._evict_for(size)
            over_cap = buf is None and self.max_bytes is not None and self._c["bytes_held"] + size > self.max_bytes
        if buf is not None:
            log.debug("pinned pool: checkout (reuse) size_gib=%.3f free_remaining=%d", buf.capacity / GIB, free_remaining)
            return self._hand_out(buf.base, nbytes, shape, dt, buf.pinned, buf.capacity, buf.token)
        self._free_buffers(victims)
        error: BaseException | None = None
        if over_cap:
            error = PinnedAllocationError(f"max_bytes={self.max_bytes} would be exceeded by {size} more bytes")
        else:
            t0 = time.perf_counter()
            try:
                base, handle = self.allocator.alloc(size)
            except Exception as exc:  # noqa: BLE001 - any allocator's failure (CUDARuntimeError, MemoryError, ...) is logged and takes the fallback
                error = exc
            alloc_ms = (time.perf_counter() - t0) * 1e3
        if error is None:
            base = np.asarray(base).reshape(-1).view(np.uint8)
            if base.nbytes < size:
                self.allocator.free(handle)
                raise PinnedAllocationError(f"allocator returned {base.nbytes} bytes for a request of {size}")
            buf = _Buffer(base=base, handle=handle, capacity=size, pinned=self.pinned, ptr=host_ptr(base), token=next(self._tokens))
            with self._lock:
                closed = self._closed
                if not closed:
                    c = self._c
                    c["allocations"] += 1
                    c["checkouts"] += 1
                    c["bytes_held"] += size
                    c["buffers_total"] += 1
                    c["peak_bytes_held"] = max(c["peak_bytes_held"], c["bytes_held"])
                    self._alloc_ms += alloc_ms
                    self._in_use[buf.ptr] = buf
                    total, gib = c["buffers_total"], c["bytes_held"] / GIB
            if closed:  # closed while we were allocating
                self.allocator.free(handle)
                raise PoolError("checkout from a closed PinnedPool")
            log.info("pinned pool: allocated new buffer size_gib=%.3f total_buffers=%d total_gib=%.3f", size / GIB, total, gib)
            return self._hand_out(base, nbytes, shape, dt, buf.pinned, size, buf.token)
        # allocation failed
        if not fallback:
            raise PinnedAllocationError(f"pinned pool: could not allocate {size} bytes: {error}") from error
        log.warning("pinned pool checkout FAILED — falling back to unpinned size_gib=%.3f error=%s", size / GIB, _quote(error))
        warnings.warn(f"pinned pool checkout of {size} bytes FAILED ({error}); falling back to unpinned (pageable) memory", RuntimeWarning, stacklevel=2)
        return self._fallback_buffer(nbytes, shape, dt)

    def _fallback_buffer(self, nbytes: int, shape: tuple[int, ...], dt: np.dtype) -> PinnedArray:
        base = np.empty(nbytes, dtype=np.uint8)
        token = next(self._tokens)
        with self._lock:
            self._fallback[host_ptr(base)] = (base, token)
            self._c["fallbacks"] += 1
            self._c["checkouts"] += 1
        return self._hand_out(base, nbytes, shape, dt, False, nbytes, token)

    def checkin(self, arr: np.ndarray) -> None:
        """Return a checked-out buffer to the free list (a fallback buffer is dropped). Raises TypeError: not a numpy
        array. PoolError: double checkin, not from this pool, or a view of a live checkout."""
        if not isinstance(arr, np.ndarray):
            raise TypeError(f"checkin expects the numpy array from checkout, got {type(arr).__name__}")
        ptr = host_ptr(arr)
        token = getattr(arr, "_token", None) if isinstance(arr, PinnedArray) else None
        to_free = None
        with self._lock:
            buf = self._in_use.get(ptr)
            fb = self._fallback.get(ptr)
            entry_token = buf.token if buf is not None else (fb[1] if fb is not None else None)
            if isinstance(arr, PinnedArray) and arr._origin is not None and arr._origin is not self:
                raise PoolError(f"array at 0x{ptr:x} was checked out from another pool")
            if token is not None and entry_token is not None and token != entry_token:
                raise PoolError(f"buffer at 0x{ptr:x} was already checked in (double checkin)")
            if entry_token is not None and not (isinstance(arr, PinnedArray) and arr.pool is self):
                raise PoolError(f"array at 0x{ptr:x} (shape {arr.shape}) is a view of a checkout, not the checkout: check in the array checkout returned")
            if buf is not None:
                del self._in_use[ptr]
                self._c["checkins"] += 1
                if self._closed:
                    to_free = buf
                    self._c["bytes_held"] -= buf.capacity
                    self._c["buffers_total"] -= 1
                else:
                    self._free.append(buf)
                free_buffers = len(self._free)
            elif ptr in self._fallback:
                del self._fallback[ptr]
                self._c["checkins"] += 1
            elif any(b.ptr == ptr for b in self._free):
                raise PoolError(f"buffer at 0x{ptr:x} is already checked in (double checkin)")
            else:
                raise PoolError(f"array at 0x{ptr:x} (shape {arr.shape}, {arr.dtype}) is not checked out from this pool")
        if isinstance(arr, PinnedArray):
            arr.pool = None  # a later `with`-exit of this object does nothing
        if buf is None:
            log.debug("pinned pool: checkin (unpinned fallback) size_gib=%.3f", arr.nbytes / GIB)
        elif to_free is not None:
            self._free_buffers([to_free], reason="closed pool")
        else:
            log.debug("pinned pool: checkin size_gib=%.3f free_buffers=%d", buf.capacity / GIB, free_buffers)

    def checkout_abc(self, num_constraints: int, *, limbs: int = 4, fallback: bool = True) -> PinnedAbc:
        """Check out a, b, c ``(num_constraints, limbs)`` uint64 together (cuzk ``PinnedAbcBuffers``), all or none
        pinned. Raises :class:`PinnedAllocationError` on failure without ``fallback``."""
        if isinstance(num_constraints, bool) or not isinstance(num_constraints, (int, np.integer)) or num_constraints < 1:
            raise ValueError(f"num_constraints must be a positive int, got {num_constraints!r}")
        if limbs < 1:
            raise ValueError(f"limbs must be >= 1, got {limbs}")
        shape = (int(num_constraints), int(limbs))
        taken: list[PinnedArray] = []
        try:
            for _ in range(3):
                taken.append(self.checkout(shape=shape, dtype=np.uint64, fallback=False))
        except PinnedAllocationError as exc:
            for t in taken:
                self.checkin(t)
            if not fallback:
                raise
            nbytes = shape[0] * shape[1] * 8
            log.warning("pinned pool checkout FAILED — falling back to unpinned size_gib=%.3f error=%s", 3 * nbytes / GIB, _quote(exc))
            warnings.warn(f"pinned pool checkout of a/b/c ({3 * nbytes} bytes) FAILED ({exc}); falling back to unpinned (pageable) memory", RuntimeWarning, stacklevel=2)
            bufs = [self._fallback_buffer(nbytes, shape, np.dtype(np.uint64)) for _ in range(3)]
            return PinnedAbc(self, *bufs)
        except BaseException:
            for t in taken:
                self.checkin(t)
            raise
        return PinnedAbc(self, *taken)

    # -- shrink / close -----------------------------------------------------------------------

    def shrink(self, target_bytes: int = 0) -> int:
        """Free free buffers, **largest first**, until at most ``target_bytes`` are held (or no
        free buffer is left; buffers in use are never freed). Returns the bytes freed."""
        if target_bytes < 0:
            raise ValueError(f"target_bytes must be >= 0, got {target_bytes}")
        with self._lock:
            victims = []
            for b in sorted(self._free, key=lambda b: b.capacity, reverse=True):
                if self._c["bytes_held"] <= target_bytes:
                    break
                victims.append(b)
                self._free.remove(b)
                self._c["bytes_held"] -= b.capacity
                self._c["buffers_total"] -= 1
        self._free_buffers(victims)
        return sum(b.capacity for b in victims)

    def close(self) -> None:
        """Free the free buffers and close the pool; checked-out ones are freed at checkin. Idempotent."""
        with self._lock:
            already = self._closed
            self._closed = True
            victims = list(self._free)
            self._free.clear()
            for b in victims:
                self._c["bytes_held"] -= b.capacity
                self._c["buffers_total"] -= 1
            outstanding = len(self._in_use)
        self._free_buffers(victims, reason="close")
        if outstanding and not already:
            warnings.warn(f"PinnedPool closed with {outstanding} buffer(s) still checked out; they are freed at checkin", RuntimeWarning, stacklevel=2)

    def __enter__(self) -> PinnedPool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        s = self.stats()
        return f"PinnedPool(pinned={self.pinned}, buffers={s.buffers_total}, free={s.buffers_free}, held={s.bytes_held} B, closed={self._closed})"


@dataclass
class PinnedAbc:
    """Three buffers a, b, c from :meth:`PinnedPool.checkout_abc`; ``with`` checks them all in."""

    pool: PinnedPool
    a: PinnedArray
    b: PinnedArray
    c: PinnedArray

    @property
    def pinned(self) -> bool:
        return bool(self.a.pinned and self.b.pinned and self.c.pinned)

    def __iter__(self) -> Iterator[PinnedArray]:
        return iter((self.a, self.b, self.c))

    def release(self) -> None:
        """Check a, b, c back in (cuzk ``release_abc``). Raises PoolError when called twice."""
        for arr in (self.a, self.b, self.c):
            self.pool.checkin(arr)

    def __enter__(self) -> PinnedAbc:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()
