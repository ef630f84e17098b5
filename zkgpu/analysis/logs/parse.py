"""A stream of cuzk-format log lines → :class:`~zkgpu.analysis.logs.parsed.ParsedLog`, in linear time and bounded memory."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm import tqdm

from zkgpu.analysis.logs.group import GROUPED_KINDS, Grouper
from zkgpu.analysis.logs.lines import (
    ANSI,
    POOL_EVENTS,
    Counts,
    kv_tokens,
    parse_cuzk_timing,
    parse_timeline,
    prefix_info,
    split_segments,
    typed_frame,
)
from zkgpu.analysis.logs.parsed import ParsedLog

__all__ = ["parse_lines", "parse_file", "read_lines", "CutLine", "PROGRESS_MIN_BYTES", "MAX_LINE_CHARS"]

#: the longest physical line read (characters; a cuzk record is under 1 kB): the rest of a longer line is skipped
#: unread into memory, and the line is parsed as cut and counted in ``summary()["overlong"]``
MAX_LINE_CHARS = 1 << 20


class CutLine(str):
    """The first :data:`MAX_LINE_CHARS` characters of a longer physical line (:func:`read_lines`); ``ended``: the
    physical line had a line end (False: it ran to the end of the input)."""

    ended: bool = False


def read_lines(f: Any, limit: int = MAX_LINE_CHARS) -> Iterator[str]:
    """Physical lines of an open text file, each at most ``limit`` characters (a longer one as a :class:`CutLine`)."""
    while True:
        line = f.readline(limit + 1)
        if not line:
            return
        if len(line) <= limit or line.endswith(("\n", "\r")):
            yield line
            continue
        cut = CutLine(line[:limit])
        while True:
            rest = f.readline(limit)
            if not rest or rest.endswith(("\n", "\r")):
                cut.ended = bool(rest)
                break
        yield cut

_CHUNK = 8192  # rows per table kept before they become a DataFrame chunk (bounds memory)
_MAX_SHAPES = 64  # distinct field sets in one chunk above which it is built from dicts (a frame per set would be slower)


class _Table:
    """Rows of one ParsedLog table as tuples grouped by keys, turned into DataFrame chunks every :data:`_CHUNK` rows."""

    __slots__ = ("shapes", "chunks", "n", "keep", "pending", "names")

    def __init__(self, keep: bool = True) -> None:
        self.shapes: dict[tuple, list[tuple]] = {}
        self.chunks: list[pd.DataFrame] = []
        self.n = 0
        self.pending = 0
        self.keep = keep  # False: count the rows only
        self.names: dict[str, None] = {}  # column names in first-seen order

    def append(self, row: dict) -> None:
        self.n += 1
        if not self.keep:
            return
        keys = tuple(row)
        rows = self.shapes.get(keys)
        if rows is None:
            rows = self.shapes[keys] = []
            for k in keys:
                self.names.setdefault(k, None)
        rows.append((self.n, *row.values()))
        self.pending += 1
        if self.pending >= _CHUNK:
            self._flush()

    def _flush(self) -> None:
        if not self.pending:
            return
        shapes, self.shapes, self.pending = self.shapes, {}, 0
        if len(shapes) > _MAX_SHAPES:  # ragged rows (damage, or a hostile log): one frame from dicts, not a frame per shape
            rows = sorted(((r[0], dict(zip(keys, r[1:], strict=True))) for keys, rs in shapes.items() for r in rs), key=lambda x: x[0])
            self.chunks.append(pd.DataFrame([r for _, r in rows]))
            return
        frames = [pd.DataFrame(rows, columns=["_seq", *keys]) for keys, rows in shapes.items()]
        df = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True, sort=False).sort_values("_seq", kind="stable")
        self.chunks.append(df[[k for k in self.names if k in df.columns]].reset_index(drop=True))

    def frame(self, lead: list[str]) -> pd.DataFrame:
        self._flush()
        if not self.chunks:
            return typed_frame([], lead)
        df = self.chunks[0] if len(self.chunks) == 1 else pd.concat(self.chunks, ignore_index=True, sort=False)
        self.chunks = []
        return typed_frame(df, lead)


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


def parse_lines(lines: Iterable[str], *, last_line_complete: bool | None = True, progress: Callable[[int], object] | None = None, rows: bool = True,
                timing_rows: bool = True) -> ParsedLog:
    """Parse cuzk-format log lines (any mix, any order) into a :class:`ParsedLog`, streaming.

    Args:
        lines: physical lines, e.g. an open text file.
        last_line_complete: True; False (the last line is cut); None (it may be cut: kept if a complete ``key=value``).
        progress: called with characters read, every few thousand lines.
        rows: False keeps only partition records and TIMELINE rows (``summary()`` unchanged).
        timing_rows: False keeps ``CUZK_TIMING`` records only as partition records.

    Never raises on bad content: it is counted (:meth:`ParsedLog.summary`)."""
    tables = {k: _Table((rows and (timing_rows or k != "timing")) or k == "timeline") for k in ("timing", "ntt_h", "timeline", "gpu", "fin", "pool", "msgs")}
    timing, ntt_h, timeline = tables["timing"], tables["ntt_h"], tables["timeline"]
    gpu_t, fin_t, pool, msgs = tables["gpu"], tables["fin"], tables["pool"], tables["msgs"]
    counts = Counts()
    grouper = Grouper()
    unknown = 0
    examples: list[str] = []
    n_trunc = 0
    cut_before_last = 0  # records flagged truncated on a line other than the input's last
    n_bad = 0
    undecodable = 0
    overlong = 0
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
        overlong_line = isinstance(raw, CutLine) or len(raw) > MAX_LINE_CHARS + 2  # + its line end
        if overlong_line:
            ended = raw.ended if isinstance(raw, CutLine) else raw.endswith(("\n", "\r"))
            raw = str(raw[:MAX_LINE_CHARS]) + ("\n" if ended else "")
            overlong += 1
        if "\ufffd" in raw or "\x00" in raw:  # bytes that were not UTF-8 (replaced by parse_file), or NULs
            undecodable += 1
        if "\x1b" in raw:
            raw = ANSI.sub("", raw)
        text = raw.rstrip("\r\n")
        if is_last and last_line_complete is not True and len(text) == len(raw):
            no_newline = True
        if not text.strip():
            continue
        maybe_cut = is_last and last_line_complete is None and len(text) == len(raw) and not overlong_line
        cut_line = (is_last and last_line_complete is False) or overlong_line or text.rstrip().endswith(("...", "…"))
        ellipsis = ""
        if text.rstrip().endswith("..."):
            text, ellipsis = text.rstrip()[:-3], "..."
        elif text.rstrip().endswith("…"):
            text, ellipsis = text.rstrip()[:-1], "…"
        prefix, segs = split_segments(text)
        if not segs:
            unknown += 1
            if len(examples) < 5:
                examples.append(text[:200])
            continue
        if len(segs) > 1:
            counts.merged += len(segs)
        ts, level = prefix_info(prefix) if prefix else (None, None)
        for j, (marker, body, cut_next) in enumerate(segs):
            last = j == len(segs) - 1
            truncated = cut_next or (cut_line and last)
            mc = maybe_cut and last and not truncated
            raw_text = (marker + body + (ellipsis if last else "")).strip()
            stripped = body.strip() if not (truncated or mc) else body.lstrip()
            if marker in ("TIMELINE,", "CUZK_TIMING:"):
                is_tl = marker == "TIMELINE,"
                row = parse_timeline(marker + body, truncated, counts, mc) if is_tl else parse_cuzk_timing(stripped, truncated, counts, mc)
                if row is None:  # malformed
                    n_bad += 1
                    n_trunc += truncated
                    continue
                n_trunc += bool(row["truncated"])
                cut_before_last += bool(row["truncated"]) and not is_last
                row["line"] = lineno
                if is_tl:
                    timeline.append(row)
                    continue
                row["text"] = raw_text
                timing.append(row)
                if row["kind"] in GROUPED_KINDS:
                    grouper.add(row["kind"], row, lineno)
                continue
            fields, words, tr = kv_tokens(stripped, truncated, counts, mc)
            n_trunc += tr
            cut_before_last += tr and not is_last and (marker != "CUZK_NTT_H:" or bool(fields))
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
            elif marker in POOL_EVENTS:
                row["event"] = POOL_EVENTS[marker]
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
        undecodable_count=undecodable,
        overlong_count=overlong,
        cut_before_last=cut_before_last,
        _records=grouper.records,
        _counts={k: t.n for k, t in tables.items()},
    )


#: files above this size get a progress bar in :func:`parse_file` when ``progress=True``
PROGRESS_MIN_BYTES = 8 << 20


def parse_file(path: str | Path, *, progress: bool = False, rows: bool = True, timing_rows: bool = True) -> ParsedLog:
    """Parse a log file (UTF-8, bad bytes replaced) line by line; a last line without newline may be cut. ``progress``:
    a tqdm bar for files of at least :data:`PROGRESS_MIN_BYTES`; ``rows``, ``timing_rows``: as :func:`parse_lines`.
    Raises FileNotFoundError: not a file."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"log file not found: {p}")
    size = p.stat().st_size
    bar = tqdm(total=size, unit="B", unit_scale=True, desc=p.name, file=sys.stderr, leave=False) if progress and size >= PROGRESS_MIN_BYTES else None
    try:
        with open(p, encoding="utf-8", errors="replace", newline="") as f:
            return parse_lines(read_lines(f), last_line_complete=None, progress=bar.update if bar is not None else None, rows=rows,
                               timing_rows=timing_rows)
    finally:
        if bar is not None:
            bar.close()

