"""Placing the durations of a parsed cuzk-format log on a time axis: the event table
(:func:`to_events`; its docstring gives the exact rules)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from zkgpu.analysis.logs.group import partition_table
from zkgpu.analysis.logs.lines import MAX_MS
from zkgpu.analysis.logs.parsed import ParsedLog
from zkgpu.analysis.logs.timeline import column_values
from zkgpu.core.events import normalize_events

__all__ = ["to_events"]

_MAX_NS = int(np.iinfo(np.int64).max)  # the event table's times are int64 ns


def _ns(ms: float) -> int:
    return round(ms * 1e6)  # ms: a float (round of a float is an int, half to even)


def _timeline_events(parsed: ParsedLog, run: str, source: str) -> tuple[list[tuple], list[dict]]:
    """Event rows of the paired TIMELINE records, and the GPU_START rows in time order (with ``_gpart``)."""
    tl = parsed.timeline
    pairs, starts, _ = parsed._paired()
    rows: list[tuple] = []
    if not len(tl):
        return rows, starts
    parts = [int(p) for p in tl["partition"].dropna()] if "partition" in tl else []
    stride = (max(parts) + 1) if parts else 1
    job_rank: dict[str, int] = {}
    for j in column_values(tl.sort_values(["t_ms", "line"], kind="stable"), "job"):
        job_rank.setdefault(j, len(job_rank))

    def gpart(job: str, p: int | None) -> Any:  # an int, or pd.NA
        return pd.NA if p is None else job_rank[job] * stride + p

    for phase, job, part, ws, we, ts, te, gms, sms in pairs:
        w = we if we is not None else ws
        detail = [f"job={job}"]
        if part is not None:
            detail.append(f"partition={part}")
        for k, v in (("gpu_ms", gms), ("synth_ms", sms)):
            if v == v and 0.0 <= v <= MAX_MS:
                detail.append(f"{k}={v:g}")
        rows.append((run, source, pd.NA if w is None else w, pd.NA, gpart(job, part), phase, _ns(ts), _ns(te), ",".join(detail)))
    for s in starts:
        s["_gpart"] = gpart(s["job"], s["partition"])
    return rows, starts


#: the fields of an event row as :func:`to_events` builds it
_EVENT_FIELDS = ("run", "source", "worker", "gpu", "partition", "phase", "start_ns", "end_ns", "detail")

#: the phases of one record in the order :func:`to_events` lists them before its sort by time (ties keep this order),
#: each with the partition-table column of its duration
_PHASES = (("split_vectors", "split_vectors_ms"), ("pre_lock", "pre_lock_cpu_ms"), ("mutex_wait", "mutex_wait_ms"),
           ("prep_msm", "prep_msm_ms"), ("b_g2_msm", "b_g2_msm_ms"), ("ntt_msm_h", "ntt_msm_h_ms"), ("barrier_wait", "barrier_wait_ms"),
           ("batch_add", "batch_add_ms"), ("tail_msm", "tail_msm_ms"), ("mutex_held", "mutex_held_ms"), ("async_dealloc", "async_dealloc_ms"))
_ON_GPU = frozenset({"ntt_msm_h", "barrier_wait", "batch_add", "tail_msm"})


def _durations(pt: pd.DataFrame, col: str) -> np.ndarray:
    """A duration column as float ms for event placement: NaN (= absent) when missing, unreadable, non-finite,
    negative or above :data:`MAX_MS`, so one corrupt value cannot break :func:`to_events`."""
    if col not in pt.columns:
        return np.full(len(pt), np.nan)
    x = pd.to_numeric(pt[col], errors="coerce").astype("float64").to_numpy()
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(x) & (x >= 0.0) & (x <= MAX_MS), x, np.nan)


def _g(x: np.ndarray) -> list[str]:
    """``f"{v:g}"`` of each value ('' for NaN)."""
    return ["" if v != v else f"{v:g}" for v in x.tolist()]


def _partition_events(pt: pd.DataFrame, starts: list[dict], anchored: bool, base: int, run: str) -> dict[str, list] | None:
    """Intervals of every partition record (rule 2 of :func:`to_events`) as columns; None without records. Raises
    ValueError: an event would end past the int64 ns clock."""
    n = len(pt)
    if not n:
        return None
    cols_ms = {c for _, c in _PHASES} | {"setup_to_split_ms", "num_circuits", "gpu_total_ms", "total_start_fn_ms"}
    d = {c: _durations(pt, c) for c in cols_ms}
    has = {c: ~np.isnan(v) for c, v in d.items()}
    ns = {c: np.rint(np.where(has[c], v, 0.0) * 1e6).astype(np.int64) for c, v in d.items()}  # round(ms * 1e6): half to even
    split_end = ns["setup_to_split_ms"]
    lock = ns["pre_lock_cpu_ms"] + ns["mutex_wait_ms"]
    prep_end = split_end + ns["prep_msm_ms"]
    bg2_end = prep_end + ns["b_g2_msm_ms"]
    off = {"split_vectors": split_end - ns["split_vectors_ms"], "pre_lock": np.zeros(n, np.int64), "mutex_wait": ns["pre_lock_cpu_ms"],
           "prep_msm": split_end, "b_g2_msm": prep_end}
    cur = lock
    for phase in ("ntt_msm_h", "barrier_wait", "batch_add"):  # the GPU chain from the lock, end to end
        off[phase] = cur
        cur = cur + ns[phase + "_ms"]
    tail, total = has["tail_msm_ms"], has["gpu_total_ms"]
    t_start = np.where(total, np.maximum(cur, lock + ns["gpu_total_ms"] - ns["tail_msm_ms"]), cur)  # tail right-aligned
    off["tail_msm"] = t_start
    cur = np.where(tail, t_start + ns["tail_msm_ms"], np.where(total, np.maximum(cur, lock + ns["gpu_total_ms"]), cur))
    off["mutex_held"] = lock
    release = np.where(has["mutex_held_ms"], lock + ns["mutex_held_ms"], cur)
    off["async_dealloc"] = np.maximum(release, bg2_end)
    last_end = np.zeros(n, np.int64)  # the latest end of a record's intervals, after its t0
    for phase, c in _PHASES:
        last_end = np.where(has[c], np.maximum(last_end, off[phase] + ns[c]), last_end)
    # anchors as Python ints: a damaged log's sequential clock may run past int64, which is reported, not wrapped
    if anchored:
        t0 = [round(st["t_ms"] * 1e6) for st in starts]
    else:
        lead, rel = lock.tolist(), release.tolist()
        t0 = [base]
        for k in range(1, n):
            t0.append(max(t0[-1], t0[-1] + rel[k - 1] - lead[k]))
    if max(t + e for t, e in zip(t0, last_end.tolist(), strict=True)) > _MAX_NS:
        raise ValueError(f"the placed events of {run!r} run past {_MAX_NS} ns (292 years of int64 ns): the log's durations "
                         "add up beyond any real run (damaged values); its partition table is still readable")
    t0a = np.array(t0, dtype=np.int64)
    gpu = [pd.NA if v is None or v is pd.NA else int(v) for v in pt["gpu_tid"].astype(object).tolist()]
    if anchored:
        worker: list[Any] = []
        for st in starts:
            w = st.get("worker")
            worker.append(pd.NA if w is None or w is pd.NA or (isinstance(w, float) and w != w) else int(w))
        part: list[Any] = [st["_gpart"] for st in starts]
    else:
        worker, part = [pd.NA] * n, list(range(n))
    place = "timeline" if anchored else "sequential"
    base_detail = [f"placement={place},record={r}" for r in pt["record"].tolist()]
    ntt_vals = [(c, _g(_durations(pt, c))) for c in pt.columns if str(c).startswith("ntt_h_")]
    extra: dict[str, list[str]] = {
        "b_g2_msm": [f"num_circuits={v}" if v else "" for v in _g(d["num_circuits"])],
        "ntt_msm_h": [",".join(f"{c}={vals[i]}" for c, vals in ntt_vals if vals[i]) for i in range(n)],
        "tail_msm": [f"gpu_total_ms={v}" if v else "" for v in _g(d["gpu_total_ms"])],
        "mutex_held": [f"total_start_fn_ms={v}" if v else "" for v in _g(d["total_start_fn_ms"])]}
    # rows in record order, a record's phases in _PHASES order (the present ones)
    ri = np.concatenate([np.flatnonzero(has[c]) for _, c in _PHASES])
    pj = np.concatenate([np.full(int(has[c].sum()), j) for j, (_, c) in enumerate(_PHASES)])
    order = np.lexsort((pj, ri))
    ri, pj = ri[order], pj[order]
    start_ns = np.empty(len(ri), np.int64)
    end_ns = np.empty(len(ri), np.int64)
    for j, (phase, c) in enumerate(_PHASES):
        m = pj == j
        r = ri[m]
        start_ns[m] = t0a[r] + off[phase][r]
        end_ns[m] = start_ns[m] + ns[c][r]
    ril, pjl = ri.tolist(), pj.tolist()
    names = [_PHASES[j][0] for j in pjl]
    detail = []
    for i, phase in zip(ril, names, strict=True):
        e = extra[phase][i] if phase in extra else ""
        detail.append(base_detail[i] + ("," + e if e else ""))
    return {"run": [run] * len(ril), "worker": [worker[i] for i in ril], "partition": [part[i] for i in ril],
            "gpu": [gpu[i] if phase in _ON_GPU else pd.NA for i, phase in zip(ril, names, strict=True)], "phase": names,
            "start_ns": start_ns.tolist(), "end_ns": end_ns.tolist(), "detail": detail}


def to_events(parsed: ParsedLog, run: str = "cuzk-log", source: str = "cuzk-log") -> pd.DataFrame:
    """Event table (:mod:`zkgpu.core.events`) from a parsed cuzk-format log, sorted by start_ns.

    1. TIMELINE start/end pairs (:func:`~zkgpu.analysis.logs.timeline.pair_timeline`) give ``synthesize``,
       ``gpu_queue``, ``prove`` at their offsets; partition = job rank × stride + cuzk partition; GPU_END's
       ``gpu_ms`` (a wall time) goes to ``detail``.
    2. CUZK_TIMING records (durations) are anchored at t0: the k-th GPU_START when the counts match
       (``placement=timeline``), else sequentially at the previous record's lock release
       (``placement=sequential``). Within a record: pre_lock, mutex_wait, then the GPU chain ntt_msm_h,
       barrier_wait, batch_add, tail_msm (right-aligned to gpu_total), mutex_held; prep_msm and b_g2_msm from
       setup_to_split; async_dealloc after both. CUZK_NTT_H sub-timers go to the ntt_msm_h row's detail.
    3. GPU_TIMING / FIN_TIMING / pool lines give no rows.

    Raises:
        ValueError: events would end past the int64 ns clock (names ``run``)."""
    rows, starts = _timeline_events(parsed, run, source)
    pt = partition_table(parsed)
    anchored = len(pt) > 0 and len(starts) == len(pt)
    base = _ns(starts[0]["t_ms"]) if starts else 0  # sequential clock starts at the first GPU_START
    cols = _partition_events(pt, starts, anchored, base, run)
    if rows and max(r[7] for r in rows) > _MAX_NS:
        raise ValueError(f"the placed events of {run!r} run past {_MAX_NS} ns (292 years of int64 ns): the log's durations "
                         "add up beyond any real run (damaged values); its partition table is still readable")
    df = pd.DataFrame.from_records(rows, columns=list(_EVENT_FIELDS))
    del rows
    if cols is not None:
        cols["source"] = [source] * len(cols["run"])
        recs = pd.DataFrame(cols, columns=list(_EVENT_FIELDS))
        df = pd.concat([df, recs], ignore_index=True) if len(df) else recs
    out = normalize_events(df) if len(df) else normalize_events(pd.DataFrame({"start_ns": [], "end_ns": []}))
    return out.sort_values(["start_ns", "end_ns"], kind="stable").reset_index(drop=True)

