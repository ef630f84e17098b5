"""Fast NTTs of Fr on the CPU: compiled Montgomery arithmetic over 32-bit words (numba), for ``--device cpu``.

The transforms are those of :mod:`zkgpu.arith.domain` (same definitions, same natural order, same
results as :func:`zkgpu.arith.domain.ntt_reference`, which stays the independent reference), computed
by one numba kernel (:func:`_kernel`, compiled on first use and cached on disk by numba) instead of
numpy object arrays of Python ints:

* elements in Montgomery form ``x * 2^256 mod r`` as 8 little-endian 32-bit words (the ``(n, 4)``
  uint64 host layout viewed as ``(n, 8)`` uint32), products by CIOS Montgomery multiplication
  (Koc, Acar and Kaliski, "Analyzing and comparing Montgomery multiplication algorithms", IEEE Micro 1996)
  with 64-bit accumulators;
* the transform: bit-reversal permutation, then iterative radix-2 Cooley-Tukey butterflies with a
  table of ``omega^k``, k < n/2 (Cormen et al., *Introduction to Algorithms*, ch. 30.3).

Without numba (it is an optional package: :func:`zkgpu.core.optional.numba`) every function falls
back to :func:`~zkgpu.arith.domain.ntt_reference` on Python ints: the same results, slowly.
"""

from __future__ import annotations

import functools
import sys
from typing import Any

import numpy as np

from zkgpu.arith.domain import G, P, bitrev_indices, log2_size, ntt_reference, powers
from zkgpu.arith.field import FR, check_array, fr_from_ints, fr_to_ints
from zkgpu.core import optional

__all__ = ["available", "ntt", "scaled_ntt", "compute_h"]

# kernel operations (the ``op`` argument of :func:`_kernel`)
_OP_MUL_CONST = 0  # x[i] = x[i] * c            (c = y[0])
_OP_GEOMETRIC = 1  # x[i] = x[i] * s * q^i      (s = y[0], q = y[1])
_OP_NTT = 2  # x = NTT_omega(x), x bit-reversed on entry  (omega = y[0]; tw: n/2 rows of scratch)
_OP_H = 3  # x[i] = (x[i] * y[i] - z[i]) * c   (c = tw[0])


@functools.lru_cache(maxsize=1)
def _kernel() -> Any:
    """The one numba kernel ``fr_kernel(op, x, y, z, tw, p, pinv, one)`` over ``(n, 8)`` uint32 Montgomery
    words (operations above; ``p``: r's 8 words as uint64, ``pinv = -r^-1 mod 2^32``, ``one``: R mod r's
    words), or None without numba (or on a big-endian host, where the uint64 layout is not 8 LE words)."""
    numba = optional.numba()
    if numba is None or sys.byteorder != "little":
        return None

    @numba.njit(nogil=True, cache=True)
    def fr_kernel(op, x, y, z, tw, p, pinv, one):  # no closure variables: numba's disk cache then hits in every process
        mask = np.uint64(0xFFFFFFFF)
        s32 = np.uint64(32)
        t = np.zeros(10, dtype=np.uint64)
        tmp = np.zeros((3, 8), dtype=np.uint32)

        def mul(a, ai, b, bi, out, oi):  # out[oi] = a[ai] * b[bi] / 2^256 mod p (CIOS); out may alias a or b
            for j in range(10):
                t[j] = 0
            for i in range(8):
                bw = np.uint64(b[bi, i])
                c = np.uint64(0)
                for j in range(8):
                    s = t[j] + np.uint64(a[ai, j]) * bw + c  # <= 2^64 - 1
                    t[j] = s & mask
                    c = s >> s32
                s = t[8] + c
                t[8] = s & mask
                t[9] = s >> s32
                m = (t[0] * pinv) & mask
                s = t[0] + m * p[0]
                c = s >> s32
                for j in range(1, 8):
                    s = t[j] + m * p[j] + c
                    t[j - 1] = s & mask
                    c = s >> s32
                s = t[8] + c
                t[7] = s & mask
                t[8] = t[9] + (s >> s32)
            ge = t[8] != 0  # t < 2p: subtract p once when t >= p
            if not ge:
                ge = True
                for j in range(7, -1, -1):
                    if t[j] != p[j]:
                        ge = t[j] > p[j]
                        break
            borrow = np.uint64(0)
            for j in range(8):
                sub = (p[j] if ge else np.uint64(0)) + borrow
                out[oi, j] = np.uint32((t[j] - sub) & mask)
                borrow = np.uint64(1) if t[j] < sub else np.uint64(0)

        def addsub(a, ai, b, bi, out_sum, si, out_diff, di):  # (a + b, a - b) mod p; outputs may alias the inputs
            c = np.uint64(0)
            br = np.uint64(0)
            for j in range(8):  # sum into t[0..7] (+ carry), difference into tmp[2]
                aw = np.uint64(a[ai, j])
                bw = np.uint64(b[bi, j])
                s = aw + bw + c
                t[j] = s & mask
                c = s >> s32
                d = aw - bw - br
                tmp[2, j] = np.uint32(d & mask)
                br = np.uint64(1) if aw < bw + br else np.uint64(0)
            ge = c != 0  # a + b < 2p < 2^256: c is 0; subtract p when the sum >= p
            if not ge:
                ge = True
                for j in range(7, -1, -1):
                    if t[j] != p[j]:
                        ge = t[j] > p[j]
                        break
            b2 = np.uint64(0)
            for j in range(8):
                sub = (p[j] if ge else np.uint64(0)) + b2
                out_sum[si, j] = np.uint32((t[j] - sub) & mask)
                b2 = np.uint64(1) if t[j] < sub else np.uint64(0)
            c = np.uint64(0)
            for j in range(8):  # a - b < 0: add p back
                s = np.uint64(tmp[2, j]) + (p[j] if br else np.uint64(0)) + c
                out_diff[di, j] = np.uint32(s & mask)
                c = s >> s32

        n = x.shape[0]
        if op == _OP_MUL_CONST:
            for i in range(n):
                mul(x, i, y, 0, x, i)
        elif op == _OP_GEOMETRIC:
            tmp[0, :] = y[0, :]
            for i in range(n):
                mul(x, i, tmp, 0, x, i)
                mul(tmp, 0, y, 1, tmp, 0)
        elif op == _OP_H:
            for i in range(n):
                mul(x, i, y, i, x, i)
                addsub(x, i, z, i, tmp, 1, x, i)
                mul(x, i, tw, 0, x, i)
        elif op == _OP_NTT:
            half = n // 2
            if half:
                tw[0, :] = one[:]
                for k in range(1, half):
                    mul(tw, k - 1, y, 0, tw, k)
            h = 1
            while h < n:
                step = half // h
                for k in range(0, n, 2 * h):
                    for j in range(h):
                        mul(x, k + j + h, tw, j * step, tmp, 0)
                        addsub(x, k + j, tmp, 0, x, k + j, x, k + j + h)
                h *= 2

    return fr_kernel


@functools.lru_cache(maxsize=1)
def _consts() -> tuple[np.ndarray, np.uint64, np.ndarray]:
    p = np.frombuffer(P.to_bytes(32, "little"), dtype="<u4").astype(np.uint64)
    return p, np.uint64(FR.inv32), _words([FR.R])[0:1]


def _words(ints: list[int]) -> np.ndarray:
    """Python ints (already reduced, any form) -> ``(k, 8)`` uint32 words, little-endian."""
    return np.frombuffer(b"".join(v.to_bytes(32, "little") for v in ints), dtype="<u4").reshape(len(ints), 8).copy()


def _mont(v: int) -> int:
    return v * FR.R % P


def _run(op: int, x: np.ndarray, y: np.ndarray, z: np.ndarray | None = None, tw: np.ndarray | None = None) -> None:
    p, pinv, one = _consts()
    empty = np.zeros((1, 8), dtype=np.uint32)
    _kernel()(op, x, y, empty if z is None else z, empty if tw is None else tw, p, pinv, one)


def _to_mont(values: np.ndarray, name: str) -> np.ndarray:
    """``(n, 4)`` uint64 canonical (checked: shape, dtype, range) -> a new ``(n, 8)`` uint32 Montgomery array."""
    arr = check_array(FR, values, name=name)
    x = np.ascontiguousarray(arr, dtype=np.uint64).copy().view(np.uint32).reshape(arr.shape[0], 8)
    _run(_OP_MUL_CONST, x, _words([FR.R2]))  # x * R^2 / R = x R
    return x


def _from_mont(x: np.ndarray) -> np.ndarray:
    _run(_OP_MUL_CONST, x, _words([1]))  # mont(xR, 1) = x
    return x.view(np.uint64).reshape(x.shape[0], 4)


def _ntt_words(x: np.ndarray, omega: int) -> np.ndarray:
    """Forward transform with root ``omega`` (natural order in and out) of Montgomery words; returns a new array."""
    n = x.shape[0]
    y = np.ascontiguousarray(x[bitrev_indices(n.bit_length() - 1)])
    _run(_OP_NTT, y, _words([_mont(omega)]), tw=np.empty((max(n // 2, 1), 8), dtype=np.uint32))
    return y


def _geometric(x: np.ndarray, start: int, ratio: int) -> None:
    _run(_OP_GEOMETRIC, x, _words([_mont(start % P), _mont(ratio % P)]))


def available() -> bool:
    """Whether the compiled kernel is used (numba installed, little-endian host); else the Python-int fallback."""
    return _kernel() is not None


def ntt(values: np.ndarray, *, inverse: bool = False, coset: bool = False) -> np.ndarray:
    """One NTT of :mod:`zkgpu.arith.domain`'s four (forward/inverse, on H or on the coset g*H), natural order.

    Args:
        values: ``(n, 4)`` uint64 canonical Fr, n = 2^L (L <= 32).

    Returns:
        a new ``(n, 4)`` uint64 canonical array; equal to :func:`~zkgpu.arith.domain.ntt_reference`.

    Raises:
        ValueError: a size that is not a power of two, a value >= r, a wrong shape or dtype.
    """
    arr = check_array(FR, values, name="values")
    L = log2_size(arr.shape[0])
    if not available():
        return fr_from_ints(ntt_reference(arr, inverse=inverse, coset=coset))
    n = 1 << L
    x = _to_mont(arr, "values")
    omega = FR.root_of_unity(L)
    if inverse:
        y = _ntt_words(x, pow(omega, -1, P))
        _geometric(y, pow(n, -1, P), pow(G, -1, P) if coset else 1)
    else:
        if coset:
            _geometric(x, 1, G)
        y = _ntt_words(x, omega)
    return _from_mont(y)


def scaled_ntt(values: np.ndarray, start: int, ratio: int) -> np.ndarray:
    """The forward NTT of ``values[i] * start * ratio^i`` (a coset NTT with shift ``ratio``, times ``start``).

    Args:
        values: ``(n, 4)`` uint64 canonical Fr, n = 2^L. start, ratio: Fr elements (ints, reduced mod r).

    Returns:
        a new ``(n, 4)`` uint64 canonical array: ``X[j] = sum_i values[i] * start * ratio^i * omega^(i*j)``.

    Raises:
        ValueError: as :func:`ntt`.
    """
    arr = check_array(FR, values, name="values")
    L = log2_size(arr.shape[0])
    if not available():
        f = powers(ratio % P, 1 << L)
        return fr_from_ints(ntt_reference([v * start % P * fi % P for v, fi in zip(fr_to_ints(arr), f, strict=True)]))
    x = _to_mont(arr, "values")
    _geometric(x, start, ratio)
    return _from_mont(_ntt_words(x, FR.root_of_unity(L)))


def compute_h(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The n coefficients of ``h = (A*B - C) / Z`` from the evaluations of A, B, C on the domain (zkgpu's
    order): inverse NTTs, coset NTTs, ``(a*b - c) / Z`` on the coset g*H, inverse coset NTT (the
    computation of :func:`zkgpu.gpu.ntt.qap.compute_h_reference`, with the same result).

    Args:
        a, b, c: ``(n, 4)`` uint64 canonical Fr each, n = 2^L.

    Returns:
        ``(n, 4)`` uint64 canonical.

    Raises:
        ValueError: sizes that differ or are not a power of two, a value >= r, a wrong shape or dtype.
    """
    arrs = [check_array(FR, v, name=nm) for v, nm in zip((a, b, c), "abc", strict=True)]
    if len({v.shape[0] for v in arrs}) != 1:
        raise ValueError(f"compute_h: a, b, c have {[v.shape[0] for v in arrs]} elements, expected one size")
    L = log2_size(arrs[0].shape[0])
    n = 1 << L
    zinv = pow(pow(G, n, P) - 1, -1, P)
    if not available():
        ev = [ntt_reference(ntt_reference(v, inverse=True), coset=True) for v in arrs]
        hc = [(x * y - z) * zinv % P for x, y, z in zip(*ev, strict=True)]
        return fr_from_ints(ntt_reference(hc, inverse=True, coset=True))
    omega = FR.root_of_unity(L)
    omega_inv, n_inv = pow(omega, -1, P), pow(n, -1, P)
    ev = []
    for v, nm in zip(arrs, "abc", strict=True):
        x = _ntt_words(_to_mont(v, nm), omega_inv)  # n * coefficients
        _geometric(x, n_inv, G)  # coefficients times g^i: the coset's
        ev.append(_ntt_words(x, omega))
    _run(_OP_H, ev[0], ev[1], ev[2], tw=_words([_mont(zinv)]))
    y = _ntt_words(ev[0], omega_inv)
    _geometric(y, n_inv, pow(G, -1, P))
    return _from_mont(y)
