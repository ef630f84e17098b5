"""The stagewise NTT pass kernels (ntt.cu: ntt_pass, ntt_pass_r4, with their ntt_order and scale_mode
enum parameters) built by g++ (tests/native/ntt_emu.cpp: one thread per block, the grid replayed block by
block) and driven by zkgpu.ntt's real host code with numpy standing in for CuPy, against the Python
reference, for every transform and order. The fused kernels have the same check in tests/test_ntt.py."""

from __future__ import annotations

import numpy as np
import pytest
from native import NumpyAsCupy, emulated_kernel, load

from zkgpu import _cuda
from zkgpu import ntt as N
from zkgpu.field import FR, fr_from_ints, fr_to_ints


@pytest.fixture
def stagewise_emulated(monkeypatch):
    N.clear_cache()
    monkeypatch.setattr(_cuda, "cupy", NumpyAsCupy)
    monkeypatch.setattr(N, "_kernel", lambda name: emulated_kernel(load("ntt_emu"), name))
    monkeypatch.setattr(N, "_BR_Q", 16)  # ntt_bitrev_tiled needs 256 threads: the grid-stride ntt_bitrev
    yield
    N.clear_cache()


@pytest.mark.parametrize("radix", [2, 4])
@pytest.mark.parametrize("L", [1, 2, 5, 11, 13])  # 13: two passes of the 10-bit tiles
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
                N.ntt_inplace(w, inverse=inverse, coset=coset, order=order, algorithm="stagewise")
                got = [FR.from_mont(v) for v in fr_to_ints(w.view(np.uint64).reshape(-1, 4))]
                assert got == expected, f"radix {radix}, 2^{L}, inverse={inverse}, coset={coset}, {order}"
