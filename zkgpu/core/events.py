"""The event-table schema every producer and consumer shares; one row is one timed interval of one phase.

Columns (pandas dtypes): run string; source string (``zkgpu``, ``cuzk-log``, ``nsys``, ``model``, ``seed``); worker,
gpu, partition Int64 (<NA> when not applicable); phase string (:data:`PHASES` or others); start_ns, end_ns int64 (ns
since the run's epoch, end >= start); gpu_ms float64 (CUDA-event time, NaN if none); bytes Int64 (H2D bytes); detail
string (``key=value`` pairs)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

__all__ = ["COLUMNS", "DTYPES", "PHASES", "GPU_PHASES", "empty_events", "normalize_events", "union_ms", "h2d_overlap"]

DTYPES: dict[str, str] = {
    "run": "string",
    "source": "string",
    "worker": "Int64",
    "gpu": "Int64",
    "partition": "Int64",
    "phase": "string",
    "start_ns": "int64",
    "end_ns": "int64",
    "gpu_ms": "float64",
    "bytes": "Int64",
    "detail": "string",
}
COLUMNS: list[str] = list(DTYPES)

PHASES: tuple[str, ...] = (
    "synthesize",  # CPU: a, b, c and aux produced (cuzk SYNTH_START -> SYNTH_END)
    "gpu_queue",  # waiting in the GPU queue (GPU_QUEUE -> GPU_PICKUP)
    "prove",  # GPU worker: GPU_START -> GPU_END (includes finalize, as upstream)
    "split_vectors",  # allocation of the split bit vectors
    "prep_msm",  # CPU thread: bitmap/density preprocessing
    "b_g2_msm",  # CPU thread: G2 tail MSM after prep_msm
    "pre_lock",  # entry -> just before taking the GPU mutex (pre_lock_cpu_ms)
    "mutex_wait",  # blocked on the per-GPU mutex
    "ntt_msm_h",  # H2D a/b/c + NTTs + pointwise + H MSM (inside the mutex)
    "h2d",  # sub-phase of ntt_msm_h: H2D of a, b, c
    "ntt",  # sub-phase of ntt_msm_h: iNTT, coset NTT, pointwise, inverse coset NTT
    "h_msm",  # sub-phase of ntt_msm_h: the H MSM
    "barrier_wait",  # GPU thread idle waiting for prep_msm (mutex held in coarse scope)
    "batch_add",  # L, A, B_G1, B_G2 batch additions
    "tail_msm",  # L, A, B_G1 tail MSMs
    "mutex_held",  # lock acquired -> released
    "gpu_wait",  # lock_scope="submit": outside the mutex, waiting for the partition's queued GPU work
    "finalize",  # join prep/b_g2, epilogue (outside the mutex)
    "tracker_lock",  # waiting for the tracker lock in the finalizer
    "malloc_trim",  # malloc_trim step after each partition
)

# The GPU phases upstream counts as GPU work (gpu_total − barrier_wait): zkgpu.analysis.metrics.kernel_utilization;
# compute_utilization takes the H2D copies inside ntt_msm_h out of them.
GPU_PHASES: tuple[str, ...] = ("ntt_msm_h", "batch_add", "tail_msm")


def empty_events() -> pd.DataFrame:
    """An empty event table with the schema's columns and dtypes."""
    return pd.DataFrame({c: pd.Series(dtype=t) for c, t in DTYPES.items()})


def normalize_events(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with exactly the schema's columns and dtypes. Raises ValueError: a row with ``end_ns < start_ns``."""
    out = df.copy()
    for c, t in DTYPES.items():
        if c not in out.columns:
            out[c] = pd.NA if t not in ("int64", "float64") else (0 if t == "int64" else float("nan"))
        out[c] = out[c].astype(t)
    out = out[COLUMNS].reset_index(drop=True)
    bad = out.index[out["end_ns"] < out["start_ns"]]
    if len(bad):
        i = int(bad[0])
        raise ValueError(f"event row {i} ({out.at[i, 'phase']}) ends before it starts: {out.at[i, 'start_ns']} > {out.at[i, 'end_ns']}")
    return out


# interval arithmetic on the table's [start_ns, end_ns) intervals: shared by the producers (the GPU
# backend's H2D overlap) and the analysis (zkgpu.analysis.metrics' utilizations)
def union_ms(starts: Sequence[int] | np.ndarray, ends: Sequence[int] | np.ndarray) -> float:
    """Length of the union of ns intervals [start, end), in ms (0.0 for none). Raises ValueError: starts and ends differ
    in length, or an end precedes its start."""
    s = np.asarray(starts, dtype=np.int64)
    e = np.asarray(ends, dtype=np.int64)
    if s.shape != e.shape:
        raise ValueError(f"starts and ends differ in shape: {s.shape} vs {e.shape}")
    if s.size == 0:
        return 0.0
    if np.any(e < s):
        i = int(np.argmax(e < s))
        raise ValueError(f"interval {i} ends before it starts: {s[i]} > {e[i]}")
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    total = 0
    cur_s, cur_e = int(s[0]), int(e[0])
    for a, b in zip(s[1:].tolist(), e[1:].tolist(), strict=True):
        if a <= cur_e:
            cur_e = max(cur_e, b)
        else:
            total += cur_e - cur_s
            cur_s, cur_e = a, b
    total += cur_e - cur_s
    return total / 1e6


def h2d_overlap(copies: Sequence[tuple[float, float]], kernels: Sequence[tuple[float, float]]) -> dict[str, float]:
    """Copy time hidden by kernels on one GPU timeline, from ``(start_ms, end_ms)`` intervals. Returns ``copy_ms`` (sum
    of copies), ``exposed_ms`` = |∪copies ∪ ∪kernels| − |∪kernels|, ``hidden_ms`` = copy_ms − exposed_ms, ``kernel_ms``
    = |∪kernels|. Raises ValueError: an interval ending before it starts."""
    def ns(iv: Sequence[tuple[float, float]]) -> tuple[list[int], list[int]]:
        return [round(a * 1e6) for a, _ in iv], [round(b * 1e6) for _, b in iv]

    cs, ce = ns(copies)
    ks, ke = ns(kernels)
    both = union_ms(cs + ks, ce + ke)
    exposed = max(0.0, both - union_ms(ks, ke))
    copy = float(sum(b - a for a, b in copies))
    return {"copy_ms": copy, "exposed_ms": exposed, "hidden_ms": max(0.0, copy - exposed), "kernel_ms": union_ms(ks, ke)}
