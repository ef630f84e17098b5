"""``zkgpu record``: run the scenario matrix once and keep everything in one fresh ``data/<gpu>-<date>-record[-N]/``.

Holds ``events/<scenario>.parquet``, ``logs/<scenario>.log``, ``sweep.parquet``/``.csv``, ``host_alloc.csv``,
``bench/*.csv`` and ``manifest.json`` (written last; ``interrupted`` after Ctrl-C; ``-incomplete`` when cut off).
Scenarios: :data:`SCENARIOS` (:mod:`zkgpu.core.scenarios`). With ``--zkey``/``--wtns`` every partition proves a real
witness and the proofs are verified."""

from __future__ import annotations

import dataclasses
import json
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import click
import pandas as pd

from zkgpu import pipeline
from zkgpu.analysis import metrics
from zkgpu.app.bench import msm as bench_msm
from zkgpu.app.bench import ntt as bench_ntt
from zkgpu.app.bench import transfer as bench_transfer
from zkgpu.app.record_checks import check_options, scenario_configs
from zkgpu.app.record_checks import scenario_partitions as check_scenario_partitions
from zkgpu.core.cuda import gpu_available
from zkgpu.core.errors import CliError, OneLineCommand
from zkgpu.core.events import normalize_events
from zkgpu.core.manifest import build_manifest, new_run_dir, write_run_manifest
from zkgpu.core.scenarios import (
    DEFAULT_REPEATS,
    LAST_MILE_ALTERNATIVE_PARTITIONS,
    LAST_MILE_PARTITIONS,
    LAST_MILE_SCENARIOS,
    MAIN_SCENARIOS,
    SCENARIOS,
    SEED_HOST_LOAD,
    SEED_PREP_THREADS,
    parse_scenario_partitions,
)
from zkgpu.groth16.workload import SnarkjsCircuit, check_proofs, load_circuit
from zkgpu.pipeline.config import PipelineConfig
from zkgpu.pipeline.runner import gpu_count
from zkgpu.transfer.hostload import HostMemoryLoad
from zkgpu.transfer.pinned_pool import PinnedPool

__all__ = [
    "SCENARIOS",
    "LAST_MILE_SCENARIOS",
    "LAST_MILE_PARTITIONS",
    "LAST_MILE_ALTERNATIVE_PARTITIONS",
    "GPU_DEFAULT_N",
    "GPU_DEFAULT_PARTITIONS",
    "GPU_SYNTH_WORKERS",
    "GPU_QUEUE_DEPTH",
    "GPU_QUICK_N",
    "GPU_QUICK_PARTITIONS",
    "CPU_DEFAULT_N",
    "CPU_DEFAULT_PARTITIONS",
    "scenario_configs",
    "run_scenario",
    "record",
    "record_command",
]

# Sizes. GPU: n = 2^22 constraints per partition (a/b/c = 3 x 128 MiB, 1/32 of a PoRep partition,
# the pipeline's default); --quick quarters it. CPU: the reference math on Python ints and
# py-arkworks is slow, so about a thousand constraints (a few seconds for the whole matrix).
GPU_DEFAULT_N = 1 << 22
GPU_DEFAULT_PARTITIONS = 32
GPU_SYNTH_WORKERS = 4
GPU_QUEUE_DEPTH = 8
"""GPU recordings: 4 synthesis threads, up to 8 partitions synthesized ahead (cuzk's ``max_gpu_queue_depth``;
the gw workers' start halves count too); the pinned pool is pre-warmed with ``depth + gw + 2`` sets."""
GPU_QUICK_N = 1 << 20
GPU_QUICK_PARTITIONS = 4
CPU_DEFAULT_N = 1 << 10
CPU_DEFAULT_PARTITIONS = 6


def _as_jsonable(x: Any) -> Any:
    if x is None or isinstance(x, (str, int, float, bool)):
        return x
    if hasattr(x, "as_dict"):
        return _as_jsonable(x.as_dict())
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return _as_jsonable(dataclasses.asdict(x))
    if isinstance(x, dict):
        return {str(k): _as_jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_as_jsonable(v) for v in x]
    if isinstance(x, Path):
        return str(x)
    if hasattr(x, "item"):
        try:
            return x.item()
        except (ValueError, AttributeError):
            pass
    return repr(x)


def _config_dict(cfg: Any) -> dict[str, Any]:
    out = {}
    for f in dataclasses.fields(cfg):
        if f.name in ("fault_hook", "log_path", "events_path", "echo"):
            continue
        out[f.name] = _as_jsonable(getattr(cfg, f.name))
    return out


def run_scenario(
    name: str, settings: dict[str, Any], run_dir: Path, *, n: int, partitions: int, device: str,
    seed: int = 0, synth_workers: int | None = None, prepared: dict[tuple, Any] | None = None,
    queue_depth: int | None = None,
    pool: Any = None,
    circuit: SnarkjsCircuit | None = None,
    vkey: str | Path | None = None,
    stem: str | None = None,
    prep_threads: int | None = None,
    gpus: int = 1,
) -> dict[str, Any]:
    """Run one scenario into ``run_dir``; its manifest entry (errors are recorded in it, not raised). ``prepared``: a
    dict caching backends across scenarios; ``pool``: a shared PinnedPool; ``circuit``: a real circuit whose proofs go
    to ``proofs/<name>/`` (entry ``proofs``)."""
    (run_dir / "logs").mkdir(exist_ok=True)
    (run_dir / "events").mkdir(exist_ok=True)
    stem = stem or name
    log_rel, ev_rel = f"logs/{stem}.log", f"events/{stem}.parquet"
    kw: dict[str, Any] = dict(settings, n=n, partitions=partitions, device=device, seed=seed, run=name,
                              log_path=run_dir / log_rel, events_path=run_dir / ev_rel)
    if prep_threads is not None and settings.get("prep") == "cpu_parallel":
        kw["prep_threads"] = prep_threads
    if synth_workers is not None:
        kw["synth_workers"] = synth_workers
    if queue_depth is not None:
        kw["queue_depth"] = queue_depth
    kw.setdefault("gpus", gpus)
    if circuit is not None:
        kw.update(real=circuit, num_inputs=circuit.num_inputs)
    entry: dict[str, Any] = {"settings": settings}
    t0 = time.perf_counter()
    try:
        cfg = PipelineConfig(**kw)
        entry["config"] = _config_dict(cfg)
        key = (cfg.transfer, cfg.n, cfg.seed, cfg.device, cfg.msm_bases, circuit.name if circuit is not None else None)
        cache = prepared if prepared is not None else {}
        t_setup = time.perf_counter()
        if key not in cache:
            cache[key] = pipeline.prepare_backend(cfg)
        entry["setup_s"] = round(time.perf_counter() - t_setup, 3)
        details = getattr(cache[key][1], "setup_details", None)
        if details:  # msm_bases="precomputed": the tables' build and the MSM benchmark at setup
            entry["setup"] = _as_jsonable(details)
        try:
            result = pipeline.run_pipeline(cfg, prepared=cache[key], pool=pool if cfg.transfer == "pinned_pool" else None)
        except pipeline.PipelineInterrupted as exc:  # Ctrl-C / SIGTERM: say what ran, then stop
            _partial_entry(entry, exc.result, run_dir, log_rel, ev_rel, t0, interrupted=f"{type(exc).__name__}: {exc}")
            exc.entry = entry
            raise
        _partial_entry(entry, result, run_dir, log_rel, ev_rel, t0)
        if circuit is not None:
            ok, tool = check_proofs(circuit, result.partitions, run_dir / "proofs" / stem, vkey)
            entry["proofs"] = {"folder": f"proofs/{stem}", "written": len(ok), "verified": sum(ok.values()), "tool": tool}
            if not all(ok.values()):
                entry["error"] = f"{len(ok) - sum(ok.values())} of {len(ok)} proofs rejected by {tool}"
    except Exception as exc:  # noqa: BLE001 - a failed scenario is recorded in the manifest; the others still run
        entry["error"] = f"{type(exc).__name__}: {exc}"
        entry["traceback"] = traceback.format_exc(limit=8)
        ev_path = run_dir / ev_rel
        if ev_path.exists():
            entry["events"] = ev_rel
    entry["seconds"] = round(time.perf_counter() - t0, 3)
    if (run_dir / log_rel).exists():
        entry["log"] = log_rel
    return entry


def _partial_entry(entry: dict[str, Any], result: Any, run_dir: Path, log_rel: str, ev_rel: str, t0: float, interrupted: str | None = None) -> None:
    """Fill a scenario's manifest entry from a :class:`zkgpu.pipeline.PipelineResult` (complete or
    the partial one of an interrupted run)."""
    if (run_dir / ev_rel).exists():
        entry["events"] = ev_rel
        entry["rows"] = int(len(result.events))
    if (run_dir / log_rel).exists():
        entry["log"] = log_rel
    if result.pool_stats is not None:
        entry["pool_stats"] = _as_jsonable(result.pool_stats)
    if result.errors:
        entry["partition_errors"] = [str(e) for e in result.errors][:10]
    entry["partitions_ok"] = sum(p.status == "ok" for p in result.partitions)
    if interrupted is not None:
        entry["interrupted"] = interrupted
        entry["partition_status"] = {str(p.partition): p.status for p in result.partitions}
        entry["seconds"] = round(time.perf_counter() - t0, 3)


def _sweep(run_dir: Path, quick: bool, notes: list[str]) -> str | None:
    try:
        # 1 MiB .. 256 MiB (quick) or 1 GiB: the curves flatten well before that; the 4 GiB points
        # are `zkgpu bench h2d`'s job. Time-boxed so a recording fits one device command.
        top = 28 if quick else 30
        df = bench_transfer.bandwidth_sweep(sizes=tuple(1 << s for s in range(20, top + 1, 2)), repeat=3 if quick else 5,
                                            time_budget_s=45.0 if quick else 120.0)
        skipped_sizes = list(df.attrs.get("skipped_sizes", []) or [])
        if skipped_sizes:
            notes.append(f"sweep: time budget reached, sizes not measured: {skipped_sizes}")
        df = pd.DataFrame(df)
        df.attrs = {}
    except Exception as exc:  # noqa: BLE001 - a failed sweep is noted in the manifest; the scenarios still count
        notes.append(f"sweep failed: {type(exc).__name__}: {exc}")
        return None
    df.to_parquet(run_dir / "sweep.parquet", index=False)
    df.to_csv(run_dir / "sweep.csv", index=False)
    measured = sorted(set(int(x) for x in df["size_bytes"]))
    try:
        bench_transfer.host_alloc_costs(sizes=measured, repeat=2 if quick else 3).to_csv(run_dir / "host_alloc.csv", index=False)
    except Exception as exc:  # noqa: BLE001 - noted in the manifest, as the sweep
        notes.append(f"host_alloc_costs failed: {type(exc).__name__}: {exc}")
    return "sweep.parquet"


#: the kernel benchmarks of a recording: name -> (module with ``run_benchmark``, log2 sizes, log2
#: sizes with ``quick``)
BENCHMARKS: dict[str, tuple[Any, tuple[int, int], tuple[int, int]]] = {
    "ntt": (bench_ntt, (16, 24), (16, 20)),
    "msm": (bench_msm, (12, 20), (12, 16)),
}


def _benchmarks(run_dir: Path, quick: bool, notes: list[str]) -> dict[str, str]:
    """Run :data:`BENCHMARKS` into ``bench/<kind>.csv``; a failing benchmark is noted, not raised."""
    out: dict[str, str] = {}
    for kind, (module, normal, short) in BENCHMARKS.items():
        lo, hi = short if quick else normal
        try:
            rows = module.run_benchmark(min_log=lo, max_log=hi, repeat=5 if quick else 10)
        except Exception as exc:  # noqa: BLE001 - a failing benchmark is noted, not raised (docstring)
            notes.append(f"{kind} benchmark failed: {type(exc).__name__}: {exc}")
            continue
        (run_dir / "bench").mkdir(exist_ok=True)
        rel = f"bench/{kind}.csv"
        pd.DataFrame(rows).to_csv(run_dir / rel, index=False)
        out[kind] = rel
    return out


def _interrupted_entry(name: str, run_dir: Path, exc: BaseException, stem: str | None = None) -> dict[str, Any]:
    """Manifest entry of the scenario a Ctrl-C / SIGTERM cut: the partial entry that
    :func:`run_scenario` attached to a ``PipelineInterrupted``, else the files on disk."""
    entry = dict(getattr(exc, "entry", None) or {"settings": SCENARIOS[name]})
    entry.setdefault("interrupted", f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
    stem = stem or name
    for key, rel in (("log", f"logs/{stem}.log"), ("events", f"events/{stem}.parquet")):
        if (run_dir / rel).exists():
            entry.setdefault(key, rel)
    return entry


def _throughput(run_dir: Path, entry: Mapping[str, Any]) -> float:
    """Partitions per minute of one run (:func:`zkgpu.analysis.metrics.utilization` over its events), NaN
    when it has no event table."""
    rel = entry.get("events")
    if not rel or "error" in entry:
        return float("nan")
    u = metrics.utilization(normalize_events(pd.read_parquet(run_dir / rel)))
    return float(u["partitions_per_min"].sum())


def _scenario_entry(run_dir: Path, runs: list[dict[str, Any]], repeats: int) -> dict[str, Any]:
    """A scenario's manifest entry from its runs: with one run, that run's entry; with several, the
    representative run's entry (the median throughput; an even count takes the lower middle) with every
    run under ``repeats`` and the representative's index under ``representative``."""
    if repeats == 1:
        return runs[0]
    rates = [_throughput(run_dir, e) for e in runs]
    ok = sorted((r, i) for i, r in enumerate(rates) if r == r)
    rep = ok[(len(ok) - 1) // 2][1] if ok else 0
    entry = dict(runs[rep])
    entry["repeats"] = [{**{k: v for k, v in e.items() if k not in ("settings", "config")}, "partitions_per_min": round(r, 3) if r == r else None}
                        for e, r in zip(runs, rates, strict=True)]
    entry["representative"] = rep
    return entry


def record(
    out: str | Path | None = None,
    *,
    device: str | None = None,
    n: int | None = None,
    partitions: int | None = None,
    quick: bool = False,
    scenarios: Iterable[str] | None = None,
    sweep: bool = True,
    bench: bool = True,
    synth_workers: int | None = None,
    queue_depth: int | None = None,
    seed: int = 0,
    host_load: int | None = None,
    echo: Callable[[str], None] | None = None,
    circuit: SnarkjsCircuit | None = None,
    vkey: str | Path | None = None,
    scenario_partitions: Mapping[str, int] | None = None,
    repeats: int = DEFAULT_REPEATS,
    prep_threads: int = SEED_PREP_THREADS,
    gpus: int = 1,
) -> Path:
    """Record the scenario matrix into a fresh run folder; returns its path.

    Args:
        out: base folder (default ``data/``). device: ``gpu``, ``cpu`` or None (GPU when present).
        n, partitions: per scenario (defaults by device and ``quick``). scenarios: default :data:`MAIN_SCENARIOS`.
        sweep, bench: the H2D sweep / kernel benchmarks (GPU). synth_workers, queue_depth, seed, prep_threads.
        host_load: HostMemoryLoad threads during the scenarios. echo: progress callback.
        circuit, vkey: a real circuit and its verification key. scenario_partitions: per-scenario counts.
        repeats: runs per scenario, interleaved. gpus: GPUs per scenario.
    Raises:
        ValueError: bad device, scenario, size or host_load. RuntimeError: ``device="gpu"`` without a GPU.
        MemoryError: the host load does not fit. All before any folder is created."""
    say = echo or (lambda _s: None)
    has_gpu = gpu_available()
    device = device or ("gpu" if has_gpu else "cpu")
    check_options(device=device, has_gpu=has_gpu, gpu_count=gpu_count, out=out, partitions=partitions, synth_workers=synth_workers,
                  queue_depth=queue_depth, repeats=repeats, prep_threads=prep_threads, gpus=gpus)
    # None means the default; any other value (0 included) is checked by PipelineConfig below
    if circuit is not None:
        if n is not None and n != circuit.n:
            raise ValueError(f"n={n} but the circuit {circuit.name} has a domain of {circuit.n}: leave n out with a circuit")
        n = circuit.n
    if device == "gpu":
        n = (GPU_QUICK_N if quick else GPU_DEFAULT_N) if n is None else n
        partitions = (GPU_QUICK_PARTITIONS if quick else GPU_DEFAULT_PARTITIONS) if partitions is None else partitions
        synth_workers = GPU_SYNTH_WORKERS if synth_workers is None else synth_workers
        queue_depth = GPU_QUEUE_DEPTH if queue_depth is None else queue_depth
    else:
        n = CPU_DEFAULT_N if n is None else n
        partitions = CPU_DEFAULT_PARTITIONS if partitions is None else partitions
    if host_load is None:
        host_load = SEED_HOST_LOAD if device == "gpu" else 0
    runnable, skipped = scenario_configs(MAIN_SCENARIOS if scenarios is None else scenarios, device=device)
    counts = check_scenario_partitions(scenario_partitions, runnable, skipped)
    if not runnable:
        raise ValueError(f"no scenario to record on device={device}: " + "; ".join(f"{k} skipped ({v})" for k, v in skipped.items()) + " (choose other --scenario values)")
    load = HostMemoryLoad(host_load)  # TypeError/ValueError naming host_load's value, before any folder
    # validate the sizes before a folder exists (ValueError/TypeError naming the setting)
    opt_kw: dict[str, Any] = {k: v for k, v in (("synth_workers", synth_workers), ("queue_depth", queue_depth)) if v is not None}
    try:
        abc = PipelineConfig(n=n, partitions=partitions, device=device, transfer="pageable", **opt_kw).abc_bytes
    except (TypeError, ValueError) as exc:
        raise type(exc)(str(exc).replace("PipelineConfig.", "record: ")) from exc
    host_load = load.threads
    if host_load:
        # started before the folder exists: a load that cannot allocate its buffers
        # (MemoryError) or start its threads leaves nothing behind
        load.start()
    try:
        run_dir = new_run_dir("record", base=Path(out) if out is not None else None, gpu="cpu" if device == "cpu" else None)
    except BaseException:
        load.stop()
        raise
    say(f"record: {run_dir} (device={device}, n={n}, partitions={partitions})")
    notes = [f"scenario {k} skipped: {v}" for k, v in skipped.items()]
    if device == "cpu":
        notes.append("device=cpu: every duration is a CPU duration (reference math), not a GPU measurement")
    t_all = time.perf_counter()
    entries: dict[str, Any] = {}
    sweep_rel = None
    bench_rel: dict[str, str] = {}
    interrupted = None
    failure: Exception | None = None
    current, current_stem = None, None  # the scenario running now, and its run's file stem
    prepared: dict[tuple, Any] = {}
    pool: Any = None
    if host_load:
        notes.append(f"host memory load: {host_load} HostMemoryLoad threads x 2 x {load.buffer_bytes} bytes during the warm-up and every scenario (not during the sweep and benchmarks)")
    def stop_load() -> None:  # a failed load thread is noted, never loses the recording
        try:
            load.stop()
        except RuntimeError as exc:
            notes.append(f"HOST LOAD FAILED ({exc}): scenarios after the failure ran with fewer load threads")

    try:
        if device == "gpu" and runnable:
            # Warm-up, discarded: the first pipeline run of a process compiles the kernels (NVRTC),
            # creates the CUDA context and streams and builds the NTT tables inside its first
            # phases, which would otherwise land in the first scenario's numbers.
            name0, settings0 = next(iter(runnable.items()))
            t_w, n_warm = time.perf_counter(), (1 if circuit else 2) * gpus  # with several GPUs: each GPU's first run too
            with tempfile.TemporaryDirectory(prefix="zkgpu-warmup-") as tmp:
                w = run_scenario(f"warmup-{name0}", settings0, Path(tmp), n=n, partitions=n_warm, device=device, seed=seed,
                                 synth_workers=synth_workers, prepared=prepared, queue_depth=queue_depth, circuit=circuit, vkey=vkey, gpus=gpus)
            msg = f"warm-up: {n_warm} partition(s) of {name0}'s configuration in {time.perf_counter() - t_w:.1f} s, discarded (kernel compilation, CUDA set-up, NTT tables)"
            if "error" in w:
                msg += f"; it failed: {w['error']}"
            notes.append(msg)
            say(f"record: {msg}")
        if device == "gpu" and any(st.get("transfer") == "pinned_pool" for st in runnable.values()):
            # cuzk measures the pool in steady state (every checkout a reuse, "24 allocs / 48
            # reuses"); a cold pool would put a burst of cudaHostAlloc calls, which serialise in
            # the driver, into the first partitions' synthesis. Allocate once, up front, and share.
            pool = PinnedPool()
            nbuf = (queue_depth or 0) + max(int(st.get("gw", 2)) * int(st.get("gpus", gpus)) for st in runnable.values()) + 2
            t_p = time.perf_counter()
            for held in [pool.checkout_abc(n) for _ in range(nbuf)]:
                held.release()
            msg = f"pinned pool pre-warmed: {3 * nbuf} buffers of {n * 32} bytes in {time.perf_counter() - t_p:.1f} s, shared by the pinned_pool scenarios"
            notes.append(msg)
            say(f"record: {msg}")
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in runnable}
        for r in range(repeats):
            for name, settings in runnable.items():
                stem = name if repeats == 1 else f"{name}.r{r + 1}"
                say(f"record: scenario {name} (run {r + 1} of {repeats}) {settings}")
                mark = load.snapshot()
                current, current_stem = name, stem
                e = run_scenario(name, settings, run_dir, n=n, partitions=counts.get(name, partitions), device=device, seed=seed,
                                 synth_workers=synth_workers, prepared=prepared, queue_depth=queue_depth, pool=pool, circuit=circuit,
                                 vkey=vkey, stem=stem, prep_threads=prep_threads, gpus=gpus)
                current = None
                if host_load:
                    e["host_load"] = {k: (round(v, 3) if isinstance(v, float) else v) for k, v in dataclasses.asdict(load.since(mark)).items()}
                runs[name].append(e)
                entries[name] = _scenario_entry(run_dir, runs[name], repeats)
                say(f"record:   {name}: {'ERROR ' + e['error'] if 'error' in e else str(e.get('rows')) + ' events'} in {e['seconds']} s")
        stop_load()
        if device == "gpu":
            if sweep:
                say("record: H2D bandwidth sweep")
                sweep_rel = _sweep(run_dir, quick, notes)
            if bench:
                say("record: kernel benchmarks")
                bench_rel = _benchmarks(run_dir, quick, notes)
        else:
            notes.append("no H2D sweep and no kernel benchmarks on the CPU (they measure the GPU)")
    except (KeyboardInterrupt, Exception) as exc:  # noqa: BLE001 - Ctrl-C, SIGTERM (made a KeyboardInterrupt by the CLI), or an error outside the scenarios (a full disk): the manifest of what ran, then re-raised
        failure = exc if isinstance(exc, Exception) else None
        interrupted = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        notes.append(f"{'INTERRUPTED' if failure is None else 'STOPPED BY AN ERROR'} ({interrupted}): only the scenarios listed with files were recorded")
        if current is not None:  # the scenario that was running: what it left on disk, and that it was cut
            cut = _interrupted_entry(current, run_dir, exc, current_stem)
            entries[current] = dict(entries[current], interrupted=cut["interrupted"]) if current in entries else cut
    finally:
        try:
            prepared.clear()  # release the generated bases (device memory) before the manifest
            if pool is not None:
                pool.close()
        finally:
            stop_load()
    for name in runnable:
        entries.setdefault(name, {"settings": SCENARIOS[name], "skipped": "not run: the recording was interrupted"})
    for name, why in skipped.items():
        entries[name] = {"settings": SCENARIOS[name], "skipped": why}
    # the manifest is written even after an interruption, so what finished stays readable; one that did not finish or
    # has no scenario without an error (every proof rejected, a full disk) is marked incomplete (replay skips it)
    recorded = [k for k in runnable if entries.get(k, {}).get("events") and "error" not in entries[k]]
    incomplete = interrupted or (None if recorded else "no scenario recorded its events without an error")
    manifest = build_manifest(
        kind="record",
        device=device,
        n=n,
        partitions=partitions,
        gpus=gpus,
        quick=quick,
        seed=seed,
        host_load={"threads": host_load, "buffer_bytes": load.buffer_bytes},
        sizes={"n": n, "log_n": n.bit_length() - 1, "abc_bytes_per_partition": abc, "fr_bytes": 32},
        circuit=circuit.describe() if circuit is not None else None,
        repeats=repeats,
        prep_threads=prep_threads,
        scenarios=entries,
        sweep=sweep_rel,
        benchmarks=bench_rel,
        notes=notes,
        interrupted=interrupted,
        complete=incomplete is None,
        incomplete=incomplete,
        elapsed_s=round(time.perf_counter() - t_all, 3),
    )
    run_dir = write_run_manifest(run_dir, json.loads(json.dumps(manifest, default=str)))
    say(f"record: {'INTERRUPTED' if interrupted else 'INCOMPLETE' if incomplete else 'done'} in {manifest['elapsed_s']} s -> {run_dir}")
    if failure is not None:
        raise RuntimeError(f"recording stopped by {interrupted}; what ran is in {run_dir}") from failure
    if interrupted:
        raise KeyboardInterrupt(f"recording interrupted; partial results in {run_dir}")
    return run_dir


@click.command("record", cls=OneLineCommand)
@click.option("--n", "n", type=int, default=None, help="constraints per partition, a power of two (default 2^22 GPU, 2^20 --quick, 2^10 CPU)")
@click.option("--partitions", type=int, default=None, help="partitions per scenario (default 32 GPU: the pipeline fill weighs ~1/32 of a run, 4 --quick, 6 CPU)")
@click.option("--quick", is_flag=True, help="smaller defaults, shorter sweep and benchmarks")
@click.option("--out", "out", default=None, help="base folder for the run folder (default $ZKGPU_DATA, else data/)")
@click.option("--device", type=click.Choice(["auto", "gpu", "cpu"]), default="auto", show_default=True)
@click.option("--scenario", "scenarios", multiple=True, type=click.Choice(list(SCENARIOS)), help="run only these (repeatable)")
@click.option("--scenario-partitions", "scenario_partitions", multiple=True, metavar="NAME=K",
              help="run scenario NAME over K partitions instead of --partitions (repeatable)")
@click.option("--no-sweep", is_flag=True, help="skip the H2D bandwidth sweep")
@click.option("--no-bench", is_flag=True, help="skip the kernel benchmarks")
@click.option("--synth-workers", type=int, default=None, help="synthesis threads (default 8 on the GPU, else the pipeline's)")
@click.option("--queue-depth", type=int, default=None, help="partitions synthesized ahead (default 8 on the GPU; 0: 2*gw)")
@click.option("--gpus", type=int, default=1, show_default=True, help="GPUs of each scenario, one worker set each (at most the CUDA devices present; emulated with --device cpu)")
@click.option("--host-load", type=click.IntRange(min=0), default=None, help=f"host memory-bandwidth load threads during the scenarios (zkgpu.transfer.hostload) [default: {SEED_HOST_LOAD} on the GPU, 0 on the CPU]")
@click.option("--repeats", type=click.IntRange(1, 20), default=DEFAULT_REPEATS, show_default=True, help="runs of every scenario, interleaved round-robin")
@click.option("--prep-threads", type=click.IntRange(1, 256), default=SEED_PREP_THREADS, show_default=True, help="numba threads of prep_msm (prep=cpu_parallel)")
@click.option("--zkey", "zkey_path", type=click.Path(dir_okay=False, exists=True), default=None, help="prove a real circuit in every scenario: its snarkjs BLS12-381 key (n = its domain)")
@click.option("--wtns", "wtns_paths", multiple=True, type=click.Path(dir_okay=False, exists=True), help="with --zkey: witness(es), cycled over the partitions")
@click.option("--vkey", "vkey_path", type=click.Path(dir_okay=False, exists=True), default=None, help="with --zkey: verification key for snarkjs [default: vkey.json beside the key]")
def record_command(n, partitions, quick, out, device, scenarios, scenario_partitions, no_sweep, no_bench, synth_workers, queue_depth, gpus, host_load,
                   repeats, prep_threads, zkey_path, wtns_paths, vkey_path) -> None:
    """Run the scenario matrix (baseline, registered, pinned pool, narrow lock, gw=1/3, compute-only)
    and write logs, Parquet event tables, the H2D sweep, kernel benchmarks and manifest.json into
    one fresh data/<gpu>-<date>-record/ folder. Bad options fail (one line, exit 2) before any
    folder is created; Ctrl-C or SIGTERM writes the manifest of what ran (exit 130)."""

    def _on_term(signum, _frame):  # `timeout` sends SIGTERM: finish the manifest like Ctrl-C does
        raise KeyboardInterrupt(f"signal {signum}")

    try:
        previous = signal.signal(signal.SIGTERM, _on_term)
    except ValueError:  # not in the main thread
        previous = None
    if bool(zkey_path) != bool(wtns_paths):
        raise CliError("a real circuit needs both --zkey and --wtns")
    try:
        counts = parse_scenario_partitions(scenario_partitions)
        if vkey_path is not None and not zkey_path:
            raise ValueError("--vkey checks the proofs of a real circuit: give its key with --zkey")
        circuit = load_circuit(zkey_path, wtns_paths, vkey=vkey_path) if zkey_path else None  # the vkey too, before any folder
        run_dir = record(
            out=out, device=None if device == "auto" else device, n=n, partitions=partitions, quick=quick,
            scenarios=scenarios or None, sweep=not no_sweep, bench=not no_bench, synth_workers=synth_workers,
            queue_depth=queue_depth, host_load=host_load, echo=click.echo, circuit=circuit, vkey=vkey_path,
            scenario_partitions=counts or None, repeats=repeats, prep_threads=prep_threads, gpus=gpus,
        )
    except (ValueError, TypeError, RuntimeError) as exc:
        raise CliError(str(exc)) from exc
    except OSError as exc:  # the run folder cannot be created (permissions, read-only disk ...)
        raise CliError(f"cannot create the run folder under {out or 'data/'}: {exc.strerror or exc} (choose another --out)") from exc
    except MemoryError as exc:
        raise CliError(f"out of host memory before recording (--host-load {host_load} needs 2 x 256 MiB per thread; lower it): {exc}") from exc
    except KeyboardInterrupt as exc:
        click.echo(f"record: {exc}", err=True)
        sys.exit(130)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    failed = [k for k, v in manifest["scenarios"].items() if "error" in v]
    for note in manifest["notes"]:
        click.echo(f"note: {note}")
    size = sum(p.stat().st_size for p in run_dir.rglob("*") if p.is_file())
    click.echo(f"recorded {len(manifest['scenarios']) - len(failed)} scenario entries, {size / 1e6:.2f} MB in {run_dir}")
    if failed:
        click.echo(f"FAILED scenarios: {', '.join(failed)}", err=True)
        sys.exit(1)
