"""What a parse of a cuzk-format log found: :class:`ParsedLog` (built by
:func:`zkgpu.analysis.logs.parse.parse_lines`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from zkgpu.analysis.logs.timeline import pair_timeline

__all__ = ["ParsedLog"]

@dataclass
class ParsedLog:
    """Everything :func:`parse_lines` found; ``line`` columns are 1-based physical line numbers; durations float ms.
    Tables: ``timing`` (CUZK_TIMING: ``kind``, ``gpu_tid``, fields), ``ntt_h`` (CUZK_NTT_H sub-timers), ``timeline``
    (``t_ms``, ``event``, ``job``, ``detail``, ``worker``, ``partition``, ...), ``gpu_timing`` / ``fin_timing`` /
    ``pool`` / ``messages`` (``ts``, ``level``, ``what``, fields); each with ``truncated``. Counts: ``n_lines``,
    ``unknown_count`` (+ ``unknown_examples``), ``truncated_count``, ``malformed_count``, ``dropped_fields``,
    ``bad_values``, ``merged_count``, ``no_final_newline``, ``undecodable_count``, ``overlong_count``,
    ``cut_before_last``."""

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
        """Counts per record type, then every record or value dropped or merged, and the TIMELINE pairing counts."""
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

