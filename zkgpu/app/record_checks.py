"""``zkgpu record``'s option checks: which scenarios a device runs, and the bounds of a recording, checked first."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from zkgpu.core.scenarios import SCENARIOS
from zkgpu.gpu.msm.prep import numba_available
from zkgpu.pipeline.config import TRANSFERS

__all__ = [
    "MAX_PARTITIONS",
    "MAX_SYNTH_WORKERS",
    "MAX_QUEUE_DEPTH",
    "MAX_GPUS",
    "MAX_REPEATS",
    "MAX_PREP_THREADS",
    "scenario_configs",
    "scenario_partitions",
    "check_options",
]

#: upper bounds of the record options: partitions per scenario, synthesis threads, queue depth, GPUs
#: (``PipelineConfig.gpus``'s bound), runs of each scenario, prep_msm threads
MAX_PARTITIONS, MAX_SYNTH_WORKERS, MAX_QUEUE_DEPTH, MAX_GPUS = 10_000, 64, 256, 16
MAX_REPEATS, MAX_PREP_THREADS = 20, 256


def scenario_configs(
    names: Iterable[str] | None = None, *, device: str = "gpu"
) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """``(runnable {name: settings}, skipped {name: reason})`` on ``device``. Raises ValueError: an unknown name."""
    names = list(SCENARIOS) if names is None else list(names)
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        raise ValueError(f"unknown scenario(s) {unknown}; known: {list(SCENARIOS)}")
    run, skipped = {}, {}
    for name in names:
        s = SCENARIOS[name]
        if s["transfer"] not in TRANSFERS:
            skipped[name] = f"the pipeline has no transfer={s['transfer']!r} (it offers {list(TRANSFERS)})"
        elif s["transfer"] == "registered" and device == "cpu":
            skipped[name] = "transfer='registered' needs a GPU (cudaHostRegister)"
        elif s.get("prep") == "gpu" and device == "cpu":
            skipped[name] = "prep='gpu' needs a GPU"
        elif s.get("prep") == "cpu_parallel" and not numba_available():
            skipped[name] = "prep='cpu_parallel' needs numba (extra cpu-parallel)"
        else:
            run[name] = dict(s)
    return run, skipped


def scenario_partitions(given: Mapping[str, int] | None, runnable: Mapping[str, Any], skipped: Mapping[str, str]) -> dict[str, int]:
    """``scenario_partitions`` checked: every name a scenario of this recording, every count an int
    in [1, MAX_PARTITIONS] (ValueError/TypeError naming the entry)."""
    out: dict[str, int] = {}
    for name, k in (given or {}).items():
        if name not in runnable and name not in skipped:
            raise ValueError(f"scenario_partitions names {name!r}, which this recording does not run (it runs {list(runnable)})")
        if isinstance(k, bool) or not isinstance(k, int):
            raise TypeError(f"scenario_partitions[{name!r}] must be an int, got {type(k).__name__} {k!r}")
        if not 1 <= k <= MAX_PARTITIONS:
            raise ValueError(f"scenario_partitions[{name!r}]={k} must be in [1, {MAX_PARTITIONS}]")
        out[name] = k
    return out


def check_options(
    *, device: str, has_gpu: bool, gpu_count: Callable[[], int], out: str | Path | None, partitions: int | None,
    synth_workers: int | None, queue_depth: int | None, repeats: int, prep_threads: int, gpus: int,
) -> None:
    """Check :func:`~zkgpu.app.record.record`'s arguments (``gpu_count`` called only for ``device == "gpu"``). Raises
    ValueError: a value out of range or a bad ``out``. RuntimeError: ``device="gpu"`` without a GPU."""
    if device not in ("gpu", "cpu"):
        raise ValueError(f"device must be 'gpu' or 'cpu', got {device!r}")
    if device == "gpu" and not has_gpu:
        raise RuntimeError("device='gpu' needs a CUDA GPU (CuPy) and none was found: record on the CPU with device='cpu' (--device cpu)")
    for what, count, top in (("repeats", repeats, MAX_REPEATS), ("prep_threads", prep_threads, MAX_PREP_THREADS)):
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= top:
            raise ValueError(f"{what}={count!r} must be an int in [1, {top}]")
    if isinstance(gpus, bool) or not isinstance(gpus, int) or not 1 <= gpus <= MAX_GPUS:
        raise ValueError(f"gpus={gpus!r}: give a whole number of GPUs from 1 to {MAX_GPUS}")
    if device == "gpu" and gpus > 1 and gpus > (present := gpu_count()):
        raise ValueError(f"gpus={gpus}: this host has {present} CUDA device(s) (choose --gpus {present} or fewer)")
    if out is not None and not str(out).strip():
        raise ValueError("out='' is empty: give a folder for the run folder (e.g. --out data), or leave --out out for data/")
    for name, value, top in (("partitions", partitions, MAX_PARTITIONS), ("synth_workers", synth_workers, MAX_SYNTH_WORKERS), ("queue_depth", queue_depth, MAX_QUEUE_DEPTH)):
        if isinstance(value, int) and value > top:
            raise ValueError(f"{name}={value} is more than {top}: a recording needs far fewer (choose a smaller --{name.replace('_', '-')})")
    if out is not None and Path(out).exists() and not Path(out).is_dir():
        raise ValueError(f"out={str(out)!r} is a file, not a folder: give a folder for the run folder (e.g. --out data)")
