"""Two recordings side by side, scenario by scenario: median and range of throughput and the utilizations, the
relative difference, and a verdict: ``beyond spread`` (the min..max ranges do not overlap), ``within spread``,
or ``single run`` (one side ran once: no verdict).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from zkgpu.analysis import metrics
from zkgpu.analysis.replay import Recording, Source, scenario_table, story_order

__all__ = ["COMPARED", "compare", "verdict"]

#: the numbers compared: throughput and the three utilizations
COMPARED = ("partitions_per_min", *metrics.UTILIZATIONS)


def verdict(a_min: float, a_max: float, a_runs: int, b_min: float, b_max: float, b_runs: int) -> str:
    """``beyond spread`` when the ranges [a_min, a_max] and [b_min, b_max] are disjoint and both sides have
    at least two runs, ``within spread`` when they overlap, ``single run`` when a side ran once."""
    if a_runs < 2 or b_runs < 2:
        return "single run"
    return "beyond spread" if a_max < b_min or b_max < a_min else "within spread"


def _source(rec: Recording | Source) -> Source:
    if isinstance(rec, Source):
        return rec
    return Source("recorded-gpu" if rec.is_gpu else "recorded-cpu", rec, "replay")


def compare(a: Recording | Source, b: Recording | Source) -> pd.DataFrame:
    """Recording ``a`` against ``b``: one row per (scenario, metric of :data:`COMPARED`) with ``scenario, metric, a,
    a_min, a_max, a_runs, b, b_min, b_max, b_runs, rel_diff, verdict`` (utilizations as fractions; ``attrs`` name the
    recordings). Empty when they share no scenario.
    """
    sa, sb = _source(a), _source(b)
    common = [s for s in story_order(sa.scenarios) if sa.has(s) and sb.has(s)]
    cols = ["scenario", "metric", "a", "a_min", "a_max", "a_runs", "b", "b_min", "b_max", "b_runs", "rel_diff", "verdict"]
    if not common:
        out = pd.DataFrame(columns=cols)
    else:
        ta, tb = scenario_table(sa, common), scenario_table(sb, common)
        rows: list[dict[str, Any]] = []
        for name in common:
            ra, rb = ta.loc[name], tb.loc[name]
            for m in COMPARED:
                lo_a, hi_a = _range(ra, m)
                lo_b, hi_b = _range(rb, m)
                va, vb = float(ra[m]), float(rb[m])
                rows.append({"scenario": name, "metric": m, "a": va, "a_min": lo_a, "a_max": hi_a, "a_runs": int(ra["repeats"]),
                             "b": vb, "b_min": lo_b, "b_max": hi_b, "b_runs": int(rb["repeats"]),
                             "rel_diff": (vb - va) / va if va else float("nan"),
                             "verdict": verdict(lo_a, hi_a, int(ra["repeats"]), lo_b, hi_b, int(rb["repeats"]))})
        out = pd.DataFrame(rows, columns=cols)
    out.attrs.update(a=sa.recording.path.name, b=sb.recording.path.name)
    return out


def _range(row: pd.Series, m: str) -> tuple[float, float]:
    lo, hi = row.get(f"{m}_min"), row.get(f"{m}_max")
    v = float(row[m])
    return (float(lo) if lo is not None else v, float(hi) if hi is not None else v)
