"""Performance anchors measured beside zkgpu: the output of ``anchors/sppark-bench`` (sppark, the CUDA
library of the seed's prover, carried as ``.anchors/sppark-bench`` and run by ``scripts/ntt_vs_sppark.sh``) and zkgpu's NTT benchmark
rows side by side, as ratios zkgpu / sppark for the same transform on the same GPU in the same call.

sppark's NTT rows are natural order in and out (``InputOutputOrder::NN``), device-resident, CUDA-event
timed: ``dev_fwd``, ``dev_inv``, ``dev_coset_fwd``, ``dev_coset_inv``; they compare with zkgpu's
``forward-nn``, ``inverse-nn``, ``coset-nn`` and ``inverse-coset-nn`` (:data:`SPPARK_NTT_VARIANTS`).
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["SPPARK_NTT_VARIANTS", "read_sppark", "sppark_provenance", "ntt_vs_sppark", "load_ntt_vs_sppark"]

SPPARK_NTT_VARIANTS = {
    "dev_fwd": "forward-nn",
    "dev_inv": "inverse-nn",
    "dev_coset_fwd": "coset-nn",
    "dev_coset_inv": "inverse-coset-nn",
}
_COLUMNS = ["op", "lg_n", "variant", "median_ms", "min_ms", "max_ms", "repeats", "check"]


def read_sppark(path: str | Path) -> pd.DataFrame:
    """The CSV rows of a sppark-bench output file (``sppark.txt``; ``#`` comment lines and the ``gpu,`` line
    skipped): columns op, lg_n, variant, median_ms, min_ms, max_ms (ms), repeats, check. Rows skipped by
    the benchmark's deadline have NaN times.

    Raises:
        FileNotFoundError: no such file. ValueError: the file holds no result table.
    """
    lines = Path(path).read_text().splitlines()
    rows = [ln for ln in lines if ln.startswith(("ntt,", "msm,"))]
    if not rows:
        raise ValueError(f"{path}: no sppark-bench result rows (lines starting with 'ntt,' or 'msm,')")
    df = pd.read_csv(io.StringIO("\n".join(rows)), names=_COLUMNS, header=None)
    for c in ("median_ms", "min_ms", "max_ms"):
        df[c] = pd.to_numeric(df[c], errors="coerce")
    return df


def sppark_provenance(path: str | Path) -> dict[str, Any]:
    """What a sppark-bench output says about itself, for a manifest: ``vendor`` (name -> commit, from the
    ``# vendor:`` lines that run.sh copies from VENDOR_COMMITS), ``revision`` (the binary's sppark@commit
    line) and ``gpu`` (its ``gpu,`` line), each absent when the file lacks it."""
    out: dict[str, Any] = {}
    for ln in Path(path).read_text().splitlines():
        if ln.startswith("# vendor:"):
            parts = ln[len("# vendor:"):].split()
            if len(parts) >= 2:
                out.setdefault("vendor", {})[parts[0]] = parts[1]
        elif ln.startswith("# sppark_bench:") and "revision" not in out:
            out["revision"] = ln[len("# sppark_bench:"):].strip()
        elif ln.startswith("gpu,") and "gpu" not in out:
            out["gpu"] = ln[len("gpu,"):].strip()
    return out


def ntt_vs_sppark(zkgpu_rows: Iterable[dict[str, Any]] | pd.DataFrame, sppark: pd.DataFrame) -> pd.DataFrame:
    """One row per (log_n, variant, kernel) present in both: ``zkgpu_ms``, ``sppark_ms`` (medians) and
    ``ratio`` = zkgpu_ms / sppark_ms (< 1: zkgpu faster). ``zkgpu_rows``: rows of
    :func:`zkgpu.bench.ntt.run_benchmark` (or its ``ntt.csv``); ``sppark``: :func:`read_sppark`'s table."""
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
