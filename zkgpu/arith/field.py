"""BLS12-381 prime fields Fr and Fq: parameters derived from modulus and generator, host arrays, conversions.

Host layout: C-contiguous ``uint64`` ``(n, limbs)`` (Fr 4, Fq 6), little-endian limbs, canonical values in [0, p) (the
kernels convert to Montgomery form). Source: draft-irtf-cfrg-pairing-friendly-curves-11 §4.2.1."""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

__all__ = [
    "PrimeField",
    "FR",
    "FQ",
    "fr_from_ints",
    "fr_to_ints",
    "fr_reduce",
    "fr_random",
    "fq_from_ints",
    "fq_to_ints",
    "from_ints",
    "to_ints",
    "first_unreduced",
    "not_canonical",
    "check_array",
]


@dataclass(frozen=True)
class PrimeField:
    """A prime field derived from ``modulus`` and multiplicative ``generator`` (Fr: 7, Fq: 2); ``limbs`` 64-bit limbs."""

    name: str
    modulus: int
    generator: int
    limbs: int

    @property
    def bytes_per_element(self) -> int:
        """Bytes per element in the host and device layouts (32 for Fr, 48 for Fq)."""
        return 8 * self.limbs

    @cached_property
    def R(self) -> int:  # noqa: N802 - R, R^2, R^-1: the Montgomery literature's names
        """Montgomery radix reduced, ``2^(64*limbs) mod p`` (the Montgomery form of 1)."""
        return pow(2, 64 * self.limbs, self.modulus)

    @cached_property
    def R2(self) -> int:  # noqa: N802 - see R
        """``R^2 mod p``, the factor that takes canonical values to Montgomery form."""
        return pow(2, 128 * self.limbs, self.modulus)

    @cached_property
    def R_inv(self) -> int:  # noqa: N802 - see R
        """``R^-1 mod p``."""
        return pow(self.R, -1, self.modulus)

    @cached_property
    def inv32(self) -> int:
        """``-p^-1 mod 2^32``, the CIOS reduction constant for 32-bit limbs."""
        return (-pow(self.modulus, -1, 1 << 32)) % (1 << 32)

    @cached_property
    def inv64(self) -> int:
        """``-p^-1 mod 2^64``, the same for 64-bit limbs."""
        return (-pow(self.modulus, -1, 1 << 64)) % (1 << 64)

    @cached_property
    def two_adicity(self) -> int:
        """The largest s with ``2^s | p - 1`` (32 for Fr)."""
        s, t = 0, self.modulus - 1
        while t % 2 == 0:
            s, t = s + 1, t // 2
        return s

    @cached_property
    def two_adic_root(self) -> int:
        """A primitive ``2^two_adicity``-th root of unity, ``generator^((p-1)/2^s)``."""
        return pow(self.generator, (self.modulus - 1) >> self.two_adicity, self.modulus)

    def root_of_unity(self, log_n: int) -> int:
        """A primitive ``2^log_n``-th root of unity. Raises ValueError: log_n negative or above the 2-adicity."""
        if not 0 <= log_n <= self.two_adicity:
            raise ValueError(
                f"{self.name} has 2-adicity {self.two_adicity}: no root of unity of order 2^{log_n}"
            )
        return pow(self.two_adic_root, 1 << (self.two_adicity - log_n), self.modulus)

    def to_mont(self, x: int) -> int:
        """Canonical integer -> Montgomery form ``x*R mod p``."""
        return x * self.R % self.modulus

    def from_mont(self, x: int) -> int:
        """Montgomery form -> canonical integer ``x*R^-1 mod p``."""
        return x * self.R_inv % self.modulus

    @cached_property
    def _modulus_limbs(self) -> np.ndarray:
        return np.array([(self.modulus >> (64 * i)) & (2**64 - 1) for i in range(self.limbs)], dtype=np.uint64)


FR = PrimeField(
    name="Fr",
    modulus=0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001,
    generator=7,
    limbs=4,
)
"""The BLS12-381 scalar field (255-bit r)."""

FQ = PrimeField(
    name="Fq",
    modulus=0x1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB,
    generator=2,
    limbs=6,
)
"""The BLS12-381 base field (381-bit q)."""


def first_unreduced(field: PrimeField, arr: np.ndarray) -> int | None:
    """Index of the first element of a host array ``(n, limbs)`` that is ``>= p``, or None."""
    bad = np.flatnonzero(_ge_modulus(field, arr))
    return int(bad[0]) if bad.size else None


def not_canonical(field: PrimeField, name: str, index: int, value: int) -> ValueError:
    """The one error for an element ``>= p`` (host and device checks alike): ``name[index] = value is not
    a canonical <field> element (must be < p)``. Returned, for the caller to raise."""
    return ValueError(f"{name}[{index}] = {value:#x} is not a canonical {field.name} element (must be < {field.modulus:#x})")


def check_array(field: PrimeField, arr: object, *, name: str = "values") -> np.ndarray:
    """``arr`` checked (uint64, ``(n, limbs)``, each < p) and C-contiguous. Raises TypeError: not a numpy uint64 array.
    ValueError: wrong shape or an element >= p (first bad index)."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{name}: expected a numpy uint64 array of shape (n, {field.limbs}), got {type(arr).__name__}")
    if arr.dtype != np.uint64:
        raise TypeError(f"{name}: expected dtype uint64 (shape (n, {field.limbs})), got {arr.dtype}")
    if arr.ndim != 2 or arr.shape[1] != field.limbs:
        raise ValueError(f"{name}: expected shape (n, {field.limbs}) for {field.name}, got {arr.shape}")
    arr = np.ascontiguousarray(arr)
    bad = first_unreduced(field, arr)
    if bad is not None:
        raise not_canonical(field, name, bad, to_ints(field, arr[bad : bad + 1])[0])
    return arr


def from_ints(field: PrimeField, ints: Iterable[int]) -> np.ndarray:
    """Ints -> ``(n, limbs)`` uint64. Raises TypeError: a non-int; ValueError: negative or >= p (first bad index)."""
    values = list(ints)
    nbytes = field.bytes_per_element
    p = field.modulus
    for i, v in enumerate(values):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
            raise TypeError(f"element {i} is {type(v).__name__}, not an int")
        if not 0 <= v < p:
            raise ValueError(f"element {i} = {int(v)} is out of range for {field.name}: need 0 <= v < {p:#x}")
    buf = b"".join(int(v).to_bytes(nbytes, "little") for v in values)
    return np.frombuffer(buf, dtype="<u8").astype(np.uint64).reshape(len(values), field.limbs)


def to_ints(field: PrimeField, arr: np.ndarray) -> list[int]:
    """``(n, limbs)`` uint64 -> ints, no range check. Raises TypeError: not uint64; ValueError: shape."""
    if not isinstance(arr, np.ndarray) or arr.dtype != np.uint64:
        what = arr.dtype if isinstance(arr, np.ndarray) else type(arr).__name__
        raise TypeError(f"expected a numpy uint64 array of shape (n, {field.limbs}), got {what}")
    a = np.ascontiguousarray(arr)
    if a.ndim != 2 or a.shape[1] != field.limbs:
        raise ValueError(f"expected shape (n, {field.limbs}) for {field.name}, got {a.shape}")
    raw = a.astype("<u8").tobytes()
    nb = field.bytes_per_element
    return [int.from_bytes(raw[i : i + nb], "little") for i in range(0, len(raw), nb)]


def fr_from_ints(ints: Iterable[int]) -> np.ndarray:
    """Ints in [0, r) -> ``(n, 4)`` uint64. Raises ValueError: out of range (first bad index)."""
    return from_ints(FR, ints)


def fr_to_ints(arr: np.ndarray) -> list[int]:
    """``(n, 4)`` uint64 -> canonical ints; errors of :func:`check_array`."""
    return to_ints(FR, check_array(FR, arr))


def fq_from_ints(ints: Iterable[int]) -> np.ndarray:
    """Python ints in ``[0, q)`` -> Fq host array, shape ``(n, 6)`` uint64, canonical."""
    return from_ints(FQ, ints)


def fq_to_ints(arr: np.ndarray) -> list[int]:
    """``(n, 6)`` uint64 -> canonical ints; errors of :func:`check_array`."""
    return to_ints(FQ, check_array(FQ, arr))


def fr_reduce(ints: Sequence[int]) -> list[int]:
    """Reduce arbitrary Python ints modulo r (the only place zkgpu reduces silently)."""
    return [int(v) % FR.modulus for v in ints]


def fr_random(n: int, rng: np.random.Generator | int | None = None) -> np.ndarray:
    """``n`` uniform canonical Fr elements ``(n, 4)`` uint64; ``rng``: Generator, seed, or None (``secrets``)."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if not isinstance(rng, np.random.Generator):
        rng = np.random.default_rng(secrets.randbits(64) if rng is None else rng)
    out = np.empty((n, FR.limbs), dtype=np.uint64)
    todo = np.arange(n)
    top_mask = np.uint64((1 << (FR.modulus.bit_length() - 192)) - 1)
    while todo.size:  # rejection sampling: redraw every candidate >= r
        cand = rng.integers(0, 2**64, size=(todo.size, FR.limbs), dtype=np.uint64)
        cand[:, -1] &= top_mask
        out[todo] = cand
        todo = todo[_ge_modulus(FR, cand)]
    return out


def _ge_modulus(field: PrimeField, arr: np.ndarray) -> np.ndarray:
    """Boolean mask of the rows ``>= p`` (vectorised: limbs compared from the most significant)."""
    m = field._modulus_limbs
    n = arr.shape[0]
    decided = np.zeros(n, dtype=bool)
    ge = np.ones(n, dtype=bool)
    for k in range(field.limbs - 1, -1, -1):
        col = arr[:, k]
        gt, lt = col > m[k], col < m[k]
        ge = np.where(~decided & gt, True, np.where(~decided & lt, False, ge))
        decided |= gt | lt
    return ge
