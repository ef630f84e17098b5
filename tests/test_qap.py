"""Groth16 H polynomial: the CPU reference against an independent polynomial computation, bad input,
and (marked gpu) the device path against the reference."""

from __future__ import annotations

import random

import numpy as np
import pytest

from seeding import new_pyrng, new_rng
from zkgpu.arith.field import FR, fr_from_ints, fr_to_ints
from zkgpu.gpu.fr_device import from_montgomery, to_montgomery
from zkgpu.gpu.ntt import qap
from zkgpu.gpu.ntt import transform as ntt

P = FR.modulus


@pytest.fixture
def rng() -> random.Random:
    return new_pyrng()


def _interpolate_coeffs(evals: list[int], n: int) -> list[int]:
    """Coefficients of the degree < n polynomial with the given values at omega^j (naive inverse DFT)."""
    oi = pow(FR.root_of_unity(n.bit_length() - 1), -1, P)
    ninv = pow(n, -1, P)
    return [sum(evals[j] * pow(oi, i * j, P) for j in range(n)) * ninv % P for i in range(n)]


def _polymul(a: list[int], b: list[int]) -> list[int]:
    out = [0] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            out[i + j] = (out[i + j] + x * y) % P
    return out


def _divmod_xn_minus_1(num: list[int], n: int) -> tuple[list[int], list[int]]:
    """Divide by X^n - 1 (long division)."""
    num = list(num)
    q = [0] * max(1, len(num) - n)
    for d in range(len(num) - 1, n - 1, -1):
        c = num[d]
        if c:
            q[d - n] = c
            num[d] = 0
            num[d - n] = (num[d - n] + c) % P
    return q, num[:n]


@pytest.mark.parametrize("m", [1, 2, 3, 5, 8, 13])
def test_reference_is_quotient_by_vanishing_polynomial(m, rng):
    """With c = a*b on the domain, A*B - C is divisible by Z = X^n - 1, and h is the quotient."""
    n = 1 << max(0, (m - 1).bit_length())
    a = [rng.randrange(P) for _ in range(m)]
    b = [rng.randrange(P) for _ in range(m)]
    pa, pb = a + [0] * (n - m), b + [0] * (n - m)
    A, B = _interpolate_coeffs(pa, n), _interpolate_coeffs(pb, n)
    C = _interpolate_coeffs([x * y % P for x, y in zip(pa, pb, strict=True)], n)
    num = _polymul(A, B)
    num = [(v - (C[i] if i < n else 0)) % P for i, v in enumerate(num)]
    q, r = _divmod_xn_minus_1(num, n)
    assert all(v == 0 for v in r)
    c_full = [x * y % P for x, y in zip(pa, pb, strict=True)]
    h = qap.compute_h_reference(pa, pb, c_full)
    assert h == (q + [0] * n)[:n]


def test_reference_general_inputs_via_coset_formula(rng):
    """For arbitrary a, b, c, h is the inverse coset NTT of (A*B - C)/Z evaluated on g*H (by definition)."""
    n = 8
    a, b, c = ([rng.randrange(P) for _ in range(n)] for _ in range(3))
    A, B, C = (_interpolate_coeffs(v, n) for v in (a, b, c))
    g = FR.generator
    omega = FR.root_of_unity(3)
    zi = pow(pow(g, n, P) - 1, -1, P)

    def ev(poly, x):
        return sum(cf * pow(x, i, P) for i, cf in enumerate(poly)) % P

    pts = [g * pow(omega, j, P) % P for j in range(n)]
    hv = [(ev(A, x) * ev(B, x) - ev(C, x)) * zi % P for x in pts]
    h = qap.compute_h_reference(a, b, c)
    assert [ev(h, x) for x in pts] == hv


def test_padding_and_log_n(rng):
    a = [rng.randrange(P) for _ in range(5)]
    h1 = qap.compute_h_reference(a, a, a)
    h2 = qap.compute_h_reference(a + [0] * 3, a + [0] * 3, a + [0] * 3)
    assert h1 == h2 and len(h1) == 8
    assert len(qap.compute_h_reference(a, a, a, log_n=4)) == 16


def test_edge_values():
    for v in (0, 1, P - 1):
        h = qap.compute_h_reference([v] * 4, [v] * 4, [v * v % P] * 4)
        assert h == [0] * 4  # constants: A*B - C = 0
    assert qap.compute_h_reference([3], [4], [5]) == [(12 - 5) * qap.z_inv_on_coset(0) % P]


def test_host_api_cpu_path(rng):
    m = 6
    a, b, c = ([rng.randrange(P) for _ in range(m)] for _ in range(3))
    h = qap.compute_h(fr_from_ints(a), fr_from_ints(b), fr_from_ints(c))
    assert isinstance(h, np.ndarray) and h.shape == (8, 4) and h.dtype == np.uint64
    assert fr_to_ints(h) == qap.compute_h_reference(a, b, c)


def test_bad_input():
    ok = fr_from_ints([1, 2, 3])
    with pytest.raises(ValueError, match="at least one"):
        qap.compute_h(np.zeros((0, 4), dtype=np.uint64), ok, ok)
    with pytest.raises(TypeError, match="uint64"):
        qap.compute_h(ok.astype(np.int64), ok, ok)
    with pytest.raises(ValueError, match="shape"):
        qap.compute_h(np.zeros((3, 5), dtype=np.uint64), ok, ok)
    bad = ok.copy()
    bad[2] = np.array([2**64 - 1] * 4, dtype=np.uint64)
    with pytest.raises(ValueError, match=r"c\[2\]"):
        qap.compute_h(ok, ok, bad)
    with pytest.raises(ValueError, match="smaller"):
        qap.compute_h(ok, ok, ok, log_n=1)
    with pytest.raises(ValueError, match="2-adicity"):
        qap.domain_log_size([3], 33)
    with pytest.raises(ValueError):
        qap.compute_h_reference([P], [1], [1])


@pytest.mark.gpu
@pytest.mark.parametrize("radix", [2, 4])
@pytest.mark.parametrize("log_n", range(0, 13))
def test_gpu_compute_h_matches_reference(log_n, radix, monkeypatch):
    from zkgpu.core.cuda import cupy

    monkeypatch.setattr(ntt, "RADIX", radix)

    cp = cupy()
    rng = new_pyrng()
    n = 1 << log_n
    m = max(1, n - rng.randrange(0, max(1, n // 2)))  # usually not a power of two
    a, b, c = ([rng.randrange(P) for _ in range(m)] for _ in range(3))
    want = qap.compute_h_reference(a, b, c, log_n=log_n)
    timings: dict = {}
    stream = cp.cuda.Stream(non_blocking=True)
    h = qap.compute_h(*(cp.asarray(fr_from_ints(v)) for v in (a, b, c)), log_n=log_n, stream=stream, timings=timings)
    stream.synchronize()
    assert isinstance(h, cp.ndarray) and h.shape == (n, 4)
    assert fr_to_ints(h.get()) == want
    assert set(timings) == {"ntt_ms", "pointwise_ms", "intt_ms", "total_ms"}
    assert fr_to_ints(qap.compute_h(*(fr_from_ints(v) for v in (a, b, c)), log_n=log_n)) == want


@pytest.mark.gpu
def test_gpu_compute_h_bad_device_input():
    from zkgpu.core.cuda import cupy

    cp = cupy()
    ok = cp.asarray(fr_from_ints([1, 2, 3]))
    bad = fr_from_ints([1, 2, 3])
    bad[1, 3] = np.uint64(2**64 - 1)
    with pytest.raises(ValueError, match=r"b\[1\]"):
        qap.compute_h(ok, cp.asarray(bad), ok)
    with pytest.raises(TypeError, match="all be host"):
        qap.compute_h(ok, fr_from_ints([1, 2, 3]), ok)


@pytest.mark.gpu
@pytest.mark.parametrize("log_n", [0, 3, 10])
def test_gpu_split_h_pieces_equal_compute_h_and_defer_the_value_check(log_n):
    """prepare_input + coset_evals_inplace per vector + combine_h_inplace (the pipeline's
    three-stream order) give compute_h's result; a deferred check reports r itself at index 3."""
    from zkgpu.core.cuda import cupy

    cp = cupy()
    n = 1 << log_n
    rng = new_pyrng()
    vals = [[rng.randrange(P) for _ in range(n)] for _ in range(3)]
    dev = [cp.asarray(fr_from_ints(v)) for v in vals]
    check = qap.DeferredCheck()
    bufs = [ntt.coset_evals_inplace(qap.prepare_input(d, n, name=nm, deferred=check)) for d, nm in zip(dev, "abc", strict=True)]
    qap.combine_h_inplace(*bufs)
    check.raise_if_bad()
    got = fr_to_ints(from_montgomery(bufs[0]).get())
    assert got == qap.compute_h_reference(*vals)
    if n > 3:
        bad = fr_from_ints(vals[1])
        bad[3] = np.array([int(x) for x in ((P >> (64 * k)) & (2**64 - 1) for k in range(4))], dtype=np.uint64)  # r itself
        check = qap.DeferredCheck()
        qap.prepare_input(cp.asarray(bad), n, name="b", deferred=check)
        with pytest.raises(ValueError, match=r"b\[3\] = .* is not a canonical Fr"):
            check.raise_if_bad()


@pytest.mark.gpu
@pytest.mark.parametrize("log_n", [16, 21, 24])
def test_gpu_compute_h_radix4_equals_radix2(log_n, monkeypatch):
    """At sizes beyond the Python reference: compute_h_inplace with ntt_pass_r4 equals the one with ntt_pass bit for
    bit on fresh random Montgomery-form inputs."""
    from zkgpu.core.cuda import cupy

    cp = cupy()
    n = 1 << log_n
    x = new_rng().integers(0, 2**64, size=(3, n, 4), dtype=np.uint64)
    x[..., 3] >>= np.uint64(2)
    d = cp.asarray(x)
    for i in range(3):
        to_montgomery(d[i])
    e = d.copy()
    monkeypatch.setattr(ntt, "RADIX", 2)
    qap.compute_h_inplace(d[0], d[1], d[2])
    monkeypatch.setattr(ntt, "RADIX", 4)
    qap.compute_h_inplace(e[0], e[1], e[2])
    assert bool((d[0] == e[0]).all())
    del d, e
    cp.get_default_memory_pool().free_all_blocks()
