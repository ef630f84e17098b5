"""G1 MSM over selected rows of a precomputed shifted-bases table, without gathering the table.

The pipeline's tail MSMs run over the compacted significant scalars of prep_msm and their base indices
``idx`` (:class:`zkgpu.gpu.msm.pippenger.PrepMsm`): ``sum_j s_j P_(idx[j])``. Over a
:class:`zkgpu.gpu.msm.precomp.PrecomputedBases` table (``T[w*n + i] = 2^(c*w) P_i``) the digit of window w of
scalar j indexes the table point ``w*n + idx[j]`` directly: the kernel ``msm_precomp_rows_digits``
(appended to ``zkgpu/kernels/msm_precomp.cu``) writes the sort keys of the ``nwin * m`` (window, row)
pairs, and the rest is :func:`zkgpu.gpu.msm.precomp.msm_precomputed`'s one bucket set (the same kernels of
msm.cu, :mod:`zkgpu.gpu.msm.devsort`, :mod:`zkgpu.gpu.msm.reduce`). Copying ``nwin`` rows per selected base
(``96 * nwin * m`` bytes) is what this avoids. The window is the table's (fixed when it was built).

Algorithm: fixed-base Pippenger with precomputed shifts (Brickell, Gordon, McCurley, Wilson 1992;
Pippenger 1976), as :mod:`zkgpu.gpu.msm.precomp`. No host sync with a deferred scalar check and device
indices (:func:`zkgpu.core.cuda.sync_counts` counts none).
"""

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
    """``sum_j scalars[j] * P_(idx[j])`` over a :class:`~zkgpu.gpu.msm.precomp.PrecomputedBases` table, on the GPU.

    Args:
        bases: the table of n bases (window ``bases.c``).
        scalars: CuPy or numpy ``(m, 4)`` uint64 canonical Fr (values < r), one per selected row.
        idx: ``(m,)`` integer rows in ``[0, n)`` (numpy or CuPy; repeats allowed), e.g.
            :attr:`zkgpu.gpu.msm.pippenger.PrepMsm.sig_indices`.
        deferred: queue the scalar check on it (``deferred.raise_if_bad()`` after the stream's work)
            instead of reading it back here.
        check_rows: with device ``idx``, read back whether every row is in range (one host sync).
            Without it a device row outside ``[0, n)`` contributes nothing (it is never read); a numpy
            ``idx`` is always checked on the host.

    Returns:
        CuPy ``(1, 12)`` uint64, the affine sum (layout of :mod:`zkgpu.arith.curve`; all zero for m = 0), the
        same as :func:`zkgpu.gpu.msm.pippenger.msm_device` over the gathered bases ``mont[idx]``.

    Device memory besides the table: :func:`zkgpu.gpu.msm.precomp.workspace_bytes` of m bases at the table's c.
    Host syncs: the scalar check without ``deferred``, the row check with ``check_rows``; none otherwise.

    Raises:
        TypeError / ValueError: bases not a table; scalars not ``(m, 4)`` uint64; idx not ``(m,)`` integers;
            a row outside ``[0, n)`` (host idx, or ``check_rows``; the first named); a scalar ``>= r``
            (the first bad index named; with ``deferred`` from ``raise_if_bad``).
    """
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
