"""Placing the durations of a parsed cuzk-format log on a time axis: the event table
(:func:`to_events`; its docstring gives the exact rules)."""

from __future__ import annotations

import math
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


def _clean_records(pt: pd.DataFrame) -> list[dict]:
    """The partition table as one dict per record with what :func:`_record_events` reads: ``record``, ``gpu_tid``
    and every duration as a float ms for event placement: NaN (= absent) when missing, unreadable, non-finite,
    negative or above :data:`MAX_MS`, so one corrupt value cannot break :func:`to_events` (computed a column at a
    time); ``_ntt_h``: the ``ntt_h_*`` columns, in table order."""
    ntt_h = tuple(c for c in pt.columns if str(c).startswith("ntt_h_"))
    keys = [k for k in (*_DURATIONS, *ntt_h) if k in pt.columns]
    cols: list[list] = [pt["record"].tolist(), pt["gpu_tid"].astype(object).tolist()]
    for k in keys:
        x = pd.to_numeric(pt[k], errors="coerce").astype("float64").to_numpy()
        with np.errstate(invalid="ignore"):
            x = np.where(np.isfinite(x) & (x >= 0.0) & (x <= MAX_MS), x, np.nan)
        cols.append(x.tolist())
    missing = {k: float("nan") for k in _DURATIONS if k not in pt.columns}
    names = ["record", "gpu_tid", *keys]
    return [{**dict(zip(names, vals, strict=True)), **missing, "_ntt_h": ntt_h} for vals in zip(*cols, strict=True)]


#: the fields of an event row as :func:`to_events` builds it (tuples: a million events stay small)
_EVENT_FIELDS = ("run", "source", "worker", "gpu", "partition", "phase", "start_ns", "end_ns", "detail")


def _record_events(rec: dict, t0_ns: int, run: str, source: str, worker: Any, partition: Any, gpu: Any, placement: str) -> tuple[list[tuple], int]:
    """Intervals of one partition record anchored at t0 (entry of the start function).

    Returns (rows as :data:`_EVENT_FIELDS` tuples, lock release time in ns)."""

    g = rec.__getitem__  # every duration key, cleaned by _clean_records (NaN = absent)
    isnan = math.isnan
    rows: list[tuple] = []
    detail_base = f"placement={placement},record={rec['record']}"

    def add(phase: str, s: int, dur_ms: float, extra: str = "", on_gpu: bool = False) -> None:
        if isnan(dur_ms):
            return
        rows.append((run, source, worker, gpu if on_gpu else pd.NA, partition, phase, s, s + round(dur_ms * 1e6), detail_base + (("," + extra) if extra else "")))

    setup = g("setup_to_split_ms")
    t_split_end = t0_ns + (_ns(setup) if not isnan(setup) else 0)
    sv = g("split_vectors_ms")
    if not isnan(sv):
        add("split_vectors", t_split_end - _ns(sv), sv)
    pre = g("pre_lock_cpu_ms")
    mw = g("mutex_wait_ms")
    add("pre_lock", t0_ns, pre)
    lock = t0_ns + (_ns(pre) if not isnan(pre) else 0)
    add("mutex_wait", lock, mw)
    lock += _ns(mw) if not isnan(mw) else 0
    # prep_msm thread starts right after split_vectors; b_g2_msm follows it
    prep = g("prep_msm_ms")
    add("prep_msm", t_split_end, prep)
    prep_end = t_split_end + (_ns(prep) if not isnan(prep) else 0)
    nc = g("num_circuits")
    add("b_g2_msm", prep_end, g("b_g2_msm_ms"), f"num_circuits={nc:g}" if not isnan(nc) else "")
    bg2_end = prep_end + (_ns(g("b_g2_msm_ms")) if not isnan(g("b_g2_msm_ms")) else 0)
    # GPU chain from lock acquisition, end to end; tail right-aligned to lock + gpu_total
    cur = lock
    ntt_extra = ",".join(f"{k}={g(k):g}" for k in rec["_ntt_h"] if not isnan(g(k)))
    for phase, key, extra in (("ntt_msm_h", "ntt_msm_h_ms", ntt_extra), ("barrier_wait", "barrier_wait_ms", ""), ("batch_add", "batch_add_ms", "")):
        d = g(key)
        if not isnan(d):
            add(phase, cur, d, extra, on_gpu=True)
            cur += _ns(d)
    tail = g("tail_msm_ms")
    total = g("gpu_total_ms")
    if not isnan(tail):
        t_start = cur
        if not isnan(total):
            t_start = max(cur, lock + _ns(total) - _ns(tail))
        add("tail_msm", t_start, tail, f"gpu_total_ms={total:g}" if not isnan(total) else "", on_gpu=True)
        cur = t_start + _ns(tail)
    elif not isnan(total):
        cur = max(cur, lock + _ns(total))
    held = g("mutex_held_ms")
    tot_fn = g("total_start_fn_ms")
    add("mutex_held", lock, held, f"total_start_fn_ms={tot_fn:g}" if not isnan(tot_fn) else "")
    release = lock + _ns(held) if not isnan(held) else cur
    ad = g("async_dealloc_ms")
    add("async_dealloc", max(release, bg2_end), ad)
    return rows, release


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
    recs = _clean_records(pt)
    anchored = len(recs) > 0 and len(starts) == len(recs)
    base = _ns(starts[0]["t_ms"]) if starts else 0  # sequential clock starts at the first GPU_START
    prev_release = base
    prev_t0 = base
    for k, rec in enumerate(recs):
        gpu = rec.get("gpu_tid")
        gpu = pd.NA if gpu is None or gpu is pd.NA else int(gpu)
        if anchored:
            s = starts[k]
            t0 = _ns(s["t_ms"])
            w = s.get("worker")
            w = pd.NA if w is None or w is pd.NA or (isinstance(w, float) and np.isnan(w)) else int(w)
            r_rows, _ = _record_events(rec, t0, run, source, w, s["_gpart"], gpu, "timeline")
        else:
            pre, mw = rec["pre_lock_cpu_ms"], rec["mutex_wait_ms"]
            lead = (_ns(pre) if pre == pre else 0) + (_ns(mw) if mw == mw else 0)
            t0 = base if k == 0 else max(prev_t0, prev_release - lead)
            r_rows, prev_release = _record_events(rec, t0, run, source, pd.NA, k, gpu, "sequential")
            prev_t0 = t0
        rows.extend(r_rows)
    if rows and max(r[7] for r in rows) > _MAX_NS:
        raise ValueError(f"the placed events of {run!r} run past {_MAX_NS} ns (292 years of int64 ns): the log's durations "
                         "add up beyond any real run (damaged values); its partition table is still readable")
    df = pd.DataFrame.from_records(rows, columns=list(_EVENT_FIELDS))
    del rows
    out = normalize_events(df) if len(df) else normalize_events(pd.DataFrame({"start_ns": [], "end_ns": []}))
    return out.sort_values(["start_ns", "end_ns"], kind="stable").reset_index(drop=True)

