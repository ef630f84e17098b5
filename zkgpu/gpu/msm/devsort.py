"""Device-wide stable radix sort of uint64 keys by a bit field, on a stream, without a host sync.

GPU: CUB ``DeviceRadixSort::SortKeys`` (onesweep, Adinets & Merrill 2022) from ``kernels/nvcc/devsort.cu``,
built by nvcc into a cached shared library (``build/devsort/``) and loaded with ctypes. Fallback (no
library or ``configure(backend="cupy")``): CuPy's stable sort, one counted host sync ``msm.sort``.
NumPy input is sorted on the host."""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

import numpy as np

from zkgpu.core import cuda as _cuda

__all__ = ["BACKENDS", "BACKEND", "configure", "sort_keys", "available", "build", "library_path", "SOURCE"]

SOURCE = _cuda.KERNEL_DIR / "nvcc" / "devsort.cu"
"""The CUDA source of the library (built by nvcc, never by NVRTC)."""
BACKENDS = ("auto", "cub", "cupy")
BACKEND = "auto"
"""How :func:`sort_keys` sorts device arrays: ``auto`` (CUB if the library loads, else CuPy), ``cub`` or ``cupy``."""
_ABI = 1  # zk_devsort_abi() of the source this module speaks to
_NVCC_FLAGS = ("-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC,-fvisibility=hidden", "-cudart", "static")
_NVCC_TIMEOUT_S = 600
_LOCK = threading.Lock()
_LOAD_LOCK = threading.Lock()
_ACTIVE: list[Any] = []  # [the ctypes.CDLL] or [why there is none], after the first _load()


def configure(*, backend: str | None = None) -> None:
    """Set :data:`BACKEND` (None keeps it). Raises ValueError: not in :data:`BACKENDS`."""
    global BACKEND
    if backend is not None:
        if backend not in BACKENDS:
            raise ValueError(f"zkgpu.gpu.msm.devsort.configure: backend must be one of {BACKENDS}, got {backend!r}")
        BACKEND = backend


# --------------------------------------------------------------------------- the library


def _nvcc() -> str | None:
    path = shutil.which("nvcc")
    if path is None and os.access("/usr/local/cuda/bin/nvcc", os.X_OK):
        path = "/usr/local/cuda/bin/nvcc"
    return path


@functools.cache
def _nvcc_version(nvcc: str) -> str:
    res = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60, check=False)
    return res.stdout.strip()


def _arches() -> tuple[int, ...]:
    """sm_90 (the H200), and the current device's compute capability when it is another."""
    archs = {90}
    if _cuda.gpu_available():
        archs.add(int(_cuda.cupy().cuda.Device().compute_capability))
    return tuple(sorted(archs))


def _gencode(archs: tuple[int, ...]) -> list[str]:
    return [f"-gencode=arch=compute_{a},code=[sm_{a},compute_{a}]" for a in archs]


def _cache_dir() -> Path:
    root = Path(__file__).resolve().parents[3]
    d = root / "build" / "devsort" if (root / "pyproject.toml").is_file() else Path(tempfile.gettempdir()) / "zkgpu-devsort"
    try:
        d.mkdir(parents=True, exist_ok=True)
        if os.access(d, os.W_OK):
            return d
    except OSError:
        pass
    d = Path(tempfile.gettempdir()) / "zkgpu-devsort"
    d.mkdir(parents=True, exist_ok=True)
    return d


def library_path(nvcc: str | None = None) -> Path | None:
    """Where the library for this source, nvcc and device architecture is (or will be) cached:
    ``<cache>/devsort-<hash>.so``; None when no nvcc is found."""
    nvcc = nvcc or _nvcc()
    if nvcc is None:
        return None
    h = hashlib.sha256(SOURCE.read_bytes())
    h.update(_nvcc_version(nvcc).encode())
    h.update(" ".join((*_NVCC_FLAGS, *_gencode(_arches()))).encode())
    return _cache_dir() / f"devsort-{h.hexdigest()[:16]}.so"


def build(*, force: bool = False) -> Path:
    """Build the library with nvcc unless cached (``force`` rebuilds); its path. Raises RuntimeError: no nvcc, or it failed."""
    nvcc = _nvcc()
    path = library_path(nvcc)
    if nvcc is None or path is None:
        raise RuntimeError("zkgpu.gpu.msm.devsort: nvcc not found (on PATH or /usr/local/cuda/bin)")
    with _LOCK:
        if path.is_file() and not force:
            return path
        fd, tmp = tempfile.mkstemp(prefix=path.stem + ".", suffix=".tmp", dir=path.parent)
        os.close(fd)
        cmd = [nvcc, *_NVCC_FLAGS, *_gencode(_arches()), "-o", tmp, str(SOURCE)]
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=_NVCC_TIMEOUT_S, check=False)
            if res.returncode != 0:
                tail = " | ".join((res.stderr or res.stdout).strip().splitlines()[-5:])
                raise RuntimeError(f"zkgpu.gpu.msm.devsort: nvcc failed (exit {res.returncode}): {tail}")
            os.replace(tmp, path)  # atomic: another process sees the whole file or none
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return path


def _declare(lib: Any) -> Any:
    c = ctypes
    lib.zk_devsort_abi.restype = c.c_int
    lib.zk_devsort_abi.argtypes = []
    lib.zk_devsort_temp_bytes.restype = c.c_int
    lib.zk_devsort_temp_bytes.argtypes = [c.c_ulonglong, c.c_int, c.c_int, c.c_int, c.POINTER(c.c_size_t)]
    lib.zk_devsort_keys.restype = c.c_int
    lib.zk_devsort_keys.argtypes = [c.c_void_p, c.c_size_t, c.c_void_p, c.c_void_p, c.c_ulonglong, c.c_int,
                                    c.c_int, c.c_void_p, c.c_int, c.POINTER(c.c_int)]
    lib.zk_devsort_error_string.restype = c.c_char_p
    lib.zk_devsort_error_string.argtypes = [c.c_int]
    return lib


def _open() -> Any:
    """Build (if not cached) and load the library; a str saying why not on failure."""
    try:
        path = library_path()
        if path is None:
            return "nvcc not found (on PATH or /usr/local/cuda/bin)"
        if not path.is_file():
            build()
        try:
            lib = _declare(ctypes.CDLL(str(path)))
        except OSError:  # e.g. carried from a machine with other system libraries: build it here
            lib = _declare(ctypes.CDLL(str(build(force=True))))
        abi = lib.zk_devsort_abi()
        return lib if abi == _ABI else f"{path} speaks ABI {abi}, this module {_ABI}"
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        return f"{type(exc).__name__}: {exc}"


def _load() -> Any:
    """The loaded library, or a str saying why there is none: decided once per process (the first call
    may build it), so that a sort costs no file hashing or path search."""
    if not _ACTIVE:
        with _LOAD_LOCK:
            if not _ACTIVE:
                _ACTIVE.append(_open())
    return _ACTIVE[0]


def available() -> bool:
    """True when a GPU is present and the CUB library is built (or builds now) and loads: then
    :func:`sort_keys` sorts on the device without a host sync (unless ``configure(backend="cupy")``)."""
    return _cuda.gpu_available() and not isinstance(_load(), str)


# --------------------------------------------------------------------------- the sort


def _check(keys: Any, begin_bit: object, end_bit: object) -> None:
    if not (isinstance(keys, np.ndarray) or _cuda.is_device_array(keys)):
        raise ValueError(f"zkgpu.gpu.msm.devsort.sort_keys: keys must be a CuPy or NumPy array, got {type(keys).__name__}")
    if keys.dtype != np.uint64:
        raise ValueError(f"zkgpu.gpu.msm.devsort.sort_keys: keys must be uint64, got dtype {keys.dtype}")
    if keys.ndim != 1:
        raise ValueError(f"zkgpu.gpu.msm.devsort.sort_keys: keys must be 1-D, got shape {tuple(keys.shape)}")
    for name, v in (("begin_bit", begin_bit), ("end_bit", end_bit)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= v <= 64:
            raise ValueError(f"zkgpu.gpu.msm.devsort.sort_keys: {name} must be an int in [0, 64], got {v!r}")
    if begin_bit >= end_bit:  # type: ignore[operator]
        raise ValueError(f"zkgpu.gpu.msm.devsort.sort_keys: begin_bit must be < end_bit, got {begin_bit} >= {end_bit}")


def _field(xp: Any, keys: Any, begin_bit: int, end_bit: int) -> Any:
    field = keys >> xp.uint64(begin_bit)
    return field if end_bit - begin_bit == 64 else field & xp.uint64((1 << (end_bit - begin_bit)) - 1)


def _sort_cupy(cp: Any, keys: Any, begin_bit: int, end_bit: int) -> Any:
    """CuPy's stable sort (Thrust): synchronises the host with the stream."""
    _cuda.count_sync("msm.sort")
    if begin_bit == 0 and end_bit == 64:
        return cp.sort(keys)
    return keys[cp.argsort(_field(cp, keys, begin_bit, end_bit))]


@functools.lru_cache(maxsize=64)
def _temp_bytes(lib: Any, n: int, begin_bit: int, end_bit: int, device: int) -> int:
    out = ctypes.c_size_t(0)
    _raise_on(lib, lib.zk_devsort_temp_bytes(n, begin_bit, end_bit, device, ctypes.byref(out)), "temp-size query")
    return int(out.value)


def _raise_on(lib: Any, err: int, what: str) -> None:
    if err != 0:
        msg = lib.zk_devsort_error_string(err).decode(errors="replace")
        raise RuntimeError(f"zkgpu.gpu.msm.devsort: CUB radix sort {what} failed: {msg} (cudaError {err})")


def _sort_cub(cp: Any, lib: Any, keys: Any, begin_bit: int, end_bit: int, overwrite: bool) -> Any:
    n = int(keys.shape[0])  # a host value: the array's shape
    device = int(keys.device.id)
    stream = cp.cuda.get_current_stream()
    cur = cp.ascontiguousarray(keys) if overwrite else keys.copy()
    alt = cp.empty_like(cur)
    temp = cp.empty(max(_temp_bytes(lib, n, begin_bit, end_bit, device), 1), dtype=cp.uint8)
    selector = ctypes.c_int(-1)
    err = lib.zk_devsort_keys(temp.data.ptr, temp.nbytes, cur.data.ptr, alt.data.ptr, n, begin_bit, end_bit,
                              stream.ptr, device, ctypes.byref(selector))
    _raise_on(lib, err, "launch")
    # temp, and the buffer not returned, go back to CuPy's pool of this stream: later work on the
    # stream, queued after the sort, is the only work that can reuse them
    return alt if selector.value == 1 else cur


def sort_keys(keys: Any, *, begin_bit: int = 0, end_bit: int = 64, stream: Any = None, overwrite: bool = False) -> Any:
    """``(n,)`` uint64 ``keys`` (CuPy or NumPy) sorted stably by bits ``[begin_bit, end_bit)``; same array type.
    ``stream``: where the sort and its buffers go. ``overwrite``: ``keys`` may be used as a buffer (then undefined).
    Raises ValueError: not 1-D uint64, or bad bit bounds. RuntimeError: backend "cub" unavailable, or a CUB error."""
    _check(keys, begin_bit, end_bit)
    begin_bit, end_bit = int(begin_bit), int(end_bit)
    if isinstance(keys, np.ndarray):
        return keys[np.argsort(_field(np, keys, begin_bit, end_bit), kind="stable")]
    cp = _cuda.cupy()
    with keys.device, stream if stream is not None else cp.cuda.get_current_stream():
        if keys.shape[0] == 0:
            return keys if overwrite else keys.copy()
        lib = None if BACKEND == "cupy" else _load()
        if isinstance(lib, str):
            if BACKEND == "cub":
                raise RuntimeError(f"zkgpu.gpu.msm.devsort: the CUB library is not available ({lib})")
            lib = None
        if lib is None:
            return _sort_cupy(cp, keys, begin_bit, end_bit)
        return _sort_cub(cp, lib, keys, begin_bit, end_bit, overwrite)
