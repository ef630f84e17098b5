"""The H2D bandwidth sweep over every transfer path, its summaries, pinning costs, and ``zkgpu bench h2d``."""

from __future__ import annotations

import contextlib
import math
import mmap
import os
import re
import time
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import click
import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from zkgpu.core import cuda as _cuda
from zkgpu.core import optional
from zkgpu.core.errors import CliError
from zkgpu.core.manifest import build_manifest, check_run_base, new_run_dir, write_json_new
from zkgpu.transfer.host_alloc import CUDA_HOST_ALLOC_PORTABLE, CudaHostAllocator, host_ptr
from zkgpu.transfer.paths import CUDA_HOST_REGISTER_DEFAULT, PATHS, TRANSFER_PATHS, rate_gbps
from zkgpu.transfer.pinned_pool import PinnedPool

__all__ = ["DEFAULT_SIZES", "SWEEP_COLUMNS", "bandwidth_sweep", "summarize_sweep", "pool_efficiency", "host_alloc_costs", "bench_command"]

GIB = 1 << 30
MIB = 1 << 20

#: Default sweep sizes: 1 MiB, 4 MiB, 16 MiB, 64 MiB, 256 MiB, 1 GiB, 4 GiB (powers of 4).
DEFAULT_SIZES: tuple[int, ...] = tuple(1 << s for s in range(20, 33, 2))

#: Columns of :func:`bandwidth_sweep` (one row per timed copy). Costs not paid by a path are NaN.
SWEEP_COLUMNS: tuple[str, ...] = (
    "path",  # one of PATHS
    "size_bytes",  # bytes copied
    "fresh_buffer",  # bool, see bandwidth_sweep
    "repeat",  # 0 .. repeat-1 (warm-up copies are not recorded)
    "host_ms",  # calling thread blocked in the copy call (perf_counter)
    "stream_ms",  # CUDA events: call start -> copy finished
    "wall_ms",  # perf_counter: call start -> end event completed
    "gbps",  # size_bytes / stream_ms, 10^9 B/s
    "overhead_ms",  # pinning paid for this copy outside the stream window
    "effective_gbps",  # size_bytes / (stream_ms + overhead_ms)
    "alloc_ms",  # time to obtain the source buffer for this copy (fresh buffers, pool checkouts)
    "touch_ms",  # writing the data into a fresh source buffer (its first touch; not in any *_gbps)
    "stage_ms",  # pinned_staging: host memcpy into the staging buffer
    "register_ms",  # registered: cudaHostRegister
    "unregister_ms",  # registered: cudaHostUnregister
    "staging_bytes",  # cupy_asarray: pinned staging bytes CuPy requested
    "src_pinned",  # the DMA source was page-locked
    "verified",  # the device bytes were compared with the source after this copy (True) or not checked (NaN)
)

_TILE = 1 << 20  # the test pattern repeats every 1 MiB


class _PageableBuffer:
    """A pageable uint8 numpy array over its own anonymous ``mmap``: its pages are untouched (not
    yet backed by RAM) until first written, and go back to the OS at :meth:`close` — unlike a
    ``numpy.empty`` that malloc may serve from already-touched heap pages."""

    def __init__(self, nbytes: int) -> None:
        self._mm = mmap.mmap(-1, nbytes)
        self.array = np.frombuffer(self._mm, dtype=np.uint8)

    def close(self) -> None:
        del self.array  # the last reference of ours: the mapping can close
        with contextlib.suppress(BufferError):  # a view is still alive somewhere: the mapping goes with it
            self._mm.close()


def _pattern(seed: int = 0x5EED) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, _TILE, dtype=np.uint8)


def _fill(buf: np.ndarray, tile: np.ndarray) -> None:
    """Write the repeating pattern into a 1-D uint8 buffer (first touch of a fresh buffer)."""
    n = buf.nbytes
    full = n // _TILE
    if full:
        buf[: full * _TILE].reshape(full, _TILE)[:] = tile
    rem = n - full * _TILE
    if rem:
        buf[full * _TILE :] = tile[:rem]


def _device_matches(cp: Any, d: Any, tile_d: Any, nbytes: int) -> bool:
    """Compare a 1-D uint8 device array with the repeating pattern, 256 MiB at a time."""
    d = d.reshape(-1).view(cp.uint8)
    full = nbytes // _TILE
    rows = 256
    for r0 in range(0, full, rows):
        r1 = min(full, r0 + rows)
        if not bool((d[r0 * _TILE : r1 * _TILE].reshape(r1 - r0, _TILE) == tile_d).all()):
            return False
    rem = nbytes - full * _TILE
    return not rem or bool((d[full * _TILE :] == tile_d[:rem]).all())


def _parse_sizes(sizes: Iterable[int]) -> list[int]:
    out = []
    for s in sizes:
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 1:
            raise ValueError(f"sizes must be positive ints (bytes), got {s!r}")
        out.append(int(s))
    if not out:
        raise ValueError("sizes is empty")
    return sorted(out)


def bandwidth_sweep(
    sizes: Iterable[int] = DEFAULT_SIZES,
    paths: Sequence[str] = PATHS,
    fresh: Sequence[bool] = (False, True),
    repeat: int = 5,
    warmup: int = 1,
    *,
    verify: bool | int = True,
    time_budget_s: float | None = None,
    progress: bool = False,
) -> pd.DataFrame:
    """H2D bandwidth of every path over sizes, with reused and fresh (never-touched) host buffers.

    Args:
        sizes: bytes per copy (default :data:`DEFAULT_SIZES`). paths: subset of :data:`~zkgpu.transfer.paths.PATHS`.
        fresh: which of False/True to run. repeat (>= 1), warmup (>= 0): copies per case.
        verify: check the bytes (an int: only sizes up to it). time_budget_s: stop before a new size past it.
        progress: a tqdm bar.
    Returns:
        DataFrame of :data:`SWEEP_COLUMNS`; ``attrs``: ``skipped_sizes``, ``repeat``, ``warmup``, ``pool_stats``.
    Raises:
        RuntimeError: no GPU, or wrong bytes. ValueError: unknown path, bad sizes, repeat or warmup."""

    sizes = _parse_sizes(sizes)
    paths = list(paths)
    bad = [p for p in paths if p not in TRANSFER_PATHS]
    if bad:
        raise ValueError(f"unknown transfer path(s) {bad}; known: {list(PATHS)}")
    fresh = [bool(f) for f in fresh]
    if not fresh:
        raise ValueError("fresh is empty (use (False,), (True,) or (False, True))")
    if repeat < 1 or warmup < 0:
        raise ValueError(f"repeat must be >= 1 and warmup >= 0, got repeat={repeat} warmup={warmup}")
    cp = _cuda.cupy()
    cupyx = optional.cupyx()
    stream = cp.cuda.Stream(non_blocking=True)
    tile = _pattern()
    tile_d = cp.asarray(tile)
    cupy_pinned_pool = cp.get_default_pinned_memory_pool()
    pool = PinnedPool(CudaHostAllocator())
    rows: list[dict[str, Any]] = []
    skipped: list[int] = []
    t_start = time.perf_counter()
    combos = [(s, p, f) for s in sizes for p in paths for f in fresh]
    bar = None
    if progress:
        bar = tqdm(total=len(combos), desc="h2d sweep", unit="case")
    try:
        for size in sizes:
            if time_budget_s is not None and time.perf_counter() - t_start > time_budget_s:
                skipped = [s for s in sizes if s >= size]
                warnings.warn(f"bandwidth_sweep: time budget {time_budget_s} s used up; skipped sizes {skipped}", RuntimeWarning, stacklevel=2)
                break
            dst = cp.empty(size, dtype=cp.uint8)
            for path in paths:
                for is_fresh in fresh:
                    check = verify if isinstance(verify, bool) else size <= int(verify)
                    rows.extend(_sweep_case(cp, cupyx, path, size, is_fresh, repeat, warmup, check, stream, dst, tile, tile_d, pool, cupy_pinned_pool))
                    if bar is not None:
                        bar.update(1)
            del dst
            pool.shrink(0)
            cupy_pinned_pool.free_all_blocks()
            cp.get_default_memory_pool().free_all_blocks()
    finally:
        if bar is not None:
            bar.close()
        pool_stats = pool.stats().as_dict()
        pool.close()
        cupy_pinned_pool.free_all_blocks()
    df = _sweep_frame(rows)
    df.attrs.update(skipped_sizes=skipped, repeat=repeat, warmup=warmup, pool_stats=pool_stats)
    return df


def _sweep_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows → the :data:`SWEEP_COLUMNS` frame with stable dtypes (writable as CSV and Parquet)."""
    df = pd.DataFrame(rows, columns=list(SWEEP_COLUMNS))
    floats = {c: "float64" for c in SWEEP_COLUMNS if c not in ("path", "size_bytes", "fresh_buffer", "repeat", "src_pinned", "verified")}
    verified = df["verified"].map(lambda v: pd.NA if v is None or (isinstance(v, float) and math.isnan(v)) else bool(v))
    df = df.astype({"path": "string", "size_bytes": "int64", "fresh_buffer": "bool", "repeat": "int64", "src_pinned": "bool", **floats})
    df["verified"] = verified.astype("boolean")
    return df


def _sweep_case(cp: Any, cupyx: Any, path: str, size: int, is_fresh: bool, repeat: int, warmup: int, verify: bool, stream: Any, dst: Any,
                tile: np.ndarray, tile_d: Any, pool: PinnedPool, cupy_pinned_pool: Any) -> list[dict[str, Any]]:
    """One (size, path, fresh) cell of the sweep: warm-up plus ``repeat`` recorded copies."""
    fn = TRANSFER_PATHS[path]
    rows: list[dict[str, Any]] = []
    reused_src: Any = None
    reused_owner: _PageableBuffer | None = None
    staging = None
    pinned_kind = path in ("pinned_pool", "pinned_raw")
    try:
        if path == "pinned_staging":
            staging = pool.checkout(size)

        def new_source() -> tuple[Any, Any]:
            """A source buffer of ``size`` bytes for this path, and the owner to close (pageable)."""
            if path == "pinned_pool":
                return pool.checkout(size), None
            if path == "pinned_raw":
                return cupyx.empty_pinned(size, dtype=np.uint8), None
            buf = _PageableBuffer(size)
            return buf.array, buf

        if not is_fresh:  # one source for the whole cell
            reused_src, reused_owner = new_source()
            _fill(reused_src, tile)
        for i in range(warmup + repeat):
            alloc_ms = touch_ms = math.nan
            owner = None
            if is_fresh:
                if path == "pinned_pool":
                    pool.shrink(0)  # no free buffer left: the checkout must cudaHostAlloc
                elif path == "pinned_raw":
                    cupy_pinned_pool.free_all_blocks()
                t0 = time.perf_counter()
                src, owner = new_source()
                alloc_ms = (time.perf_counter() - t0) * 1e3
                t0 = time.perf_counter()
                _fill(src, tile)
                touch_ms = (time.perf_counter() - t0) * 1e3
            else:
                src = reused_src
                if path == "pinned_pool":  # the pipeline's checkout of a reused buffer
                    old = host_ptr(src)
                    pool.checkin(src)
                    t0 = time.perf_counter()
                    src = reused_src = pool.checkout(size)
                    alloc_ms = (time.perf_counter() - t0) * 1e3
                    if host_ptr(src) != old:  # another free buffer fitted better: write the data again
                        _fill(src, tile)
            if verify and path != "cupy_asarray":
                dst.fill(0)
                stream.synchronize()
                cp.cuda.Device().synchronize()
            try:
                if path == "cupy_asarray":
                    res = fn(src, stream=stream)
                elif path == "pinned_staging":
                    res = fn(src, dst, stream=stream, staging=staging)
                else:
                    res = fn(src, dst, stream=stream)
                ok = math.nan
                if verify:
                    target = res.dst if path == "cupy_asarray" else dst
                    ok = _device_matches(cp, target, tile_d, size)
                    if not ok:
                        raise RuntimeError(f"bandwidth_sweep: {path} copy of {size} bytes (fresh={is_fresh}, iteration {i}) delivered wrong bytes")
                res.dst = None
            finally:
                if is_fresh:
                    if path == "pinned_pool":
                        pool.checkin(src)
                    del src
                    if owner is not None:
                        owner.close()
            if i < warmup:
                continue
            overhead = res.overhead_ms + (alloc_ms if (is_fresh and pinned_kind) else 0.0)
            row: dict[str, Any] = dict.fromkeys(SWEEP_COLUMNS, math.nan)
            row.update(
                path=path,
                size_bytes=size,
                fresh_buffer=is_fresh,
                repeat=i - warmup,
                host_ms=res.host_ms,
                stream_ms=res.stream_ms,
                wall_ms=res.wall_ms,
                gbps=res.gbps,
                overhead_ms=overhead,
                effective_gbps=rate_gbps(size, res.stream_ms + overhead),
                alloc_ms=alloc_ms,
                touch_ms=touch_ms,
                src_pinned=res.src_pinned,
                verified=ok,
            )
            for k in ("stage_ms", "register_ms", "unregister_ms", "staging_bytes"):
                if k in res.extra:
                    row[k] = res.extra[k]
            rows.append(row)
    finally:
        if staging is not None:
            pool.checkin(staging)
        if reused_src is not None and path == "pinned_pool":
            pool.checkin(reused_src)
        del reused_src
        if reused_owner is not None:
            reused_owner.close()
    return rows


_SUMMARY_VALUES = ("host_ms", "stream_ms", "wall_ms", "gbps", "overhead_ms", "effective_gbps", "alloc_ms", "touch_ms", "stage_ms", "register_ms", "unregister_ms", "staging_bytes")


def summarize_sweep(df: pd.DataFrame) -> pd.DataFrame:
    """Medians per (path, size_bytes, fresh_buffer) with ``n`` copies. Raises ValueError: a key column missing."""
    keys = ["path", "size_bytes", "fresh_buffer"]
    missing = [k for k in keys if k not in df.columns]
    if missing:
        raise ValueError(f"summarize_sweep: missing columns {missing}")
    values = [c for c in _SUMMARY_VALUES if c in df.columns]
    g = df.groupby(keys, sort=True, observed=True)
    out = g[values].median()
    out.insert(0, "n", g.size())
    out = out.reset_index()
    return pd.DataFrame(out)


def pool_efficiency(df: pd.DataFrame, *, min_size: int = 256 * MIB, threshold: float = 0.9, pool_path: str = "pinned_pool", raw_path: str = "pinned_raw") -> pd.DataFrame:
    """Pinned-pool gbps >= ``threshold`` × raw pinned at sizes >= ``min_size`` (reused buffers, same sweep). Returns
    ``size_bytes, pool_gbps, raw_gbps, ratio, ok``; ``attrs["passed"]``. Raises ValueError: no such size."""
    d = df[(~df["fresh_buffer"].astype(bool)) & (df["size_bytes"] >= min_size)]
    med = d.groupby(["path", "size_bytes"], observed=True)["gbps"].median()
    rows = []
    for size in sorted(set(d["size_bytes"])):
        if (pool_path, size) in med.index and (raw_path, size) in med.index:
            pg, rg = float(med[(pool_path, size)]), float(med[(raw_path, size)])
            ratio = pg / rg if rg > 0 else math.nan
            rows.append(dict(size_bytes=int(size), pool_gbps=pg, raw_gbps=rg, ratio=ratio, ok=bool(ratio >= threshold)))
    if not rows:
        raise ValueError(f"pool_efficiency: no size >= {min_size} bytes has both {pool_path!r} and {raw_path!r} with fresh_buffer=False")
    out = pd.DataFrame(rows)
    out.attrs.update(passed=bool(out["ok"].all()), threshold=threshold, min_size=min_size)
    return out


def host_alloc_costs(sizes: Iterable[int] = DEFAULT_SIZES, repeat: int = 3) -> pd.DataFrame:
    """Pinning costs per size, ms: ``hostAlloc``, ``freeHost``, ``touch``, ``hostRegister``, ``hostUnregister``. Returns
    ``op, size_bytes, repeat, ms, gbps``. Raises RuntimeError: no GPU; ValueError: bad sizes or repeat."""
    sizes = _parse_sizes(sizes)
    if repeat < 1:
        raise ValueError(f"repeat must be >= 1, got {repeat}")
    cp = _cuda.cupy()
    rt = cp.cuda.runtime
    tile = _pattern()
    rows = []

    def add(op: str, size: int, r: int, ms: float) -> None:
        rows.append(dict(op=op, size_bytes=size, repeat=r, ms=ms, gbps=rate_gbps(size, ms)))

    for size in sizes:
        for r in range(repeat):
            t0 = time.perf_counter()
            ptr = rt.hostAlloc(size, CUDA_HOST_ALLOC_PORTABLE)
            t1 = time.perf_counter()
            rt.freeHost(ptr)
            t2 = time.perf_counter()
            add("hostAlloc", size, r, (t1 - t0) * 1e3)
            add("freeHost", size, r, (t2 - t1) * 1e3)
            owner = _PageableBuffer(size)
            arr = owner.array
            t0 = time.perf_counter()
            _fill(arr, tile)
            t1 = time.perf_counter()
            rt.hostRegister(host_ptr(arr), size, CUDA_HOST_REGISTER_DEFAULT)
            t2 = time.perf_counter()
            rt.hostUnregister(host_ptr(arr))
            t3 = time.perf_counter()
            add("touch", size, r, (t1 - t0) * 1e3)
            add("hostRegister", size, r, (t2 - t1) * 1e3)
            add("hostUnregister", size, r, (t3 - t2) * 1e3)
            del arr
            owner.close()
    return pd.DataFrame(rows, columns=["op", "size_bytes", "repeat", "ms", "gbps"])


# --------------------------------------------------------------------------------------------
# `zkgpu bench h2d`
# --------------------------------------------------------------------------------------------

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "m": MIB, "mib": MIB, "g": GIB, "gib": GIB}


def _parse_bytes(text: str | int) -> int:
    """``"256MiB"`` / ``"4GiB"`` / ``"1048576"`` → bytes (binary units)."""
    if isinstance(text, int):
        return text
    m = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError(f"not a size: {text!r} (use e.g. 1048576, 256MiB, 4GiB)")
    return int(m.group(1)) * _UNITS[m.group(2).lower()]




@click.command("h2d")
@click.option("--out", "out_base", type=click.Path(file_okay=False), default=None, help="base folder for the run folder (default data/)")
@click.option("--min-size", default="1MiB", show_default=True, help="smallest copy (bytes or e.g. 1MiB)")
@click.option("--max-size", default="1GiB", show_default=True, help="largest copy; sizes are powers of 4 from --min-size (4GiB for the full sweep)")
@click.option("--repeat", default=3, show_default=True, type=click.IntRange(min=1), help="recorded copies per case")
@click.option("--warmup", default=1, show_default=True, type=click.IntRange(min=0), help="untimed copies per case")
@click.option("--path", "paths", multiple=True, type=click.Choice(list(PATHS)), help="transfer path (repeatable; default all)")
@click.option("--no-fresh", is_flag=True, help="only reused host buffers")
@click.option("--time-budget", default=240.0, show_default=True, type=float, help="stop starting new sizes after this many seconds")
@click.option("--verify-max", default="64MiB", show_default=True, help="compare the copied bytes only up to this size")
@click.option("--large-from", default="2GiB", show_default=True, help="sizes from here on run only --large-path paths, reused buffers")
@click.option("--large-path", "large_paths", multiple=True, type=click.Choice(list(PATHS)), help="paths for the large sizes (default: pageable, cupy_asarray, pinned_pool, pinned_raw)")
@click.option("--alloc-repeat", default=2, show_default=True, type=click.IntRange(min=0), help="repeats of the hostAlloc/hostRegister cost table (0: skip)")
def bench_command(out_base: str | None, min_size: str, max_size: str, repeat: int, warmup: int, paths: tuple[str, ...], no_fresh: bool, time_budget: float, verify_max: str, large_from: str, large_paths: tuple[str, ...], alloc_repeat: int) -> None:
    """H2D bandwidth of every transfer path (pageable … pinned pool), fresh vs reused buffers.

    Writes sweep.csv/.parquet (every copy), summary.csv (medians), efficiency.csv (pinned pool
    vs raw pinned at >= 256 MiB), host_alloc.csv (cudaHostAlloc/cudaHostRegister costs) and
    manifest.json into a fresh data/<gpu>-<date>-bench-h2d/ folder.
    """
    for opt, chosen in (("--path", paths), ("--large-path", large_paths)):
        twice = sorted({x for x in chosen if chosen.count(x) > 1})
        if twice:
            raise CliError(f"{opt} {twice[0]} given twice: each path is measured once per size (give it once)")
    sized = {}
    for opt, text in (("--min-size", min_size), ("--max-size", max_size), ("--verify-max", verify_max), ("--large-from", large_from)):
        try:
            sized[opt] = _parse_bytes(text)
        except ValueError as exc:
            raise CliError(f"{opt} {text}: {exc}") from None
    lo, hi, vmax, big = sized.values()
    if lo < 1 or hi < lo:
        raise CliError(f"--min-size {min_size} / --max-size {max_size}: need 1 <= --min-size <= --max-size (got {lo} and {hi} bytes)")
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if hi > ram:
        raise CliError(f"--max-size {max_size}: {hi} bytes is more than this machine's memory ({ram / GIB:.1f} GiB); choose a smaller size")
    if not math.isfinite(time_budget) or time_budget <= 0:
        raise CliError(f"--time-budget {time_budget}: give a positive number of seconds (e.g. --time-budget 240)")
    check_run_base(out_base)
    if not _cuda.gpu_available():
        raise CliError("zkgpu bench h2d needs a CUDA GPU with CuPy (none found) (GPU benchmarks; without a GPU, replay the recordings: zkgpu report)")
    sizes = []
    s = lo
    while s <= hi:
        sizes.append(s)
        s *= 4
    use_paths = list(paths) or list(PATHS)
    fresh = (False,) if no_fresh else (False, True)
    t0 = time.perf_counter()
    small, large = [x for x in sizes if x < big], [x for x in sizes if x >= big]
    parts = []
    if small:
        parts.append(bandwidth_sweep(small, use_paths, fresh, repeat=repeat, warmup=warmup, verify=vmax, time_budget_s=time_budget, progress=False))
    if large:
        lp = [p for p in (large_paths or ("pageable", "cupy_asarray", "pinned_pool", "pinned_raw")) if p in use_paths]
        left = None if time_budget is None else max(1.0, time_budget - (time.perf_counter() - t0))
        parts.append(bandwidth_sweep(large, lp, (False,), repeat=repeat, warmup=warmup, verify=vmax, time_budget_s=left, progress=False))
    df = pd.concat(parts, ignore_index=True)
    df.attrs = {
        "skipped_sizes": [x for part in parts for x in part.attrs.get("skipped_sizes", [])],
        "pool_stats": [part.attrs.get("pool_stats") for part in parts],
    }
    sweep_s = time.perf_counter() - t0
    run_dir = new_run_dir("bench-h2d", base=Path(out_base) if out_base else None)  # after measuring: no empty folder if stopped
    df.to_csv(run_dir / "sweep.csv", index=False)
    df.to_parquet(run_dir / "sweep.parquet", index=False)
    summary = summarize_sweep(df)
    summary.to_csv(run_dir / "summary.csv", index=False)
    eff_info: dict[str, Any] = {"passed": None, "note": None}
    try:
        eff = pool_efficiency(df)
        eff.to_csv(run_dir / "efficiency.csv", index=False)
        eff_info = {"passed": eff.attrs["passed"], "rows": eff.to_dict(orient="records")}
    except ValueError as exc:
        eff_info["note"] = str(exc)
    alloc_sizes = [x for x in sizes if x not in df.attrs.get("skipped_sizes", [])]
    if alloc_repeat and alloc_sizes:
        host_alloc_costs(alloc_sizes, repeat=alloc_repeat).to_csv(run_dir / "host_alloc.csv", index=False)
    manifest = build_manifest(
        kind="bench-h2d",
        sizes=sizes,
        skipped_sizes=df.attrs.get("skipped_sizes", []),
        paths=use_paths,
        fresh=list(fresh),
        large_sizes={"from_bytes": big, "paths": list(large_paths) or ["pageable", "cupy_asarray", "pinned_pool", "pinned_raw"], "fresh": [False]},
        verify_max_bytes=vmax,
        repeat=repeat,
        warmup=warmup,
        time_budget_s=time_budget,
        sweep_seconds=round(sweep_s, 2),
        gbps_unit="1e9 bytes/s",
        pool_efficiency=eff_info,
        sweep_pool_stats=df.attrs.get("pool_stats"),
        files=sorted(p.name for p in run_dir.iterdir()) + ["manifest.json"],
    )
    write_json_new(run_dir / "manifest.json", manifest)
    med = summary[~summary["fresh_buffer"]].pivot(index="size_bytes", columns="path", values="gbps")
    click.echo(f"H2D GB/s (10^9 B/s), reused buffers, median of {repeat}:")
    click.echo(med.round(2).to_string())
    click.echo(f"pool efficiency (>= 256 MiB, >= 90% of pinned_raw): {eff_info.get('passed')}")
    click.echo(f"wrote {run_dir}")
