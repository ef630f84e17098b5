"""``zkgpu bench prep``: the prep_msm variants timed at 2^20..2^26 PoRep-like scalars (prep.csv, prep.json)."""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Any

import click
import numpy as np
import pandas as pd

from zkgpu.core import cuda as _cuda
from zkgpu.core.errors import CliError
from zkgpu.core.manifest import build_manifest, check_run_base, new_run_dir, write_json_new
from zkgpu.gpu.msm.pippenger import prep_msm as prep_msm_reference
from zkgpu.gpu.msm.prep import PREPS, default_threads, numba_available, prep_msm_device, prep_msm_parallel
from zkgpu.pipeline.synthesis import fill_aux

__all__ = ["porep_like_scalars", "run_benchmark", "bench_command"]


def porep_like_scalars(n: int, seed: int = 0, zero: float = 0.45, one: float = 0.50) -> np.ndarray:
    """(n, 4) uint64 scalars with PoRep's shape (the pipeline's default :class:`~zkgpu.pipeline.config.Density`):
    0 with probability ``zero``, 1 with ``one``, otherwise uniform below 2^254."""
    out = np.empty((n, 4), dtype=np.uint64)
    return fill_aux(out, np.random.default_rng([seed, 0x93E9]), zero, one)


def run_benchmark(min_log: int = 20, max_log: int = 26, repeat: int = 5, threads: int | None = None,
                  preps: tuple[str, ...] = PREPS) -> list[dict[str, Any]]:
    """Median ms per variant and size: ``cpu``/``cpu_parallel`` wall time, ``gpu`` CUDA events (``device``,
    ``with_h2d``). Rows: log_n, prep, phase, threads, median/min/max ms, Mscalars_per_s; variants that cannot run are
    left out."""
    rows: list[dict[str, Any]] = []
    threads = default_threads() if threads is None else threads
    avail = [p for p in preps if not ((p == "cpu_parallel" and not numba_available()) or (p == "gpu" and not _cuda.gpu_available()))]
    for lg in range(min_log, max_log + 1):
        n = 1 << lg
        host = porep_like_scalars(n)
        cases: list[tuple[str, str, Any]] = []
        if "cpu" in avail:
            cases.append(("cpu", "host", functools.partial(prep_msm_reference, host)))
        if "cpu_parallel" in avail:
            cases.append(("cpu_parallel", "host", functools.partial(prep_msm_parallel, host, threads=threads)))
        if "gpu" in avail:
            cp = _cuda.cupy()
            dev = cp.asarray(host)
            cases.append(("gpu", "device", functools.partial(prep_msm_device, dev)))
            cases.append(("gpu", "with_h2d", functools.partial(prep_msm_device, host)))
        for variant, phase, fn in cases:
            fn()
            times = []
            for _ in range(repeat):
                if variant == "gpu":
                    times.append(_cuda.time_ms(fn))
                else:
                    t0 = time.perf_counter()
                    fn()
                    times.append((time.perf_counter() - t0) * 1e3)
            med = float(np.median(times))
            rows.append(dict(log_n=lg, n=n, prep=variant, phase=phase, threads=threads if variant == "cpu_parallel" else 1,
                             median_ms=med, min_ms=float(min(times)), max_ms=float(max(times)), repeat=repeat,
                             Mscalars_per_s=n / (med * 1e3) if med > 0 else float("nan")))
        del host
        if "gpu" in avail:
            del dev
            _cuda.cupy().get_default_memory_pool().free_all_blocks()
    return rows


@click.command("prep")
@click.option("--min-log", default=20, show_default=True, type=click.IntRange(0, 28), help="smallest size, log2")
@click.option("--max-log", default=26, show_default=True, type=click.IntRange(0, 28), help="largest size, log2")
@click.option("--repeat", default=5, show_default=True, type=click.IntRange(1, 1000), help="timed repeats per point (median reported)")
@click.option("--threads", default=None, type=click.IntRange(1, 256), help="cpu_parallel threads (default min(8, CPUs))")
@click.option("--out", "out_base", default=None, help="base folder for the run folder (default data/)")
def prep_bench(min_log: int, max_log: int, repeat: int, threads: int | None, out_base: str | None) -> None:
    """prep_msm variants (cpu, cpu_parallel, gpu) at 2^min-log .. 2^max-log: CSV + JSON + manifest."""
    if min_log > max_log:
        raise CliError(f"--min-log {min_log} / --max-log {max_log}: need --min-log <= --max-log")
    check_run_base(out_base)
    rows = run_benchmark(min_log, max_log, repeat, threads)
    run_dir = new_run_dir("bench-prep", base=Path(out_base) if out_base else None)
    df = pd.DataFrame(rows)
    df.to_csv(run_dir / "prep.csv", index=False)
    write_json_new(run_dir / "prep.json", rows)
    write_json_new(run_dir / "manifest.json", build_manifest(
        benchmark="prep", min_log=min_log, max_log=max_log, repeat=repeat,
        threads=threads or default_threads(), preps=sorted(set(df["prep"])) if len(df) else [],
        scalars="PoRep-like: 45% zero, 50% one, 5% uniform < 2^254",
        timing="cpu, cpu_parallel: perf_counter of the call; gpu: CUDA events (device-resident, and with the pageable H2D); medians, one warm-up"))
    if len(df):
        click.echo(df.pivot_table(index="log_n", columns=["prep", "phase"], values="median_ms").to_string(float_format=lambda v: f"{v:9.2f}"))
    click.echo(f"(median ms) written to {run_dir}")


bench_command = prep_bench
"""``zkgpu bench prep`` (registered by :mod:`zkgpu.app.cli`)."""
