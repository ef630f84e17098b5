"""The one event-table schema every producer and consumer shares.

Producers: the pipeline's recorder (``zkgpu.trace``), the cuzk-log parsers and the nsys SQLite
reader (``zkgpu.logs``), the what-if model (``zkgpu.model``). Consumers: ``zkgpu.metrics``,
``zkgpu.plots``, the notebooks. One row is one timed interval of one phase.

Columns (pandas dtypes):

=============  ==========  ==============================================================
run            string      run identifier (e.g. ``baseline-pageable-coarse-gw2``)
source         string      ``zkgpu`` (our pipeline), ``cuzk-log``, ``nsys``, ``model``, ``seed``
worker         Int64       GPU worker id within its GPU (cuzk ``worker=``), <NA> for CPU-only
gpu            Int64       GPU ordinal, <NA> when not tied to a GPU
partition      Int64       partition index within the run, <NA> for run-level events
phase          string      one of :data:`PHASES` (other names are allowed, e.g. from nsys)
start_ns       int64       interval start, ns since the run's epoch (host monotonic clock)
end_ns         int64       interval end, ns (>= start_ns)
gpu_ms         float64     GPU time from CUDA events inside the interval, ms (NaN if none)
bytes          Int64       bytes moved by the phase (H2D copies), <NA> if not applicable
detail         string      free-form ``key=value`` pairs
=============  ==========  ==============================================================
"""

from __future__ import annotations

import pandas as pd

__all__ = ["COLUMNS", "DTYPES", "PHASES", "GPU_PHASES", "empty_events", "normalize_events"]

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
    "finalize",  # join prep/b_g2, epilogue (outside the mutex)
    "tracker_lock",  # waiting for the tracker lock in the finalizer
    "malloc_trim",  # malloc_trim step after each partition
)

# The GPU phases upstream counts as GPU work (gpu_total − barrier_wait): zkgpu.metrics.kernel_utilization;
# compute_utilization takes the H2D copies inside ntt_msm_h out of them.
GPU_PHASES: tuple[str, ...] = ("ntt_msm_h", "batch_add", "tail_msm")


def empty_events() -> pd.DataFrame:
    """An empty event table with the schema's columns and dtypes."""
    return pd.DataFrame({c: pd.Series(dtype=t) for c, t in DTYPES.items()})


def normalize_events(df: pd.DataFrame) -> pd.DataFrame:
    """Return df with exactly the schema's columns (missing ones filled with NA) and dtypes.

    Raises:
        ValueError: a row has ``end_ns < start_ns`` (names the first such row).
    """
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
