"""Deterministic G1/G2 benchmark bases with known discrete logs, made on the GPU (``g1_generate``) or with arkworks."""

from __future__ import annotations

from typing import Any

import numpy as np

from zkgpu.arith.curve import g1_mul, g2_generator, g2_mul, generator
from zkgpu.arith.field import FQ
from zkgpu.core import cuda as _cuda
from zkgpu.core import optional
from zkgpu.gpu.msm import pippenger as msm
from zkgpu.gpu.msm.group import group as _group

__all__ = ["generate_points", "generate_points_cpu"]

_GEN_PER_THREAD = 32  # points per GPU thread: k_t * G, then 31 steps of + 2^64 G

_M64 = (1 << 64) - 1


def _splitmix64(z: int) -> int:
    z = (z + 0x9E3779B97F4A7C15) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def _gen_scalar(seed: int, i: int) -> int:
    """The discrete log of generated point i: ``k_t + j * 2^64`` with t = i // 32, j = i % 32."""
    t, j = divmod(i, _GEN_PER_THREAD)
    k = _splitmix64((seed + t) & _M64) or 1
    return k + (j << 64)


def generate_points_cpu(n: int, seed: int = 0, *, group: str = "g1") -> np.ndarray:
    """The points of :func:`generate_points` computed on the CPU (arkworks), ``(n, 12)`` (G2: ``(n, 24)``) uint64."""
    ark = optional.arkworks()
    grp = _group(group)
    _check_seed(n, seed)
    g = grp.arkworks_point()()
    return grp.from_arkworks([g * ark.Scalar.from_le_bytes(_gen_scalar(seed, i).to_bytes(32, "little")) for i in range(n)])


def _check_seed(n: int, seed: int) -> None:
    if n < 0 or n > (1 << 31) - 1:
        raise ValueError(f"n must be in [0, 2^31), got {n}")
    if not 0 <= seed <= _M64:
        raise ValueError(f"seed must be in [0, 2^64), got {seed}")


def _mont_affine(p: np.ndarray) -> np.ndarray:
    """Host (1, 12) (G2: (1, 24)) canonical point -> 24 (48) uint32 words in Montgomery form."""
    buf = b"".join(FQ.to_mont(int.from_bytes(row, "little")).to_bytes(48, "little")
                   for row in np.split(np.frombuffer(p.astype("<u8").tobytes(), dtype=np.uint8), p.size // 6))
    return np.frombuffer(buf, dtype="<u4").astype(np.uint32)


def generate_points(n: int, seed: int = 0, *, group: str = "g1") -> Any:
    """Deterministic valid points: CuPy ``(n, 12)`` (G2: ``(n, 24)``) uint64; numpy without a GPU. Point ``32 t + j`` is
    ``(k_t + j 2^64) G``, ``k_t = splitmix64(seed + t)`` (0 -> 1). Raises ValueError: n outside [0, 2^31), seed outside
    [0, 2^64), or group not "g1"/"g2"."""
    _check_seed(n, seed)
    _group(group)
    if not _cuda.gpu_available():
        return generate_points_cpu(n, seed, group=group)
    return _generate_device(n, seed, group)


def _generate_device(n: int, seed: int, group: str = "g1") -> Any:
    cp = _cuda.cupy()
    grp = _group(group)
    g, mul = (g2_generator(), g2_mul) if grp.name == "g2" else (generator(), g1_mul)
    G = cp.asarray(_mont_affine(g))
    D = cp.asarray(_mont_affine(mul(g, [1 << 64])))
    out = cp.empty((n, grp.limbs), dtype=cp.uint64)
    if n:
        nthreads = -(-n // _GEN_PER_THREAD)
        _cuda.launch_1d(
            msm.kernel(grp.generate, grp.name), nthreads, (np.uint64(n), np.uint32(_GEN_PER_THREAD), np.uint64(seed), G, D, out.view(cp.uint32)), block=msm.HEAVY_BLOCK
        )
    return out
