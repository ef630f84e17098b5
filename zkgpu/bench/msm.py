"""``zkgpu bench msm``: the G1 MSM (:mod:`zkgpu.msm`) timed on the GPU.

:func:`run_benchmark` times :func:`zkgpu.msm.msm_device` at 2^k points with device-resident uniform scalars,
the same scalars copied from pinned host memory inside the timing, PoRep-like mostly-0/1 scalars, and one
per-phase breakdown (:class:`zkgpu.msm.Phases`); :data:`bench_command` writes the rows to a fresh
``bench-msm`` run folder (msm.csv + manifest.json).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import click
import numpy as np
import pandas as pd

from .. import _cuda, bases, msm, optional
from ..errors import CliError
from ..field import FR, fr_random
from ..manifest import build_manifest, new_run_dir, write_json_new

__all__ = ["run_benchmark", "bench_command"]


def _variant(s: dict[str, Any]) -> str:
    """The kernel variant of the rows: outline_mul / inline_mul (or the cubin's name), level 0 mode, chunk."""
    variant = "inline_mul" if s["inline_mul"] else "outline_mul"
    if s["cubin"]:
        variant = "cubin:" + os.path.basename(s["cubin"])
    return variant + f"/{s['level0']}/L{s['chunk']}"


def _porep_scalars(n: int, rng: np.random.Generator) -> np.ndarray:
    """PoRep-like assignment: about 45% zeros, 45% ones, 10% uniform random."""
    sc = fr_random(n, rng)
    u = rng.random(n)
    sc[u < 0.45] = 0
    ones = (u >= 0.45) & (u < 0.9)
    sc[ones] = 0
    sc[ones, 0] = 1
    return sc


def _h2d_then_msm(buf: Any, pinned: Any, pts: Any, c: int | None) -> Any:
    """Copy the scalars from pinned host memory (async, current stream), then the MSM on them."""
    buf.set(pinned, stream=_cuda.cupy().cuda.get_current_stream())
    return msm.msm_device(pts, buf, c)


def run_benchmark(
    min_log: int = 12, max_log: int = 20, repeat: int = 10, warmup: int = 1, seed: int = 1, *,
    sizes: Iterable[int] | None = None, phases: bool = True, window: int = 0, echo: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """Time the G1 MSM on the GPU at 2^min_log .. 2^max_log points (or the log2 ``sizes``):
    device-resident uniform scalars (``mode=device``), the same scalars copied from pinned host
    memory inside the timing (``pinned_h2d``), PoRep-like mostly-0/1 scalars (``scalars=porep``),
    and with ``phases`` one per-phase breakdown (``mode=phase:<name>``, one run). CUDA events
    (:func:`zkgpu._cuda.benchmark`), warm-up excluded.

    Returns:
        one dict per (size, mode, scalars): ``log2_n, n, mode, scalars, window_bits, variant,
        median_ms, min_ms, max_ms, repeat`` (ms).

    Raises:
        RuntimeError: no GPU. ValueError: a size outside [1, 31) or repeat < 1.
    """
    cupyx = optional.cupyx()
    logs = list(sizes) if sizes is not None else list(range(min_log, max_log + 1))
    if not logs or any(isinstance(lg, bool) or not isinstance(lg, int) or not 1 <= lg < 31 for lg in logs):
        raise ValueError(f"MSM benchmark sizes must be log2 sizes in [1, 31), got {logs}")
    if repeat < 1 or warmup < 0:
        raise ValueError(f"need repeat >= 1 and warmup >= 0, got repeat={repeat}, warmup={warmup}")
    cp = _cuda.cupy()
    rng = np.random.default_rng(seed)
    rows: list[dict[str, Any]] = []
    variant = _variant(msm.settings())

    def add(lg: int, mode: str, scal: str, times: Any) -> None:
        ts = list(times)
        row = dict(log2_n=lg, n=1 << lg, mode=mode, scalars=scal, window_bits=window or msm.window_bits(1 << lg), variant=variant,
                   median_ms=float(np.median(ts)), min_ms=min(ts), max_ms=max(ts), repeat=len(ts))
        rows.append(row)
        if echo is not None:
            echo(f"msm 2^{lg} {mode:>22} {scal:>8} c={row['window_bits']:2d} median {row['median_ms']:9.3f} ms")

    for lg in logs:
        n = 1 << lg
        c = window or None
        pts = bases.generate_points(n, seed)
        sc_host = fr_random(n, rng)
        sc_dev = cp.asarray(sc_host)
        add(lg, "device", "uniform", _cuda.benchmark(functools.partial(msm.msm_device, pts, sc_dev, c), warmup=warmup, repeat=repeat).times_ms)
        pinned = cupyx.empty_pinned((n, FR.limbs), dtype=np.uint64)
        pinned[...] = sc_host
        sc_buf = cp.empty((n, FR.limbs), dtype=cp.uint64)
        pinned_call = functools.partial(_h2d_then_msm, sc_buf, pinned, pts, c)
        add(lg, "pinned_h2d", "uniform", _cuda.benchmark(pinned_call, warmup=warmup, repeat=repeat).times_ms)
        sc_porep = cp.asarray(_porep_scalars(n, rng))
        add(lg, "device", "porep", _cuda.benchmark(functools.partial(msm.msm_device, pts, sc_porep, c), warmup=warmup, repeat=repeat).times_ms)
        if phases:
            ph = msm.Phases(True)
            msm.msm_device(pts, sc_dev, c, phases=ph)
            for name, ms in ph.result().items():
                add(lg, f"phase:{name}", "uniform", [ms])
        del pts, sc_dev, sc_buf, pinned, sc_porep
        cp.get_default_memory_pool().free_all_blocks()
    return rows


def _run_bench(sizes: list[int], repeat: int, warmup: int, seed: int, base: str | None, phases: bool, inline_mul: bool, window: int = 0) -> Any:
    if inline_mul:
        msm.configure(inline_mul=True)
    out_dir = new_run_dir("bench-msm", base=Path(base) if base else None)
    rows = run_benchmark(sizes=sizes, repeat=repeat, warmup=warmup, seed=seed, phases=phases, window=window, echo=lambda m: click.echo(m, err=True))
    variant = rows[0]["variant"] if rows else ""
    df = pd.DataFrame(rows)
    df.to_csv(out_dir / "msm.csv", index=False)
    s = msm.settings()
    write_json_new(
        out_dir / "manifest.json",
        build_manifest(kind="bench-msm", sizes_log2=sizes, window_override=window, repeat=repeat, warmup=warmup, seed=seed, chunk=s["chunk"], level0=s["level0"],
                       variant=variant, timing="CUDA events (zkgpu._cuda.benchmark), medians, ms", files=["msm.csv"]),
    )
    click.echo(f"wrote {out_dir}")
    click.echo(df.drop(columns=["n"]).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return df


@click.command("msm")
@click.option("--sizes", default="16,18,20,22,24,26", show_default=True, help="log2 sizes, comma separated")
@click.option("--repeat", default=5, show_default=True)
@click.option("--warmup", default=1, show_default=True)
@click.option("--seed", default=1, show_default=True)
@click.option("--out", "base", default=None, help="base folder for the run folder (default data/)")
@click.option("--phases/--no-phases", default=True, show_default=True, help="also record one per-phase breakdown")
@click.option("--window", default=0, show_default=True, help="window bits c (0: the window_bits rule)")
@click.option("--inline-mul", is_flag=True, help="compile with the Fq products inlined (zkgpu.msm.INLINE_MUL)")
def bench_msm(sizes: str, repeat: int, warmup: int, seed: int, base: str | None, phases: bool, inline_mul: bool, window: int) -> None:
    """G1 MSM, 2^16..2^26 points: device-resident scalars, scalars from pinned host memory
    (async H2D inside the timing), and PoRep-like (mostly 0/1) scalars; CUDA events, medians
    in ms, written to a fresh run folder (msm.csv + manifest.json)."""
    if not _cuda.gpu_available():
        raise CliError("zkgpu bench msm needs a CUDA GPU (GPU benchmarks; without a GPU, replay the recordings: zkgpu report)")
    _run_bench([int(s) for s in sizes.split(",") if s.strip()], repeat, warmup, seed, base, phases, inline_mul, window)


bench_command = bench_msm
"""``zkgpu bench msm`` (registered by :mod:`zkgpu.cli`)."""
