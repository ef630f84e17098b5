"""H2D bandwidth under host memory-bandwidth load (``zkgpu bench load``): pageable vs pinned copies at several load levels."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import click
import numpy as np
import pandas as pd

from zkgpu.core import cuda as _cuda
from zkgpu.core import optional
from zkgpu.core.errors import CliError
from zkgpu.core.manifest import build_manifest, check_run_base, new_run_dir, write_json_new
from zkgpu.transfer import paths as transfer
from zkgpu.transfer.hostload import DEFAULT_BUFFER_BYTES, HostMemoryLoad, available_memory_bytes, check_count

__all__ = ["LOAD_COLUMNS", "h2d_under_load", "bench_command"]

MIB = 1 << 20

LOAD_COLUMNS = ("load_threads", "path", "size_bytes", "rep", "host_ms", "stream_ms", "gbps", "load_gbps")
"""Columns of :func:`h2d_under_load` (ms, bytes, decimal GB/s)."""


def h2d_under_load(
    levels: Iterable[int] = (0, 2, 4, 8, 12),
    *,
    size_bytes: int = 128 * MIB,
    paths: Sequence[str] = ("pageable", "pinned_raw"),
    repeat: int = 5,
    warmup: int = 1,
    buffer_bytes: int = DEFAULT_BUFFER_BYTES,
) -> pd.DataFrame:
    """H2D bandwidth of ``paths`` at each load level (HostMemoryLoad threads): one row per timed copy
    (:data:`LOAD_COLUMNS`). Raises RuntimeError: no GPU. ValueError/TypeError: a bad level, size, path or count."""
    levels = [check_count("load level", x, 0) for x in levels]
    if not levels:
        raise ValueError("levels must name at least one load level")
    size_bytes = check_count("size_bytes", size_bytes, 1)
    repeat, warmup = check_count("repeat", repeat, 1), check_count("warmup", warmup, 0)
    loads = [HostMemoryLoad(level, buffer_bytes) for level in levels]  # settings checked before any allocation
    fns = {p: transfer.TRANSFER_PATHS[p] for p in ("pageable", "pinned_raw")}
    bad = [p for p in paths if p not in fns]
    if bad or not paths:
        raise ValueError(f"paths must be a non-empty subset of {list(fns)}, got {list(paths)}")
    cp = _cuda.cupy()  # RuntimeError without a GPU
    cupyx = optional.cupyx()
    host = {"pageable": np.empty(size_bytes, dtype=np.uint8)}
    host["pageable"].fill(0xA5)
    if "pinned_raw" in paths:
        host["pinned_raw"] = cupyx.empty_pinned(size_bytes, dtype=np.uint8)
        host["pinned_raw"][:] = 0xA5
    dst = cp.empty(size_bytes, dtype=cp.uint8)
    stream = cp.cuda.Stream(non_blocking=True)
    rows: list[dict[str, Any]] = []
    for level, load in zip(levels, loads, strict=True):
        with load:
            time.sleep(0.2 if level else 0.0)  # let the load reach steady state
            mark = load.snapshot()
            first = len(rows)
            for path in paths:
                for rep in range(-warmup, repeat):
                    r = fns[path](host[path], dst, stream=stream)
                    if rep >= 0:
                        rows.append({"load_threads": level, "path": path, "size_bytes": size_bytes, "rep": rep,
                                     "host_ms": r.host_ms, "stream_ms": r.stream_ms, "gbps": r.gbps})
            traffic = load.since(mark).gbps
            for row in rows[first:]:
                row["load_gbps"] = traffic
    return pd.DataFrame(rows, columns=list(LOAD_COLUMNS))


@click.command("load")
@click.option("--out", "out_base", type=click.Path(file_okay=False), default=None, help="base folder for the run folder (default data/)")
@click.option("--levels", default="0,2,4,8,12", show_default=True, help="comma-separated numbers of load threads")
@click.option("--size", "size_mib", default=128, show_default=True, type=click.IntRange(min=1), help="copy size in MiB")
@click.option("--repeat", default=5, show_default=True, type=click.IntRange(min=1), help="timed copies per case")
def bench_command(out_base: str | None, levels: str, size_mib: int, repeat: int) -> None:
    """Pageable vs pinned H2D under host memory-bandwidth load (HostMemoryLoad threads).

    Writes load.csv (every copy), summary.csv (medians per level and path) and manifest.json
    into a fresh data/<gpu>-<date>-bench-load/ folder.
    """
    try:
        lv = [int(x) for x in levels.split(",") if x.strip()]
    except ValueError:
        raise CliError(f"--levels {levels!r}: give comma-separated numbers of load threads (e.g. --levels 0,2,4,8)") from None
    if not lv or min(lv) < 0:
        raise CliError(f"--levels {levels!r}: give one or more numbers of load threads >= 0 (e.g. --levels 0,2,4,8)")
    need, avail = 2 * max(lv) * DEFAULT_BUFFER_BYTES + size_mib * MIB, available_memory_bytes()
    if avail is not None and need > avail:
        raise CliError(f"--levels {max(lv)} / --size {size_mib}: the load buffers and the copy need {need / 2**30:.1f} GiB, "
                       f"more than the {avail / 2**30:.1f} GiB of available host memory (choose fewer threads)")
    check_run_base(out_base)
    if not _cuda.gpu_available():
        raise CliError("zkgpu bench load needs a CUDA GPU with CuPy (none found) (GPU benchmarks; without a GPU, replay the recordings: zkgpu report)")
    t0 = time.perf_counter()
    df = h2d_under_load(lv, size_bytes=size_mib * MIB, repeat=repeat)
    run_dir = new_run_dir("bench-load", base=Path(out_base) if out_base else None)
    df.to_csv(run_dir / "load.csv", index=False)
    summary = df.groupby(["load_threads", "path"], as_index=False)[["stream_ms", "gbps", "load_gbps"]].median()
    summary.to_csv(run_dir / "summary.csv", index=False)
    manifest = build_manifest(kind="bench-load", levels=lv, size_bytes=size_mib * MIB, repeat=repeat,
                              buffer_bytes=DEFAULT_BUFFER_BYTES, elapsed_s=round(time.perf_counter() - t0, 3),
                              files=["load.csv", "summary.csv"])
    write_json_new(run_dir / "manifest.json", manifest)
    click.echo(summary.to_string(index=False))
    click.echo(f"wrote {run_dir}")
