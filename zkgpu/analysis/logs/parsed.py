"""What a parse of a cuzk-format log found: :class:`ParsedLog` (built by
:func:`zkgpu.analysis.logs.parse.parse_lines`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from zkgpu.analysis.logs.timeline import pair_timeline

__all__ = ["ParsedLog"]

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
        ``key=value`` amid the fields, earlier values of a key given twice in one record, and fields
        whose name came after :data:`zkgpu.analysis.logs.lines.MAX_FIELD_NAMES` others. bad_values: values dropped because they were not finite
        or out of range (a duration outside [0, 1e9] ms, another number beyond ±1e15).
        merged_count: records that shared one physical line with other records (interleaved
        writers). no_final_newline: the input's last line had no line end (it may be cut).
        undecodable_count: lines holding bytes that were not UTF-8 (replaced by U+FFFD) or NUL bytes
        (a binary file, or a log damaged on disk). overlong_count: lines longer than
        :data:`zkgpu.analysis.logs.parse.MAX_LINE_CHARS`, read as cut at that length. cut_before_last: records
        flagged ``truncated`` on a line other than the input's last (kept whether or not their rows are; None for a
        ParsedLog built by hand).

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
    undecodable_count: int = 0
    overlong_count: int = 0
    cut_before_last: int | None = None
    _pairing: tuple | None = field(default=None, repr=False, compare=False)
    _partitions: pd.DataFrame | None = field(default=None, repr=False, compare=False)
    _records: list[dict] | None = field(default=None, repr=False, compare=False)
    _counts: dict[str, int] | None = field(default=None, repr=False, compare=False)

    def pairing(self) -> dict[str, int]:
        """How the TIMELINE start/end records pair (:func:`pair_timeline`): ``pairs``,
        ``duplicate_starts``, ``unpaired_starts``, ``unpaired_ends``, ``cross_worker_ends``."""
        pairs, _, counts = self._paired()
        return {"pairs": len(pairs), **counts}

    def _paired(self) -> tuple[list, list, dict]:
        if self._pairing is None:  # computed once (summary() and to_events() both need it)
            self._pairing = pair_timeline(self.timeline)
        return self._pairing

    def summary(self) -> dict:
        """Counts per record type, then every record or value that was dropped or merged:
        ``unknown`` lines, ``truncated`` / ``malformed`` records, ``dropped_fields``,
        ``bad_values``, ``merged`` (records sharing a line), the TIMELINE pairing counts
        (``duplicate_starts``, ``unpaired_starts``, ``unpaired_ends``, ``cross_worker_ends``) and
        ``no_final_newline`` (0/1), ``undecodable`` (lines with bytes that were not UTF-8, or NULs) and ``overlong``
        (lines cut at :data:`zkgpu.analysis.logs.parse.MAX_LINE_CHARS` characters)."""
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
            "undecodable": self.undecodable_count,
            "overlong": self.overlong_count,
        }

    def record_count(self) -> int:
        """Records of every type found (``CUZK_TIMING``, ``CUZK_NTT_H``, ``TIMELINE``, ``GPU_TIMING``, ``FIN_TIMING``,
        pinned-pool and engine messages); 0: nothing in the input was a cuzk-format record."""
        s = self.summary()
        return sum(s[k] for k in ("cuzk_timing", "cuzk_ntt_h", "timeline", "gpu_timing", "fin_timing", "pinned_pool", "messages"))

