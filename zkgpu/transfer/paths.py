"""Host-to-device (H2D) transfer paths, named by mechanism.

Every path copies the raw bytes of a C-contiguous host array into a C-contiguous device array of the
same ``nbytes`` (dtype and shape may differ) and returns a :class:`TransferResult`:

==================  ==========================================================================
``pageable``        ``dst.set(host, stream)`` (``cudaMemcpyAsync`` from the numpy pointer): a true
                    pageable copy, staged by the driver; the host is blocked for ~the whole copy
                    (CUDA Runtime API, "API synchronization behavior").
``pageable_memcpy`` the same through ``cupy.cuda.runtime.memcpyAsync`` directly.
``cupy_asarray``    ``cupy.asarray(host)``: CuPy copies into a buffer of its pinned pool on the CPU,
                    then DMAs it (``staging_bytes``: the pinned bytes it requested).
``registered``      ``cudaHostRegister``, async DMA, ``cudaHostUnregister`` (cuzk's Phase 9);
                    ``register_ms`` / ``unregister_ms`` apart.
``pinned_staging``  host memcpy into a pinned staging buffer, then async DMA.
``pinned_pool``     the data already lives in a :class:`~zkgpu.transfer.pinned_pool.PinnedPool`
                    buffer (the fix, curio ``48dccd93``): just the async DMA.
``pinned_raw``      ``cudaMemcpyAsync`` from a ``cupyx.empty_pinned`` buffer: the raw pinned
                    baseline (:func:`zkgpu.app.bench.transfer.pool_efficiency`).
==================  ==========================================================================

Timing: ``host_ms`` is ``time.perf_counter`` around the call (the calling thread's block);
``stream_ms`` CUDA events on the copy's idle stream from just before the call to the copy's end, host
staging included; ``wall_ms`` perf_counter from the call to the end event. ``gbps = nbytes /
stream_ms`` in 10^9 bytes/s; ``overhead_ms`` the pinning costs outside that window (register +
unregister, a staging buffer's allocation); ``effective_gbps = nbytes / (stream_ms + overhead_ms)``.

Without a GPU, importing works and every transfer function raises ``RuntimeError``
(:func:`zkgpu.core.cuda.cupy`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from zkgpu.core import cuda as _cuda
from zkgpu.transfer.host_alloc import CudaHostAllocator, host_ptr

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
    "rate_gbps",
    "CUDA_HOST_REGISTER_DEFAULT",
]

# CUDA enum values (cuda_runtime_api.h; also cupy.cuda.runtime.*), written here so that the
# module imports without CuPy.
_MEMCPY_HOST_TO_DEVICE = 1  # cudaMemcpyHostToDevice
CUDA_HOST_REGISTER_DEFAULT = 0  # cudaHostRegisterDefault
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
        return rate_gbps(self.nbytes, self.stream_ms + self.overhead_ms)

    def as_row(self) -> dict[str, Any]:
        """A flat dict (no ``dst``) for a DataFrame row."""
        row = {k: v for k, v in asdict(self).items() if k not in ("dst", "extra")}
        row["effective_gbps"] = self.effective_gbps
        row.update(self.extra)
        return row


def rate_gbps(nbytes: int, ms: float) -> float:
    """``nbytes`` moved in ``ms`` milliseconds as 10^9 bytes/s (decimal GB/s); NaN when ``ms <= 0``."""
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
        return int(cp.cuda.runtime.pointerGetAttributes(host_ptr(arr)).type) == _MEMORY_TYPE_HOST
    except cp.cuda.runtime.CUDARuntimeError:  # CUDA < 11 reports an error for unregistered pointers
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
        gbps=rate_gbps(nbytes, t.stream_ms),
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
        cp.cuda.runtime.memcpyAsync(d.data.ptr, host_ptr(src), src.nbytes, _MEMCPY_HOST_TO_DEVICE, stream.ptr)
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


def registered(host: np.ndarray, dst: Any = None, *, stream: Any = None, flags: int = CUDA_HOST_REGISTER_DEFAULT) -> TransferResult:
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
    ptr, n = host_ptr(src), src.nbytes
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
            :class:`~zkgpu.transfer.pinned_pool.PinnedPool` checkout), reused across calls. None: one is
            allocated with ``cudaHostAlloc`` for this call and freed after (``extra["alloc_ms"]``,
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
            cp.cuda.runtime.memcpyAsync(d.data.ptr, host_ptr(stage), n, _MEMCPY_HOST_TO_DEVICE, stream.ptr)
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
        cp.cuda.runtime.memcpyAsync(d.data.ptr, host_ptr(src), src.nbytes, _MEMCPY_HOST_TO_DEVICE, stream.ptr)
    return _result(path, src.nbytes, t, _out(dst, d), src_pinned=pinned)


def pinned_pool(buf: np.ndarray, dst: Any = None, *, stream: Any = None, require_pinned: bool = True) -> TransferResult:
    """DMA from data that already lives in a pinned pool buffer (cuzk after 48dccd93).

    ``cudaMemcpyAsync`` from the buffer; returns as soon as the copy is queued (``host_ms`` tiny).

    Args:
        buf: the array checked out of a :class:`~zkgpu.transfer.pinned_pool.PinnedPool` (any dtype/shape
            view), C-contiguous.
        dst, stream: as :func:`pageable`.
        require_pinned: raise when ``buf`` is not page-locked (e.g. a pool fallback buffer).

    Raises:
        ValueError: ``buf`` not page-locked (with ``require_pinned``); plus :func:`pageable`'s.
    """
    return _pinned_dma("pinned_pool", buf, dst, stream, require_pinned)


def pinned_raw(buf: np.ndarray, dst: Any = None, *, stream: Any = None, require_pinned: bool = True) -> TransferResult:
    """Raw pinned baseline: ``cudaMemcpyAsync`` from a ``cupyx.empty_pinned`` buffer.

    Same arguments and errors as :func:`pinned_pool`; used as the reference of
    :func:`zkgpu.app.bench.transfer.pool_efficiency`.
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
