"""The one place that finds the GPU, compiles and caches the CUDA kernels, and times them.

Kernels live in ``zkgpu/kernels/*.cu`` (headers ``*.cuh``) and are compiled at first use by
CuPy's ``RawModule`` through NVRTC for the device's architecture. The cache key includes a hash
of every kernel source, so editing a header recompiles the modules that include it.

Environment:
    ``ZKGPU_DISABLE_GPU=1`` hides the GPU (every API then takes its CPU path).
"""

from __future__ import annotations

import functools
import hashlib
import os
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

KERNEL_DIR = Path(__file__).resolve().parent / "kernels"

__all__ = [
    "KERNEL_DIR",
    "gpu_available",
    "cupy",
    "get_module",
    "get_kernel",
    "launch_1d",
    "is_device_array",
    "time_ms",
    "BenchResult",
    "benchmark",
    "device_info",
]


@functools.lru_cache(maxsize=1)
def _import_cupy() -> Any | None:
    if os.environ.get("ZKGPU_DISABLE_GPU", "") not in ("", "0"):
        return None
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None
        return cupy
    except Exception:  # ImportError, CUDARuntimeError (no driver), ...
        return None


def gpu_available() -> bool:
    """True when CuPy imports and sees at least one CUDA device (and ZKGPU_DISABLE_GPU is unset)."""
    return _import_cupy() is not None


def cupy() -> Any:
    """The cupy module.

    Raises:
        RuntimeError: no usable GPU (CuPy missing, no device, or ZKGPU_DISABLE_GPU set).
    """
    cp = _import_cupy()
    if cp is None:
        raise RuntimeError("no CUDA GPU available to zkgpu (CuPy missing, no device, or ZKGPU_DISABLE_GPU=1)")
    return cp


def is_device_array(x: object) -> bool:
    """True for a CuPy ndarray (without importing CuPy when no GPU is present)."""
    cp = _import_cupy()
    return cp is not None and isinstance(x, cp.ndarray)


@functools.lru_cache(maxsize=1)
def _sources_hash() -> str:
    h = hashlib.sha256()
    for p in sorted(KERNEL_DIR.glob("*.cu*")):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


@functools.cache
def get_module(name: str, defines: tuple[tuple[str, str], ...] = ()) -> Any:
    """Compile (once per process; NVRTC results are cached on disk by CuPy) ``kernels/<name>.cu``.

    Args:
        name: the file stem, e.g. ``"ntt"``.
        defines: extra ``-D`` macros as ``(name, value)`` pairs.
    """
    cp = cupy()
    src = (KERNEL_DIR / f"{name}.cu").read_text()
    opts = ["-std=c++17", f"-I{KERNEL_DIR}", f"-DZKGPU_SOURCES={_sources_hash()}"]
    opts += [f"-D{k}={v}" for k, v in defines]
    return cp.RawModule(code=src, options=tuple(opts))


def get_kernel(module: str, kernel: str, defines: tuple[tuple[str, str], ...] = ()) -> Any:
    """A ``cupy.RawKernel`` from :func:`get_module`."""
    return get_module(module, defines).get_function(kernel)


def launch_1d(kernel: Any, n: int, args: tuple, *, block: int = 256, stream: Any = None, max_blocks: int = 65535 * 8) -> None:
    """Launch a grid-stride kernel over n items (grid = min(ceil(n/block), max_blocks))."""
    grid = max(1, min((n + block - 1) // block, max_blocks))
    if stream is None:
        kernel((grid,), (block,), args)
    else:
        kernel((grid,), (block,), args, stream=stream)


def time_ms(fn: Callable[[], Any], stream: Any = None) -> float:
    """Run fn once between two CUDA events on ``stream`` (default: current) and return ms."""
    cp = cupy()
    stream = stream or cp.cuda.get_current_stream()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record(stream)
    fn()
    end.record(stream)
    end.synchronize()
    return float(cp.cuda.get_elapsed_time(start, end))


@dataclass(frozen=True)
class BenchResult:
    """Timings of one benchmarked call: every repeat in ms, CUDA events, warm-up excluded."""

    times_ms: tuple[float, ...]
    warmup: int

    @property
    def median_ms(self) -> float:
        return statistics.median(self.times_ms)

    @property
    def min_ms(self) -> float:
        return min(self.times_ms)

    @property
    def max_ms(self) -> float:
        return max(self.times_ms)


def benchmark(fn: Callable[[], Any], *, warmup: int = 2, repeat: int = 10, stream: Any = None) -> BenchResult:
    """Time fn with CUDA events: ``warmup`` untimed calls, then ``repeat`` timed ones."""
    for _ in range(warmup):
        fn()
    cupy().cuda.get_current_stream().synchronize()
    times = tuple(time_ms(fn, stream) for _ in range(repeat))
    return BenchResult(times_ms=times, warmup=warmup)


def device_info() -> dict[str, Any]:
    """GPU, driver and CUDA versions as seen by CuPy; ``{"gpu": None}`` without a GPU."""
    info: dict[str, Any] = {"gpu": None}
    try:
        import cupy as cp

        info["cupy"] = cp.__version__
    except Exception:
        info["cupy"] = None
        return info
    cp = _import_cupy()
    if cp is None:
        return info
    rt = cp.cuda.runtime
    props = rt.getDeviceProperties(0)
    name = props["name"]
    info.update(
        gpu=name.decode() if isinstance(name, bytes) else str(name),
        device_count=rt.getDeviceCount(),
        compute_capability=f"{props['major']}.{props['minor']}",
        sm_count=int(props["multiProcessorCount"]),
        memory_bytes=int(props["totalGlobalMem"]),
        driver_version=rt.driverGetVersion(),
        runtime_version=rt.runtimeGetVersion(),
    )
    return info
