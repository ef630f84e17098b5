"""Host (CPU) builds of the CUDA headers for tests: g++ compiles tests/native/*.cpp against
zkgpu/kernels/*.cuh, and ctypes loads the result. This checks the field and curve arithmetic
the kernels use without a GPU; the GPU tests check the kernels themselves."""

from __future__ import annotations

import ctypes
import functools
import hashlib
import shutil
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
KERNELS = HERE.parent.parent / "zkgpu" / "kernels"


@functools.lru_cache(maxsize=None)
def load(name: str) -> ctypes.CDLL:
    """Build (cached by source hash) and load tests/native/<name>.cpp as a shared library."""
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        raise RuntimeError("no C++ compiler (g++) to build the host shim")
    srcs = [HERE / f"{name}.cpp", *sorted(KERNELS.glob("*.cuh"))]
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in srcs)).hexdigest()[:16]
    out = Path(tempfile.gettempdir()) / f"zkgpu-{name}-{digest}.so"
    if not out.exists():
        tmp = out.with_suffix(".tmp.so")
        subprocess.run(
            [cxx, "-O2", "-std=c++17", "-shared", "-fPIC", f"-I{KERNELS}", str(HERE / f"{name}.cpp"), "-o", str(tmp)],
            check=True,
        )
        tmp.replace(out)
    return ctypes.CDLL(str(out))
