"""One record of a cuzk-format log → a row: the formats, and how damaged text is read.

Formats (curio ``groth16_cuda.cu``, ``groth16_ntt_h.cu``, cuzk ``engine.rs``, ``pinned_pool.rs``): ``CUZK_TIMING: k=v
...``, ``CUZK_NTT_H: ...``, ``TIMELINE,<ms>,<EVENT>,<job>,<detail>``, ``GPU_TIMING`` / ``FIN_TIMING`` tracing lines,
pinned-pool and engine messages. ANSI codes and prefixes are dropped, several markers on a line are split, cut records
flagged ``truncated``, durations converted to float ms, bad values dropped and counted. Nothing raises on bad content.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

# CSI sequences (colours) and OSC sequences (window titles) ended by BEL or ST (ESC \\); an OSC body stops at the
# next ESC, so a line of many unterminated OSC openers is scanned once, not once per opener (that was quadratic)
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
_TS = re.compile(r"\d{4}-\d\d-\d\d[T ][0-9:.,]+(?:Z|[+-]\d\d:?\d\d)?")
_LEVEL = re.compile(r"\b(TRACE|DEBUG|INFO|WARN|WARNING|ERROR)\b")
_KEY = re.compile(r"\w+")
_NUM = re.compile(r"^[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?$")

#: Message texts (after the marker) recognized besides the key=value records.
POOL_EVENTS = {
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
    *POOL_EVENTS,
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


_UNIT_MS = {"ns": 1e-6, "us": 1e-3, "\u00b5s": 1e-3, "\u03bcs": 1e-3, "ms": 1.0, "s": 1e3}
_NUM_UNIT = re.compile(r"^([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)(ns|us|\u00b5s|\u03bcs|ms|s)$")
MAX_MS = 1e9  # ~11.6 days: a longer phase duration is a corrupt value, not a measurement
_MAX_ABS = 1e15  # any other number beyond this is a corrupt value (byte counts of a day fit easily)
_MAX_T_MS = 1e12  # TIMELINE times: ms since engine start, about 31 years
_BAD = object()  # a value that is not finite or out of range (counted, the field dropped)
_ID_KEYS = frozenset({"gpu_tid", "worker", "partition", "gpu", "worker_id"})  # must be integers in [0, _MAX_ID]
_MAX_ID = 2**31 - 1  # ids are small counters; a larger or negative one is damage (and would collide or overflow in to_events)


def _value(v: str, key: str = "") -> float | str | object:
    """One value: quoted string, float, duration with unit (-> ms), or word; :data:`_BAD` when out of range or mistyped."""
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
    if key in _ID_KEYS and (x != int(x) or not 0 <= x <= _MAX_ID):  # a worker 0.5, partition -5 or 1e15: a corrupt id
        return _BAD
    if key.endswith("_ms"):
        return x if 0.0 <= x <= MAX_MS else _BAD
    return x if abs(x) <= _MAX_ABS else _BAD


#: memo of :func:`_value` for short values (a log repeats a few thousand distinct ``key=value`` pairs a million times):
#: (key, raw) → value, at most :data:`_MEMO_SIZE` entries of values up to :data:`_MEMO_CHARS` characters (emptied when
#: full, so memory stays bounded whatever the log holds); :func:`_value` is pure, so the memo changes no result
_MEMO_SIZE = 1 << 16
_MEMO_CHARS = 48
_VALUES: dict[tuple[str, str], object] = {}
_KEYS: dict[str, bool] = {}  # the same for _kv's key check (names of at most _MEMO_CHARS characters)
_MISS = object()
_TOKENS: dict[str, tuple] = {}  # whole ``key=value`` tokens → (key, value), or _NOT_KV
_NOT_KV = ("", None)


#: field names a record cannot set, because its row (or the partition record it joins) has a column of that name:
#: the field is dropped and counted (``CUZK_TIMING: prep_msm_ms=5 kind=x`` re-kinded the line, ``_kinds=1`` crashed the
#: grouping, ``last_line=9`` moved a partition); names starting with ``_`` likewise
_RESERVED_KV = frozenset({"line", "kind", "text", "truncated", "ts", "level", "what", "event", "record", "first_line", "last_line"})
_RESERVED_TL = frozenset({"line", "t_ms", "event", "detail", "truncated", "flags"})  # TIMELINE's kind= and job= are fields


def _store_field(target: dict, key: str, raw: str, reserved: frozenset[str], counts: Counts | None) -> None:
    """Store ``key``'s value in ``target`` unless bad, reserved, or past the name cap (counted); a repeat keeps the later."""
    if len(raw) <= _MEMO_CHARS:  # the few distinct short values of a log, read once each
        v = _VALUES.get((key, raw), _MISS)
        if v is _MISS:
            if len(_VALUES) >= _MEMO_SIZE:
                _VALUES.clear()
            v = _VALUES[(key, raw)] = _value(raw, key)
    else:
        v = _value(raw, key)
    _store_value(target, key, v, reserved, counts)


def _store_value(target: dict, key: str, v: object, reserved: frozenset[str], counts: Counts | None) -> None:
    """The part of :func:`_store_field` after the value is read."""
    if v is _BAD:
        if counts is not None:
            counts.bad_values += 1
        return
    if key in reserved or key.startswith("_"):
        if counts is not None:
            counts.dropped_fields += 1
        return
    if counts is not None and not counts.keep_name(key):
        return
    if key in target and counts is not None:
        counts.dropped_fields += 1
    target[key] = v

#: distinct field names one parse keeps as columns (a real cuzk log has a few dozen); the fields of further names are
#: dropped and counted, so a log of ever-new names (damage, or a hostile file) cannot grow the tables by a column per
#: line (quadratic time and memory: 4k such lines took 1.8 s and 0.7 GB)
MAX_FIELD_NAMES = 256


class Counts:
    """Per-parse counters of everything dropped or merged (see :meth:`ParsedLog.summary`), and the field names kept."""

    __slots__ = ("dropped_fields", "bad_values", "merged", "names", "bodies")

    def __init__(self) -> None:
        self.dropped_fields = 0
        self.bad_values = 0
        self.merged = 0
        self.names: set[str] = set()
        # kv_tokens of whole record bodies read before in this parse, whole and clean (nothing dropped or counted):
        # cuzk repeats its lines' text (integer ms, a few workers and partitions), so most bodies are read once
        self.bodies: dict[str, tuple[dict, list[str]]] = {}

    def keep_name(self, name: str) -> bool:
        """Whether a field called ``name`` is kept: a name seen before, or a new one while fewer than
        :data:`MAX_FIELD_NAMES` are; otherwise the field is dropped and counted in ``dropped_fields``."""
        if name in self.names:
            return True
        if len(self.names) < MAX_FIELD_NAMES:
            self.names.add(name)
            return True
        self.dropped_fields += 1
        return False


def _kv(tok: str) -> tuple[str, str] | None:
    """``(key, value)`` of a token ``key=value``, else None; linear time, no regex over the value."""
    key, sep, value = tok.partition("=")
    if not (sep and value):
        return None
    ok = _KEYS.get(key)
    if ok is None:
        ok = _KEY.fullmatch(key) is not None
        if len(key) <= _MEMO_CHARS:
            if len(_KEYS) >= _MEMO_SIZE:
                _KEYS.clear()
            _KEYS[key] = ok
    return (key, value) if ok else None


def _complete_kv(tok: str) -> bool:
    return _kv(tok) is not None


def kv_tokens(body: str, truncated: bool, counts: Counts | None = None, maybe_cut: bool = False) -> tuple[dict, list[str], bool]:
    """Split ``body`` into (fields, leading words, truncated). ``truncated``: the last token is dropped (counted).
    ``maybe_cut``: it is kept only when a complete ``key=value``."""
    if counts is None or truncated or maybe_cut or len(body) > _BODY_CHARS:
        return _kv_tokens(body, truncated, counts, maybe_cut)
    hit = counts.bodies.get(body)  # read before in this parse, whole and clean: the same fields
    if hit is not None:
        return dict(hit[0]), list(hit[1]), False
    before = (counts.dropped_fields, counts.bad_values)
    fields, words, truncated = _kv_tokens(body, truncated, counts, maybe_cut)
    if not truncated and before == (counts.dropped_fields, counts.bad_values):  # nothing dropped or counted
        if len(counts.bodies) >= _MEMO_BODIES:
            counts.bodies.clear()
        counts.bodies[body] = (dict(fields), list(words))
    return fields, words, truncated


#: bodies :func:`kv_tokens` remembers per parse (at most this many, of at most this many characters: bounded memory)
_MEMO_BODIES = 1 << 14
_BODY_CHARS = 512


def _kv_tokens(body: str, truncated: bool, counts: Counts | None, maybe_cut: bool) -> tuple[dict, list[str], bool]:
    """:func:`kv_tokens` without the memo."""
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
        kv = _TOKENS.get(t)  # a short token seen before: its key and value, read once (pure, so no result changes)
        if kv is None:
            pair = _kv(t)
            kv = (pair[0], _value(pair[1], pair[0])) if pair is not None else _NOT_KV
            if len(t) <= _MEMO_CHARS:
                if len(_TOKENS) >= _MEMO_SIZE:
                    _TOKENS.clear()
                _TOKENS[t] = kv
        if kv is not _NOT_KV:
            _store_value(fields, kv[0], kv[1], _RESERVED_KV, counts)
        elif not fields:
            words.append(t)
        elif i == n - 1:
            truncated = True
            if counts is not None:
                counts.dropped_fields += 1
        elif counts is not None:
            counts.dropped_fields += 1  # junk in the middle of the fields
    return fields, words, truncated


def prefix_info(prefix: str) -> tuple[str | None, str | None]:
    ts = _TS.search(prefix)
    lv = _LEVEL.search(prefix)
    return (ts.group(0) if ts else None), (lv.group(1) if lv else None)


def typed_frame(rows: list[dict] | pd.DataFrame, lead: list[str]) -> pd.DataFrame:
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
            df[c] = field_column(df[c])
    return df


def field_column(col: pd.Series) -> pd.Series:
    """A column of record fields, one type throughout: float64 when every present value is a number, else string
    (a field that is ``abc`` on one line and ``3`` on another; a mixed object column would fail in Parquet)."""
    num = pd.to_numeric(col, errors="coerce")
    if num.notna().sum() == col.notna().sum():
        return num.astype("float64")
    return col.map(lambda v: f"{v:g}" if isinstance(v, float) and v == v else v).astype("string")  # 3, not 3.0


def parse_cuzk_timing(body: str, truncated: bool, counts: Counts | None = None, maybe_cut: bool = False) -> dict | None:
    m = _POOL_THRESHOLD.match(body)
    if m:
        return {"kind": "pool_threshold", "gpu": int(m.group(1)), "truncated": truncated}
    m = _DA_CACHE.match(body)
    if m:
        return {"kind": "d_a_cache", "d_a_cache_mib": float(m.group(1)), "gpu": int(m.group(2)), "truncated": truncated}
    fields, words, truncated = kv_tokens(body, truncated, counts, maybe_cut)
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


def parse_timeline(seg: str, truncated: bool, counts: Counts | None = None, maybe_cut: bool = False) -> dict | None:
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
            _store_field(row, k, v, _RESERVED_TL, counts)
        else:
            flags.append(it)
    if flags:
        row["flags"] = " ".join(flags)
    return row


def split_segments(text: str) -> tuple[str, list[tuple[str, str, bool]]]:
    """Split an ANSI-stripped line into (prefix, [(marker, body, cut_by_next_marker)]); a fast path for one marker."""
    found = ""
    for marker in MARKERS:
        if marker in text:
            if found:
                found = ""
                break
            found = marker
    else:
        if not found:
            return text, []
    if found:
        i = text.find(found)
        if text.find(found, i + 1) < 0:
            return text[:i], [(found, text[i + len(found):], False)]
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

