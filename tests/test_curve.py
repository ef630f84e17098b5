"""G1 host layout, conversions and validation (zkgpu.arith.curve), and the device formulas of
zkgpu/kernels/g1.cuh (ec.cuh over Fq) built for the CPU (tests/native/g1_shim.cpp) checked against py_ecc."""

from __future__ import annotations

import ctypes
import random

import numpy as np
import py_ecc.optimized_bls12_381 as pe
import pytest
from native import load
from py_arkworks_bls12381 import G1Point, Scalar

from seeding import new_pyrng, new_rng
from zkgpu.arith import curve
from zkgpu.arith.field import FQ, FR
from zkgpu.gpu.msm.pippenger import num_windows, signed_digits

Q = FQ.modulus
R = FR.modulus


def rand_py_ecc(rng: random.Random, n: int) -> list:
    return [pe.multiply(pe.G1, rng.randrange(1, R)) for _ in range(n)]


def arr(points) -> np.ndarray:
    return curve.g1_from_py_ecc(points)


def ptr(a: np.ndarray, ctype=ctypes.c_uint32):
    return a.ctypes.data_as(ctypes.POINTER(ctype))


@pytest.fixture(scope="module")
def shim():
    return load("g1_shim")


# ----------------------------------------------------------------------------- host layout


def test_layout_matches_arkworks_bytes():
    g = G1Point()
    a = curve.g1_from_arkworks([g, G1Point.identity()])
    assert a.shape == (2, 12) and a.dtype == np.uint64
    assert a[0].astype("<u8").tobytes() == g.to_xy_bytes_le()
    assert not a[1].any()
    assert (a[0] == curve.generator()[0]).all()


def test_py_ecc_roundtrip_and_identity():
    rng = new_pyrng()
    pts = rand_py_ecc(rng, 5) + [pe.Z1]
    a = arr(pts)
    assert curve.is_identity(a).tolist() == [False] * 5 + [True]
    back = curve.g1_to_py_ecc(a)
    for p, q in zip(pts, back, strict=True):
        assert pe.eq(p, q)
    # py_ecc.bls12_381 affine pairs and None
    aff = [pe.normalize(p) for p in pts[:5]] + [None]
    assert (curve.g1_from_py_ecc(aff) == a).all()


def test_arkworks_roundtrip():
    rng = new_pyrng()
    pts = [G1Point() * Scalar(rng.randrange(1, 2**60)) for _ in range(4)] + [G1Point.identity()]
    a = curve.g1_from_arkworks(pts)
    assert curve.g1_to_arkworks(a) == pts


def test_arkworks_py_ecc_agree():
    k = new_pyrng().randrange(1, R)
    a1 = curve.g1_from_arkworks([G1Point() * Scalar.from_le_bytes(k.to_bytes(32, "little"))])
    a2 = arr([pe.multiply(pe.G1, k)])
    assert (a1 == a2).all()


def test_check_points_rejects_off_curve_and_unreduced():
    a = arr(rand_py_ecc(new_pyrng(), 3))
    curve.check_points(a)
    bad = a.copy()
    bad[1, 0] ^= np.uint64(1)  # x changed: off the curve
    with pytest.raises(ValueError, match=r"points\[1\].*not on the curve"):
        curve.check_points(bad)
    big = a.copy()
    big[2, 6:] = np.array([(Q >> (64 * i)) & (2**64 - 1) for i in range(6)], dtype=np.uint64)  # y = q
    with pytest.raises(ValueError, match=r"points\[2\].*>= q"):
        curve.check_points(big)
    with pytest.raises(ValueError, match=r"shape"):
        curve.check_points(np.zeros((3, 6), dtype=np.uint64))
    with pytest.raises(TypeError):
        curve.check_points(np.zeros((3, 12), dtype=np.int64))
    with pytest.raises(ValueError, match="point 0"):
        curve.g1_from_ints([(1, 1)])
    with pytest.raises(ValueError, match=r"points\[1\]"):
        curve.g1_to_arkworks(bad)
    with pytest.raises(ValueError, match=r"points\[1\]"):
        curve.g1_to_py_ecc(bad)


def test_neg_and_add_helpers():
    p = arr(rand_py_ecc(new_pyrng(), 2))
    assert not curve.g1_add(p, curve.g1_neg(p)).any()
    s = curve.g1_add(p[:1], p[1:])
    assert pe.eq(curve.g1_to_py_ecc(s)[0], pe.add(*curve.g1_to_py_ecc(p)))
    with pytest.raises(ValueError, match="2 points vs 1"):
        curve.g1_add(p, p[:1])


def test_g1_sum_against_py_ecc():
    """g1_sum adds all the rows (arkworks) -- checked against py_ecc, with the identity and P + (-P) among them."""
    pts = rand_py_ecc(new_pyrng(), 6)
    a = np.vstack([arr(pts), curve.identity(1), curve.g1_neg(arr(pts[:1])), arr(pts[:1])])
    want = pe.Z1
    for q in pts:
        want = pe.add(want, q)
    assert a.shape == (9, 12) and pe.eq(curve.g1_to_py_ecc(curve.g1_sum(a))[0], want)
    assert not curve.g1_sum(curve.identity(0)).any() and curve.g1_sum(curve.identity(0)).shape == (1, 12)
    assert not curve.g1_sum(np.vstack([arr(pts[:1]), curve.g1_neg(arr(pts[:1]))])).any()
    bad = arr(pts[:2])
    bad[1, 0] ^= np.uint64(1)
    with pytest.raises(ValueError, match=r"points\[1\]"):
        curve.g1_sum(bad)


# ----------------------------------------------------------------------------- device formulas (g++)


def _u32(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.uint64).view(np.uint32)


def _op(shim, a, b, op, k=0, z1=None, z2=None):
    n = a.shape[0]
    rng = new_rng()
    if z1 is None:
        z1 = np.array([[int(v) for v in rng.integers(0, 2**63, 6)] for _ in range(n)], dtype=np.uint64)
        z1[:, 5] &= np.uint64(0x0FFFFFFFFFFFFFFF)
    if z2 is None:
        z2 = np.array([[int(v) for v in rng.integers(0, 2**63, 6)] for _ in range(n)], dtype=np.uint64)
        z2[:, 5] &= np.uint64(0x0FFFFFFFFFFFFFFF)
    out = np.zeros((n, 12), dtype=np.uint64)
    au, bu, z1u, z2u = _u32(a), _u32(b), _u32(z1), _u32(z2)
    shim.g1_op(ptr(au), ptr(bu), ptr(z1u), ptr(z2u), ctypes.c_uint32(k), ptr(out.view(np.uint32)), ctypes.c_size_t(n), ctypes.c_int(op))
    return out


def test_xyzz_add_madd_dbl_against_py_ecc(shim):
    rng = new_pyrng()
    ps, qs = rand_py_ecc(rng, 6), rand_py_ecc(rng, 6)
    # special cases: P + P, P + (-P), identity on either side
    ps += [ps[0], ps[1], pe.Z1, ps[2], pe.Z1]
    qs += [ps[0], pe.neg(ps[1]), qs[0], pe.Z1, pe.Z1]
    a, b = arr(ps), arr(qs)
    want_add = arr([pe.add(p, q) for p, q in zip(ps, qs, strict=True)])
    want_dbl = arr([pe.double(p) for p in ps])
    assert (_op(shim, a, b, 0) == want_add).all(), "madd-2008-s"
    assert (_op(shim, a, b, 1) == want_add).all(), "add-2008-s"
    assert (_op(shim, a, b, 2) == want_dbl).all(), "dbl-2008-s"
    assert (_op(shim, a, b, 3) == want_dbl).all(), "mdbl-2008-s"
    assert (_op(shim, a, b, 5) == arr([pe.add(pe.neg(p), q) for p, q in zip(ps, qs, strict=True)])).all(), "neg + madd"
    assert (_op(shim, a, b, 6) == a).all(), "XYZZ -> affine"


def test_mul_u32_against_py_ecc(shim):
    rng = new_pyrng()
    ps = rand_py_ecc(rng, 3)
    for k in (0, 1, 2, 3, rng.randrange(2**32)):
        got = _op(shim, arr(ps), arr(ps), 4, k=k)
        assert (got == arr([pe.multiply(p, k) for p in ps])).all(), k


def test_running_sum_repeated_point(shim):
    p = rand_py_ecc(new_pyrng(), 1)[0]
    pts = arr([p] * 20 + [pe.neg(p)] * 5 + [pe.Z1])
    out = np.zeros((1, 12), dtype=np.uint64)
    shim.g1_sum_affine(ptr(_u32(pts)), ctypes.c_size_t(26), ptr(out.view(np.uint32)))
    assert (out == arr([pe.multiply(p, 15)])).all()


def test_on_curve_device(shim):
    a = arr(rand_py_ecc(new_pyrng(), 3) + [pe.Z1])
    bad = a.copy()
    bad[0, 6] ^= np.uint64(4)
    flags = np.zeros(8, dtype=np.uint8)
    both = np.concatenate([a, bad])
    shim.g1_on_curve(ptr(_u32(both)), ctypes.c_size_t(8), ptr(flags, ctypes.c_uint8))
    assert flags.tolist() == [1, 1, 1, 1, 0, 1, 1, 1]


@pytest.mark.parametrize("c", [1, 4, 5, 13, 16, 20, 21])
def test_signed_digits_device_and_reference(shim, c):
    rng = new_pyrng()
    ks = [0, 1, R - 1, 2**255 - 1, (1 << (c - 1)), (1 << c) - 1] + [rng.randrange(R) for _ in range(20)]
    sc = np.array([[(k >> (64 * i)) & (2**64 - 1) for i in range(4)] for k in ks], dtype=np.uint64)
    nwin = shim.g1_num_windows(c)
    assert nwin == num_windows(c)
    out = np.zeros((len(ks), nwin), dtype=np.int32)
    bad = shim.g1_digits(ptr(_u32(sc)), ctypes.c_size_t(len(ks)), ctypes.c_int(c), ptr(out, ctypes.c_int32))
    assert bad == 0
    half = 1 << (c - 1)
    for k, row in zip(ks, out.tolist(), strict=True):
        assert all(-half <= d <= half for d in row)
        assert sum(d << (c * w) for w, d in enumerate(row)) == k
        assert row == signed_digits(k, c)


def test_py_ecc_int_coordinates_out_of_range_are_errors():
    from py_ecc.optimized_bls12_381 import G1, normalize

    from zkgpu.arith.curve import g1_from_py_ecc
    from zkgpu.arith.field import FQ

    x, y = (int(c.n) for c in normalize(G1))
    assert g1_from_py_ecc([(x, y)]).shape == (1, 12)
    for bad in ((x + FQ.modulus, y), (x, -y), (x, y, 1 + FQ.modulus)):
        with pytest.raises(ValueError, match="point 0: coordinate"):
            g1_from_py_ecc([bad])
