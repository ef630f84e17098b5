"""Where one run's GPU time goes, from its event table.

:func:`idle_causes` splits the GPU window into compute, exposed H2D and idle time by cause (what the workers were
doing); :func:`gpu_time_split` gives the same parts per partition; :func:`gpu_budget` sets the GPU parts against the
kernels' benchmarks."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd

from zkgpu.analysis import keynumbers
from zkgpu.analysis.metrics import critical_path, detail_value, duration_ms
from zkgpu.core.events import GPU_PHASES

__all__ = [
    "host_syncs",
    "copy_wait",
    "SYNC_PHASES",
    "IDLE_CAUSES",
    "NO_PARTITION",
    "OTHER",
    "CAUSE_PHASES",
    "gpu_window",
    "idle_causes",
    "gpu_ms_per_partition",
    "kernel_ms_per_partition",
    "h_kernel_ms",
    "msm_bench_ms",
    "kernel_floor_ms",
    "gpu_budget",
    "BUSY_PARTS",
    "IDLE_PARTS",
    "OUTSIDE_WINDOW",
    "gpu_time_split",
    "parts_table",
]

Interval = tuple[int, int]
"""``(start_ns, end_ns)``, half-open."""


def _median_ms(events: pd.DataFrame, phase: str) -> float:
    """Median wall ms of ``phase``'s rows; NaN without any."""
    s = events[events["phase"] == phase]
    return float(duration_ms(s).median()) if len(s) else float("nan")


#: GPU-idle causes in order of precedence: (label, phases whose intervals claim the idle time).
IDLE_CAUSES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("barrier_wait (prep_msm)", ("barrier_wait",)),
    ("mutex_wait (lock hand-off)", ("mutex_wait",)),
    ("pre_lock (worker set-up)", ("pre_lock",)),
)
NO_PARTITION = "no partition ready (synthesis)"
OTHER = "other host work"
CAUSE_PHASES: dict[str, str] = {
    "compute": "kernel", "exposed H2D": "h2d", "barrier_wait (prep_msm)": "barrier_wait",
    "mutex_wait (lock hand-off)": "mutex_wait", "pre_lock (worker set-up)": "pre_lock",
    NO_PARTITION: "gpu_queue", OTHER: "lock_other",
}
"""The phase whose colour each cause of :func:`idle_causes` is drawn in (:func:`zkgpu.analysis.plots.gpu_window`)."""



def _union(iv: Iterable[Interval]) -> list[Interval]:
    out: list[Interval] = []
    for s, e in sorted((int(s), int(e)) for s, e in iv if e > s):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def _intersect(a: list[Interval], b: list[Interval]) -> list[Interval]:
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        s, e = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if s < e:
            out.append((s, e))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def _complement(a: list[Interval], lo: int, hi: int) -> list[Interval]:
    out, cur = [], lo
    for s, e in a:
        if s > cur:
            out.append((cur, min(s, hi)))
        cur = max(cur, e)
        if cur >= hi:
            break
    if cur < hi:
        out.append((cur, hi))
    return [(s, e) for s, e in out if e > s]


def _len(iv: list[Interval]) -> int:
    return sum(e - s for s, e in iv)


def _iv(ev: pd.DataFrame, phases: Iterable[str]) -> list[Interval]:
    sub = ev[ev["phase"].isin(list(phases))]
    return list(zip(sub["start_ns"].astype("int64"), sub["end_ns"].astype("int64"), strict=True))


def gpu_window(events: pd.DataFrame) -> tuple[int, int]:
    """``(lo_ns, hi_ns)``: first GPU-side start to last GPU phase end. Raises ValueError: no GPU phase rows."""
    gpu_rows = events[events["phase"].isin(GPU_PHASES)]
    if not len(gpu_rows):
        raise ValueError(f"the event table has no {GPU_PHASES} rows")
    starts = events[events["phase"].isin(("prove", "mutex_wait") + GPU_PHASES)]["start_ns"]
    return int(starts.min()), int(gpu_rows["end_ns"].max())


def _exposed_inside(events: pd.DataFrame) -> pd.DataFrame:
    """``partition`` and ``exposed_ms`` (clipped at 0, missing as 0) of the ``h2d`` rows copied
    inside ntt_msm_h (``stage=ntt_msm_h`` in their detail)."""
    h = events[events["phase"] == "h2d"]
    inside = h["detail"].astype("string").str.contains("stage=ntt_msm_h", regex=False).fillna(False).to_numpy(bool)
    return pd.DataFrame({"partition": h["partition"], "exposed_ms": detail_value(h, "exposed_ms").clip(lower=0).fillna(0.0)})[inside]


def idle_causes(events: pd.DataFrame) -> pd.DataFrame:
    """One run's GPU window by cause: ``ms`` and ``share`` (sum 1) indexed by ``cause``. ``attrs``: ``window_ms``,
    ``startup_ms``, ``partitions``. Raises ValueError: no GPU phase rows."""
    lo, hi = gpu_window(events)
    busy = _intersect(_union(_iv(events, GPU_PHASES)), [(lo, hi)])
    exposed_ns = min(float(_exposed_inside(events)["exposed_ms"].sum()) * 1e6, float(_len(busy)))
    idle = _complement(busy, lo, hi)
    rows = {"compute": (_len(busy) - exposed_ns) / 1e6, "exposed H2D": exposed_ns / 1e6}
    for label, phases in IDLE_CAUSES:
        claimed = _intersect(idle, _union(_iv(events, phases)))
        rows[label] = _len(claimed) / 1e6
        idle = _intersect(idle, _complement(claimed, lo, hi))
    waiting = _union(_iv(events, ("gpu_queue",)))
    starved = _intersect(idle, _complement(waiting, lo, hi))
    rows[NO_PARTITION] = _len(starved) / 1e6
    rows[OTHER] = (_len(idle) - _len(starved)) / 1e6
    window_ms = (hi - lo) / 1e6
    out = pd.DataFrame({"ms": pd.Series(rows, dtype=float)})
    out["share"] = out["ms"] / window_ms if window_ms > 0 else np.nan
    out.index.name = "cause"
    out.attrs.update(window_ms=window_ms, startup_ms=(lo - int(events["start_ns"].min())) / 1e6,
                     partitions=int(events.loc[events["phase"] == "tail_msm", "partition"].nunique()))
    return out


def gpu_ms_per_partition(events: pd.DataFrame) -> float:
    """Median per partition of the GPU phases' wall ms minus exposed H2D; NaN without GPU phases."""
    g = events[events["phase"].isin(GPU_PHASES)]
    if not len(g):
        return float("nan")
    per = duration_ms(g).groupby(g["partition"]).sum()
    ex = _exposed_inside(events)
    if len(ex):
        per = per.sub(ex.groupby("partition")["exposed_ms"].sum(), fill_value=0.0)
    return float(per.median())


def _gpu_clock(rows: pd.DataFrame) -> np.ndarray:
    """Rows placed on the GPU clock (``clock=gpu`` in the detail: ``lock_scope="submit"``, whose GPU
    phases are the interval their kernels ran, :meth:`zkgpu.pipeline.trace.Tracer.place_on_gpu_clock`)."""
    return rows["detail"].astype("string").str.contains("clock=gpu", regex=False).fillna(False).to_numpy(bool)


def h_kernel_ms(events: pd.DataFrame) -> float:
    """The H computation's kernel ms per partition (median; GPU-clock runs: ntt_msm_h span minus h_msm); NaN if none."""
    nt = events[events["phase"] == "ntt"]
    k = detail_value(nt, "kernel_ms") if len(nt) else pd.Series(dtype=float)
    if k.notna().any():
        return float(k.median())
    g = events[events["phase"].isin(("ntt_msm_h", "h_msm"))]
    g = g[_gpu_clock(g)]
    if not len(g):
        return float("nan")
    per = duration_ms(g).groupby([g["partition"], g["phase"]]).sum().unstack("phase")
    if not {"ntt_msm_h", "h_msm"} <= set(per.columns):
        return float("nan")
    return float((per["ntt_msm_h"] - per["h_msm"]).dropna().median())


def kernel_ms_per_partition(events: pd.DataFrame) -> float:
    """Kernel ms one partition needs (H kernels + H MSM + batch_add + tail_msm medians); NaN when a part is missing."""
    return h_kernel_ms(events) + _median_ms(events, "h_msm") + _median_ms(events, "batch_add") + _median_ms(events, "tail_msm")


def _msm_rows(msm_bench: pd.DataFrame | None) -> pd.DataFrame | None:
    """Device-resident, uniform-scalar rows of a ``zkgpu bench msm`` table (``log2_n``, ``median_ms``)."""
    if msm_bench is None or "median_ms" not in msm_bench.columns:
        return None
    s = msm_bench.rename(columns={"log_n": "log2_n"})
    for c, v in (("mode", "device"), ("scalars", "uniform")):
        if c in s:
            s = s[s[c] == v]
    s = s.groupby("log2_n", as_index=False)["median_ms"].median()
    return s if len(s) else None


def msm_bench_ms(msm_bench: pd.DataFrame | None, m: int) -> float:
    """Benchmarked G1 MSM ms for m points (log-log interpolation, clamped); NaN without a table or m < 1."""
    s = _msm_rows(msm_bench)
    if s is None or m < 1:
        return float("nan")
    return float(2 ** np.interp(math.log2(m), s["log2_n"].to_numpy(float), np.log2(s["median_ms"].to_numpy(float))))


def kernel_floor_ms(n: int, ntt_bench: pd.DataFrame | None, msm_bench: pd.DataFrame | None) -> dict[str, float]:
    """Benchmark ms at size n: ``compute_h`` and ``h_msm``; NaN where a table lacks n."""
    lg = int(n).bit_length() - 1
    out = {"compute_h": float("nan"), "h_msm": float("nan")}
    if ntt_bench is not None and {"variant", "median_ms"} <= set(ntt_bench.columns):
        col = "log_n" if "log_n" in ntt_bench else "log2_n"
        s = ntt_bench[(ntt_bench["variant"] == "compute_h") & (ntt_bench[col] == lg)]
        if len(s):
            out["compute_h"] = float(s["median_ms"].median())
    rows = _msm_rows(msm_bench)
    if rows is not None and (rows["log2_n"] == lg).any():
        out["h_msm"] = float(rows.loc[rows["log2_n"] == lg, "median_ms"].iloc[0])
    return out


def gpu_budget(events: pd.DataFrame, n: int, ntt_bench: pd.DataFrame | None = None, msm_bench: pd.DataFrame | None = None,
               setup_bench: Mapping[str, float] | None = None, msm_bases: str = "plain") -> pd.DataFrame:
    """One partition's GPU parts (median ms) against the kernels' benchmarks: ``pipeline_ms``, ``benchmark_ms``,
    ``ratio``. Rows: H computation, exposed H2D, H MSM, batch_add, tail_msm, GPU phases, host work inside the phases.
    ``setup_bench`` (a manifest's ``setup.msm_bench``) gives the MSM benchmark for ``msm_bases``, else ``msm_bench``.
    Raises ValueError: ``msm_bases`` not ``plain`` or ``precomputed``."""
    if msm_bases not in ("plain", "precomputed"):
        raise ValueError(f"msm_bases must be 'plain' or 'precomputed', got {msm_bases!r}")
    floor = kernel_floor_ms(n, ntt_bench, msm_bench)
    pm = events[events["phase"] == "prep_msm"]
    sig = [detail_value(pm, f"{k}_sig").median() for k in ("l", "a", "b_g1")] if len(pm) else []
    tails = sum(msm_bench_ms(msm_bench, int(m)) for m in sig if np.isfinite(m) and m > 0) if sig else float("nan")
    h_bench = floor["h_msm"]
    sb = {k: float(v) for k, v in (setup_bench or {}).items() if isinstance(v, (int, float)) and v > 0}
    variant = "precomp" if msm_bases == "precomputed" else "plain"
    if f"h_{variant}" in sb:
        h_bench = sb[f"h_{variant}"]
    if variant == "precomp":
        tails = tails * sb["tail_precomp"] / sb["tail_plain"] if {"tail_precomp", "tail_plain"} <= set(sb) else float("nan")
    ex = _exposed_inside(events)
    exposed = float(ex.groupby("partition")["exposed_ms"].sum().median()) if len(ex) else 0.0
    rows = {
        "H computation": (h_kernel_ms(events), floor["compute_h"]),
        "exposed H2D": (exposed, float("nan")),
        "H MSM": (_median_ms(events, "h_msm"), h_bench),
        "batch_add": (_median_ms(events, "batch_add"), float("nan")),
        "tail_msm": (_median_ms(events, "tail_msm"), tails if tails else float("nan")),
        "GPU phases": (gpu_ms_per_partition(events), float("nan")),
    }
    parts = [v[0] for k, v in rows.items() if k != "GPU phases"]
    # the part of the GPU phases in which none of the above ran: the worker's host work (Python,
    # launches, waits on copies and syncs) that the GPU waited for
    host = rows["GPU phases"][0] + exposed - sum(parts) if all(np.isfinite(parts)) else float("nan")
    rows["host work inside the phases"] = (max(0.0, host) if np.isfinite(host) else float("nan"), float("nan"))
    out = pd.DataFrame.from_dict(rows, orient="index", columns=["pipeline_ms", "benchmark_ms"])
    out["ratio"] = out["pipeline_ms"] / out["benchmark_ms"]
    out.index.name = "part"
    return out


#: the phases whose events carry ``host_syncs`` (recordings made since the count was added)
SYNC_PHASES: tuple[str, ...] = (*GPU_PHASES, "gpu_wait")


def host_syncs(events: pd.DataFrame) -> pd.Series:
    """Median host syncs per partition by phase, and ``total``; empty without ``host_syncs``."""
    ev = events[events["phase"].isin(SYNC_PHASES)]
    v = detail_value(ev, "host_syncs")
    if not len(ev) or v.isna().all():
        return pd.Series(dtype=float, name="host_syncs")
    per = pd.DataFrame({"partition": ev["partition"], "phase": ev["phase"], "n": v}).dropna()
    table = per.groupby(["partition", "phase"])["n"].sum().unstack("phase").fillna(0.0)
    out = table.median().reindex([p for p in SYNC_PHASES if p in table.columns])
    out["total"] = float(table.sum(axis=1).median())
    return out.rename("host_syncs")


def copy_wait(events: pd.DataFrame) -> dict[str, float | str]:
    """The a/b/c H2D per partition: ``stage``, medians of ``wall_ms``, ``dma_ms``, ``wait_ms``, ``wall_p90_ms``, ``partitions``."""
    h = events[events["phase"] == "h2d"]
    nan: dict[str, float | str] = {"stage": "", "wall_ms": math.nan, "wall_p90_ms": math.nan, "dma_ms": math.nan, "wait_ms": math.nan,
                                   "partitions": 0}
    if not len(h):
        return nan
    dma = detail_value(h, "stream_ms")
    t = pd.DataFrame({"run": h["run"].astype("string").fillna(""), "partition": h["partition"].astype("float64").fillna(-1.0),
                      "wall": duration_ms(h).to_numpy(), "dma": dma.to_numpy(), "valid": (dma.notna() & (dma >= 0)).to_numpy()})
    per = t.groupby(["run", "partition"]).agg(wall=("wall", "sum"), dma=("dma", "sum"), valid=("valid", "all"))
    per = per[per["valid"]]
    if not len(per):
        return nan
    stages = h["detail"].astype("string").str.extract(r"stage=(\w+)", expand=False).dropna().unique()
    return {"stage": str(stages[0]) if len(stages) == 1 else ("mixed" if len(stages) else ""), "wall_ms": float(per["wall"].median()),
            "wall_p90_ms": float(per["wall"].quantile(0.9)), "dma_ms": float(per["dma"].median()),
            "wait_ms": float((per["wall"] - per["dma"]).median()), "partitions": int(len(per))}


#: The GPU's parts of :func:`gpu_time_split`, in its column order (ms per partition; :data:`zkgpu.analysis.metrics.GPU_PATH`'s names).
BUSY_PARTS: tuple[str, ...] = ("h2d", "ntt", "h_msm", "batch_add", "tail_msm")
#: :func:`gpu_time_split`'s column for the time outside the GPU window (start-up before the first GPU phase, wind-down after the last).
OUTSIDE_WINDOW = "outside the GPU window (start-up, wind-down)"
#: :func:`gpu_time_split`'s idle columns, in its column order: :func:`idle_causes`' names, then :data:`OUTSIDE_WINDOW`.
IDLE_PARTS: tuple[str, ...] = (*(label for label, _ in IDLE_CAUSES), NO_PARTITION, OTHER, OUTSIDE_WINDOW)


def gpu_time_split(events: pd.DataFrame) -> pd.DataFrame:
    """The GPU's wall time per partition of each run in disjoint parts, idle parts named as :func:`idle_causes`. Returns
    :data:`BUSY_PARTS`, :data:`IDLE_PARTS` (ms per partition, summing to ``ms_per_partition``), ``partitions``,
    ``ms_per_partition``, ``wall_ms`` indexed by run. Raises ValueError: a run without GPU phases."""
    path = critical_path(events)
    rows = {}
    for run, ev in events.groupby("run", sort=False):
        gpus = ev["gpu"].dropna().unique().tolist() if "gpu" in ev.columns else []
        per = [ev[ev["gpu"].isna() | (ev["gpu"] == g)] for g in gpus] if len(gpus) > 1 else [ev]
        acc = dict.fromkeys((*BUSY_PARTS, *IDLE_PARTS), 0.0)
        windows = compute = 0.0
        for e in per:
            ic = idle_causes(e)
            ms = ic["ms"]
            compute += float(ms["compute"])
            acc["h2d"] += float(ms["exposed H2D"])
            for c in IDLE_PARTS[:-1]:
                acc[c] += float(ms[c])
            windows += float(ic.attrs["window_ms"])
        p = path.loc[run]
        n = float(p["partitions"])
        kern = p[list(BUSY_PARTS[1:])].astype(float)
        share = kern / kern.sum() if kern.sum() > 0 else pd.Series(1.0 / len(kern), index=kern.index)
        for c in BUSY_PARTS[1:]:
            acc[c] = compute * float(share[c])
        acc[OUTSIDE_WINDOW] = max(0.0, float(p["wall_ms"]) * len(per) - windows)
        rows[run] = {**{k: (v / n if n else float("nan")) for k, v in acc.items()},
                     "partitions": int(n), "ms_per_partition": float(p["ms_per_partition"]), "wall_ms": float(p["wall_ms"])}
    cols = [*BUSY_PARTS, *IDLE_PARTS, "partitions", "ms_per_partition", "wall_ms"]
    out = pd.DataFrame.from_dict(rows, orient="index", columns=cols).rename_axis("run")
    out.attrs["statistic"] = keynumbers.MEAN_PER_PARTITION  # the report shows it for representative runs
    return out


def parts_table(split: pd.DataFrame, run: str, min_ms: float = 0.05) -> pd.DataFrame:
    """One run of :func:`gpu_time_split` as parts of at least ``min_ms``: ``ms_per_partition`` and ``share``, then the total."""
    row = split.loc[run]
    parts = row[[*BUSY_PARTS, *IDLE_PARTS]].astype(float)
    parts = parts[parts >= min_ms]
    total = float(row["ms_per_partition"])
    out = pd.DataFrame({"ms_per_partition": [*parts.to_numpy(), total], "share": [*(parts / total).to_numpy(), 1.0]},
                       index=pd.Index([*parts.index, "GPU time per partition"], name="part"))
    out.attrs.update(split.attrs)
    return out
