"""Curve points checked on the GPU, one thread per point (``zkgpu/kernels/subgroup.cu``): coordinates below q, on the
curve, and in the prime-order subgroup by the endomorphism tests of :mod:`zkgpu.arith.endo` (G1 ``σ(P) = -[z²]P``,
G2 ``ψ(P) = [z]P``). :func:`check_points` returns a :class:`PointCheck`; host points go up in chunks of
:data:`CHUNK`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from zkgpu.arith import endo
from zkgpu.arith.field import FQ
from zkgpu.core import cuda as _cuda

__all__ = ["STATUS", "GROUPS", "BLOCK", "CHUNK", "PointCheck", "endo_words", "check_points", "warm_up"]

STATUS: Mapping[str, int] = _cuda.header_enum("subgroup.cu", "point_status")
"""The status byte of a point (``subgroup.cu``'s ``point_status``): ok (in the subgroup, or the identity),
unreduced (a coordinate >= q), off_curve, outside_subgroup."""

GROUPS = {"g1": (12, "g1_subgroup_check"), "g2": (24, "g2_subgroup_check")}
"""Per group: uint64 limbs of a host point, the kernel."""

BLOCK = 128
"""Threads per block (one point each)."""
CHUNK = 1 << 22
"""Host points copied to the device per launch (2^22 G2 points: 768 MiB)."""


@dataclass(frozen=True)
class PointCheck:
    """The result of :func:`check_points` for n points.

    Attributes:
        status: ``(n,)`` uint8, one :data:`STATUS` value per point, on the device when the points were, else a
            numpy array.
        first_off_curve: the first index with a coordinate >= q or off the curve, or None.
        first_outside: the first index on the curve but outside the prime-order subgroup, or None.
    """

    status: Any
    first_off_curve: int | None
    first_outside: int | None

    @property
    def ok(self) -> bool:
        """Every point on the curve and in the subgroup."""
        return self.first_off_curve is None and self.first_outside is None


def _words(values: list[int]) -> np.ndarray:
    """Canonical Fq ints -> their Montgomery forms as uint32 words (12 per value, little-endian)."""
    raw = b"".join(FQ.to_mont(v).to_bytes(48, "little") for v in values)
    return np.frombuffer(raw, dtype="<u4").astype(np.uint32)


def endo_words(group: str) -> np.ndarray:
    """The kernel's constants for ``group`` (``"g1"``: β; ``"g2"``: c_x then c_y, c0 before c1), Montgomery form,
    uint32 words."""
    if group == "g1":
        return _words([endo.BETA])
    return _words([*endo.PSI_X, *endo.PSI_Y])


def _kernel(name: str) -> Any:
    return _cuda.get_kernel("subgroup", name)


def _group(group: str) -> str:
    g = str(group).lower()
    if g not in GROUPS:
        raise ValueError(f"group must be 'g1' or 'g2', got {group!r}")
    return g


def check_points(points: Any, group: str, *, chunk: int = CHUNK) -> PointCheck:
    """Check every point of ``points`` (``(n, 12)`` G1 or ``(n, 24)`` G2 uint64 canonical, numpy or CuPy; identity all
    zero) for range, curve and subgroup; ``group`` ``"g1"``/``"g2"``; ``chunk`` host points per copy and launch.

    Raises:
        RuntimeError: no GPU. TypeError / ValueError: not uint64 of the group's shape, an unknown group, a chunk < 1.
    """
    g = _group(group)
    limbs, kname = GROUPS[g]
    cp = _cuda.cupy()
    on_device = _cuda.is_device_array(points)
    if not on_device and not isinstance(points, np.ndarray):
        raise TypeError(f"points: expected a numpy or CuPy uint64 array of shape (n, {limbs}), got {type(points).__name__}")
    if points.dtype != np.uint64 or points.ndim != 2 or points.shape[1] != limbs:
        raise ValueError(f"points: expected uint64 of shape (n, {limbs}) for {g.upper()}, got {points.dtype} {tuple(points.shape)}")
    if isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk < 1:
        raise ValueError(f"chunk must be an int >= 1, got {chunk!r}")
    n = int(points.shape[0])
    status = cp.zeros(n, dtype=cp.uint8)
    if n == 0:
        return PointCheck(status if on_device else np.zeros(0, np.uint8), None, None)
    consts = cp.asarray(endo_words(g))
    step = n if on_device else int(chunk)
    starts = range(0, n, step)
    first = cp.empty((len(starts), 2), dtype=cp.uint64)
    kern = _kernel(kname)
    k = np.uint64(endo.Z_ABS)
    for j, lo in enumerate(starts):
        hi = min(n, lo + step)
        part = cp.ascontiguousarray(points[lo:hi]) if on_device else cp.asarray(np.ascontiguousarray(points[lo:hi]))
        first[j] = hi - lo
        _cuda.launch_1d(kern, hi - lo, (part, np.uint64(hi - lo), consts, k, status[lo:hi], first[j]), block=BLOCK)
    found = _cuda.read_back(first, "subgroup check").astype(np.int64)
    sizes = np.array([min(n, lo + step) - lo for lo in starts], dtype=np.int64)
    offs = np.array(list(starts), dtype=np.int64)

    def earliest(col: int) -> int | None:
        hit = np.flatnonzero(found[:, col] < sizes)
        return None if hit.size == 0 else int(offs[hit[0]] + found[hit[0], col])

    return PointCheck(status if on_device else _cuda.read_back(status, "subgroup status"), earliest(0), earliest(1))


def warm_up() -> None:
    """Compile the kernels (NVRTC, cached on disk by CuPy) outside any timed region."""
    for g, (limbs, _) in GROUPS.items():
        check_points(np.zeros((1, limbs), dtype=np.uint64), g)
