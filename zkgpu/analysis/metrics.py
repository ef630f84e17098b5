"""Metrics on the event table and on :func:`zkgpu.analysis.logs.partition_table`.

Units: durations ms, times ns, bandwidth GB/s (1e9 bytes/s), fractions in [0, 1]. Groups by ``run``. The three
utilizations (:data:`UTILIZATIONS`), busy_ms / (n_gpus × wall span of all the run's events): ``compute_util`` (kernels,
copies left out), ``kernel_util`` (upstream's: gpu_total − barrier_wait, copies counted) and ``timeline_util`` (union of
``prove`` intervals)."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from zkgpu.analysis import keynumbers
from zkgpu.core.events import GPU_PHASES, union_ms

__all__ = [
    "duration_ms",
    "partitions_done",
    "phase_medians",
    "detail_value",
    "wall_span",
    "timeline_utilization",
    "kernel_utilization",
    "compute_utilization",
    "phase_shares",
    "h2d_share",
    "effective_h2d_gbps",
    "throughput",
    "identity_check",
    "mutex_stats",
    "utilization",
    "utilization_per_gpu",
    "critical_path",
    "ntt_msm_h_split",
    "barrier_race",
    "kernel_ms",
    "KERNEL_PATH",
    "UTILIZATIONS",
    "GPU_PATH",
    "CONTAINER_PHASES",
    "SUB_PHASES",
]

#: Phases whose interval contains other phases of the same partition (excluded from shares by default).
CONTAINER_PHASES: tuple[str, ...] = ("prove", "mutex_held")
#: Sub-phases of ntt_msm_h (excluded from shares by default; they double-count ntt_msm_h).
SUB_PHASES: tuple[str, ...] = ("h2d", "ntt", "h_msm")


def _check(events: pd.DataFrame) -> None:
    missing = {"run", "phase", "start_ns", "end_ns"} - set(events.columns)
    if missing:
        raise ValueError(f"event table lacks columns {sorted(missing)}; expected the zkgpu.core.events schema")


def detail_value(events: pd.DataFrame, key: str) -> pd.Series:
    """The float value of ``key=`` in each row's ``detail`` (NaN where absent, not a number or not
    finite; all NaN when the table has no ``detail`` column). ``key`` is matched literally."""
    if "detail" not in events.columns:
        return pd.Series(np.nan, index=events.index, dtype=float)
    d = events["detail"].astype("string")
    v = d.str.extract(rf"(?:^|,){re.escape(key)}=([^,]*)", expand=False)
    out = pd.to_numeric(v, errors="coerce").astype(float)
    return out.where(np.isfinite(out))


def _exposed_or(h: pd.DataFrame, fallback: pd.Series) -> pd.Series:
    """Per h2d row: the recorded ``exposed_ms`` (copy time no kernel hides) clipped to
    [0, ``fallback``] (it cannot exceed the copy), else ``fallback``."""
    ex = detail_value(h, "exposed_ms").clip(lower=0.0).to_numpy()
    return pd.Series(np.fmin(ex, fallback.astype(float).to_numpy()), index=h.index)  # fmin skips NaN


def _copy_ms(h: pd.DataFrame) -> pd.Series:
    """Per h2d row: its CUDA-event ``gpu_ms`` where present, else its interval, ms."""
    dur = duration_ms(h)
    return h["gpu_ms"].where(h["gpu_ms"].notna(), dur) if "gpu_ms" in h.columns else dur


def _h2d_inside_mask(events: pd.DataFrame) -> np.ndarray:
    """Mask of ``h2d`` rows inside ntt_msm_h (``stage=ntt_msm_h``, or within one without a ``stage``)."""
    ev = events.reset_index(drop=True)
    is_h = (ev["phase"] == "h2d").to_numpy()
    detail = ev["detail"].astype("string").fillna("") if "detail" in ev.columns else pd.Series("", index=ev.index, dtype="string")
    mask = is_h & detail.str.contains(r"(?:^|,)stage=ntt_msm_h(?:,|$)", regex=True).to_numpy(dtype=bool)
    unknown = is_h & ~detail.str.contains(r"(?:^|,)stage=", regex=True).to_numpy(dtype=bool)
    if unknown.any():
        n = ev[ev["phase"] == "ntt_msm_h"][["run", "partition", "start_ns", "end_ns"]]
        rows = ev.loc[unknown, ["run", "partition", "start_ns", "end_ns"]].assign(_pos=np.flatnonzero(unknown))
        m = rows.merge(n, on=["run", "partition"], suffixes=("", "_n"))
        ok = m[(m["start_ns"] >= m["start_ns_n"]) & (m["end_ns"] <= m["end_ns_n"])]["_pos"].to_numpy()
        mask[ok] = True
    return mask


def duration_ms(df: pd.DataFrame) -> pd.Series:
    """Each row's ``(end_ns - start_ns) / 1e6``: float64 ms, indexed like ``df``."""
    return (df["end_ns"].astype("int64") - df["start_ns"].astype("int64")) / 1e6


def phase_medians(events: pd.DataFrame) -> dict[str, float]:
    """Median wall duration (ms) of each phase present in an event table: ``{phase: ms}``."""
    if len(events) == 0:
        return {}
    d = events.assign(_ms=duration_ms(events))
    return {str(k): float(v) for k, v in d.groupby("phase", observed=True)["_ms"].median().items()}


def wall_span(events: pd.DataFrame) -> pd.DataFrame:
    """Wall span per run: index ``run``; columns ``start_ns`` (min start), ``end_ns`` (max end),
    ``wall_ms`` = (end_ns − start_ns) / 1e6 over **all** events of the run."""
    _check(events)
    g = events.groupby("run", dropna=False, sort=True)
    out = pd.DataFrame({"start_ns": g["start_ns"].min(), "end_ns": g["end_ns"].max()})
    out["wall_ms"] = (out["end_ns"] - out["start_ns"]) / 1e6
    return out


def _gpu_key(events: pd.DataFrame) -> pd.Series:
    if "gpu" not in events.columns:
        return pd.Series(-1, index=events.index)
    return events["gpu"].astype("Int64").fillna(-1)


def _util_table(busy: dict, gpus: dict, wall: pd.DataFrame) -> pd.DataFrame:
    if wall.empty:  # an empty event table: an empty result with the documented columns
        return pd.DataFrame(columns=["busy_ms", "wall_ms", "n_gpus", "utilization"], index=pd.Index([], name="run"))
    rows = []
    for run in wall.index:
        b = busy.get(run, 0.0)
        ng = max(1, gpus.get(run, 0))
        w = float(wall.at[run, "wall_ms"])
        u = (b / (ng * w)) if w > 0 else float("nan")
        rows.append({"run": run, "busy_ms": b, "wall_ms": w, "n_gpus": ng, "utilization": min(1.0, u) if not np.isnan(u) else u})
    return pd.DataFrame(rows).set_index("run")


def timeline_utilization(events: pd.DataFrame, phase: str = "prove") -> pd.DataFrame:
    """TIMELINE utilization per run: Σ per GPU of the union of ``phase`` intervals / (n_gpus × wall_ms). Returns
    ``busy_ms``, ``wall_ms``, ``n_gpus``, ``utilization`` indexed by run."""
    _check(events)
    wall = wall_span(events)
    sel = events[events["phase"] == phase]
    busy: dict = {}
    gpus: dict = {}
    for (run, _g), grp in sel.groupby([sel["run"], _gpu_key(sel)], dropna=False):
        busy[run] = busy.get(run, 0.0) + union_ms(grp["start_ns"].to_numpy(), grp["end_ns"].to_numpy())
        gpus[run] = gpus.get(run, 0) + 1
    return _util_table(busy, gpus, wall)


def kernel_utilization(events: pd.DataFrame, phases: Sequence[str] = GPU_PHASES) -> pd.DataFrame:
    """Kernel utilization per run: busy = Σ gpu_ms of the GPU phases (at most their union), else their union. Returns
    ``busy_ms``, ``wall_ms``, ``n_gpus``, ``utilization`` (clipped to 1), ``method`` indexed by run."""
    _check(events)
    wall = wall_span(events)
    sel = events[events["phase"].isin(list(phases))]
    busy: dict = {}
    gpus: dict = {}
    methods: dict = {}
    has_gpu_ms = "gpu_ms" in sel.columns
    for (run, _g), grp in sel.groupby([sel["run"], _gpu_key(sel)], dropna=False):
        span = union_ms(grp["start_ns"].to_numpy(), grp["end_ns"].to_numpy())
        if has_gpu_ms and grp["gpu_ms"].notna().all():
            b, m = min(float(grp["gpu_ms"].sum()), span), "gpu_ms"
        else:
            b, m = span, "intervals"
        busy[run] = busy.get(run, 0.0) + b
        gpus[run] = gpus.get(run, 0) + 1
        methods[run] = m if methods.get(run, m) == m else "mixed"
    out = _util_table(busy, gpus, wall)
    out["method"] = [methods.get(r, "none") for r in out.index]
    return out


def compute_utilization(events: pd.DataFrame, phases: Sequence[str] = GPU_PHASES) -> pd.DataFrame:
    """Compute utilization per run: :func:`kernel_utilization` minus the exposed H2D inside ntt_msm_h. Returns
    ``busy_ms``, ``copy_ms``, ``wall_ms``, ``n_gpus``, ``utilization`` indexed by run."""
    _check(events)
    k = kernel_utilization(events, phases)
    sel = events.reset_index(drop=True)[_h2d_inside_mask(events)]
    copy: dict = {}
    if len(sel):
        ms = _exposed_or(sel, _copy_ms(sel))
        copy = ms.groupby(sel["run"]).sum().to_dict()
    out = k.copy()
    out["copy_ms"] = [float(copy.get(r, 0.0)) for r in out.index]
    out["busy_ms"] = (out["busy_ms"] - out["copy_ms"]).clip(lower=0.0)
    u = out["busy_ms"] / (out["n_gpus"] * out["wall_ms"])
    out["utilization"] = u.clip(upper=1.0)
    return out[["busy_ms", "copy_ms", "wall_ms", "n_gpus", "utilization"] + [c for c in out.columns if c not in ("busy_ms", "copy_ms", "wall_ms", "n_gpus", "utilization")]]


def phase_shares(events: pd.DataFrame, by: Sequence[str] = ("run", "worker"), phases: Sequence[str] | None = None) -> pd.DataFrame:
    """Per group of ``by`` and phase: ``count``, ``total_ms``, ``mean_ms``, ``share`` (of the group's listed phases).
    ``phases`` default: all but :data:`CONTAINER_PHASES` and :data:`SUB_PHASES`."""
    _check(events)
    df = events.copy()
    df = df[~df["phase"].isin(CONTAINER_PHASES + SUB_PHASES)] if phases is None else df[df["phase"].isin(list(phases))]
    df["dur_ms"] = duration_ms(df)
    keys = [*by, "phase"]
    g = df.groupby(keys, dropna=False, sort=True)["dur_ms"]
    out = pd.DataFrame({"count": g.size(), "total_ms": g.sum(), "mean_ms": g.mean()}).reset_index()
    tot = out.groupby(list(by), dropna=False)["total_ms"].transform("sum") if len(by) else out["total_ms"].sum()
    out["share"] = out["total_ms"] / tot
    return out


def h2d_share(events: pd.DataFrame, by: Sequence[str] = ("run",)) -> pd.DataFrame:
    """Share of ntt_msm_h spent in the H2D of a, b, c, per group. Columns ``h2d_ms`` (exposed ms of h2d rows inside
    ntt_msm_h, else their interval), ``interval_ms``, ``ntt_msm_h_ms``, ``share``, ``interval_share``."""
    _check(events)
    df = events.reset_index(drop=True)
    dur = duration_ms(df).astype(float).to_numpy()
    inside = _h2d_inside_mask(df)
    exposed = np.zeros(len(df))
    if inside.any():  # per row, so one vectorised pass over every group's rows at once
        exposed[inside] = _exposed_or(df[inside], pd.Series(dur[inside], index=df.index[inside])).to_numpy()
    is_n = (df["phase"] == "ntt_msm_h").to_numpy()
    work = pd.DataFrame({**{k: df[k] for k in by}, "h2d_ms": exposed, "interval_ms": np.where(inside, dur, 0.0),
                         "ntt_msm_h_ms": np.where(is_n, dur, 0.0)})
    out = work.groupby(list(by), dropna=False, sort=True)[["h2d_ms", "interval_ms", "ntt_msm_h_ms"]].sum().reset_index()
    n = out["ntt_msm_h_ms"].where(out["ntt_msm_h_ms"] > 0)
    out["share"] = out["h2d_ms"] / n
    out["interval_share"] = out["interval_ms"] / n
    return out[[*by, "h2d_ms", "interval_ms", "ntt_msm_h_ms", "share", "interval_share"]]


def effective_h2d_gbps(events: pd.DataFrame, by: Sequence[str] = ("run",), phase: str = "h2d") -> pd.DataFrame:
    """Σ bytes / Σ time (gpu_ms, else interval) of ``phase`` rows: ``*by, bytes, time_ms, gbps, count``."""
    _check(events)
    df = events[(events["phase"] == phase)].copy()
    df = df[df["bytes"].notna()] if "bytes" in df.columns else df.iloc[0:0]
    t = duration_ms(df)
    if "gpu_ms" in df.columns:
        t = df["gpu_ms"].where(df["gpu_ms"].notna(), t)
    df["time_ms"] = t.astype("float64")
    df["bytes"] = df["bytes"].astype("float64") if len(df) else pd.Series(dtype="float64")
    rows = []
    for key, grp in df.groupby(list(by), dropna=False, sort=True):
        b = float(grp["bytes"].sum())
        tm = float(grp["time_ms"].sum())
        key = key if isinstance(key, tuple) else (key,)
        rows.append({**dict(zip(by, key, strict=True)), "bytes": b, "time_ms": tm, "gbps": b / (tm * 1e6) if tm > 0 else float("nan"), "count": len(grp)})
    return pd.DataFrame(rows, columns=[*by, "bytes", "time_ms", "gbps", "count"])


def partitions_done(events: pd.DataFrame) -> int:
    """The partitions one run's table counts: those of its ``prove`` rows, else of its ``tail_msm`` rows, else of all."""
    for ph in ("prove", "tail_msm", None):
        sel = events if ph is None else events[events["phase"] == ph]
        if len(sel):
            break
    return int(sel["partition"].dropna().nunique()) if "partition" in sel.columns else 0


def throughput(events: pd.DataFrame) -> pd.DataFrame:
    """Partitions per minute per run: ``partitions``, ``wall_ms``, ``partitions_per_min``, ``s_per_partition``."""
    _check(events)
    wall = wall_span(events)
    rows = []
    for run, grp in events.groupby("run", dropna=False, sort=True):
        n = partitions_done(grp)
        w = float(wall.at[run, "wall_ms"])
        rows.append(
            {
                "run": run,
                "partitions": n,
                "wall_ms": w,
                "partitions_per_min": n / (w / 60000.0) if w > 0 else float("nan"),
                "s_per_partition": (w / 1000.0 / n) if n and w > 0 else float("nan"),
            }
        )
    if not rows:
        return pd.DataFrame(columns=["partitions", "wall_ms", "partitions_per_min", "s_per_partition"], index=pd.Index([], name="run"))
    return pd.DataFrame(rows).set_index("run")


def identity_check(partition_table: pd.DataFrame) -> pd.DataFrame:
    """Upstream's identities on partition-table rows (notes/cuzk-pipeline.md §2.1), ms. ``components_ms`` (present GPU
    phases), ``missing``, ``residual_ms`` = gpu_total − components, ``rel_residual``, ``held_residual_ms`` = mutex_held
    − gpu_total, ``start_fn_residual_ms``."""
    comps = ["ntt_msm_h_ms", "barrier_wait_ms", "batch_add_ms", "tail_msm_ms"]
    pt = partition_table.copy()
    for c in (*comps, "gpu_total_ms", "mutex_held_ms", "total_start_fn_ms", "pre_lock_cpu_ms", "mutex_wait_ms"):
        if c not in pt.columns:
            pt[c] = np.nan
        pt[c] = pd.to_numeric(pt[c], errors="coerce").astype("float64")
    present = pt[comps].notna()
    out = pd.DataFrame(index=pt.index)
    out["gpu_total_ms"] = pt["gpu_total_ms"]
    out["components_ms"] = pt[comps].sum(axis=1, min_count=1)
    out["missing"] = [",".join(c[:-3] for c in comps if not present.at[i, c]) for i in pt.index]
    out["residual_ms"] = pt["gpu_total_ms"] - out["components_ms"]
    out["rel_residual"] = out["residual_ms"] / pt["gpu_total_ms"]
    out["held_residual_ms"] = pt["mutex_held_ms"] - pt["gpu_total_ms"]
    out["start_fn_residual_ms"] = pt["total_start_fn_ms"] - (pt["pre_lock_cpu_ms"] + pt["mutex_wait_ms"] + pt["mutex_held_ms"])
    return out


def mutex_stats(events: pd.DataFrame, by: Sequence[str] = ("run", "worker")) -> pd.DataFrame:
    """Per group: ``<phase>_count/_total_ms/_mean_ms/_max_ms`` of mutex_wait, barrier_wait, mutex_held, and
    ``barrier_in_held`` (barrier wait inside the lock / mutex_held total)."""
    _check(events)
    phases = ("mutex_wait", "barrier_wait", "mutex_held")
    df = events[events["phase"].isin(phases)].assign(dur_ms=lambda d: duration_ms(d))
    if not len(df):
        return pd.DataFrame(columns=[*by])
    agg = df.groupby([*by, "phase"], dropna=False)["dur_ms"].agg(["count", "sum", "mean", "max"]).rename(columns={"sum": "total_ms", "mean": "mean_ms", "max": "max_ms"})
    wide = agg.unstack("phase")
    wide.columns = [f"{p}_{m}" for m, p in wide.columns]
    for p in phases:
        for m in ("count", "total_ms", "mean_ms", "max_ms"):
            c = f"{p}_{m}"
            if c not in wide.columns:
                wide[c] = 0.0 if m in ("count", "total_ms") else np.nan
            elif m in ("count", "total_ms"):
                wide[c] = wide[c].fillna(0.0)
    wide = wide[[f"{p}_{m}" for p in phases for m in ("count", "total_ms", "mean_ms", "max_ms")]]
    held = wide["mutex_held_total_ms"].replace(0.0, np.nan)
    # only the part of each barrier_wait that lies inside a mutex_held interval of the same partition
    # and worker counts (narrow scope waits outside the lock)
    keys = [k for k in ("run", "worker", "partition") if k in df.columns]
    b = df[df["phase"] == "barrier_wait"]
    h = df[df["phase"] == "mutex_held"][[*keys, "start_ns", "end_ns"]]
    m = b.reset_index(drop=True).merge(h, on=keys, suffixes=("", "_h"))
    ov = (np.minimum(m["end_ns"], m["end_ns_h"]) - np.maximum(m["start_ns"], m["start_ns_h"])).clip(lower=0) / 1e6
    inside = m.assign(ov=ov).groupby(list(by), dropna=False)["ov"].sum() if len(m) else pd.Series(dtype=float)
    inside = inside.reindex(wide.index).fillna(0.0) if len(inside) else pd.Series(0.0, index=wide.index)
    wide["barrier_in_held"] = inside.to_numpy() / held.to_numpy()
    out = wide.reset_index()
    out.attrs["statistic"] = keynumbers.MEAN_PER_EVENT  # its *_mean_ms, for the representative runs the report passes
    return out


#: The three utilizations, in the order the report shows them: column name → (label, definition).
#: All three use the run's wall span as their window (module doc).
UTILIZATIONS: dict[str, tuple[str, str]] = {
    "compute_util": ("compute utilization", "GPU kernels only (NTT, H MSM, batch_add, tail_msm), H2D copies left out, over the run's wall span"),
    "kernel_util": ("kernel utilization (upstream)", "upstream's 'actual kernel util': ntt_msm_h + batch_add + tail_msm, H2D copies counted, over the run's wall span"),
    "timeline_util": ("TIMELINE utilization (upstream)", "union of GPU_START→GPU_END (prove) intervals, waits counted, over the run's wall span"),
}


def utilization(events: pd.DataFrame) -> pd.DataFrame:
    """Per run: ``compute_util``, ``kernel_util``, ``timeline_util`` (NaN without GPU phases), ``partitions_per_min``,
    ``partitions``, ``wall_ms``."""
    _check(events)
    tp = throughput(events)
    out = pd.DataFrame({
        "compute_util": compute_utilization(events)["utilization"],
        "kernel_util": kernel_utilization(events)["utilization"],
        "timeline_util": timeline_utilization(events)["utilization"],
    }).reindex(tp.index)
    has_gpu = events[events["phase"].isin(GPU_PHASES)].groupby("run", dropna=False).size()
    none = ~out.index.isin(has_gpu.index)
    out.loc[none, ["compute_util", "kernel_util"]] = np.nan
    if "prove" not in set(events["phase"].dropna()):
        out["timeline_util"] = out["timeline_util"].where(~none)
    out["partitions_per_min"] = tp["partitions_per_min"]
    out["partitions"] = tp["partitions"]
    out["wall_ms"] = tp["wall_ms"]
    return out


def utilization_per_gpu(events: pd.DataFrame) -> pd.DataFrame:
    """:func:`utilization` per (run, gpu) over the run's wall span; the GPUs' throughputs add up to the run's."""
    _check(events)
    wall = wall_span(events)
    cols = ["compute_util", "kernel_util", "timeline_util", "partitions_per_min", "partitions", "wall_ms"]
    key = _gpu_key(events)
    parts = []
    for g in sorted(int(x) for x in key[events["phase"].isin(list(GPU_PHASES) + ["prove"])].unique() if x >= 0):
        sub = events[(key == g) | (key < 0)]
        u = utilization(sub)
        full = wall.loc[u.index, "wall_ms"]
        scale = (u["wall_ms"] / full).where(full > 0)
        for c in ("compute_util", "kernel_util", "timeline_util", "partitions_per_min"):
            u[c] = u[c] * scale
        u["wall_ms"] = full
        u["gpu"] = g
        parts.append(u.reset_index().set_index(["run", "gpu"])[cols])
    if not parts:
        return pd.DataFrame(columns=cols, index=pd.MultiIndex.from_arrays([[], []], names=["run", "gpu"]))
    return pd.concat(parts).sort_index()


#: Categories of :func:`critical_path`, in the order along a GPU's time: they do not overlap and
#: add up to the wall time (per partition: 60 000 / partitions_per_min ms per GPU).
GPU_PATH: dict[str, str] = {
    "lock_free": "no worker holds the GPU (waiting for a partition, ramp-up, tail)",
    "h2d": "exposed H2D of a, b, c (copy time no kernel hid)",
    "ntt": "the rest of ntt_msm_h: the NTTs, the copy time they hid, host work inside it (e.g. cudaHostRegister)",
    "h_msm": "H MSM",
    "barrier_wait": "barrier wait with the lock held (GPU idle until prep_msm is done)",
    "batch_add": "batch additions",
    "tail_msm": "tail MSMs",
    "lock_other": "lock held, none of the above (thread spawn/join, syncs)",
}


def _overlap_ms(a: pd.DataFrame, b: pd.DataFrame, keys: list[str]) -> float:
    """Σ over rows of ``a`` of their overlap with the rows of ``b`` that share ``keys``, ms."""
    if not len(a) or not len(b):
        return 0.0
    m = a[[*keys, "start_ns", "end_ns"]].reset_index(drop=True).merge(b[[*keys, "start_ns", "end_ns"]], on=keys, suffixes=("", "_b"))
    ov = (np.minimum(m["end_ns"], m["end_ns_b"]) - np.maximum(m["start_ns"], m["start_ns_b"])).clip(lower=0)
    return float(ov.sum()) / 1e6


def critical_path(events: pd.DataFrame) -> pd.DataFrame:
    """Per run, ms per partition in categories that never overlap (:data:`GPU_PATH`): the mutex-held time split into
    h2d, ntt, h_msm, barrier_wait, batch_add, tail_msm, lock_other; and lock_free. Also ``partitions``,
    ``ms_per_partition`` (wall × n_gpus / partitions), ``wall_ms``."""
    _check(events)
    wall = wall_span(events)
    tp = throughput(events)
    ev = events.reset_index(drop=True).assign(dur_ms=lambda d: duration_ms(d), _g=lambda d: _gpu_key(d))
    inside = _h2d_inside_mask(ev)
    rows = []
    for run in wall.index:
        r = ev[ev["run"] == run] if not pd.isna(run) else ev[ev["run"].isna()]
        acc = dict.fromkeys(GPU_PATH, 0.0)
        gpus = r.loc[r["phase"].isin(GPU_PHASES), "_g"].unique().tolist() or [-1]
        for g in gpus:
            rg = r[r["_g"] == g]
            held = rg[rg["phase"] == "mutex_held"]
            if not len(held):
                held = rg[rg["phase"].isin((*GPU_PHASES, "barrier_wait"))]
            held_ms = union_ms(held["start_ns"].to_numpy(), held["end_ns"].to_numpy())
            h = rg[inside[rg.index]]
            h2d = float(_exposed_or(h, _copy_ms(h)).sum()) if len(h) else 0.0
            tot = rg.groupby("phase")["dur_ms"].sum()
            keys = [k for k in ("worker", "partition") if k in rg.columns]
            bw = rg[rg["phase"] == "barrier_wait"]
            barrier = _overlap_ms(bw, rg[rg["phase"] == "mutex_held"], keys) if (rg["phase"] == "mutex_held").any() else float(bw["dur_ms"].sum())
            h_msm = float(tot.get("h_msm", 0.0))
            ntt = max(0.0, float(tot.get("ntt_msm_h", 0.0)) - h2d - h_msm)
            parts = {"h2d": h2d, "ntt": ntt, "h_msm": h_msm, "barrier_wait": barrier,
                     "batch_add": float(tot.get("batch_add", 0.0)), "tail_msm": float(tot.get("tail_msm", 0.0))}
            parts["lock_other"] = max(0.0, held_ms - sum(parts.values()))
            parts["lock_free"] = max(0.0, float(wall.at[run, "wall_ms"]) - held_ms)
            for k, v in parts.items():
                acc[k] += v
        n = int(tp.at[run, "partitions"]) if run in tp.index else 0
        row = {k: (v / n if n else float("nan")) for k, v in acc.items()}
        row.update(run=run, partitions=n, wall_ms=float(wall.at[run, "wall_ms"]),
                   ms_per_partition=float(wall.at[run, "wall_ms"]) * len(gpus) / n if n else float("nan"))
        rows.append(row)
    cols = [*GPU_PATH, "partitions", "ms_per_partition", "wall_ms"]
    if not rows:
        return pd.DataFrame(columns=cols, index=pd.Index([], name="run"))
    out = pd.DataFrame(rows).set_index("run")[cols]
    out.attrs["statistic"] = keynumbers.MEAN_PER_PARTITION  # the report shows it for representative runs
    return out


#: The categories of :data:`GPU_PATH` in which the GPU runs kernels.
KERNEL_PATH: tuple[str, ...] = ("ntt", "h_msm", "batch_add", "tail_msm")


def kernel_ms(path: pd.DataFrame) -> pd.Series:
    """GPU kernel ms per partition of each run: Σ of the :data:`KERNEL_PATH` columns. Raises ValueError: a column missing."""
    missing = set(KERNEL_PATH) - set(path.columns)
    if missing:
        raise ValueError(f"critical-path table lacks columns {sorted(missing)}")
    return path[list(KERNEL_PATH)].astype(float).sum(axis=1).rename("kernel_ms")


def ntt_msm_h_split(events: pd.DataFrame) -> pd.DataFrame:
    """ntt_msm_h per partition split into exposed ``h2d``, ``ntt``, ``h_msm`` (ms means), with ``ntt_msm_h``, ``partitions``."""
    _check(events)
    cp = critical_path(events)
    rows = {}
    for run, grp in events.groupby("run", dropna=False, sort=True):
        n = grp.loc[grp["phase"] == "ntt_msm_h", "partition"].dropna().nunique()
        k = (cp.at[run, "partitions"] / n) if n else float("nan")
        rows[run] = {c: cp.at[run, c] * k for c in ("h2d", "ntt", "h_msm")}
        rows[run]["partitions"] = n
    out = pd.DataFrame.from_dict(rows, orient="index")
    out["ntt_msm_h"] = out[["h2d", "ntt", "h_msm"]].sum(axis=1)
    out.index.name = "run"
    out = out[["h2d", "ntt", "h_msm", "ntt_msm_h", "partitions"]]
    out.attrs["statistic"] = keynumbers.MEAN_PER_PARTITION
    return out


def barrier_race(events: pd.DataFrame) -> pd.DataFrame:
    """Per partition: ``reach_barrier_ms`` (pre_lock + mutex_wait + ntt_msm_h) against ``prep_msm_ms``; ``slack_ms`` > 0: no wait."""
    _check(events)
    ev = events[events["partition"].notna()].assign(dur_ms=lambda d: duration_ms(d))
    first = ev[ev["phase"] == "mutex_wait"].sort_values("start_ns").groupby("partition")["dur_ms"].first()
    tot = ev.pivot_table(index="partition", columns="phase", values="dur_ms", aggfunc="sum")
    out = pd.DataFrame(index=tot.index)
    for p in ("prep_msm", "pre_lock", "ntt_msm_h", "barrier_wait"):
        out[f"{p}_ms"] = tot[p].fillna(0.0) if p in tot.columns else 0.0
    out["mutex_wait_ms"] = first.reindex(out.index).fillna(0.0)
    out["reach_barrier_ms"] = out["pre_lock_ms"] + out["mutex_wait_ms"] + out["ntt_msm_h_ms"]
    out["slack_ms"] = out["reach_barrier_ms"] - out["prep_msm_ms"]
    out = out.reset_index()
    out["partition"] = out["partition"].astype("int64")
    return out[["partition", "prep_msm_ms", "pre_lock_ms", "mutex_wait_ms", "ntt_msm_h_ms", "reach_barrier_ms", "slack_ms", "barrier_wait_ms"]]
