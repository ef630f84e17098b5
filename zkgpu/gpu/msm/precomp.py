"""G1 MSM over precomputed shifted bases: one bucket set for every window, no Horner doublings.

For n bases ``P_i`` and c-bit signed windows (``nwin = ceil(256 / c)``, :func:`zkgpu.gpu.msm.pippenger.num_windows`)
:meth:`PrecomputedBases.build` computes once per base set (as a prover does when it loads its SRS) the
table ``T[w*n + i] = 2^(c*w) * P_i`` (affine, Montgomery form). Then
``sum_i s_i P_i = sum_(w,i) d_(i,w) T[w*n + i]`` with ``d_(i,w)`` the signed c-bit digits of ``s_i``:
:func:`msm_precomputed` is a single Pippenger window over ``nwin * n`` table points with ONE set of
``2^(c-1)`` buckets. Against :func:`zkgpu.gpu.msm.pippenger.msm_device` (``nwin`` bucket sets, a running-sum reduction
per window, Horner over windows) the bucket reduction runs once instead of ``nwin`` times, so the window
can grow (c = 20..23) and the per-window fixed costs vanish: fewer windows, fewer additions, at the
price of device memory and a one-off table build. The precomputation is the fixed-base method of
Brickell, Gordon, McCurley and Wilson ("Fast exponentiation with precomputation", Eurocrypt 1992) applied to
Pippenger's buckets (Pippenger 1976): fixed bases (a Groth16 SRS) make it pay for every proof.

Device memory (bytes): the table ``96 * nwin * n`` (2^24 bases at c = 20, 13 windows: 20.9 GB; 2^26 at
c = 22, 12 windows: 77.3 GB), plus per MSM about :func:`workspace_bytes` (sort keys ``8 * nwin * n`` twice and the
partials). :meth:`PrecomputedBases.build` refuses, with a one-line ValueError, a table that would not fit
beside its workspace in the GPU's free memory, and any ``nwin * n >= 2^31`` (a sort key holds the table
index in 31 bits).

Pipeline of :func:`msm_precomputed` (kernels: ``zkgpu/kernels/msm_precomp.cu`` for the table and the
digits, ``msm.cu`` for the rest): scalar check (msm's, deferrable); ``msm_precomp_digits`` (key =
``bucket << 32 | sign << 31 | (w*n + i)``, msm.cu's sentinel for zero digits and identity bases);
:func:`zkgpu.gpu.msm.devsort.sort_keys` of the ``c`` bucket bits; :mod:`zkgpu.gpu.msm.reduce` with one window of
``2^(c-1)`` buckets over the ``nwin * n`` table points (its bound holds as proved there: a bucket holds
at most ``nwin * n`` entries, which :func:`zkgpu.gpu.msm.reduce.plan` is given as its point count);
``window_reduce`` with one window, ``xyzz_sum_ranges``, ``msm_final`` without doublings. No host sync
with a deferred scalar check (:func:`zkgpu.core.cuda.sync_counts` counts none).
"""

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
    """An upper estimate of the device bytes one :func:`msm_precomputed` call allocates besides the table
    (N = nwin * n entries, m = 2^(c-1) buckets, L = ``chunk`` or :data:`zkgpu.gpu.msm.pippenger.CHUNK`): the keys and the
    sort's second buffer (``16 N``, plus ``8 N`` for CUB's temporary storage and counts), two partial
    buffers of ``196 * (ceil(N / L) + m)`` and the buckets ``192 m``."""
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
    """The default window c for n bases: the c in 8..24 minimising ``nwin(c) * n + 14 * 2^(c-1)`` among those
    with ``nwin(c) * n < 2^31``; e.g. 2^16 -> 14, 2^20 -> 16, 2^22 -> 20, 2^24 -> 20, 2^26 -> 22.

    The weight 14 is fitted to the H200 phase breakdowns of ``zkgpu bench msm --precomp-windows`` (2026-12-01,
    windows 16..24 at 2^22 and 2^24): a table entry's accumulation costs about 0.55 ns, a bucket's rounds and
    running-sum reduction 4-6 ns, and PoRep-like scalars (45% zero, 45% one) keep the bucket cost while cutting
    the entries to about a tenth; 14 minimises the sum of one uniform and one PoRep-like MSM over the windows
    measured (there c = 20 at 2^22 and 2^24: 42.5 + 17.3 ms and 139.0 + 34.1 ms).

    Raises:
        ValueError: n not an int >= 1, or no window in 8..24 keeps ``nwin * n < 2^31``.
    """
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
    """The shifted-bases table of n G1 bases for window c (:meth:`build`).

    Attributes:
        table: CuPy ``(nwin * n, 24)`` uint32, row ``w*n + i`` = ``2^(c*w) * P_i`` affine in Montgomery
            form (the identity stays all zero); ``96 * nwin * n`` bytes.
        n: the number of bases.
        c: the window bits.
    """

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
        """Compute the table from bases already checked and in Montgomery form.

        Args:
            mont: CuPy ``(n, 24)`` uint32 (:func:`zkgpu.gpu.msm.pippenger.prepare_points`).
            c: window bits in ``MIN_C..MAX_C`` (default :func:`window_bits`).

        One GPU thread per base (``msm_precomp_table``): c XYZZ doublings per window, to affine with one
        Fermat inversion per 8 windows (Montgomery's batch-inversion trick). Queued on the current stream,
        no host sync.

        Raises:
            TypeError / ValueError: mont not an ``(n, 24)`` uint32 array with n >= 1; c out of range or
                ``nwin * n >= 2^31`` (:func:`check_size`); or the table plus one MSM's workspace
                (:func:`table_bytes`, :func:`workspace_bytes`) more than the GPU's free memory (bytes named).
        """
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
    """``sum_i scalars[i] * P_i`` over the bases of a :class:`PrecomputedBases` table, on the GPU.

    Args:
        bases: the table (:meth:`PrecomputedBases.build`).
        scalars: CuPy ``(n, 4)`` uint64 canonical Fr (values < r), one per base.
        deferred: queue the scalar check on it (``deferred.raise_if_bad()`` after the stream's work)
            instead of reading it back here.
        phases: CUDA-event marks between the phases (``validate``, ``digits``, ``sort``,
            ``bucket_accumulate``, ``bucket_partials``, ``window_reduce``, ``final``; ms).

    Returns:
        CuPy ``(1, 12)`` uint64, the affine sum (layout of :mod:`zkgpu.arith.curve`), bit for bit what
        :func:`zkgpu.gpu.msm.pippenger.msm_device` returns for the same bases and scalars.

    Host syncs: ``msm.scalars_check`` without ``deferred``; none with it. Device memory besides the table:
    at most :func:`workspace_bytes`.

    Raises:
        TypeError / ValueError: scalars not a ``(n, 4)`` uint64 array of the bases' n; a scalar ``>= r`` (the
            first bad index named; with ``deferred`` from ``raise_if_bad``).
    """
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
    """The single-window Pippenger over one-bucket-set ``keys (N,)`` uint64 (``bucket << 32 | sign << 31 |
    table index``, msm.cu's sentinel for zero digits) and the table points ``table``: the sort of the bucket bits
    (:func:`zkgpu.gpu.msm.devsort.sort_keys`), :mod:`zkgpu.gpu.msm.reduce`'s balanced accumulation into ``m`` buckets (a bucket
    holds at most N entries), one ``window_reduce`` and the affine result; marks ``sort`` ... ``final`` on ``ph``.
    Shared by :func:`msm_precomputed` and :func:`zkgpu.gpu.msm.precomp_rows.msm_precomputed_rows`. Returns CuPy
    ``(1, 12)`` uint64; no host sync."""
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
