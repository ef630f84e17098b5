"""The NTT passes' geometry over global memory, launch grids and the small host tables of ``kernels/ntt.cu``."""

from __future__ import annotations

from typing import Any

from zkgpu.arith.domain import powers
from zkgpu.arith.field import FR
from zkgpu.core import cuda as _cuda
from zkgpu.gpu.fr_device import to_device_mont

__all__ = ["MAX_TILE_LOG", "passes", "pass_shared_bytes", "grid", "split_tables"]

P = FR.modulus
(MAX_TILE_LOG,) = _cuda.header_defines("ntt.cu", "NTT_MAX_TILE_LOG")  # the largest tile of a stagewise pass, log2


def passes(L: int, max_tile_log: int = MAX_TILE_LOG, max_cols: int = MAX_TILE_LOG) -> list[tuple[int, int, int]]:
    """(s_lo, k, c) per pass in DIF order: L split evenly into <= max_tile_log-bit groups, larger first. A pass does
    index bits [s_lo, s_lo + k) on tiles of 2^(k+c) elements, c = min(s_lo, max_tile_log - k, max_cols)."""
    if L == 0:
        return []
    npass = -(-L // max_tile_log)
    ks = [L // npass + (1 if i < L % npass else 0) for i in range(npass)]
    out, top = [], L
    for k in ks:
        s_lo = top - k
        out.append((s_lo, k, min(s_lo, max_tile_log - k, max_cols)))
        top = s_lo
    return out


def pass_shared_bytes(T: int) -> int:
    """Dynamic shared memory of a pass on a tile of T elements, bytes: 32 T (tile) + 16 T (twiddles)."""
    return 48 * T


def grid(n: int, block: int = 256) -> tuple[int, int]:
    """(blocks, threads) of a grid-stride kernel over n items: at most 65535 * 8 blocks of ``block`` threads."""
    return max(1, min((n + block - 1) // block, 65535 * 8)), block


def split_tables(x: int, bits: int, scale: int = 1) -> tuple[Any, Any, int]:
    """lo[j] = x^j (j < 2^S), hi[j] = scale * x^(j*2^S) (j < 2^(bits-S)), S = ceil(bits/2), on the device in
    Montgomery form (flat uint32 CuPy arrays), with S: x^i * scale = lo[i mod 2^S] * hi[i >> S]."""
    S = (bits + 1) // 2
    lo = powers(x, 1 << S)
    step = pow(x, 1 << S, P)
    hi = [v * scale % P for v in powers(step, 1 << (bits - S))]
    return to_device_mont(lo), to_device_mont(hi), S

