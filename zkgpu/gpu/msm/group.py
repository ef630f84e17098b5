"""The MSM's two groups: G1 ``(n, 12)`` host / ``(n, 24)`` affine / ``(n, 48)`` XYZZ uint32 words, and G2 double that
(msm.cu built with ``-DZK_MSM_G2=1``); point checks and the arkworks CPU reference."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from zkgpu.arith.curve import (
    G2_LIMBS,
    LIMBS,
    check_points,
    g1_from_arkworks,
    g1_to_arkworks,
    g2_check_points,
    g2_from_arkworks,
    g2_to_arkworks,
)
from zkgpu.arith.field import FR, check_array
from zkgpu.core import optional

__all__ = ["Group", "G1", "G2", "GROUPS", "group", "msm_cpu"]


@dataclasses.dataclass(frozen=True)
class Group:
    """One group of the MSM: layouts in words, msm.cu's defines, kernels, checks and arkworks conversions."""

    name: str
    limbs: int
    affine_words: int
    xyzz_words: int
    defines: tuple[tuple[str, str], ...]
    prepare: str
    generate: str
    curve: str
    check_points: Callable[..., np.ndarray]
    from_arkworks: Callable[[Any], np.ndarray]
    to_arkworks: Callable[..., list[Any]]

    def identity(self, n: int = 1) -> np.ndarray:
        """n identities in the host layout (all zero)."""
        return np.zeros((n, self.limbs), dtype=np.uint64)

    def arkworks_point(self) -> Any:
        """py-arkworks-bls12381's point class of the group (``G1Point``, ``G2Point``)."""
        return optional.arkworks().G2Point if self.name == "g2" else optional.arkworks().G1Point


G1 = Group("g1", LIMBS, 24, 48, (), "g1_prepare", "g1_generate", "y^2 = x^3 + 4", check_points, g1_from_arkworks,
           g1_to_arkworks)
G2 = Group("g2", G2_LIMBS, 48, 96, (("ZK_MSM_G2", "1"),), "g2_prepare", "g2_generate", "y^2 = x^3 + 4(u + 1)",
           g2_check_points, g2_from_arkworks, g2_to_arkworks)
GROUPS = {"g1": G1, "g2": G2}


def group(name: object) -> Group:
    """The group named "g1" or "g2" (a Group as it is). Raises ValueError: anything else."""
    if isinstance(name, Group):
        return name
    if not isinstance(name, str) or name not in GROUPS:
        raise ValueError(f"group must be 'g1' or 'g2', got {name!r}")
    return GROUPS[name]


def msm_cpu(points: np.ndarray, scalars: np.ndarray, grp: Group = G1) -> np.ndarray:
    """CPU reference MSM (arkworks ``multiexp_unchecked``) after checks: ``(1, limbs)`` uint64. Raises
    TypeError/ValueError: a bad point or scalar (first bad index) or mismatched counts."""
    pts = grp.check_points(np.asarray(points))
    sc = check_array(FR, np.asarray(scalars), name="scalars")
    if sc.shape[0] != pts.shape[0]:
        raise ValueError(f"scalars: expected {pts.shape[0]} rows (one per point), got {sc.shape[0]}")
    if pts.shape[0] == 0:
        return grp.identity(1)
    ark = optional.arkworks()
    raw = sc.astype("<u8").tobytes()
    ss = [ark.Scalar.from_le_bytes(raw[i : i + 32]) for i in range(0, len(raw), 32)]
    return grp.from_arkworks([grp.arkworks_point().multiexp_unchecked(grp.to_arkworks(pts, checked=False), ss)])
