"""``zkgpu bench ntt``: the Fr NTT kernels timed on the GPU, and beside sppark's.

:func:`run_benchmark` times every transform of :data:`BENCH_VARIANTS` on device-resident random data with
each kernel of :data:`KERNEL_SPEC_PARTS` (CUDA events, :func:`zkgpu.core.cuda.benchmark`), plus the whole
Groth16 H computation (:func:`zkgpu.gpu.ntt.qap.compute_h_inplace`); :data:`bench_command` writes the rows to a
fresh ``bench-ntt`` run folder (ntt.csv, ntt.json, manifest.json) and, with ``--sppark``, the ratios to
sppark's rows of the same GPU (:mod:`zkgpu.analysis.anchors`).
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import click
import numpy as np
import pandas as pd

from zkgpu.analysis.anchors import ntt_vs_sppark, read_sppark, sppark_provenance
from zkgpu.arith.field import FR
from zkgpu.core import cuda as _cuda
from zkgpu.core.errors import CliError, sigterm_as_interrupt
from zkgpu.core.manifest import build_manifest, check_run_base, mark_interrupted, new_run_dir, write_json_new
from zkgpu.gpu.fr_device import to_montgomery
from zkgpu.gpu.ntt import transform as ntt
from zkgpu.gpu.ntt.qap import compute_h_inplace

__all__ = [
    "BENCH_VARIANTS",
    "KERNEL_SPEC_PARTS",
    "KERNEL_SPEC_SETTINGS",
    "check_kernel_spec",
    "is_kernel_spec",
    "kernel_settings",
    "QUEUE_PAD_LOG",
    "queued_times_ms",
    "run_benchmark",
    "kernel_ratios",
    "bench_command",
]


KERNEL_SPEC_PARTS: dict[str, tuple[tuple[str, ...], ...]] = {
    "stagewise": (("r2", "r4"), ("lz",), ("sh", "sh0", "sh2"), ("st", "st0"), ("gt",), ("np",), ("i2",), ("c0", "c1", "c10"),
                  ("b1", "b2", "b3", "b4", "b6", "b8"), ("w128", "w256", "w512"), ("v4", "v40"), ("pf1", "pf2", "pf4"),
                  ("io", "io0"), ("at",), ("o1", "o3"), ("ptx", "cxx", "asm"), ("fd", "fd0"), ("bl", "bl0"), ("sk1", "sk2")),
    "fused": (("r2", "r4", "r8"), ("exact", "split", "table", "auto"), ("t12",), ("ptx", "cxx")),
}
"""Kernel choices of ``zkgpu bench ntt`` (:func:`kernel_settings` applies one; :func:`is_kernel_spec` tells one): an
algorithm, then optionally at most one of each group (each group is one setting: two of its values in one spec are
refused, naming both), in the order of the groups above. The parts: -rN (stagewise: ``zkgpu.gpu.ntt.transform.RADIX`` 2/4; fused: ``FUSED_RADIX`` 2/4/8), -exact/-split/-table/-auto (fused: ``FUSED_OUTER``), -t12 (fused:
``FUSED_TILE_LOG`` 12, 2^24 in two passes), -lz (stagewise: the lazy DIF difference, ``ZK_NTT_LAZY=1``), -sh / -sh2 / -sh0 (stagewise radix-2: the stages on
the tile bits below 6 in registers, exchanged by warp shuffles, in every pass / in the DIT passes (the default) / in
none, ``NTT_SHFL`` 1 / 2 / 0), -st / -st0
(stagewise: each pass's twiddles in shared memory / every twiddle from the table, ``NTT_SMEM_TW`` 1 / 0), -cN (stagewise: at most N column bits per tile, ``NTT_TILE_COLS``; stagewise-c10-b3-w256-v40-pf1-o3 is the default
before run s4-ntt; with -w128-b6 the passes on high bits run
512-element (c1) or 256-element (c0) tiles in 128-thread blocks, six per SM, as the pass on the low bits does), -gt
(stagewise host data paths as
before issue 13's run s3-ntt: the scalings on the bit-reversed side gathered from a natural table, ``NTT_SCALE_BR=0``,
and "nn" in place plus a bit-reversal pass, ``NTT_NN_SCATTER=0``), -np (stagewise compute_h: the iNTT's last
pass and the coset NTT's first as two launches, ``NTT_PAIR=0``), -i2 (stagewise radix-2: two butterflies
loaded before either is computed, ``NTT_ILP=2``), -w128/-w256/-w512 (stagewise: threads per
block, ``NTT_THREADS``), -bN
(stagewise: N blocks per SM as the register target, ``NTT_MIN_BLOCKS`` and ``NTT_R4_MIN_BLOCKS``) and
-v4 / -v40 (stagewise: the tile in shared memory as two planes of 16-byte words read and written 128 bits at a time,
``NTT_SMEM_V4`` 1 / 0), -pfN (stagewise: a thread's global loads into shared memory N at a time, ``NTT_PREFETCH``),
-io / -io0 (stagewise radix-2: the stage on a tile's top bit at the global load / store, its twiddles from the table,
``NTT_IO_STAGE`` 1 / 0), -at (the product's merge
and final subtraction as asm chains, ``ZK_FF_ASM_TAIL=1``, ff.cuh), -o1 / -o3 (the NTT modules built at ptxas -O1 / -O3, ``ZK_PTXAS_O``:
:func:`zkgpu.core.cuda.get_module` says why), -ptx/-cxx/-asm (``FIELD_ARITH``), -fd / -fd0 (stagewise: an inverse NTT's
1/n folded into the last DIF pass's twiddles / multiplied at its store, ``NTT_FOLD`` 1 / 0) and -bl / -bl0 (stagewise:
an uneven split's larger passes on the low bits / first, ``NTT_BIG_LAST`` 1 / 0), -sk1 / -sk2 (stagewise radix-2: the
butterflies of twiddle 1 in stages 1 / 1-2 of the pass on the low bits gathered into whole warps that skip the product,
``NTT_SKIP_ONE``); unstated settings keep their current values (-lz, -st, -sh, -gt, -np, -i2, -wN and -bN add to
``zkgpu.gpu.ntt.transform.DEFINES`` for the block)."""

KERNEL_SPEC_SETTINGS: dict[str, tuple[str, ...]] = {
    "stagewise": ("RADIX", "ZK_NTT_LAZY", "NTT_SHFL", "NTT_SMEM_TW", "NTT_SCALE_BR/NTT_NN_SCATTER", "NTT_PAIR", "NTT_ILP",
                  "NTT_TILE_COLS", "NTT_MIN_BLOCKS", "NTT_THREADS", "NTT_SMEM_V4", "NTT_PREFETCH", "NTT_IO_STAGE",
                  "ZK_FF_ASM_TAIL", "ZK_PTXAS_O", "FIELD_ARITH", "NTT_FOLD", "NTT_BIG_LAST", "NTT_SKIP_ONE"),
    "fused": ("FUSED_RADIX", "FUSED_OUTER", "FUSED_TILE_LOG", "FIELD_ARITH"),
}
"""The setting each group of :data:`KERNEL_SPEC_PARTS` sets, group by group (for the errors of :func:`check_kernel_spec`)."""


def check_kernel_spec(spec: str) -> list[str]:
    """The parts of ``spec`` after its algorithm, checked against :data:`KERNEL_SPEC_PARTS`: a known algorithm, then
    parts of that algorithm's groups, at most one per group (one setting, one value), in the groups' order.

    Raises:
        ValueError: one line starting ``unknown NTT kernel '<spec>'`` and naming the fault: an unknown algorithm or
            part, an empty part, two values of one setting (both named, e.g. 'st' and 'st0' both set NTT_SMEM_TW),
            or a part out of order.
    """
    if not isinstance(spec, str):
        raise ValueError(f"unknown NTT kernel {spec!r}: a kernel spec is a string such as 'stagewise-b8-pf2-io-at'")
    alg, *parts = spec.split("-")
    head = f"unknown NTT kernel {spec!r}"
    groups = KERNEL_SPEC_PARTS.get(alg)
    if groups is None:
        raise ValueError(f"{head}: the algorithm {alg!r} is none of {', '.join(KERNEL_SPEC_PARTS)} "
                         "(e.g. stagewise, stagewise-lz-st-b3-asm, fused, fused-r4-auto-t12)")
    index = {part: i for i, group in enumerate(groups) for part in group}
    seen: dict[int, str] = {}
    for part in parts:
        if part not in index:
            known = " ".join("/".join(g) for g in groups)
            raise ValueError(f"{head}: {part!r} is not a part of {alg} (its parts, in order, one per group: {known})")
        i = index[part]
        if i in seen:
            what = "the same part twice" if seen[i] == part else "two values of one setting"
            raise ValueError(f"{head}: {seen[i]!r} and {part!r} are {what} ({KERNEL_SPEC_SETTINGS[alg][i]}): keep one")
        later = [p for j, p in seen.items() if j > i]
        if later:
            raise ValueError(f"{head}: {part!r} must come before {later[0]!r} (the parts go in the order of "
                             f"zkgpu.app.bench.ntt.KERNEL_SPEC_PARTS, e.g. stagewise-b8-pf2-io-at)")
        seen[i] = part
    return parts


def is_kernel_spec(spec: str) -> bool:
    """Whether ``spec`` names a kernel of :data:`KERNEL_SPEC_PARTS` (e.g. stagewise, stagewise-sh0-v4-o1,
    fused-r4-auto-t12); :func:`check_kernel_spec` says why not."""
    try:
        check_kernel_spec(spec)
    except ValueError:
        return False
    return True


BENCH_VARIANTS: dict[str, dict[str, Any]] = {
    "forward-nr": dict(inverse=False, coset=False, order="nr"),
    "forward-nn": dict(inverse=False, coset=False, order="nn"),
    "inverse-nn": dict(inverse=True, coset=False, order="nn"),
    "coset-nn": dict(inverse=False, coset=True, order="nn"),
    "inverse-coset-nn": dict(inverse=True, coset=True, order="nn"),
    "coset-rn": dict(inverse=False, coset=True, order="rn"),
}


@contextlib.contextmanager
def kernel_settings(spec: str) -> Iterator[None]:
    """Within the block, :func:`zkgpu.gpu.ntt.transform.ntt_inplace` and :func:`zkgpu.gpu.ntt.qap.compute_h_inplace` default to the
    kernel named by ``spec`` (see :data:`KERNEL_SPEC_PARTS`): the block sets the module settings of :mod:`zkgpu.gpu.ntt.transform`
    and restores them afterwards.

    Raises:
        ValueError: an unknown spec.
    """
    parts = [spec.split("-")[0], *check_kernel_spec(spec)]
    if parts[0] not in ntt.ALGORITHMS:
        raise ValueError(f"unknown NTT kernel {spec!r}: zkgpu.gpu.ntt.transform has no algorithm {parts[0]!r}")
    names = ("ALGORITHM", "RADIX", "FUSED_RADIX", "FUSED_OUTER", "FUSED_TILE_LOG", "FIELD_ARITH", "DEFINES")
    saved = {k: getattr(ntt, k) for k in names}
    try:
        ntt.ALGORITHM = parts[0]
        for part in parts[1:]:
            if part in ntt.FIELD_ARITHS:
                ntt.FIELD_ARITH = part
            elif part == "lz":
                ntt.DEFINES = {**ntt.DEFINES, "ZK_NTT_LAZY": 1}
            elif part == "st":
                ntt.DEFINES = {**ntt.DEFINES, "NTT_SMEM_TW": 1}
            elif part in ("sh", "sh0", "sh2"):
                ntt.DEFINES = {**ntt.DEFINES, "NTT_SHFL": int(part[2:] or 1)}
            elif part == "np":
                ntt.DEFINES = {**ntt.DEFINES, "NTT_PAIR": 0}
            elif part == "gt":
                ntt.DEFINES = {**ntt.DEFINES, "NTT_SCALE_BR": 0, "NTT_NN_SCATTER": 0}
            elif part in ("v4", "v40"):
                ntt.DEFINES = {**ntt.DEFINES, "NTT_SMEM_V4": int(part == "v4")}
            elif re.fullmatch(r"pf\d+", part):
                ntt.DEFINES = {**ntt.DEFINES, "NTT_PREFETCH": int(part[2:])}
            elif part in ("io", "io0"):
                ntt.DEFINES = {**ntt.DEFINES, "NTT_IO_STAGE": int(part == "io")}
            elif part in ("sk1", "sk2"):
                ntt.DEFINES = {**ntt.DEFINES, "NTT_SKIP_ONE": int(part[2:])}
            elif part in ("bl", "bl0"):
                ntt.DEFINES = {**ntt.DEFINES, "NTT_BIG_LAST": int(part == "bl")}
            elif part in ("fd", "fd0"):
                ntt.DEFINES = {**ntt.DEFINES, "NTT_FOLD": int(part == "fd")}
            elif part == "at":
                ntt.DEFINES = {**ntt.DEFINES, "ZK_FF_ASM_TAIL": 1}
            elif part == "st0":
                ntt.DEFINES = {**ntt.DEFINES, "NTT_SMEM_TW": 0}
            elif part in ("o1", "o3"):
                ntt.DEFINES = {**ntt.DEFINES, "ZK_PTXAS_O": int(part[1:])}
            elif part == "i2":
                ntt.DEFINES = {**ntt.DEFINES, "NTT_ILP": 2}
            elif re.fullmatch(r"c\d+", part):
                ntt.DEFINES = {**ntt.DEFINES, "NTT_TILE_COLS": int(part[1:])}
            elif re.fullmatch(r"w\d+", part):
                ntt.DEFINES = {**ntt.DEFINES, "NTT_THREADS": int(part[1:])}
            elif re.fullmatch(r"b\d+", part):
                ntt.DEFINES = {**ntt.DEFINES, "NTT_MIN_BLOCKS": int(part[1:]), "NTT_R4_MIN_BLOCKS": int(part[1:])}
            elif re.fullmatch(r"t\d+", part):  # not "table", an outer mode
                ntt.FUSED_TILE_LOG = int(part[1:])
            elif re.fullmatch(r"r\d+", part):
                if ntt.ALGORITHM == "fused":
                    ntt.FUSED_RADIX = int(part[1:])
                else:
                    ntt.RADIX = int(part[1:])
            else:
                ntt.FUSED_OUTER = part
        yield
    finally:
        for k, v in saved.items():
            setattr(ntt, k, v)


QUEUE_PAD_LOG = 27
"""log2 of the float32 elements :func:`queued_times_ms` scales before each timed call (512 MiB read and written: ~0.3 ms
on an H200, longer than the host's preparation of an NTT's launches)."""


def queued_times_ms(fn: Any, repeat: int, pad: Any) -> list[float]:
    """``repeat`` times of ``fn`` (ms, CUDA events on the current stream), each with its start event queued behind GPU
    work (``pad``, a CuPy float32 array, scaled in place first), so that the host's preparation of fn's launches (Python,
    argument packing, memory-pool allocations) overlaps that work: the GPU time from fn's first kernel to the end of its
    last, gaps between its kernels included. :func:`zkgpu.core.cuda.benchmark`'s events also count the GPU idle time while
    the host prepares fn's first launch, as sppark-bench's timer does for sppark's (its README, "What each figure
    includes"); the difference is that host time."""
    cp = _cuda.cupy()
    stream = cp.cuda.get_current_stream()
    out = []
    for _ in range(repeat):
        pad *= np.float32(1.0)
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record(stream)
        fn()
        end.record(stream)
        end.synchronize()
        out.append(float(cp.cuda.get_elapsed_time(start, end)))
    return out


def run_benchmark(
    min_log: int = 16, max_log: int = 26, repeat: int = 10, warmup: int = 2, with_compute_h: bool = True,
    kernels: Sequence[str] = ("stagewise",), h_min_log: int = 20, h_max_log: int = 24, queued: bool = False,
) -> list[dict[str, Any]]:
    """Time every variant of :data:`BENCH_VARIANTS` on device-resident random data (CUDA events) with each
    kernel of ``kernels`` (:data:`KERNEL_SPEC_PARTS`), plus (``with_compute_h``, sizes h_min_log..h_max_log) the
    whole Groth16 H computation :func:`zkgpu.gpu.ntt.qap.compute_h_inplace`.

    Returns one row per (log_n, kernel, variant): median/min/max ms, ``kernel`` and ``algorithm``,
    ``radix`` (elements per thread of the fused kernels, or stagewise :data:`zkgpu.gpu.ntt.transform.RADIX`), ``outer`` (fused
    outer twiddles), mulmods/s (n/2*L butterfly multiplies per NTT) and the effective GB/s of one read and
    one write of the vector per global pass, plus the kernel build options; with ``queued`` also
    ``queued_median_ms``, the median of :func:`queued_times_ms` (the host's launch preparation hidden).
    """
    for spec in kernels:
        with kernel_settings(spec):
            pass  # validate every spec before the first measurement
    cp = _cuda.cupy()
    rng = np.random.default_rng()
    pad = cp.ones(1 << QUEUE_PAD_LOG, dtype=cp.float32) if queued else None
    rows = []
    for L in range(min_log, max_log + 1):
        n = 1 << L
        host = rng.integers(0, 2**64, size=(n, 4), dtype=np.uint64)
        host[:, 3] >>= np.uint64(2)  # < 2^254 < r: canonical, random enough for timing
        d = cp.asarray(host).view(cp.uint32).reshape(-1)
        del host
        to_montgomery(d)
        for spec in kernels:
            with kernel_settings(spec):
                s = ntt.settings()
                fused = s["algorithm"] == "fused"
                common = dict(
                    log_n=L, n=n, kernel=spec, algorithm=s["algorithm"],
                    radix=s["fused_radix"] if fused else s["radix"],
                    outer=s["fused_outer"] if fused else "", field_arith=s["field_arith"] or "default",
                    repeat=repeat, warmup=warmup,
                )
                for name, kw in BENCH_VARIANTS.items():
                    fn = functools.partial(ntt.ntt_inplace, d, **kw)
                    res = _cuda.benchmark(fn, warmup=warmup, repeat=repeat)
                    npass = ntt.global_passes(L, kw["order"], s["algorithm"])
                    med = res.median_ms
                    rows.append(
                        dict(
                            common, variant=name, median_ms=med, min_ms=res.min_ms, max_ms=res.max_ms,
                            global_passes=npass, butterfly_mulmods_per_s=(n // 2) * L / (med * 1e-3),
                            effective_GBps=2 * 32 * n * npass / (med * 1e-3) / 1e9,
                        )
                    )
                    if pad is not None:
                        rows[-1]["queued_median_ms"] = float(np.median(queued_times_ms(fn, repeat, pad)))
                if with_compute_h and h_min_log <= L <= h_max_log:
                    # the Groth16 H step: 3 iNTT + 3 coset NTT + pointwise + inverse coset NTT
                    e, f = d.copy(), d.copy()
                    res = _cuda.benchmark(functools.partial(compute_h_inplace, d, e, f), warmup=warmup, repeat=repeat)
                    med = res.median_ms
                    npass = ntt.global_passes(L, "nr", s["algorithm"])
                    rows.append(
                        dict(
                            common, variant="compute_h", median_ms=med, min_ms=res.min_ms, max_ms=res.max_ms,
                            global_passes=7 * npass + 2 - (4 if fused and npass > 1 else 0),
                            butterfly_mulmods_per_s=7 * (n // 2) * L / (med * 1e-3), effective_GBps=float("nan"),
                        )
                    )
                    del e, f
        del d
        ntt.clear_cache()
        cp.get_default_memory_pool().free_all_blocks()
    return rows


def kernel_ratios(rows: Sequence[dict[str, Any]], baseline: str = "stagewise") -> Any:
    """Median-ms ratios of each kernel to ``baseline`` per (log_n, variant), as a pandas DataFrame
    (columns: the kernels other than the baseline; < 1 means faster). Empty when the baseline is absent."""
    df = pd.DataFrame(list(rows))
    if df.empty or baseline not in set(df["kernel"]):
        return pd.DataFrame()
    t = df.pivot_table(index=["log_n", "variant"], columns="kernel", values="median_ms", aggfunc="median")
    return t.drop(columns=[baseline]).div(t[baseline], axis=0)


@click.command("ntt")
@click.option("--min-log", default=16, show_default=True, help="smallest size, log2")
@click.option("--max-log", default=26, show_default=True, help="largest size, log2")
@click.option("--repeat", default=10, show_default=True, type=click.IntRange(min=1), help="timed repeats per point (median reported)")
@click.option("--kernel", "kernels", multiple=True, metavar="SPEC",
              help="NTT kernel(s) to time, e.g. stagewise, fused, fused-r4-auto-t12, stagewise-cxx (repeatable; "
                   "default: stagewise and fused; zkgpu.app.bench.ntt.KERNEL_SPEC_PARTS lists the parts)")
@click.option("--h-min-log", default=20, show_default=True, help="smallest compute_h size, log2")
@click.option("--h-max-log", default=24, show_default=True, help="largest compute_h size, log2")
@click.option("--sppark", "sppark_file", default=None, type=click.Path(exists=True, dir_okay=False),
              help="sppark-bench output (sppark.txt) of the same GPU: also write and print zkgpu/sppark ratios")
@click.option("--queued", is_flag=True, help="also time each transform with the host's launch preparation hidden behind "
              "GPU work (column queued_median_ms; zkgpu.app.bench.ntt.queued_times_ms)")
@click.option("--out", "out_base", default=None, help="base folder for the run folder (default data/)")
def ntt_bench(min_log: int, max_log: int, repeat: int, kernels: tuple[str, ...], h_min_log: int, h_max_log: int,
              sppark_file: str | None, queued: bool, out_base: str | None) -> None:
    """Fr NTT on the GPU, device-resident, 2^min-log .. 2^max-log: forward/inverse/coset/inverse-coset
    per kernel, and compute_h at 2^h-min-log .. 2^h-max-log; CSV + JSON, and the ratios to stagewise."""
    kernels = kernels or ("stagewise", "fused")
    twice = sorted({k for k in kernels if kernels.count(k) > 1})
    if twice:
        raise CliError(f"--kernel {twice[0]} given twice: each kernel is timed once per size (give it once)")
    for spec in kernels:
        try:
            with kernel_settings(spec):
                ntt.settings()  # a bad FUSED_TILE_LOG or radix fails here, before any measurement
        except ValueError as exc:
            raise CliError(f"--kernel {spec}: {exc}") from None
    for opt, lo, hi in (("--min-log/--max-log", min_log, max_log), ("--h-min-log/--h-max-log", h_min_log, h_max_log)):
        if not 0 <= lo <= hi <= FR.two_adicity:
            raise CliError(f"{opt} {lo}/{hi}: need 0 <= {opt.split('/')[0]} <= {opt.split('/')[1]} <= {FR.two_adicity} (log2 sizes)")
    sppark = None
    if sppark_file:
        try:
            sppark = read_sppark(sppark_file)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--sppark") from None
    check_run_base(out_base)
    if not _cuda.gpu_available():
        raise CliError("no CUDA GPU: the NTT benchmark needs one (GPU benchmarks; without a GPU, replay the recordings: zkgpu report)")
    run_dir: Path | None = None
    rows: list[dict[str, Any]] = []
    s = ntt.settings()

    def manifest(**extra: Any) -> dict[str, Any]:
        return build_manifest(benchmark="ntt", min_log=min_log, max_log=max_log, repeat=repeat,
                              variants=[*BENCH_VARIANTS, "compute_h"], kernels=list(kernels), h_min_log=h_min_log,
                              h_max_log=h_max_log, radix=s["radix"], fused_radix=s["fused_radix"], fused_outer=s["fused_outer"],
                              fused_tile_log=s["fused_tile_log"], kernel_defines=s["defines"],
                              timing="CUDA events, median of repeats, warm-up excluded"
                              + ("; queued_median_ms: start event behind GPU work (queued_times_ms)" if queued else ""),
                              **({"sppark": sppark_provenance(sppark_file)} if sppark_file else {}), **extra)

    try:
        with sigterm_as_interrupt():
            for L in range(min_log, max_log + 1):  # ntt.csv grows size by size: a cut-off run keeps what it measured
                rows += run_benchmark(L, L, repeat, kernels=kernels, h_min_log=h_min_log, h_max_log=h_max_log, queued=queued)
                run_dir = run_dir or new_run_dir("bench-ntt", base=Path(out_base) if out_base else None)  # once a size is measured
                pd.DataFrame(rows).to_csv(run_dir / "ntt.csv", index=False)
    except BaseException as exc:
        if run_dir is not None:
            kept = mark_interrupted(run_dir, manifest, exc)
            click.echo(f"stopped ({type(exc).__name__}): the sizes measured so far are in {kept}", err=True)
        raise
    assert run_dir is not None  # min_log <= max_log: one size at least
    df = pd.DataFrame(rows)
    write_json_new(run_dir / "ntt.json", rows)
    write_json_new(run_dir / "manifest.json", manifest())
    table = df.pivot_table(index="log_n", columns=["kernel", "variant"], values="median_ms")
    with pd.option_context("display.width", 250, "display.max_columns", 100):
        click.echo(table.to_string(float_format=lambda v: f"{v:9.3f}"))
        if queued:
            click.echo("queued (the host's launch preparation hidden behind GPU work), median ms:")
            click.echo(df.pivot_table(index="log_n", columns=["kernel", "variant"], values="queued_median_ms")
                       .to_string(float_format=lambda v: f"{v:9.3f}"))
        ratios = kernel_ratios(rows)
        if not ratios.empty:
            click.echo("ratio to stagewise (< 1: faster):")
            click.echo(ratios.unstack("variant").to_string(float_format=lambda v: f"{v:6.3f}"))
        if sppark is not None and sppark_file:
            vs = ntt_vs_sppark(rows, sppark)
            vs.to_csv(run_dir / "ntt_vs_sppark.csv", index=False)
            (run_dir / "sppark.txt").write_text(Path(sppark_file).read_text())
            click.echo("zkgpu / sppark, same GPU (< 1: zkgpu faster):")
            click.echo(vs.pivot_table(index="log_n", columns=["variant", "kernel"], values="ratio")
                       .to_string(float_format=lambda v: f"{v:6.3f}"))
    click.echo(f"(median ms, defines {s['defines']}) written to {run_dir}")


bench_command = ntt_bench
"""``zkgpu bench ntt`` (registered by :mod:`zkgpu.app.cli`)."""
