"""Event tables as Chrome / Perfetto trace-event JSON (``zkgpu trace export``, ``zkgpu report``).

One complete event (``"ph": "X"``, ``ts``/``dur`` in µs on the run's clock) per row; one process per scenario and GPU
with threads per worker role, one for the host CPU; overlapping rows of a thread go to extra lanes."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from zkgpu import __version__
from zkgpu.analysis.metrics import detail_value
from zkgpu.analysis.replay import Recording, data_dir, find_recordings
from zkgpu.core.events import normalize_events

__all__ = ["chrome_trace", "write_chrome_trace", "open_run", "export_recording", "trace_file_name", "ExportError"]

_WORKER_THREADS: dict[str, tuple[int, str]] = {
    # phase -> (order within the worker's threads, thread-name suffix); other phases: (1, "")
    "prove": (0, " · prove"),  # GPU_START -> GPU_END spans the worker and the finalizer thread
    "prep_msm": (2, " · CPU prep"), "b_g2_msm": (2, " · CPU prep"),  # the prep thread beside the GPU work
    "finalize": (3, " · finalizer"), "tracker_lock": (3, " · finalizer"), "malloc_trim": (3, " · finalizer"),
    "gpu_queue": (4, " · queue"),  # partitions waiting for this worker
}

_CATEGORY = {
    "synthesize": "cpu", "prep_msm": "cpu", "b_g2_msm": "cpu", "split_vectors": "cpu", "pre_lock": "cpu",
    "finalize": "cpu", "malloc_trim": "cpu", "tracker_lock": "lock",
    "gpu_queue": "queue", "prove": "worker",
    "mutex_wait": "lock", "mutex_held": "lock", "barrier_wait": "lock",
    "ntt_msm_h": "gpu", "ntt": "gpu", "h_msm": "gpu", "batch_add": "gpu", "tail_msm": "gpu",
    "h2d": "h2d",
}


class ExportError(ValueError):
    """A run, a scenario or an output path that cannot be exported (the message names it)."""


def _int(v: Any) -> int | None:
    return None if v is None or pd.isna(v) else int(v)


def _args(row: Any, index: int, scenario: str) -> dict[str, Any]:
    dur_ns = int(row.end_ns) - int(row.start_ns)
    args: dict[str, Any] = {"row": index, "scenario": scenario, "ms": dur_ns / 1e6}
    for key in ("partition", "worker", "gpu"):
        v = _int(getattr(row, key))
        if v is not None:
            args[key] = v
    if not pd.isna(row.gpu_ms) and math.isfinite(float(row.gpu_ms)):
        args["gpu_ms"] = float(row.gpu_ms)
    nbytes = _int(row.bytes)
    if nbytes is not None:
        args["bytes"] = nbytes
        if row.phase == "h2d" and dur_ns > 0:
            args["GB/s"] = nbytes / dur_ns  # bytes per ns = GB/s
    if not pd.isna(row.detail) and str(row.detail):
        args["detail"] = str(row.detail)
    return args


def _track(row: Any, synth_worker: float) -> tuple[str, tuple[int, int], str]:
    """(process key, thread order, thread name) of one row; process key "gpu:<g>" or "host"."""
    gpu, worker, phase = _int(row.gpu), _int(row.worker), str(row.phase)
    if gpu is not None:
        if worker is None:
            return f"gpu:{gpu}", (1_000_000, 0), f"GPU {gpu} · {phase}"
        order, suffix = _WORKER_THREADS.get(phase, (1, ""))
        return f"gpu:{gpu}", (worker, order), f"worker {worker}{suffix}"
    if phase == "synthesize" and math.isfinite(synth_worker):
        return "host", (int(synth_worker), 0), f"synthesis {int(synth_worker)}"
    if worker is not None:
        return "host", (1_000 + worker, 0), f"worker {worker}"
    return "host", (1_000_000, 0), phase


def _lanes(intervals: list[tuple[int, int, int]]) -> dict[int, int]:
    """``{key: lane}`` for intervals ``(start, end, key)`` so that one lane's intervals nest or are disjoint (greedy)."""
    stacks: list[list[int]] = []
    out: dict[int, int] = {}
    for start, end, key in sorted(intervals, key=lambda t: (t[0], -t[1], t[2])):
        for lane, stack in enumerate(stacks):
            while stack and stack[-1] <= start:
                stack.pop()
            if not stack or end <= stack[-1]:
                stack.append(end)
                out[key] = lane
                break
        else:
            stacks.append([end])
            out[key] = len(stacks) - 1
    return out


def chrome_trace(
    tables: Mapping[str, pd.DataFrame] | pd.DataFrame,
    *,
    gpu_names: Mapping[int, str] | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The trace-event object ``{"traceEvents", "displayTimeUnit", "otherData"}`` of ``{scenario: events}`` (or one
    table). ``gpu_names``: ordinal → device name; ``metadata``: extra ``otherData``. Raises ValueError: a row ends
    before it starts."""
    if isinstance(tables, pd.DataFrame):
        ev = normalize_events(tables)
        runs = ev["run"].dropna().unique()
        tables = {str(runs[0]) if len(runs) == 1 else "events": ev}
    gpu_names = dict(gpu_names or {})
    events: list[dict[str, Any]] = []
    meta: list[dict[str, Any]] = []
    pid = 0
    for s_idx, (scenario, table) in enumerate(tables.items()):
        ev = normalize_events(table)
        synth = detail_value(ev, "synth_worker").to_numpy()
        rows = list(ev.itertuples(index=False))
        tracks = [_track(r, float(sw)) for r, sw in zip(rows, synth, strict=True)]
        proc_keys = sorted({t[0] for t in tracks}, key=lambda k: (k == "host", int(k[4:]) if k != "host" else 0))
        for p_idx, pkey in enumerate(proc_keys):
            pid += 1
            if pkey == "host":
                pname = f"{scenario} · host CPU"
            else:
                g = int(pkey[4:])
                pname = f"{scenario} · GPU {g}" + (f" ({gpu_names[g]})" if g in gpu_names else "")
            meta.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": pname}})
            meta.append({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0,
                         "args": {"sort_index": s_idx * 100 + p_idx}})
            mine = [i for i, t in enumerate(tracks) if t[0] == pkey]
            threads = sorted({tracks[i][1:] for i in mine})
            tid = 0
            for t_idx, (order, tname) in enumerate(threads):
                members = [i for i in mine if tracks[i][1:] == (order, tname)]
                lanes = _lanes([(int(rows[i].start_ns), int(rows[i].end_ns), i) for i in members])
                lane_tid: dict[int, int] = {}
                for lane in sorted(set(lanes.values())):
                    tid += 1
                    lane_tid[lane] = tid
                    name = tname if lane == 0 else f"{tname} ({lane + 1})"
                    meta.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}})
                    meta.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid,
                                 "args": {"sort_index": t_idx * 100 + lane}})
                for i in members:
                    r = rows[i]
                    start, end = int(r.start_ns), int(r.end_ns)
                    events.append({
                        "name": str(r.phase), "cat": _CATEGORY.get(str(r.phase), "other"), "ph": "X",
                        "ts": start / 1e3, "dur": (end - start) / 1e3, "pid": pid, "tid": lane_tid[lanes[i]],
                        "args": _args(r, i, scenario),
                    })
    events.sort(key=lambda e: (e["pid"], e["tid"], e["ts"], -e["dur"]))
    other = {"generator": f"zkgpu {__version__} (zkgpu.analysis.chrome_trace)",
             "clock": "ts/dur in µs since the run's epoch (host monotonic clock, start_ns / 1000)",
             "scenarios": list(tables)}
    other.update(metadata or {})
    return {"traceEvents": meta + events, "displayTimeUnit": "ms", "otherData": other}


def write_chrome_trace(trace: Mapping[str, Any], path: str | Path, *, overwrite: bool = False) -> Path:
    """Write ``trace`` as compact JSON (nothing left behind on failure). Raises FileExistsError: ``path`` exists and not
    ``overwrite``. ValueError: NaN or infinity in the trace."""
    p = Path(path)
    text = json.dumps(trace, separators=(",", ":"), allow_nan=False)
    if p.exists() and not overwrite:
        raise FileExistsError(f"{p} exists: zkgpu never overwrites a trace (choose another file)")
    p.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(p, "w" if overwrite else "x", encoding="utf-8") as f:
            f.write(text)
    except FileExistsError:
        raise
    except BaseException:
        p.unlink(missing_ok=True)
        raise
    return p


def trace_file_name(scenario: str, taken: set[str] | None = None) -> str:
    """A safe ``<slug>.json`` for an (untrusted) scenario name, at most 80 characters, ``-2``... while in ``taken``."""
    stem = re.sub(r"[^A-Za-z0-9_-]+", "-", str(scenario)).strip("-")[:80].strip("-") or "scenario"
    taken = set() if taken is None else taken
    name, i = f"{stem}.json", 1
    while name.lower() in taken:
        i += 1
        name = f"{stem}-{i}.json"
    taken.add(name.lower())
    return name


def open_run(run: str | Path, base: str | Path | None = None) -> Recording:
    """The recording ``run`` names (a folder, or a name under ``base``). Raises ExportError: none, or no scenarios."""
    root = Path(base) if base is not None else data_dir()
    cands = [Path(run), root / str(run)]
    path = next((c for c in cands if (c / "manifest.json").is_file()), None)
    if path is None:
        known = ", ".join(r.path.name for r in find_recordings(root)) or "none"
        raise ExportError(f"unknown run {str(run)!r}: no recording folder with manifest.json there or under {root} "
                          f"(recordings: {known})")
    try:
        rec = Recording.open(path)
    except ValueError as exc:  # unreadable manifest
        raise ExportError(f"run {str(run)!r}: unreadable manifest.json ({exc})") from exc
    if not [s for s in rec.scenarios if rec.scenario(s).get("events")]:
        raise ExportError(f"run {str(run)!r} ({path}) has no recorded scenario with an event table")
    return rec


def export_recording(
    rec: Recording, out: str | Path, scenarios: Iterable[str] | None = None, *, overwrite: bool = False
) -> tuple[Path, int]:
    """Write a recording's scenarios' trace to ``out``: ``(path, rows written)``. Raises ExportError: unknown scenario
    or one without events, ``out`` exists, or an unreadable events file."""
    recorded = [s for s in rec.scenarios if rec.scenario(s).get("events")]
    names = list(scenarios) if scenarios else recorded
    for s in names:
        if s not in recorded:
            raise ExportError(f"unknown scenario {s!r} in {rec.path.name}; recorded with events: {', '.join(recorded)}")
    out = Path(out)
    if out.exists() and not overwrite:
        raise ExportError(f"{out} exists: zkgpu trace export never overwrites a file (choose another --out)")
    try:
        tables = {s: rec.events(s) for s in names}
    except ValueError as exc:  # a truncated events file, a path outside the run folder
        raise ExportError(str(exc)) from exc
    gpus = {int(g) for t in tables.values() for g in t["gpu"].dropna().unique()}
    trace = chrome_trace(tables, gpu_names={g: rec.gpu for g in gpus} if rec.gpu else None,
                         metadata={"recording": rec.path.name, "recording_label": rec.label})
    try:
        write_chrome_trace(trace, out, overwrite=overwrite)
    except FileExistsError as exc:
        raise ExportError(str(exc)) from exc
    return out, sum(len(t) for t in tables.values())
