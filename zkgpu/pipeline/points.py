"""Host G1/G2 points for the pipeline, through py-arkworks-bls12381 (an independent library).

Point format: (1, 12) or (m, 12) uint64, affine x (6 limbs) then y (6 limbs), little-endian
canonical Fq; the identity is all zeros. This is byte-for-byte arkworks' ``to_xy_bytes_le`` (whose
identity is 96 zero bytes too), so the CPU and GPU backends hand the worker the same arrays.
Scalars: (m, 4) uint64 canonical Fr. Conversions to and from arkworks points and the host sums
(``g1_add`` pointwise, ``g1_sum`` of all rows) are :mod:`zkgpu.arith.curve`'s.
"""

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
    """The scaled-down CPU B_g2 multiexp: the first ``len(bases)`` rows of ``scalars`` ((m, 4)
    uint64) against ``bases`` (arkworks ``G2Point.multiexp_unchecked``); the compressed 96-byte
    result. Upstream runs a full sppark ``mult_pippenger`` over the significant B scalars on the
    CPU (supraseal ``groth16_cuda.cu:852-890``); we keep its place in the thread (after prep_msm,
    outside the mutex), not its size."""
    ark = optional.arkworks()
    k = min(len(bases), scalars.shape[0])
    if k == 0:
        return ark.G2Point.identity().to_compressed_bytes()
    return ark.G2Point.multiexp_unchecked(bases[:k], scalars_to_arkworks(scalars[:k])).to_compressed_bytes()
