"""``zkgpu bench keycheck``: the cost of checking a proving key's points (and a witness) at 2^19 and 2^24 points.

Rows (:func:`run_benchmark`): ``gpu`` G1/G2 point checks (``device`` and ``with_h2d``, CUDA events); ``cpu`` G1/G2 up to
``--cpu-max-log`` (wall time); ``key`` (:func:`zkgpu.groth16.keycheck.check_key` of a synthetic key); ``witness``
(read_r1cs, read_wtns, check) with ``--r1cs``/``--wtns``. Medians after one warm-up. Writes keycheck.csv, keycheck.json
and manifest.json to a fresh ``bench-keycheck`` folder."""

from __future__ import annotations

import functools
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click
import numpy as np
import pandas as pd

from zkgpu.core import cuda as _cuda
from zkgpu.core import optional
from zkgpu.core.errors import CliError
from zkgpu.core.manifest import build_manifest, check_run_base, new_run_dir, write_json_new
from zkgpu.gpu import subgroup
from zkgpu.groth16 import keycheck
from zkgpu.groth16.formats import ZKey, read_wtns
from zkgpu.groth16.setup import read_r1cs

__all__ = ["tiled_points", "synthetic_key", "witness_rows", "run_benchmark", "bench_command"]

DISTINCT = 1024
"""Distinct points, tiled to the size."""


def tiled_points(group: str, n: int, distinct: int = DISTINCT) -> np.ndarray:
    """n subgroup points of ``group`` ("g1", "g2") in the host layout: [k]G for k = 2 .. distinct + 1, tiled."""
    ark = optional.arkworks()
    g, limbs = (ark.G1Point(), 12) if group == "g1" else (ark.G2Point(), 24)
    base = b"".join((g * ark.Scalar(k + 2)).to_xy_bytes_le() for k in range(min(n, distinct)))
    arr = np.frombuffer(base, dtype="<u8").astype(np.uint64).reshape(-1, limbs)
    return np.ascontiguousarray(np.resize(arr, (n, limbs)))


def synthetic_key(log_n: int) -> ZKey:
    """A key with 2^log_n tiled points in A, B1, C, H and B2 (2 public inputs), a valid header (alpha1 = 2G1,
    beta = 3G, gamma2 = 5G2, delta = 7G): what :func:`zkgpu.groth16.keycheck.check_key` checks, no coefficients."""
    n = 1 << log_n
    g1, g2 = tiled_points("g1", n), tiled_points("g2", n)
    ark = optional.arkworks()

    def one(k: int, group: str) -> np.ndarray:
        p = (ark.G1Point() if group == "g1" else ark.G2Point()) * ark.Scalar(k)
        return np.frombuffer(p.to_xy_bytes_le(), dtype="<u8").astype(np.uint64).reshape(1, -1)

    empty = np.zeros(0, dtype=np.uint32)
    return ZKey(path=Path(f"synthetic-2^{log_n}.zkey"), n_vars=n, n_public=2, domain_size=n,
                alpha1=one(2, "g1"), beta1=one(3, "g1"), beta2=one(3, "g2"), gamma2=one(5, "g2"), delta1=one(7, "g1"),
                delta2=one(7, "g2"), ic=g1[:3], a=g1, b1=g1, b2=g2, c=g1[: n - 3], h=g1, coef_matrix=empty,
                coef_constraint=empty, coef_signal=empty, coef_raw=np.zeros((0, 4), dtype=np.uint64))  # fmt: skip


def _wall_ms(fn: Callable[[], Any], repeat: int) -> list[float]:
    fn()
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e3)
    return out


def _events_ms(fn: Callable[[], Any], repeat: int) -> list[float]:
    return list(_cuda.benchmark(fn, warmup=1, repeat=repeat).times_ms)


def _row(log_n: int, path: str, group: str, phase: str, points: int, times: Sequence[float], clock: str) -> dict[str, Any]:
    med = statistics.median(times)
    return dict(log_n=log_n, n=1 << log_n, path=path, group=group, phase=phase, points=points, clock=clock,
                median_ms=med, min_ms=min(times), max_ms=max(times), repeat=len(times),
                us_per_point=med * 1e3 / points, Mpoints_per_s=points / (med * 1e3) if med > 0 else float("nan"))  # fmt: skip


def _checked(points: Any, group: str) -> subgroup.PointCheck:
    res = subgroup.check_points(points, group)
    if not res.ok:  # the timed call must have checked valid points as valid
        raise RuntimeError(f"bench keycheck: valid points refused (first off curve {res.first_off_curve}, outside {res.first_outside})")
    return res


def witness_rows(r1cs_path: str | Path, wtns_path: str | Path, repeat: int) -> list[dict[str, Any]]:
    """The ``witness`` rows: read the r1cs, read the witness, check it. Raises FormatError: a bad r1cs or wtns.
    ValueError: wrong length, or a witness that does not satisfy the r1cs."""
    r1, wt = read_r1cs(r1cs_path), read_wtns(wtns_path)
    log_n = max(1, (r1.n_constraints + r1.n_public).bit_length())  # the domain: constraints + public + 1 (the set-up's)

    def check() -> None:
        bad = keycheck.check_constraints(r1, wt.values)
        if bad is not None:
            raise ValueError(f"bench keycheck: {wtns_path} does not satisfy {r1cs_path}: constraint {bad} fails")

    m = r1.n_constraints
    return [_row(log_n, "cpu", "witness", "read_r1cs", m, _wall_ms(functools.partial(read_r1cs, r1cs_path), repeat), "perf_counter"),
            _row(log_n, "cpu", "witness", "read_wtns", r1.n_wires, _wall_ms(functools.partial(read_wtns, wtns_path), repeat), "perf_counter"),
            _row(log_n, "cpu", "witness", "check", m, _wall_ms(check, repeat), "perf_counter")]  # fmt: skip


def run_benchmark(logs: Sequence[int] = (19, 24), repeat: int = 5, *, gpu: bool | None = None, cpu_max_log: int = 19,
                  cpu_repeat: int = 1, key: bool = True, r1cs: str | Path | None = None,
                  wtns: str | Path | None = None) -> list[dict[str, Any]]:
    """The benchmark's rows (module docstring); ``gpu`` None: when a GPU is present. Raises RuntimeError: a check
    refused valid points or the witness, or ``gpu=True`` without a GPU."""
    on_gpu = _cuda.gpu_available() if gpu is None else gpu
    rows: list[dict[str, Any]] = []
    if on_gpu:
        subgroup.warm_up()
    for lg in logs:
        n = 1 << lg
        for grp in ("g1", "g2"):
            host = tiled_points(grp, n)
            if on_gpu:
                dev = _cuda.cupy().asarray(host)
                for phase, pts in (("device", dev), ("with_h2d", host)):
                    run = functools.partial(_checked, pts, grp)
                    rows.append(_row(lg, "gpu", grp, phase, n, _events_ms(run, repeat), "cuda_events"))
                del dev
                _cuda.cupy().get_default_memory_pool().free_all_blocks()
            if lg <= cpu_max_log:
                G = grp.upper()

                def cpu(h: np.ndarray = host, g: str = G) -> None:
                    if keycheck.first_off_curve(h, g) is not None or not keycheck.subgroup_batch(h, g):
                        raise RuntimeError("bench keycheck: valid points refused on the CPU")

                rows.append(_row(lg, "cpu", grp, "host", n, _wall_ms(cpu, cpu_repeat), "perf_counter"))
            del host
        if key:
            zk = synthetic_key(lg)
            pts = 5 * n + 6  # A, B1, H, B2 (n each), C (n - 3), IC (3), the header (6)
            if on_gpu:
                rows.append(_row(lg, "gpu", "key", "check_key", pts, _wall_ms(functools.partial(keycheck.check_key, zk, gpu=True), repeat), "perf_counter"))
                _cuda.cupy().get_default_memory_pool().free_all_blocks()
            if lg <= cpu_max_log:
                rows.append(_row(lg, "cpu", "key", "check_key", pts, _wall_ms(functools.partial(keycheck.check_key, zk, gpu=False), cpu_repeat), "perf_counter"))
            del zk
    if r1cs is not None and wtns is not None:
        rows += witness_rows(r1cs, wtns, repeat)
    return rows


def _logs(ctx: click.Context, param: click.Parameter, value: str) -> tuple[int, ...]:
    if value.strip().lower() == "none":
        return ()
    try:
        out = tuple(int(v) for v in value.split(","))
    except ValueError:
        raise click.BadParameter(f"{value!r}: give sizes as log2, comma-separated (e.g. 19,24)") from None
    bad = [v for v in out if not 0 <= v <= 26]
    if bad or not out:
        raise click.BadParameter(f"{value!r}: each size a log2 in 0..26")
    twice = sorted({v for v in out if out.count(v) > 1})
    if twice:  # one row per size: a size twice would write duplicate rows that the printed pivot averages
        raise click.BadParameter(f"{value!r}: size {twice[0]} given twice")
    return out


@click.command("keycheck")
@click.option("--logs", default="19,24", show_default=True, callback=_logs, help="sizes, log2, comma-separated; none: only the --r1cs rows")
@click.option("--repeat", default=5, show_default=True, type=click.IntRange(1, 1000), help="timed repeats per GPU row and witness row (median reported)")
@click.option("--cpu-max-log", default=19, show_default=True, type=click.IntRange(0, 26), help="time the CPU path up to this size (0: never)")
@click.option("--cpu-repeat", default=1, show_default=True, type=click.IntRange(1, 1000), help="timed repeats per CPU point or key row")
@click.option("--no-key", is_flag=True, help="leave out the whole-key rows (check_key of a synthetic key)")
@click.option("--r1cs", "r1cs_path", type=click.Path(exists=True, dir_okay=False), default=None,
              help="also time reading this circuit's r1cs and checking --wtns against it (CPU, --repeat)")
@click.option("--wtns", "wtns_path", type=click.Path(exists=True, dir_okay=False), default=None, help="the witness for --r1cs")
@click.option("--out", "out_base", default=None, help="base folder for the run folder (default data/)")
def keycheck_bench(logs: tuple[int, ...], repeat: int, cpu_max_log: int, cpu_repeat: int, no_key: bool, r1cs_path: str | None,
                   wtns_path: str | None, out_base: str | None) -> None:
    """The key's point checks (curve + subgroup; GPU, and CPU up to --cpu-max-log) at 2^logs, and with --r1cs/--wtns
    the witness check (read the r1cs, check the witness): CSV + JSON + manifest."""
    if (r1cs_path is None) != (wtns_path is None):
        raise click.UsageError("--r1cs and --wtns go together: the witness check needs both")
    on_gpu = _cuda.gpu_available()
    if r1cs_path is None and not logs:
        raise CliError("--logs none and no --r1cs/--wtns: nothing to time")
    if r1cs_path is None and not on_gpu and all(lg > cpu_max_log for lg in logs):
        raise CliError(f"--logs {','.join(map(str, logs))}: no GPU here, and every size is above --cpu-max-log {cpu_max_log}: nothing to time")
    check_run_base(out_base)
    try:
        rows = run_benchmark(logs, repeat, gpu=on_gpu, cpu_max_log=cpu_max_log, cpu_repeat=cpu_repeat, key=not no_key,
                             r1cs=r1cs_path, wtns=wtns_path)  # fmt: skip
    except (ValueError, OSError) as exc:  # a bad r1cs or wtns (FormatError), a witness of another length
        raise CliError(str(exc)) from None
    try:
        run_dir = new_run_dir("bench-keycheck", base=Path(out_base) if out_base else None)
    except OSError as exc:  # a folder that passed the early check but takes no new folder (e.g. /proc as root)
        raise CliError(f"--out {out_base or 'data/'}: cannot create the run folder there ({exc.strerror or exc})") from None
    df = pd.DataFrame(rows)
    df.to_csv(run_dir / "keycheck.csv", index=False)
    write_json_new(run_dir / "keycheck.json", rows)
    write_json_new(run_dir / "manifest.json", build_manifest(
        benchmark="keycheck", logs=list(logs), repeat=repeat, cpu_max_log=cpu_max_log, cpu_repeat=cpu_repeat,
        witness={k: f"{Path(v).parent.name}/{Path(v).name}" for k, v in (("r1cs", r1cs_path), ("wtns", wtns_path)) if v} or None,
        key_rows=not no_key, paths=sorted(set(df["path"])) if len(df) else [], block=subgroup.BLOCK, chunk=subgroup.CHUNK,
        points=f"{DISTINCT} distinct subgroup points tiled; key rows: 2^L points in each of A, B1, C, H, B2",
        method="gpu: one thread per point, range + curve + endomorphism test (G1 sigma(P) = -[z^2]P, G2 psi(P) = [z]P); "
               f"cpu: numba on-curve kernel + batched random subset sums ({keycheck.ROUNDS} rounds), each sum tested exactly",
        timing="gpu point rows: CUDA events around check_points (device-resident, and from host memory with the pageable H2D), "
               "one warm-up; key and cpu rows (witness rows included): perf_counter of the call, one warm-up; medians"))  # fmt: skip
    if len(df):
        click.echo(df.pivot_table(index=["log_n", "group"], columns=["path", "phase"], values="median_ms").to_string(float_format=lambda v: f"{v:10.1f}"))
    click.echo(f"(median ms) written to {run_dir}")


bench_command = keycheck_bench
"""``zkgpu bench keycheck`` (registered by :mod:`zkgpu.app.cli`)."""
