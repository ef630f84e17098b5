"""Host-to-device (H2D) transfer paths named by mechanism, a pinned-buffer pool, and the H2D sweep.

Why this module exists
----------------------
cuzk's GPU phase ``ntt_msm_h`` was slow because the a/b/c vectors (3 x 4.17 GB per PoRep
partition) were copied from **pageable** heap memory: CUDA stages a pageable source through a
small pinned bounce buffer, so the copy runs at host-memcpy speed (1-4 GB/s under load in the
seed) and blocks the calling thread. The fix (cuzk ``pinned_pool.rs``, see
``/work/shared/reference/cuzk-pipeline.md`` §4) makes synthesis write a/b/c straight into
page-locked buffers from a pool, so the H2D copy is a plain DMA at PCIe speed.

Transfer paths
--------------
Every path copies the raw bytes of a C-contiguous host array into a C-contiguous device array of
the same size (``nbytes``; dtype and shape may differ, bytes are copied verbatim) and returns a
:class:`TransferResult`:

==================  ==========================================================================
``pageable``        ``dst.set(host, stream)``: CuPy calls ``cudaMemcpyAsync`` with the numpy
                    pointer. A **true pageable copy**: per the CUDA Runtime API section "API
                    synchronization behavior", for pageable-to-device copies "a stream sync is
                    performed before the copy is initiated" and the call returns only once the
                    whole source has been staged, so the host is blocked for ~the whole copy.
``pageable_memcpy`` the same mechanism through ``cupy.cuda.runtime.memcpyAsync`` directly.
``cupy_asarray``    ``cupy.asarray(host)``: **not** a pageable copy. CuPy (>= 7) copies a
                    pageable source on the CPU into a buffer from its pinned-memory pool and then
                    issues an async DMA from that buffer (``cupy/_core/core.pyx``
                    ``_array_default``). We measure that staging by wrapping CuPy's pinned
                    allocator during the call (``staging_bytes`` = pinned bytes requested).
``registered``      ``cudaHostRegister`` on the existing array, async DMA, ``cudaHostUnregister``;
                    ``register_ms`` / ``unregister_ms`` are reported separately (cuzk's
                    Phase 9 attempt, ``c4effc85``).
``pinned_staging``  host memcpy into a pinned staging buffer, then async DMA (what the driver
                    does internally for pageable memory, by hand, unchunked).
``pinned_pool``     the data already lives in a pinned :class:`PinnedPool` buffer (written there
                    by synthesis, as cuzk does after ``48dccd93``); just the async DMA.
``pinned_raw``      ``cudaMemcpyAsync`` from a ``cupyx.empty_pinned`` buffer: the raw pinned
                    baseline the pool path is compared with (:func:`pool_efficiency`).
==================  ==========================================================================

Timing (every path)
    ``host_ms``: ``time.perf_counter`` around the call only (how long the calling thread was
    blocked). ``stream_ms``: CUDA events on the copy's stream, the start event recorded just before
    the call on an idle (synchronized) stream and the end event just after it, so it runs from
    the start of the call until the copy has finished on the device, host staging included.
    ``wall_ms``: perf_counter from the start of the call until the end event completed.
    ``gbps = nbytes / stream_ms`` in **10^9 bytes per second** (decimal GB/s, as nvbandwidth and
    PCIe figures are quoted). ``overhead_ms``: pinning costs paid outside the stream window for
    this copy (``registered``: register + unregister; ``pinned_staging`` without a staging
    buffer: its allocation and free); ``effective_gbps = nbytes / (stream_ms + overhead_ms)``.

Also here
    :class:`PinnedPool` (best-fit pool of page-locked buffers after cuzk ``pinned_pool.rs``, with
    :meth:`PinnedPool.checkout_abc` after ``PinnedAbcBuffers``), :func:`bandwidth_sweep` (every
    path × sizes × fresh/reused buffers → a DataFrame of :data:`SWEEP_COLUMNS`),
    :func:`summarize_sweep`, :func:`pool_efficiency` (pool ≥ 90 % of raw pinned at ≥ 256 MiB),
    :func:`host_alloc_costs` (``cudaHostAlloc`` / ``cudaHostRegister`` cost per size) and
    ``zkgpu bench h2d`` (:data:`bench_command`).

Without a GPU, importing works, :class:`PinnedPool` works with :class:`PageableAllocator` or any
custom allocator, and every transfer function raises ``RuntimeError`` (from
:func:`zkgpu._cuda.cupy`).
"""

from __future__ import annotations

import ctypes
import itertools
import logging
import math
import mmap
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from . import _cuda
from .errors import CliError

__all__ = [
    "TransferResult",
    "pageable",
    "pageable_memcpy",
    "cupy_asarray",
    "registered",
    "pinned_staging",
    "pinned_pool",
    "pinned_raw",
    "TRANSFER_PATHS",
    "PATHS",
    "is_pinned",
    "HostAllocator",
    "CudaHostAllocator",
    "PageableAllocator",
    "PinnedArray",
    "PinnedAbc",
    "PoolStats",
    "PoolError",
    "PinnedAllocationError",
    "PinnedPool",
    "DEFAULT_SIZES",
    "SWEEP_COLUMNS",
    "bandwidth_sweep",
    "summarize_sweep",
    "pool_efficiency",
    "host_alloc_costs",
    "bench_command",
]

log = logging.getLogger("zkgpu.transfer")

GIB = 1 << 30
MIB = 1 << 20

# CUDA enum values (cuda_runtime_api.h; also cupy.cuda.runtime.*), written here so that the
# module imports without CuPy.
_MEMCPY_HOST_TO_DEVICE = 1  # cudaMemcpyHostToDevice
_HOST_ALLOC_PORTABLE = 1  # cudaHostAllocPortable (cuzk's flag)
_HOST_REGISTER_DEFAULT = 0  # cudaHostRegisterDefault
_MEMORY_TYPE_HOST = 1  # cudaMemoryTypeHost (page-locked host memory, hostAlloc'd or registered)


# --------------------------------------------------------------------------------------------
# Results and helpers
# --------------------------------------------------------------------------------------------


@dataclass
class TransferResult:
    """One H2D copy.

    Attributes:
        path: the mechanism (one of :data:`PATHS`).
        nbytes: bytes copied.
        host_ms: ms the calling thread spent inside the call (``time.perf_counter``).
        stream_ms: ms between CUDA events recorded on the copy's stream just before and just
            after the call (the stream was idle before, so this is call start → copy finished).
        wall_ms: ms from the call start until the end event completed (perf_counter).
        gbps: ``nbytes / stream_ms`` in 10^9 bytes/s.
        overhead_ms: pinning costs paid outside the stream window (see the module docstring).
        extra: path-specific costs in ms or bytes: ``register_ms``, ``unregister_ms``,
            ``stage_ms`` (host memcpy into pinned staging), ``alloc_ms``/``free_ms`` (a staging
            buffer allocated by the call), ``staging_bytes`` (CuPy pinned staging requested).
        src_pinned: whether the host source was page-locked when the DMA ran.
        dst: the device array holding the copy (CuPy ndarray; not in repr).
    """

    path: str
    nbytes: int
    host_ms: float
    stream_ms: float
    wall_ms: float
    gbps: float
    overhead_ms: float = 0.0
    extra: dict[str, float] = field(default_factory=dict)
    src_pinned: bool = False
    dst: Any = field(default=None, repr=False, compare=False)

    @property
    def effective_gbps(self) -> float:
        """``nbytes / (stream_ms + overhead_ms)`` in 10^9 bytes/s."""
        return _gbps(self.nbytes, self.stream_ms + self.overhead_ms)

    def as_row(self) -> dict[str, Any]:
        """A flat dict (no ``dst``) for a DataFrame row."""
        row = {k: v for k, v in asdict(self).items() if k not in ("dst", "extra")}
        row["effective_gbps"] = self.effective_gbps
        row.update(self.extra)
        return row


def _gbps(nbytes: int, ms: float) -> float:
    return float(nbytes) / (ms * 1e6) if ms > 0 else math.nan


def _host_bytes(host: Any, name: str = "host") -> np.ndarray:
    """The bytes of a C-contiguous numpy array as a 1-D uint8 view (no copy)."""
    if not isinstance(host, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray, got {type(host).__name__}")
    if not host.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous (shape {host.shape}, strides {host.strides})")
    if host.nbytes == 0:
        raise ValueError(f"{name} is empty (shape {host.shape}); nothing to copy")
    return host.reshape(-1).view(np.uint8)


def _ptr(arr: np.ndarray) -> int:
    return int(arr.__array_interface__["data"][0])


def _device_dst(cp: Any, dst: Any, nbytes: int) -> Any:
    """``dst`` as a 1-D uint8 device view of ``nbytes`` bytes (allocated when None)."""
    if dst is None:
        return cp.empty(nbytes, dtype=cp.uint8)
    if not isinstance(dst, cp.ndarray):
        raise TypeError(f"dst must be a cupy.ndarray, got {type(dst).__name__}")
    if not dst.flags.c_contiguous:
        raise ValueError(f"dst must be C-contiguous (shape {dst.shape})")
    if dst.nbytes != nbytes:
        raise ValueError(f"dst has {dst.nbytes} bytes (shape {dst.shape}, {dst.dtype}) but the host array has {nbytes}")
    return dst.reshape(-1).view(cp.uint8)


def is_pinned(arr: np.ndarray) -> bool:
    """True when ``arr``'s memory is page-locked for CUDA (``cudaHostAlloc``'d or registered).

    Uses ``cudaPointerGetAttributes`` (type ``cudaMemoryTypeHost``). False without a GPU.
    """
    if not _cuda.gpu_available() or not isinstance(arr, np.ndarray) or arr.nbytes == 0:
        return False
    cp = _cuda.cupy()
    try:
        return int(cp.cuda.runtime.pointerGetAttributes(_ptr(arr)).type) == _MEMORY_TYPE_HOST
    except Exception:  # older drivers report an error for unregistered pointers
        return False


class _Timer:
    """CUDA events + perf_counter around one call on an idle stream."""

    def __init__(self, cp: Any, stream: Any) -> None:
        self.cp, self.stream = cp, stream
        self.host_ms = self.stream_ms = self.wall_ms = math.nan

    def __enter__(self) -> _Timer:
        self.stream.synchronize()
        self.start, self.end = self.cp.cuda.Event(), self.cp.cuda.Event()
        self.start.record(self.stream)
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        t1 = time.perf_counter()
        self.end.record(self.stream)
        self.end.synchronize()
        t2 = time.perf_counter()
        if exc_type is None:
            self.host_ms = (t1 - self.t0) * 1e3
            self.wall_ms = (t2 - self.t0) * 1e3
            self.stream_ms = float(self.cp.cuda.get_elapsed_time(self.start, self.end))


def _result(path: str, nbytes: int, t: _Timer, dst: Any, *, overhead_ms: float = 0.0, extra: dict | None = None, src_pinned: bool = False) -> TransferResult:
    return TransferResult(
        path=path,
        nbytes=nbytes,
        host_ms=t.host_ms,
        stream_ms=t.stream_ms,
        wall_ms=t.wall_ms,
        gbps=_gbps(nbytes, t.stream_ms),
        overhead_ms=overhead_ms,
        extra=dict(extra or {}),
        src_pinned=src_pinned,
        dst=dst,
    )


def _setup(host: Any, dst: Any, stream: Any) -> tuple[Any, np.ndarray, Any, Any]:
    cp = _cuda.cupy()  # RuntimeError without a GPU
    src = _host_bytes(host)
    d = _device_dst(cp, dst, src.nbytes)
    stream = stream if stream is not None else cp.cuda.get_current_stream()
    return cp, src, d, stream


def _out(dst: Any, d: Any) -> Any:
    """Return the caller's dst when given, else the uint8 array we allocated."""
    return dst if dst is not None else d


# --------------------------------------------------------------------------------------------
# Transfer paths
# --------------------------------------------------------------------------------------------


def pageable(host: np.ndarray, dst: Any = None, *, stream: Any = None) -> TransferResult:
    """Pageable H2D: ``dst.set(host, stream)`` from an ordinary (pageable) numpy array.

    Args:
        host: C-contiguous numpy array, any dtype/shape (its ``nbytes`` are copied).
        dst: C-contiguous CuPy array with the same ``nbytes`` (any dtype/shape), or None to
            allocate a uint8 device array of ``host.nbytes`` (outside the timed region).
        stream: CuPy stream (default: the current stream).

    Returns:
        :class:`TransferResult` with ``path="pageable"``; ``host_ms`` ≈ ``stream_ms`` because the
        call blocks until the source has been staged (CUDA Runtime API, "API synchronization
        behavior": pageable-to-device copies sync the stream and return after staging).

    Raises:
        RuntimeError: no GPU. TypeError/ValueError: not numpy / not contiguous / empty / size
        mismatch with ``dst``.
    """
    cp, src, d, stream = _setup(host, dst, stream)
    pinned = is_pinned(src)
    with _Timer(cp, stream) as t:
        d.set(src, stream=stream)
    return _result("pageable", src.nbytes, t, _out(dst, d), src_pinned=pinned)


def pageable_memcpy(host: np.ndarray, dst: Any = None, *, stream: Any = None) -> TransferResult:
    """Pageable H2D through ``cupy.cuda.runtime.memcpyAsync`` with the raw numpy pointer.

    Same mechanism and arguments as :func:`pageable` (``cudaMemcpyAsync`` from pageable memory is
    staged by the driver and blocks the host); ``path="pageable_memcpy"``.
    """
    cp, src, d, stream = _setup(host, dst, stream)
    pinned = is_pinned(src)
    with _Timer(cp, stream) as t:
        cp.cuda.runtime.memcpyAsync(d.data.ptr, _ptr(src), src.nbytes, _MEMCPY_HOST_TO_DEVICE, stream.ptr)
    return _result("pageable_memcpy", src.nbytes, t, _out(dst, d), src_pinned=pinned)


class _CountingPinnedAllocator:
    """Wraps CuPy's default pinned pool allocator to record the sizes CuPy requests."""

    def __init__(self, cp: Any) -> None:
        self.cp = cp
        self.pool = cp.get_default_pinned_memory_pool()
        self.sizes: list[int] = []

    def __call__(self, size: int) -> Any:
        self.sizes.append(int(size))
        return self.pool.malloc(size)

    def __enter__(self) -> _CountingPinnedAllocator:
        self.cp.cuda.set_pinned_memory_allocator(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        # CuPy's default (cupy/__init__.py): the global PinnedMemoryPool's malloc.
        self.cp.cuda.set_pinned_memory_allocator(self.pool.malloc)


def cupy_asarray(host: np.ndarray, dst: None = None, *, stream: Any = None, trace_staging: bool = True) -> TransferResult:
    """``cupy.asarray(host)`` on ``stream``: CuPy stages a pageable source through pinned memory.

    CuPy allocates the device array itself (from its device memory pool, inside the timed call),
    copies a pageable source on the CPU into a pinned buffer from its pinned-memory pool, then
    issues an async DMA (``cupy/_core/core.pyx`` ``_array_default``; a source that is already
    pinned is DMA'd directly). With ``trace_staging`` CuPy's pinned allocator is wrapped during the
    call (then reset to CuPy's default pool allocator) and ``extra["staging_bytes"]`` is the
    pinned staging CuPy requested (its pool then rounds that up to a power of two) — 0 means no
    staging. The allocator is process-wide: pass ``trace_staging=False`` when other threads
    allocate pinned memory through CuPy at the same time.

    Args:
        host: C-contiguous numpy array (copied with its own dtype and shape).
        dst: must be None (CuPy allocates the destination; a ValueError otherwise).
        stream: CuPy stream (default: the current stream).

    Returns:
        :class:`TransferResult` (``path="cupy_asarray"``; ``dst`` is the new CuPy array, same
        dtype/shape as ``host``).
    """
    if dst is not None:
        raise ValueError("cupy_asarray allocates its own destination; pass dst=None")
    cp = _cuda.cupy()
    src = _host_bytes(host)
    stream = stream if stream is not None else cp.cuda.get_current_stream()
    pinned = is_pinned(src)
    counter = _CountingPinnedAllocator(cp) if trace_staging else None
    with _Timer(cp, stream) as t, stream:
        if counter is not None:
            with counter:
                out = cp.asarray(host)
        else:
            out = cp.asarray(host)
    extra = {"staging_bytes": float(sum(counter.sizes))} if counter is not None else {}
    return _result("cupy_asarray", src.nbytes, t, out, extra=extra, src_pinned=pinned)


def registered(host: np.ndarray, dst: Any = None, *, stream: Any = None, flags: int = _HOST_REGISTER_DEFAULT) -> TransferResult:
    """Pin the existing array in place (``cudaHostRegister``), DMA it, then ``cudaHostUnregister``.

    The registration and unregistration are timed separately with perf_counter and reported as
    ``extra["register_ms"]`` / ``extra["unregister_ms"]`` and in ``overhead_ms``; ``stream_ms``
    covers the async copy only. The array is always unregistered, also when the copy fails.

    Args:
        host: C-contiguous pageable numpy array (not already page-locked).
        dst, stream: as :func:`pageable`.
        flags: ``cudaHostRegister`` flags (0 = default, 1 = portable).

    Raises:
        ValueError: ``host`` is already page-locked (a pool or ``empty_pinned`` buffer); plus the
        errors of :func:`pageable`.
    """
    cp, src, d, stream = _setup(host, dst, stream)
    if is_pinned(src):
        raise ValueError("registered: the host array is already page-locked (cudaHostRegister would fail); use pinned_pool/pinned_raw")
    rt = cp.cuda.runtime
    ptr, n = _ptr(src), src.nbytes
    t0 = time.perf_counter()
    rt.hostRegister(ptr, n, flags)
    register_ms = (time.perf_counter() - t0) * 1e3
    try:
        with _Timer(cp, stream) as t:
            rt.memcpyAsync(d.data.ptr, ptr, n, _MEMCPY_HOST_TO_DEVICE, stream.ptr)
    finally:
        stream.synchronize()
        t0 = time.perf_counter()
        rt.hostUnregister(ptr)
        unregister_ms = (time.perf_counter() - t0) * 1e3
    extra = {"register_ms": register_ms, "unregister_ms": unregister_ms}
    return _result("registered", n, t, _out(dst, d), overhead_ms=register_ms + unregister_ms, extra=extra, src_pinned=True)


def pinned_staging(host: np.ndarray, dst: Any = None, *, stream: Any = None, staging: np.ndarray | None = None) -> TransferResult:
    """Copy on the host into a pinned staging buffer (``numpy.copyto``), then an async DMA.

    Args:
        host: C-contiguous pageable numpy array.
        dst, stream: as :func:`pageable`.
        staging: a page-locked numpy array with at least ``host.nbytes`` bytes (e.g. a
            :class:`PinnedPool` checkout), reused across calls. None: one is allocated with
            ``cudaHostAlloc`` for this call and freed after (``extra["alloc_ms"]``,
            ``extra["free_ms"]``, both in ``overhead_ms``).

    ``extra["stage_ms"]`` is the host memcpy; ``stream_ms`` covers memcpy + DMA.

    Raises:
        ValueError: ``staging`` too small, not contiguous, or not page-locked; plus the errors
        of :func:`pageable`.
    """
    cp, src, d, stream = _setup(host, dst, stream)
    n = src.nbytes
    extra: dict[str, float] = {}
    own = None
    if staging is None:
        alloc = CudaHostAllocator()
        t0 = time.perf_counter()
        buf, own = alloc.alloc(n)
        extra["alloc_ms"] = (time.perf_counter() - t0) * 1e3
    else:
        if not isinstance(staging, np.ndarray) or not staging.flags.c_contiguous:
            raise ValueError("staging must be a C-contiguous numpy array")
        if staging.nbytes < n:
            raise ValueError(f"staging has {staging.nbytes} bytes, the host array {n}")
        if not is_pinned(staging):
            raise ValueError("staging is not page-locked (use a PinnedPool checkout or cupyx.empty_pinned)")
        buf = staging.reshape(-1).view(np.uint8)
    try:
        stage = buf[:n]
        with _Timer(cp, stream) as t:
            s0 = time.perf_counter()
            np.copyto(stage, src)
            extra["stage_ms"] = (time.perf_counter() - s0) * 1e3
            cp.cuda.runtime.memcpyAsync(d.data.ptr, _ptr(stage), n, _MEMCPY_HOST_TO_DEVICE, stream.ptr)
    finally:
        if own is not None:
            stream.synchronize()
            t0 = time.perf_counter()
            CudaHostAllocator().free(own)
            extra["free_ms"] = (time.perf_counter() - t0) * 1e3
    overhead = extra.get("alloc_ms", 0.0) + extra.get("free_ms", 0.0)
    return _result("pinned_staging", n, t, _out(dst, d), overhead_ms=overhead, extra=extra, src_pinned=False)


def _pinned_dma(path: str, buf: np.ndarray, dst: Any, stream: Any, require_pinned: bool) -> TransferResult:
    cp, src, d, stream = _setup(buf, dst, stream)
    pinned = is_pinned(src)
    if require_pinned and not pinned:
        raise ValueError(f"{path}: the host buffer is not page-locked (a pageable fallback buffer?); pass require_pinned=False to copy anyway")
    with _Timer(cp, stream) as t:
        cp.cuda.runtime.memcpyAsync(d.data.ptr, _ptr(src), src.nbytes, _MEMCPY_HOST_TO_DEVICE, stream.ptr)
    return _result(path, src.nbytes, t, _out(dst, d), src_pinned=pinned)


def pinned_pool(buf: np.ndarray, dst: Any = None, *, stream: Any = None, require_pinned: bool = True) -> TransferResult:
    """DMA from data that already lives in a pinned :class:`PinnedPool` buffer (cuzk after 48dccd93).

    ``cudaMemcpyAsync`` from the buffer; returns as soon as the copy is queued (``host_ms`` tiny).

    Args:
        buf: the checked-out array (any dtype/shape view), C-contiguous.
        dst, stream: as :func:`pageable`.
        require_pinned: raise when ``buf`` is not page-locked (e.g. a pool fallback buffer).

    Raises:
        ValueError: ``buf`` not page-locked (with ``require_pinned``); plus :func:`pageable`'s.
    """
    return _pinned_dma("pinned_pool", buf, dst, stream, require_pinned)


def pinned_raw(buf: np.ndarray, dst: Any = None, *, stream: Any = None, require_pinned: bool = True) -> TransferResult:
    """Raw pinned baseline: ``cudaMemcpyAsync`` from a ``cupyx.empty_pinned`` buffer.

    Same arguments and errors as :func:`pinned_pool`; used as the reference of
    :func:`pool_efficiency`.
    """
    return _pinned_dma("pinned_raw", buf, dst, stream, require_pinned)


TRANSFER_PATHS: dict[str, Callable[..., TransferResult]] = {
    "pageable": pageable,
    "pageable_memcpy": pageable_memcpy,
    "cupy_asarray": cupy_asarray,
    "registered": registered,
    "pinned_staging": pinned_staging,
    "pinned_pool": pinned_pool,
    "pinned_raw": pinned_raw,
}
PATHS: tuple[str, ...] = tuple(TRANSFER_PATHS)


# --------------------------------------------------------------------------------------------
# Allocators and the pinned pool
# --------------------------------------------------------------------------------------------


class HostAllocator(Protocol):
    """What :class:`PinnedPool` needs: ``alloc(nbytes) -> (uint8 array of >= nbytes, handle)``,
    ``free(handle)``, and ``pinned`` (whether its memory is page-locked)."""

    pinned: bool

    def alloc(self, nbytes: int) -> tuple[np.ndarray, Any]: ...

    def free(self, handle: Any) -> None: ...


def _array_at(ptr: int, nbytes: int) -> np.ndarray:
    """A 1-D uint8 numpy array over ``nbytes`` at address ``ptr`` (does not own the memory)."""
    return np.frombuffer((ctypes.c_ubyte * nbytes).from_address(ptr), dtype=np.uint8)


class CudaHostAllocator:
    """Page-locked memory from ``cudaHostAlloc(nbytes, flags)`` / ``cudaFreeHost`` (CuPy runtime).

    ``flags`` defaults to ``cudaHostAllocPortable`` (1), as cuzk ``pinned_pool.rs``. The handle is
    the host pointer. ``alloc`` raises RuntimeError without a GPU and CuPy's CUDARuntimeError when
    the driver cannot pin that much memory.
    """

    pinned = True

    def __init__(self, flags: int = _HOST_ALLOC_PORTABLE) -> None:
        self.flags = flags

    def alloc(self, nbytes: int) -> tuple[np.ndarray, int]:
        cp = _cuda.cupy()
        ptr = int(cp.cuda.runtime.hostAlloc(nbytes, self.flags))
        return _array_at(ptr, nbytes), ptr

    def free(self, handle: int) -> None:
        _cuda.cupy().cuda.runtime.freeHost(handle)


class PageableAllocator:
    """Ordinary pageable numpy memory (``numpy.empty``): the CPU stand-in for :class:`CudaHostAllocator`."""

    pinned = False

    def alloc(self, nbytes: int) -> tuple[np.ndarray, Any]:
        arr = np.empty(nbytes, dtype=np.uint8)
        return arr, arr

    def free(self, handle: Any) -> None:
        pass  # numpy frees it when the last reference goes


class PoolError(ValueError):
    """Misuse of a :class:`PinnedPool`: checking in twice, a foreign array, a closed pool."""


class PinnedAllocationError(MemoryError):
    """The pool's allocator could not provide a buffer (and fallback was not allowed)."""


class PinnedArray(np.ndarray):
    """A numpy array handed out by :meth:`PinnedPool.checkout`; also a context manager.

    ``with pool.checkout(n) as buf:`` checks the buffer back in on exit (also on an exception).
    Attributes: ``pinned`` (False for a pageable fallback buffer), ``capacity`` (bytes of the
    underlying pool buffer, ≥ ``nbytes``), ``pool``. Views and ufunc results derived from it are
    plain arrays as far as the pool is concerned (their ``pool`` is None).
    """

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
    """Counters of a :class:`PinnedPool` (bytes are buffer capacities).

    allocations: buffers allocated; reuses: checkouts served from the free list; checkouts /
    checkins: calls that handed out / took back a buffer (fallbacks included); fallbacks:
    checkouts served with pageable memory after the allocator failed; frees: buffers freed
    (shrink/close); bytes_held: capacity of all pool buffers (free + in use); bytes_in_use:
    capacity of checked-out pool buffers; bytes_free; buffers_total; buffers_free; buffers_in_use;
    peak_bytes_held; alloc_ms: total time spent in the allocator.
    """

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
        try:
            allocator.free(b.handle)
        except Exception:  # interpreter shutdown, driver gone
            pass


class PinnedPool:
    """A pool of page-locked host buffers with best-fit checkout (cuzk ``pinned_pool.rs``).

    Design (``/work/shared/reference/cuzk-pipeline.md`` §4): a lock-protected free list;
    :meth:`checkout` takes the **smallest free buffer ≥ the request** (best fit), otherwise
    allocates a new one (``cudaHostAlloc(size, cudaHostAllocPortable)`` with the default
    allocator); :meth:`checkin` returns it to the free list; :meth:`shrink` frees the **largest
    free buffers first** until at most ``target_bytes`` are held (cuzk's evictor);
    :meth:`close` frees everything. Allocation happens outside the lock (``cudaHostAlloc`` of GBs
    takes ~1 s and serializes in the driver), so other threads can still reuse free buffers.

    Args:
        allocator: an object with ``alloc(nbytes) -> (uint8 numpy array, handle)``,
            ``free(handle)`` and optionally ``pinned`` (default True). None: a
            :class:`CudaHostAllocator` when a GPU is present, else a :class:`PageableAllocator`
            (logged).
        granularity: allocations are rounded up to a multiple of this many bytes (1 = exact, as
            cuzk; e.g. 2 MiB makes slightly different sizes share buffers).
        max_bytes: optional cap on bytes held; a checkout that would exceed it first frees
            (largest first) free buffers, then is treated like an allocation failure. Checked
            before allocating, so concurrent allocations can overshoot it by a buffer each.

    Logging (logger ``zkgpu.transfer``, cuzk's messages with ``key=value`` fields):
    ``pinned pool: checkout (reuse) size_gib= free_remaining=`` (DEBUG),
    ``pinned pool: allocated new buffer size_gib= total_buffers= total_gib=`` (INFO),
    ``pinned pool: checkin size_gib= free_buffers=`` (DEBUG),
    ``pinned pool: freed buffer (evictor) size_gib= total_buffers= total_gib=`` (INFO),
    ``pinned pool checkout FAILED — falling back to unpinned size_gib= error=`` (WARNING, also a
    ``warnings.warn`` of ``RuntimeWarning``).

    Buffers checked out are :class:`PinnedArray` views of the pool buffer. Never keep a view after
    the buffer is checked in or the pool is closed: the memory is reused or freed. A buffer that is
    never checked in stays in use until :meth:`close`. Thread-safe.
    """

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
            shp = (int(shape),) if np.isscalar(shape) else tuple(int(s) for s in shape)
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
        """Hand out a buffer of ``nbytes`` bytes as a :class:`PinnedArray` (``dtype``, ``shape``).

        Best fit from the free list, else a new allocation of ``nbytes`` rounded up to
        ``granularity``. When the allocator fails (or ``max_bytes`` would be exceeded): with
        ``fallback`` a pageable ``numpy.empty`` buffer is returned (``.pinned`` False), with a
        ``RuntimeWarning`` and cuzk's log line ``pinned pool checkout FAILED — falling back to
        unpinned``; without it :class:`PinnedAllocationError` is raised.

        Args:
            nbytes: bytes wanted (≥ 1; a multiple of the dtype's item size). May be omitted when
                ``shape`` is given.
            shape: shape of the returned array (default ``(nbytes // itemsize,)``).
            dtype: numpy dtype of the returned array (default uint8).
            fallback: allow the pageable fallback.

        Returns:
            A :class:`PinnedArray` (usable as ``with pool.checkout(n) as buf:``).

        Raises:
            ValueError/TypeError: bad size/shape/dtype. PoolError: the pool is closed.
            PinnedAllocationError: allocation failed and ``fallback`` is False.
        """
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
            except Exception as exc:  # CUDARuntimeError (cudaErrorMemoryAllocation), MemoryError, ...
                error = exc
            alloc_ms = (time.perf_counter() - t0) * 1e3
        if error is None:
            base = np.asarray(base).reshape(-1).view(np.uint8)
            if base.nbytes < size:
                self.allocator.free(handle)
                raise PinnedAllocationError(f"allocator returned {base.nbytes} bytes for a request of {size}")
            buf = _Buffer(base=base, handle=handle, capacity=size, pinned=self.pinned, ptr=_ptr(base), token=next(self._tokens))
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
            self._fallback[_ptr(base)] = (base, token)
            self._c["fallbacks"] += 1
            self._c["checkouts"] += 1
        return self._hand_out(base, nbytes, shape, dt, False, nbytes, token)

    def checkin(self, arr: np.ndarray) -> None:
        """Return a checked-out buffer (exactly the array :meth:`checkout` returned) to the free
        list; a pageable fallback buffer is just dropped.

        Raises:
            TypeError: not a numpy array.
            PoolError: the buffer was already checked in (double checkin; detected exactly for the
                array :meth:`checkout` returned, even when its memory was handed out again), it is
                not from this pool, or it is a view of (or another array over) a live checkout,
                which would free the buffer while the checkout is still in use.
        """
        if not isinstance(arr, np.ndarray):
            raise TypeError(f"checkin expects the numpy array from checkout, got {type(arr).__name__}")
        ptr = _ptr(arr)
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
        """Check out a, b, c together, as cuzk ``PinnedAbcBuffers::checkout``.

        Each is a ``(num_constraints, limbs)`` uint64 array (Fr host layout: 32 bytes per element for
        ``limbs=4``). If any of the three cannot be allocated pinned, those already taken are
        checked back in (rollback); then with ``fallback`` all three are pageable ``numpy.empty``
        arrays (with the warning and cuzk's FAILED log line), without it
        :class:`PinnedAllocationError` is raised.

        Returns:
            :class:`PinnedAbc` (``.a``, ``.b``, ``.c``, ``.pinned``); ``with`` checks all three in.
        """
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
        """Free every free buffer now and mark the pool closed (no more checkouts).

        Buffers still checked out are freed when they are checked in (freeing them now would
        leave live numpy views over freed memory, which crashes the process); a warning says how
        many. Idempotent.
        """
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


# --------------------------------------------------------------------------------------------
# The bandwidth sweep
# --------------------------------------------------------------------------------------------

#: Default sweep sizes: 1 MiB, 4 MiB, 16 MiB, 64 MiB, 256 MiB, 1 GiB, 4 GiB (powers of 4).
DEFAULT_SIZES: tuple[int, ...] = tuple(1 << s for s in range(20, 33, 2))

#: Columns of :func:`bandwidth_sweep` (one row per timed copy). Costs not paid by a path are NaN.
SWEEP_COLUMNS: tuple[str, ...] = (
    "path",  # one of PATHS
    "size_bytes",  # bytes copied
    "fresh_buffer",  # bool, see bandwidth_sweep
    "repeat",  # 0 .. repeat-1 (warm-up copies are not recorded)
    "host_ms",  # calling thread blocked in the copy call (perf_counter)
    "stream_ms",  # CUDA events: call start -> copy finished
    "wall_ms",  # perf_counter: call start -> end event completed
    "gbps",  # size_bytes / stream_ms, 10^9 B/s
    "overhead_ms",  # pinning paid for this copy outside the stream window
    "effective_gbps",  # size_bytes / (stream_ms + overhead_ms)
    "alloc_ms",  # time to obtain the source buffer for this copy (fresh buffers, pool checkouts)
    "touch_ms",  # writing the data into a fresh source buffer (its first touch; not in any *_gbps)
    "stage_ms",  # pinned_staging: host memcpy into the staging buffer
    "register_ms",  # registered: cudaHostRegister
    "unregister_ms",  # registered: cudaHostUnregister
    "staging_bytes",  # cupy_asarray: pinned staging bytes CuPy requested
    "src_pinned",  # the DMA source was page-locked
    "verified",  # the device bytes were compared with the source after this copy (True) or not checked (NaN)
)

_TILE = 1 << 20  # the test pattern repeats every 1 MiB


class _PageableBuffer:
    """A pageable uint8 numpy array over its own anonymous ``mmap``: its pages are untouched (not
    yet backed by RAM) until first written, and go back to the OS at :meth:`close` — unlike a
    ``numpy.empty`` that malloc may serve from already-touched heap pages."""

    def __init__(self, nbytes: int) -> None:
        self._mm = mmap.mmap(-1, nbytes)
        self.array = np.frombuffer(self._mm, dtype=np.uint8)

    def close(self) -> None:
        self.array = None
        try:
            self._mm.close()
        except BufferError:  # a view is still alive somewhere: the mapping goes with it
            pass


def _pattern(seed: int = 0x5EED) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, _TILE, dtype=np.uint8)


def _fill(buf: np.ndarray, tile: np.ndarray) -> None:
    """Write the repeating pattern into a 1-D uint8 buffer (first touch of a fresh buffer)."""
    n = buf.nbytes
    full = n // _TILE
    if full:
        buf[: full * _TILE].reshape(full, _TILE)[:] = tile
    rem = n - full * _TILE
    if rem:
        buf[full * _TILE :] = tile[:rem]


def _device_matches(cp: Any, d: Any, tile_d: Any, nbytes: int) -> bool:
    """Compare a 1-D uint8 device array with the repeating pattern, 256 MiB at a time."""
    d = d.reshape(-1).view(cp.uint8)
    full = nbytes // _TILE
    rows = 256
    for r0 in range(0, full, rows):
        r1 = min(full, r0 + rows)
        if not bool((d[r0 * _TILE : r1 * _TILE].reshape(r1 - r0, _TILE) == tile_d).all()):
            return False
    rem = nbytes - full * _TILE
    if rem and not bool((d[full * _TILE :] == tile_d[:rem]).all()):
        return False
    return True


def _parse_sizes(sizes: Iterable[int]) -> list[int]:
    out = []
    for s in sizes:
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 1:
            raise ValueError(f"sizes must be positive ints (bytes), got {s!r}")
        out.append(int(s))
    if not out:
        raise ValueError("sizes is empty")
    return sorted(out)


def bandwidth_sweep(
    sizes: Iterable[int] = DEFAULT_SIZES,
    paths: Sequence[str] = PATHS,
    fresh: Sequence[bool] = (False, True),
    repeat: int = 5,
    warmup: int = 1,
    *,
    verify: bool | int = True,
    time_budget_s: float | None = None,
    progress: bool = False,
) -> pd.DataFrame:
    """H2D bandwidth of every path over sizes, with reused and fresh host buffers.

    For each size (ascending), path and ``fresh`` value: ``warmup`` untimed copies, then
    ``repeat`` recorded copies into the same device buffer (CuPy ``empty``; ``cupy_asarray``
    allocates its own) on one non-blocking stream.

    What "fresh" means, exactly:
        ``fresh_buffer=False`` (reused): the source buffer is allocated and filled with the test
        pattern once per (size, path) before the warm-up, and every copy reads it again (its pages
        are resident; pinned buffers stay pinned). ``fresh_buffer=True``: every copy (warm-up
        included) gets a newly allocated source buffer whose pages have never been touched, fills
        it (this write is its first touch, page faults included; ``touch_ms``), copies it and frees
        it. For the pageable-source paths (``pageable``, ``pageable_memcpy``, ``cupy_asarray``,
        ``registered``, ``pinned_staging``) every source buffer, reused or fresh, is a numpy array
        over its own anonymous ``mmap`` (so a fresh one really has never-touched pages, which
        ``numpy.empty`` cannot promise: malloc may recycle touched heap pages below its mmap
        threshold), unmapped when freed; ``registered`` then also pins fresh pages; ``pinned_staging`` keeps its
        reused staging buffer (from a :class:`PinnedPool`). For ``pinned_pool`` the pool is emptied
        first so the checkout does a new ``cudaHostAlloc``; for ``pinned_raw`` CuPy's pinned pool is
        emptied so ``cupyx.empty_pinned`` allocates. That allocation is ``alloc_ms`` and counts in
        ``overhead_ms``/``effective_gbps`` (it is the cost a pool avoids).

    Args:
        sizes: bytes per copy (default :data:`DEFAULT_SIZES`, 1 MiB … 4 GiB; pass smaller lists
            for quick runs). Host memory needed ≈ 4 × the largest size (source, pool buffer, CuPy
            pinned buffer, staging), device memory ≈ 2 ×.
        paths: subset of :data:`PATHS`.
        fresh: which of False (reused) / True (fresh) to run.
        repeat: recorded copies per (size, path, fresh) (≥ 1); warmup: untimed copies before (≥ 0).
        verify: zero the device buffer before each copy (outside the timing) and compare it with the
            source pattern after (``verified``; a mismatch raises RuntimeError). An int verifies only
            sizes up to that many bytes (multi-GiB compares dominate a sweep's time; the GPU tests
            verify every path).
        time_budget_s: stop before starting a new size once this many seconds have passed (the
            sizes not run are listed in ``df.attrs["skipped_sizes"]`` with a warning).
        progress: a tqdm bar over (size, path, fresh).

    Returns:
        pandas DataFrame with :data:`SWEEP_COLUMNS`; ``df.attrs`` holds ``skipped_sizes``,
        ``repeat``, ``warmup`` and ``pool_stats`` (the sweep's own :class:`PinnedPool` counters).

    Raises:
        RuntimeError: no GPU, or a copy delivered wrong bytes. ValueError: unknown path, bad sizes,
        repeat < 1, warmup < 0.
    """

    sizes = _parse_sizes(sizes)
    paths = list(paths)
    bad = [p for p in paths if p not in TRANSFER_PATHS]
    if bad:
        raise ValueError(f"unknown transfer path(s) {bad}; known: {list(PATHS)}")
    fresh = [bool(f) for f in fresh]
    if not fresh:
        raise ValueError("fresh is empty (use (False,), (True,) or (False, True))")
    if repeat < 1 or warmup < 0:
        raise ValueError(f"repeat must be >= 1 and warmup >= 0, got repeat={repeat} warmup={warmup}")
    cp = _cuda.cupy()
    import cupyx

    stream = cp.cuda.Stream(non_blocking=True)
    tile = _pattern()
    tile_d = cp.asarray(tile)
    cupy_pinned_pool = cp.get_default_pinned_memory_pool()
    pool = PinnedPool(CudaHostAllocator())
    rows: list[dict[str, Any]] = []
    skipped: list[int] = []
    t_start = time.perf_counter()
    combos = [(s, p, f) for s in sizes for p in paths for f in fresh]
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(combos), desc="h2d sweep", unit="case")
    try:
        for size in sizes:
            if time_budget_s is not None and time.perf_counter() - t_start > time_budget_s:
                skipped = [s for s in sizes if s >= size]
                warnings.warn(f"bandwidth_sweep: time budget {time_budget_s} s used up; skipped sizes {skipped}", RuntimeWarning, stacklevel=2)
                break
            dst = cp.empty(size, dtype=cp.uint8)
            for path in paths:
                for is_fresh in fresh:
                    check = verify if isinstance(verify, bool) else size <= int(verify)
                    rows.extend(_sweep_case(cp, cupyx, path, size, is_fresh, repeat, warmup, check, stream, dst, tile, tile_d, pool, cupy_pinned_pool))
                    if bar is not None:
                        bar.update(1)
            del dst
            pool.shrink(0)
            cupy_pinned_pool.free_all_blocks()
            cp.get_default_memory_pool().free_all_blocks()
    finally:
        if bar is not None:
            bar.close()
        pool_stats = pool.stats().as_dict()
        pool.close()
        cupy_pinned_pool.free_all_blocks()
    df = _sweep_frame(rows)
    df.attrs.update(skipped_sizes=skipped, repeat=repeat, warmup=warmup, pool_stats=pool_stats)
    return df


def _sweep_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows → the :data:`SWEEP_COLUMNS` frame with stable dtypes (writable as CSV and Parquet)."""
    import pandas as pd

    df = pd.DataFrame(rows, columns=list(SWEEP_COLUMNS))
    floats = {c: "float64" for c in SWEEP_COLUMNS if c not in ("path", "size_bytes", "fresh_buffer", "repeat", "src_pinned", "verified")}
    verified = df["verified"].map(lambda v: pd.NA if v is None or (isinstance(v, float) and math.isnan(v)) else bool(v))
    df = df.astype({"path": "string", "size_bytes": "int64", "fresh_buffer": "bool", "repeat": "int64", "src_pinned": "bool", **floats})
    df["verified"] = verified.astype("boolean")
    return df


def _sweep_case(cp, cupyx, path, size, is_fresh, repeat, warmup, verify, stream, dst, tile, tile_d, pool, cupy_pinned_pool) -> list[dict]:
    """One (size, path, fresh) cell of the sweep: warm-up plus ``repeat`` recorded copies."""
    fn = TRANSFER_PATHS[path]
    rows = []
    reused_src = None
    reused_owner = None
    staging = None
    pinned_kind = path in ("pinned_pool", "pinned_raw")
    try:
        if path == "pinned_staging":
            staging = pool.checkout(size)
        def new_source() -> tuple[Any, Any]:
            """A source buffer of ``size`` bytes for this path, and the owner to close (pageable)."""
            if path == "pinned_pool":
                return pool.checkout(size), None
            if path == "pinned_raw":
                return cupyx.empty_pinned(size, dtype=np.uint8), None
            buf = _PageableBuffer(size)
            return buf.array, buf

        if not is_fresh:  # one source for the whole cell
            reused_src, reused_owner = new_source()
            _fill(reused_src, tile)
        for i in range(warmup + repeat):
            alloc_ms = touch_ms = math.nan
            owner = None
            if is_fresh:
                if path == "pinned_pool":
                    pool.shrink(0)  # no free buffer left: the checkout must cudaHostAlloc
                elif path == "pinned_raw":
                    cupy_pinned_pool.free_all_blocks()
                t0 = time.perf_counter()
                src, owner = new_source()
                alloc_ms = (time.perf_counter() - t0) * 1e3
                t0 = time.perf_counter()
                _fill(src, tile)
                touch_ms = (time.perf_counter() - t0) * 1e3
            else:
                src = reused_src
                if path == "pinned_pool":  # the pipeline's checkout of a reused buffer
                    old = _ptr(src)
                    pool.checkin(src)
                    t0 = time.perf_counter()
                    src = reused_src = pool.checkout(size)
                    alloc_ms = (time.perf_counter() - t0) * 1e3
                    if _ptr(src) != old:  # another free buffer fitted better: write the data again
                        _fill(src, tile)
            if verify:
                if path != "cupy_asarray":
                    dst.fill(0)
                    stream.synchronize()
                    cp.cuda.Device().synchronize()
            try:
                if path == "cupy_asarray":
                    res = fn(src, stream=stream)
                elif path == "pinned_staging":
                    res = fn(src, dst, stream=stream, staging=staging)
                else:
                    res = fn(src, dst, stream=stream)
                ok = math.nan
                if verify:
                    target = res.dst if path == "cupy_asarray" else dst
                    ok = _device_matches(cp, target, tile_d, size)
                    if not ok:
                        raise RuntimeError(f"bandwidth_sweep: {path} copy of {size} bytes (fresh={is_fresh}, iteration {i}) delivered wrong bytes")
                res.dst = None
            finally:
                if is_fresh:
                    if path == "pinned_pool":
                        pool.checkin(src)
                    del src
                    if owner is not None:
                        owner.close()
            if i < warmup:
                continue
            overhead = res.overhead_ms + (alloc_ms if (is_fresh and pinned_kind) else 0.0)
            row = dict.fromkeys(SWEEP_COLUMNS, math.nan)
            row.update(
                path=path,
                size_bytes=size,
                fresh_buffer=is_fresh,
                repeat=i - warmup,
                host_ms=res.host_ms,
                stream_ms=res.stream_ms,
                wall_ms=res.wall_ms,
                gbps=res.gbps,
                overhead_ms=overhead,
                effective_gbps=_gbps(size, res.stream_ms + overhead),
                alloc_ms=alloc_ms,
                touch_ms=touch_ms,
                src_pinned=res.src_pinned,
                verified=ok,
            )
            for k in ("stage_ms", "register_ms", "unregister_ms", "staging_bytes"):
                if k in res.extra:
                    row[k] = res.extra[k]
            rows.append(row)
    finally:
        if staging is not None:
            pool.checkin(staging)
        if reused_src is not None and path == "pinned_pool":
            pool.checkin(reused_src)
        del reused_src
        if reused_owner is not None:
            reused_owner.close()
    return rows


_SUMMARY_VALUES = ("host_ms", "stream_ms", "wall_ms", "gbps", "overhead_ms", "effective_gbps", "alloc_ms", "touch_ms", "stage_ms", "register_ms", "unregister_ms", "staging_bytes")


def summarize_sweep(df: pd.DataFrame) -> pd.DataFrame:
    """Medians per (path, size_bytes, fresh_buffer) of a :func:`bandwidth_sweep` frame.

    Returns a DataFrame with columns ``path, size_bytes, fresh_buffer, n`` (copies) and the median
    of every timing/cost column present (ms, GB/s = 10^9 B/s, bytes); all-NaN columns stay NaN.

    Raises:
        ValueError: a key column is missing.
    """
    import pandas as pd

    keys = ["path", "size_bytes", "fresh_buffer"]
    missing = [k for k in keys if k not in df.columns]
    if missing:
        raise ValueError(f"summarize_sweep: missing columns {missing}")
    values = [c for c in _SUMMARY_VALUES if c in df.columns]
    g = df.groupby(keys, sort=True, observed=True)
    out = g[values].median()
    out.insert(0, "n", g.size())
    out = out.reset_index()
    return pd.DataFrame(out)


def pool_efficiency(df: pd.DataFrame, *, min_size: int = 256 * MIB, threshold: float = 0.9, pool_path: str = "pinned_pool", raw_path: str = "pinned_raw") -> pd.DataFrame:
    """The acceptance check: pinned-pool H2D ≥ ``threshold`` × raw pinned memcpy at ≥ ``min_size``.

    Uses the median ``gbps`` of reused buffers (``fresh_buffer == False``) of the two paths,
    measured in the same sweep, for every size ≥ ``min_size`` present in both.

    Returns:
        DataFrame with columns ``size_bytes, pool_gbps, raw_gbps, ratio, ok`` (ratio =
        pool/raw; ok = ratio ≥ threshold); ``df.attrs["passed"]`` is True when there is at least one
        such size and every ratio is ok.

    Raises:
        ValueError: no size ≥ min_size has both paths (nothing to check).
    """
    import pandas as pd

    d = df[(~df["fresh_buffer"].astype(bool)) & (df["size_bytes"] >= min_size)]
    med = d.groupby(["path", "size_bytes"], observed=True)["gbps"].median()
    rows = []
    for size in sorted(set(d["size_bytes"])):
        if (pool_path, size) in med.index and (raw_path, size) in med.index:
            pg, rg = float(med[(pool_path, size)]), float(med[(raw_path, size)])
            ratio = pg / rg if rg > 0 else math.nan
            rows.append(dict(size_bytes=int(size), pool_gbps=pg, raw_gbps=rg, ratio=ratio, ok=bool(ratio >= threshold)))
    if not rows:
        raise ValueError(f"pool_efficiency: no size >= {min_size} bytes has both {pool_path!r} and {raw_path!r} with fresh_buffer=False")
    out = pd.DataFrame(rows)
    out.attrs.update(passed=bool(out["ok"].all()), threshold=threshold, min_size=min_size)
    return out


def host_alloc_costs(sizes: Iterable[int] = DEFAULT_SIZES, repeat: int = 3) -> pd.DataFrame:
    """Cost of pinning host memory per size: why a pool, and what registering costs.

    For each size and repeat, in ms (perf_counter): ``hostAlloc`` (``cudaHostAlloc``, portable)
    and ``freeHost`` of that buffer; ``touch`` (first write of a fresh anonymous-mmap numpy
    array), then ``hostRegister`` and ``hostUnregister`` of that (already touched) array.

    Returns:
        DataFrame with columns ``op, size_bytes, repeat, ms, gbps`` (gbps = size / ms in 10^9 B/s,
        the rate at which memory gets pinned).

    Raises:
        RuntimeError: no GPU. ValueError: bad sizes or repeat < 1.
    """
    import pandas as pd

    sizes = _parse_sizes(sizes)
    if repeat < 1:
        raise ValueError(f"repeat must be >= 1, got {repeat}")
    cp = _cuda.cupy()
    rt = cp.cuda.runtime
    tile = _pattern()
    rows = []

    def add(op: str, size: int, r: int, ms: float) -> None:
        rows.append(dict(op=op, size_bytes=size, repeat=r, ms=ms, gbps=_gbps(size, ms)))

    for size in sizes:
        for r in range(repeat):
            t0 = time.perf_counter()
            ptr = rt.hostAlloc(size, _HOST_ALLOC_PORTABLE)
            t1 = time.perf_counter()
            rt.freeHost(ptr)
            t2 = time.perf_counter()
            add("hostAlloc", size, r, (t1 - t0) * 1e3)
            add("freeHost", size, r, (t2 - t1) * 1e3)
            owner = _PageableBuffer(size)
            arr = owner.array
            t0 = time.perf_counter()
            _fill(arr, tile)
            t1 = time.perf_counter()
            rt.hostRegister(_ptr(arr), size, _HOST_REGISTER_DEFAULT)
            t2 = time.perf_counter()
            rt.hostUnregister(_ptr(arr))
            t3 = time.perf_counter()
            add("touch", size, r, (t1 - t0) * 1e3)
            add("hostRegister", size, r, (t2 - t1) * 1e3)
            add("hostUnregister", size, r, (t3 - t2) * 1e3)
            del arr
            owner.close()
    return pd.DataFrame(rows, columns=["op", "size_bytes", "repeat", "ms", "gbps"])


# --------------------------------------------------------------------------------------------
# `zkgpu bench h2d`
# --------------------------------------------------------------------------------------------

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "m": MIB, "mib": MIB, "g": GIB, "gib": GIB}


def _parse_bytes(text: str | int) -> int:
    """``"256MiB"`` / ``"4GiB"`` / ``"1048576"`` → bytes (binary units)."""
    if isinstance(text, int):
        return text
    import re

    m = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError(f"not a size: {text!r} (use e.g. 1048576, 256MiB, 4GiB)")
    return int(m.group(1)) * _UNITS[m.group(2).lower()]


def _make_bench_command() -> Any:
    import click

    @click.command("h2d")
    @click.option("--out", "out_base", type=click.Path(file_okay=False), default=None, help="base folder for the run folder (default data/)")
    @click.option("--min-size", default="1MiB", show_default=True, help="smallest copy (bytes or e.g. 1MiB)")
    @click.option("--max-size", default="1GiB", show_default=True, help="largest copy; sizes are powers of 4 from --min-size (4GiB for the full sweep)")
    @click.option("--repeat", default=3, show_default=True, type=click.IntRange(min=1), help="recorded copies per case")
    @click.option("--warmup", default=1, show_default=True, type=click.IntRange(min=0), help="untimed copies per case")
    @click.option("--path", "paths", multiple=True, type=click.Choice(list(PATHS)), help="transfer path (repeatable; default all)")
    @click.option("--no-fresh", is_flag=True, help="only reused host buffers")
    @click.option("--time-budget", default=240.0, show_default=True, type=float, help="stop starting new sizes after this many seconds")
    @click.option("--verify-max", default="64MiB", show_default=True, help="compare the copied bytes only up to this size")
    @click.option("--large-from", default="2GiB", show_default=True, help="sizes from here on run only --large-path paths, reused buffers")
    @click.option("--large-path", "large_paths", multiple=True, type=click.Choice(list(PATHS)), help="paths for the large sizes (default: pageable, cupy_asarray, pinned_pool, pinned_raw)")
    @click.option("--alloc-repeat", default=2, show_default=True, type=click.IntRange(min=0), help="repeats of the hostAlloc/hostRegister cost table (0: skip)")
    def h2d(out_base: str | None, min_size: str, max_size: str, repeat: int, warmup: int, paths: tuple[str, ...], no_fresh: bool, time_budget: float, verify_max: str, large_from: str, large_paths: tuple[str, ...], alloc_repeat: int) -> None:
        """H2D bandwidth of every transfer path (pageable … pinned pool), fresh vs reused buffers.

        Writes sweep.csv/.parquet (every copy), summary.csv (medians), efficiency.csv (pinned pool
        vs raw pinned at >= 256 MiB), host_alloc.csv (cudaHostAlloc/cudaHostRegister costs) and
        manifest.json into a fresh data/<gpu>-<date>-bench-h2d/ folder.
        """
        import pandas as pd

        from .manifest import build_manifest, new_run_dir, write_json_new

        if not _cuda.gpu_available():
            raise CliError("zkgpu bench h2d needs a CUDA GPU with CuPy (none found) (GPU benchmarks; without a GPU, replay the recordings: zkgpu report)")
        try:
            lo, hi = _parse_bytes(min_size), _parse_bytes(max_size)
            vmax, big = _parse_bytes(verify_max), _parse_bytes(large_from)
        except ValueError as exc:
            raise click.BadParameter(str(exc)) from exc
        if lo < 1 or hi < lo:
            raise click.BadParameter(f"need 1 <= --min-size <= --max-size, got {lo} and {hi}")
        sizes = []
        s = lo
        while s <= hi:
            sizes.append(s)
            s *= 4
        use_paths = list(paths) or list(PATHS)
        fresh = (False,) if no_fresh else (False, True)
        run_dir = new_run_dir("bench-h2d", base=Path(out_base) if out_base else None)
        t0 = time.perf_counter()
        small, large = [x for x in sizes if x < big], [x for x in sizes if x >= big]
        parts = []
        if small:
            parts.append(bandwidth_sweep(small, use_paths, fresh, repeat=repeat, warmup=warmup, verify=vmax, time_budget_s=time_budget, progress=False))
        if large:
            lp = [p for p in (large_paths or ("pageable", "cupy_asarray", "pinned_pool", "pinned_raw")) if p in use_paths]
            left = None if time_budget is None else max(1.0, time_budget - (time.perf_counter() - t0))
            parts.append(bandwidth_sweep(large, lp, (False,), repeat=repeat, warmup=warmup, verify=vmax, time_budget_s=left, progress=False))
        df = pd.concat(parts, ignore_index=True)
        df.attrs = {
            "skipped_sizes": [x for part in parts for x in part.attrs.get("skipped_sizes", [])],
            "pool_stats": [part.attrs.get("pool_stats") for part in parts],
        }
        sweep_s = time.perf_counter() - t0
        df.to_csv(run_dir / "sweep.csv", index=False)
        df.to_parquet(run_dir / "sweep.parquet", index=False)
        summary = summarize_sweep(df)
        summary.to_csv(run_dir / "summary.csv", index=False)
        eff_info: dict[str, Any] = {"passed": None, "note": None}
        try:
            eff = pool_efficiency(df)
            eff.to_csv(run_dir / "efficiency.csv", index=False)
            eff_info = {"passed": eff.attrs["passed"], "rows": eff.to_dict(orient="records")}
        except ValueError as exc:
            eff_info["note"] = str(exc)
        alloc_sizes = [x for x in sizes if x not in df.attrs.get("skipped_sizes", [])]
        if alloc_repeat and alloc_sizes:
            host_alloc_costs(alloc_sizes, repeat=alloc_repeat).to_csv(run_dir / "host_alloc.csv", index=False)
        manifest = build_manifest(
            kind="bench-h2d",
            sizes=sizes,
            skipped_sizes=df.attrs.get("skipped_sizes", []),
            paths=use_paths,
            fresh=list(fresh),
            large_sizes={"from_bytes": big, "paths": list(large_paths) or ["pageable", "cupy_asarray", "pinned_pool", "pinned_raw"], "fresh": [False]},
            verify_max_bytes=vmax,
            repeat=repeat,
            warmup=warmup,
            time_budget_s=time_budget,
            sweep_seconds=round(sweep_s, 2),
            gbps_unit="1e9 bytes/s",
            pool_efficiency=eff_info,
            sweep_pool_stats=df.attrs.get("pool_stats"),
            files=sorted(p.name for p in run_dir.iterdir()) + ["manifest.json"],
        )
        write_json_new(run_dir / "manifest.json", manifest)
        med = summary[~summary["fresh_buffer"]].pivot(index="size_bytes", columns="path", values="gbps")
        click.echo(f"H2D GB/s (10^9 B/s), reused buffers, median of {repeat}:")
        click.echo(med.round(2).to_string())
        click.echo(f"pool efficiency (>= 256 MiB, >= 90% of pinned_raw): {eff_info.get('passed')}")
        click.echo(f"wrote {run_dir}")

    return h2d


bench_command = _make_bench_command()
