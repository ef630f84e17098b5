"""G1 MSM over selected rows ``idx`` of a precomputed shifted-bases table, without gathering the table."""

from __future__ import annotations

from typing import Any

import numpy as np

from zkgpu.core import cuda as _cuda
from zkgpu.gpu.msm import pippenger as msm
from zkgpu.gpu.msm import precomp as msm_precomp
from zkgpu.gpu.msm.precomp import PrecomputedBases

__all__ = ["msm_precomputed_rows"]


def _rows(idx: Any, n: int, m: int) -> Any:
    """``idx`` as a contiguous int64 device array of m rows; a host array is range-checked here (free);
    a device array without a host sync only by the kernel (an out-of-range row adds nothing)."""
    cp = _cuda.cupy()
    if isinstance(idx, np.ndarray):
        if idx.ndim != 1 or idx.shape[0] != m or not np.issubdtype(idx.dtype, np.integer):
            raise ValueError(f"idx: expected ({m},) integer rows (one per scalar), got dtype {idx.dtype}, shape {idx.shape}")
        bad = np.flatnonzero((idx < 0) | (idx >= n))
        if bad.size:
            raise ValueError(f"idx[{int(bad[0])}] = {int(idx[bad[0]])} is not a base row in [0, {n})")
        return cp.asarray(idx.astype(np.int64, copy=False))
    if not _cuda.is_device_array(idx) or idx.ndim != 1 or idx.shape[0] != m or idx.dtype.kind not in "iu":
        raise ValueError(f"idx: expected ({m},) integer rows (one per scalar), got {type(idx).__name__} "
                         f"of dtype {getattr(idx, 'dtype', None)}, shape {getattr(idx, 'shape', None)}")
    return cp.ascontiguousarray(idx.astype(cp.int64, copy=False))


def msm_precomputed_rows(bases: PrecomputedBases, scalars: Any, idx: Any, *, deferred: msm.DeferredCheck | None = None,
                         check_rows: bool = False) -> Any:
    """``sum_j scalars[j] * P_(idx[j])`` over a table on the GPU: CuPy ``(1, 12)`` uint64 (zero for m = 0).

    Args:
        scalars: ``(m, 4)`` canonical Fr. idx: ``(m,)`` rows in [0, n) (numpy: checked on the host).
        deferred: queue the scalar check. check_rows: read back the device rows' range check (one sync).
    Raises:
        TypeError/ValueError: bad table, scalars or idx, a row out of range, or a scalar >= r."""
    if not isinstance(bases, PrecomputedBases):
        raise TypeError(f"msm_precomputed_rows: bases must be a PrecomputedBases, got {type(bases).__name__}")
    msm._check_shape(scalars, 4, "scalars")
    cp = _cuda.cupy()
    n, c, nwin, m = bases.n, bases.c, bases.nwin, int(scalars.shape[0])
    rows = _rows(idx, n, m)
    if m == 0:
        return cp.zeros((1, 12), dtype=cp.uint64)
    if check_rows and _cuda.is_device_array(idx):
        bad = cp.flatnonzero((rows < 0) | (rows >= n))[:1]
        b = _cuda.read_back(bad, "msm_precomp_rows.rows_check")
        if b.size:
            raise ValueError(f"idx[{int(b[0])}] = {int(rows[int(b[0])].get())} is not a base row in [0, {n})")
    sc = msm._check_scalars_dev(cp.asarray(scalars), deferred)
    N, buckets = nwin * m, 1 << (c - 1)
    keys = cp.empty(N, dtype=cp.uint64)
    _cuda.launch_1d(msm_precomp._own("msm_precomp_rows_digits"), m,
                    (sc.view(cp.uint32), rows, bases.table, np.uint64(n), np.uint64(m), np.int32(c), np.int32(nwin), keys))
    return msm_precomp.one_bucket_set(cp, keys, bases.table, buckets, msm.Phases(False))
