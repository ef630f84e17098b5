"""Host-to-device bandwidth curves: GB/s against transfer size per H2D path (the sweep), and
against host memory-load threads; zkgpu's kernel times relative to sppark's per size.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter

from zkgpu.analysis.plots.style import fig_ax, path_style, require_columns, set_caption, size_label

__all__ = ["bandwidth_curves", "load_curves", "sppark_ratios", "OP_STYLES", "PARITY_TICK"]

#: The label of :func:`sppark_ratios`' y tick at 1.0, the parity line (on the axis, not beside the points).
PARITY_TICK = "sppark = 1.0"

#: Colour and line style per operation of :func:`sppark_ratios` (labels of :func:`zkgpu.analysis.anchors.row_label`):
#: NTT variants in purples, MSM in dark reds, colours no phase or H2D path uses; the PoRep-like MSM is solid against
#: sppark on PoRep-like scalars, dashed where it is compared with sppark's uniform scalars (context); the MSM over
#: precomputed bases in the same two colours, dash-dotted (dotted for its PoRep-like context row); over points prepared
#: outside the timing (the like-for-like rows against sppark's preloaded points) dash-dot-dotted.
OP_STYLES: dict[str, tuple[str, Any]] = {
    "NTT forward": ("#3f007d", "-"), "NTT inverse": ("#6a51a3", "-"), "NTT coset": ("#807dba", "-"),
    "NTT inverse-coset": ("#bcbddc", "-"), "MSM uniform": ("#67000d", "-"), "MSM PoRep-like": ("#cb181d", "-"),
    "MSM PoRep-like (sppark: uniform)": ("#cb181d", "--"),
    "MSM points prepared, uniform": ("#67000d", (0, (5, 1, 1, 1, 1, 1))), "MSM points prepared, PoRep-like": ("#cb181d", (0, (5, 1, 1, 1, 1, 1))),
    "MSM points prepared, PoRep-like (sppark: uniform)": ("#cb181d", ":"),
    "MSM precomputed bases, uniform": ("#67000d", "-."), "MSM precomputed bases, PoRep-like": ("#cb181d", "-."),
    "MSM precomputed bases, PoRep-like (sppark: uniform)": ("#cb181d", ":"),
}


def bandwidth_curves(df: pd.DataFrame, ax: Axes | None = None, title: str | None = None) -> tuple[Figure, Axes]:
    """GB/s vs transfer size: one colour per ``path``; reused buffers solid, fresh buffers dashed.

    Input columns: ``path`` (str), ``size_bytes`` (int), ``fresh_buffer`` (bool: buffer allocated /
    registered inside the timed call), ``gbps`` (float, 1e9 bytes/s). Several rows per point are
    averaged (median). x is log2-scaled in bytes.

    Raises:
        ValueError: a column is missing or the frame is empty.
    """
    require_columns(df, {"path", "size_bytes", "fresh_buffer", "gbps"}, "bandwidth")
    fig, ax = fig_ax(ax, (7.5, 4.5))
    paths = list(dict.fromkeys(df["path"].astype(str)))
    colors = {p: path_style(p)[0] for p in paths}
    d = df.assign(path=df["path"].astype(str), fresh_buffer=df["fresh_buffer"].astype(bool))
    med = d.groupby(["path", "fresh_buffer", "size_bytes"], sort=True)["gbps"].median().reset_index()
    for (p, fresh), grp in med.groupby(["path", "fresh_buffer"], sort=False):
        grp = grp.sort_values("size_bytes")
        ax.plot(grp["size_bytes"], grp["gbps"], marker=path_style(p)[1], ms=4, color=colors[p], linestyle="--" if fresh else "-", label=f"{p} ({'fresh' if fresh else 'reused'})")
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: size_label(v)))
    ax.set_xlabel("transfer size")
    ax.set_ylabel("GB/s")
    ax.set_title(title or "H2D bandwidth vs size")
    handles = [Line2D([], [], color=colors[p], marker=path_style(p)[1], label=p) for p in paths]
    kinds = set(med["fresh_buffer"])
    handles += [Line2D([], [], color="k", linestyle="-" if f is False else "--", label="fresh buffer" if f else "reused buffer") for f in (False, True) if f in kinds]
    ax.legend(handles=handles, fontsize="small", frameon=False)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    top = med[med["size_bytes"] == med["size_bytes"].max()]
    at = "; ".join(f"{r.path} {'fresh' if r.fresh_buffer else 'reused'} {r.gbps:.1f}" for r in top.itertuples())
    set_caption(fig, f"Median GB/s (1e9 B/s, CUDA events) of each H2D path per transfer size; solid lines reuse their buffer, "
                 f"dashed ones allocate or pin it inside the timed call. At {size_label(med['size_bytes'].max())}: {at} GB/s.")
    return fig, ax


def load_curves(df: pd.DataFrame, ax: Axes | None = None, title: str | None = None) -> tuple[Figure, Axes]:
    """H2D GB/s vs the host's background DRAM traffic: one line per ``path``, a point per load level.

    Input: the frame of :func:`zkgpu.app.bench.hostload.h2d_under_load` (columns ``load_threads``, ``path``,
    ``gbps``, ``load_gbps``; 1e9 bytes/s). Each point is the median over its copies, x the median
    DRAM traffic of the load at that level, labelled with the number of load threads. y is log-scaled.

    Raises:
        ValueError: a column is missing or the frame is empty.
    """
    require_columns(df, {"load_threads", "path", "gbps", "load_gbps"}, "load")
    fig, ax = fig_ax(ax, (7.0, 4.0))
    med = df.groupby(["path", "load_threads"], sort=True)[["gbps", "load_gbps"]].median().reset_index()
    x_of = med.groupby("load_threads")["load_gbps"].max()  # one x per level (the load's traffic)
    for path, grp in med.groupby("path", sort=False):
        grp = grp.sort_values("load_threads")
        x = x_of.loc[grp["load_threads"]].to_numpy()
        ax.plot(x, grp["gbps"], marker=path_style(str(path))[1], color=path_style(str(path))[0], label=str(path))
        if path == med["path"].iloc[0]:
            for xi, (_, r) in zip(x, grp.iterrows(), strict=True):
                ax.annotate(f"{int(r['load_threads'])} thr", (xi, r["gbps"]), textcoords="offset points", xytext=(0, 6), fontsize="x-small", ha="center")
    ax.set_yscale("log")
    plain = FuncFormatter(lambda v, _: f"{v:g}")  # 60, 6, 3 — never 6×10^1
    ax.yaxis.set_major_formatter(plain)
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if str(f"{v:g}")[0] in "2358" else ""))
    ax.set_xlabel("background DRAM traffic of the load threads (GB/s)")
    ax.set_ylabel("H2D GB/s")
    ax.set_title(title or "H2D bandwidth under host memory load")
    ax.legend(fontsize="small", frameon=False)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    pts = "; ".join(f"{p}: " + ", ".join(f"{g:.1f}" for g in grp.sort_values("load_threads")["gbps"]) for p, grp in med.groupby("path", sort=False))
    set_caption(fig, "Median H2D GB/s of each copy mechanism (y, log scale) against the DRAM traffic of the background load "
                 f"threads (x; labels: threads), levels {', '.join(str(int(t)) for t in sorted(med['load_threads'].unique()))}: {pts} GB/s.")
    return fig, ax


def sppark_ratios(table: pd.DataFrame, ax: Axes | None = None, title: str | None = None) -> tuple[Figure, Axes]:
    """zkgpu time / sppark time per size: one line per operation, the parity line 1.0 marked.

    Input: :func:`zkgpu.analysis.anchors.ratio_table` (rows: operations such as ``NTT forward``; columns: sizes
    ``2^k``; values: zkgpu_ms / sppark_ms of medians, NaN where a side was not measured). Below 1.0 zkgpu is
    faster. The caption gives each operation's ratios from the data.

    Raises:
        ValueError: the table is empty or a column is not named ``2^k``.
    """
    if table.empty:
        raise ValueError("sppark_ratios: empty ratio table")
    try:
        logs = [int(str(c).removeprefix("2^")) for c in table.columns]
    except ValueError:
        raise ValueError(f"sppark_ratios: columns must be sizes '2^k', got {list(table.columns)}") from None
    fig, ax = fig_ax(ax, (7.0, 4.0))
    for row, vals in table.iterrows():
        color, ls = OP_STYLES.get(str(row), ("#969696", ":"))
        ok = vals.notna().to_numpy()  # a size one side did not measure: no point, the line joins its neighbours
        x = [k for k, keep in zip(logs, ok, strict=True) if keep]
        ax.plot(x, vals.to_numpy(dtype=float)[ok], marker="o", ms=4, color=color, linestyle=ls, label=str(row))
    ax.axhline(1.0, color="k", linewidth=1.0)
    # parity is named on the y axis (the tick at 1.0), where it cannot be read as a label of the points near it
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: PARITY_TICK if abs(v - 1.0) < 1e-9 else f"{v:.1f}"))
    ax.set_xticks(logs, [f"$2^{{{k}}}$" for k in logs])
    ax.set_xlabel("size (elements / points)")
    ax.set_ylabel("zkgpu time / sppark time")
    top = float(pd.to_numeric(table.stack(), errors="coerce").max()) if table.size else 1.0
    ax.set_ylim(bottom=0, top=max(1.0, top if top == top else 1.0) * 1.12)  # headroom above the highest ratio
    lo, hi = ax.get_ylim()
    ax.set_yticks(sorted({float(t) for t in ax.get_yticks() if lo <= t <= hi} | {1.0}))  # parity always has its tick
    ax.set_title(title or "zkgpu against sppark, same GPU, same call (below 1: zkgpu faster)")
    ax.legend(fontsize="small", frameon=False, loc="center left", bbox_to_anchor=(1.0, 0.5))
    ax.grid(alpha=0.3)
    fig.tight_layout()
    per = "; ".join(f"{row} " + ", ".join("–" if pd.isna(v) else f"{v:.2f}" for v in vals) for row, vals in table.iterrows())
    set_caption(fig, f"Median zkgpu time over median sppark time per size ({', '.join(f'2^{k}' for k in logs)}): {per}. "
                     f"The black line is parity (the y tick '{PARITY_TICK}'); below it zkgpu is faster."
                     + (" The dashed MSM line is zkgpu with PoRep-like scalars against sppark with uniform ones (sppark's "
                        "benchmark has uniform scalars only)." if any(OP_STYLES.get(str(r), ("", ""))[1] == "--" for r in table.index) else ""))
    return fig, ax
