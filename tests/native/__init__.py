"""Host (CPU) builds of the CUDA headers for tests: g++ compiles tests/native/*.cpp against
zkgpu/kernels/*.cuh, and ctypes loads the result. This checks the field and curve arithmetic
the kernels use without a GPU; the GPU tests check the kernels themselves."""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
import types
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
KERNELS = HERE.parent.parent / "zkgpu" / "kernels"


@functools.cache
def load(name: str, defines: tuple[tuple[str, str], ...] = ()) -> ctypes.CDLL:
    """Build (cached by source hash and defines) and load tests/native/<name>.cpp as a shared library;
    ``defines``: extra ``-D`` macros as ``(name, value)`` pairs."""
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        raise RuntimeError("no C++ compiler (g++) to build the host shim")
    srcs = [HERE / f"{name}.cpp", HERE / "emu.h", *sorted(KERNELS.glob("*.cu*"))]
    flags = [f"-D{k}={v}" for k, v in defines]
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in srcs) + " ".join(flags).encode()).hexdigest()[:16]
    out = Path(tempfile.gettempdir()) / f"zkgpu-{name}-{digest}.so"
    if not out.exists():
        tmp = out.with_suffix(f".{os.getpid()}.tmp.so")  # xdist workers build at once: each its own file
        subprocess.run(
            [cxx, "-O2", "-std=c++17", "-shared", "-fPIC", f"-I{KERNELS}", *flags, str(HERE / f"{name}.cpp"), "-o", str(tmp)],
            check=True,
        )
        tmp.replace(out)
    return ctypes.CDLL(str(out))


def emulated_kernel(lib: ctypes.CDLL, name: str):
    """A CuPy-RawKernel-like launcher for kernel ``name`` of an emulation library (one that exports
    ``zk_emu_grid(block, grid)``, e.g. ntt_emu.cpp): replays the grid block by block, each block with
    one thread; numpy arrays stand for device pointers, np.int32/np.uint32/np.uint64 for scalars."""
    f = getattr(lib, name)

    def call(grid, block, args, shared_mem=0, stream=None):
        cargs = []
        for a in args:
            if isinstance(a, np.ndarray):
                if not a.flags.c_contiguous:
                    raise ValueError(f"{name}: non-contiguous array argument")
                cargs.append(ctypes.c_void_p(a.ctypes.data))
            else:
                cargs.append(_scalar(a, name))
        g = grid[0] if isinstance(grid, tuple) else grid
        for b in range(g):
            lib.zk_emu_grid(ctypes.c_uint(b), ctypes.c_uint(g))
            f(*cargs)

    return call


def _scalar(a, name: str):
    if isinstance(a, np.uint64):
        return ctypes.c_uint64(int(a))
    if isinstance(a, np.uint32):
        return ctypes.c_uint32(int(a))
    if isinstance(a, np.int32):
        return ctypes.c_int32(int(a))
    raise TypeError(f"{name}: untyped kernel argument {a!r} ({type(a).__name__})")


class NumpyAsCupy(types.ModuleType):
    """numpy under CuPy's names (asnumpy added), standing in for CuPy in the emulated device paths."""

    def __init__(self):
        super().__init__("numpy_as_cupy")
        self.asnumpy = np.asarray

    def __getattr__(self, name):
        return getattr(np, name)
