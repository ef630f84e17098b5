"""``zkgpu bench ntt``: the Fr NTT kernels and compute_h timed on the GPU (ntt.csv), with ``--sppark`` the ratios."""

from __future__ import annotations

import functools
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
    "API_VARIANTS",
    "BENCH_VARIANTS",
    "DEFAULT_KERNEL",
    "QUEUE_PAD_LOG",
    "queued_times_ms",
    "run_benchmark",
    "bench_command",
]

DEFAULT_KERNEL = "stagewise"
"""The ``kernel`` of the rows: the default build (older recordings also hold deleted builds' rows)."""

BENCH_VARIANTS: dict[str, dict[str, Any]] = {
    "forward-nr": dict(inverse=False, coset=False, order="nr"),
    "forward-nn": dict(inverse=False, coset=False, order="nn"),
    "inverse-nn": dict(inverse=True, coset=False, order="nn"),
    "coset-nn": dict(inverse=False, coset=True, order="nn"),
    "inverse-coset-nn": dict(inverse=True, coset=True, order="nn"),
    "coset-rn": dict(inverse=False, coset=True, order="rn"),
}


API_VARIANTS: dict[str, dict[str, Any]] = {
    "api-forward-nn": dict(coset=False, trusted=False),
    "api-trusted-forward-nn": dict(coset=False, trusted=True),
    "api-coset-nn": dict(coset=True, trusted=False),
    "api-trusted-coset-nn": dict(coset=True, trusted=True),
}
"""The public call :func:`zkgpu.gpu.ntt.transform.ntt` on a device array, beside the kernels' rows of the same transform
(``forward-nn``, ``coset-nn``): checked with a new output array, and trusted (``check=False, out=values``: in place)."""

QUEUE_PAD_LOG = 27
"""log2 of the float32 elements :func:`queued_times_ms` scales before each timed call (512 MiB read and written: ~0.3 ms
on an H200, longer than the host's preparation of an NTT's launches)."""


def queued_times_ms(fn: Any, repeat: int, pad: Any) -> list[float]:
    """``repeat`` ms of ``fn`` (CUDA events), each start queued behind GPU work ``pad`` so host launch prep is hidden."""
    cp = _cuda.cupy()
    stream = cp.cuda.get_current_stream()
    out = []
    for _ in range(repeat):
        pad *= np.float32(1.0)
        out.append(_cuda.time_ms(fn, stream))
    return out


def run_benchmark(
    min_log: int = 16, max_log: int = 26, repeat: int = 10, warmup: int = 2, with_compute_h: bool = True,
    h_min_log: int = 20, h_max_log: int = 24, queued: bool = False,
) -> list[dict[str, Any]]:
    """Time each of :data:`BENCH_VARIANTS` on device data, the public call on the same data (:data:`API_VARIANTS`), and
    compute_h at h_min_log..h_max_log. One row per (log_n, variant): median/min/max ms, ``kernel``, ``radix``,
    ``defines``, mulmods/s, GB/s; with ``queued`` also ``queued_median_ms``."""
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
        s = ntt.settings()
        common = dict(log_n=L, n=n, kernel=DEFAULT_KERNEL, radix=s["radix"],
                      defines=" ".join(f"{k}={v}" for k, v in s["defines"].items()), repeat=repeat, warmup=warmup)
        for variant, kw in BENCH_VARIANTS.items():
            fn = functools.partial(ntt.ntt_inplace, d, **kw)
            res = _cuda.benchmark(fn, warmup=warmup, repeat=repeat)
            npass = ntt.global_passes(L, kw["order"])
            med = res.median_ms
            rows.append(
                dict(
                    common, variant=variant, median_ms=med, min_ms=res.min_ms, max_ms=res.max_ms,
                    global_passes=npass, butterfly_mulmods_per_s=(n // 2) * L / (med * 1e-3),
                    effective_GBps=2 * 32 * n * npass / (med * 1e-3) / 1e9,
                )
            )
            if pad is not None:
                rows[-1]["queued_median_ms"] = float(np.median(queued_times_ms(fn, repeat, pad)))
        dv = d.view(cp.uint64).reshape(n, 4)
        for variant, kw in API_VARIANTS.items():
            call = dict(coset=kw["coset"], check=False, out=dv) if kw["trusted"] else dict(coset=kw["coset"])
            res = _cuda.benchmark(functools.partial(ntt.ntt, dv, **call), warmup=warmup, repeat=repeat)
            npass = ntt.global_passes(L, "nn")
            rows.append(dict(common, variant=variant, median_ms=res.median_ms, min_ms=res.min_ms, max_ms=res.max_ms,
                             global_passes=npass, butterfly_mulmods_per_s=(n // 2) * L / (res.median_ms * 1e-3),
                             effective_GBps=2 * 32 * n * npass / (res.median_ms * 1e-3) / 1e9))
        if with_compute_h and h_min_log <= L <= h_max_log:
            # the Groth16 H step: 3 iNTT + 3 coset NTT + pointwise + inverse coset NTT
            e, f = d.copy(), d.copy()
            res = _cuda.benchmark(functools.partial(compute_h_inplace, d, e, f), warmup=warmup, repeat=repeat)
            med = res.median_ms
            npass = ntt.global_passes(L, "nr")
            rows.append(
                dict(
                    common, variant="compute_h", median_ms=med, min_ms=res.min_ms, max_ms=res.max_ms,
                    global_passes=7 * npass - 3 + (1 if npass == 1 else 0),
                    butterfly_mulmods_per_s=7 * (n // 2) * L / (med * 1e-3), effective_GBps=float("nan"),
                )
            )
            del e, f
        del d
        ntt.clear_cache()
        cp.get_default_memory_pool().free_all_blocks()
    return rows


@click.command("ntt")
@click.option("--min-log", default=16, show_default=True, help="smallest size, log2")
@click.option("--max-log", default=26, show_default=True, help="largest size, log2")
@click.option("--repeat", default=10, show_default=True, type=click.IntRange(min=1), help="timed repeats per point (median reported)")
@click.option("--h-min-log", default=20, show_default=True, help="smallest compute_h size, log2")
@click.option("--h-max-log", default=24, show_default=True, help="largest compute_h size, log2")
@click.option("--sppark", "sppark_file", default=None, type=click.Path(exists=True, dir_okay=False),
              help="sppark-bench output (sppark.txt) of the same GPU: also write and print zkgpu/sppark ratios")
@click.option("--queued", is_flag=True, help="also time each transform with the host's launch preparation hidden behind "
              "GPU work (column queued_median_ms; zkgpu.app.bench.ntt.queued_times_ms)")
@click.option("--out", "out_base", default=None, help="base folder for the run folder (default data/)")
def ntt_bench(min_log: int, max_log: int, repeat: int, h_min_log: int, h_max_log: int, sppark_file: str | None,
              queued: bool, out_base: str | None) -> None:
    """Fr NTT on the GPU, device-resident, 2^min-log .. 2^max-log: forward/inverse/coset/inverse-coset,
    and compute_h at 2^h-min-log .. 2^h-max-log; CSV + JSON."""
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
                              variants=[*BENCH_VARIANTS, "compute_h"], kernels=[DEFAULT_KERNEL],
                              h_min_log=h_min_log, h_max_log=h_max_log, radix=s["radix"], kernel_defines=s["defines"],
                              timing="CUDA events, median of repeats, warm-up excluded"
                              + ("; queued_median_ms: start event behind GPU work (queued_times_ms)" if queued else ""),
                              **({"sppark": sppark_provenance(sppark_file)} if sppark_file else {}), **extra)

    try:
        with sigterm_as_interrupt():
            for L in range(min_log, max_log + 1):  # ntt.csv grows size by size: a cut-off run keeps what it measured
                rows += run_benchmark(L, L, repeat, h_min_log=h_min_log, h_max_log=h_max_log, queued=queued)
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
