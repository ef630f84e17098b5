"""Finds the GPU, compiles and caches the CUDA kernels of ``zkgpu/kernels/`` (CuPy ``RawModule``, NVRTC), times them.

Constants shared with the kernels are written once in the kernel sources and read back (:func:`header_defines`,
:func:`header_enum`); ``-D`` options carry only values Python chooses."""

from __future__ import annotations

import functools
import hashlib
import importlib
import re
import statistics
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

KERNEL_DIR = Path(__file__).resolve().parents[1] / "kernels"

__all__ = [
    "KERNEL_DIR",
    "configure",
    "gpu_available",
    "cupy",
    "current_device",
    "device_cache",
    "get_module",
    "get_kernel",
    "build_options",
    "launch_1d",
    "is_device_array",
    "time_ms",
    "BenchResult",
    "benchmark",
    "device_info",
    "header_defines",
    "header_enum",
    "count_sync",
    "read_back",
    "sync_counts",
]

_SYNCS = threading.local()


def count_sync(why: str, k: int = 1) -> None:
    """Count ``k`` host synchronisations named ``why`` on the calling thread (read by :func:`sync_counts`)."""
    counts = getattr(_SYNCS, "counts", None)
    if counts is None:
        counts = _SYNCS.counts = {}
    counts[why] = counts.get(why, 0) + k


def sync_counts() -> dict[str, int]:
    """The calling thread's :func:`count_sync` totals so far, ``{why: count}`` (a copy)."""
    return dict(getattr(_SYNCS, "counts", None) or {})


def read_back(x: Any, why: str) -> Any:
    """``cupy().asnumpy(x)``: a device value on the host, counted by :func:`count_sync` as ``why``."""
    count_sync(why)
    return cupy().asnumpy(x)


GPU_ENABLED = True
"""False hides the GPU from zkgpu (:func:`configure`); read at every call."""


def configure(*, gpu: bool | None = None) -> None:
    """Set how zkgpu uses the GPU; None keeps the current value. ``gpu=False`` hides it (every API takes its CPU path).
    Raises ValueError: gpu not a bool."""
    global GPU_ENABLED
    if gpu is not None:
        if not isinstance(gpu, bool):
            raise ValueError(f"zkgpu.core.cuda.configure: gpu must be True or False, got {gpu!r}")
        GPU_ENABLED = gpu


def _import_cupy() -> Any | None:
    return _detect_cupy() if GPU_ENABLED else None


@functools.lru_cache(maxsize=1)
def _detect_cupy() -> Any | None:
    try:  # the one place zkgpu imports CuPy (zkgpu.core.optional documents the pattern)
        cupy = importlib.import_module("cupy")
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None
        return cupy
    except Exception:  # noqa: BLE001 -- any failure (ImportError, CUDARuntimeError: no driver, ...) means no GPU
        return None


def gpu_available() -> bool:
    """True when CuPy imports and sees at least one CUDA device (and :func:`configure` has not hidden it)."""
    return _import_cupy() is not None


def cupy() -> Any:
    """The cupy module. Raises RuntimeError: no usable GPU (CuPy missing, no device, or hidden)."""
    cp = _import_cupy()
    if cp is None:
        raise RuntimeError("no CUDA GPU available to zkgpu (CuPy missing, no device, or the GPU disabled: ZKGPU_DISABLE_GPU=1)")
    return cp


def current_device() -> int:
    """The calling thread's current CUDA device ordinal (CuPy's is per thread); 0 under a stand-in for CuPy
    that has no devices (the kernel emulation of the tests)."""
    rt = getattr(getattr(cupy(), "cuda", None), "runtime", None)
    return int(rt.getDevice()) if rt is not None else 0


class device_cache:  # noqa: N801 - used as a decorator, like functools.cache
    """``functools.cache`` for a function building a device table: one entry per (current device, arguments)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self._fn = fn
        self._on = functools.cache(self._build)
        functools.update_wrapper(self, fn)

    def _build(self, device: int, *args: Any, **kw: Any) -> Any:
        return self._fn(*args, **kw)

    def __call__(self, *args: Any, **kw: Any) -> Any:
        return self._on(current_device(), *args, **kw)

    def cache_clear(self) -> None:
        self._on.cache_clear()


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


_DEFINE = r"^[ \t]*#[ \t]*define[ \t]+{name}[ \t]+(0[xX][0-9a-fA-F]+|\d+)[uU]?[ \t]*(?://.*)?$"
_ENUM = r"\benum[ \t]+class[ \t]+{name}[ \t]*:[ \t]*int[ \t]*\{{(.*?)\}}[ \t]*;"


@functools.cache
def _source(file: str) -> str:
    return (KERNEL_DIR / file).read_text()


@functools.cache
def header_defines(file: str, *names: str) -> tuple[int, ...]:
    """The values of ``#define NAME <integer>`` lines in ``kernels/<file>``, one per name, in order. Raises LookupError:
    a name with no such line, or more than one (names the file and macro)."""
    text = _source(file)
    out = []
    for name in names:
        found = re.findall(_DEFINE.format(name=re.escape(name)), text, flags=re.MULTILINE)
        if len(found) != 1:
            raise LookupError(f"kernels/{file}: expected one line '#define {name} <integer>', found {len(found)}")
        out.append(int(found[0], 0))
    return tuple(out)


@functools.cache
def header_enum(file: str, name: str) -> Mapping[str, int]:
    """``enum class <name> : int {a = 0, ...};`` in ``kernels/<file>`` as a read-only ``{member: value}``. Raises
    LookupError: no such enum, more than one, or a member without an explicit integer value."""
    text = re.sub(r"//[^\n]*", "", _source(file))  # comments may mention an enum
    found = re.findall(_ENUM.format(name=re.escape(name)), text, flags=re.DOTALL)
    if len(found) != 1:
        raise LookupError(f"kernels/{file}: expected one 'enum class {name} : int {{...}};', found {len(found)}")
    members: dict[str, int] = {}
    for item in filter(None, (t.strip() for t in found[0].split(","))):
        m = re.fullmatch(r"(\w+)\s*=\s*(0[xX][0-9a-fA-F]+|\d+)", item)
        if m is None:
            raise LookupError(f"kernels/{file}: enum {name}: member {item!r} has no explicit integer value")
        members[m.group(1)] = int(m.group(2), 0)
    return MappingProxyType(members)


@functools.cache
def get_module(name: str, defines: tuple[tuple[str, str], ...] = ()) -> Any:
    """Compile ``kernels/<name>.cu`` once per process with extra ``-D`` ``defines`` (:func:`build_options`)."""
    cp = cupy()
    src = (KERNEL_DIR / f"{name}.cu").read_text()
    return cp.RawModule(code=src, options=build_options(name, defines))


def build_options(name: str, defines: tuple[tuple[str, str], ...] = ()) -> tuple[str, ...]:
    """NVRTC options for ``kernels/<name>.cu``: C++17, include folder, sources' hash, one ``-D`` per define.
    ``ZK_PTXAS_O`` (0-3; from ``defines`` or the file's own ``#define``) sets ptxas' ``-O`` level. Raises ValueError:
    ZK_PTXAS_O not an integer 0-3."""
    opts = ["-std=c++17", f"-I{KERNEL_DIR}", f"-DZKGPU_SOURCES={_sources_hash()}"]
    opts += [f"-D{k}={v}" for k, v in defines]
    level = dict(defines).get("ZK_PTXAS_O")
    if level is None and re.search(_DEFINE.format(name="ZK_PTXAS_O"), _source(f"{name}.cu"), flags=re.MULTILINE):
        level = str(header_defines(f"{name}.cu", "ZK_PTXAS_O")[0])
    if level is not None:
        if str(level) not in ("0", "1", "2", "3"):
            raise ValueError(f"ZK_PTXAS_O must be 0, 1, 2 or 3 (ptxas -O<n>), got {level!r}")
        opts.append(f"--ptxas-options=-O{level}")
    return tuple(opts)


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
    try:  # the version even when the GPU is hidden or absent
        info["cupy"] = importlib.import_module("cupy").__version__
    except Exception:  # noqa: BLE001 -- as in _detect_cupy: any import failure means no CuPy
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
