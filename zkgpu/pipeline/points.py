"""Host G1/G2 points for the pipeline through arkworks: (m, 12) uint64 affine canonical, identity all zero."""

from __future__ import annotations

from typing import Any

import numpy as np

from zkgpu.arith.curve import g1_from_arkworks
from zkgpu.core import optional

__all__ = ["scalars_to_arkworks", "cpu_points", "g2_bases", "cpu_g2_msm"]


def scalars_to_arkworks(s: np.ndarray) -> list[Any]:
    """(m, 4) uint64 canonical Fr -> m arkworks ``Scalar`` objects."""
    ark = optional.arkworks()
    raw = np.ascontiguousarray(s, dtype=np.uint64).tobytes()
    return [ark.Scalar.from_le_bytes(raw[32 * i : 32 * i + 32]) for i in range(s.shape[0])]


def cpu_points(m: int, seed: int, tag: int = 0) -> np.ndarray:
    """m deterministic G1 points ``k_i * G`` (k_i in [1, 2^62) from ``(seed, tag)``), (m, 12) uint64."""
    ark = optional.arkworks()
    rng = np.random.default_rng([seed, 0x5B5, tag])
    ks = rng.integers(1, 2**62, size=m)
    g = ark.G1Point()
    out = np.empty((m, 12), dtype=np.uint64)
    for i, k in enumerate(ks):
        out[i] = g1_from_arkworks([g * ark.Scalar(int(k))])[0]
    return out


def g2_bases(m: int, seed: int) -> list[Any]:
    """m deterministic G2 points ``k_i * G2`` (arkworks objects, k_i in [1, 2^62) from ``seed``)."""
    ark = optional.arkworks()
    rng = np.random.default_rng([seed, 0x6B2])
    g = ark.G2Point()
    return [g * ark.Scalar(int(k)) for k in rng.integers(1, 2**62, size=m)]


def cpu_g2_msm(bases: list[Any], scalars: np.ndarray) -> bytes:
    """Scaled-down CPU B_g2 multiexp of the first ``len(bases)`` scalars (arkworks); compressed 96 bytes."""
    ark = optional.arkworks()
    k = min(len(bases), scalars.shape[0])
    if k == 0:
        return ark.G2Point.identity().to_compressed_bytes()
    return ark.G2Point.multiexp_unchecked(bases[:k], scalars_to_arkworks(scalars[:k])).to_compressed_bytes()
