"""Showing results in a notebook: :func:`table` (units by column name), :func:`figure` (with caption), :func:`md`."""

from __future__ import annotations

import io
import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Image, Markdown, display
from matplotlib.figure import Figure

from zkgpu.analysis import keynumbers
from zkgpu.analysis.gpu_time import BUSY_PARTS, IDLE_PARTS
from zkgpu.analysis.metrics import GPU_PATH
from zkgpu.analysis.plots import caption, size_label
from zkgpu.analysis.plots.style import shown_numbers

__all__ = ["column_format", "fmt", "table", "spread", "benchmark", "figure", "md", "code_list", "definitions"]

_PCT = ("_util", "share", "rel_err", "band_rel", "rel_residual", "vs_compute_bound", "vs_gpu_phase_bound", "barrier_in_held", "vs_bound", "efficiency")
_RATIO = ("speedup", "ratio", "_x")
#: Columns without a unit suffix that hold ms per partition (zkgpu.analysis.metrics.critical_path, ntt_msm_h_split,
#: zkgpu.analysis.gpu_time.gpu_time_split).
_MS_NAMES = frozenset(GPU_PATH) | frozenset(n.lower() for n in (*BUSY_PARTS, *IDLE_PARTS)) | {"ntt_msm_h", "ms_per_partition"}


def _unsigned_zero(v: float, digits: int) -> float:
    """``v``, or +0.0 where it would print as "-0.0" at ``digits`` decimals."""
    return 0.0 if round(v, digits) == 0 else v


def _pct(v: Any) -> str:
    return "–" if _missing(v) else f"{_unsigned_zero(100 * float(v), 1):.1f}%"


def _pp(v: Any) -> str:
    """A difference of two fractions in percentage points: -0.049 -> "-4.9 pp"."""
    return "–" if _missing(v) else f"{_unsigned_zero(100 * float(v), 1):+.1f} pp"


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA


def _plain(v: Any) -> str:
    """A float without a unit: whole numbers without decimals, others with 3 (never scientific)."""
    if _missing(v):
        return "–"
    v = float(v)
    return f"{v:,.0f}" if v.is_integer() else f"{v:,.3f}"


def _yes_no(v: Any) -> str:
    """A flag as a reader says it: "yes", "no" ("–" when missing), not Python's True / False."""
    return "–" if _missing(v) else "yes" if bool(v) else "no"


def _is_flags(col: pd.Series) -> bool:
    """True for a column of booleans (missing values allowed)."""
    if pd.api.types.is_bool_dtype(col):
        return True
    vals = [v for v in col if not _missing(v)]
    return col.dtype == object and bool(vals) and all(isinstance(v, (bool, np.bool_)) for v in vals)


def _ms(v: Any) -> str:
    """Three significant digits (a benchmark's 0.522 ms and 58.1 ms alike), whole ms from 100 on."""
    return "–" if _missing(v) else f"{float(v):,.0f} ms" if abs(float(v)) >= 100 else f"{float(v):#.3g} ms"


_UNITS: dict[str, Callable[[Any], str]] = {"ms": _ms, "%": _pct, "x": lambda v: "–" if _missing(v) else f"{float(v):.2f}×"}


def column_format(name: str) -> Callable[[Any], str] | None:
    """The formatter for column ``name`` by suffix (percent, ms, GB/s, /min, ×, bytes), or None."""
    n = str(name).lower()
    if n.endswith("_ms") or n.endswith(" ms") or n == "ms" or n in _MS_NAMES or "ms_per_partition" in n:
        return lambda v: "–" if _missing(v) else f"{_unsigned_zero(float(v), 1):,.1f} ms"
    if any(k in n for k in _PCT) or n.endswith("%"):
        return _pct
    if "gbps" in n or "gb/s" in n:
        return lambda v: "–" if _missing(v) else f"{float(v):,.2f} GB/s"
    if n.startswith("s_per_") or n.endswith("_s"):
        return lambda v: "–" if _missing(v) else f"{float(v):,.1f} s"
    if "per_min" in n or "/min" in n or n in ("band_lo", "band_hi"):  # a forecast's band is in partitions/min
        return lambda v: "–" if _missing(v) else f"{float(v):,.1f} /min"
    if any(k in n for k in _RATIO) or n.startswith("x_"):  # x_baseline: times the baseline's
        return lambda v: "–" if _missing(v) else f"{float(v):.2f}×"
    if "bytes" in n:
        return lambda v: "–" if _missing(v) else size_label(v)
    return None


def fmt(value: Any, name: str) -> str:
    """One value formatted as :func:`column_format` formats the column ``name``."""
    f = column_format(name)
    if f is not None:
        return f(value)
    if isinstance(value, float):
        return _plain(value)
    return str(value)


def table(df: pd.DataFrame | pd.Series, caption_text: str | None = None, by_row: bool = False, percent: Iterable[Any] = (), *,
          scenario: str | None = None, statistic: str = "", recording: str | None = None, value_column: str | None = None, unit: str = ""):
    """``df`` as a Styler, every column formatted by its name (:func:`column_format`). ``by_row``: format by row name
    instead; ``percent``: columns shown as percentages; ``unit``: for unformatted number columns. Cells under
    :data:`zkgpu.analysis.keynumbers.STATISTICS` names are noted with their scenario and recording
    (:func:`zkgpu.analysis.keynumbers.show`)."""
    pct_cols = {percent} if isinstance(percent, str) else set(percent)  # one name, or several
    statistic = statistic or str(getattr(df, "attrs", {}).get("statistic", "") or "")
    recording = recording if recording is not None else (getattr(df, "attrs", {}).get("recording") or None)
    if statistic and statistic not in (caption_text or ""):  # a statistic other than the name's own is said where the table is
        caption_text = f"{caption_text}; {statistic}" if caption_text else statistic
    _note_shown(df, by_row, pct_cols, scenario, statistic, recording, value_column)
    for level in [n for n in getattr(df.index, "names", []) if n is not None and "bytes" in str(n)]:
        df = df.rename(index=lambda v: size_label(v) if isinstance(v, (int, float)) else v, level=level)  # 4 GiB, not 4294967296
    if isinstance(df, pd.Series):  # one value per row: format each by its row's name
        df = pd.DataFrame({df.name if df.name is not None else "value": [fmt(v, k) for k, v in df.items()]}, index=df.index)
    formats: dict[Any, Callable[[Any], str]] = {}
    for c in df.columns:
        key = c[0] if isinstance(c, tuple) else c
        f = _pct if c in pct_cols or key in pct_cols else column_format(key)
        if _is_flags(df[c]):
            f = _yes_no
        elif f is None and unit and pd.api.types.is_numeric_dtype(df[c]):
            f = _UNITS[unit]
        elif f is None and pd.api.types.is_float_dtype(df[c]):
            f = _plain
        if f is not None:
            formats[c] = f
    sty = df.style.format(formats, na_rep="–")
    text = [c for c in df.columns if c not in formats and not pd.api.types.is_numeric_dtype(df[c])]
    if text:  # words read from the left; numbers stay right-aligned under each other
        sty = sty.set_properties(subset=text, **{"text-align": "left"})
    if by_row:
        rest = [c for c in df.columns if c not in formats or column_format(c[0] if isinstance(c, tuple) else c) is None]
        for r in df.index:
            f = column_format(r)
            if f is not None and rest:
                sty = sty.format(f, subset=pd.IndexSlice[[r], rest], na_rep="–")
                if f is _pct and "diff" in rest:  # a difference of two percentages is in percentage points
                    sty = sty.format(_pp, subset=pd.IndexSlice[[r], ["diff"]], na_rep="–")
    if isinstance(df.index, pd.RangeIndex) and df.index.name is None:  # row numbers 0..n-1 say nothing: not shown
        sty = sty.hide(axis="index")
    if caption_text:
        sty = sty.set_caption(caption_text)
    return sty


def spread(df: pd.DataFrame, caption_text: str | None = None):
    """Median, min and max of every number column of ``df``, one row per column, each formatted by its name
    (``prep_msm_ms`` in ms, ``rel_residual`` in %): what ``describe()`` says, in a table a reader can read."""
    num = df.select_dtypes("number")
    t = pd.DataFrame({"median": num.median(), "min": num.min(), "max": num.max()}).rename_axis("per partition")
    return table(t, caption_text, by_row=True)


def benchmark(piv: pd.DataFrame, what: str, rows: int = 12) -> None:
    """Show a benchmark pivot in ms, in tables of at most ``rows`` rows."""
    t = piv.T.rename(columns=lambda c: f"2^{c}")
    if len(t) <= rows or t.index.nlevels < 2:
        display(table(t, f"{what}: median ms by size", unit="ms"))
        return
    first, frame = t.index.names[0], t.index.to_frame(index=False)
    rest = [n for n in t.index.names[1:] if frame.groupby(first)[n].nunique().max() > 1]  # levels a key value fixes (radix) left out
    size = max((c for c in piv.index if t[f"2^{c}"].notna().all()), default=piv.index[-1])
    at = frame.assign(ms=t[f"2^{size}"].to_numpy()).pivot_table(index=rest, columns=first, values="ms", aggfunc="median")
    best = str(at.median().idxmin())
    by_size = t.xs(best, level=first).droplevel([n for n in t.index.names[1:] if n not in rest])
    display(table(at, f"{what}: median ms at 2^{size}, the largest size every kind was timed at, one column per {first}", unit="ms"))
    display(table(by_size, f"{what}: {first} {best} (the fastest at 2^{size}), median ms by size", unit="ms"))


def _unit_of(text: str) -> str:
    """The unit a formatted value ends with ("ms", "%", "GB/s", "/min", "×", "s"; '' for a plain number)."""
    m = re.search(r"(ms|%|GB/s|/min|×|s)$", text.strip())
    return m.group(1) if m else ""


def _note_shown(df: pd.DataFrame | pd.Series, by_row: bool, pct_cols: set[Any], scenario: str | None, statistic: str,
                recording: str | None, value_column: str | None) -> None:
    """Note every cell of ``df`` under a :data:`zkgpu.analysis.keynumbers.STATISTICS` name (see :func:`table`)."""
    if isinstance(df, pd.Series):
        df = df.to_frame()
    idx = df.index
    names = [str(n) if n is not None else "" for n in getattr(idx, "names", [idx.name])]
    rows_are_scenarios = bool({"scenario", "run"} & set(names))
    cells: list[tuple[int, Any, Any, Any]] = []  # (row position, row label, name, value column)
    if by_row:
        if scenario is None or value_column is None or value_column not in df.columns:
            return
        cells = [(i, r, r, value_column) for i, r in enumerate(df.index)]
    elif rows_are_scenarios or scenario is not None:
        cells = [(i, r, c, c) for c in df.columns if isinstance(c, str) for i, r in enumerate(df.index)]
    for i, r, name, col in cells:
        base = keynumbers.base_name(name)
        if base is None:
            continue
        col_values = df[col]
        if isinstance(col_values, pd.DataFrame):  # a column name given twice: which is meant is unclear, so nothing is noted
            continue
        value = col_values.iloc[i]
        if not isinstance(value, (int, float, np.integer, np.floating)) or isinstance(value, (bool, np.bool_)):
            continue
        scen, rec = scenario, recording
        if rows_are_scenarios and not by_row:
            label = dict(zip(names, r if isinstance(r, tuple) else (r,), strict=False))
            scen = str(label.get("scenario", label.get("run", "")))
            rec = str(label["recording"]) if "recording" in label else rec
        text = _pct(value) if col in pct_cols else fmt(value, str(col) if not by_row else str(name))
        keynumbers.show(base, value, text, scenario=str(scen or ""), recording=rec, statistic=statistic, unit=_unit_of(text))


def figure(fig: Figure, note: str = "", landing: str = "", notebook: str = "", recording: str | None = None) -> None:
    """Show ``fig``, close it and print its caption (+ ``note``); ``landing``: keep it for the landing page."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")  # tight: legends outside the axes stay in
    plt.close(fig)
    text = " ".join(t for t in (caption(fig), note) if t)
    sup = fig.get_suptitle()
    title = sup or (fig.axes[0].get_title() if fig.axes else "")
    alt = text or title
    meta = {k: v for k, v in (("alt", alt), ("title", title)) if v}  # the title: one per figure across the report (a test reads it)
    display(Image(data=buf.getvalue(), format="png", metadata=meta or None))
    for e in shown_numbers(fig):  # the named numbers its caption prints: one number per name (keynumbers.STATISTICS)
        keynumbers.show(e["name"], e["value"], e["text"], scenario=e["scenario"], recording=recording, statistic=e["statistic"],
                        unit=_unit_of(e["text"]))
    if landing:
        keynumbers.save_figure(landing, buf.getvalue(), text, notebook, recording=recording)
    if text:
        display(Markdown(f"*Figure.* {text}"))


def md(text: str) -> None:
    """Show a markdown string."""
    display(Markdown(text))


def code_list(names: Iterable[Any]) -> str:
    """``names`` as prose, each code-formatted: "`a`", "`a` and `b`", "`a`, `b` and `c`" ('' for none)."""
    items = [f"`{n}`" for n in names]
    return items[0] if len(items) == 1 else (", ".join(items[:-1]) + " and " + items[-1]) if items else ""


def definitions(defs: Mapping[str, tuple[str, str]]) -> str:
    """A markdown table of named definitions, ``{name: (label, definition)}`` (e.g.
    :data:`zkgpu.analysis.metrics.UTILIZATIONS`, :data:`zkgpu.analysis.metrics.GPU_PATH` as ``{name: definition}``)."""
    rows = ["| name | what | definition |", "|---|---|---|"]
    for k, v in defs.items():
        label, text = v if isinstance(v, tuple) else ("", v)
        rows.append(f"| `{k}` | {label} | {text} |")
    return "\n".join(rows)
