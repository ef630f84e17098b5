"""Showing results in a notebook: tables with units, figures with their captions, markdown.

Notebooks call these three functions instead of formatting by hand, so every page of the report
prints shares as percentages (never scientific notation), milliseconds and GB/s with their units,
and a caption under every figure:

* :func:`table` — a pandas ``Styler`` that formats each column by its name (:func:`column_format`);
* :func:`figure` — shows a figure of :mod:`zkgpu.plots`, closes it, and prints its caption below;
* :func:`md` — shows a markdown string (tables of the package map, conclusions).

Needs IPython (installed with the ``notebooks`` extra).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Markdown, display
from matplotlib.figure import Figure

from .plots import caption

__all__ = ["column_format", "fmt", "table", "figure", "md"]

_PCT = ("_util", "share", "rel_err", "vs_compute_bound", "barrier_in_held", "vs_bound", "efficiency")
_RATIO = ("speedup", "ratio", "_x")


def _pct(v: Any) -> str:
    return "–" if _missing(v) else f"{100 * float(v):.1f}%"


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA


def column_format(name: str) -> Callable[[Any], str] | None:
    """The formatter for a column called ``name`` (None: leave it to pandas).

    By suffix/substring: ``*_util``, ``*share*``, ``rel_err``, ``vs_compute_bound``,
    ``barrier_in_held`` → percent (the value is a fraction); ``*_ms`` → ``"12.3 ms"``;
    ``*gbps`` → ``"3.27 GB/s"``; ``*per_min`` → ``"229.0 /min"``; ``*speedup*``, ``*ratio*`` →
    ``"1.86×"``; ``*bytes*`` → thousands separators; other floats → 3 decimals.
    """
    n = str(name).lower()
    if n.endswith("_ms") or n.endswith(" ms") or n == "ms":
        return lambda v: "–" if _missing(v) else f"{float(v):,.1f} ms"
    if any(k in n for k in _PCT) or n.endswith("%"):
        return _pct
    if "gbps" in n or "gb/s" in n:
        return lambda v: "–" if _missing(v) else f"{float(v):,.2f} GB/s"
    if "per_min" in n or "/min" in n:
        return lambda v: "–" if _missing(v) else f"{float(v):,.1f} /min"
    if any(k in n for k in _RATIO):
        return lambda v: "–" if _missing(v) else f"{float(v):.2f}×"
    if "bytes" in n:
        return lambda v: "–" if _missing(v) else f"{int(v):,}"
    return None


def fmt(value: Any, name: str) -> str:
    """One value formatted as :func:`column_format` formats the column ``name``."""
    f = column_format(name)
    if f is not None:
        return f(value)
    if isinstance(value, float):
        return "–" if math.isnan(value) else f"{value:,.3f}"
    return str(value)


def table(df: pd.DataFrame | pd.Series, caption_text: str | None = None):
    """``df`` as a pandas Styler with every column formatted by its name (:func:`column_format`);
    a Series is shown as a one-column table. Wide tables keep their columns (the report's CSS
    scrolls them). Columns of a MultiIndex are formatted by their first level."""
    if isinstance(df, pd.Series):
        df = df.to_frame()
    formats: dict[Any, Callable[[Any], str]] = {}
    for c in df.columns:
        key = c[0] if isinstance(c, tuple) else c
        f = column_format(key)
        if f is None and pd.api.types.is_float_dtype(df[c]):
            f = lambda v: "–" if _missing(v) else f"{float(v):,.3f}"  # noqa: E731
        if f is not None:
            formats[c] = f
    sty = df.style.format(formats, na_rep="–")
    if caption_text:
        sty = sty.set_caption(caption_text)
    return sty


def figure(fig: Figure, note: str = "") -> None:
    """Show ``fig``, close it (so the inline backend does not show it twice) and print its
    caption (:func:`zkgpu.plots.caption`, plus ``note``) as markdown right below it."""
    display(fig)
    plt.close(fig)
    text = " ".join(t for t in (caption(fig), note) if t)
    if text:
        display(Markdown(f"*Figure.* {text}"))


def md(text: str) -> None:
    """Show a markdown string."""
    display(Markdown(text))
