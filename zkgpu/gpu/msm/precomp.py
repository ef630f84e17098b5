"""G1 MSM over precomputed shifted bases ``T[w n + i] = 2^(c w) P_i``: one bucket set, no Horner doublings.

Fixed-base precomputation (Brickell, Gordon, McCurley, Wilson, Eurocrypt 1992) applied to Pippenger's buckets. Table:
``96 nwin n`` bytes; ``nwin n < 2^31``."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from zkgpu.core import cuda as _cuda
from zkgpu.gpu.msm import devsort
from zkgpu.gpu.msm import pippenger as msm
from zkgpu.gpu.msm import reduce as msm_reduce
from zkgpu.gpu.msm.reduce import HEAVY_BLOCK

__all__ = ["MIN_C", "MAX_C", "INDEX_LIMIT", "PrecomputedBases", "window_bits", "table_bytes", "workspace_bytes",
           "check_size", "free_bytes", "msm_precomputed", "one_bucket_set"]

MIN_C, MAX_C = 2, 26
"""Window sizes :meth:`PrecomputedBases.build` accepts (the bucket array is ``192 * 2^(c-1)`` bytes: 6.4 GB at 26)."""
INDEX_LIMIT = 1 << 31
"""``nwin * n`` must stay below this: a sort key holds its table index in 31 bits (the sign in the 32nd)."""
OWN_KERNELS = ("msm_precomp_table", "msm_precomp_digits")
_RULE_C = range(8, 25)  # the windows window_bits chooses from
_BUCKET_WEIGHT = 14  # a bucket's cost in table entries' (window_bits: fitted on the H200)
_REDUCE_THREADS = 1 << 16  # window_reduce threads at most: each ends with a 32-bit mul_u32 (~48 group operations)


def _own(name: str) -> Any:
    return _cuda.get_kernel("msm_precomp", name)


def _k(name: str) -> Any:
    """A kernel of msm_precomp.cu, or of msm.cu / fr_ops.cu through :func:`zkgpu.gpu.msm.pippenger.kernel`."""
    return _own(name) if name in OWN_KERNELS else msm.kernel(name)


def table_bytes(n: int, c: int) -> int:
    """Device bytes of the table for n bases at window c: ``96 * num_windows(c) * n``."""
    return 96 * msm.num_windows(c) * int(n)


def workspace_bytes(n: int, c: int, chunk: int | None = None) -> int:
    """Upper estimate of the device bytes of one :func:`msm_precomputed` besides the table."""
    N, m = msm.num_windows(c) * int(n), 1 << (c - 1)
    t0 = -(-N // (chunk or msm.CHUNK))
    return 24 * N + 2 * 196 * (t0 + m) + 12 * t0 + 192 * m + 192 * _REDUCE_THREADS


def check_size(n: int, c: int) -> None:
    """Raise ValueError (one line naming the values) unless ``MIN_C <= c <= MAX_C`` and
    ``num_windows(c) * n < 2^31``; n must be an int >= 1."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"msm_precomp: n (bases) must be an int >= 1, got {n!r}")
    if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or not MIN_C <= c <= MAX_C:
        raise ValueError(f"msm_precomp: window c must be an int in {MIN_C}..{MAX_C}, got {c!r}")
    N = msm.num_windows(int(c)) * int(n)
    if N >= INDEX_LIMIT:
        raise ValueError(f"msm_precomp: {msm.num_windows(int(c))} windows x {n} bases = {N} table points, "
                         f"the sort key's index field holds < 2^31; use a larger window c or fewer bases")


def window_bits(n: int) -> int:
    """Default window for n bases: c in 8..24 minimising ``nwin(c) n + 14 * 2^(c-1)`` with ``nwin n < 2^31``. Raises
    ValueError: n not an int >= 1, or no such c."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"msm_precomp.window_bits: n (bases) must be an int >= 1, got {n!r}")
    ok = [c for c in _RULE_C if msm.num_windows(c) * int(n) < INDEX_LIMIT]
    if not ok:
        raise ValueError(f"msm_precomp: {n} bases exceed the 2^31 table index at every window in 8..24")
    return min(ok, key=lambda c: (msm.num_windows(c) * int(n) + _BUCKET_WEIGHT * (1 << (c - 1)), c))


def free_bytes() -> int:
    """Device bytes free for a new allocation: the driver's free memory plus CuPy's pooled free blocks."""
    cp = _cuda.cupy()
    return int(cp.cuda.Device().mem_info[0]) + int(cp.get_default_memory_pool().free_bytes())


@dataclasses.dataclass(frozen=True)
class PrecomputedBases:
    """The shifted-bases ``table`` (CuPy ``(nwin n, 24)`` uint32, Montgomery affine) of ``n`` bases for window ``c``."""

    table: Any
    n: int
    c: int

    @property
    def nwin(self) -> int:
        """The windows, ``ceil(256 / c)``."""
        return msm.num_windows(self.c)

    @property
    def nbytes(self) -> int:
        """Device bytes of the table."""
        return table_bytes(self.n, self.c)

    @classmethod
    def build(cls, mont: Any, c: int | None = None) -> PrecomputedBases:
        """The table from prepared bases ``mont`` ((n, 24) uint32), window ``c`` (default :func:`window_bits`). Raises
        TypeError/ValueError: bad ``mont``, c out of range, ``nwin n >= 2^31``, or too big for free GPU memory."""
        if not (isinstance(mont, np.ndarray) or _cuda.is_device_array(mont)) or mont.dtype != np.uint32:
            raise TypeError(f"msm_precomp: mont must be a (n, 24) uint32 array (zkgpu.gpu.msm.pippenger.prepare_points), "
                            f"got {type(mont).__name__} of dtype {getattr(mont, 'dtype', None)}")
        if mont.ndim != 2 or mont.shape[1] != 24:
            raise ValueError(f"msm_precomp: mont must have shape (n, 24), got {tuple(mont.shape)}")
        n = int(mont.shape[0])
        c = window_bits(n) if c is None else c
        check_size(n, c)
        c = int(c)
        need, free = table_bytes(n, c) + workspace_bytes(n, c), free_bytes()
        if need > free:
            raise ValueError(f"msm_precomp: the table for n={n}, c={c} ({msm.num_windows(c)} windows) needs "
                             f"{table_bytes(n, c) / 1e9:.2f} GB + {workspace_bytes(n, c) / 1e9:.2f} GB of MSM "
                             f"workspace, {free / 1e9:.2f} GB free on the GPU; use a larger c or fewer bases")
        cp = _cuda.cupy()
        nwin = msm.num_windows(c)
        table = cp.empty((nwin * n, 24), dtype=cp.uint32)
        _cuda.launch_1d(_k("msm_precomp_table"), n, (cp.ascontiguousarray(mont), np.uint64(n), np.int32(c),
                                                     np.int32(nwin), table), block=HEAVY_BLOCK)
        return cls(table=table, n=n, c=c)


def msm_precomputed(bases: PrecomputedBases, scalars: Any, *, deferred: msm.DeferredCheck | None = None,
                    phases: msm.Phases | None = None) -> Any:
    """``sum_i scalars[i] * P_i`` over a table on the GPU: CuPy ``(1, 12)`` uint64, equal to :func:`msm_device`'s.
    ``scalars``: CuPy ``(n, 4)`` canonical Fr; ``deferred``: queue the check; ``phases``: CUDA-event marks. Raises
    TypeError/ValueError: scalars not ``(n, 4)`` uint64 of the bases' n, or a scalar >= r."""
    if not isinstance(bases, PrecomputedBases):
        raise TypeError(f"msm_precomputed: bases must be a PrecomputedBases, got {type(bases).__name__}")
    msm._check_shape(scalars, 4, "scalars")
    n, c, nwin = bases.n, bases.c, bases.nwin
    if scalars.shape[0] != n:
        raise ValueError(f"scalars: expected {n} rows (one per base), got {scalars.shape[0]}")
    cp = _cuda.cupy()
    ph = phases or msm.Phases(False)
    ph.mark("start")
    sc = msm._check_scalars_dev(scalars, deferred)
    ph.mark("validate")
    m, N = 1 << (c - 1), nwin * n
    keys = cp.empty(N, dtype=cp.uint64)
    _cuda.launch_1d(_k("msm_precomp_digits"), n, (sc.view(cp.uint32), bases.table, np.uint64(n), np.int32(c),
                                                  np.int32(nwin), keys))
    ph.mark("digits")
    return one_bucket_set(cp, keys, bases.table, m, ph)


def one_bucket_set(cp: Any, keys: Any, table: Any, m: int, ph: msm.Phases) -> Any:
    """Single-window Pippenger over keys ``(N,)`` (``bucket << 32 | sign << 31 | row``) into ``m`` buckets; ``(1, 12)``."""
    N = int(keys.shape[0])
    keys = devsort.sort_keys(keys, begin_bit=32, end_bit=32 + m.bit_length(), overwrite=True)  # sentinel sorts last
    e = msm_reduce.valid_count(cp, _k, keys)
    ph.mark("sort")
    plan = msm_reduce.plan(N, 1, m, msm._chunk_size())  # one window; a bucket holds at most N entries
    parts = msm_reduce.level0(cp, _k, keys, e, table, plan)
    del keys
    ph.mark("bucket_accumulate")
    buckets = cp.zeros((m, 48), dtype=cp.uint32)
    msm_reduce.to_buckets(cp, _k, parts, plan, buckets)
    del parts
    ph.mark("bucket_partials")
    T = 1
    while T * 2 <= m and T * 2 <= _REDUCE_THREADS:
        T *= 2
    sums = cp.empty((T, 48), dtype=cp.uint32)
    _cuda.launch_1d(_k("window_reduce"), T, (buckets, np.uint32(1), np.uint32(m), np.uint32(T), np.uint32(m // T), np.uint32(m), sums),
                    block=HEAVY_BLOCK)
    total = msm._tree_sum(cp, sums, 1, T)
    ph.mark("window_reduce")
    out = msm._finish(cp, total, 1, 0)  # nwin = 1, c = 0: no doublings, just affine and canonical
    ph.mark("final")
    return out
