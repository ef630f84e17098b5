"""Host-to-device (H2D) transfer paths, named by mechanism (:data:`PATHS`); each returns a :class:`TransferResult`.

Each copies a C-contiguous host array's bytes into a device array of the same ``nbytes``. Times, ms: ``host_ms``
perf_counter around the call; ``stream_ms`` CUDA events on the copy's idle stream; ``wall_ms`` call to end event; ``gbps
= nbytes / stream_ms`` (1e9 B/s); ``overhead_ms`` pinning costs outside the stream window. Without a GPU every path
raises RuntimeError."""

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
    """One H2D copy: ``path``, ``nbytes``, ``host_ms``, ``stream_ms``, ``wall_ms``, ``gbps``, ``overhead_ms`` (module
    docstring); ``extra`` path-specific ms/bytes; ``src_pinned``; ``dst`` the device array."""

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
    """True when ``arr``'s memory is page-locked for CUDA; False without a GPU."""
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
    """Pageable H2D: ``dst.set(host, stream)`` (the host blocks until staged). ``dst``: a device array of
    ``host.nbytes`` or None (allocated untimed); ``stream``: default current. Raises RuntimeError: no GPU.
    TypeError/ValueError: not numpy, not contiguous, empty, or size mismatch."""
    cp, src, d, stream = _setup(host, dst, stream)
    pinned = is_pinned(src)
    with _Timer(cp, stream) as t:
        d.set(src, stream=stream)
    return _result("pageable", src.nbytes, t, _out(dst, d), src_pinned=pinned)


def pageable_memcpy(host: np.ndarray, dst: Any = None, *, stream: Any = None) -> TransferResult:
    """Pageable H2D through ``cupy.cuda.runtime.memcpyAsync``; as :func:`pageable`."""
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
    """``cupy.asarray(host)`` on ``stream`` (CuPy stages through its pinned pool); ``dst`` must be None.
    ``trace_staging``: record ``extra["staging_bytes"]`` by wrapping CuPy's process-wide pinned allocator."""
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
    """``cudaHostRegister`` the array, DMA, unregister (``extra["register_ms"]``, ``["unregister_ms"]``). Raises
    ValueError: ``host`` already page-locked; plus :func:`pageable`'s."""
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
    """Host memcpy into a pinned ``staging`` buffer (None: allocated for this call), then async DMA. Raises ValueError:
    ``staging`` too small, not contiguous or not page-locked; plus :func:`pageable`'s."""
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
    """Async DMA from a :class:`~zkgpu.transfer.pinned_pool.PinnedPool` buffer. Raises ValueError: ``buf`` not
    page-locked (with ``require_pinned``); plus :func:`pageable`'s."""
    return _pinned_dma("pinned_pool", buf, dst, stream, require_pinned)


def pinned_raw(buf: np.ndarray, dst: Any = None, *, stream: Any = None, require_pinned: bool = True) -> TransferResult:
    """``cudaMemcpyAsync`` from a ``cupyx.empty_pinned`` buffer; as :func:`pinned_pool`."""
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
