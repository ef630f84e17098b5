"""The NTT domain of Fr on the CPU: sizes, bit reversal and the reference transforms (Python ints).

n = 2^L, omega = ``FR.root_of_unity(L)``, g = 7: forward ``X[j] = sum_i c[i] omega^(ij)``; inverse with omega^-1 and
n^-1; coset forward: NTT of ``c[i] g^i``; coset inverse: inverse, then ``c[i] *= g^-i``. :func:`ntt_reference`: radix-2
Gentleman-Sande (AFIPS 1966); :func:`dft_naive`: the O(n^2) definition."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from zkgpu.arith.field import FR, fr_to_ints, not_canonical

__all__ = ["log2_size", "powers", "bitrev_indices", "ntt_reference", "dft_naive"]

P = FR.modulus
G = FR.generator


def log2_size(n: int) -> int:
    """log2 of an NTT size. Raises TypeError: not an int; ValueError: n < 1, not a power of two, or > 2^32."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"NTT size must be an int, got {n!r} ({type(n).__name__})")
    n = int(n)
    if n < 1:
        raise ValueError("NTT of an empty input: need at least 1 element")
    if n & (n - 1):
        raise ValueError(f"NTT size must be a power of two, got {n}")
    L = n.bit_length() - 1
    if L > FR.two_adicity:
        raise ValueError(f"NTT size 2^{L} exceeds the 2-adicity of Fr (2^{FR.two_adicity})")
    return L


def bitrev_indices(L: int) -> np.ndarray:
    """The bit-reversal permutation of 2^L indices: ``rev[i]`` = i with its L bits reversed, int64 ``(2^L,)``."""
    n = 1 << L
    idx = np.arange(n, dtype=np.int64)
    rev = np.zeros(n, dtype=np.int64)
    for b in range(L):
        rev |= ((idx >> b) & 1) << (L - 1 - b)
    return rev


def powers(x: int, n: int) -> list[int]:
    """``[1, x, x^2, ..., x^(n-1)]`` mod r (Python ints)."""
    out, acc = [], 1
    for _ in range(n):
        out.append(acc)
        acc = acc * x % P
    return out


def _int_list(values: Sequence[int] | np.ndarray) -> list[int]:
    if isinstance(values, np.ndarray) and values.dtype == np.uint64:
        return fr_to_ints(values)  # checks the layout and the range
    vals = list(values)
    for i, v in enumerate(vals):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"values[{i}] is {type(v).__name__}, not an int (no silent truncation)")
        v = vals[i] = int(v)
        if not 0 <= v < P:
            raise not_canonical(FR, "values", i, v)
    return vals


def ntt_reference(values: Sequence[int] | np.ndarray, *, inverse: bool = False, coset: bool = False) -> list[int]:
    """CPU NTT of n canonical Fr values (ints or ``(n, 4)`` uint64), natural order -> n ints. Raises ValueError: empty,
    not a power of two, beyond 2^32, or a value outside [0, r). TypeError: a non-int."""
    vals = _int_list(values)
    L = log2_size(len(vals))
    n = 1 << L
    x = np.empty(n, dtype=object)  # Python ints
    x[:] = vals
    if coset and not inverse:
        x = x * np.array(powers(G, n), dtype=object) % P
    omega = FR.root_of_unity(L)
    if inverse:
        omega = pow(omega, -1, P)
    for s in range(L - 1, -1, -1):  # Gentleman-Sande, natural -> bit-reversed
        h = 1 << s
        w = np.array(powers(pow(omega, n // (2 * h), P), h), dtype=object)
        v = x.reshape(-1, 2, h)
        a = v[:, 0, :].copy()
        b = v[:, 1, :].copy()
        v[:, 0, :] = (a + b) % P
        v[:, 1, :] = (a - b) * w % P
    x = x[bitrev_indices(L)]
    if inverse:
        n_inv = pow(n, -1, P)
        if coset:
            x = x * np.array(powers(pow(G, -1, P), n), dtype=object) % P
        x = x * n_inv % P
    return [int(v) for v in x]


def dft_naive(values: Sequence[int], *, inverse: bool = False, coset: bool = False) -> list[int]:
    """O(n^2) DFT straight from the definitions (the independent check of :func:`ntt_reference`)."""
    vals = [int(v) % P for v in values]
    L = log2_size(len(vals))
    n = 1 << L
    omega = FR.root_of_unity(L)
    if not inverse:
        if coset:
            vals = [v * pow(G, i, P) % P for i, v in enumerate(vals)]
        return [sum(vals[i] * pow(omega, i * j, P) for i in range(n)) % P for j in range(n)]
    oi, n_inv = pow(omega, -1, P), pow(n, -1, P)
    out = [sum(vals[j] * pow(oi, i * j, P) for j in range(n)) * n_inv % P for i in range(n)]
    if coset:
        gi = pow(G, -1, P)
        out = [v * pow(gi, i, P) % P for i, v in enumerate(out)]
    return out
