"""BLS12-381 G1 and G2 points on the host: layouts, identity encoding, validation and conversions.

G1: C-contiguous ``uint64`` ``(n, 12)``: affine x then y, 6 little-endian limbs each, canonical (not Montgomery) =
arkworks' ``to_xy_bytes_le``. G2: ``(n, 24)``: x.c0, x.c1, y.c0, y.c1 (Fq2 = Fq[u]/(u^2 + 1)). The identity is all zero
(not on either curve). Validation checks range and curve equation, not the order-r subgroup. Source:
draft-irtf-cfrg-pairing-friendly-curves-11 §4.2.1."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from zkgpu.arith.field import FQ, FR, first_unreduced
from zkgpu.core import optional

__all__ = [
    "B",
    "LIMBS",
    "identity",
    "is_identity",
    "generator",
    "check_points",
    "g1_from_ints",
    "g1_to_ints",
    "g1_from_py_ecc",
    "g1_to_py_ecc",
    "g1_from_arkworks",
    "g1_to_arkworks",
    "g1_add",
    "g1_sum",
    "g1_neg",
    "g1_mul",
    "B2",
    "G2_LIMBS",
    "g2_identity",
    "g2_generator",
    "g2_check_points",
    "g2_from_ints",
    "g2_to_ints",
    "g2_from_py_ecc",
    "g2_to_py_ecc",
    "g2_from_arkworks",
    "g2_to_arkworks",
    "g2_mul",
]

B = 4
"""The curve constant b of y^2 = x^3 + b."""
LIMBS = 12
"""64-bit limbs per point in the host layout (x: 6, y: 6)."""

_Q = FQ.modulus
_GX = 0x17F1D3A73197D7942695638C4FA9AC0FC3688C4F9774B905A14E3A3F171BAC586C55E83FF97A1AEFFB3AF00ADB22C6BB
_GY = 0x08B3F481E3AAA0F1A09E30ED741D8AE4FCF5E095D5D00AF600DB18CB2C04B3EDD03CC744A2888AE40CAA232946C5E7E1


def identity(n: int = 1) -> np.ndarray:
    """n copies of the identity, shape ``(n, 12)`` uint64 (all zero)."""
    return np.zeros((n, LIMBS), dtype=np.uint64)


def is_identity(points: np.ndarray) -> np.ndarray:
    """Boolean mask ``(n,)``: which rows are the identity (all-zero x and y)."""
    return ~np.any(np.asarray(points) != 0, axis=1)


def generator() -> np.ndarray:
    """The standard G1 generator, shape ``(1, 12)``."""
    return g1_from_ints([(_GX, _GY)])


def _on_curve(x: int, y: int) -> bool:
    return (y * y - x * x * x - B) % _Q == 0


def check_points(arr: object, *, name: str = "points") -> np.ndarray:
    """G1 points ``(n, 12)`` uint64, checked (coordinates < q, y^2 = x^3 + 4, identity allowed), C-contiguous. Raises
    TypeError: not a numpy uint64 array. ValueError: wrong shape, a coordinate >= q, or off the curve (names the first
    bad index)."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{name}: expected a numpy uint64 array of shape (n, 12), got {type(arr).__name__}")
    if arr.dtype != np.uint64:
        raise TypeError(f"{name}: expected dtype uint64 (shape (n, 12)), got {arr.dtype}")
    if arr.ndim != 2 or arr.shape[1] != LIMBS:
        raise ValueError(f"{name}: expected shape (n, 12) (x: 6 limbs, y: 6 limbs), got {arr.shape}")
    arr = np.ascontiguousarray(arr)
    for half, coord in ((slice(0, 6), "x"), (slice(6, 12), "y")):
        bad = first_unreduced(FQ, np.ascontiguousarray(arr[:, half]))
        if bad is not None:
            raise ValueError(f"{name}[{bad}]: coordinate {coord} is >= q (not a canonical Fq element)")
    for i, (x, y) in enumerate(g1_to_ints(arr)):
        if (x or y) and not _on_curve(x, y):
            raise ValueError(f"{name}[{i}] = (x={x:#x}, y={y:#x}) is not on the curve y^2 = x^3 + 4")
    return arr


def g1_from_ints(pairs: Iterable[tuple[int, int] | None]) -> np.ndarray:
    """Affine ``(x, y)`` int pairs (``None`` or ``(0, 0)``: identity) -> ``(n, 12)``. Raises ValueError (names the index)."""
    rows = []
    for i, p in enumerate(pairs):
        if p is None:
            p = (0, 0)
        x, y = int(p[0]), int(p[1])
        if not (0 <= x < _Q and 0 <= y < _Q):
            raise ValueError(f"point {i}: coordinate out of range [0, q)")
        if (x or y) and not _on_curve(x, y):
            raise ValueError(f"point {i} = (x={x:#x}, y={y:#x}) is not on the curve y^2 = x^3 + 4")
        rows.append(x.to_bytes(48, "little") + y.to_bytes(48, "little"))
    return _from_bytes(b"".join(rows), len(rows))


def _from_bytes(buf: bytes, n: int) -> np.ndarray:
    return np.frombuffer(buf, dtype="<u8").astype(np.uint64).reshape(n, LIMBS)


def g1_to_ints(arr: np.ndarray) -> list[tuple[int, int]]:
    """``(n, 12)`` uint64 -> affine ``(x, y)`` ints; identity ``(0, 0)``. Raises TypeError (dtype), ValueError (shape)."""
    if not isinstance(arr, np.ndarray) or arr.dtype != np.uint64:
        what = arr.dtype if isinstance(arr, np.ndarray) else type(arr).__name__
        raise TypeError(f"expected a numpy uint64 array of shape (n, 12), got {what}")
    a = np.ascontiguousarray(arr)
    if a.ndim != 2 or a.shape[1] != LIMBS:
        raise ValueError(f"expected shape (n, 12), got {a.shape}")
    raw = a.astype("<u8").tobytes()
    out = []
    for i in range(0, len(raw), 96):
        out.append((int.from_bytes(raw[i : i + 48], "little"), int.from_bytes(raw[i + 48 : i + 96], "little")))
    return out


def g1_from_py_ecc(points: Sequence[Any]) -> np.ndarray:
    """py_ecc points (projective ``(X, Y, Z)``, ``Z = 0`` identity; or affine pairs / ``None``) -> ``(n, 12)``. Raises
    ValueError: a point off the curve or a coordinate outside [0, q) (names the index)."""
    pairs: list[tuple[int, int] | None] = []
    for p in points:
        if p is None:
            pairs.append(None)
        elif len(p) == 3:
            X, Y, Z = (_coord(c, len(pairs)) for c in p)
            if Z == 0:
                pairs.append(None)
            else:
                zi = pow(Z, -1, _Q)
                pairs.append((X * zi % _Q, Y * zi % _Q))
        elif len(p) == 2:
            pairs.append((_coord(p[0], len(pairs)), _coord(p[1], len(pairs))))
        else:
            raise ValueError(f"point {len(pairs)}: expected (x, y), (X, Y, Z) or None, got {p!r}")
    return g1_from_ints(pairs)


def _fq_int(c: Any) -> int:
    return int(c.n) if hasattr(c, "n") else int(c)


def _coord(c: Any, index: int) -> int:
    """A py_ecc FQ (always reduced) or an int coordinate, which must already lie in [0, q)."""
    v = _fq_int(c)
    if not 0 <= v < _Q:
        raise ValueError(f"point {index}: coordinate {v:#x} is out of range for Fq (need 0 <= v < q)")
    return v


def g1_to_py_ecc(arr: np.ndarray) -> list[tuple]:
    """``(n, 12)`` -> ``py_ecc.optimized_bls12_381`` triples ``(x, y, 1)`` (identity ``Z1``); errors of :func:`check_points`."""
    bls = optional.py_ecc()
    arr = check_points(arr)
    return [bls.Z1 if (x == 0 and y == 0) else (bls.FQ(x), bls.FQ(y), bls.FQ.one()) for x, y in g1_to_ints(arr)]


def g1_from_arkworks(points: Sequence[Any]) -> np.ndarray:
    """py-arkworks-bls12381 ``G1Point`` list -> ``(n, 12)`` array (``to_xy_bytes_le``)."""
    buf = b"".join(p.to_xy_bytes_le() for p in points)
    return _from_bytes(buf, len(points))


def g1_to_arkworks(arr: np.ndarray, *, checked: bool = True) -> list[Any]:
    """``(n, 12)`` -> arkworks ``G1Point`` list; ``checked=False`` skips :func:`check_points` (dtype/shape still checked)."""
    ark = optional.arkworks()
    if checked:
        arr = check_points(arr)
    elif not isinstance(arr, np.ndarray) or arr.dtype != np.uint64 or arr.ndim != 2 or arr.shape[1] != LIMBS:
        # unchecked values, but never a silent cast of a float/int array or a wrong shape
        what = f"{arr.dtype} {arr.shape}" if isinstance(arr, np.ndarray) else type(arr).__name__
        raise TypeError(f"expected a numpy uint64 array of shape (n, 12), got {what}")
    raw = np.ascontiguousarray(arr).astype("<u8").tobytes()
    return [ark.G1Point.from_xy_bytes_unchecked_le(raw[i : i + 96]) for i in range(0, len(raw), 96)]


def g1_add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pointwise ``a[i] + b[i]`` of two ``(n, 12)`` arrays (arkworks). Raises ValueError: lengths differ, invalid point."""
    pa, pb = g1_to_arkworks(a), g1_to_arkworks(b)
    if len(pa) != len(pb):
        raise ValueError(f"g1_add: {len(pa)} points vs {len(pb)}")
    return g1_from_arkworks([x + y for x, y in zip(pa, pb, strict=True)])


def g1_sum(a: np.ndarray, *, checked: bool = True) -> np.ndarray:
    """Sum of an ``(m, 12)`` array's points (arkworks), shape ``(1, 12)``; errors of :func:`check_points`."""
    pts = g1_to_arkworks(a, checked=checked)
    if not pts:
        return identity(1)
    acc = pts[0]
    for p in pts[1:]:
        acc = acc + p
    return g1_from_arkworks([acc])


def g1_neg(a: np.ndarray) -> np.ndarray:
    """Pointwise negation ``(x, y) -> (x, q - y)`` of a ``(n, 12)`` array (identity stays)."""
    return g1_from_ints([(x, (_Q - y) % _Q if (x or y) else 0) for x, y in g1_to_ints(check_points(a))])


def g1_mul(a: np.ndarray, k: Sequence[int]) -> np.ndarray:
    """Pointwise ``k_i * a_i`` (arkworks; k mod r). Raises ValueError: lengths differ; TypeError: a non-int scalar."""
    ark = optional.arkworks()
    pts = g1_to_arkworks(a)
    k = list(k)
    for s in k:
        if isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, np.integer)):
            raise TypeError(f"g1_mul: scalars must be ints, got {s!r} ({type(s).__name__})")
    if len(k) != len(pts):
        raise ValueError(f"g1_mul: {len(pts)} points but {len(k)} scalars")
    return g1_from_arkworks([p * ark.Scalar.from_le_bytes((int(s) % FR.modulus).to_bytes(32, "little")) for p, s in zip(pts, k, strict=True)])


# --------------------------------------------------------------------------- G2

B2 = (4, 4)
"""The curve constant b' = 4(u + 1) of G2's y^2 = x^3 + b', as (c0, c1)."""
G2_LIMBS = 24
"""64-bit limbs per G2 point in the host layout (x.c0, x.c1, y.c0, y.c1: 6 each)."""

Fq2 = tuple[int, int]
_G2X = (0x024AA2B2F08F0A91260805272DC51051C6E47AD4FA403B02B4510B647AE3D1770BAC0326A805BBEFD48056C8C121BDB8,
        0x13E02B6052719F607DACD3A088274F65596BD0D09920B61AB5DA61BBDC7F5049334CF11213945D57E5AC7D055D042B7E)
_G2Y = (0x0CE5D527727D6E118CC9CDC6DA2E351AADFD9BAA8CBDD3A76D429A695160D12C923AC9CC3BACA289E193548608B82801,
        0x0606C4A02EA734CC32ACD2B02BC28B99CB3E287E85A763AF267492AB572E99AB3F370D275CEC1DA1AAA9075FF05F79BE)


def _f2mul(a: Fq2, b: Fq2) -> Fq2:
    return ((a[0] * b[0] - a[1] * b[1]) % _Q, (a[0] * b[1] + a[1] * b[0]) % _Q)


def _g2_on_curve(x: Fq2, y: Fq2) -> bool:
    lhs = _f2mul(y, y)
    rhs = _f2mul(_f2mul(x, x), x)
    return lhs == ((rhs[0] + B2[0]) % _Q, (rhs[1] + B2[1]) % _Q)


def g2_identity(n: int = 1) -> np.ndarray:
    """n copies of the G2 identity, shape ``(n, 24)`` uint64 (all zero)."""
    return np.zeros((n, G2_LIMBS), dtype=np.uint64)


def g2_generator() -> np.ndarray:
    """The standard G2 generator, shape ``(1, 24)``."""
    return g2_from_ints([(_G2X, _G2Y)])


def _g2_shape(arr: object, name: str) -> np.ndarray:
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{name}: expected a numpy uint64 array of shape (n, 24), got {type(arr).__name__}")
    if arr.dtype != np.uint64:
        raise TypeError(f"{name}: expected dtype uint64 (shape (n, 24)), got {arr.dtype}")
    if arr.ndim != 2 or arr.shape[1] != G2_LIMBS:
        raise ValueError(f"{name}: expected shape (n, 24) (x.c0, x.c1, y.c0, y.c1: 6 limbs each), got {arr.shape}")
    return np.ascontiguousarray(arr)


def g2_check_points(arr: object, *, name: str = "points") -> np.ndarray:
    """G2 points ``(n, 24)`` uint64, checked (< q, y^2 = x^3 + 4(u + 1), identity allowed), C-contiguous. Raises
    TypeError: not a numpy uint64 array. ValueError: wrong shape, out of range or off the curve (first bad index)."""
    arr = _g2_shape(arr, name)
    for k, coord in enumerate(("x.c0", "x.c1", "y.c0", "y.c1")):
        bad = first_unreduced(FQ, np.ascontiguousarray(arr[:, 6 * k : 6 * k + 6]))
        if bad is not None:
            raise ValueError(f"{name}[{bad}]: coordinate {coord} is >= q (not a canonical Fq element)")
    for i, (x, y) in enumerate(g2_to_ints(arr)):
        if (any(x) or any(y)) and not _g2_on_curve(x, y):
            raise ValueError(f"{name}[{i}] is not on the G2 curve y^2 = x^3 + 4(u + 1)")
    return arr


def g2_from_ints(pairs: Iterable[tuple[Fq2, Fq2] | None]) -> np.ndarray:
    """``((x.c0, x.c1), (y.c0, y.c1))`` pairs (``None``/zero: identity) -> ``(n, 24)``. Raises ValueError (names the index)."""
    rows = []
    for i, p in enumerate(pairs):
        x, y = ((0, 0), (0, 0)) if p is None else ((int(p[0][0]), int(p[0][1])), (int(p[1][0]), int(p[1][1])))
        if not all(0 <= v < _Q for v in (*x, *y)):
            raise ValueError(f"G2 point {i}: coordinate out of range [0, q)")
        if (any(x) or any(y)) and not _g2_on_curve(x, y):
            raise ValueError(f"G2 point {i} is not on the curve y^2 = x^3 + 4(u + 1)")
        rows.append(b"".join(v.to_bytes(48, "little") for v in (*x, *y)))
    return np.frombuffer(b"".join(rows), dtype="<u8").astype(np.uint64).reshape(len(rows), G2_LIMBS)


def g2_to_ints(arr: np.ndarray) -> list[tuple[Fq2, Fq2]]:
    """``(n, 24)`` uint64 -> ``((x.c0, x.c1), (y.c0, y.c1))`` per point. Raises TypeError/ValueError: dtype or shape."""
    raw = _g2_shape(arr, "points").astype("<u8").tobytes()
    v = [int.from_bytes(raw[i : i + 48], "little") for i in range(0, len(raw), 48)]
    return [((v[i], v[i + 1]), (v[i + 2], v[i + 3])) for i in range(0, len(v), 4)]


def g2_from_py_ecc(points: Sequence[Any]) -> np.ndarray:
    """py_ecc G2 points (``(X, Y, Z)`` of FQ2, affine pairs or ``None``) -> ``(n, 24)``. Raises ValueError (names the index)."""
    bls = optional.py_ecc()
    out: list[tuple[Fq2, Fq2] | None] = []
    for i, p in enumerate(points):
        if p is None:
            out.append(None)
            continue
        if len(p) == 3:
            if p[2] == bls.FQ2.zero():
                out.append(None)
                continue
            zi = bls.FQ2.one() / p[2]
            p = (p[0] * zi, p[1] * zi)
        if len(p) != 2:
            raise ValueError(f"G2 point {i}: expected (x, y), (X, Y, Z) or None, got {p!r}")
        out.append(((int(p[0].coeffs[0]), int(p[0].coeffs[1])), (int(p[1].coeffs[0]), int(p[1].coeffs[1]))))
    return g2_from_ints(out)


def g2_to_py_ecc(arr: np.ndarray) -> list[tuple]:
    """``(n, 24)`` -> ``py_ecc.optimized_bls12_381`` triples (identity ``Z2``); errors of :func:`g2_check_points`."""
    bls = optional.py_ecc()
    pts = g2_to_ints(g2_check_points(arr))
    return [bls.Z2 if not (any(x) or any(y)) else (bls.FQ2(list(x)), bls.FQ2(list(y)), bls.FQ2.one()) for x, y in pts]


def g2_from_arkworks(points: Sequence[Any]) -> np.ndarray:
    """py-arkworks-bls12381 ``G2Point`` list -> ``(n, 24)`` array (``to_xy_bytes_le``)."""
    buf = b"".join(p.to_xy_bytes_le() for p in points)
    return np.frombuffer(buf, dtype="<u8").astype(np.uint64).reshape(len(points), G2_LIMBS)


def g2_to_arkworks(arr: np.ndarray, *, checked: bool = True) -> list[Any]:
    """``(n, 24)`` -> arkworks ``G2Point`` list; ``checked=False`` skips the curve checks."""
    ark = optional.arkworks()
    arr = g2_check_points(arr) if checked else _g2_shape(arr, "points")
    raw = arr.astype("<u8").tobytes()
    return [ark.G2Point.from_xy_bytes_unchecked_le(raw[i : i + 192]) for i in range(0, len(raw), 192)]


def g2_mul(a: np.ndarray, k: Sequence[int]) -> np.ndarray:
    """Pointwise ``k_i * a_i`` on G2 (arkworks). Raises ValueError: lengths or invalid point; TypeError: non-int scalar."""
    ark = optional.arkworks()
    pts = g2_to_arkworks(a)
    k = list(k)
    for s in k:
        if isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, np.integer)):
            raise TypeError(f"g2_mul: scalars must be ints, got {s!r} ({type(s).__name__})")
    if len(k) != len(pts):
        raise ValueError(f"g2_mul: {len(pts)} points but {len(k)} scalars")
    return g2_from_arkworks([p * ark.Scalar.from_le_bytes((int(s) % FR.modulus).to_bytes(32, "little")) for p, s in zip(pts, k, strict=True)])
