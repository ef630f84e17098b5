"""``zkgpu bench msm``: the G1 (or G2) MSM timed on the GPU, written to a fresh ``bench-msm`` folder (msm.csv)."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import click
import numpy as np
import pandas as pd

from zkgpu.arith.field import FR, fr_random
from zkgpu.core import cuda as _cuda
from zkgpu.core import optional
from zkgpu.core.errors import CliError
from zkgpu.core.manifest import build_manifest, check_run_base, new_run_dir, write_json_new
from zkgpu.gpu.msm import bases
from zkgpu.gpu.msm import final as msm_final
from zkgpu.gpu.msm import pippenger as msm
from zkgpu.gpu.msm import precomp as msm_precomp
from zkgpu.gpu.msm import reduce as msm_reduce
from zkgpu.gpu.msm import window as msm_window

__all__ = ["check_log_sizes", "run_benchmark", "parse_precomp_windows", "bench_command"]

PRECOMP_MODE = "device_precomp"
"""The mode of the precomputed-bases rows at the path's own window (the rule's, :func:`zkgpu.gpu.msm.precomp.window_bits`);
``device_precomp_sweep`` marks the other windows of a sweep, ``precomp_build`` the table builds (one run each)."""


def _variant(s: dict[str, Any]) -> str:
    """The kernel variant of the rows: outline_mul / inline_mul (or the cubin's name), level 0 mode, chunk, then
    the reduction (:mod:`zkgpu.gpu.msm.reduce`: ``short`` or ``all`` partials through the rounds, ``-R<k>`` a
    rounds' chunk of its own, the chunk starts) and the final step (:mod:`zkgpu.gpu.msm.final`)."""
    variant = "inline_mul" if s["inline_mul"] else "outline_mul"
    if s["cubin"]:
        variant = "cubin:" + os.path.basename(s["cubin"])
    red = ("short" if msm_reduce.SHORT_FIRST else "all") + (f"-R{msm_reduce.ROUND_CHUNK}" if msm_reduce.ROUND_CHUNK else "")
    fin = msm_final.settings()
    return variant + f"/{s['level0']}/L{s['chunk']}/{red}/{msm_reduce.ROUND_STARTS}/final-{fin['final']}-{fin['inverse']}"


def _porep_scalars(n: int, rng: np.random.Generator) -> np.ndarray:
    """PoRep-like assignment: about 45% zeros, 45% ones, 10% uniform random."""
    sc = fr_random(n, rng)
    u = rng.random(n)
    sc[u < 0.45] = 0
    ones = (u >= 0.45) & (u < 0.9)
    sc[ones] = 0
    sc[ones, 0] = 1
    return sc


def _g2_rows(add: Callable[..., None], lg: int, pts: Any, sc: Any, c: int | None, repeat: int, warmup: int,
             phases: bool) -> None:
    """The G2 rows of one size: ``device`` (points checked and converted inside the timing) and
    ``device_prepared`` (:func:`zkgpu.gpu.msm.pippenger.prepare_points` once, as the prover's key), uniform
    scalars, and with ``phases`` one breakdown."""
    add(lg, "device", "uniform", _cuda.benchmark(functools.partial(msm.msm_device, pts, sc, c, group="g2"), warmup=warmup,
                                                 repeat=repeat).times_ms)
    mont = msm.prepare_points(pts, group="g2")
    add(lg, "device_prepared", "uniform", _cuda.benchmark(functools.partial(msm.msm_device, None, sc, c, mont=mont, group="g2"),
                                                          warmup=warmup, repeat=repeat).times_ms)
    if phases:
        ph = msm.Phases(True)
        msm.msm_device(None, sc, c, ph, mont=mont, group="g2")
        for name, ms in ph.result().items():
            add(lg, f"phase:{name}", "uniform", [ms])


def _api_rows(add: Callable[..., None], lg: int, pts: Any, sc: Any, window: int | None, repeat: int, warmup: int) -> None:
    """Rows ``kernels`` (msm_device unchecked), ``api`` (checked :func:`msm`) and ``api_trusted`` on device arrays."""
    out = _cuda.cupy().empty((1, pts.shape[1]), dtype=np.uint64)
    calls = {"kernels": functools.partial(msm.msm_device, pts, sc, window, check=False),
             "api": functools.partial(msm.msm, pts, sc, window=window),
             "api_trusted": functools.partial(msm.msm, pts, sc, window=window, check=False, out=out)}
    for mode, call in calls.items():
        add(lg, mode, "uniform", _cuda.benchmark(call, warmup=warmup, repeat=repeat).times_ms)


def _h2d_then_msm(buf: Any, pinned: Any, pts: Any, c: int | None) -> Any:
    """Copy the scalars from pinned host memory (async, current stream), then the MSM on them."""
    buf.set(pinned, stream=_cuda.cupy().cuda.get_current_stream())
    return msm.msm_device(pts, buf, c)


def parse_precomp_windows(text: str) -> tuple[int, ...]:
    """``--precomp-windows``: ``none``, ``auto`` (written 0) or a comma list of windows and ``auto``. Raises CliError:
    an item neither ``auto`` nor a window in ``MIN_C..MAX_C``."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    if items in ([], ["none"]):
        return ()
    out: list[int] = []
    for t in items:
        if t == "auto":
            out.append(0)
        elif t.isdigit() and msm_precomp.MIN_C <= int(t) <= msm_precomp.MAX_C:
            out.append(int(t))
        else:
            raise CliError(f"--precomp-windows: {t!r} is not 'auto', 'none' or a window in "
                           f"{msm_precomp.MIN_C}..{msm_precomp.MAX_C}")
    return tuple(dict.fromkeys(out))


def _precomp_rows(add: Callable[..., None], lg: int, pts: Any, scal: dict[str, Any], windows: Iterable[int],
                  repeat: int, warmup: int, phases: bool) -> None:
    """Rows of the precomputed-bases MSM for one size: per window (0 = the rule's) the table build (one run,
    ``precomp_build``), the MSM per scalar distribution, and with ``phases`` its breakdown
    (``phase_precomp:<name>``); each table freed before the next."""
    cp = _cuda.cupy()
    n = int(pts.shape[0])
    auto = msm_precomp.window_bits(n)
    mont = msm.prepare_points(pts)
    for name in msm_precomp.OWN_KERNELS:  # compiled (NVRTC) before the first build is timed
        msm_precomp._k(name)
    for c in dict.fromkeys(w or auto for w in windows):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        table = msm_precomp.PrecomputedBases.build(mont, c)
        end.record()
        end.synchronize()
        add(lg, "precomp_build", "", [float(cp.cuda.get_elapsed_time(start, end))], c)
        mode = PRECOMP_MODE if c == auto else PRECOMP_MODE + "_sweep"
        for name, sc in scal.items():
            call = functools.partial(msm_precomp.msm_precomputed, table, sc)
            add(lg, mode, name, _cuda.benchmark(call, warmup=warmup, repeat=repeat).times_ms, c)
            if phases:
                ph = msm.Phases(True)
                msm_precomp.msm_precomputed(table, sc, phases=ph)
                for pname, ms in ph.result().items():
                    add(lg, f"phase_precomp:{pname}", name, [ms], c)
        del table, call
        cp.get_default_memory_pool().free_all_blocks()
    del mont


#: the window sizes ``--window`` takes besides 0 (:func:`zkgpu.gpu.msm.pippenger.msm_device`'s range for ``c``)
MIN_WINDOW, MAX_WINDOW = 2, 24


def check_log_sizes(logs: Iterable[int]) -> list[int]:
    """The sizes as a list of log2 ints in [1, 31). Raises ValueError: none, or bad ones (names them)."""
    out = list(logs)
    if not out or any(isinstance(lg, bool) or not isinstance(lg, int) or not 1 <= lg < 31 for lg in out):
        raise ValueError(f"MSM benchmark sizes must be log2 sizes in [1, 31), got {out}")
    return out


def run_benchmark(
    min_log: int = 12, max_log: int = 20, repeat: int = 10, warmup: int = 1, seed: int = 1, *,
    sizes: Iterable[int] | None = None, phases: bool = True, window: int = 0, echo: Callable[[str], None] | None = None,
    precomp_windows: Iterable[int] = (), plain: bool = True, group: str = "g1",
) -> list[dict[str, Any]]:
    """Time the MSM at 2^min_log..2^max_log points (or ``sizes``), CUDA events, warm-up excluded. Modes: ``device``,
    ``pinned_h2d``, ``device_prepared``, ``kernels``/``api``/``api_trusted``, ``phase:<name>`` (``phases``); scalars
    uniform and ``porep``; with ``precomp_windows`` ``device_precomp``, ``device_precomp_sweep``, ``precomp_build``.
    ``group="g2"``: the G2 MSM. Returns dicts ``group, log2_n, n, mode, scalars, window_bits, variant, median_ms,
    min_ms, max_ms, repeat``. Raises: RuntimeError: no GPU. ValueError: bad size, repeat, group, or precomputed G2."""
    if group not in ("g1", "g2"):
        raise ValueError(f"group must be 'g1' or 'g2', got {group!r}")
    if group == "g2" and (precomp_windows or not plain):
        raise ValueError("the G2 benchmark has no precomputed-bases rows (precomp_windows, plain=False)")
    cupyx = optional.cupyx()
    logs = check_log_sizes(sizes if sizes is not None else range(min_log, max_log + 1))
    if repeat < 1 or warmup < 0:
        raise ValueError(f"need repeat >= 1 and warmup >= 0, got repeat={repeat}, warmup={warmup}")
    cp = _cuda.cupy()
    rng = np.random.default_rng(seed)
    rows: list[dict[str, Any]] = []
    variant = _variant(msm.settings())

    def add(lg: int, mode: str, scal: str, times: Any, c: int = 0) -> None:
        ts = list(times)
        row = dict(group=group, log2_n=lg, n=1 << lg, mode=mode, scalars=scal, window_bits=c or window or msm.window_bits(1 << lg), variant=variant,
                   median_ms=float(np.median(ts)), min_ms=min(ts), max_ms=max(ts), repeat=len(ts))
        rows.append(row)
        if echo is not None:
            echo(f"msm {group} 2^{lg} {mode:>22} {scal:>8} c={row['window_bits']:2d} median {row['median_ms']:9.3f} ms")

    for lg in logs:
        n = 1 << lg
        c = window or None
        pts = bases.generate_points(n, seed, group=group)
        sc_host = fr_random(n, rng)
        sc_dev = cp.asarray(sc_host)
        if group == "g2":
            _g2_rows(add, lg, pts, sc_dev, c, repeat, warmup, phases)
            del pts, sc_dev
            cp.get_default_memory_pool().free_all_blocks()
            continue
        sc_porep = cp.asarray(_porep_scalars(n, rng))
        sc_buf = pinned = None
        if plain:
            add(lg, "device", "uniform", _cuda.benchmark(functools.partial(msm.msm_device, pts, sc_dev, c), warmup=warmup, repeat=repeat).times_ms)
            _api_rows(add, lg, pts, sc_dev, window or None, repeat, warmup)
            pinned = cupyx.empty_pinned((n, FR.limbs), dtype=np.uint64)
            pinned[...] = sc_host
            sc_buf = cp.empty((n, FR.limbs), dtype=cp.uint64)
            pinned_call = functools.partial(_h2d_then_msm, sc_buf, pinned, pts, c)
            add(lg, "pinned_h2d", "uniform", _cuda.benchmark(pinned_call, warmup=warmup, repeat=repeat).times_ms)
            # PoRep-like: the window from the scalars > 1 (msm_window.sparse_window_bits; its count and read-back
            # are inside the timing) unless --window fixes it
            c_porep = c or msm_window.sparse_window_bits(sc_porep)
            add(lg, "device", "porep", _cuda.benchmark(functools.partial(msm.msm_device, pts, sc_porep, c or "sparse"), warmup=warmup,
                                                        repeat=repeat).times_ms, c_porep)
            # points prepared once (checked, Montgomery form: msm.prepare_points, as the pipeline's bases and as
            # sppark's msm_t, whose points are loaded before its timed invoke): the MSM without g1_prepare
            mont = msm.prepare_points(pts)
            add(lg, "device_prepared", "uniform", _cuda.benchmark(functools.partial(msm.msm_device, None, sc_dev, c, mont=mont),
                                                                  warmup=warmup, repeat=repeat).times_ms)
            add(lg, "device_prepared", "porep", _cuda.benchmark(functools.partial(msm.msm_device, None, sc_porep, c or "sparse", mont=mont),
                                                                warmup=warmup, repeat=repeat).times_ms, c_porep)
            del mont
            if phases:
                ph = msm.Phases(True)
                msm.msm_device(pts, sc_dev, c, phases=ph)
                for name, ms in ph.result().items():
                    add(lg, f"phase:{name}", "uniform", [ms])
        del sc_buf, pinned
        cp.get_default_memory_pool().free_all_blocks()
        if precomp_windows:
            _precomp_rows(add, lg, pts, {"uniform": sc_dev, "porep": sc_porep}, precomp_windows, repeat, warmup, phases)
        del pts, sc_dev, sc_porep
        cp.get_default_memory_pool().free_all_blocks()
    return rows


def _run_bench(sizes: list[int], repeat: int, warmup: int, seed: int, base: str | None, phases: bool, inline_mul: bool, window: int = 0,
               precomp_windows: tuple[int, ...] = (), plain: bool = True, group: str = "g1") -> Any:
    if inline_mul:
        msm.configure(inline_mul=True)
    rows = run_benchmark(sizes=sizes, repeat=repeat, warmup=warmup, seed=seed, phases=phases, window=window,
                         precomp_windows=precomp_windows, plain=plain, group=group, echo=lambda m: click.echo(m, err=True))
    out_dir = new_run_dir("bench-msm", base=Path(base) if base else None)  # after measuring: no empty folder if stopped
    variant = rows[0]["variant"] if rows else ""
    df = pd.DataFrame(rows)
    df.to_csv(out_dir / "msm.csv", index=False)
    s = msm.settings()
    write_json_new(
        out_dir / "manifest.json",
        build_manifest(kind="bench-msm", group=group, sizes_log2=sizes, window_override=window, precomp_windows=list(precomp_windows), plain=plain, repeat=repeat, warmup=warmup, seed=seed, chunk=s["chunk"], level0=s["level0"],
                       variant=variant, timing="CUDA events (zkgpu.core.cuda.benchmark), medians, ms", files=["msm.csv"]),
    )
    click.echo(f"wrote {out_dir}")
    click.echo(df.drop(columns=["n"]).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return df


@click.command("msm")
@click.option("--sizes", default="16,18,20,22,24,26", show_default=True, help="log2 sizes, comma separated")
@click.option("--min-log", type=click.IntRange(1, 30), default=None, help="with --max-log: every log2 size in between (instead of --sizes)")
@click.option("--max-log", type=click.IntRange(1, 30), default=None, help="see --min-log")
@click.option("--group", type=click.Choice(["g1", "g2"]), default="g1", show_default=True, help="the group of the MSM")
@click.option("--repeat", default=5, show_default=True, type=click.IntRange(min=1), help="timed calls per row (median reported)")
@click.option("--warmup", default=1, show_default=True, type=click.IntRange(min=0), help="untimed calls before them")
@click.option("--seed", default=1, show_default=True, type=click.IntRange(min=0), help="seed of the points and scalars")
@click.option("--out", "base", default=None, help="base folder for the run folder (default data/)")
@click.option("--phases/--no-phases", default=True, show_default=True, help="also record one per-phase breakdown")
@click.option("--window", default=0, show_default=True, help="window bits c (0: the window_bits rule)")
@click.option("--inline-mul", is_flag=True, help="compile with the Fq products inlined (zkgpu.gpu.msm.pippenger.INLINE_MUL)")
@click.option("--precomp-windows", default="none", show_default=True,
              help="MSM over precomputed shifted bases too: 'auto' (the rule's window), a list like 'auto,18,20,22', or 'none'")
@click.option("--plain/--no-plain", default=True, show_default=True, help="the msm_device rows (--no-plain: precomputed-bases rows only)")
def bench_msm(sizes: str, min_log: int | None, max_log: int | None, group: str, repeat: int, warmup: int, seed: int, base: str | None,
              phases: bool, inline_mul: bool, window: int, precomp_windows: str, plain: bool) -> None:
    """G1 MSM, 2^16..2^26 points: device-resident scalars, scalars from pinned host memory
    (async H2D inside the timing), and PoRep-like (mostly 0/1) scalars; with --precomp-windows also the MSM
    over precomputed shifted bases (table build timed apart); --group g2: the G2 MSM (uniform scalars, points
    checked inside the timing and prepared once); CUDA events, medians in ms, written to a fresh run folder
    (msm.csv + manifest.json)."""
    windows = parse_precomp_windows(precomp_windows)
    if (min_log is None) != (max_log is None) or (min_log is not None and max_log is not None and min_log > max_log):
        raise CliError(f"zkgpu bench msm: give --min-log and --max-log together, min <= max (got {min_log}, {max_log})")
    if min_log is not None and max_log is not None:
        sizes = ",".join(str(lg) for lg in range(min_log, max_log + 1))
    try:  # checked before the GPU, so a typo is named on any machine (and no run folder is made for it)
        logs = check_log_sizes([int(s) for s in sizes.split(",") if s.strip()])
    except ValueError:
        raise CliError(f"zkgpu bench msm: --sizes must be comma-separated log2 sizes in [1, 31), got {sizes!r}") from None
    if group == "g2" and (windows or not plain or inline_mul):
        raise CliError("zkgpu bench msm --group g2: no --precomp-windows, --no-plain or --inline-mul (G1 variants)")
    if window != 0 and not MIN_WINDOW <= window <= MAX_WINDOW:
        raise CliError(f"--window {window}: give 0 (the window_bits rule) or a window in {MIN_WINDOW}..{MAX_WINDOW} bits")
    check_run_base(base)
    if not _cuda.gpu_available():
        raise CliError("zkgpu bench msm needs a CUDA GPU (GPU benchmarks; without a GPU, replay the recordings: zkgpu report)")
    if not plain and not windows:
        raise CliError("zkgpu bench msm: --no-plain needs --precomp-windows (nothing would be measured)")
    _run_bench(logs, repeat, warmup, seed, base, phases, inline_mul, window, windows, plain, group)


bench_command = bench_msm
"""``zkgpu bench msm`` (registered by :mod:`zkgpu.app.cli`)."""
