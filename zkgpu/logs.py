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
grep output flattened onto one line; counted as ``merged``); a record cut short (a line ending in
``...``/``…``, a record immediately followed by another marker without whitespace, or a last line
without a newline whose last token is not a complete ``key=value``) is flagged ``truncated`` and
its last, possibly cut, token is dropped (counted as ``dropped_fields``); lines with no marker are
counted in :attr:`ParsedLog.unknown_count` (first few kept as examples). Durations are float ms
whatever their unit (``s``, ``ms``, ``µs``/``us``, ``ns``); a value that is not finite or out of
range is dropped and counted (``bad_values``), a TIMELINE time that is not finite in [0, 1e12] ms
makes the record malformed. Nothing raises on bad content, and :meth:`ParsedLog.summary` counts
every record or value that was not used.

Scale: :func:`parse_file` streams the file (one line at a time), groups partition records while
it parses (linear time) and keeps rows as DataFrame chunks; with ``rows=False`` (``zkgpu parse``)
it keeps only the partition records and the timeline. ``zkgpu bench parse`` measures it.

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
import shutil
import signal
import sqlite3
import sys
import tempfile
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import click
import numpy as np
import pandas as pd
from tqdm import tqdm

from .errors import CliError, OneLineCommand, check_new_outputs
from .events import normalize_events
from .metrics import identity_check

__all__ = [
    "ParsedLog",
    "parse_lines",
    "parse_file",
    "partition_table",
    "to_events",
    "read_nsys_sqlite",
    "parse_command",
    "bench_parse",
    "bench_parse_command",
    "synthetic_log",
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
        fewer than 4 commas or a time that is not a finite number in [0, 1e12] ms, a CUZK line with
        no ``key=value``).
        dropped_fields: tokens dropped because they were (or may have been) cut, or were not
        ``key=value`` amid the fields. bad_values: values dropped because they were not finite
        or out of range (a duration outside [0, 1e9] ms, another number beyond ±1e15).
        merged_count: records that shared one physical line with other records (interleaved
        writers). no_final_newline: the input's last line had no line end (it may be cut).

    Durations are float ms whatever unit the log used (``12ms``, ``1.2s``, ``12µs``/``12us``,
    ``5ns``).
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
    dropped_fields: int = 0
    bad_values: int = 0
    merged_count: int = 0
    no_final_newline: bool = False
    _pairing: tuple | None = field(default=None, repr=False, compare=False)
    _partitions: pd.DataFrame | None = field(default=None, repr=False, compare=False)
    _records: list[dict] | None = field(default=None, repr=False, compare=False)
    _counts: dict[str, int] | None = field(default=None, repr=False, compare=False)

    def pairing(self) -> dict[str, int]:
        """How the TIMELINE start/end records pair (:func:`_pair_timeline`): ``pairs``,
        ``duplicate_starts``, ``unpaired_starts``, ``unpaired_ends``, ``cross_worker_ends``."""
        pairs, _, counts = self._paired()
        return {"pairs": len(pairs), **counts}

    def _paired(self) -> tuple[list, list, dict]:
        if self._pairing is None:  # computed once (summary() and to_events() both need it)
            self._pairing = _pair_timeline(self.timeline)
        return self._pairing

    def summary(self) -> dict:
        """Counts per record type, then every record or value that was dropped or merged:
        ``unknown`` lines, ``truncated`` / ``malformed`` records, ``dropped_fields``,
        ``bad_values``, ``merged`` (records sharing a line), the TIMELINE pairing counts
        (``duplicate_starts``, ``unpaired_starts``, ``unpaired_ends``, ``cross_worker_ends``) and
        ``no_final_newline`` (0/1)."""
        n = self._counts or {"timing": len(self.timing), "ntt_h": len(self.ntt_h), "timeline": len(self.timeline), "gpu": len(self.gpu_timing),
                             "fin": len(self.fin_timing), "pool": len(self.pool), "msgs": len(self.messages)}
        return {
            "lines": self.n_lines,
            "cuzk_timing": n["timing"],
            "cuzk_ntt_h": n["ntt_h"],
            "timeline": n["timeline"],
            "gpu_timing": n["gpu"],
            "fin_timing": n["fin"],
            "pinned_pool": n["pool"],
            "messages": n["msgs"],
            "unknown": self.unknown_count,
            "truncated": self.truncated_count,
            "malformed": self.malformed_count,
            "dropped_fields": self.dropped_fields,
            "bad_values": self.bad_values,
            "merged": self.merged_count,
            **{k: v for k, v in self.pairing().items() if k != "pairs"},
            "no_final_newline": int(self.no_final_newline),
        }


_UNIT_MS = {"ns": 1e-6, "us": 1e-3, "\u00b5s": 1e-3, "\u03bcs": 1e-3, "ms": 1.0, "s": 1e3}
_NUM_UNIT = re.compile(r"^([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)(ns|us|\u00b5s|\u03bcs|ms|s)$")
_MAX_MS = 1e9  # ~11.6 days: a longer phase duration is a corrupt value, not a measurement
_MAX_ABS = 1e15  # any other number beyond this is a corrupt value (byte counts of a day fit easily)
_MAX_T_MS = 1e12  # TIMELINE times: ms since engine start, about 31 years
_BAD = object()  # a value that is not finite or out of range (counted, the field dropped)
_ID_KEYS = frozenset({"gpu_tid", "worker", "partition", "gpu", "worker_id"})  # must be integers


def _value(v: str, key: str = ""):
    """One ``key=value`` value: a quoted string, a number (float), a duration with a unit
    (``1.2s``, ``12ms``, ``12µs``/``12us``, ``5ns`` -> float **ms**) or a plain string. Returns
    :data:`_BAD` for a number that is not finite, a duration outside [0, 1e9] ms, an id
    (``worker``, ``partition``, ``gpu``, ``gpu_tid``) that is not an integer, a word where a
    duration (``*_ms``) or an id belongs (``prep_msm_ms=abc``, ``gpu_tid=zero``), or any other
    number beyond ±1e15."""
    if len(v) >= 2 and v[0] == '"' and v[-1] == '"':
        return v[1:-1]
    numeric = key in _ID_KEYS or key.endswith("_ms")  # a word there (prep_msm_ms=abc, gpu_tid=zero) is a bad value
    try:
        x = float(v)
    except ValueError:
        m = _NUM_UNIT.match(v)
        if m is None:
            return _BAD if numeric else v
        x = float(m.group(1)) * _UNIT_MS[m.group(2)]
        key = "_ms"
    else:
        if not _NUM.match(v):  # 'nan', 'inf', 'infinity', '1_0': not a number a logger writes
            return _BAD if numeric or v.strip().lower().lstrip("+-") in ("nan", "inf", "infinity") else v
    if not math.isfinite(x):
        return _BAD
    if key in _ID_KEYS and x != int(x):  # a worker 0.5 or partition 1e-3 is a corrupt id
        return _BAD
    if key.endswith("_ms"):
        return x if 0.0 <= x <= _MAX_MS else _BAD
    return x if abs(x) <= _MAX_ABS else _BAD


class _Counts:
    """Per-parse counters of everything dropped or merged (see :meth:`ParsedLog.summary`)."""

    __slots__ = ("dropped_fields", "bad_values", "merged")

    def __init__(self) -> None:
        self.dropped_fields = 0
        self.bad_values = 0
        self.merged = 0


def _complete_kv(tok: str) -> bool:
    k, sep, v = tok.partition("=")
    return bool(sep and v and _KV.match(tok))


def _kv_tokens(body: str, truncated: bool, counts: _Counts | None = None, maybe_cut: bool = False) -> tuple[dict, list[str], bool]:
    """Split ``body`` into key=value fields; return (fields, leading words, truncated).

    Leading words before the first key=value token form the message (``what``). A non key=value token
    after the first field is treated as a cut token (the record is truncated) if it is last.
    ``truncated``: the record is known to be cut, its last token is dropped (counted).
    ``maybe_cut``: the record may be cut (last line of a file without a final newline): its last
    token is kept when it is a complete ``key=value``, else the record is flagged truncated.
    Values that are not finite or out of range are dropped and counted in ``counts.bad_values``.
    """
    toks = body.split()
    if maybe_cut and toks and not body[-1:].isspace() and not _complete_kv(toks[-1]):
        truncated = True
    if truncated and toks and not body[-1:].isspace():
        toks = toks[:-1]  # the last token may be cut: drop it (counted)
        if counts is not None:
            counts.dropped_fields += 1
    fields: dict = {}
    words: list[str] = []
    n = len(toks)
    for i, t in enumerate(toks):
        m = _KV.match(t)
        if m:
            k = m.group(1)
            v = _value(m.group(2), k)
            if v is _BAD:
                if counts is not None:
                    counts.bad_values += 1
                continue
            fields[k] = v
        elif not fields:
            words.append(t)
        elif i == n - 1:
            truncated = True
            if counts is not None:
                counts.dropped_fields += 1
        elif counts is not None:
            counts.dropped_fields += 1  # junk in the middle of the fields
    return fields, words, truncated


def _prefix_info(prefix: str) -> tuple[str | None, str | None]:
    ts = _TS.search(prefix)
    lv = _LEVEL.search(prefix)
    return (ts.group(0) if ts else None), (lv.group(1) if lv else None)


def _frame(rows: list[dict] | pd.DataFrame, lead: list[str]) -> pd.DataFrame:
    if not len(rows):
        return pd.DataFrame({c: pd.Series(dtype="object") for c in lead})
    df = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(rows)
    cols = lead + [c for c in df.columns if c not in lead]
    for c in lead:
        if c not in df.columns:
            df[c] = None
    df = df[cols]
    for c in df.columns:
        if c in ("line",):
            df[c] = df[c].astype("int64")
        elif c in ("gpu_tid", "worker", "partition", "gpu"):
            num = pd.to_numeric(df[c], errors="coerce").astype("float64")
            df[c] = num.where(num == np.floor(num)).astype("Int64")  # a non-integer id is no id
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


def _parse_cuzk_timing(body: str, truncated: bool, counts: _Counts | None = None, maybe_cut: bool = False) -> dict | None:
    m = _POOL_THRESHOLD.match(body)
    if m:
        return {"kind": "pool_threshold", "gpu": int(m.group(1)), "truncated": truncated}
    m = _DA_CACHE.match(body)
    if m:
        return {"kind": "d_a_cache", "d_a_cache_mib": float(m.group(1)), "gpu": int(m.group(2)), "truncated": truncated}
    fields, words, truncated = _kv_tokens(body, truncated, counts, maybe_cut)
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


_TL_SPLIT = re.compile(r"[,\s]+")


def _parse_timeline(seg: str, truncated: bool, counts: _Counts | None = None, maybe_cut: bool = False) -> dict | None:
    """``TIMELINE,<t_ms>,<EVENT>,<job>,<detail>`` -> row, or None (malformed: fewer than 4 fields,
    no event, or a time that is not a finite number in [0, 1e12] ms)."""
    s = seg.rstrip("\r\n") if not (truncated or maybe_cut) else seg
    parts = s.split(",", 4)
    if len(parts) < 4:
        return None
    parts += [""] * (5 - len(parts))
    _, t, event, job, detail = parts
    try:
        t_ms = float(t)
    except ValueError:
        return None
    if not (math.isfinite(t_ms) and 0.0 <= t_ms <= _MAX_T_MS):
        return None
    event = event.strip()
    if not event:
        return None
    detail = detail.strip()
    items = [x for x in _TL_SPLIT.split(detail) if x]
    open_end = not s.endswith((",", " "))
    if maybe_cut and items and open_end and not _complete_kv(items[-1]):
        truncated = True
    if truncated and items and open_end:
        items = items[:-1]
        if counts is not None:
            counts.dropped_fields += 1
    row: dict = {"t_ms": t_ms, "event": event, "job": job.strip(), "detail": detail, "truncated": truncated}
    flags = []
    for it in items:
        if "=" in it:
            k, v = it.split("=", 1)
            if k in ("kind", "job"):
                row[k] = v
                continue
            x = _value(v, k)
            if x is _BAD:
                if counts is not None:
                    counts.bad_values += 1
                continue
            row[k] = x
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


_CHUNK = 8192  # rows per table kept as dicts before they become a DataFrame chunk (bounds memory)


class _Table:
    """Rows of one ParsedLog table, turned into DataFrame chunks every :data:`_CHUNK` rows."""

    __slots__ = ("rows", "chunks", "n", "keep")

    def __init__(self, keep: bool = True) -> None:
        self.rows: list[dict] = []
        self.chunks: list[pd.DataFrame] = []
        self.n = 0
        self.keep = keep  # False: count the rows only

    def append(self, row: dict) -> None:
        self.n += 1
        if not self.keep:
            return
        self.rows.append(row)
        if len(self.rows) >= _CHUNK:
            self.chunks.append(pd.DataFrame(self.rows))
            self.rows = []

    def frame(self, lead: list[str]) -> pd.DataFrame:
        if self.rows:
            self.chunks.append(pd.DataFrame(self.rows))
            self.rows = []
        if not self.chunks:
            return _frame([], lead)
        df = self.chunks[0] if len(self.chunks) == 1 else pd.concat(self.chunks, ignore_index=True, sort=False)
        self.chunks = []
        return _frame(df, lead)


def _lookahead(lines: Iterable[str]) -> Iterator[tuple[str, bool]]:
    """(line, is_last) pairs without reading the whole input."""
    it = iter(lines)
    try:
        prev = next(it)
    except StopIteration:
        return
    for cur in it:
        yield prev, False
        prev = cur
    yield prev, True


def parse_lines(lines: Iterable[str], *, last_line_complete: bool | None = True, progress: Callable[[int], None] | None = None, rows: bool = True) -> ParsedLog:
    """Parse cuzk-format log lines (any mix, any order) into a :class:`ParsedLog`.

    Streams: the lines are read one at a time (an open file is never read whole) and rows are
    kept as DataFrame chunks, so memory grows with the records found, not with the file; time is
    linear in the number of lines.

    Args:
        lines: physical lines (with or without trailing newlines), e.g. an open text file.
        last_line_complete: True (default): the last line is complete. False: it is known to be
            cut (its last token is dropped and the record flagged ``truncated``). None: it may be
            cut (a file without a trailing newline; :func:`parse_file` sets this): its last token is
            kept when it is a complete ``key=value``, else dropped and the record flagged. Lines
            ending in ``...`` or ``…`` are always treated as cut.
        progress: called with the number of characters read, every few thousand lines (progress
            bars).
        rows: keep one row per record in ``timing``, ``ntt_h``, ``gpu_timing``, ``fin_timing``,
            ``pool`` and ``messages`` (default). False keeps only what :func:`partition_table`
            and :func:`to_events` need (the partition records and the TIMELINE rows) and counts
            the rest (``summary()`` is the same), so memory is bounded by the partition table
            and the timeline, not by the file; ``zkgpu parse`` uses it.

    Never raises on bad content: unknown lines are counted, unreadable records counted as
    malformed, values that are not finite or out of range dropped and counted (``bad_values``).
    """
    tables = {k: _Table(rows or k == "timeline") for k in ("timing", "ntt_h", "timeline", "gpu", "fin", "pool", "msgs")}
    timing, ntt_h, timeline = tables["timing"], tables["ntt_h"], tables["timeline"]
    gpu_t, fin_t, pool, msgs = tables["gpu"], tables["fin"], tables["pool"], tables["msgs"]
    counts = _Counts()
    grouper = _Grouper()
    unknown = 0
    examples: list[str] = []
    n_trunc = 0
    n_bad = 0
    n = 0
    chars = 0
    no_newline = False
    for raw, is_last in _lookahead(lines):
        n += 1
        lineno = n
        if progress is not None:
            chars += len(raw)
            if not n % 10_000:
                progress(chars)
                chars = 0
        if "\x1b" in raw:
            raw = _ANSI.sub("", raw)
        text = raw.rstrip("\r\n")
        if is_last and last_line_complete is not True and len(text) == len(raw):
            no_newline = True
        if not text.strip():
            continue
        maybe_cut = is_last and last_line_complete is None and len(text) == len(raw)
        cut_line = (is_last and last_line_complete is False) or text.rstrip().endswith(("...", "…"))
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
        if len(segs) > 1:
            counts.merged += len(segs)
        ts, level = _prefix_info(prefix) if prefix else (None, None)
        for j, (marker, body, cut_next) in enumerate(segs):
            last = j == len(segs) - 1
            truncated = cut_next or (cut_line and last)
            mc = maybe_cut and last and not truncated
            raw_text = (marker + body + (ellipsis if last else "")).strip()
            if marker == "TIMELINE,":
                row = _parse_timeline(marker + body, truncated, counts, mc)
                if row is None:
                    n_bad += 1
                    n_trunc += truncated
                    continue
                n_trunc += bool(row["truncated"])
                row["line"] = lineno
                timeline.append(row)
                continue
            stripped = body.strip() if not (truncated or mc) else body.lstrip()
            if marker == "CUZK_TIMING:":
                row = _parse_cuzk_timing(stripped, truncated, counts, mc)
                if row is None:
                    n_bad += 1
                    n_trunc += truncated
                    continue
                n_trunc += bool(row["truncated"])
                row["line"] = lineno
                row["text"] = raw_text
                timing.append(row)
                if row["kind"] in _GROUPED_KINDS:
                    grouper.add(row["kind"], row, lineno)
                continue
            fields, words, tr = _kv_tokens(stripped, truncated, counts, mc)
            n_trunc += tr
            if marker == "CUZK_NTT_H:":
                if not fields:
                    n_bad += 1
                    continue
                row = {f"{k}_ms" if not k.endswith("_ms") else k: v for k, v in fields.items()}
                row.update(line=lineno, truncated=tr, text=raw_text)
                ntt_h.append(row)
                grouper.add("ntt_h", row, lineno)
                continue
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
    if progress is not None and chars:
        progress(chars)
    return ParsedLog(
        timing=timing.frame(["line", "kind", "gpu_tid", "truncated", "text"]),
        ntt_h=ntt_h.frame(["line", "truncated", "text"]),
        timeline=timeline.frame(["line", "t_ms", "event", "job", "detail", "worker", "partition", "gpu_ms", "synth_ms", "truncated"]),
        gpu_timing=gpu_t.frame(["line", "ts", "level", "what", "truncated"]),
        fin_timing=fin_t.frame(["line", "ts", "level", "what", "truncated"]),
        pool=pool.frame(["line", "ts", "level", "event", "what", "truncated"]),
        messages=msgs.frame(["line", "ts", "level", "what", "truncated"]),
        n_lines=n,
        unknown_count=unknown,
        unknown_examples=examples,
        truncated_count=n_trunc,
        malformed_count=n_bad,
        dropped_fields=counts.dropped_fields,
        bad_values=counts.bad_values,
        merged_count=counts.merged,
        no_final_newline=no_newline,
        _records=grouper.records,
        _counts={k: t.n for k, t in tables.items()},
    )


#: files above this size get a progress bar in :func:`parse_file` when ``progress=True``
PROGRESS_MIN_BYTES = 8 << 20


def parse_file(path: str | Path, *, progress: bool = False, rows: bool = True) -> ParsedLog:
    """Parse a log file (UTF-8, undecodable bytes replaced), streaming it line by line.

    A last line without a trailing newline may be cut (a log still being written): its last token
    is kept when it is a complete ``key=value``, else dropped and the record flagged
    ``truncated``; ``summary()["no_final_newline"]`` says so.

    Args:
        progress: show a tqdm progress bar (stderr, bytes) for files of at least
            :data:`PROGRESS_MIN_BYTES`.
        rows: see :func:`parse_lines` (False: memory bounded by the partition table and the
            timeline).

    Raises:
        FileNotFoundError: ``path`` does not exist (or is not a file).
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"log file not found: {p}")
    size = p.stat().st_size
    bar = tqdm(total=size, unit="B", unit_scale=True, desc=p.name, file=sys.stderr, leave=False) if progress and size >= PROGRESS_MIN_BYTES else None
    try:
        with open(p, encoding="utf-8", errors="replace", newline="") as f:
            return parse_lines(f, last_line_complete=None, progress=bar.update if bar is not None else None, rows=rows)
    finally:
        if bar is not None:
            bar.close()


# ----------------------------------------------------------------------------------------------
# Grouping CUZK_TIMING lines into partitions


class _Grouper:
    """Online grouping of per-partition CUZK_TIMING / CUZK_NTT_H rows into records (module
    docstring), fed in line order while parsing, so only the records are kept.

    Linear time: a record that cannot take a kind now never can again (kinds only accumulate), so
    each kind keeps a queue of candidate records, oldest first, and drops ineligible ones from its
    front as it meets them; every record enters each queue once.
    """

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
        sub = t[t["kind"].isin(_GROUPED_KINDS)]
        for pos, r in zip(sub.index, sub.to_dict("records")):
            items.append((int(r["line"]), int(pos), r["kind"], r))
    nh = parsed.ntt_h
    if len(nh):
        for pos, r in enumerate(nh.to_dict("records")):
            items.append((int(r["line"]), 10**12 + pos, "ntt_h", r))
    items.sort(key=lambda x: (x[0], x[1]))
    g = _Grouper()
    for line, _, kind, r in items:
        g.add(kind, r, line)
    return g.records


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
    df = df[lead + [c for c in df.columns if c not in lead]]
    for c in (*PARTITION_COLUMNS, *_EXTRA_PARTITION_COLUMNS):
        df[c] = pd.to_numeric(df[c], errors="coerce").astype("float64")
    df["record"] = df["record"].astype("int64")
    tid = pd.to_numeric(df["gpu_tid"], errors="coerce").astype("float64")
    df["gpu_tid"] = tid.where(tid == np.floor(tid)).astype("Int64")
    df["first_line"] = pd.to_numeric(df["first_line"], errors="coerce").astype("Int64")
    df["last_line"] = pd.to_numeric(df["last_line"], errors="coerce").astype("Int64")
    df["truncated"] = df["truncated"].fillna(False).astype(bool)
    parsed._partitions = df.reset_index(drop=True)
    return parsed._partitions.copy()


# ----------------------------------------------------------------------------------------------
# Event table


def _ns(ms: float) -> int:
    return int(round(float(ms) * 1e6))


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


_PAIRS = {"SYNTH_START": ("SYNTH_END", "synthesize"), "GPU_QUEUE": ("GPU_PICKUP", "gpu_queue"), "GPU_START": ("GPU_END", "prove")}
_ENDS = {v[0]: (k, v[1]) for k, v in _PAIRS.items()}


def _opt_int(x) -> int | None:
    if x is None or x is pd.NA or (isinstance(x, float) and x != x):
        return None
    return int(x)


def _column(tl: pd.DataFrame, name: str) -> list:
    if name not in tl.columns:
        return [None] * len(tl)
    col = tl[name]
    if name in ("worker", "partition"):
        return [None if v is pd.NA else int(v) for v in col.astype("Int64")]
    if name in ("gpu_ms", "synth_ms"):
        return pd.to_numeric(col, errors="coerce").astype("float64").tolist()
    return col.astype("string").fillna("").tolist()


def _pair_timeline(tl: pd.DataFrame) -> tuple[list[tuple], list[dict], dict[str, int]]:
    """Pair TIMELINE start/end records (SYNTH_START/SYNTH_END, GPU_QUEUE/GPU_PICKUP,
    GPU_START/GPU_END) of one job and partition, first in first out, **within one worker**: an end
    and a start that both name a worker pair only when it is the same worker (GPU_QUEUE, which has
    none, pairs with any GPU_PICKUP).

    Returns ``(pairs, GPU_START records in time order, counts)``; a pair is ``(phase, job,
    partition, start worker, end worker, start t_ms, end t_ms, gpu_ms, synth_ms)`` and a GPU_START
    record a dict of ``t_ms, job, partition, worker``. counts: ``duplicate_starts`` (a start
    repeating an open start of the same job, partition and worker: dropped), ``unpaired_starts``,
    ``unpaired_ends`` and ``cross_worker_ends`` (ends left unpaired because the open starts belong
    to another worker; also in ``unpaired_ends``).
    """
    counts = {"duplicate_starts": 0, "unpaired_starts": 0, "unpaired_ends": 0, "cross_worker_ends": 0}
    pairs: list[tuple] = []
    starts: list[dict] = []
    if not len(tl):
        return pairs, starts, counts
    tl = tl.sort_values(["t_ms", "line"], kind="stable")
    cols = zip(tl["t_ms"].astype("float64").tolist(), *(_column(tl, c) for c in ("event", "job", "partition", "worker", "gpu_ms", "synth_ms")))
    open_: dict[tuple, list[tuple]] = defaultdict(list)
    for t, ev, job, part, w, gms, sms in cols:
        if ev in _PAIRS:
            q = open_[(ev, job, part)]
            if any(ws == w for _, ws in q):
                counts["duplicate_starts"] += 1
                continue
            q.append((t, w))
            if ev == "GPU_START":
                starts.append({"t_ms": t, "job": job, "partition": part, "worker": w})
        elif ev in _ENDS:
            sev, phase = _ENDS[ev]
            q = open_.get((sev, job, part))
            hit = None
            for i, (_, ws) in enumerate(q or ()):
                if w is None or ws is None or ws == w:
                    hit = i
                    break
            if hit is None:
                counts["unpaired_ends"] += 1
                if q:
                    counts["cross_worker_ends"] += 1
                continue
            ts, ws = q.pop(hit)
            pairs.append((phase, job, part, ws, w, ts, t, gms, sms))
    counts["unpaired_starts"] = sum(len(q) for q in open_.values())
    return pairs, starts, counts


def _timeline_events(parsed: ParsedLog, run: str, source: str) -> tuple[list[tuple], list[dict]]:
    """Event rows (:data:`_EVENT_FIELDS` tuples) of the paired TIMELINE records
    (:func:`_pair_timeline`) and the GPU_START rows in time order (each with ``_gpart``, its
    partition in the event table)."""
    tl = parsed.timeline
    pairs, starts, _ = parsed._paired()
    rows: list[tuple] = []
    if not len(tl):
        return rows, starts
    parts = [int(p) for p in tl["partition"].dropna()] if "partition" in tl else []
    stride = (max(parts) + 1) if parts else 1
    job_rank: dict[str, int] = {}
    for j in _column(tl.sort_values(["t_ms", "line"], kind="stable"), "job"):
        job_rank.setdefault(j, len(job_rank))

    def gpart(job: str, p: int | None):
        return pd.NA if p is None else job_rank[job] * stride + p

    for phase, job, part, ws, we, ts, te, gms, sms in pairs:
        w = we if we is not None else ws
        detail = [f"job={job}"]
        if part is not None:
            detail.append(f"partition={part}")
        for k, v in (("gpu_ms", gms), ("synth_ms", sms)):
            if v == v and 0.0 <= v <= _MAX_MS:
                detail.append(f"{k}={v:g}")
        rows.append((run, source, pd.NA if w is None else w, pd.NA, gpart(job, part), phase, _ns(ts), _ns(te), ",".join(detail)))
    for s in starts:
        s["_gpart"] = gpart(s["job"], s["partition"])
    return rows, starts


#: the fields of an event row as :func:`to_events` builds it (tuples: a million events stay small)
_EVENT_FIELDS = ("run", "source", "worker", "gpu", "partition", "phase", "start_ns", "end_ns", "detail")


def _record_events(rec: dict, t0_ns: int, run: str, source: str, worker, partition, gpu, placement: str) -> tuple[list[tuple], int]:
    """Intervals of one partition record anchored at t0 (entry of the start function).

    Returns (rows as :data:`_EVENT_FIELDS` tuples, lock release time in ns)."""
    g = lambda k: _val(rec, k)
    rows: list[tuple] = []
    detail_base = f"placement={placement},record={rec['record']}"

    def add(phase, s, dur_ms, extra="", on_gpu=False):
        if np.isnan(dur_ms):
            return
        rows.append((run, source, worker, gpu if on_gpu else pd.NA, partition, phase, int(s), int(s) + _ns(dur_ms), detail_base + (("," + extra) if extra else "")))

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

    1. **TIMELINE** events are paired per (job, cuzk partition) first-in-first-out, and only
       within one worker when both name one (:func:`_pair_timeline`):
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

    Returns: a DataFrame normalized by :func:`zkgpu.events.normalize_events`, sorted by start_ns.
    """
    rows, starts = _timeline_events(parsed, run, source)
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
    df = pd.DataFrame.from_records(rows, columns=list(_EVENT_FIELDS))
    del rows
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


def _check_outputs(targets: dict[str, str | None]) -> None:
    """Every check on the output files of ``zkgpu parse``, before anything is read or written."""
    for opt, target in targets.items():
        if target is not None and not target.endswith((".parquet", ".csv")):
            raise CliError(f"{opt} {target}: the output must end in .parquet or .csv (e.g. {opt} events.parquet)")
    check_new_outputs(targets, "zkgpu parse", "give the event table and the partition table two names")


def _write_table(df: pd.DataFrame, target: str) -> None:
    path = Path(target)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "xb") as f:  # exclusive create: never overwrite
            if target.endswith(".parquet"):
                df.to_parquet(f, index=False)
            else:
                df.to_csv(f, index=False)
    except FileExistsError as exc:
        raise CliError(f"{target} appeared while parsing: zkgpu parse never overwrites a file (choose another name)") from exc
    except OSError as exc:
        path.unlink(missing_ok=True)
        raise CliError(f"cannot write {target}: {exc.strerror or exc} (choose another path)") from exc
    except BaseException:
        path.unlink(missing_ok=True)  # no half-written table
        raise


#: partitions ``zkgpu parse`` prints before summarizing the rest
SHOW_ROWS = 20


@click.command("parse", cls=OneLineCommand)
@click.argument("logfile", type=click.Path(exists=True, dir_okay=False))
@click.option("--out", "out", default=None, help="write the event table to X.parquet or X.csv")
@click.option("--partitions-out", default=None, help="also write the per-partition table (.parquet or .csv)")
@click.option("--run", "run", default=None, help="run name for the event table (default: file stem)")
@click.option("--rows", default=SHOW_ROWS, show_default=True, type=click.IntRange(min=0), help="partitions to print (medians of all are printed after them)")
@click.option("--progress/--no-progress", default=True, show_default=True, help="progress bar on stderr for files of 8 MB and more")
def parse_command(logfile: str, out: str | None, partitions_out: str | None, run: str | None, rows: int, progress: bool) -> None:
    """Parse a cuzk-format LOGFILE: print a per-partition summary and every count of records that
    were unknown, cut, malformed, merged or left unpaired."""
    _check_outputs({"--out": out, "--partitions-out": partitions_out})
    if not Path(logfile).is_file():
        raise CliError(f"{logfile} is not a regular file: give a log file (e.g. a saved copy of the stream)")
    try:
        parsed = parse_file(logfile, progress=progress, rows=False)
    except OSError as exc:
        raise CliError(f"cannot read {logfile}: {exc.strerror or exc}") from exc
    pt = partition_table(parsed)
    run = run or Path(logfile).stem
    cols = ["record", "prep_msm_ms", "mutex_wait_ms", "ntt_msm_h_ms", "barrier_wait_ms", "batch_add_ms", "tail_msm_ms", "gpu_total_ms", "mutex_held_ms"]
    click.echo(f"{logfile}: {parsed.n_lines} lines, {len(pt)} partitions")
    if len(pt):
        show = pt[cols].join(identity_check(pt)[["residual_ms"]])
        show = show.dropna(axis=1, how="all")
        fmt = lambda x: f"{x:g}"
        click.echo(show.head(rows).to_string(index=False, na_rep="-", float_format=fmt))
        if len(show) > rows:
            med = show.drop(columns=["record"]).median(numeric_only=True).to_frame("median of all").T
            click.echo(f"... {len(show) - rows} more partitions; medians over all {len(show)}:")
            click.echo(med.to_string(na_rep="-", float_format=fmt))
    s = parsed.summary()
    click.echo("records: " + ", ".join(f"{k}={v}" for k, v in s.items() if k not in ("lines", "unknown")))
    click.echo(f"unknown lines: {parsed.unknown_count}")
    events = to_events(parsed, run=run) if out is not None else None
    written: list[str] = []
    for target, df in ((out, events), (partitions_out, pt)):
        if target is None:
            continue
        try:
            _write_table(df, target)
        except BaseException:
            for done in written:  # all outputs or none: the first table goes if the second cannot be written
                Path(done).unlink(missing_ok=True)
            raise
        written.append(target)
    for target, df in ((out, events), (partitions_out, pt)):
        if target is not None:
            click.echo(f"wrote {len(df)} rows to {target}")


# ----------------------------------------------------------------------------------------------
# Synthetic logs and the parser benchmark

_SYNTH_SOURCE = Path(__file__).resolve().parent.parent / "data" / "nvidia-h200-20261129-record-2" / "logs" / "baseline.log"


def synthetic_log(path: str | Path, n_lines: int, *, template: str | Path | None = None) -> Path:
    """Write an ``n_lines``-line cuzk-format log made of copies of a recorded log (``template``,
    default the H200 recording's ``baseline.log``), each copy a new job (``<job>-<k>``) shifted in
    time, as a multi-job engine writes it; a stand-in for a day of cuzk logs.

    Raises:
        FileExistsError: ``path`` exists. FileNotFoundError: no template. ValueError: n_lines < 1.
    """
    if isinstance(n_lines, bool) or not isinstance(n_lines, int) or n_lines < 1:
        raise ValueError(f"n_lines must be a positive int, got {n_lines!r}")
    src = Path(template) if template is not None else _SYNTH_SOURCE
    if not src.is_file():
        raise FileNotFoundError(f"template log not found: {src}")
    lines = src.read_text(encoding="utf-8").splitlines()
    span = max((float(l.split(",", 2)[1]) for l in lines if l.startswith("TIMELINE,")), default=0.0) + 1.0
    out = Path(path)
    written = 0
    with open(out, "x", encoding="utf-8") as f:
        k = 0
        while written < n_lines:
            for line in lines[: n_lines - written]:
                if line.startswith("TIMELINE,"):
                    _, t, ev, job, rest = (line.split(",", 4) + [""])[:5]
                    line = f"TIMELINE,{float(t) + k * span:g},{ev},{job}-{k},{rest}"
                f.write(line + "\n")
            written += min(len(lines), n_lines - written)
            k += 1
    return out


#: log sizes of ``zkgpu bench parse`` (lines)
BENCH_PARSE_SIZES = (10_000, 30_000, 100_000, 300_000, 1_000_000)
#: the largest log ``zkgpu bench parse`` writes (lines; about 0.8 GB on disk)
BENCH_PARSE_MAX = 10_000_000


def _interrupt_on_sigterm(signum, frame) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def bench_parse(sizes: Iterable[int] = BENCH_PARSE_SIZES, *, workdir: str | Path | None = None) -> pd.DataFrame:
    """Time :func:`parse_file` (``rows=False``, as ``zkgpu parse``), :func:`partition_table` and
    :func:`to_events` on synthetic logs (:func:`synthetic_log`) of each size, smallest first.
    Returns one row per size: ``lines``, ``bytes``, ``parse_s``, ``partition_table_s``,
    ``to_events_s``, ``total_s`` (wall seconds), ``cpu_s`` (this process's CPU seconds for the
    three, which other load on the machine does not inflate), ``lines_per_s`` (lines / total_s),
    ``lines_per_cpu_s``, ``partitions``, ``events`` and ``peak_rss_mb`` (the process's peak
    resident memory so far, MB: ``ru_maxrss``, which never decreases, so sizes run smallest first).
    """
    import resource

    rows = []
    with tempfile.TemporaryDirectory(prefix="zkgpu-bench-parse-", dir=workdir) as tmp:
        for n in sorted(sizes):
            f = synthetic_log(Path(tmp) / f"{n}.log", int(n))
            c0, t0 = time.process_time(), time.perf_counter()
            parsed = parse_file(f, rows=False)
            t1 = time.perf_counter()
            pt = partition_table(parsed)
            t2 = time.perf_counter()
            ev = to_events(parsed)
            t3, c3 = time.perf_counter(), time.process_time()
            rows.append({"lines": parsed.n_lines, "bytes": f.stat().st_size, "parse_s": t1 - t0, "partition_table_s": t2 - t1,
                         "to_events_s": t3 - t2, "total_s": t3 - t0, "cpu_s": c3 - c0, "lines_per_s": parsed.n_lines / (t3 - t0),
                         "lines_per_cpu_s": parsed.n_lines / max(c3 - c0, 1e-9), "partitions": len(pt), "events": len(ev),
                         "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
            del parsed, pt, ev
            f.unlink()
    return pd.DataFrame(rows)


@click.command("parse", cls=OneLineCommand)
@click.option("--sizes", default=",".join(str(n) for n in BENCH_PARSE_SIZES), show_default=True, help="log sizes in lines, comma separated")
@click.option("--out", "out", default=None, help="write the table to this CSV file (default: print CSV to stdout)")
def bench_parse_command(sizes: str, out: str | None) -> None:
    """Log parser throughput (lines/s) on synthetic multi-job cuzk logs of 10k .. 1M lines: parse,
    partition table and event table, wall seconds and peak memory; CSV to stdout or --out. A CPU
    benchmark (no GPU needed)."""
    try:
        ns = [int(x) for x in sizes.split(",") if x.strip()]
    except ValueError:
        ns = []
    if not ns or min(ns) < 1:
        raise CliError(f"--sizes {sizes!r}: give positive line counts separated by commas (e.g. --sizes 10000,100000)")
    if max(ns) > BENCH_PARSE_MAX:
        raise CliError(f"--sizes {max(ns)}: at most {BENCH_PARSE_MAX} lines per log (about 0.8 GB of disk; choose a smaller size)")
    if out is not None:
        if not out.endswith(".csv"):
            raise CliError(f"--out {out}: the table is written as CSV, so the name must end in .csv (e.g. --out bench-parse.csv)")
        check_new_outputs({"--out": out}, "zkgpu bench parse")
    tmp_dir = tempfile.gettempdir()
    bytes_per_line = _SYNTH_SOURCE.stat().st_size / max(1, sum(1 for _ in open(_SYNTH_SOURCE, "rb")))
    need, free = int(1.2 * bytes_per_line * max(ns)), shutil.disk_usage(tmp_dir).free
    if need > free:
        raise CliError(f"--sizes {max(ns)}: the synthetic log needs about {need / 1e9:.1f} GB, {tmp_dir} has {free / 1e9:.1f} GB free (choose a smaller size or set TMPDIR)")
    main_thread = threading.current_thread() is threading.main_thread()
    old = signal.signal(signal.SIGTERM, _interrupt_on_sigterm) if main_thread else None  # SIGTERM removes the temporary log, as Ctrl-C does
    try:
        df = bench_parse(ns)
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, old)
    if out is None:
        click.echo(df.to_csv(index=False, float_format="%.4g"), nl=False)
    else:
        _write_table(df, out)
        click.echo(df.to_string(index=False, float_format=lambda x: f"{x:.4g}"))
        click.echo(f"wrote {out}")
