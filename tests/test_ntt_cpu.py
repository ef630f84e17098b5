"""zkgpu.arith.ntt_cpu (the compiled CPU NTTs of ``--device cpu``) against the Python-int references
:func:`zkgpu.arith.domain.ntt_reference`, :func:`~zkgpu.arith.domain.dft_naive` and
:func:`zkgpu.gpu.ntt.qap.compute_h_reference`, on seeded random inputs (the session seed is in pytest's
header: ZKGPU_TEST_SEED) and edge values (0, 1, r - 1)."""

from __future__ import annotations

import numpy as np
import pytest

from zkgpu.arith import ntt_cpu
from zkgpu.arith.domain import dft_naive, ntt_reference
from zkgpu.arith.field import FR, fr_from_ints, fr_random, fr_to_ints
from zkgpu.gpu.ntt.qap import compute_h_reference

P = FR.modulus
KINDS = [(False, False), (True, False), (False, True), (True, True)]


def _edges(n: int, rng) -> np.ndarray:
    vals = fr_to_ints(fr_random(n, rng))
    for i, v in zip(range(n), (0, 1, P - 1, P - 2), strict=False):  # the first min(n, 4) values
        vals[i] = v
    return fr_from_ints(vals)


@pytest.fixture(params=[True, False], ids=["numba", "python"])
def backend(request, monkeypatch):
    """Both paths: the numba kernel (skipped without numba) and the Python-int fallback."""
    if request.param and not ntt_cpu.available():
        pytest.skip("numba not installed")
    if not request.param:
        monkeypatch.setattr(ntt_cpu, "available", lambda: False)
    return request.param


@pytest.mark.parametrize("log_n", [0, 1, 2, 3, 6, 10])
@pytest.mark.parametrize(("inverse", "coset"), KINDS)
def test_ntt_matches_reference(backend, log_n, inverse, coset, rng):
    x = _edges(1 << log_n, rng)
    got = ntt_cpu.ntt(x, inverse=inverse, coset=coset)
    assert got.dtype == np.uint64 and got.shape == x.shape
    assert fr_to_ints(got) == ntt_reference(x, inverse=inverse, coset=coset)


@pytest.mark.parametrize(("inverse", "coset"), KINDS)
def test_ntt_matches_naive_dft(inverse, coset, rng):
    x = _edges(16, rng)
    assert fr_to_ints(ntt_cpu.ntt(x, inverse=inverse, coset=coset)) == dft_naive(fr_to_ints(x), inverse=inverse, coset=coset)


def test_ntt_round_trip_2_14(rng):
    x = fr_random(1 << 14, rng)
    for coset in (False, True):
        assert (ntt_cpu.ntt(ntt_cpu.ntt(x, coset=coset), inverse=True, coset=coset) == x).all()


def test_scaled_ntt(backend, rng):
    x = _edges(64, rng)
    start, ratio = int(rng.integers(1, 2**62)) * 7919 % P, P - 3
    want = ntt_reference([v * start * pow(ratio, i, P) % P for i, v in enumerate(fr_to_ints(x))])
    assert fr_to_ints(ntt_cpu.scaled_ntt(x, start, ratio)) == want


@pytest.mark.parametrize("log_n", [0, 1, 4, 9])
def test_compute_h_matches_reference(backend, log_n, rng):
    a, b = _edges(1 << log_n, rng), fr_random(1 << log_n, rng)
    c = fr_from_ints([x * y % P for x, y in zip(fr_to_ints(a), fr_to_ints(b), strict=True)])
    c2 = fr_random(1 << log_n, rng)  # a non-divisible A*B - C: both drop the remainder the same way
    for cc in (c, c2):
        want = compute_h_reference(fr_to_ints(a), fr_to_ints(b), fr_to_ints(cc))
        assert fr_to_ints(ntt_cpu.compute_h(a, b, cc)) == want


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="power of two"):
        ntt_cpu.ntt(fr_random(3, 1))
    bad = fr_random(4, 1)
    bad[2] = np.frombuffer(P.to_bytes(32, "little"), dtype="<u8")
    with pytest.raises(ValueError, match=r"\[2\]|index 2|values"):
        ntt_cpu.ntt(bad)
    with pytest.raises(ValueError, match="one size"):
        ntt_cpu.compute_h(fr_random(4, 1), fr_random(4, 2), fr_random(8, 3))
    with pytest.raises((TypeError, ValueError)):
        ntt_cpu.ntt(np.zeros((4, 4), dtype=np.float64))
