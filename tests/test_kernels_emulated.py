"""The NTT pass kernels (ntt.cu: ntt_pass, ntt_pass_r4, ntt_pass_pair, with their ntt_order and scale_mode enum
parameters) built by g++ (tests/native/ntt_emu.cpp: one thread per block, the grid replayed block by block) and driven
by zkgpu.gpu.ntt.transform's real host code with numpy standing in for CuPy, against the Python reference, for every
transform and order (the default build; the other variants' builds were removed with them after tag pre-macro-cut, the
candidates' in issue 23)."""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import numpy as np
import ptxemu
import pytest
from native import HERE, NumpyAsCupy, emulated_kernel, load

from zkgpu.arith.field import FR, fr_from_ints, fr_to_ints
from zkgpu.core import cuda as _cuda
from zkgpu.core.cuda import KERNEL_DIR
from zkgpu.gpu.ntt import qap
from zkgpu.gpu.ntt import transform as N


@pytest.fixture
def stagewise_emulated(monkeypatch):
    """The emulated kernels of the default build (no defines, on the host side either)."""
    N.clear_cache()
    qap._icoset_zinv_table.cache_clear()
    monkeypatch.setattr(_cuda, "cupy", NumpyAsCupy)
    monkeypatch.setattr(N, "DEFINES", {})
    lib = load("ntt_emu")
    monkeypatch.setattr(N, "_kernel", lambda name: emulated_kernel(lib, name))
    monkeypatch.setattr(N, "_BR_Q", 16)  # ntt_bitrev_tiled needs 256 threads: the grid-stride ntt_bitrev
    yield
    N.clear_cache()
    qap._icoset_zinv_table.cache_clear()


@pytest.mark.parametrize("radix", [2, 4])
@pytest.mark.parametrize("L", [1, 2, 5, 6, 8, 11, 13])  # 11, 13: two passes (c = 1, 0)
def test_stagewise_pass_kernels_emulated(radix, L, stagewise_emulated, monkeypatch, pyrng):
    monkeypatch.setattr(N, "RADIX", radix)
    n = 1 << L
    rev = [int(format(i, f"0{L}b")[::-1], 2) for i in range(n)]
    for inverse in (False, True):
        for coset in (False, True):
            x = [pyrng.randrange(FR.modulus) for _ in range(n)]
            ref = N.ntt_reference(x, inverse=inverse, coset=coset)
            for order, given, expected in (
                ("nn", x, ref),
                ("nr", x, [ref[r] for r in rev]),
                ("rn", [x[r] for r in rev], ref),
            ):
                w = fr_from_ints([FR.to_mont(v) for v in given]).view(np.uint32).reshape(-1)
                N.ntt_inplace(w, inverse=inverse, coset=coset, order=order)
                got = [FR.from_mont(v) for v in fr_to_ints(w.view(np.uint64).reshape(-1, 4))]
                assert got == expected, f"radix {radix}, 2^{L}, inverse={inverse}, coset={coset}, {order}"


@pytest.mark.parametrize("radix", [2, 4])
@pytest.mark.parametrize("L", [1, 2, 6, 11, 13])
def test_stagewise_compute_h_emulated(radix, L, stagewise_emulated, monkeypatch, pyrng):
    """compute_h_inplace (1/N folded into the coset table, the pointwise a*b - c at the
    final inverse NTT's load, 1/Z in its store's table: qap._h_inverse) and the pipeline's split of it
    (coset_evals_inplace per vector, then combine_h_inplace) against compute_h_reference."""
    monkeypatch.setattr(N, "RADIX", radix)
    n = 1 << L
    a, b, c = ([pyrng.randrange(FR.modulus) for _ in range(n)] for _ in range(3))
    want = qap.compute_h_reference(a, b, c)
    bufs = [fr_from_ints([FR.to_mont(v) for v in x]).view(np.uint32).reshape(-1) for x in (a, b, c)]
    split = [w.copy() for w in bufs]
    qap.compute_h_inplace(*bufs)
    for w in split:
        N.coset_evals_inplace(w)
    qap.combine_h_inplace(*split)
    for w in (bufs[0], split[0]):
        assert [FR.from_mont(v) for v in fr_to_ints(w.view(np.uint64).reshape(-1, 4))] == want


@pytest.mark.parametrize("radix", [2, 4])
def test_stagewise_edge_values_emulated(radix, stagewise_emulated, monkeypatch, pyrng):
    """Inputs of 0, 1, r-1 and r-2 side by side: the butterflies see a - b at its extremes, for every transform,
    against the reference."""
    monkeypatch.setattr(N, "RADIX", radix)
    r = FR.modulus
    L = 6
    edges = [0, 1, r - 1, r - 2]
    for pattern in range(4):
        x = [edges[(i * (pattern + 1) + (i >> 3)) % 4] if pattern < 3 else pyrng.choice(edges) for i in range(1 << L)]
        for inverse in (False, True):
            for coset in (False, True):
                w = fr_from_ints([FR.to_mont(v) for v in x]).view(np.uint32).reshape(-1)
                N.ntt_inplace(w, inverse=inverse, coset=coset, order="nn")
                got = [FR.from_mont(v) for v in fr_to_ints(w.view(np.uint64).reshape(-1, 4))]
                assert got == N.ntt_reference(x, inverse=inverse, coset=coset), (pattern, inverse, coset)


def _ptx_butterfly_ops(tmp_path: Path, a: list[int], b: list[int], w: list[int], tail: int = 0) -> list[tuple[int, int, int]]:
    """(bf_add, bf_sub, bf_dif_mul) of ntt_common.cuh (the device asm chains; ``tail``: the product's merge and final
    subtraction as asm chains too, -DZK_FF_ASM_TAIL), from the sm_90 PTX of
    tests/native/ntt_bf_check.cu run by the interpreter tests/ptxemu.py, one element at a time."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc not found")
    out = tmp_path / f"bf{tail}.ptx"
    res = subprocess.run([nvcc, "-arch=sm_90", "-std=c++17", "-ptx", f"-I{KERNEL_DIR}", f"-DZK_FF_ASM_TAIL={tail}",
                          str(HERE / "ntt_bf_check.cu"), "-o", str(out)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    lines = ptxemu.entry_body(out.read_text(), "ntt_bf_check")
    got = []
    for x, y, z in zip(a, b, w, strict=True):
        mem = {}
        for base, v in ((0x1000, x), (0x2000, y), (0x3000, z)):
            mem.update({base + 4 * k: (v >> (32 * k)) & 0xFFFFFFFF for k in range(8)})
        ptxemu.run(lines, [0x1000, 0x2000, 0x3000, 0x4000, 1], mem)
        got.append(tuple(sum(mem.get(0x4000 + 32 * j + 4 * k, 0) << (32 * k) for k in range(8)) for j in range(3)))
    return got


@pytest.mark.parametrize("tail", [0, 1])
def test_butterfly_asm_chains_in_ptx(tail, tmp_path):
    """The asm carry chains of bf_add / bf_sub / bf_dif_mul as nvcc emits them for sm_90, with and without the
    product's asm tail (ZK_FF_ASM_TAIL=1: merge and final subtraction, ff.cuh's eo_tail8): a + b, a - b mod r and
    (a - b) * w * R^-1 mod r on edge values (0, 1, r-1, r-2, 2^k around the word boundaries) and seeded random ones."""
    r = FR.modulus
    edges = [0, 1, 2, r - 1, r - 2, r // 2, (1 << 224) - 1, (1 << 32), (1 << 254) % r]
    rnd = random.Random(13 + tail)
    pairs = [(x, y) for x in edges for y in edges][::3] + [(rnd.randrange(r), rnd.randrange(r)) for _ in range(6)]
    a, b = [x for x, _ in pairs], [y for _, y in pairs]
    w = [edges[i % len(edges)] if i % 2 else rnd.randrange(r) for i in range(len(pairs))]
    rinv = pow(1 << 256, -1, r)
    got = _ptx_butterfly_ops(tmp_path, a, b, w, tail)
    want = [((x + y) % r, (x - y) % r, (x - y) * z * rinv % r) for x, y, z in zip(a, b, w, strict=True)]
    assert got == want


def _smem_slot(u: int) -> int:
    """ntt_common.cuh's smem_slot: the 16-byte word of tile element u in each plane."""
    return u ^ ((u >> 1) & 7)


@pytest.mark.parametrize("T", [1 << t for t in range(11)])
def test_smem_v4_slots_conflict_free(T):
    """The tile's 16-byte planes: smem_slot is a bijection on [0, T), and every quarter warp (8 lanes, which a 128-bit
    shared-memory access serves together) of a radix-2 stage on any tile bit lb, and of the tile's global loads and
    stores (consecutive u), reads 8 different 16-byte bank groups (slot mod 8): no bank conflicts. The emulated
    transforms above check that the kernels use it consistently."""
    assert sorted(_smem_slot(u) for u in range(T)) == list(range(T))
    if T < 16:
        return
    for lb in range(T.bit_length() - 1):
        hl = 1 << lb
        for q in range(T // 16):
            for half in (0, hl):
                js = [((t & (hl - 1)) | ((t >> lb) << (lb + 1))) + half for t in range(8 * q, 8 * q + 8)]
                assert len({_smem_slot(j) & 7 for j in js}) == 8, (T, lb, q, half)
    for q in range(T // 8):
        assert len({_smem_slot(u) & 7 for u in range(8 * q, 8 * q + 8)}) == 8
