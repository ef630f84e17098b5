"""Sparse matrices over Fr on the CPU: the CSR layout (Saad, *Iterative Methods for Sparse Linear Systems*, 2nd ed.,
3.4), its product with a vector, and the pointwise product; the Groth16 synthesis step.

With numba the products are compiled CIOS Montgomery loops over 32-bit words (Koc, Acar, Kaliski, IEEE Micro 1996)
over numba's threads; coefficients 1 and r - 1 are an addition or subtraction. Without numba, Python-int loops
(:func:`spmv_reference`).
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from zkgpu.arith.field import FR, check_array, fr_from_ints, fr_to_ints
from zkgpu.core import optional

__all__ = ["FrCsr", "csr_from_coo", "check_csr", "fr_limbs", "spmv", "spmv_reference", "fr_mul", "has_compiled"]

P = FR.modulus
_ONE, _MINUS_ONE = 1, 2
"""Term kinds (:attr:`FrCsr.kind`): 0 a general coefficient, 1 the coefficient 1, 2 the coefficient r - 1."""


@dataclass
class FrCsr:
    """A sparse ``n_rows x n_cols`` matrix over Fr in CSR form, built by :func:`csr_from_coo`.

    Attributes:
        n_rows, n_cols: the shape.
        row_ptr: ``(n_rows + 1,)`` int64, non-decreasing, from 0 to nnz.
        col: ``(nnz,)`` int64 column of each term, < n_cols.
        val: ``(nnz, 4)`` uint64 canonical Fr coefficients.
        kind: ``(nnz,)`` uint8: 1 where the coefficient is 1, 2 where r - 1, else 0.
    """

    n_rows: int
    n_cols: int
    row_ptr: np.ndarray
    col: np.ndarray
    val: np.ndarray
    kind: np.ndarray
    _val_mont: np.ndarray | None = field(default=None, repr=False)
    _checked: tuple | None = field(default=None, repr=False, compare=False)  # check_csr's pass, by the arrays it checked

    @property
    def nnz(self) -> int:
        """The number of terms."""
        return int(self.col.shape[0])

    def val_mont(self) -> np.ndarray:
        """``(nnz, 4)`` uint64: each coefficient in Montgomery form (``v * 2^256 mod r``), computed once."""
        if self._val_mont is None:
            self._val_mont = _to_mont(self.val)
        return self._val_mont


def fr_limbs(values: Any, *, name: str = "values") -> np.ndarray:
    """Canonical Fr values as ``(n, 4)`` uint64: an array is checked (:func:`zkgpu.arith.field.check_array`), a
    sequence of Python ints in ``[0, r)`` converted (one ``to_bytes`` each, then the same check).

    Raises:
        TypeError / ValueError: as :func:`zkgpu.arith.field.check_array` (a value >= r named by index); OverflowError
            is turned into ValueError for a negative or too large int.
    """
    if isinstance(values, np.ndarray):
        return check_array(FR, values, name=name)
    try:
        try:
            raw = b"".join([v.to_bytes(32, "little") for v in values])  # Python ints (a key's coefficient list)
        except AttributeError:  # numpy integers among them
            raw = b"".join([int(v).to_bytes(32, "little") for v in values])
    except OverflowError as e:
        raise ValueError(f"{name}: a value is negative or does not fit 256 bits ({e})") from None
    arr = np.frombuffer(raw, dtype="<u8").astype(np.uint64).reshape(-1, 4)
    return check_array(FR, arr, name=name)


def csr_from_coo(rows: Any, cols: Any, values: Any, n_rows: int, n_cols: int) -> FrCsr:
    """The CSR of the terms ``(rows[k], cols[k], values[k])`` in any order (repeats add up; stable within a row).
    ``values``: ``(nnz, 4)`` uint64 canonical Fr or Python ints in ``[0, r)``.

    Raises:
        ValueError: lengths that differ, an index outside the shape (named), a value >= r, a negative shape.
            TypeError: a non-integer index array.
    """
    for nm, v in (("n_rows", n_rows), ("n_cols", n_cols)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"csr_from_coo: {nm} must be an int >= 0, got {v!r}")
    r, c = np.asarray(rows), np.asarray(cols)
    for nm, a in (("rows", r), ("cols", c)):
        if a.ndim != 1 or (a.size and not np.issubdtype(a.dtype, np.integer)):
            raise TypeError(f"csr_from_coo: {nm} must be a 1-D integer array, got {a.dtype} {a.shape}")
    val = fr_limbs(values, name="values")
    if not r.shape[0] == c.shape[0] == val.shape[0]:
        raise ValueError(f"csr_from_coo: {r.shape[0]} rows, {c.shape[0]} cols and {val.shape[0]} values differ in length")
    r64, c64 = r.astype(np.int64), c.astype(np.int64)
    for nm, a, bound in (("row", r64, n_rows), ("column", c64, n_cols)):
        bad = np.flatnonzero((a < 0) | (a >= bound))
        if bad.size:
            i = int(bad[0])
            raise ValueError(f"csr_from_coo: term {i} has {nm} {int(a[i])}, outside 0..{int(bound) - 1}")
    order = np.argsort(r64, kind="stable")
    row_ptr = np.zeros(int(n_rows) + 1, dtype=np.int64)
    np.cumsum(np.bincount(r64, minlength=int(n_rows)), out=row_ptr[1:])
    val = np.ascontiguousarray(val[order])
    out = FrCsr(int(n_rows), int(n_cols), row_ptr, np.ascontiguousarray(c64[order]), val, _kinds(val))
    out._checked = (id(out.row_ptr), id(out.col), id(out.val), id(out.kind), out.n_rows, out.n_cols)  # built valid here
    return out


def check_csr(csr: FrCsr) -> None:
    """Check :class:`FrCsr`'s invariants (vectorised, O(n_rows + nnz)): the compiled loops and the GPU kernels index
    with these arrays unchecked, so a hand-built or altered matrix must not reach them. A matrix from
    :func:`csr_from_coo`, or one checked here before, with the same arrays, is not checked again (arrays changed in
    place are the caller's: treat a matrix as read-only).

    Raises:
        ValueError: one line naming the first broken invariant (a shape, a row pointer, a column out of range, a
            coefficient >= r, a kind that does not match its coefficient).
    """
    nr, nc = csr.n_rows, csr.n_cols
    sig = (id(csr.row_ptr), id(csr.col), id(csr.val), id(csr.kind), nr, nc)  # the csr holds them: ids stay theirs
    if csr._checked == sig:  # checked before (csr_from_coo's output): O(1) for every later product
        return
    for nm, v in (("n_rows", nr), ("n_cols", nc)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"FrCsr: {nm} must be an int >= 0, got {v!r}")
    for nm, a, nd in (("row_ptr", csr.row_ptr, 1), ("col", csr.col, 1), ("kind", csr.kind, 1)):
        if not isinstance(a, np.ndarray) or a.ndim != nd or (a.size and not np.issubdtype(a.dtype, np.integer)):
            raise ValueError(f"FrCsr: {nm} must be a 1-D integer array, got {getattr(a, 'dtype', type(a).__name__)} {getattr(a, 'shape', '')}")
    ptr, col = csr.row_ptr, csr.col
    nnz = col.shape[0]
    if ptr.shape != (nr + 1,):
        raise ValueError(f"FrCsr: row_ptr has shape {ptr.shape}, expected ({nr + 1},) for {nr} rows")
    if ptr[0] != 0 or ptr[-1] != nnz:
        raise ValueError(f"FrCsr: row_ptr runs from {int(ptr[0])} to {int(ptr[-1])}, expected 0 to nnz = {nnz}")
    dec = np.flatnonzero(np.diff(ptr) < 0)
    if dec.size:
        raise ValueError(f"FrCsr: row_ptr decreases at row {int(dec[0])}")
    bad = np.flatnonzero((col < 0) | (col >= nc))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"FrCsr: term {i} has column {int(col[i])}, outside 0..{nc - 1}")
    val = check_array(FR, csr.val, name="FrCsr val")
    if val.shape[0] != nnz or csr.kind.shape != (nnz,):
        raise ValueError(f"FrCsr: {nnz} columns, {val.shape[0]} values and {csr.kind.shape[0]} kinds differ in length")
    wrong = np.flatnonzero(csr.kind != _kinds(val))
    if wrong.size:
        raise ValueError(f"FrCsr: term {int(wrong[0])} has kind {int(csr.kind[wrong[0]])}, not its coefficient's")
    csr._checked = sig


def _kinds(val: np.ndarray) -> np.ndarray:
    one = (val[:, 0] == 1) & (val[:, 1:] == 0).all(axis=1)
    minus = (val == fr_from_ints([P - 1])[0]).all(axis=1)
    return (one * _ONE + minus * _MINUS_ONE).astype(np.uint8)


def spmv_reference(csr: FrCsr, w: list[int]) -> list[int]:
    """``out[i] = sum_k val[k] * w[col[k]] mod r`` over row i's terms, on Python ints (the tests' reference).

    Raises:
        ValueError: ``len(w) != n_cols``.
    """
    if len(w) != csr.n_cols:
        raise ValueError(f"spmv: the vector has {len(w)} entries, the matrix {csr.n_cols} columns")
    vals = fr_to_ints(csr.val)
    cols, ptr = csr.col.tolist(), csr.row_ptr.tolist()
    return [sum(vals[k] * w[cols[k]] for k in range(ptr[i], ptr[i + 1])) % P for i in range(csr.n_rows)]


def has_compiled() -> bool:
    """Whether :func:`spmv` and :func:`fr_mul` run compiled (numba present on a little-endian host)."""
    return _kernels() is not None


def spmv(csr: FrCsr, w: np.ndarray, *, out: np.ndarray | None = None) -> np.ndarray:
    """``csr @ w`` over Fr: ``w`` ``(n_cols, 4)`` uint64 canonical; returns ``out`` (default new), ``(n_rows, 4)`` uint64
    canonical, 0 for an empty row.

    Raises:
        ValueError: w of another length or a value >= r (named), out of another shape, a csr that breaks its
            invariants (:func:`check_csr`). TypeError: w not uint64.
    """
    check_csr(csr)
    wv = check_array(FR, w, name="w")
    if wv.shape[0] != csr.n_cols:
        raise ValueError(f"spmv: the vector has {wv.shape[0]} entries, the matrix {csr.n_cols} columns")
    if out is None:
        out = np.empty((csr.n_rows, 4), dtype=np.uint64)
    elif out.shape != (csr.n_rows, 4) or out.dtype != np.uint64 or not out.flags.c_contiguous:
        raise ValueError(f"spmv: out must be C-contiguous ({csr.n_rows}, 4) uint64, got {out.shape} {out.dtype}")
    k = _kernels()
    if k is None:
        out[:] = fr_from_ints(spmv_reference(csr, fr_to_ints(wv)))
        return out
    k(0, np.ascontiguousarray(csr.row_ptr, dtype=np.int64), np.ascontiguousarray(csr.col, dtype=np.int64), np.ascontiguousarray(csr.kind, dtype=np.uint8),
      _words(csr.val_mont()), _words(np.ascontiguousarray(wv)), _words(out),
      _R_WORDS, _P_WORDS, _PINV)  # fmt: skip
    return out


def fr_mul(a: np.ndarray, b: np.ndarray, *, out: np.ndarray | None = None, check: bool = True) -> np.ndarray:
    """``a * b mod r`` pointwise: ``(n, 4)`` uint64 canonical in, ``(n, 4)`` uint64 canonical out (``out`` if given;
    it may be ``a`` or ``b``). ``check=False`` skips the value check (dtype and shape are still checked): for
    inputs known canonical, e.g. :func:`spmv`'s output.

    Raises:
        ValueError: shapes that differ or (with ``check``) a value >= r. TypeError: not uint64.
    """
    if check:
        av, bv = check_array(FR, a, name="a"), check_array(FR, b, name="b")
    else:
        for nm, x in (("a", a), ("b", b)):
            if not isinstance(x, np.ndarray) or x.dtype != np.uint64 or x.ndim != 2 or x.shape[1] != 4:
                raise TypeError(f"fr_mul: {nm} must be a (n, 4) uint64 array")
        av, bv = a, b
    if av.shape != bv.shape:
        raise ValueError(f"fr_mul: a has {av.shape[0]} elements, b {bv.shape[0]}")
    if out is None:
        out = np.empty_like(av)
    elif out.shape != av.shape or out.dtype != np.uint64 or not out.flags.c_contiguous:
        raise ValueError(f"fr_mul: out must be C-contiguous {av.shape} uint64, got {out.shape} {out.dtype}")
    k = _kernels()
    if k is None:
        out[:] = fr_from_ints([x * y % P for x, y in zip(fr_to_ints(av), fr_to_ints(bv), strict=True)])
        return out
    k(1, _EMPTY_I64, _EMPTY_I64, _EMPTY_U8, _words(np.ascontiguousarray(av)), _words(np.ascontiguousarray(bv)), _words(out),
      _R2_WORDS, _P_WORDS, _PINV)  # fmt: skip
    return out


def _to_mont(val: np.ndarray) -> np.ndarray:
    """Canonical -> Montgomery form (``v * R mod r``): the product with R^2 (compiled, else Python ints)."""
    if not val.shape[0]:
        return val.copy()
    k = _kernels()
    if k is None:
        return fr_from_ints([FR.to_mont(v) for v in fr_to_ints(val)])
    out = np.empty_like(val)
    r2 = np.broadcast_to(fr_from_ints([FR.R2]), val.shape)
    k(1, _EMPTY_I64, _EMPTY_I64, _EMPTY_U8, _words(np.ascontiguousarray(val)), _words(np.ascontiguousarray(r2)), _words(out),
      _R_WORDS, _P_WORDS, _PINV)  # fmt: skip
    return out


def _words(a: np.ndarray) -> np.ndarray:
    """The ``(n, 8)`` uint32 view of a C-contiguous ``(n, 4)`` uint64 array (little-endian host)."""
    return a.view(np.uint32).reshape(a.shape[0], 8)


def _word_row(v: int) -> np.ndarray:
    return np.array([(v >> (32 * i)) & 0xFFFFFFFF for i in range(8)], dtype=np.uint64)


_P_WORDS = _word_row(P)
_R2_WORDS = _word_row(FR.R2).reshape(1, 8)
_R_WORDS = _word_row((1 << 256) % P).reshape(1, 8)
_EMPTY_I64, _EMPTY_U8 = np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.uint8)
_PINV = np.uint64((-pow(P, -1, 1 << 32)) % (1 << 32))


@functools.lru_cache(maxsize=1)
def _kernels() -> Any:
    """The compiled loop ``rows``, or None without numba (or on a big-endian host). ``rows(0, ...)``: out[i] = Σ
    mm(val_mont[k], w[col[k]]) (±w for kind 1/2); ``rows(1, ...)``: out[i] = mm(mm(a[i], b[i]), k), 0 where an operand
    is 0. mm(x, y) = x y R^-1 mod p, R = 2^256, on ``(n, 8)`` uint32 words, pinv = -p^-1 mod 2^32.
    """
    numba = optional.numba()
    if numba is None or sys.byteorder != "little":
        return None

    @numba.njit(nogil=True, cache=True, parallel=True)
    def rows(mode, row_ptr, col, kind, val, w, out, kconst, p, pinv):  # no closure variables: numba's disk cache hits
        def mont(a, ia, b, ib, out, io, t, p, pinv):  # out[io] = a[ia] b[ib] R^-1 mod p (CIOS, 32-bit words); < p
            mask = np.uint64(0xFFFFFFFF)
            s32 = np.uint64(32)
            for j in range(10):
                t[j] = 0
            for i in range(8):
                ai = np.uint64(a[ia, i])
                carry = np.uint64(0)
                for j in range(8):
                    s = t[j] + ai * np.uint64(b[ib, j]) + carry
                    t[j] = s & mask
                    carry = s >> s32
                s = t[8] + carry
                t[8] = s & mask
                t[9] = s >> s32
                q = (t[0] * pinv) & mask
                s = t[0] + q * p[0]
                carry = s >> s32
                for j in range(1, 8):
                    s = t[j] + q * p[j] + carry
                    t[j - 1] = s & mask
                    carry = s >> s32
                s = t[8] + carry
                t[7] = s & mask
                t[8] = t[9] + (s >> s32)
            ge = t[8] != 0
            if not ge:
                ge = True
                for k in range(7, -1, -1):
                    if t[k] != p[k]:
                        ge = t[k] > p[k]
                        break
            borrow = np.uint64(0)
            for k in range(8):
                x = t[k]
                y = (p[k] if ge else np.uint64(0)) + borrow
                out[io, k] = (x - y) & mask
                borrow = np.uint64(1) if x < y else np.uint64(0)

        def add_mod(acc, b, ib, neg, p):  # acc[0, :] (uint64 words) += b[ib] (-= when neg) mod p; both < p
            mask = np.uint64(0xFFFFFFFF)
            s32 = np.uint64(32)
            if neg:
                borrow = np.uint64(0)
                for k in range(8):
                    x = acc[0, k]
                    y = np.uint64(b[ib, k]) + borrow
                    acc[0, k] = (x - y) & mask
                    borrow = np.uint64(1) if x < y else np.uint64(0)
                if borrow:
                    carry = np.uint64(0)
                    for k in range(8):
                        s = acc[0, k] + p[k] + carry
                        acc[0, k] = s & mask
                        carry = s >> s32
                return
            carry = np.uint64(0)
            for k in range(8):
                s = acc[0, k] + np.uint64(b[ib, k]) + carry
                acc[0, k] = s & mask
                carry = s >> s32
            ge = carry != 0
            if not ge:
                ge = True
                for k in range(7, -1, -1):
                    if acc[0, k] != p[k]:
                        ge = acc[0, k] > p[k]
                        break
            if ge:
                borrow = np.uint64(0)
                for k in range(8):
                    x = acc[0, k]
                    y = p[k] + borrow
                    acc[0, k] = (x - y) & mask
                    borrow = np.uint64(1) if x < y else np.uint64(0)

        n = out.shape[0]
        chunk = 4096
        for ci in numba.prange((n + chunk - 1) // chunk):
            t = np.zeros(10, dtype=np.uint64)
            acc = np.zeros((1, 8), dtype=np.uint64)
            prod = np.zeros((1, 8), dtype=np.uint64)
            for i in range(ci * chunk, min(n, (ci + 1) * chunk)):
                if mode == 1:  # out[i] = mm(mm(val[i], w[i]), kconst); 0 without a product where either is 0
                    za, zb = True, True
                    for k in range(8):
                        if val[i, k] != 0:
                            za = False
                        if w[i, k] != 0:
                            zb = False
                    if za or zb:
                        for k in range(8):
                            acc[0, k] = 0
                    else:
                        mont(val, i, w, i, prod, 0, t, p, pinv)
                        mont(prod, 0, kconst, 0, acc, 0, t, p, pinv)
                else:  # out[i] = sum over row i
                    for k in range(8):
                        acc[0, k] = 0
                    for e in range(row_ptr[i], row_ptr[i + 1]):
                        kd = kind[e]
                        if kd == 0:
                            mont(val, e, w, col[e], prod, 0, t, p, pinv)
                            add_mod(acc, prod, 0, False, p)
                        else:
                            add_mod(acc, w, col[e], kd == 2, p)
                for k in range(8):
                    out[i, k] = np.uint32(acc[0, k])

    return rows
