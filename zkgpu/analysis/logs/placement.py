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
    """Event rows (:data:`_EVENT_FIELDS` tuples) of the paired TIMELINE records
    (:func:`zkgpu.analysis.logs.timeline.pair_timeline`) and the GPU_START rows in time order (each with ``_gpart``, its
    partition in the event table)."""
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


#: the partition-table columns :func:`_record_events` reads (besides the ``ntt_h_*`` sub-timers)
_DURATIONS = ("setup_to_split_ms", "split_vectors_ms", "pre_lock_cpu_ms", "mutex_wait_ms", "prep_msm_ms", "num_circuits", "b_g2_msm_ms",
              "ntt_msm_h_ms", "barrier_wait_ms", "batch_add_ms", "tail_msm_ms", "gpu_total_ms", "mutex_held_ms", "total_start_fn_ms",
              "async_dealloc_ms")


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
    """The intervals of every partition record (rule 2 of :func:`to_events`), a column at a time: a record's times are
    its anchor t0 plus offsets that depend on its own durations only, so the offsets are computed for all records at
    once and only the sequential anchors (after the previous record's lock release) one by one. Returns the columns
    of :data:`_EVENT_FIELDS` but ``source``, records in order and each record's phases in :data:`_PHASES` order;
    None without records.

    Raises:
        ValueError: an event would end past the int64 ns clock (named with ``run``).
    """
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
    """Event table (schema: :mod:`zkgpu.core.events`) from a parsed cuzk-format log.

    Placement rules (all times ns; ms values × 1e6, rounded):

    1. **TIMELINE** events are paired per (job, cuzk partition) first-in-first-out, and only
       within one worker when both name one (:func:`zkgpu.analysis.logs.timeline.pair_timeline`):
       ``SYNTH_START→SYNTH_END`` = ``synthesize``, ``GPU_QUEUE→GPU_PICKUP`` = ``gpu_queue``,
       ``GPU_START→GPU_END`` = ``prove``; start_ns/end_ns = the TIMELINE offsets (ms since engine start).
       ``worker`` from the end event (else the start event). ``partition`` = job_rank × stride + cuzk
       partition, where job_rank is the order in which jobs first appear and stride = 1 + the largest
       partition number in the log (so a single-job log keeps cuzk's partition numbers); the cuzk job
       id and partition go to ``detail`` (``job=…,partition=…``), and so do GPU_END's ``gpu_ms`` and
       SYNTH_END's ``synth_ms`` — GPU_END's gpu_ms is a wall time (prove_start → finish, §2.2), **not**
       CUDA-event time, so the ``gpu_ms`` column stays NaN. Unmatched starts/ends give no row
       (counted in :meth:`ParsedLog.summary`: ``unpaired_starts``, ``unpaired_ends``,
       ``cross_worker_ends``, ``duplicate_starts``).
    2. **CUZK_TIMING** records (:func:`partition_table`) are durations. Each record gets an anchor t0 =
       entry of the C++ start function:

       * *anchored* (``detail`` ``placement=timeline``): when the log has exactly as many GPU_START
         events as records, record k ↔ the k-th GPU_START in time order; t0 = its time, worker and
         partition from it;
       * *sequential* (``placement=sequential``): otherwise the per-GPU mutex is assumed handed straight
         from one record to the next: record 0 has t0 = the first GPU_START's time if the log has one
         (so both share the engine's time base), else 0; record k takes the lock at the previous
         record's lock release, i.e. t0 = release(k−1) − pre_lock_cpu − mutex_wait (never before the
         previous t0); worker <NA>, partition = record index.

       Within a record (absent lines are skipped, absent durations count as 0 for positions):
       ``pre_lock`` = [t0, t0+pre_lock_cpu]; ``mutex_wait`` follows; lock L = t0 + pre_lock_cpu +
       mutex_wait. ``split_vectors`` ends at t0 + setup_to_split. ``prep_msm`` starts at
       t0 + setup_to_split (the prep thread is spawned right after), ``b_g2_msm`` follows it.
       GPU chain from L end to end: ``ntt_msm_h``, ``barrier_wait``, ``batch_add``; ``tail_msm`` is
       right-aligned to end at L + gpu_total_ms when gpu_total is known (so unlogged phases — e.g. the
       seed's missing batch_add/barrier lines — leave a visible gap), else follows. ``mutex_held`` =
       [L, L+mutex_held]; lock release = its end (else the end of the chain). ``async_dealloc`` starts
       at max(release, end of b_g2_msm). ``gpu`` = gpu_tid on the GPU-chain phases (ntt_msm_h,
       barrier_wait, batch_add, tail_msm), <NA> elsewhere. ``gpu_ms`` NaN (host steady_clock times).
       ``CUZK_NTT_H`` sub-timers go into the ntt_msm_h row's ``detail`` (not separate intervals).
    3. GPU_TIMING / FIN_TIMING / pinned-pool lines carry no usable timestamps and give no rows
       (they stay in :class:`ParsedLog`).

    Returns: a DataFrame normalized by :func:`zkgpu.core.events.normalize_events`, sorted by start_ns.

    Raises:
        ValueError: the placed events would end past the int64 ns clock (durations that add up to centuries: a
            damaged log), named with ``run``.
    """
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

