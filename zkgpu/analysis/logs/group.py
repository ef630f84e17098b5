"""Grouping ``CUZK_TIMING`` lines (no partition id, no time) into partition records: :func:`partition_table`.

Each kind has a place in the C++ print order (split_vectors → pre_lock → ... → mutex_held → async_dealloc; split_vectors
→ prep_msm → barrier_wait; prep_msm → b_g2_msm). A line joins the oldest open record lacking its kind and any later
kind, else opens a record. Exact with one GPU worker; with two, CPU-side lines of two partitions in flight may swap."""

from __future__ import annotations

from collections import deque

import numpy as np
import pandas as pd

from zkgpu.analysis.logs.lines import field_column
from zkgpu.analysis.logs.parsed import ParsedLog

__all__ = ["partition_table", "PARTITION_COLUMNS", "GROUPED_KINDS", "Grouper"]

# Partial order of per-partition kinds (a → b: a printed before b within one partition).
_EDGES = {
    "split_vectors": ("pre_lock", "prep_msm"),
    "pre_lock": ("prestage_setup", "ntt_h", "ntt_msm_h"),
    "prestage_setup": ("ntt_h", "ntt_msm_h"),
    "ntt_h": ("ntt_msm_h",),
    "ntt_msm_h": ("barrier_wait",),
    "prep_msm": ("barrier_wait", "b_g2_msm"),
    "barrier_wait": ("batch_add",),
    "batch_add": ("tail_msm",),
    "tail_msm": ("mutex_held",),
    "mutex_held": ("async_dealloc", "epilogue"),
    "b_g2_msm": ("async_dealloc", "epilogue"),
    "async_dealloc": (),
    "epilogue": (),
}


def _successors() -> dict[str, frozenset[str]]:
    out: dict[str, frozenset[str]] = {}
    for k in _EDGES:
        seen: set[str] = set()
        stack = list(_EDGES[k])
        while stack:
            s = stack.pop()
            if s not in seen:
                seen.add(s)
                stack.extend(_EDGES.get(s, ()))
        out[k] = frozenset(seen)
    return out


_AFTER = _successors()
GROUPED_KINDS = frozenset(_EDGES)

#: Columns of :func:`partition_table` (the first 11 are the per-partition C++ timers).
PARTITION_COLUMNS: tuple[str, ...] = (
    "prep_msm_ms",
    "b_g2_msm_ms",
    "pre_lock_cpu_ms",
    "mutex_wait_ms",
    "ntt_msm_h_ms",
    "barrier_wait_ms",
    "batch_add_ms",
    "tail_msm_ms",
    "gpu_total_ms",
    "mutex_held_ms",
    "total_start_fn_ms",
)
_EXTRA_PARTITION_COLUMNS = (
    "split_vectors_ms",
    "setup_to_split_ms",
    "async_dealloc_ms",
    "epilogue_ms",
    "num_circuits",
    "ntt_h_d_b_alloc_ms",
    "ntt_h_ntt_kernels_ms",
    "ntt_h_coset_intt_sync_ms",
    "ntt_h_msm_init_ms",
    "ntt_h_msm_invoke_ms",
    "ntt_h_msm_dtor_ms",
    "ntt_h_total_ms",
)


class Grouper:
    """Online grouping of CUZK_TIMING / CUZK_NTT_H rows into records in linear time (one queue of candidates per kind)."""

    __slots__ = ("records", "queues")

    def __init__(self) -> None:
        self.records: list[dict] = []
        self.queues: dict[str, deque] = {k: deque() for k in _AFTER}

    def add(self, kind: str, row: dict, line: int) -> None:
        q = self.queues[kind]
        after = _AFTER[kind]
        target = None
        while q:
            kinds = q[0]["_kinds"]
            if kind in kinds or not kinds.isdisjoint(after):
                q.popleft()  # ineligible for this kind from now on
                continue
            target = q[0]
            break
        if target is None:
            target = {"_kinds": set(), "first_line": line, "last_line": line, "truncated": False}
            self.records.append(target)
            for qq in self.queues.values():
                qq.append(target)
        target["_kinds"].add(kind)
        if line > target["last_line"]:
            target["last_line"] = line
        if row.get("truncated"):
            target["truncated"] = True
        ntt = kind == "ntt_h"
        for k, v in row.items():
            if k in ("line", "kind", "text", "truncated") or v is None or v is pd.NA or (isinstance(v, float) and v != v):
                continue
            if ntt:
                k = "ntt_h_" + k
            if k == "gpu_tid":
                target.setdefault("gpu_tid", v)
                continue
            target[k] = v


def _group_records(parsed: ParsedLog) -> list[dict]:
    """Group the per-partition rows of ``parsed`` (already grouped while parsing, unless the
    ParsedLog was built by hand)."""
    if parsed._records is not None:
        return parsed._records
    items: list[tuple[int, int, str, dict]] = []
    t = parsed.timing
    if len(t):
        sub = t[t["kind"].isin(GROUPED_KINDS)]
        for pos, r in zip(sub.index, sub.to_dict("records"), strict=True):
            items.append((int(r["line"]), int(pos), r["kind"], r))
    nh = parsed.ntt_h
    if len(nh):
        for pos, r in enumerate(nh.to_dict("records")):
            items.append((int(r["line"]), 10**12 + pos, "ntt_h", r))
    items.sort(key=lambda x: (x[0], x[1]))
    g = Grouper()
    for line, _, kind, r in items:
        g.add(kind, r, line)
    return g.records


def partition_table(parsed: ParsedLog) -> pd.DataFrame:
    """One row per partition record: ``record``, :data:`PARTITION_COLUMNS` and other ``*_ms`` (float ms, NaN if absent),
    ``ntt_h_<name>_ms``, ``gpu_tid`` (Int64), ``first_line``, ``last_line``, ``truncated``, other fields."""
    if parsed._partitions is not None:  # computed once per ParsedLog (to_events needs it too)
        return parsed._partitions.copy()
    recs = _group_records(parsed)
    rows = []
    for i, r in enumerate(recs):
        r = {k: v for k, v in r.items() if k != "_kinds"}
        r["record"] = i
        rows.append(r)
    lead = ["record", *PARTITION_COLUMNS, *_EXTRA_PARTITION_COLUMNS, "gpu_tid", "first_line", "last_line", "truncated"]
    df = pd.DataFrame(rows)
    for c in lead:
        if c not in df.columns:
            df[c] = np.nan
    others = [c for c in df.columns if c not in lead]
    df = df[lead + others]
    for c in (*PARTITION_COLUMNS, *_EXTRA_PARTITION_COLUMNS):
        df[c] = pd.to_numeric(df[c], errors="coerce").astype("float64")
    for c in others:  # any other field: one type per column (numbers, else text)
        df[c] = field_column(df[c])
    df["record"] = df["record"].astype("int64")
    tid = pd.to_numeric(df["gpu_tid"], errors="coerce").astype("float64")
    df["gpu_tid"] = tid.where(tid == np.floor(tid)).astype("Int64")
    df["first_line"] = pd.to_numeric(df["first_line"], errors="coerce").astype("Int64")
    df["last_line"] = pd.to_numeric(df["last_line"], errors="coerce").astype("Int64")
    df["truncated"] = df["truncated"].fillna(False).astype(bool)
    parsed._partitions = df.reset_index(drop=True)
    return parsed._partitions.copy()

