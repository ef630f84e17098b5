"""The MSM's last step (zkgpu/gpu/msm/final.py, kernels/msm_final.cuh): the warp-cooperative Horner and the binary
inversion against the one-thread msm_final, Fermat and Python's pow, on the host build (g++, the lanes a loop),
through the real host code on the emulated kernels, and on the GPU against arkworks; and the top window's bucket
bound of window_reduce."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from test_msm import emu_library, emulated, rand_points, ref_arkworks
from test_msm_reduce import EDGE_CASES, _dlog_reference, _edge_case

from seeding import current_seed, new_pyrng, new_rng
from zkgpu.arith.field import FQ, FR, fr_from_ints, fr_random
from zkgpu.core import cuda as _cuda
from zkgpu.gpu.msm import bases
from zkgpu.gpu.msm import final as msm_final
from zkgpu.gpu.msm import pippenger as msm
from zkgpu.gpu.msm.window import num_windows, signed_digits

Q = FQ.modulus
VARIANTS = [("warp", "binary"), ("warp", "fermat"), ("serial", "fermat")]


@pytest.fixture
def variant(request, monkeypatch):
    final, inverse = request.param
    monkeypatch.setattr(msm_final, "FINAL", final)
    monkeypatch.setattr(msm_final, "INVERSE", inverse)
    return request.param


def _emu_lib() -> ctypes.CDLL:
    return emu_library("g1")


def _fq_words(values: list[int]) -> np.ndarray:
    return np.array([[(v >> (32 * i)) & 0xFFFFFFFF for i in range(12)] for v in values], dtype=np.uint32)


def _fq_ints(words: np.ndarray) -> list[int]:
    return [sum(int(w) << (32 * i) for i, w in enumerate(row)) for row in words]


def test_binary_inverse_matches_pow():
    """fq_inv_binary on Montgomery-form values xR: (x^-1)R, for random x and 0, 1, 2, q-1, q-2, 2^k."""
    rng = new_pyrng()
    R = 1 << 384
    xs = [0, 1, 2, 3, Q - 1, Q - 2, (Q - 1) // 2, 1 << 380, (1 << 381) % Q, R % Q]
    xs += [rng.randrange(Q) for _ in range(300)]
    mont = _fq_words([x * R % Q for x in xs])
    out = np.zeros_like(mont)
    _emu_lib().emu_fq_inv_binary(ctypes.c_void_p(mont.ctypes.data), ctypes.c_void_p(out.ctypes.data), ctypes.c_uint64(len(xs)))
    want = [0 if x == 0 else pow(x, -1, Q) * R % Q for x in xs]
    got = _fq_ints(out)
    bad = [x for x, g, w in zip(xs, got, want, strict=True) if g != w]
    assert bad == [], f"seed {current_seed()}: wrong inverses of {bad[:3]}"


def test_warp_operations_match_serial_bit_for_bit():
    """warp_add / warp_dbl (products split into levels) equal xyzz_t::add / dbl word for word, including
    a + a, a + (-a), the identity on either side and 2 * identity; some points the identity."""
    n = 40
    a, b = rand_points(n), rand_points(n)
    a[::7] = 0
    b[3::9] = 0
    rng = new_pyrng()
    z = _fq_words([rng.randrange(1, Q) for _ in range(2 * n)])
    lib = _emu_lib()
    lib.emu_warp_mismatches.restype = ctypes.c_uint64
    bad = lib.emu_warp_mismatches(ctypes.c_void_p(np.ascontiguousarray(a).ctypes.data),
                                  ctypes.c_void_p(np.ascontiguousarray(b).ctypes.data),
                                  ctypes.c_void_p(z.ctypes.data), ctypes.c_uint64(n))
    assert bad == 0, f"seed {current_seed()}: {bad} mismatching cases"


@pytest.mark.parametrize("variant", VARIANTS, indirect=True)
@pytest.mark.parametrize("c", [2, 5, 13])
def test_emu_msm_each_final_variant(variant, c):
    n = 50
    pts, sc = rand_points(n), fr_random(n, new_rng())
    with emulated():
        got = msm.msm_device(pts, sc, c)
    assert (got == ref_arkworks(pts, sc)).all(), f"seed {current_seed()}, {variant}, c={c}"


@pytest.mark.parametrize("variant", VARIANTS, indirect=True)
@pytest.mark.parametrize("case", EDGE_CASES)
def test_emu_edge_inputs_each_final_variant(variant, case):
    pts, sc = _edge_case(case, 30)
    with emulated():
        got = msm.msm_device(pts, sc, 4)
        bm = np.full(1, 0b1011, dtype=np.uint64)
        total = msm.batch_add_device(pts, bm)
    assert (got == ref_arkworks(pts, sc)).all(), f"seed {current_seed()}, {variant}, {case}"
    assert (total == msm.batch_add_cpu(pts, bm)).all(), f"seed {current_seed()}, {variant}, {case}: batch_add"


def test_configure_and_settings():
    before = (msm_final.FINAL, msm_final.INVERSE)
    try:
        msm_final.configure(final="serial", inverse="fermat")
        assert msm_final.settings() == {"final": "serial", "inverse": "fermat"}
        msm_final.configure(final="warp")
        assert msm_final.settings() == {"final": "warp", "inverse": "fermat"}
        with pytest.raises(ValueError, match="final must be one of warp, serial, got 'fast'"):
            msm_final.configure(final="fast")
        with pytest.raises(ValueError, match="inverse must be one of binary, fermat, got 'gcd'"):
            msm_final.configure(inverse="gcd")
    finally:
        msm_final.configure(final=before[0], inverse=before[1])


def test_window_threads(monkeypatch):
    """The defaults give the measured best splits (c = 16: T = 2048; c = 20: T = 4096), at least MIN_RANGE buckets a
    thread, T = 1 when even one thread per window exceeds the budget."""
    monkeypatch.setattr(msm_final, "REDUCE_THREADS", 1 << 16)
    monkeypatch.setattr(msm_final, "MIN_RANGE", 16)
    assert msm_final.window_threads(16, 1 << 15) == 2048 and msm_final.window_threads(13, 1 << 19) == 4096
    assert msm_final.window_threads(20, 1 << 12) == 256  # c = 13: 16 buckets a thread
    assert msm_final.window_threads(1, 4) == 1 and msm_final.window_threads(128, 2) == 1  # fewer than 16 buckets
    assert msm_final.window_threads(1, 1 << 23) == 1 << 16
    msm_final.configure(reduce_threads=1 << 15)
    assert msm_final.window_threads(13, 1 << 19) == 2048
    monkeypatch.setattr(msm_final, "MIN_RANGE", 1)
    assert msm_final.window_threads(1, 4) == 4
    with pytest.raises(ValueError, match="reduce_threads must be an int >= 1, got 0"):
        msm_final.configure(reduce_threads=0)


@pytest.mark.parametrize("threads,min_range", [(1, 16), (7, 16), (1 << 17, 1), (1 << 16, 16), (1 << 17, 4)])
def test_emu_msm_reduce_threads(threads, min_range, monkeypatch):
    """window_reduce with few threads (one per window: each sums every bucket) and many."""
    monkeypatch.setattr(msm_final, "REDUCE_THREADS", threads)
    monkeypatch.setattr(msm_final, "MIN_RANGE", min_range)
    n = 60
    pts, sc = rand_points(n), fr_random(n, new_rng())
    with emulated():
        got = msm.msm_device(pts, sc, 6)
    assert (got == ref_arkworks(pts, sc)).all(), f"seed {current_seed()}, {threads} threads"


@pytest.mark.parametrize("c", list(range(2, 25)))
def test_top_window_bucket_bound(c):
    """window_reduce's top window stops at msm._top_window_buckets: no scalar < r (nor < 2^255) has a larger
    top digit; the largest scalars reach it exactly for some c."""
    nwin, m = num_windows(c), 1 << (c - 1)
    bound = msm._top_window_buckets(c, nwin, m)
    rng = new_pyrng()
    worst = max(abs(signed_digits(k, c)[-1]) for k in [(1 << 255) - 1, FR.modulus - 1] + [rng.randrange(FR.modulus) for _ in range(50)])
    assert worst <= bound <= m
    assert abs(signed_digits((1 << 255) - 1, c)[-1]) <= bound


# ----------------------------------------------------------------------------- gpu


@pytest.mark.gpu
@pytest.mark.parametrize("variant", VARIANTS, indirect=True)
@pytest.mark.parametrize("n", [1, 1000, 2**16 + 3])
def test_gpu_each_final_variant_vs_arkworks(variant, n):
    cp = _cuda.cupy()
    pts, sc = rand_points(n), fr_random(n, new_rng())
    sc[: n // 3] = fr_from_ints([1])[0]
    got = cp.asnumpy(msm.msm_device(cp.asarray(pts), cp.asarray(sc)))
    assert (got == ref_arkworks(pts, sc)).all(), f"seed {current_seed()}, {variant}, n={n}"


@pytest.mark.gpu
@pytest.mark.parametrize("variant", VARIANTS, indirect=True)
@pytest.mark.parametrize("case", EDGE_CASES)
def test_gpu_edge_inputs_each_final_variant(variant, case):
    cp = _cuda.cupy()
    pts, sc = _edge_case(case, 500)
    got = cp.asnumpy(msm.msm_device(cp.asarray(pts), cp.asarray(sc), 7))
    assert (got == ref_arkworks(pts, sc)).all(), f"seed {current_seed()}, {variant}, {case}"


@pytest.mark.gpu
def test_gpu_variants_agree_with_top_window():
    """2^18 uniform scalars at c = 20 (the top window's bound 2^15 of 2^19 buckets) and c = 13: every final
    variant gives the same point as the others and as the points' discrete logs."""
    cp = _cuda.cupy()
    n, seed = 1 << 18, new_pyrng().randrange(2**64)
    pts, sc = bases.generate_points(n, seed), fr_random(n, new_rng())
    sc[0] = fr_from_ints([FR.modulus - 1])[0]
    want = _dlog_reference(n, seed, sc)
    before = (msm_final.FINAL, msm_final.INVERSE)
    try:
        for c in (20, 13):
            for final, inverse in VARIANTS:
                msm_final.configure(final=final, inverse=inverse)
                got = cp.asnumpy(msm.msm_device(pts, cp.asarray(sc), c))
                assert (got == want).all(), f"seed {current_seed()}, {final}/{inverse}, c={c}"
    finally:
        msm_final.configure(final=before[0], inverse=before[1])
