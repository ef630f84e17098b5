"""Host-to-device bandwidth curves: GB/s against transfer size per H2D path (the sweep), and
against host memory-load threads; zkgpu's kernel times relative to sppark's per size.
"""

from __future__ import annotations

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter

from zkgpu.analysis.plots.style import fig_ax, path_style, require_columns, set_caption, size_label

__all__ = ["bandwidth_curves", "load_curves", "sppark_ratios", "PARITY_TICK", "SIZE_MARKERS", "SIZE_GREYS"]

#: The label of :func:`sppark_ratios`' x tick at 1.0, the parity line (on the axis, not beside the points).
PARITY_TICK = "sppark = 1.0"

#: Marker and grey per size of :func:`sppark_ratios` (smallest first).
SIZE_MARKERS = ("o", "s", "D", "^", "v")
SIZE_GREYS = ("#f0f0f0", "#bdbdbd", "#737373", "#252525")


def bandwidth_curves(df: pd.DataFrame, ax: Axes | None = None, title: str | None = None) -> tuple[Figure, Axes]:
    """GB/s vs transfer size, one colour per ``path``, reused buffers solid, fresh dashed. Columns: ``path``,
    ``size_bytes``, ``fresh_buffer`` (bool), ``gbps`` (1e9 B/s); medians per point; x log2 bytes.

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
    """H2D GB/s vs the host's background DRAM traffic, one line per ``path`` (columns ``load_threads``, ``path``,
    ``gbps``, ``load_gbps`` of :func:`zkgpu.app.bench.hostload.h2d_under_load`); medians per point, y log-scaled.

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
    """zkgpu time / sppark time: one row per operation, a marker per size, the parity line 1.0 marked. Input:
    :func:`zkgpu.analysis.anchors.ratio_table` (columns ``2^k``, values zkgpu_ms / sppark_ms, NaN: no marker).

    Raises:
        ValueError: the table is empty or a column is not named ``2^k``.
    """
    if table.empty:
        raise ValueError("sppark_ratios: empty ratio table")
    try:
        logs = [int(str(c).removeprefix("2^")) for c in table.columns]
    except ValueError:
        raise ValueError(f"sppark_ratios: columns must be sizes '2^k', got {list(table.columns)}") from None
    fig, ax = fig_ax(ax, (8.0, 0.38 * len(table) + 1.6))
    greys = [SIZE_GREYS[min(len(SIZE_GREYS) - 1, round(j * (len(SIZE_GREYS) - 1) / max(1, len(logs) - 1)))] for j in range(len(logs))]
    vals = table.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
    for y, row in enumerate(vals):
        ok = row == row
        if ok.sum() > 1:
            ax.plot([row[ok].min(), row[ok].max()], [y, y], color="#bbbbbb", linewidth=2.0, zorder=1)
    for j, k in enumerate(logs):
        ok = vals[:, j] == vals[:, j]
        ax.scatter(vals[ok, j], [y for y, keep in enumerate(ok) if keep], s=34, marker=SIZE_MARKERS[j % len(SIZE_MARKERS)], color=greys[j],
                   edgecolor="k", linewidth=0.5, zorder=3, label=f"$2^{{{k}}}$")
    ax.axvline(1.0, color="k", linewidth=1.0)
    ax.set_yticks(range(len(table)), [str(r) for r in table.index])
    kinds = [str(r).split(" ")[0] for r in table.index]  # NTT rows, then MSM rows: a thin rule between the groups
    for y in range(1, len(kinds)):
        if kinds[y] != kinds[y - 1]:
            ax.axhline(y - 0.5, color="#999999", linewidth=0.6)
    ax.invert_yaxis()
    top = float(pd.to_numeric(table.stack(), errors="coerce").max()) if table.size else 1.0
    ax.set_xlim(left=0, right=max(1.0, top if top == top else 1.0) * 1.12)
    # parity is named on the x axis (the tick at 1.0), where it cannot be read as a label of the points near it
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: PARITY_TICK if abs(v - 1.0) < 1e-9 else f"{v:.1f}"))
    lo, hi = ax.get_xlim()
    ax.set_xticks(sorted({float(t) for t in ax.get_xticks() if lo <= t <= hi and abs(t - 1.0) > 0.25} | {1.0}))  # parity always has its tick
    ax.set_xlabel("zkgpu time / sppark time (left of 1: zkgpu faster)")
    ax.set_title(title or "zkgpu against sppark, same GPU, same call")
    ax.legend(title="size (elements / points)", fontsize="small", title_fontsize="small", frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    per = "; ".join(f"{row} " + ", ".join("–" if pd.isna(v) else f"{v:.2f}" for v in r) for row, r in table.iterrows())
    faster = int((vals[:, -1] < 1.0).sum())
    measured = int((vals[:, -1] == vals[:, -1]).sum())
    set_caption(fig, f"One row per operation: median zkgpu time over median sppark time at each size ({', '.join(f'2^{k}' for k in logs)}; "
                     f"markers light to dark), the grey bar their range: {per}. The black line is parity (the x tick '{PARITY_TICK}'); "
                     f"left of it zkgpu is faster, as in {faster} of the {measured} operations measured at 2^{logs[-1]}."
                     + (" A row marked '(sppark: uniform)' is zkgpu with PoRep-like scalars against sppark with uniform ones (sppark's "
                        "benchmark has uniform scalars only): context, not a comparison." if any("(sppark: uniform)" in str(r) for r in table.index) else ""))
    return fig, ax
