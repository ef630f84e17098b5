"""Performance anchors measured beside zkgpu: ``anchors/sppark-bench`` (sppark, the seed prover's CUDA library) and
``anchors/sppark-porep`` outputs set against zkgpu's NTT and MSM benchmark rows, as ratios zkgpu / sppark for the
same operation on the same GPU.

sppark's NTT rows (natural order, device-resident, CUDA events) compare with zkgpu's ``*-nn`` variants
(:data:`SPPARK_NTT_VARIANTS`); its MSM row ``devpts_devsc`` (wall clock of the whole call) with ``bench msm``'s
``mode=device`` rows; ``devpts_devsc_porep`` with zkgpu's PoRep-like rows. Without the latter, PoRep-like rows are
set against sppark's uniform time, marked ``like_for_like=False`` (:data:`SPPARK_MSM_CONTEXT`).
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from zkgpu.analysis.schema import check_manifest, loads_strict

__all__ = [
    "read_sppark_manifest",
    "SPPARK_NTT_VARIANTS",
    "SPPARK_MSM_VARIANTS",
    "SPPARK_MSM_CONTEXT",
    "SPPARK_MSM_SCALARS",
    "POREP_FILE",
    "POREP_CONTROL_VARIANT",
    "porep_driver_control",
    "SPPARK_SAME_WORK_MODES",
    "VS_COLUMNS",
    "read_sppark",
    "sppark_provenance",
    "ntt_vs_sppark",
    "load_ntt_vs_sppark",
    "vs_sppark",
    "load_vs_sppark",
    "ratio_table",
    "markdown_table",
    "row_label",
    "compute_h_ms",
    "manifest_summary",
]

SPPARK_NTT_VARIANTS = {
    "dev_fwd": "forward-nn",
    "dev_inv": "inverse-nn",
    "dev_coset_fwd": "coset-nn",
    "dev_coset_inv": "inverse-coset-nn",
}
SPPARK_MSM_VARIANTS = {
    ("device", "uniform"): "devpts_devsc",
    ("device", "porep"): "devpts_devsc_porep",
    ("device_prepared", "uniform"): "devpts_devsc",
    ("device_prepared", "porep"): "devpts_devsc_porep",
    ("device_precomp", "uniform"): "devpts_devsc",
    ("device_precomp", "porep"): "devpts_devsc_porep",
}
"""zkgpu ``bench msm`` (mode, scalars) -> the sppark MSM row with the same scalar distribution (``devpts_devsc``:
the anchor's uniform scalars; ``devpts_devsc_porep``: ``anchors/sppark-porep``'s PoRep-like ones). ``device_precomp``
rows are zkgpu's MSM over points prepared once outside the timing (checked and in Montgomery form,
``zkgpu.gpu.msm.pippenger.prepare_points``), as sppark's benchmark loads its points into ``msm_t`` before the timed ``invoke``
(sppark-bench ``bench.cu``: "points preloaded (untimed)"): variants ``prepared-uniform`` / ``prepared-porep``, the
like-for-like comparison; ``device`` rows prepare the points inside the timing. ``device_precomp``
rows are zkgpu's MSM over precomputed shifted bases (:mod:`zkgpu.gpu.msm.precomp`; the table is built once per base set,
like loading the SRS, and not timed; sppark's ``msm_t`` has its points preloaded too): variants ``precomp-uniform`` /
``precomp-porep``, set against the same sppark rows as the plain MSM."""
SPPARK_MSM_CONTEXT = {("device", "porep"): "devpts_devsc", ("device_prepared", "porep"): "devpts_devsc",
                      ("device_precomp", "porep"): "devpts_devsc"}
"""The sppark row a zkgpu (mode, scalars) falls back to, as context (``like_for_like=False``), at a size where the
sppark output has no :data:`SPPARK_MSM_VARIANTS` row at all (not even a deadline-skipped one)."""
SPPARK_MSM_SCALARS = {"devpts_devsc": "uniform", "devpts_devsc_porep": "porep"}
"""sppark MSM row -> the scalar distribution it was measured with (zkgpu's ``scalars`` names)."""
SPPARK_SAME_WORK_MODES = ("device_prepared",)
"""zkgpu ``bench msm`` modes whose timed call does the work of sppark's timed ``msm_t::invoke`` (points on the GPU in
Montgomery form before the timing, no table built beforehand): ``device_prepared`` only. ``device`` rows check and
convert the points inside the timing (more work than sppark's call); ``device_precomp`` rows run over a table of
shifted bases built beforehand (less work in the timed call, at the table's memory), which sppark's call has not."""
VS_COLUMNS = ["op", "variant", "log_n", "sppark_ms", "zkgpu_ms", "ratio", "kernel", "zkgpu_variant", "sppark_variant",
              "sppark_scalars", "like_for_like", "same_work"]
"""Columns of :func:`vs_sppark`'s table (times: medians in ms; ratio = zkgpu_ms / sppark_ms, < 1: zkgpu faster)."""
_NTT_ORDER = ["forward", "inverse", "coset", "inverse-coset"]
_MSM_ORDER = ["uniform", "porep", "prepared-uniform", "prepared-porep", "precomp-uniform", "precomp-porep"]
_MSM_MODE_PREFIX = {"device": "", "device_prepared": "prepared-", "device_precomp": "precomp-"}
POREP_FILE = "sppark_porep.txt"
"""The output of ``anchors/sppark-porep/run.sh`` in a run folder (sppark-bench's format, rows ``devpts_devsc_porep``)."""
POREP_CONTROL_VARIANT = "devpts_devsc_uniform"
"""``anchors/sppark-porep --uniform-control``'s rows: its own timing of the anchor's ``devpts_devsc`` call on uniform
scalars, a check that both drivers time sppark alike (never compared with zkgpu)."""
_COLUMNS = ["op", "lg_n", "variant", "median_ms", "min_ms", "max_ms", "repeats", "check"]


def read_sppark(path: str | Path, *more: str | Path) -> pd.DataFrame:
    """The CSV rows of a sppark-bench output file and the ``more`` files of the same format: columns op, lg_n, variant,
    median_ms, min_ms, max_ms (ms), repeats, check; rows skipped by the deadline have NaN times.

    Raises:
        FileNotFoundError: no such file. ValueError: a file holds no result table.
    """
    rows = []
    for p in (path, *more):
        try:
            text = Path(p).read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{p}: not a sppark-bench output (not UTF-8 text: byte {exc.start})") from None
        got = [ln for ln in text.splitlines() if ln.startswith(("ntt,", "msm,"))]
        if not got:
            raise ValueError(f"{p}: no sppark-bench result rows (lines starting with 'ntt,' or 'msm,')")
        rows += got
    where = ", ".join(str(p) for p in (path, *more))
    try:
        df = pd.read_csv(io.StringIO("\n".join(rows)), names=_COLUMNS, header=None)
    except pd.errors.ParserError as exc:
        raise ValueError(f"{where}: result rows not in sppark-bench's format ({' '.join(str(exc).split())})") from None
    lg = pd.to_numeric(df["lg_n"], errors="coerce")
    bad = df["lg_n"][lg.isna() | (lg != lg.round())]
    if len(bad):
        raise ValueError(f"{where}: lg_n {bad.iloc[0]!r} is not a log2 size (row {rows[bad.index[0]]!r})")
    df["lg_n"] = lg.astype(int)
    for c in ("median_ms", "min_ms", "max_ms"):
        df[c] = pd.to_numeric(df[c], errors="coerce")
    return df


def sppark_provenance(path: str | Path) -> dict[str, Any]:
    """What a sppark-bench (or sppark-porep) output says about itself, for a manifest: ``vendor`` (name -> commit,
    from the ``# vendor:`` lines that run.sh copies from VENDOR_COMMITS), ``revision`` (the binary's
    sppark@commit line) and ``gpu`` (its ``gpu,`` line), each absent when the file lacks it."""
    out: dict[str, Any] = {}
    for ln in Path(path).read_text().splitlines():
        if ln.startswith("# vendor:"):
            parts = ln[len("# vendor:"):].split()
            if len(parts) >= 2:
                out.setdefault("vendor", {})[parts[0]] = parts[1]
        elif ln.startswith(("# sppark_bench:", "# sppark_porep:")) and "revision" not in out:
            out["revision"] = ln.split(":", 1)[1].strip()
        elif ln.startswith("gpu,") and "gpu" not in out:
            out["gpu"] = ln[len("gpu,"):].strip()
    return out


def ntt_vs_sppark(zkgpu_rows: Iterable[dict[str, Any]] | pd.DataFrame, sppark: pd.DataFrame) -> pd.DataFrame:
    """One row per (log_n, variant, kernel) present in both: ``zkgpu_ms``, ``sppark_ms`` (medians) and
    ``ratio`` = zkgpu_ms / sppark_ms (< 1: zkgpu faster). ``zkgpu_rows``: rows of
    :func:`zkgpu.app.bench.ntt.run_benchmark` (or its ``ntt.csv``); ``sppark``: :func:`read_sppark`'s table."""
    z = pd.DataFrame(zkgpu_rows)
    s = sppark[(sppark["op"] == "ntt") & sppark["variant"].isin(list(SPPARK_NTT_VARIANTS))].copy()
    s["variant"] = s["variant"].map(SPPARK_NTT_VARIANTS)
    s = s.rename(columns={"lg_n": "log_n", "median_ms": "sppark_ms"})[["log_n", "variant", "sppark_ms"]]
    if "kernel" not in z.columns:
        z["kernel"] = "stagewise"
    z = z.rename(columns={"median_ms": "zkgpu_ms"})[["log_n", "variant", "kernel", "zkgpu_ms"]]
    out = z.merge(s, on=["log_n", "variant"], how="inner")
    out["ratio"] = out["zkgpu_ms"] / out["sppark_ms"]
    return out.sort_values(["variant", "kernel", "log_n"]).reset_index(drop=True)


def load_ntt_vs_sppark(run_dir: str | Path) -> pd.DataFrame:
    """:func:`ntt_vs_sppark` of a ``bench-ntt`` run folder written by ``zkgpu bench ntt --sppark``
    (its ``ntt.csv`` and the copy of ``sppark.txt`` beside it).

    Raises:
        FileNotFoundError: the folder lacks ntt.csv or sppark.txt (a run without --sppark).
    """
    run_dir = Path(run_dir)
    for name in ("ntt.csv", "sppark.txt"):
        if not (run_dir / name).exists():
            raise FileNotFoundError(f"{run_dir / name}: not a bench-ntt run made with --sppark")
    return ntt_vs_sppark(pd.read_csv(run_dir / "ntt.csv"), read_sppark(run_dir / "sppark.txt"))


def _ntt_op_variant(zkgpu_variant: str) -> str:
    return zkgpu_variant.removesuffix("-nn")


def vs_sppark(
    ntt_rows: Iterable[dict[str, Any]] | pd.DataFrame | None,
    msm_rows: Iterable[dict[str, Any]] | pd.DataFrame | None,
    sppark: pd.DataFrame,
    kernel: str | None = None,
) -> pd.DataFrame:
    """zkgpu beside sppark, one row per (op, variant, log_n[, kernel]) measured on both sides.

    Args:
        ntt_rows: ``zkgpu bench ntt`` rows (log_n, variant, kernel, median_ms), or None.
        msm_rows: ``zkgpu bench msm`` rows (log2_n, mode, scalars, variant, median_ms), or None.
        sppark: :func:`read_sppark`'s table.
        kernel: keep only this NTT kernel; None keeps all.

    Returns:
        a DataFrame with :data:`VS_COLUMNS`: op, variant, ``sppark_ms``, ``zkgpu_ms`` (medians), ``ratio`` = zkgpu_ms
        / sppark_ms, ``kernel``, both sides' variant names, ``sppark_scalars``, ``like_for_like`` and ``same_work``
        (:data:`SPPARK_SAME_WORK_MODES`); NaN sppark_ms and ratio where sppark skipped the size.
    """
    parts = []
    if ntt_rows is not None and len(z := pd.DataFrame(ntt_rows)):
        n = ntt_vs_sppark(z, sppark)
        if kernel is not None:
            n = n[n["kernel"] == kernel]
        back = {v: k for k, v in SPPARK_NTT_VARIANTS.items()}
        parts.append(n.assign(op="ntt", zkgpu_variant=n["variant"], sppark_variant=n["variant"].map(back),
                              variant=n["variant"].map(_ntt_op_variant), sppark_scalars="", like_for_like=True, same_work=True))
    if msm_rows is not None and len(m := pd.DataFrame(msm_rows)):
        parts.append(_msm_vs_sppark(m, sppark))
    if not parts:
        return pd.DataFrame(columns=VS_COLUMNS)
    out = pd.concat([p[VS_COLUMNS] for p in parts], ignore_index=True)
    order = {v: i for i, v in enumerate(_NTT_ORDER + _MSM_ORDER)}  # ntt variants before msm ones
    out = out.assign(_o=out["variant"].map(order)).sort_values(["_o", "kernel", "log_n"]).drop(columns="_o")
    return out.reset_index(drop=True).astype({"log_n": int, "like_for_like": bool, "same_work": bool})


def _msm_vs_sppark(msm_rows: pd.DataFrame, sppark: pd.DataFrame) -> pd.DataFrame:
    """zkgpu's MSM rows joined with the sppark row of the same scalar distribution (:data:`SPPARK_MSM_VARIANTS`), or,
    at a size where sppark has no such row, with the :data:`SPPARK_MSM_CONTEXT` one; rows with neither are dropped. A
    sppark row whose result failed its blst check (``check=FAIL``) has NaN sppark_ms and ratio."""
    m = msm_rows.rename(columns={"log2_n": "log_n", "median_ms": "zkgpu_ms"})
    keys = list(zip(m["mode"], m["scalars"], strict=True))
    m = m[[k in SPPARK_MSM_VARIANTS for k in keys]]
    s = sppark[sppark["op"] == "msm"].rename(columns={"lg_n": "log_n", "median_ms": "sppark_ms", "variant": "sppark_variant"})
    s = s.assign(sppark_ms=s["sppark_ms"].where(s["check"] != "FAIL"))  # a wrong result times nothing: NaN, no ratio
    have = set(zip(s["log_n"], s["sppark_variant"], strict=True))

    def pick(lg: int, mode: str, sc: str) -> str:
        v = SPPARK_MSM_VARIANTS[(mode, sc)]
        return v if (lg, v) in have else SPPARK_MSM_CONTEXT.get((mode, sc), v)

    m = m.assign(sppark_variant=[pick(lg, mo, sc) for lg, mo, sc in zip(m["log_n"], m["mode"], m["scalars"], strict=True)])
    m = m.merge(s[["log_n", "sppark_variant", "sppark_ms"]], on=["log_n", "sppark_variant"], how="inner")
    sc_sp = m["sppark_variant"].map(SPPARK_MSM_SCALARS)
    return m.assign(op="msm", variant=m["mode"].map(_MSM_MODE_PREFIX) + m["scalars"], kernel=m.get("variant", ""), zkgpu_variant=m["mode"] + "/" + m["scalars"],
                    sppark_scalars=sc_sp, like_for_like=sc_sp == m["scalars"], same_work=m["mode"].isin(SPPARK_SAME_WORK_MODES),
                    ratio=m["zkgpu_ms"] / m["sppark_ms"])


def read_sppark_manifest(mf: Path) -> dict[str, Any]:
    """A bench-sppark recording's manifest, checked at the door (it is untrusted: the one reader of it): the
    recordings' check (:func:`zkgpu.analysis.schema.check_manifest`), then the fields read here: ``sppark`` an object
    with a ``vendor`` object, ``compute_h_ms`` an object of numbers (or null: not measured), ``ntt_kernel`` text, ``sizes_log2`` a list of
    integers. A missing file reads as ``{}``. Raises ValueError naming the file and the field."""
    if not mf.exists():
        return {"sppark": {"vendor": {}}, "compute_h_ms": {}}
    try:
        m = loads_strict(mf.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"{mf} is not readable JSON: {exc}") from None
    check_manifest(mf, m)
    sp, h, kern, sizes = m.get("sppark") or {}, m.get("compute_h_ms") or {}, m.get("ntt_kernel"), m.get("sizes_log2")
    if not isinstance(sp, dict) or not isinstance(sp.get("vendor") or {}, dict):
        raise ValueError(f"{mf}: 'sppark' is {str(sp)[:40]!r}, expected an object with a 'vendor' object")
    if not isinstance(h, dict) or not all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in h.values()):
        raise ValueError(f"{mf}: 'compute_h_ms' is {str(h)[:40]!r}, expected an object of milliseconds (or null)")
    if kern is not None and not isinstance(kern, str):
        raise ValueError(f"{mf}: 'ntt_kernel' is {str(kern)[:40]!r}, expected text")
    if sizes is not None and not (isinstance(sizes, list) and all(isinstance(k, int) and not isinstance(k, bool) for k in sizes)):
        raise ValueError(f"{mf}: 'sizes_log2' is {str(sizes)[:40]!r}, expected a list of log2 sizes")
    return {**m, "sppark": {**sp, "vendor": sp.get("vendor") or {}}, "compute_h_ms": h}


def load_vs_sppark(run_dir: str | Path, kernel: str | None = None) -> pd.DataFrame:
    """:func:`vs_sppark` of a ``zkgpu bench sppark`` folder; ``kernel`` defaults to the manifest's ``ntt_kernel``, and
    only the manifest's ``sizes_log2`` are kept.

    Raises:
        FileNotFoundError: no sppark.txt, or neither ntt.csv nor msm.csv. ValueError: sppark.txt has no rows, or an
            unusable manifest.
    """
    run_dir = Path(run_dir)
    if not (run_dir / "sppark.txt").exists():
        raise FileNotFoundError(f"{run_dir / 'sppark.txt'}: not a bench-sppark run folder")
    ntt_csv, msm_csv = run_dir / "ntt.csv", run_dir / "msm.csv"
    if not (ntt_csv.exists() or msm_csv.exists()):
        raise FileNotFoundError(f"{run_dir}: neither ntt.csv nor msm.csv (not a bench-sppark run folder)")
    m = read_sppark_manifest(run_dir / "manifest.json")
    porep = [run_dir / POREP_FILE] if (run_dir / POREP_FILE).exists() else []
    vs = vs_sppark(pd.read_csv(ntt_csv) if ntt_csv.exists() else None, pd.read_csv(msm_csv) if msm_csv.exists() else None,
                   read_sppark(run_dir / "sppark.txt", *porep), kernel=kernel or m.get("ntt_kernel"))
    sizes = m.get("sizes_log2")
    return vs if not sizes else vs[vs["log_n"].isin(sizes)].reset_index(drop=True)


def porep_driver_control(sppark: pd.DataFrame, sizes: Iterable[int] | None = None) -> dict[str, Any]:
    """The PoRep-like driver's uniform control rows (:data:`POREP_CONTROL_VARIANT`) beside the anchor's ``devpts_devsc``
    of the same call, per size: ``{"2^k": {"porep_driver_ms", "anchor_ms", "ratio"}}`` (medians, ms; ratio =
    porep_driver_ms / anchor_ms, near 1 when both drivers time sppark alike; None where a side was skipped). Only
    sizes with both rows (and in ``sizes``, when given); empty without control rows."""
    s = sppark[sppark["op"] == "msm"]
    anchor = s[s["variant"] == "devpts_devsc"].drop_duplicates("lg_n").set_index("lg_n")["median_ms"]
    ctrl = s[s["variant"] == POREP_CONTROL_VARIANT].drop_duplicates("lg_n").set_index("lg_n")["median_ms"]
    keep = None if sizes is None else set(sizes)
    out: dict[str, Any] = {}
    for lg in sorted(set(anchor.index) & set(ctrl.index)):
        if keep is None or lg in keep:
            c, a = ctrl[lg], anchor[lg]
            out[f"2^{lg}"] = {"porep_driver_ms": None if pd.isna(c) else float(c), "anchor_ms": None if pd.isna(a) else float(a),
                              "ratio": None if pd.isna(c) or pd.isna(a) else float(c / a)}
    return out


def row_label(op: str, variant: str, like_for_like: bool = True) -> str:
    """The display name of a :func:`vs_sppark` row: ``NTT forward`` ... ``MSM uniform``, ``MSM PoRep-like``
    (against sppark on PoRep-like scalars), ``MSM PoRep-like (sppark: uniform)`` (against its uniform time), and
    for the MSM over points prepared outside the timing ``MSM points prepared, uniform`` / ``..., PoRep-like``,
    over precomputed bases ``MSM precomputed bases, uniform`` / ``..., PoRep-like``."""
    if op == "msm":
        pre, scalars = "", variant
        for prefix, words in (("precomp-", "precomputed bases, "), ("prepared-", "points prepared, ")):
            if variant.startswith(prefix):
                pre, scalars = words, variant[len(prefix):]
        if scalars == "porep":
            return f"MSM {pre}PoRep-like" + ("" if like_for_like else " (sppark: uniform)")
        return f"MSM {pre}{scalars}"
    return f"{op.upper()} {variant}"


def _one_kernel(vs: pd.DataFrame) -> pd.DataFrame:
    if vs.duplicated(["op", "variant", "log_n"]).any():
        raise ValueError("several zkgpu kernels per (op, variant, log_n): pass kernel= to vs_sppark / load_vs_sppark")
    return vs.assign(row=[row_label(o, v, bool(k)) for o, v, k in zip(vs["op"], vs["variant"], vs["like_for_like"], strict=True)])


def ratio_table(vs: pd.DataFrame) -> pd.DataFrame:
    """zkgpu_ms / sppark_ms with one row per operation (:func:`row_label`, in :func:`vs_sppark`'s order) and one
    column per size (``2^22`` ...). Raises ValueError if ``vs`` holds several NTT kernels (pass ``kernel=``)."""
    t = _one_kernel(vs)
    piv = t.pivot(index="row", columns="log_n", values="ratio").reindex(list(dict.fromkeys(t["row"])))
    piv.columns = [f"2^{c}" for c in piv.columns]
    piv.index.name = None
    return piv


def _ms(v: float) -> str:
    """Three significant figures, trailing zeros kept (2.00, 23.8, 556)."""
    return f"{v:.2f}" if v < 10 else f"{v:.1f}" if v < 100 else f"{v:.0f}"


def markdown_table(vs: pd.DataFrame) -> str:
    """A markdown table of :func:`ratio_table` with both medians per cell: ``ratio (zkgpu ms / sppark ms)``."""
    t = _one_kernel(vs)
    sizes = sorted(t["log_n"].unique())
    lines = ["| zkgpu / sppark (zkgpu ms / sppark ms) | " + " | ".join(f"2^{s}" for s in sizes) + " |",
             "|---|" + "---|" * len(sizes)]
    for row, g in t.groupby("row", sort=False):
        cells = {r.log_n: (f"{r.ratio:.2f} ({_ms(r.zkgpu_ms)} / {_ms(r.sppark_ms)})" if pd.notna(r.ratio) else "–")
                 for r in g.itertuples()}
        lines.append(f"| {row} | " + " | ".join(cells.get(s, "–") for s in sizes) + " |")
    return "\n".join(lines)


def compute_h_ms(ntt_rows: Iterable[dict[str, Any]] | pd.DataFrame, log_n: int = 24, kernel: str | None = None) -> float | None:
    """The median ms of zkgpu's whole Groth16 H computation (``variant=compute_h`` of ``bench ntt``) at 2^log_n
    with ``kernel`` (default: any, the first row); None when not measured."""
    z = pd.DataFrame(ntt_rows)
    if z.empty or "variant" not in z.columns:
        return None
    z = z[(z["variant"] == "compute_h") & (z["log_n"] == log_n)]
    if kernel is not None and "kernel" in z.columns:
        z = z[z["kernel"] == kernel]
    return None if z.empty else float(z["median_ms"].iloc[0])


def manifest_summary(vs: pd.DataFrame) -> dict[str, Any]:
    """The ratios for a manifest: ``{row label: {"2^k": {"ratio", "zkgpu_ms", "sppark_ms"}}}`` (ms, medians)."""
    out: dict[str, Any] = {}
    for r in _one_kernel(vs).itertuples():
        out.setdefault(r.row, {})[f"2^{r.log_n}"] = {
            "ratio": None if pd.isna(r.ratio) else float(r.ratio), "zkgpu_ms": float(r.zkgpu_ms),
            "sppark_ms": None if pd.isna(r.sppark_ms) else float(r.sppark_ms)}
    return out
