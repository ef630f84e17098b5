"""The Montgomery-product variants of zkgpu/kernels/ff.cuh (ZK_FF_MUL; issue 13).

CPU: every variant of ff_bench.cu builds for sm_90 with nvcc and its PTX, run by a PTX interpreter
(tests/ptxemu.py), agrees with Python ints; the real kernel modules build with the non-default products.
(The host's product, the portable CIOS, is tests/test_field.py's.) GPU: every variant of ff_bench.cu
agrees with Python ints bit for bit on edge values and seeded random pairs (scripts/ff_microbench.py's
checks, which also gate its timings)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import ptxemu
import pytest

from zkgpu.arith.field import FQ, FR
from zkgpu.core.cuda import KERNEL_DIR

_SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "ff_microbench.py"
_spec = importlib.util.spec_from_file_location("ff_microbench", _SCRIPT)
assert _spec is not None and _spec.loader is not None
fmb = importlib.util.module_from_spec(_spec)
sys.modules["ff_microbench"] = fmb
_spec.loader.exec_module(fmb)

# the real modules with the non-default products (the default builds are test_kernels_compile's)
REAL_BUILDS = [("ntt.cu", "0"), ("ntt.cu", "1"), ("msm.cu", "1")]


def _tool(name: str) -> str:
    path = shutil.which(name) or (name == "nvcc" and os.path.exists("/usr/local/cuda/bin/nvcc") and "/usr/local/cuda/bin/nvcc")
    if not path:
        if os.environ.get("CI"):
            pytest.fail(f"{name} not found: CI must build every ff.cuh variant")
        pytest.skip(f"{name} not found")
    return path


def _nvcc_sm90(src: Path, tmp_path: Path, defines: dict[str, str], *, ptx: bool = False) -> Path:
    """nvcc -arch=sm_90 of src with these -D macros: a cubin, or (ptx=True) the PTX (also assembled for
    sm_90 by ptxas, so it is checked as the cubin would be). Returns the output file."""
    flags = [f"-D{k}={v}" for k, v in defines.items()]
    out = tmp_path / ("k.ptx" if ptx else "k.cubin")
    res = subprocess.run([_tool("nvcc"), "-arch=sm_90", "-std=c++17", "-ptx" if ptx else "-cubin", f"-I{KERNEL_DIR}",
                          *flags, str(src), "-o", str(out)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    if ptx:
        res = subprocess.run([_tool("ptxas"), "-arch=sm_90", str(out), "-o", str(tmp_path / "k.cubin")],
                             capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
    return out


def _emulated_products(ptx: str, kernel: str, field, a: list[int], b: list[int]) -> list[int]:
    """Run <f>_mul_check / <f>_sqr_check of ff_bench.cu's PTX for each pair, one thread at a time."""
    limbs = fmb._limbs32(field)
    lines = ptxemu.entry_body(ptx, kernel)
    out = []
    for x, y in zip(a, b, strict=True):
        mem = {}
        for base, v in ((0x1000, x), (0x2000, y)):
            mem.update({base + 4 * k: int(w) for k, w in enumerate(fmb.to_words([v], limbs)[0])})
        params = [0x1000, 0x2000, 0x3000, 1] if "_mul_" in kernel else [0x1000, 0x3000, 1]
        ptxemu.run(lines, params, mem)
        out.append(sum(mem.get(0x3000 + 4 * k, 0) << (32 * k) for k in range(limbs)))
    return out


# every benchmark variant, the default build (no macro: ZK_FF_MUL=3), and the NTT's asm tail of the product
# (ZK_FF_ASM_TAIL=1: Fr's merge and final subtraction as asm chains; Fq keeps the portable tail)
BUILDS = {**fmb.VARIANTS, "default": (), "asm-tail": (("ZK_FF_ASM_TAIL", "1"),)}


@pytest.mark.parametrize("name", list(BUILDS))
def test_ff_bench_variant_builds_and_its_ptx_multiplies(name, tmp_path):
    """Every variant of ff_bench.cu builds for sm_90, and its PTX, run by the interpreter tests/ptxemu.py
    (so the inline-asm carry chains exactly as nvcc emitted them), gives a*b*R^-1 and a^2*R^-1 mod p for
    edge pairs and seeded random ones, in Fr and Fq."""
    ptx = _nvcc_sm90(KERNEL_DIR / "ff_bench.cu", tmp_path, dict(BUILDS[name]), ptx=True).read_text()
    for fname, field in (("fr", FR), ("fq", FQ)):
        a, b = fmb.check_pairs(field, n_random=16)
        pick = [*range(0, len(a) - 16, 5), *range(len(a) - 16, len(a))]  # a spread of the edge pairs + random
        a, b = [a[i] for i in pick], [b[i] for i in pick]
        assert _emulated_products(ptx, f"{fname}_mul_check", field, a, b) == [fmb.mont_mul(field, x, y) for x, y in zip(a, b, strict=True)]
        assert _emulated_products(ptx, f"{fname}_sqr_check", field, a, a) == [fmb.mont_mul(field, x, x) for x in a]


@pytest.mark.slow
@pytest.mark.parametrize("module,value", REAL_BUILDS, ids=[f"{m}-ZK_FF_MUL={v}" for m, v in REAL_BUILDS])
def test_real_module_variant_compiles_sm90(module, value, tmp_path):
    _nvcc_sm90(KERNEL_DIR / module, tmp_path, {"ZK_FF_MUL": value})


def test_edge_values_are_below_p_and_include_the_extremes():
    for field in (FR, FQ):
        vals = fmb.edge_values(field)
        assert all(0 <= v < field.modulus for v in vals)
        assert {0, 1, field.modulus - 1} <= set(vals)
        r = (1 << (32 * fmb._limbs32(field))) % field.modulus
        assert r in vals  # 1 in Montgomery form


def test_random_words_are_below_p():
    for field in (FR, FQ):
        assert all(v < field.modulus for v in fmb.from_words(fmb.random_words(field, 2000, 5)))


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(BUILDS))
@pytest.mark.parametrize("fname", ["fr", "fq"])
def test_gpu_variant_equals_python_ints(name, fname):
    mod = fmb.compile_module(BUILDS[name])
    res = fmb.check_variant(mod, fname)
    assert res["ok"], res
