"""Pairing of TIMELINE start/end records: :func:`pair_timeline`."""

from __future__ import annotations

from collections import OrderedDict, defaultdict

import pandas as pd

__all__ = ["pair_timeline", "column_values"]

_PAIRS = {"SYNTH_START": ("SYNTH_END", "synthesize"), "GPU_QUEUE": ("GPU_PICKUP", "gpu_queue"), "GPU_START": ("GPU_END", "prove")}
_ENDS = {v[0]: (k, v[1]) for k, v in _PAIRS.items()}


def column_values(tl: pd.DataFrame, name: str) -> list:
    if name not in tl.columns:
        return [None] * len(tl)
    col = tl[name]
    if name in ("worker", "partition"):
        return [None if v is pd.NA else int(v) for v in col.astype("Int64")]
    if name in ("gpu_ms", "synth_ms"):
        return pd.to_numeric(col, errors="coerce").astype("float64").tolist()
    return col.astype("string").fillna("").tolist()


def pair_timeline(tl: pd.DataFrame) -> tuple[list[tuple], list[dict], dict[str, int]]:
    """Pair TIMELINE starts and ends of one job and partition, first in first out, within one worker. Returns ``(pairs,
    GPU_START records in time order, counts)``: a pair is ``(phase, job, partition, start worker, end worker, start
    t_ms, end t_ms, gpu_ms, synth_ms)``; counts ``duplicate_starts``, ``unpaired_starts``, ``unpaired_ends``,
    ``cross_worker_ends``."""
    counts = {"duplicate_starts": 0, "unpaired_starts": 0, "unpaired_ends": 0, "cross_worker_ends": 0}
    pairs: list[tuple] = []
    starts: list[dict] = []
    if not len(tl):
        return pairs, starts, counts
    tl = tl.sort_values(["t_ms", "line"], kind="stable")
    cols = zip(tl["t_ms"].astype("float64").tolist(), *(column_values(tl, c) for c in ("event", "job", "partition", "worker", "gpu_ms", "synth_ms")), strict=True)
    # open starts per (start event, job, partition): start worker -> (order, t_ms), oldest first; at most one open start
    # per worker (a second is a duplicate), so every step is O(1) (a scan of the open starts was quadratic when many
    # workers had a start open under one key)
    open_: dict[tuple, OrderedDict[object, tuple[int, float]]] = defaultdict(OrderedDict)
    for seq, (t, ev, job, part, w, gms, sms) in enumerate(cols):
        if ev in _PAIRS:
            q = open_[(ev, job, part)]
            if w in q:
                counts["duplicate_starts"] += 1
                continue
            q[w] = (seq, t)
            if ev == "GPU_START":
                starts.append({"t_ms": t, "job": job, "partition": part, "worker": w})
        elif ev in _ENDS:
            sev, phase = _ENDS[ev]
            pending = open_.get((sev, job, part))
            if not pending:
                counts["unpaired_ends"] += 1
                continue
            if w is None:  # an end without a worker pairs with the oldest open start
                ws, (_, ts) = pending.popitem(last=False)
            else:  # the oldest open start of this worker or of none
                cands = [(pending[k][0], k) for k in (w, None) if k in pending]
                if not cands:
                    counts["unpaired_ends"] += 1
                    counts["cross_worker_ends"] += 1
                    continue
                ws = min(cands, key=lambda c: c[0])[1]
                ts = pending.pop(ws)[1]
            pairs.append((phase, job, part, ws, w, ts, t, gms, sms))
    counts["unpaired_starts"] = sum(len(q) for q in open_.values())
    return pairs, starts, counts

