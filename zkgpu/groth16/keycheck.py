"""Validation of a proving key's points and of a witness against its circuit (groth16 layer).

:func:`check_key` checks every point of an untrusted ``.zkey``: on the curve (``y^2 = x^3 + 4``, G2 over
Fq[u]/(u^2 + 1)), in the order-r subgroup by Scott's endomorphism criteria (ePrint 2021/1130; constants in
:mod:`zkgpu.arith.endo`; on the GPU via :mod:`zkgpu.gpu.subgroup`, else arkworks for header points and
:func:`subgroup_batch` for the large sections), and not degenerate (no identity among alpha1, beta1, beta2,
delta1, delta2, gamma2; two pairing checks on delta and beta).

The batch subgroup test: E(Fq) = G × T, so P is in G iff its T-component is zero. Each point gets a random k-bit
mask; round j sums the points with bit j set, round "all" sums every point, and each sum is tested exactly. One bad
point is always found; several pass each round with probability <= 1/2 independently, so a crafted key passes with
probability <= 2^-k (k = :data:`ROUNDS`). :func:`check_constraints` checks ``A.w o B.w = C.w`` and names the first
failing constraint.
"""

from __future__ import annotations

import functools
import operator
import secrets
import sys
from typing import Any

import numpy as np

from zkgpu.arith.field import FQ, FR, check_array, fr_from_ints, fr_to_ints
from zkgpu.core import cuda as _cuda
from zkgpu.core import optional
from zkgpu.gpu import subgroup

__all__ = ["ROUNDS", "KeyCheckError", "first_off_curve", "subgroup_batch", "first_outside", "check_key", "check_constraints"]

ROUNDS = 16
"""Rounds of :func:`subgroup_batch` (a crafted key with several bad points passes w.p. <= 2^-ROUNDS)."""

_Q = FQ.modulus
_R = FR.modulus


class KeyCheckError(ValueError):
    """A key point that is not a valid point of its group, or a degenerate key (a one-line message)."""


def _coords(arr: np.ndarray, ncoord: int) -> list[np.ndarray]:
    """``(n, 6 * ncoord)`` uint64 canonical limbs -> ncoord object arrays of Python ints."""
    a = np.ascontiguousarray(arr, dtype=np.uint64)
    out = []
    for c in range(ncoord):
        acc = np.zeros(a.shape[0], dtype=object)
        for k in range(6):
            acc = acc + (a[:, 6 * c + k].astype(object) << (64 * k))
        out.append(acc)
    return out


@functools.lru_cache(maxsize=1)
def _on_curve_kernel() -> Any:
    """numba's exact on-curve test over ``(n, 12 * ncoord)`` uint32 words of canonical coordinates (``ncoord`` 2: G1,
    4: G2 over Fq2 = Fq[u]/(u^2 + 1)): the index of the first point with ``y^2 != x^3 + b`` (the identity, all zero,
    skipped), or -1. Montgomery products (CIOS over 32-bit words), brought back to canonical form by one product with
    R^2 (for y^2 R^-1) or R^3 (for x^3 R^-2), then compared word by word. None without numba."""
    numba = optional.numba()
    if numba is None:
        return None

    @numba.njit(nogil=True, cache=True)
    def on_curve(xy, ncoord, p, pinv, r2, r3, b):  # no closure variables: numba's disk cache then hits in every process
        n = xy.shape[0]
        mask = np.uint64(0xFFFFFFFF)
        s32 = np.uint64(32)
        W = 12
        t = np.zeros(W + 2, dtype=np.uint64)
        def mm(a, bb, out):
            for j in range(W + 2):
                t[j] = 0
            for i in range(W):
                ai = a[i]
                carry = np.uint64(0)
                for j in range(W):
                    s = t[j] + ai * bb[j] + carry
                    t[j] = s & mask
                    carry = s >> s32
                s = t[W] + carry
                t[W] = s & mask
                t[W + 1] = s >> s32
                m = (t[0] * pinv) & mask
                s = t[0] + m * p[0]
                carry = s >> s32
                for j in range(1, W):
                    s = t[j] + m * p[j] + carry
                    t[j - 1] = s & mask
                    carry = s >> s32
                s = t[W] + carry
                t[W - 1] = s & mask
                t[W] = t[W + 1] + (s >> s32)
            ge = t[W] != 0
            if not ge:
                ge = True
                for k in range(W - 1, -1, -1):
                    if t[k] != p[k]:
                        ge = t[k] > p[k]
                        break
            borrow = np.uint64(0)
            for k in range(W):
                x = t[k]
                y = (p[k] if ge else np.uint64(0)) + borrow
                out[k] = (x - y) & mask
                borrow = np.uint64(1) if x < y else np.uint64(0)
        def add(a, bb, out):  # a, bb < p
            carry = np.uint64(0)
            for k in range(W):
                s = a[k] + bb[k] + carry
                out[k] = s & mask
                carry = s >> s32
            ge = carry != 0
            if not ge:
                ge = True
                for k in range(W - 1, -1, -1):
                    if out[k] != p[k]:
                        ge = out[k] > p[k]
                        break
            if ge:
                borrow = np.uint64(0)
                for k in range(W):
                    x = out[k]
                    y = p[k] + borrow
                    out[k] = (x - y) & mask
                    borrow = np.uint64(1) if x < y else np.uint64(0)
        def sub(a, bb, out):
            borrow = np.uint64(0)
            for k in range(W):
                x = a[k]
                y = bb[k] + borrow
                out[k] = (x - y) & mask
                borrow = np.uint64(1) if x < y else np.uint64(0)
            if borrow:
                carry = np.uint64(0)
                for k in range(W):
                    s = out[k] + p[k] + carry
                    out[k] = s & mask
                    carry = s >> s32
        u = np.zeros((12, W), dtype=np.uint64)
        row = np.zeros(xy.shape[1], dtype=np.uint64)
        for i in range(n):
            zero = True
            for k in range(xy.shape[1]):
                row[k] = np.uint64(xy[i, k])
                if row[k] != 0:
                    zero = False
            if zero:
                continue
            if ncoord == 2:
                x = row[0:W]
                y = row[W:2 * W]
                mm(x, x, u[0])  # x^3
                mm(u[0], x, u[1])
                mm(u[1], r3, u[2])
                add(u[2], b, u[3])                                       # x^3 + b
                mm(y, y, u[4])  # y^2
                mm(u[4], r2, u[5])
                for k in range(W):
                    if u[5][k] != u[3][k]:
                        return i
            else:
                x0 = row[0:W]
                x1 = row[W:2 * W]
                y0 = row[2 * W:3 * W]
                y1 = row[3 * W:4 * W]
                mm(x0, x0, u[0])  # s0 = x0^2 - x1^2  (R^-1)
                mm(x1, x1, u[1])
                sub(u[0], u[1], u[2])
                mm(x0, x1, u[0])  # s1 = 2 x0 x1
                add(u[0], u[0], u[3])
                mm(u[2], x0, u[0])  # c0 (R^-2)
                mm(u[3], x1, u[1])
                sub(u[0], u[1], u[4])
                mm(u[2], x1, u[0])  # c1
                mm(u[3], x0, u[1])
                add(u[0], u[1], u[5])
                mm(u[4], r3, u[6])  # X0 = x^3.c0 + 4
                add(u[6], b, u[6])
                mm(u[5], r3, u[7])  # X1 = x^3.c1 + 4
                add(u[7], b, u[7])
                mm(y0, y0, u[0])  # Y0
                mm(y1, y1, u[1])
                sub(u[0], u[1], u[2])
                mm(u[2], r2, u[8])
                mm(y0, y1, u[0])  # Y1
                add(u[0], u[0], u[3])
                mm(u[3], r2, u[9])
                for k in range(W):
                    if u[8][k] != u[6][k] or u[9][k] != u[7][k]:
                        return i
        return -1

    return on_curve


def _words(v: int) -> np.ndarray:
    return np.array([(v >> (32 * i)) & 0xFFFFFFFF for i in range(12)], dtype=np.uint64)


_MONT = {"p": _words(_Q), "pinv": np.uint64((-pow(_Q, -1, 1 << 32)) % (1 << 32)), "r2": _words((1 << 768) % _Q),
         "r3": _words((1 << 1152) % _Q), "b": _words(4)}


def first_off_curve(arr: np.ndarray, group: str) -> int | None:
    """The index of the first point of ``arr`` not on the curve (the identity, all zero, is on it), or None.

    Args:
        arr: ``(n, 12)`` (G1) or ``(n, 24)`` (G2) uint64 canonical coordinates.
        group: ``"G1"`` or ``"G2"``.
    """
    if arr.shape[0] == 0:
        return None
    kern = _on_curve_kernel() if sys.byteorder == "little" else None  # the kernel reads uint64 limbs as uint32 words
    if kern is not None:
        words = np.ascontiguousarray(arr, dtype=np.uint64).view(np.uint32)
        bad_i = int(kern(words, 2 if group == "G1" else 4, _MONT["p"], _MONT["pinv"], _MONT["r2"], _MONT["r3"], _MONT["b"]))
        return None if bad_i < 0 else bad_i
    q = _Q
    if group == "G1":
        x, y = _coords(arr, 2)
        bad = (y * y - x * x % q * x - 4) % q != 0
    else:
        x0, x1, y0, y1 = _coords(arr, 4)
        sx0, sx1 = (x0 * x0 - x1 * x1) % q, (2 * x0 * x1) % q  # x^2
        cx0, cx1 = (sx0 * x0 - sx1 * x1) % q, (sx0 * x1 + sx1 * x0) % q  # x^3
        bad = ((y0 * y0 - y1 * y1 - cx0 - 4) % q != 0) | ((2 * y0 * y1 - cx1 - 4) % q != 0)
    zero = ~np.any(arr != 0, axis=1)
    idx = np.flatnonzero(bad.astype(bool) & ~zero)
    return int(idx[0]) if idx.size else None


def _ark_points(arr: np.ndarray, group: str) -> list[Any]:
    ark = optional.arkworks()
    cls, size = (ark.G1Point, 96) if group == "G1" else (ark.G2Point, 192)
    raw = np.ascontiguousarray(arr, dtype=np.uint64).astype("<u8").tobytes()
    return [cls.from_xy_bytes_unchecked_le(raw[i : i + size]) for i in range(0, len(raw), size)]


def _sum(points: list[Any], zero: Any) -> Any:
    return functools.reduce(operator.add, points, zero)


def subgroup_batch(arr: np.ndarray, group: str, *, rounds: int = ROUNDS) -> bool:
    """Whether every point of ``arr`` (``(n, 12)`` G1 or ``(n, 24)`` G2 uint64 canonical, on the curve) is in the order-r
    subgroup, by the module's batch test: False is certain, True wrong with probability <= 2^-rounds (rounds 1..32).

    Raises:
        ValueError: rounds out of range. ImportError: py-arkworks-bls12381 missing.
    """
    if not 1 <= rounds <= 32:
        raise ValueError(f"subgroup_batch: rounds must be 1..32, got {rounds}")
    n = arr.shape[0]
    if n == 0:
        return True
    ark = optional.arkworks()
    zero = (ark.G1Point if group == "G1" else ark.G2Point).identity()
    pts = _ark_points(arr, group)
    if n <= rounds + 1:  # as cheap to test each point
        return all(p.is_in_subgroup() for p in pts)
    sums = []
    for chunk in range(0, rounds, 8):  # 8 rounds per pass: points into 256 buckets by their mask byte
        width = min(8, rounds - chunk)
        masks = np.frombuffer(secrets.token_bytes(n), dtype=np.uint8) & np.uint8((1 << width) - 1)
        order = np.argsort(masks, kind="stable")
        keys, starts = np.unique(masks[order], return_index=True)
        ends = np.append(starts[1:], n)
        buckets = {int(m): _sum([pts[i] for i in order[s:e].tolist()], zero) for m, s, e in zip(keys, starts, ends, strict=True)}
        if chunk == 0:
            sums.append(_sum(list(buckets.values()), zero))  # round "all"
        for bit in range(width):
            sums.append(_sum([v for m, v in buckets.items() if m >> bit & 1], zero))
    return all(s.is_in_subgroup() for s in sums)


def first_outside(arr: np.ndarray, group: str, *, rounds: int = ROUNDS) -> int | None:
    """The index of the first point of ``arr`` (on the curve) outside the order-r subgroup, or None: the batch test
    of :func:`subgroup_batch` on halves (the half that holds the first bad point fails it, one bad point always,
    several with probability >= 1 - 2^-rounds), then the exact test on the last few points; if that finds
    nothing (the batch missed), every point exactly. About the cost of one more batch test."""
    if subgroup_batch(arr, group, rounds=rounds):
        return None
    lo, hi = 0, arr.shape[0]
    while hi - lo > rounds + 1:  # below that the batch test tests each point
        mid = (lo + hi) // 2
        if subgroup_batch(arr[lo:mid], group, rounds=rounds):
            lo = mid
        else:
            hi = mid
    for base, part in ((lo, arr[lo:hi]), (0, arr)):
        for i, p in enumerate(_ark_points(part, group)):
            if not p.is_in_subgroup():
                return base + i
    return None  # pragma: no cover - subgroup_batch never refuses a set of subgroup points


def _one(arr: np.ndarray, group: str) -> Any:
    return _ark_points(arr, group)[0]


def _on_gpu() -> bool:
    return _cuda.gpu_available()


_HEAD_CURVE = "{path}: corrupt key: {name} is not on the curve"
_HEAD_SUBGROUP = "{path}: corrupt key: {name} is not in the prime-order subgroup"
_SECTION_CURVE = "{path}: corrupt key: {name} point {i} is not on the {group} curve"
_SECTION_SUBGROUP = "{path}: corrupt key: {name} holds a point outside the prime-order {group} subgroup: point {i}"


def _check_points_gpu(path: Any, head: dict[str, tuple[np.ndarray, str]], sections: dict[str, tuple[np.ndarray, str]]) -> None:
    """Every header and section point on the device (:mod:`zkgpu.gpu.subgroup`): the header's G1 points in one
    launch and its G2 points in another, then each section; refused in check_key's order (the header point by
    point, then the sections' curves, then their subgroups)."""
    found = {}
    for group in ("G1", "G2"):
        names = [k for k, (_, g) in head.items() if g == group]
        res = subgroup.check_points(np.concatenate([head[k][0] for k in names]), group)
        status = np.asarray(res.status)
        for i, k in enumerate(names):
            found[k] = int(status[i])
    for name in head:
        if found[name] in (subgroup.STATUS["unreduced"], subgroup.STATUS["off_curve"]):
            raise KeyCheckError(_HEAD_CURVE.format(path=path, name=name))
        if found[name] == subgroup.STATUS["outside_subgroup"]:
            raise KeyCheckError(_HEAD_SUBGROUP.format(path=path, name=name))
    results = {name: subgroup.check_points(arr, group) for name, (arr, group) in sections.items()}
    for name, res in results.items():
        if res.first_off_curve is not None:
            raise KeyCheckError(_SECTION_CURVE.format(path=path, name=name, i=res.first_off_curve, group=sections[name][1]))
    for name, res in results.items():
        if res.first_outside is not None:
            raise KeyCheckError(_SECTION_SUBGROUP.format(path=path, name=name, i=res.first_outside, group=sections[name][1]))


def _check_points_cpu(path: Any, head: dict[str, tuple[np.ndarray, str]], sections: dict[str, tuple[np.ndarray, str]], rounds: int) -> None:
    for name, (arr, group) in head.items():
        if first_off_curve(arr, group) is not None:
            raise KeyCheckError(_HEAD_CURVE.format(path=path, name=name))
        if not _one(arr, group).is_in_subgroup():
            raise KeyCheckError(_HEAD_SUBGROUP.format(path=path, name=name))
    for name, (arr, group) in sections.items():
        bad = first_off_curve(arr, group)
        if bad is not None:
            raise KeyCheckError(_SECTION_CURVE.format(path=path, name=name, i=bad, group=group))
    for name, (arr, group) in sections.items():
        bad = first_outside(arr, group, rounds=rounds)
        if bad is not None:
            raise KeyCheckError(_SECTION_SUBGROUP.format(path=path, name=name, i=bad, group=group))


def check_key(zkey: Any, *, rounds: int = ROUNDS, gpu: bool | None = None) -> None:
    """Validate a :class:`zkgpu.groth16.formats.ZKey`'s points (module doc); ``rounds`` for :func:`subgroup_batch`,
    ``gpu`` None: on the GPU when one is present.

    Raises:
        KeyCheckError (a ValueError) naming the key, section and point index: a point off the curve or outside the
            subgroup, an identity among the header points, or disagreeing delta1/delta2 (beta1/beta2).
    """
    path = zkey.path
    head = {
        "alpha1": (zkey.alpha1, "G1"), "beta1": (zkey.beta1, "G1"), "beta2": (zkey.beta2, "G2"),
        "gamma2": (zkey.gamma2, "G2"), "delta1": (zkey.delta1, "G1"), "delta2": (zkey.delta2, "G2"),
    }  # fmt: skip
    for name, (arr, _) in head.items():
        if not np.any(arr != 0):
            raise KeyCheckError(f"{path}: degenerate key: {name} is the identity (refused: proofs would not be zero-knowledge or not verify)")
    sections = {"IC (section 3)": (zkey.ic, "G1"), "A (section 5)": (zkey.a, "G1"), "B1 (section 6)": (zkey.b1, "G1"),
                "B2 (section 7)": (zkey.b2, "G2"), "C (section 8)": (zkey.c, "G1"), "H (section 9)": (zkey.h, "G1")}  # fmt: skip
    if (_on_gpu() if gpu is None else gpu):
        _check_points_gpu(path, head, sections)
    else:
        _check_points_cpu(path, head, sections, rounds)
    ark = optional.arkworks()
    g1, g2 = ark.G1Point(), ark.G2Point()
    for p1, p2, what in ((zkey.delta1, zkey.delta2, "delta"), (zkey.beta1, zkey.beta2, "beta")):
        if ark.GT.pairing(_one(p1, "G1"), g2) != ark.GT.pairing(g1, _one(p2, "G2")):
            raise KeyCheckError(f"{path}: corrupt key: {what}1 and {what}2 are not the same scalar's points (e({what}1, g2) != e(g1, {what}2))")


def check_constraints(r1cs: Any, values: list[int] | np.ndarray) -> int | None:
    """The index of the first constraint ``c`` with ``(A_c . w) * (B_c . w) != C_c . w`` (mod r), or None.
    ``values``: the witness, ``len == r1cs.n_wires``, an ``(n, 4)`` uint64 canonical Fr array or Python ints.

    Raises:
        ValueError: a witness of another length, an array value not below r, or a term outside the circuit.
    """
    if len(values) != r1cs.n_wires:
        raise ValueError(f"the witness has {len(values)} signals, the circuit {r1cs.n_wires}: a witness of another circuit")
    kern = _constraint_kernel() if sys.byteorder == "little" else None  # the kernel reads uint64 limbs as uint32 words
    if kern is None:
        return _first_failing_ints(r1cs, fr_to_ints(values) if isinstance(values, np.ndarray) else list(values))
    w = check_array(FR, values, name="witness") if isinstance(values, np.ndarray) else fr_from_ints([int(v) % _R for v in values])
    args = []
    for k in "ABC":
        cs, ws, co = r1cs.arrays[k]
        for arr, bound, what in ((cs, r1cs.n_constraints, "constraint"), (ws, r1cs.n_wires, "wire")):
            if arr.size and (int(arr.min()) < 0 or int(arr.max()) >= bound):
                raise ValueError(f"the r1cs's {k} terms name a {what} outside 0..{bound - 1}")
        args += [cs, ws, np.ascontiguousarray(co, dtype=np.uint64).view(np.uint32)]
    bad = int(kern(w.view(np.uint32), r1cs.n_constraints, *args, _FR_MONT["p"], _FR_MONT["pinv"], _FR_MONT["r2"], _FR_MONT["pm1"]))
    return None if bad < 0 else bad


def _first_failing_ints(r1cs: Any, values: list[int]) -> int | None:
    """:func:`check_constraints` over numpy object arrays of Python ints (without numba; the tests' reference)."""
    w = np.empty(len(values), dtype=object)
    w[:] = values
    ev = []
    for k in "ABC":
        cs, ws, vs = r1cs.terms[k]
        coef = np.empty(len(vs), dtype=object)
        coef[:] = vs
        acc = np.zeros(r1cs.n_constraints, dtype=object)
        if len(vs):
            np.add.at(acc, cs, coef * w[ws])
        ev.append(acc)
    bad = np.flatnonzero(((ev[0] % _R) * (ev[1] % _R) - ev[2]) % _R != 0)
    return int(bad[0]) if bad.size else None


def _fr_words(v: int) -> np.ndarray:
    return np.array([(v >> (32 * i)) & 0xFFFFFFFF for i in range(8)], dtype=np.uint64)


_FR_MONT = {"p": _fr_words(_R), "pinv": np.uint64((-pow(_R, -1, 1 << 32)) % (1 << 32)), "r2": _fr_words((1 << 512) % _R),
            "pm1": _fr_words(_R - 1)}  # fmt: skip


@functools.lru_cache(maxsize=1)
def _constraint_kernel() -> Any:
    """numba's constraint check: the first constraint with ``A.w * B.w != C.w`` (mod r), or -1. Over 32-bit words with
    CIOS Montgomery products (R = 2^256): A, B summed canonical, C scaled by R^-1, one product per constraint.
    None without numba.
    """
    numba = optional.numba()
    if numba is None:
        return None

    @numba.njit(nogil=True, cache=True)
    def first_failing(w, m, cs_a, ws_a, co_a, cs_b, ws_b, co_b, cs_c, ws_c, co_c, p, pinv, r2, pm1):  # no closure variables
        W = 8
        mask = np.uint64(0xFFFFFFFF)
        s32 = np.uint64(32)
        t = np.zeros(W + 2, dtype=np.uint64)
        # every operand is a row of a 2-D uint32 array of words, given as (array, row): no array views in the loops

        def mm(a, ia, b, ib, out, io):  # out[io] = a[ia] b[ib] R^-1 mod p, both < p
            for j in range(W + 2):
                t[j] = 0
            for i in range(W):
                ai = np.uint64(a[ia, i])
                carry = np.uint64(0)
                for j in range(W):
                    s = t[j] + ai * np.uint64(b[ib, j]) + carry
                    t[j] = s & mask
                    carry = s >> s32
                s = t[W] + carry
                t[W] = s & mask
                t[W + 1] = s >> s32
                q = (t[0] * pinv) & mask
                s = t[0] + q * p[0]
                carry = s >> s32
                for j in range(1, W):
                    s = t[j] + q * p[j] + carry
                    t[j - 1] = s & mask
                    carry = s >> s32
                s = t[W] + carry
                t[W - 1] = s & mask
                t[W] = t[W + 1] + (s >> s32)
            ge = t[W] != 0
            if not ge:
                ge = True
                for k in range(W - 1, -1, -1):
                    if t[k] != p[k]:
                        ge = t[k] > p[k]
                        break
            borrow = np.uint64(0)
            for k in range(W):
                x = t[k]
                y = (p[k] if ge else np.uint64(0)) + borrow
                out[io, k] = np.uint32((x - y) & mask)
                borrow = np.uint64(1) if x < y else np.uint64(0)

        def add_sub(acc, ia, b, ib, neg):  # acc[ia] += b[ib] (neg: -=) mod p, both < p
            if neg:
                borrow = np.uint64(0)
                for k in range(W):
                    x = np.uint64(acc[ia, k])
                    y = np.uint64(b[ib, k]) + borrow
                    acc[ia, k] = np.uint32((x - y) & mask)
                    borrow = np.uint64(1) if x < y else np.uint64(0)
                if borrow:
                    carry = np.uint64(0)
                    for k in range(W):
                        s = np.uint64(acc[ia, k]) + p[k] + carry
                        acc[ia, k] = np.uint32(s & mask)
                        carry = s >> s32
                return
            carry = np.uint64(0)
            for k in range(W):
                s = np.uint64(acc[ia, k]) + np.uint64(b[ib, k]) + carry
                acc[ia, k] = np.uint32(s & mask)
                carry = s >> s32
            ge = carry != 0
            if not ge:
                ge = True
                for k in range(W - 1, -1, -1):
                    if np.uint64(acc[ia, k]) != p[k]:
                        ge = np.uint64(acc[ia, k]) > p[k]
                        break
            if ge:
                borrow = np.uint64(0)
                for k in range(W):
                    x = np.uint64(acc[ia, k])
                    y = p[k] + borrow
                    acc[ia, k] = np.uint32((x - y) & mask)
                    borrow = np.uint64(1) if x < y else np.uint64(0)

        nw = w.shape[0]
        consts = np.zeros((2, W), dtype=np.uint32)  # 1, R^2
        consts[0, 0] = 1
        for k in range(W):
            consts[1, k] = np.uint32(r2[k])
        wm = np.empty((nw, W), dtype=np.uint32)  # w R (A, B's general terms), on first use
        done_m = np.zeros(nw, dtype=np.bool_)
        wr = np.empty((nw, W), dtype=np.uint32)  # w R^-1 (C's +-1 terms), on first use
        done_r = np.zeros(nw, dtype=np.bool_)
        acc = np.zeros((3 * m, W), dtype=np.uint32)  # A.w, B.w (canonical), C.w R^-1: row mat * m + c
        co = np.empty((1, W), dtype=np.uint32)
        prod = np.empty((1, W), dtype=np.uint32)
        for mat in range(3):  # one loop body for the three matrices (numba inlines each call of mm: fewer copies)
            cs = cs_a if mat == 0 else (cs_b if mat == 1 else cs_c)
            ws = ws_a if mat == 0 else (ws_b if mat == 1 else ws_c)
            cw = co_a if mat == 0 else (co_b if mat == 1 else co_c)
            scaled = mat == 2
            for i in range(cs.shape[0]):
                row, wi = mat * m + cs[i], ws[i]
                is_one, is_neg = True, True
                for k in range(W):
                    v = np.uint64(cw[i, k])
                    co[0, k] = cw[i, k]
                    if v != (np.uint64(1) if k == 0 else np.uint64(0)):
                        is_one = False
                    if v != pm1[k]:
                        is_neg = False
                if is_one or is_neg:
                    if scaled and not done_r[wi]:
                        mm(w, wi, consts, 0, wr, wi)
                        done_r[wi] = True
                    add_sub(acc, row, wr if scaled else w, wi, is_neg)
                else:
                    if not scaled and not done_m[wi]:
                        mm(w, wi, consts, 1, wm, wi)
                        done_m[wi] = True
                    mm(co, 0, w if scaled else wm, wi, prod, 0)
                    add_sub(acc, row, prod, 0, False)
        for c in range(m):
            zero = True  # A.w = 0 (a linear constraint, or a zero sum): the product is 0, no multiplication
            for k in range(W):
                if acc[c, k] != 0:
                    zero = False
                    break
            if zero:
                for k in range(W):
                    prod[0, k] = 0
            else:
                mm(acc, c, acc, m + c, prod, 0)
            for k in range(W):
                if prod[0, k] != acc[2 * m + c, k]:
                    return c
        return -1

    return first_failing
