"""Parsers for cuzk-format logs (upstream's and ours) and nsys SQLite exports → pandas.

Formats (exact strings: /work/shared/reference/cuzk-pipeline.md §2; upstream sources:
filecoin-project/curio ``extern/supraseal-c2/cuda/groth16_cuda.cu``, ``groth16_ntt_h.cu``,
``extern/cuzk/cuzk-core/src/engine.rs``, ``pinned_pool.rs``):

* ``CUZK_TIMING: key=value ...`` (C++ stderr; integer ms), including ``gpu_tid=`` lines, the two
  message lines (``set pool release threshold to MAX on gpu N``, ``d_a_cache allocated N MiB on gpu N``)
  and historical lines (``epilogue_ms``, ``host_register=``, ``prestage_vram``, ``prestage_setup=``).
* ``CUZK_NTT_H: d_b_alloc=12ms ntt_kernels=...ms ... total=...ms`` (sub-timers of ntt_msm_h).
* ``TIMELINE,<ms since engine start>,<EVENT>,<job>,<detail>`` (detail is ``k=v`` joined by commas).
* ``GPU_TIMING <what> k=v ...`` / ``FIN_TIMING <what> k=v ...`` (Rust ``tracing`` lines, possibly with a
  timestamp / level / target prefix).
* pinned pool messages (``pinned pool: checkout (reuse)``, ``pinned pool: allocated new buffer``,
  ``pinned pool: checkin``, ``pinned pool: freed buffer (evictor)``,
  ``pinned pool checkout FAILED — falling back to unpinned``, ``attempting pinned memory synthesis``)
  and a few other engine messages (``partition synthesis complete`` ...), with their ``k=v`` fields.

Robustness: ANSI colour codes are stripped; any prefix before a record marker (timestamp, level,
target, or the fragment of another thread's line) is ignored (a timestamp / level found there is
kept); one physical line holding several markers is split at each marker (interleaved writers, or
grep output flattened onto one line); a record cut short (last line of a file without a trailing
newline, a line ending in ``...``/``…``, or a record immediately followed by another marker without
whitespace) is flagged ``truncated`` and its last, possibly cut, ``key=value`` token is dropped;
lines with no marker are counted in :attr:`ParsedLog.unknown_count` (first few kept as examples).

Grouping durations into partitions (:func:`partition_table`): ``CUZK_TIMING`` lines carry no
partition id or timestamp. Lines are grouped into *records* (one per call of
``generate_groth16_proofs_start_c``, i.e. one partition) by the order the C++ code prints them.
Each kind has a fixed place in a partial order (``a → b``: a's line is printed before b's within one
partition)::

    split_vectors → pre_lock → prestage_setup → ntt_h → ntt_msm_h → barrier_wait → batch_add
                  → tail_msm → mutex_held → async_dealloc, epilogue
    split_vectors → prep_msm → barrier_wait ;  prep_msm → b_g2_msm → async_dealloc, epilogue

A line of kind *k* joins the **oldest** open record that has no line of kind *k* yet and no line of a
kind that must come *after* k; otherwise it opens a new record. With one GPU worker this is exact.
With two workers per GPU the GPU-side chain (ntt_msm_h … mutex_held) is still exact (it runs under
the per-GPU mutex), but CPU-side lines of two partitions in flight (prep_msm, b_g2_msm,
split_vectors) are matched first-in-first-out and may be swapped between those two partitions.
Calls that use several GPUs (``gpu_tid`` > 0, non-partition mode) are not separated.

Placing durations on a time axis (:func:`to_events`) — see its docstring for the exact rules.
"""

from __future__ import annotations

import math
import re
import sqlite3
from collections import defaultdict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import click
import numpy as np
import pandas as pd

from .events import normalize_events

__all__ = [
    "ParsedLog",
    "parse_lines",
    "parse_file",
    "partition_table",
    "to_events",
    "read_nsys_sqlite",
    "parse_command",
    "PARTITION_COLUMNS",
    "MARKERS",
]

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07")
_TS = re.compile(r"\d{4}-\d\d-\d\d[T ][0-9:.,]+(?:Z|[+-]\d\d:?\d\d)?")
_LEVEL = re.compile(r"\b(TRACE|DEBUG|INFO|WARN|WARNING|ERROR)\b")
_KV = re.compile(r'^(\w+)=("(?:[^"\\]|\\.)*"|\S+)$')
_NUM = re.compile(r"^[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?$")
_NUM_MS = re.compile(r"^([-+]?\d+(?:\.\d+)?)ms$")

#: Message texts (after the marker) recognized besides the key=value records.
_POOL_EVENTS = {
    "pinned pool: checkout (reuse)": "checkout_reuse",
    "pinned pool: allocated new buffer": "allocate",
    "pinned pool: checkin": "checkin",
    "pinned pool: freed buffer (evictor)": "free_evictor",
    "pinned pool checkout FAILED": "checkout_failed",
    "attempting pinned memory synthesis": "attempt_pinned",
}
_MESSAGES = (
    "partition synthesis complete",
    "GPU prove complete (split)",
    "partition GPU prove complete",
    "Phase 7: all partitions complete",
    "pacer: status",
    "buffer flight counters",
)
#: Record markers, in the order they are tried at one position.
MARKERS: tuple[str, ...] = (
    "CUZK_TIMING:",
    "CUZK_NTT_H:",
    "TIMELINE,",
    "GPU_TIMING",
    "FIN_TIMING",
    *_POOL_EVENTS,
    *_MESSAGES,
)
_MARKER_RE = re.compile(r"(?:" + "|".join(re.escape(m) for m in sorted(MARKERS, key=len, reverse=True)) + ")")

# CUZK_TIMING kinds: first key → kind
_KIND_BY_KEY = {
    "split_vectors_ms": "split_vectors",
    "prep_msm_ms": "prep_msm",
    "b_g2_msm_ms": "b_g2_msm",
    "pre_lock_cpu_ms": "pre_lock",
    "mutex_wait_ms": "pre_lock",
    "ntt_msm_h_ms": "ntt_msm_h",
    "barrier_wait_ms": "barrier_wait",
    "batch_add_ms": "batch_add",
    "tail_msm_ms": "tail_msm",
    "mutex_held_ms": "mutex_held",
    "async_dealloc_ms": "async_dealloc",
    "epilogue_ms": "epilogue",
    "host_register": "host_register",
    "prestage_vram": "prestage_vram",
    "prestage_setup": "prestage_setup",
}
_POOL_THRESHOLD = re.compile(r"^set pool release threshold to MAX on gpu (\d+)")
_DA_CACHE = re.compile(r"^d_a_cache allocated (\d+) MiB on gpu (\d+)")

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
_GROUPED_KINDS = frozenset(_EDGES)

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


@dataclass
class ParsedLog:
    """Everything :func:`parse_lines` found. ``line`` columns are 1-based physical line numbers.

    Attributes:
        timing: one row per ``CUZK_TIMING:`` record: ``line``, ``kind`` (``prep_msm``, ``ntt_msm_h``,
            ``pre_lock``, ``tail_msm``, ``pool_threshold``, ``d_a_cache``, ...), ``gpu_tid`` (Int64),
            ``truncated`` (bool), ``text``, then one column per field name (``prep_msm_ms`` ... as float ms;
            non-numeric values such as ``prestage_setup=ok`` as strings).
        ntt_h: one row per ``CUZK_NTT_H:`` record: ``line``, ``truncated``, ``text`` and float ms columns
            ``d_b_alloc_ms``, ``ntt_kernels_ms``, ``coset_intt_sync_ms``, ``msm_init_ms``,
            ``msm_invoke_ms``, ``msm_dtor_ms``, ``total_ms``.
        timeline: one row per ``TIMELINE`` record: ``line``, ``t_ms`` (float, ms since engine start),
            ``event``, ``job``, ``detail`` (raw), ``worker``/``partition`` (Int64), ``gpu_ms``/``synth_ms``
            (float ms), ``truncated``, plus any other detail key (string).
        gpu_timing / fin_timing: one row per ``GPU_TIMING`` / ``FIN_TIMING`` line: ``line``, ``ts``
            (timestamp text of the prefix or <NA>), ``level``, ``what`` (message text, e.g.
            ``hot_path pre-prove overhead``), ``truncated``, then the fields (numbers as float; ``*_ms``
            in ms).
        pool: pinned-pool messages: ``line``, ``ts``, ``level``, ``event`` (``checkout_reuse``,
            ``allocate``, ``checkin``, ``free_evictor``, ``checkout_failed``, ``attempt_pinned``),
            ``what``, ``truncated``, fields (``size_gib``, ``free_remaining``, ...).
        messages: other recognized engine messages (``partition synthesis complete`` ...), same layout.
        n_lines: physical lines read. unknown_count: non-empty lines with no marker.
        unknown_examples: first 5 unknown lines (ANSI-stripped). truncated_count: records flagged
        truncated. malformed_count: records whose body could not be read (e.g. a TIMELINE line with
        fewer than 4 commas, a CUZK line with no ``key=value``).
    """

    timing: pd.DataFrame
    ntt_h: pd.DataFrame
    timeline: pd.DataFrame
    gpu_timing: pd.DataFrame
    fin_timing: pd.DataFrame
    pool: pd.DataFrame
    messages: pd.DataFrame
    n_lines: int = 0
    unknown_count: int = 0
    unknown_examples: list[str] = field(default_factory=list)
    truncated_count: int = 0
    malformed_count: int = 0

    def summary(self) -> dict:
        """Counts per record type plus unknown / truncated / malformed line counts."""
        return {
            "lines": self.n_lines,
            "cuzk_timing": len(self.timing),
            "cuzk_ntt_h": len(self.ntt_h),
            "timeline": len(self.timeline),
            "gpu_timing": len(self.gpu_timing),
            "fin_timing": len(self.fin_timing),
            "pinned_pool": len(self.pool),
            "messages": len(self.messages),
            "unknown": self.unknown_count,
            "truncated": self.truncated_count,
            "malformed": self.malformed_count,
        }


def _value(v: str):
    if v.startswith('"') and v.endswith('"') and len(v) >= 2:
        return v[1:-1]
    if _NUM.match(v):
        return float(v)
    m = _NUM_MS.match(v)
    if m:
        return float(m.group(1))
    return v


def _kv_tokens(body: str, truncated: bool) -> tuple[dict, list[str], bool]:
    """Split ``body`` into key=value fields; return (fields, leading words, truncated).

    Leading words before the first key=value token form the message (``what``). A non key=value token
    after the first field is treated as a cut token (the record is truncated) if it is last.
    """
    toks = body.split()
    if truncated and toks and not body[-1:].isspace():
        toks = toks[:-1]  # the last token may be cut: drop it (whole-token loss is reported via flag)
    fields: dict = {}
    words: list[str] = []
    bad = False
    for i, t in enumerate(toks):
        m = _KV.match(t)
        if m:
            fields[m.group(1)] = _value(m.group(2))
        elif not fields:
            words.append(t)
        elif i == len(toks) - 1:
            truncated = True
        else:
            bad = True
            fields.setdefault("_junk", t)
    if bad:
        fields.pop("_junk", None)
    return fields, words, truncated


def _prefix_info(prefix: str) -> tuple[str | None, str | None]:
    ts = _TS.search(prefix)
    lv = _LEVEL.search(prefix)
    return (ts.group(0) if ts else None), (lv.group(1) if lv else None)


def _frame(rows: list[dict], lead: list[str]) -> pd.DataFrame:
    if not rows:
        return pd.DataFrame({c: pd.Series(dtype="object") for c in lead})
    df = pd.DataFrame(rows)
    cols = lead + [c for c in df.columns if c not in lead]
    for c in lead:
        if c not in df.columns:
            df[c] = None
    df = df[cols]
    for c in df.columns:
        if c in ("line",):
            df[c] = df[c].astype("int64")
        elif c in ("gpu_tid", "worker", "partition", "gpu"):
            df[c] = pd.to_numeric(df[c], errors="coerce").astype("Int64")
        elif c == "truncated":
            df[c] = df[c].fillna(False).astype(bool)
        elif c in ("kind", "text", "event", "job", "detail", "what", "ts", "level"):
            df[c] = df[c].astype("string")
        else:
            num = pd.to_numeric(df[c], errors="coerce")
            if num.notna().sum() == df[c].notna().sum():
                df[c] = num.astype("float64")
            else:
                df[c] = df[c].astype("string")
    return df


def _parse_cuzk_timing(body: str, truncated: bool) -> dict | None:
    body = body.strip() if not truncated else body.lstrip()
    m = _POOL_THRESHOLD.match(body)
    if m:
        return {"kind": "pool_threshold", "gpu": int(m.group(1)), "truncated": truncated}
    m = _DA_CACHE.match(body)
    if m:
        return {"kind": "d_a_cache", "d_a_cache_mib": float(m.group(1)), "gpu": int(m.group(2)), "truncated": truncated}
    fields, words, truncated = _kv_tokens(body, truncated)
    if not fields:
        return None
    gpu_tid = fields.pop("gpu_tid", None)
    kind = None
    if words:  # e.g. "prestage_vram free_mib=..."
        kind = _KIND_BY_KEY.get(words[0], words[0])
    for k in fields if kind is None else ():
        kind = _KIND_BY_KEY.get(k)
        if kind is None:
            kind = k[:-3] if k.endswith("_ms") else k
        break
    if kind is None:  # only gpu_tid survived (truncated) -> unreadable
        return None
    row = {"kind": kind, "gpu_tid": gpu_tid, "truncated": truncated}
    row.update(fields)
    return row


def _parse_timeline(seg: str, truncated: bool) -> dict | None:
    s = seg.rstrip("\r\n") if not truncated else seg
    parts = s.split(",", 4)
    if len(parts) < 4:
        return None
    parts += [""] * (5 - len(parts))
    _, t, event, job, detail = parts
    try:
        t_ms = float(t)
    except ValueError:
        return None
    event = event.strip()
    if not event:
        return None
    detail = detail.strip()
    row: dict = {"t_ms": t_ms, "event": event, "job": job.strip(), "detail": detail, "truncated": truncated}
    items = [x for x in re.split(r"[,\s]+", detail) if x]
    if truncated and items and not s.endswith((",", " ")):
        items = items[:-1]
    flags = []
    for it in items:
        if "=" in it:
            k, v = it.split("=", 1)
            row[k] = _value(v) if k not in ("kind", "job") else v
        else:
            flags.append(it)
    if flags:
        row["flags"] = " ".join(flags)
    return row


def _split_segments(text: str) -> tuple[str, list[tuple[str, str, bool]]]:
    """Split one ANSI-stripped physical line into (prefix, [(marker, body, cut_by_next_marker)])."""
    matches = list(_MARKER_RE.finditer(text))
    if not matches:
        return text, []
    segs = []
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        body = text[m.end() : end]
        cut = i + 1 < len(matches) and (end == m.end() or not text[end - 1].isspace())
        segs.append((m.group(0), body, cut))
    return text[: matches[0].start()], segs


def parse_lines(lines: Iterable[str], *, last_line_complete: bool = True) -> ParsedLog:
    """Parse cuzk-format log lines (any mix, any order) into a :class:`ParsedLog`.

    Args:
        lines: physical lines (with or without trailing newlines), e.g. an open text file.
        last_line_complete: False when the last line is known to be cut (a file without a trailing
            newline); :func:`parse_file` sets it. Lines ending in ``...`` or ``…`` are always treated
            as cut.

    Never raises on bad content: unknown lines are counted, unreadable records counted as malformed.
    """
    timing, ntt_h, timeline, gpu_t, fin_t, pool, msgs = ([] for _ in range(7))
    unknown = 0
    examples: list[str] = []
    n_trunc = 0
    n_bad = 0
    buf = list(lines)
    n = len(buf)
    for idx, raw in enumerate(buf):
        lineno = idx + 1
        text = _ANSI.sub("", raw).rstrip("\r\n")
        if not text.strip():
            continue
        cut_line = (idx == n - 1 and not last_line_complete) or text.rstrip().endswith(("...", "…"))
        ellipsis = ""
        if text.rstrip().endswith("..."):
            text, ellipsis = text.rstrip()[:-3], "..."
        elif text.rstrip().endswith("…"):
            text, ellipsis = text.rstrip()[:-1], "…"
        prefix, segs = _split_segments(text)
        if not segs:
            unknown += 1
            if len(examples) < 5:
                examples.append(text[:200])
            continue
        ts, level = _prefix_info(prefix)
        for j, (marker, body, cut_next) in enumerate(segs):
            last = j == len(segs) - 1
            truncated = cut_next or (cut_line and last)
            raw_text = (marker + body + (ellipsis if last else "")).strip()
            if truncated:
                n_trunc += 1
            if marker == "CUZK_TIMING:":
                row = _parse_cuzk_timing(body, truncated)
                if row is None:
                    n_bad += 1
                    continue
                row.update(line=lineno, text=raw_text)
                timing.append(row)
            elif marker == "CUZK_NTT_H:":
                fields, _, tr = _kv_tokens(body.strip() if not truncated else body.lstrip(), truncated)
                if not fields:
                    n_bad += 1
                    continue
                row = {f"{k}_ms" if not k.endswith("_ms") else k: v for k, v in fields.items()}
                row.update(line=lineno, truncated=tr, text=raw_text)
                ntt_h.append(row)
            elif marker == "TIMELINE,":
                row = _parse_timeline(marker + body, truncated)
                if row is None:
                    n_bad += 1
                    continue
                row["line"] = lineno
                timeline.append(row)
            else:
                fields, words, tr = _kv_tokens(body.strip() if not truncated else body.lstrip(), truncated)
                what = " ".join(words)
                row = {"line": lineno, "ts": ts, "level": level, "truncated": tr}
                if marker in ("GPU_TIMING", "FIN_TIMING"):
                    row["what"] = what
                    row.update(fields)
                    (gpu_t if marker == "GPU_TIMING" else fin_t).append(row)
                elif marker in _POOL_EVENTS:
                    row["event"] = _POOL_EVENTS[marker]
                    row["what"] = (marker + " " + what).strip()
                    row.update(fields)
                    pool.append(row)
                else:
                    row["what"] = (marker + " " + what).strip()
                    row.update(fields)
                    msgs.append(row)
    return ParsedLog(
        timing=_frame(timing, ["line", "kind", "gpu_tid", "truncated", "text"]),
        ntt_h=_frame(ntt_h, ["line", "truncated", "text"]),
        timeline=_frame(timeline, ["line", "t_ms", "event", "job", "detail", "worker", "partition", "gpu_ms", "synth_ms", "truncated"]),
        gpu_timing=_frame(gpu_t, ["line", "ts", "level", "what", "truncated"]),
        fin_timing=_frame(fin_t, ["line", "ts", "level", "what", "truncated"]),
        pool=_frame(pool, ["line", "ts", "level", "event", "what", "truncated"]),
        messages=_frame(msgs, ["line", "ts", "level", "what", "truncated"]),
        n_lines=n,
        unknown_count=unknown,
        unknown_examples=examples,
        truncated_count=n_trunc,
        malformed_count=n_bad,
    )


def parse_file(path: str | Path) -> ParsedLog:
    """Parse a log file (UTF-8, undecodable bytes replaced). A last line without a trailing newline
    is treated as truncated.

    Raises:
        FileNotFoundError: ``path`` does not exist.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"log file not found: {p}")
    data = p.read_text(encoding="utf-8", errors="replace")
    lines = data.splitlines()
    complete = data.endswith(("\n", "\r")) or not data
    return parse_lines(lines, last_line_complete=complete)


# ----------------------------------------------------------------------------------------------
# Grouping CUZK_TIMING lines into partitions


def _group_records(parsed: ParsedLog) -> list[dict]:
    """Group per-partition CUZK_TIMING / CUZK_NTT_H rows into records (see module docstring)."""
    items: list[tuple[int, int, str, dict]] = []
    t = parsed.timing
    if len(t):
        for pos, r in enumerate(t.to_dict("records")):
            if r["kind"] in _GROUPED_KINDS:
                items.append((int(r["line"]), pos, r["kind"], r))
    nh = parsed.ntt_h
    if len(nh):
        for pos, r in enumerate(nh.to_dict("records")):
            items.append((int(r["line"]), 10**9 + pos, "ntt_h", r))
    items.sort(key=lambda x: (x[0], x[1]))
    records: list[dict] = []
    for line, _, kind, r in items:
        target = None
        for rec in records:
            kinds = rec["_kinds"]
            if kind in kinds or kinds & _AFTER[kind]:
                continue
            target = rec
            break
        if target is None:
            target = {"_kinds": set(), "first_line": line, "last_line": line, "truncated": False}
            records.append(target)
        target["_kinds"].add(kind)
        target["last_line"] = max(target["last_line"], line)
        target["truncated"] = bool(target["truncated"] or r.get("truncated", False))
        for k, v in r.items():
            if k in ("line", "kind", "text", "truncated") or v is None or (isinstance(v, float) and np.isnan(v)) or v is pd.NA:
                continue
            if kind == "ntt_h":
                k = "ntt_h_" + k
            if k == "gpu_tid":
                target.setdefault("gpu_tid", v)
                continue
            target[k] = v
    return records


def partition_table(parsed: ParsedLog) -> pd.DataFrame:
    """One row per partition (a call of the C++ start function) from the ``CUZK_TIMING`` lines.

    Grouping rule: module docstring ("Grouping durations into partitions"). Columns:
    ``record`` (0-based order of the first line), :data:`PARTITION_COLUMNS` (float ms, NaN where the
    line is absent: ``prep_msm_ms, b_g2_msm_ms, pre_lock_cpu_ms, mutex_wait_ms, ntt_msm_h_ms,
    barrier_wait_ms, batch_add_ms, tail_msm_ms, gpu_total_ms, mutex_held_ms, total_start_fn_ms``),
    then ``split_vectors_ms, setup_to_split_ms, async_dealloc_ms, epilogue_ms, num_circuits`` and the
    ``CUZK_NTT_H`` sub-timers as ``ntt_h_<name>_ms``; ``gpu_tid`` (Int64), ``first_line``,
    ``last_line``, ``truncated`` (a member line was cut), and any other field found.
    """
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
    df = df[lead + [c for c in df.columns if c not in lead]]
    for c in (*PARTITION_COLUMNS, *_EXTRA_PARTITION_COLUMNS):
        df[c] = pd.to_numeric(df[c], errors="coerce").astype("float64")
    df["record"] = df["record"].astype("int64")
    df["gpu_tid"] = pd.to_numeric(df["gpu_tid"], errors="coerce").astype("Int64")
    df["first_line"] = pd.to_numeric(df["first_line"], errors="coerce").astype("Int64")
    df["last_line"] = pd.to_numeric(df["last_line"], errors="coerce").astype("Int64")
    df["truncated"] = df["truncated"].fillna(False).astype(bool)
    return df.reset_index(drop=True)


# ----------------------------------------------------------------------------------------------
# Event table


def _ns(ms: float) -> int:
    return int(round(float(ms) * 1e6))


_MAX_MS = 1e9  # ~11.6 days: a longer phase duration is a corrupt value, not a measurement


def _val(r: dict, k: str) -> float:
    """A duration field in ms for event placement; NaN (= absent) when missing, unreadable,
    non-finite, negative or implausibly large, so one corrupt value cannot break ``to_events``."""
    v = r.get(k)
    if v is None or v is pd.NA:
        return float("nan")
    try:
        x = float(v)
    except (TypeError, ValueError, OverflowError):
        return float("nan")
    return x if math.isfinite(x) and 0.0 <= x <= _MAX_MS else float("nan")


def _timeline_events(tl: pd.DataFrame, run: str, source: str) -> tuple[list[dict], list[dict]]:
    """Pair TIMELINE starts and ends. Returns (event rows, GPU_START rows in time order)."""
    rows: list[dict] = []
    if not len(tl):
        return rows, []
    tl = tl.sort_values(["t_ms", "line"], kind="stable")
    recs = tl.to_dict("records")
    parts = [int(p) for p in tl["partition"].dropna()] if "partition" in tl else []
    stride = (max(parts) + 1) if parts else 1
    job_rank: dict[str, int] = {}
    for r in recs:
        job_rank.setdefault(str(r["job"]), len(job_rank))

    def gpart(r):
        p = r.get("partition")
        if p is None or p is pd.NA or (isinstance(p, float) and np.isnan(p)):
            return pd.NA
        return job_rank[str(r["job"])] * stride + int(p)

    pairs = {"SYNTH_START": ("SYNTH_END", "synthesize"), "GPU_QUEUE": ("GPU_PICKUP", "gpu_queue"), "GPU_START": ("GPU_END", "prove")}
    open_: dict[tuple, deque] = defaultdict(deque)
    ends = {v[0]: (k, v[1]) for k, v in pairs.items()}
    starts: list[dict] = []
    for r in recs:
        ev = r["event"]
        p = r.get("partition")
        pkey = None if p is None or p is pd.NA or (isinstance(p, float) and np.isnan(p)) else int(p)
        if ev in pairs:
            open_[(ev, str(r["job"]), pkey)].append(r)
            if ev == "GPU_START":
                starts.append(r)
        elif ev in ends:
            sev, phase = ends[ev]
            q = open_.get((sev, str(r["job"]), pkey))
            if not q:
                continue
            s = q.popleft()
            w = r.get("worker")
            if w is None or w is pd.NA or (isinstance(w, float) and np.isnan(w)):
                w = s.get("worker")
            detail = [f"job={r['job']}"]
            if pkey is not None:
                detail.append(f"partition={pkey}")
            for k in ("gpu_ms", "synth_ms"):
                v = _val(r, k)
                if not np.isnan(v):
                    detail.append(f"{k}={v:g}")
            rows.append(
                {
                    "run": run,
                    "source": source,
                    "worker": w,
                    "partition": gpart(r),
                    "phase": phase,
                    "start_ns": _ns(s["t_ms"]),
                    "end_ns": _ns(r["t_ms"]),
                    "detail": ",".join(detail),
                }
            )
    for s in starts:
        s["_gpart"] = gpart(s)
    return rows, starts


def _record_events(rec: dict, t0_ns: int, run: str, source: str, worker, partition, gpu, placement: str) -> tuple[list[dict], int]:
    """Intervals of one partition record anchored at t0 (entry of the start function).

    Returns (rows, lock release time in ns)."""
    g = lambda k: _val(rec, k)  # noqa: E731
    rows: list[dict] = []
    detail_base = f"placement={placement},record={rec['record']}"

    def add(phase, s, dur_ms, extra="", on_gpu=False):
        if np.isnan(dur_ms):
            return
        rows.append(
            {
                "run": run,
                "source": source,
                "worker": worker,
                "gpu": gpu if on_gpu else pd.NA,
                "partition": partition,
                "phase": phase,
                "start_ns": int(s),
                "end_ns": int(s) + _ns(dur_ms),
                "detail": detail_base + (("," + extra) if extra else ""),
            }
        )

    setup = g("setup_to_split_ms")
    t_split_end = t0_ns + (_ns(setup) if not np.isnan(setup) else 0)
    sv = g("split_vectors_ms")
    if not np.isnan(sv):
        add("split_vectors", t_split_end - _ns(sv), sv)
    pre = g("pre_lock_cpu_ms")
    mw = g("mutex_wait_ms")
    add("pre_lock", t0_ns, pre)
    lock = t0_ns + (_ns(pre) if not np.isnan(pre) else 0)
    add("mutex_wait", lock, mw)
    lock += _ns(mw) if not np.isnan(mw) else 0
    # prep_msm thread starts right after split_vectors; b_g2_msm follows it
    prep = g("prep_msm_ms")
    add("prep_msm", t_split_end, prep)
    prep_end = t_split_end + (_ns(prep) if not np.isnan(prep) else 0)
    nc = g("num_circuits")
    add("b_g2_msm", prep_end, g("b_g2_msm_ms"), f"num_circuits={nc:g}" if not np.isnan(nc) else "")
    bg2_end = prep_end + (_ns(g("b_g2_msm_ms")) if not np.isnan(g("b_g2_msm_ms")) else 0)
    # GPU chain from lock acquisition, end to end; tail right-aligned to lock + gpu_total
    cur = lock
    ntt_extra = ",".join(f"{k}={g(k):g}" for k in rec if k.startswith("ntt_h_") and not np.isnan(g(k)))
    for phase, key, extra in (("ntt_msm_h", "ntt_msm_h_ms", ntt_extra), ("barrier_wait", "barrier_wait_ms", ""), ("batch_add", "batch_add_ms", "")):
        d = g(key)
        if not np.isnan(d):
            add(phase, cur, d, extra, on_gpu=True)
            cur += _ns(d)
    tail = g("tail_msm_ms")
    total = g("gpu_total_ms")
    if not np.isnan(tail):
        t_start = cur
        if not np.isnan(total):
            t_start = max(cur, lock + _ns(total) - _ns(tail))
        add("tail_msm", t_start, tail, f"gpu_total_ms={total:g}" if not np.isnan(total) else "", on_gpu=True)
        cur = t_start + _ns(tail)
    elif not np.isnan(total):
        cur = max(cur, lock + _ns(total))
    held = g("mutex_held_ms")
    tot_fn = g("total_start_fn_ms")
    add("mutex_held", lock, held, f"total_start_fn_ms={tot_fn:g}" if not np.isnan(tot_fn) else "")
    release = lock + _ns(held) if not np.isnan(held) else cur
    ad = g("async_dealloc_ms")
    add("async_dealloc", max(release, bg2_end), ad)
    return rows, release


def to_events(parsed: ParsedLog, run: str = "cuzk-log", source: str = "cuzk-log") -> pd.DataFrame:
    """Event table (schema: :mod:`zkgpu.events`) from a parsed cuzk-format log.

    Placement rules (all times ns; ms values × 1e6, rounded):

    1. **TIMELINE** events are paired per (job, cuzk partition) first-in-first-out:
       ``SYNTH_START→SYNTH_END`` = ``synthesize``, ``GPU_QUEUE→GPU_PICKUP`` = ``gpu_queue``,
       ``GPU_START→GPU_END`` = ``prove``; start_ns/end_ns = the TIMELINE offsets (ms since engine start).
       ``worker`` from the end event (else the start event). ``partition`` = job_rank × stride + cuzk
       partition, where job_rank is the order in which jobs first appear and stride = 1 + the largest
       partition number in the log (so a single-job log keeps cuzk's partition numbers); the cuzk job
       id and partition go to ``detail`` (``job=…,partition=…``), and so do GPU_END's ``gpu_ms`` and
       SYNTH_END's ``synth_ms`` — GPU_END's gpu_ms is a wall time (prove_start → finish, §2.2), **not**
       CUDA-event time, so the ``gpu_ms`` column stays NaN. Unmatched starts/ends give no row.
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

    Returns: a DataFrame normalized by :func:`zkgpu.events.normalize_events`, sorted by start_ns.
    """
    rows, starts = _timeline_events(parsed.timeline, run, source)
    pt = partition_table(parsed)
    recs = pt.to_dict("records")
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
            pre = _val(rec, "pre_lock_cpu_ms")
            mw = _val(rec, "mutex_wait_ms")
            lead = (_ns(pre) if not np.isnan(pre) else 0) + (_ns(mw) if not np.isnan(mw) else 0)
            t0 = base if k == 0 else max(prev_t0, prev_release - lead)
            r_rows, prev_release = _record_events(rec, t0, run, source, pd.NA, k, gpu, "sequential")
            prev_t0 = t0
        rows.extend(r_rows)
    df = pd.DataFrame(rows)
    out = normalize_events(df) if len(df) else normalize_events(pd.DataFrame({"start_ns": [], "end_ns": []}))
    return out.sort_values(["start_ns", "end_ns"], kind="stable").reset_index(drop=True)


# ----------------------------------------------------------------------------------------------
# nsys SQLite export

#: CUPTI_ACTIVITY_MEMCPY_KIND values (CUPTI ``CUpti_ActivityMemcpyKind``) → short names.
_COPY_KIND = {0: "unknown", 1: "htod", 2: "dtoh", 3: "htoa", 4: "atoh", 5: "atoa", 6: "atod", 7: "dtoa", 8: "dtod", 9: "htoh", 10: "ptop"}
#: CUPTI_ACTIVITY_MEMORY_KIND values → names.
_MEM_KIND = {0: "unknown", 1: "pageable", 2: "pinned", 3: "device", 4: "array", 5: "managed", 6: "device_static", 7: "managed_static"}
_NVTX_RANGE_TYPES = (59, 60, 70, 71)  # push/pop, start/end (and their payload variants)


def _tables(con: sqlite3.Connection) -> dict[str, set[str]]:
    out = {}
    for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table','view')"):
        cols = {r[1] for r in con.execute(f'PRAGMA table_info("{name}")')}
        out[name] = cols
    return out


def _enum(con, tables, name: str, fallback: dict[int, str]) -> dict[int, str]:
    if name in tables and {"id", "name"} <= tables[name]:
        m = {int(i): str(n).lower() for i, n in con.execute(f'SELECT id, name FROM "{name}"')}
        return {k: v.replace("cuda_memcpy_kind_", "").replace("cuda_memopr_", "").replace("cupti_activity_memory_kind_", "") for k, v in m.items()}
    return fallback


_INT_FIELD = re.compile(r"\b(partition|worker|gpu)[=:](\d+)\b")
_SHORT_FIELD = re.compile(r"(?<![\w=])([pwg])(\d+)\b")  # zkgpu.trace labels: "ntt_msm_h p3 w1"
_SHORT_NAME = {"p": "partition", "w": "worker", "g": "gpu"}


def read_nsys_sqlite(path: str | Path, run: str | None = None) -> pd.DataFrame:
    """Event table from an ``nsys export --type sqlite`` file.

    Rows (times are nsys' ns since session start):

    * NVTX ranges (``NVTX_EVENTS`` rows with a non-NULL ``end``; text from ``text`` or
      ``textId`` → ``StringIds.value``): phase = the first word of the text (split on whitespace,
      ``:`` or ``,``), so our ranges named after :data:`zkgpu.events.PHASES` map 1:1; ``partition=N``,
      ``worker=N``, ``gpu=N`` or the short ``pN`` / ``wN`` / ``gN`` words of :mod:`zkgpu.trace` labels
      (``ntt_msm_h p3 w1``) found after the first word fill those columns; detail = ``text=…,domain=…,tid=…``
      (domain name from the NVTX domain-create rows when present, else the id).
    * ``CUPTI_ACTIVITY_KIND_KERNEL``: phase ``kernel``, gpu = ``deviceId``, gpu_ms = (end−start)/1e6,
      detail ``name=…,stream=…`` (name from ``shortName``/``demangledName`` via StringIds).
    * ``CUPTI_ACTIVITY_KIND_MEMCPY``: phase ``memcpy_<kind>`` (``memcpy_htod``, ``memcpy_dtoh``,
      ``memcpy_dtod``, …, CUPTI copyKind 1=HtoD, 2=DtoH, 8=DtoD, 10=PtoP), bytes, gpu = deviceId,
      gpu_ms = duration, detail ``src=pageable|pinned|device…,dst=…,stream=…``. (Named ``memcpy_*``,
      not ``h2d``, because a raw copy is not necessarily the ntt_msm_h a/b/c upload.)

    Missing tables are skipped. source = ``nsys``; run defaults to the file stem.

    Raises:
        FileNotFoundError: no such file. ValueError: not an SQLite database / none of the tables.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"nsys SQLite export not found: {p}")
    run = run or p.stem
    try:
        con = sqlite3.connect(f"file:{p}?mode=ro", uri=True)
        tables = _tables(con)
    except sqlite3.DatabaseError as e:
        raise ValueError(f"{p} is not an SQLite database: {e}") from e
    wanted = ("NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY")
    if not any(t in tables for t in wanted):
        con.close()
        raise ValueError(f"{p} has none of the nsys tables {wanted}; found {sorted(tables)[:10]}")
    strings: dict[int, str] = {}
    if "StringIds" in tables:
        strings = {int(i): str(v) for i, v in con.execute("SELECT id, value FROM StringIds")}
    rows: list[dict] = []
    try:
        if "NVTX_EVENTS" in tables:
            cols = tables["NVTX_EVENTS"]
            sel = ["start", '"end"']
            for c in ("text", "textId", "domainId", "globalTid", "eventType"):
                sel.append(c if c in cols else f"NULL AS {c}")
            q = f"SELECT {', '.join(sel)} FROM NVTX_EVENTS"
            recs = con.execute(q).fetchall()
            domains: dict[int, str] = {}
            for start, end, text, tid, dom, gtid, et in recs:
                if et == 75 and dom is not None:  # NvtxDomainCreate
                    domains[int(dom)] = text if text is not None else strings.get(tid, str(dom))
            for start, end, text, tid, dom, gtid, et in recs:
                if end is None or start is None:
                    continue
                if et is not None and et not in _NVTX_RANGE_TYPES:
                    continue
                txt = text if text is not None else (strings.get(int(tid)) if tid is not None else None)
                txt = txt or ""
                first = re.split(r"[\s:,]+", txt.strip(), maxsplit=1)[0] if txt.strip() else "nvtx"
                r = {"run": run, "source": "nsys", "phase": first, "start_ns": int(start), "end_ns": int(end)}
                rest = txt.strip()[len(first):]
                for k, v in _SHORT_FIELD.findall(rest):
                    r[_SHORT_NAME[k]] = int(v)
                for k, v in _INT_FIELD.findall(rest):
                    r[k] = int(v)
                d = [f"text={txt}"]
                if dom is not None:
                    d.append(f"domain={domains.get(int(dom), dom)}")
                if gtid is not None:
                    d.append(f"tid={int(gtid) & 0xFFFFFF}")
                r["detail"] = ",".join(d)
                rows.append(r)
        if "CUPTI_ACTIVITY_KIND_KERNEL" in tables:
            cols = tables["CUPTI_ACTIVITY_KIND_KERNEL"]
            name_col = next((c for c in ("shortName", "demangledName", "mangledName") if c in cols), None)
            sel = ["start", '"end"', "deviceId" if "deviceId" in cols else "NULL", "streamId" if "streamId" in cols else "NULL", name_col or "NULL"]
            for start, end, dev, stream, name in con.execute(f"SELECT {', '.join(sel)} FROM CUPTI_ACTIVITY_KIND_KERNEL"):
                nm = strings.get(int(name), str(name)) if isinstance(name, int) else (name or "")
                rows.append(
                    {
                        "run": run,
                        "source": "nsys",
                        "gpu": dev,
                        "phase": "kernel",
                        "start_ns": int(start),
                        "end_ns": int(end),
                        "gpu_ms": (int(end) - int(start)) / 1e6,
                        "detail": f"name={nm},stream={stream}",
                    }
                )
        if "CUPTI_ACTIVITY_KIND_MEMCPY" in tables:
            cols = tables["CUPTI_ACTIVITY_KIND_MEMCPY"]
            copy_kind = _enum(con, tables, "ENUM_CUDA_MEMCPY_OPER", _COPY_KIND)
            mem_kind = _enum(con, tables, "ENUM_CUDA_MEM_KIND", _MEM_KIND)
            sel = ["start", '"end"']
            for c in ("bytes", "copyKind", "srcKind", "dstKind", "deviceId", "streamId"):
                sel.append(c if c in cols else f"NULL AS {c}")
            for start, end, nbytes, ck, sk, dk, dev, stream in con.execute(f"SELECT {', '.join(sel)} FROM CUPTI_ACTIVITY_KIND_MEMCPY"):
                kind = copy_kind.get(int(ck), str(ck)) if ck is not None else "unknown"
                d = []
                if sk is not None:
                    d.append(f"src={mem_kind.get(int(sk), sk)}")
                if dk is not None:
                    d.append(f"dst={mem_kind.get(int(dk), dk)}")
                d.append(f"stream={stream}")
                rows.append(
                    {
                        "run": run,
                        "source": "nsys",
                        "gpu": dev,
                        "phase": f"memcpy_{kind}",
                        "start_ns": int(start),
                        "end_ns": int(end),
                        "gpu_ms": (int(end) - int(start)) / 1e6,
                        "bytes": nbytes,
                        "detail": ",".join(d),
                    }
                )
    finally:
        con.close()
    df = normalize_events(pd.DataFrame(rows)) if rows else normalize_events(pd.DataFrame({"start_ns": [], "end_ns": []}))
    return df.sort_values(["start_ns", "end_ns"], kind="stable").reset_index(drop=True)


# ----------------------------------------------------------------------------------------------
# CLI


@click.command("parse")
@click.argument("logfile", type=click.Path(exists=True, dir_okay=False))
@click.option("--out", "out", default=None, help="write the event table to X.parquet or X.csv")
@click.option("--partitions-out", default=None, help="also write the per-partition table (.parquet or .csv)")
@click.option("--run", "run", default=None, help="run name for the event table (default: file stem)")
def parse_command(logfile: str, out: str | None, partitions_out: str | None, run: str | None) -> None:
    """Parse a cuzk-format LOGFILE: print a per-partition summary and the unknown-line count."""
    from .metrics import identity_check  # noqa: PLC0415

    for target in (out, partitions_out):
        if target is not None and not target.endswith((".parquet", ".csv")):
            raise click.BadParameter(f"output must end in .parquet or .csv: {target}")
        if target is not None and Path(target).exists():
            raise click.ClickException(f"{target} exists: zkgpu parse never overwrites a file (choose another name)")
    parsed = parse_file(logfile)
    pt = partition_table(parsed)
    run = run or Path(logfile).stem
    cols = ["record", "prep_msm_ms", "mutex_wait_ms", "ntt_msm_h_ms", "barrier_wait_ms", "batch_add_ms", "tail_msm_ms", "gpu_total_ms", "mutex_held_ms"]
    click.echo(f"{logfile}: {parsed.n_lines} lines, {len(pt)} partitions")
    if len(pt):
        show = pt[cols].join(identity_check(pt)[["residual_ms"]])
        show = show.dropna(axis=1, how="all")
        click.echo(show.to_string(index=False, na_rep="-", float_format=lambda x: f"{x:g}"))
    s = parsed.summary()
    click.echo("records: " + ", ".join(f"{k}={v}" for k, v in s.items() if k not in ("lines", "unknown")))
    click.echo(f"unknown lines: {parsed.unknown_count}")
    events = to_events(parsed, run=run)
    for target, df in ((out, events), (partitions_out, pt)):
        if target is None:
            continue
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        with open(target, "xb") as f:  # exclusive create: never overwrite
            if target.endswith(".parquet"):
                df.to_parquet(f, index=False)
            else:
                df.to_csv(f, index=False)
        click.echo(f"wrote {len(df)} rows to {target}")
