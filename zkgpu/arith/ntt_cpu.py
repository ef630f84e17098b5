"""Fast NTTs of Fr on the CPU for ``--device cpu``: the transforms of :mod:`zkgpu.arith.domain` (same results as
:func:`zkgpu.arith.domain.ntt_reference`) in one numba kernel: CIOS Montgomery products over 32-bit words (Koc,
Acar, Kaliski, IEEE Micro 1996), bit reversal then radix-2 Cooley-Tukey butterflies (Cormen et al., ch. 30.3).
Without numba every function falls back to ``ntt_reference``.
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
        p0, p1, p2, p3, p4, p5, p6, p7 = p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]

        def mul(a, ai, b, bi, out, oi):  # out[oi] = a[ai] * b[bi] / 2^256 mod p (CIOS, unrolled over 8 words); out may alias a or b
            a0, a1, a2, a3, a4, a5, a6, a7 = np.uint64(a[ai, 0]), np.uint64(a[ai, 1]), np.uint64(a[ai, 2]), np.uint64(a[ai, 3]), np.uint64(a[ai, 4]), np.uint64(a[ai, 5]), np.uint64(a[ai, 6]), np.uint64(a[ai, 7])
            t0 = t1 = t2 = t3 = t4 = t5 = t6 = t7 = t8 = t9 = np.uint64(0)
            for i in range(8):
                bw = np.uint64(b[bi, i])
                s = t0 + a0 * bw  # each sum <= 2^64 - 1
                t0 = s & mask
                c = s >> s32
                s = t1 + a1 * bw + c
                t1 = s & mask
                c = s >> s32
                s = t2 + a2 * bw + c
                t2 = s & mask
                c = s >> s32
                s = t3 + a3 * bw + c
                t3 = s & mask
                c = s >> s32
                s = t4 + a4 * bw + c
                t4 = s & mask
                c = s >> s32
                s = t5 + a5 * bw + c
                t5 = s & mask
                c = s >> s32
                s = t6 + a6 * bw + c
                t6 = s & mask
                c = s >> s32
                s = t7 + a7 * bw + c
                t7 = s & mask
                c = s >> s32
                s = t8 + c
                t8 = s & mask
                t9 = s >> s32
                m = (t0 * pinv) & mask
                c = (t0 + m * p0) >> s32
                s = t1 + m * p1 + c
                t0 = s & mask
                c = s >> s32
                s = t2 + m * p2 + c
                t1 = s & mask
                c = s >> s32
                s = t3 + m * p3 + c
                t2 = s & mask
                c = s >> s32
                s = t4 + m * p4 + c
                t3 = s & mask
                c = s >> s32
                s = t5 + m * p5 + c
                t4 = s & mask
                c = s >> s32
                s = t6 + m * p6 + c
                t5 = s & mask
                c = s >> s32
                s = t7 + m * p7 + c
                t6 = s & mask
                c = s >> s32
                s = t8 + c
                t7 = s & mask
                t8 = t9 + (s >> s32)
            # t < 2p: t - p when t >= p (t8 set, or no borrow out of the subtraction)
            br = np.uint64(0)
            d0 = (t0 - p0 - br) & mask
            br = np.uint64(1) if t0 < p0 + br else np.uint64(0)
            d1 = (t1 - p1 - br) & mask
            br = np.uint64(1) if t1 < p1 + br else np.uint64(0)
            d2 = (t2 - p2 - br) & mask
            br = np.uint64(1) if t2 < p2 + br else np.uint64(0)
            d3 = (t3 - p3 - br) & mask
            br = np.uint64(1) if t3 < p3 + br else np.uint64(0)
            d4 = (t4 - p4 - br) & mask
            br = np.uint64(1) if t4 < p4 + br else np.uint64(0)
            d5 = (t5 - p5 - br) & mask
            br = np.uint64(1) if t5 < p5 + br else np.uint64(0)
            d6 = (t6 - p6 - br) & mask
            br = np.uint64(1) if t6 < p6 + br else np.uint64(0)
            d7 = (t7 - p7 - br) & mask
            br = np.uint64(1) if t7 < p7 + br else np.uint64(0)
            if t8 == 0 and br:
                out[oi, 0] = np.uint32(t0)
                out[oi, 1] = np.uint32(t1)
                out[oi, 2] = np.uint32(t2)
                out[oi, 3] = np.uint32(t3)
                out[oi, 4] = np.uint32(t4)
                out[oi, 5] = np.uint32(t5)
                out[oi, 6] = np.uint32(t6)
                out[oi, 7] = np.uint32(t7)
            else:
                out[oi, 0] = np.uint32(d0)
                out[oi, 1] = np.uint32(d1)
                out[oi, 2] = np.uint32(d2)
                out[oi, 3] = np.uint32(d3)
                out[oi, 4] = np.uint32(d4)
                out[oi, 5] = np.uint32(d5)
                out[oi, 6] = np.uint32(d6)
                out[oi, 7] = np.uint32(d7)

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
    """One NTT of :mod:`zkgpu.arith.domain`'s four, natural order: ``values`` ``(n, 4)`` uint64 canonical, n = 2^L
    (L <= 32) → a new ``(n, 4)`` uint64 canonical array.

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
    """``X[j] = sum_i values[i] * start * ratio^i * omega^(i*j)``: ``values`` ``(n, 4)`` uint64 canonical, n = 2^L;
    ``start``, ``ratio`` Fr ints; returns a new ``(n, 4)`` uint64 canonical array.

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
    """The n coefficients of ``h = (A*B - C) / Z`` from ``a, b, c`` (``(n, 4)`` uint64 canonical evaluations, zkgpu's
    order), as :func:`zkgpu.gpu.ntt.qap.compute_h_reference`; returns ``(n, 4)`` uint64 canonical.

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
        evals = [ntt_reference(ntt_reference(v, inverse=True), coset=True) for v in arrs]
        hc = [(x * y - z) * zinv % P for x, y, z in zip(*evals, strict=True)]
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
