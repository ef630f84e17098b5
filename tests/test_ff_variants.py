"""The Montgomery-product variants of zkgpu/kernels/ff.cuh (ZK_FF_MUL; issue 13): the real kernel modules
build for sm_90 with the non-default products. (The default product is checked through the kernels'
emulation, tests/test_kernels_emulated.py, and on the GPU by every NTT/MSM test; the host's product is
tests/test_field.py's.)"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from zkgpu.core.cuda import KERNEL_DIR

# the real modules with the non-default products (the default builds are test_kernels_compile's)
REAL_BUILDS = [("ntt.cu", "0"), ("ntt.cu", "1"), ("msm.cu", "1")]


def _nvcc() -> str:
    path = shutil.which("nvcc") or (os.path.exists("/usr/local/cuda/bin/nvcc") and "/usr/local/cuda/bin/nvcc")
    if not path:
        if os.environ.get("CI"):
            pytest.fail("nvcc not found: CI must build every ff.cuh variant")
        pytest.skip("nvcc not found")
    return path


@pytest.mark.slow
@pytest.mark.parametrize("module,value", REAL_BUILDS, ids=[f"{m}-ZK_FF_MUL={v}" for m, v in REAL_BUILDS])
def test_real_module_variant_compiles_sm90(module: str, value: str, tmp_path: Path):
    res = subprocess.run([_nvcc(), "-arch=sm_90", "-std=c++17", "-cubin", f"-I{KERNEL_DIR}", f"-DZK_FF_MUL={value}",
                          str(KERNEL_DIR / module), "-o", str(tmp_path / "k.cubin")], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
