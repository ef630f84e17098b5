"""``zkgpu pipeline``: a quick pipeline smoke run printing per-phase medians (``--zkey``/``--wtns``: a real circuit)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import click
import pandas as pd

from zkgpu.app import settings
from zkgpu.core.cuda import gpu_available
from zkgpu.core.errors import CliError, OneLineCommand, check_writable_under
from zkgpu.groth16.workload import SnarkjsCircuit, check_proofs, load_circuit
from zkgpu.pipeline.config import (
    DEVICES,
    H2D_STAGES,
    LOCK_SCOPES,
    MAX_PARTITIONS,
    MAX_TIMEOUT_S,
    MSM_BASES,
    POOL_SCOPES,
    PREPS,
    TRANSFERS,
    PipelineConfig,
)
from zkgpu.pipeline.runner import gpu_count, prepare_backend, run_pipeline
from zkgpu.transfer.host_alloc import PageableAllocator
from zkgpu.transfer.pinned_pool import PinnedPool

ORDER = ["synthesize", "gpu_queue", "prep_msm", "b_g2_msm", "mutex_wait", "ntt_msm_h", "h2d", "ntt", "h_msm", "barrier_wait", "batch_add", "tail_msm", "mutex_held", "finalize", "malloc_trim", "prove"]


def phase_table(events: pd.DataFrame) -> pd.DataFrame:
    """Per phase: count ``n``, median host ms, median CUDA-event ``gpu_ms``, median ``bytes`` (rows in
    pipeline order): the summary `zkgpu pipeline` prints for each run."""
    ev = events.assign(host_ms=(events["end_ns"] - events["start_ns"]) / 1e6)
    g = ev.groupby("phase").agg(n=("host_ms", "size"), host_ms=("host_ms", "median"), gpu_ms=("gpu_ms", "median"), bytes=("bytes", "median"))
    return g.reindex([p for p in ORDER if p in g.index] + [p for p in g.index if p not in ORDER])


#: default log2(n) per device: the CPU runs the reference math (Python ints), ~1000x slower
DEFAULT_LOG_N = {"gpu": 20, "cpu": 10}


@click.command("pipeline", cls=OneLineCommand)
@click.option("--log-n", type=click.IntRange(2, 27), default=None, help="n = 2^log_n constraints per partition [default: 20 GPU, 10 CPU]")
@click.option("--partitions", type=click.IntRange(1, MAX_PARTITIONS), default=4, show_default=True)
@click.option("--gw", type=click.IntRange(1, 8), default=2, show_default=True)
@click.option("--gpus", type=click.IntRange(1, 16), default=1, show_default=True,
              help="GPUs, one worker set each (gw workers, mutex, streams); --device cpu emulates them")
@click.option("--pool-scope", type=click.Choice(POOL_SCOPES), default="shared", show_default=True,
              help="with pinned_pool and several GPUs: one pool for all, or one per GPU (PipelineConfig.pool_scope)")
@click.option("--synth-workers", type=click.IntRange(1, 64), default=2, show_default=True)
@click.option("--transfer", "transfers", multiple=True, type=click.Choice(TRANSFERS), default=("pageable", "pinned_pool"), show_default=True)
@click.option("--scope", "scopes", multiple=True, type=click.Choice(LOCK_SCOPES), default=("coarse",), show_default=True)
@click.option("--device", type=click.Choice(DEVICES), default="gpu", show_default=True)
@click.option("--timeout", "timeout_s", type=click.FloatRange(0, MAX_TIMEOUT_S, min_open=True), default=300.0, show_default=True, help="seconds any one step or wait may take before its partition fails")
@click.option("--prep", type=click.Choice(PREPS), default="cpu", show_default=True, help="prep_msm variant (zkgpu.gpu.msm.prep)")
@click.option("--tail-streams", type=click.IntRange(1, 3), default=1, show_default=True, help="3: batch adds and tail MSMs at once")
@click.option("--h2d-stage", type=click.Choice(H2D_STAGES), default="in_lock", show_default=True,
              help="pre_lock: copy a/b/c before the mutex (PipelineConfig.h2d_stage)")
@click.option("--msm-bases", type=click.Choice(MSM_BASES), default="plain", show_default=True,
              help="precomputed: G1 MSMs over shifted-bases tables built at setup (PipelineConfig.msm_bases)")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None, help="folder for logs, event tables and proofs")
@click.option("--zkey", "zkey_path", type=click.Path(dir_okay=False, exists=True), default=None, help="prove a real circuit: its snarkjs BLS12-381 key (n = its domain)")
@click.option("--wtns", "wtns_paths", multiple=True, type=click.Path(dir_okay=False, exists=True), help="with --zkey: witness(es), cycled over the partitions")
@click.option("--vkey", "vkey_path", type=click.Path(dir_okay=False, exists=True), default=None, help="with --zkey: the verification key for snarkjs [default: vkey.json beside the key]")
@click.option("--seed", type=int, default=None, help="with --zkey: fix r, s (tests only: the proofs are then not zero-knowledge)")
def main(log_n: int | None, partitions: int, gw: int, gpus: int, pool_scope: str, synth_workers: int, transfers: tuple[str, ...], scopes: tuple[str, ...], device: str,
         timeout_s: float, prep: str, tail_streams: int, h2d_stage: str, msm_bases: str, out: Path | None, zkey_path: str | None, wtns_paths: tuple[str, ...],
         vkey_path: str | None, seed: int | None) -> None:
    """Quick pipeline smoke run: per-phase medians for each --transfer and --scope (synthetic
    partitions, or proofs of a real circuit with --zkey/--wtns)."""
    try:
        settings.apply()  # the ZKGPU_* variables (zkgpu.app.settings)
    except ValueError as exc:
        raise CliError(str(exc)) from exc
    pd.set_option("display.width", 200)
    if device == "gpu" and not gpu_available():
        raise CliError("no CUDA GPU (CuPy) found: run on the CPU with --device cpu (reference math; --log-n 10 takes seconds)")
    if device == "gpu" and gpus > gpu_count():
        raise CliError(f"--gpus {gpus}: this host has {gpu_count()} CUDA device(s); use --gpus {gpu_count()} or fewer, or --device cpu to emulate them")
    real = _real_circuit(zkey_path, wtns_paths, log_n, seed, vkey_path)
    if vkey_path is not None and real is None:
        raise CliError("--vkey checks the proofs of a real circuit: give its key with --zkey")
    log_n = (real.n.bit_length() - 1) if real is not None else DEFAULT_LOG_N[device] if log_n is None else log_n
    try:
        kw: dict[str, Any] = dict(partitions=partitions, gw=gw, gpus=gpus, pool_scope=pool_scope, synth_workers=synth_workers, device=device, timeout_s=timeout_s, prep=prep, tail_streams=tail_streams,
                              h2d_stage=h2d_stage, msm_bases=msm_bases)
        base = PipelineConfig.for_circuit(real, **kw) if real is not None else PipelineConfig(n=1 << log_n, **kw)
        for transfer in transfers:
            base.with_(transfer=transfer)  # e.g. registered needs device=gpu: refused before any work
    except (TypeError, ValueError) as exc:
        raise CliError(str(exc).replace("PipelineConfig.", "")) from exc
    if out is not None:
        check_writable_under("--out", out, out.absolute())
    runs = len(transfers) * len(scopes)
    on = f"{gpus} {'emulated ' if device == 'cpu' else ''}GPUs" if gpus > 1 else f"the {device.upper()}"
    click.echo(f"{runs} run(s) of {partitions} partitions at n=2^{log_n} on {on}, each after a 1-partition warm-up"
               + (" (CPU reference math: about a second per partition at 2^10, doubling per step)" if device == "cpu" else ""), err=True)
    t0 = time.perf_counter()
    prepared = prepare_backend(base)
    click.echo(f"setup (bases for n=2^{log_n}): {time.perf_counter() - t0:.1f} s", err=True)
    stamp = f"{time.strftime('%Y%m%dT%H%M%S')}-{time.time_ns() // 1000 % 1_000_000:06d}-{os.getpid()}"  # runs in one second: two folders
    summary, failed = [], []
    for transfer in transfers:
        for scope in scopes:
            cfg = base.with_(transfer=transfer, lock_scope=scope)
            pools: list[PinnedPool] = []
            if transfer == "pinned_pool":  # warm pools for warm-up and measured run: one, or one per GPU
                pools = [PinnedPool(PageableAllocator() if device == "cpu" else None) for _ in range(gpus if pool_scope == "per_gpu" else 1)]
            pool: Any = (pools if pool_scope == "per_gpu" else pools[0]) if pools else None
            click.echo(f"running {cfg.run_name} ...", err=True)
            run_pipeline(cfg.with_(partitions=1, run=f"warmup-{cfg.run_name}"), prepared=prepared, pool=pool)
            if out is not None:
                d = out / f"{stamp}-{cfg.run_name}"
                cfg = cfg.with_(log_path=d / "cuzk.log", events_path=d / "events.parquet")
            t1 = time.perf_counter()
            res = run_pipeline(cfg, prepared=prepared, pool=pool)
            wall = time.perf_counter() - t1
            for pl in pools:
                pl.close()
            med = phase_table(res.events)
            h2d = res.events[res.events.phase == "h2d"]
            gbps = (h2d["bytes"].astype(float) / (h2d["end_ns"] - h2d["start_ns"])).median()
            click.echo(f"\n=== {cfg.run_name}: {partitions} partitions in {wall:.2f} s, ok={res.ok}, errors={res.errors[:2]}, H2D {gbps:.2f} GB/s, pool={res.pool_stats and {k: res.pool_stats[k] for k in ('allocations', 'reuses')}}")
            click.echo(med.round(2).to_string())
            sys.stdout.flush()  # a run killed by a time limit keeps what it printed
            failed += [(cfg.run_name, p) for p in res.partitions if p.status != "ok"]
            if real is not None:
                failed += _check_proofs(real, res.partitions, cfg.run_name, cfg.log_path.parent / "proofs" if cfg.log_path else None, vkey_path)
            summary.append({"run": cfg.run_name, "wall_s": round(wall, 2), "h2d_GBps": round(gbps, 2), **{f"{p}_ms": round(float(med.at[p, "host_ms"]), 1) for p in ("ntt_msm_h", "prep_msm", "barrier_wait", "batch_add", "tail_msm", "mutex_wait") if p in med.index}})
    click.echo("\n=== summary (median host ms per partition)")
    click.echo(pd.DataFrame(summary).to_string(index=False))
    if failed:
        for run_name, p in failed:
            click.echo(f"{run_name}: partition {p.partition} {p.status} at {p.stage or '-'}: {p.error}", err=True)
        raise click.ClickException(f"{len(failed)} partition(s) did not prove ({len({r for r, _ in failed})} of {runs} run(s)); see the lines above")


def _real_circuit(zkey_path: str | None, wtns_paths: tuple[str, ...], log_n: int | None, seed: int | None, vkey_path: str | None = None) -> SnarkjsCircuit | None:
    """The --zkey/--wtns circuit, or None; a one-line CliError for a bad combination or file."""
    if zkey_path is None:
        if wtns_paths or seed is not None:
            raise CliError("--wtns and --seed prove a real circuit: give its key with --zkey")
        return None
    if not wtns_paths:
        raise CliError("--zkey needs at least one --wtns (a witness of the key's circuit)")
    if log_n is not None:
        raise CliError("--log-n does not apply with --zkey: n is the key's domain size")
    try:
        return load_circuit(zkey_path, wtns_paths, seed=seed, vkey=vkey_path)  # the vkey too: a FIFO never blocks snarkjs later
    except (ValueError, OSError) as exc:
        raise CliError(str(exc)) from exc


def _check_proofs(real: SnarkjsCircuit, parts: list, run_name: str, folder: Path | None, vkey_path: str | None) -> list:
    """:func:`zkgpu.groth16.workload.check_proofs`, one line printed; returns ``[(run_name,
    partition)]`` for the rejected proofs (marked failed)."""
    ok, tool = check_proofs(real, parts, folder, vkey_path)
    where = f", written to {folder}" if folder is not None else ""
    click.echo(f"{run_name}: {sum(ok.values())}/{len(ok)} proofs verified by {tool}{where}")
    bad = [p for p in parts if p.partition in ok and not ok[p.partition]]
    for p in bad:
        p.status, p.error = "failed", f"the proof was rejected by {tool}"
    return [(run_name, p) for p in bad]

