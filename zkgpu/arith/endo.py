"""BLS12-381's endomorphisms and the exact subgroup tests they give, constants derived at import from :data:`Z`.

G1 (Scott, ePrint 2021/1130 §6): σ(x, y) = (βx, y); P ∈ G1 ⟺ σ(P) = -[z²]P (:data:`BETA` picked on the generator). G2
(Scott §4): ψ(x, y) = (c_x·x̄, c_y·ȳ) (:data:`PSI_X`, :data:`PSI_Y`); P ∈ G2 ⟺ ψ(P) = [z]P. :func:`g1_in_subgroup` and
:func:`g2_in_subgroup` are the Python references of ``kernels/subgroup.cu``."""

from __future__ import annotations

from typing import Any

from zkgpu.arith.curve import B2, B, g1_to_ints, g2_generator, g2_to_ints, generator
from zkgpu.arith.field import FQ, FR

__all__ = ["Z", "Z_ABS", "BETA", "PSI_X", "PSI_Y", "sigma", "psi", "g1_in_subgroup", "g2_in_subgroup"]

Z = -0xD201000000010000
"""The BLS12-381 parameter z (negative)."""
Z_ABS = -Z
"""|z|, the scalar of the kernels' double-and-add (64 bits, 6 of them set)."""

_Q = FQ.modulus
Fq2 = tuple[int, int]
Point = tuple  # affine (x, y) of ints (G1) or Fq2 pairs (G2); None is the identity

if Z**4 - Z**2 + 1 != FR.modulus or (Z - 1) ** 2 * FR.modulus % 3 or (Z - 1) ** 2 * FR.modulus // 3 + Z != _Q:
    raise RuntimeError("zkgpu.arith.endo: z does not give BLS12-381's r and q")  # pragma: no cover - a wrong constant


class _Fq:
    """Fq as Python ints (the field operations the affine formulas need)."""

    zero, one = 0, 1

    @staticmethod
    def add(a: int, b: int) -> int:
        return (a + b) % _Q

    @staticmethod
    def sub(a: int, b: int) -> int:
        return (a - b) % _Q

    @staticmethod
    def mul(a: int, b: int) -> int:
        return a * b % _Q

    @staticmethod
    def small(k: int) -> int:
        return k % _Q

    @staticmethod
    def inv(a: int) -> int:
        return pow(a, -1, _Q)


class _Fq2:
    """Fq2 = Fq[u]/(u^2 + 1) as (c0, c1) int pairs."""

    zero, one = (0, 0), (1, 0)

    @staticmethod
    def add(a: Fq2, b: Fq2) -> Fq2:
        return ((a[0] + b[0]) % _Q, (a[1] + b[1]) % _Q)

    @staticmethod
    def sub(a: Fq2, b: Fq2) -> Fq2:
        return ((a[0] - b[0]) % _Q, (a[1] - b[1]) % _Q)

    @staticmethod
    def mul(a: Fq2, b: Fq2) -> Fq2:
        return ((a[0] * b[0] - a[1] * b[1]) % _Q, (a[0] * b[1] + a[1] * b[0]) % _Q)

    @staticmethod
    def small(k: int) -> Fq2:
        return (k % _Q, 0)

    @staticmethod
    def inv(a: Fq2) -> Fq2:
        t = pow(a[0] * a[0] + a[1] * a[1], -1, _Q)  # 1/(c0 + c1 u) = (c0 - c1 u)/(c0^2 + c1^2)
        return (a[0] * t % _Q, -a[1] * t % _Q)

    @classmethod
    def pow(cls, a: Fq2, e: int) -> Fq2:
        r = cls.one
        for bit in bin(e)[2:]:
            r = cls.mul(r, r)
            if bit == "1":
                r = cls.mul(r, a)
        return r


def _add(F: Any, p: Point | None, q: Point | None) -> Point | None:
    """p + q on a short Weierstrass curve with a = 0 (affine, complete by cases; None the identity)."""
    if p is None:
        return q
    if q is None:
        return p
    (x1, y1), (x2, y2) = p, q
    if x1 == x2:
        if y1 != y2 or y1 == F.zero:
            return None
        lam = F.mul(F.mul(F.small(3), F.mul(x1, x1)), F.inv(F.add(y1, y1)))
    else:
        lam = F.mul(F.sub(y2, y1), F.inv(F.sub(x2, x1)))
    x3 = F.sub(F.sub(F.mul(lam, lam), x1), x2)
    return (x3, F.sub(F.mul(lam, F.sub(x1, x3)), y1))


def _mul(F: Any, p: Point | None, k: int) -> Point | None:
    """[k]p for k >= 0, left-to-right double-and-add."""
    r = None
    for bit in bin(k)[2:]:
        r = _add(F, r, r)
        if bit == "1":
            r = _add(F, r, p)
    return r


def _neg(F: Any, p: Point | None) -> Point | None:
    return None if p is None else (p[0], F.sub(F.zero, p[1]))


def _derive_beta() -> int:
    """The cube root of unity (-1 ± sqrt(-3))/2 for which σ acts on G1 as -z² (tested on the generator)."""
    s = pow(_Q - 3, (_Q + 1) // 4, _Q)  # q = 3 mod 4: a square root of -3
    if s * s % _Q != _Q - 3:
        raise RuntimeError("zkgpu.arith.endo: -3 is not a square in Fq")  # pragma: no cover - q = 1 mod 3
    half = pow(2, -1, _Q)
    gen = g1_to_ints(generator())[0]
    want = _neg(_Fq, _mul(_Fq, gen, Z * Z))
    for beta in ((-1 + s) * half % _Q, (-1 - s) * half % _Q):
        if (beta * gen[0] % _Q, gen[1]) == want:
            return beta
    raise RuntimeError("zkgpu.arith.endo: no cube root of unity gives sigma(G) = -z^2 G")  # pragma: no cover


def _derive_psi() -> tuple[Fq2, Fq2]:
    """ψ's coefficients 1/(1 + u)^((q-1)/3) and 1/(1 + u)^((q-1)/2), checked on the generator: ψ(G2) = [z]G2."""
    xi = (1, 1)
    cx = _Fq2.inv(_Fq2.pow(xi, (_Q - 1) // 3))
    cy = _Fq2.inv(_Fq2.pow(xi, (_Q - 1) // 2))
    gen = g2_to_ints(g2_generator())[0]
    got = (_Fq2.mul(cx, (gen[0][0], -gen[0][1] % _Q)), _Fq2.mul(cy, (gen[1][0], -gen[1][1] % _Q)))
    if got != _neg(_Fq2, _mul(_Fq2, gen, Z_ABS)):
        raise RuntimeError("zkgpu.arith.endo: psi(G2) != [z]G2")  # pragma: no cover - a wrong derivation
    return cx, cy


BETA = _derive_beta()
"""β, the primitive cube root of unity in Fq of σ(x, y) = (βx, y) (canonical)."""
PSI_X, PSI_Y = _derive_psi()
"""ψ's coefficients (c0, c1), canonical: ψ(x, y) = (PSI_X·x̄, PSI_Y·ȳ)."""


def sigma(p: tuple[int, int]) -> tuple[int, int]:
    """σ(x, y) = (βx, y) on E (canonical ints; the identity (0, 0) stays)."""
    return (BETA * p[0] % _Q, p[1])


def psi(p: tuple[Fq2, Fq2]) -> tuple[Fq2, Fq2]:
    """ψ(x, y) = (c_x·x̄, c_y·ȳ) on E' (canonical Fq2 pairs; the identity stays)."""
    (x0, x1), (y0, y1) = p
    return (_Fq2.mul(PSI_X, (x0, -x1 % _Q)), _Fq2.mul(PSI_Y, (y0, -y1 % _Q)))


def _on_curve(F: Any, p: Point, b: int | Fq2) -> bool:
    x, y = p
    return F.mul(y, y) == F.add(F.mul(F.mul(x, x), x), b)


def g1_in_subgroup(x: int, y: int) -> bool:
    """Whether (x, y) on y^2 = x^3 + 4 ((0, 0): identity) is in G1. Raises ValueError: off the curve."""
    if x == 0 and y == 0:
        return True
    if not _on_curve(_Fq, (x, y), B):
        raise ValueError(f"({x:#x}, {y:#x}) is not on the G1 curve")
    return _neg(_Fq, _mul(_Fq, (x, y), Z * Z)) == sigma((x, y))


def g2_in_subgroup(x: Fq2, y: Fq2) -> bool:
    """Whether (x, y) on y^2 = x^3 + 4(1 + u) (all zero: identity) is in G2. Raises ValueError: off the curve."""
    if not any(x) and not any(y):
        return True
    if not _on_curve(_Fq2, (x, y), B2):
        raise ValueError(f"({x}, {y}) is not on the G2 curve")
    return _neg(_Fq2, _mul(_Fq2, (x, y), Z_ABS)) == psi((x, y))
