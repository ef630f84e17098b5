"""``zkgpu bench prove``: ``zkgpu prove`` against ``snarkjs groth16 prove`` on one circuit, both
timed as whole commands (process start to exit, wall-clock s), with zkgpu's per-phase times (ms);
every proof is checked with ``snarkjs groth16 verify``; ``--resident N`` adds N proofs with the key read once
(rows of mode ``resident``, a ``resident`` summary in the manifest). Writes ``prove.csv``, ``phases.csv`` and
``manifest.json`` into a fresh ``<gpu>-<date>-bench-prove`` run folder (read back by
``zkgpu.story.prove_results``)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click
import pandas as pd

from zkgpu.core import cuda as _cuda
from zkgpu.core.errors import CliError
from zkgpu.core.manifest import build_manifest, check_run_base, new_run_dir, write_json_new
from zkgpu.groth16.circuits import ToolError, build, snarkjs_prove, snarkjs_verify, tools
from zkgpu.groth16.formats import read_wtns, read_zkey
from zkgpu.groth16.proof import check_vkey, proof_json, public_json, write_exclusive
from zkgpu.groth16.prover import Prover

__all__ = ["bench_command", "run_cold", "run_prove_bench", "run_resident"]


def _whole_command(cmd: list[str], env: dict[str, str] | None = None) -> float:
    t = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    wall = time.perf_counter() - t
    if res.returncode != 0:
        last = (res.stderr or res.stdout).strip().splitlines()
        raise click.ClickException(f"{' '.join(cmd[:4])}: {last[-1] if last else res.returncode}")
    return wall


def run_prove_bench(zkey: Path, wtns: Path, vkey: Path, *, device: str, repeat: int, workdir: Path) -> tuple[list[dict], list[dict]]:
    """Time ``snarkjs groth16 prove`` and ``zkgpu prove`` on the same key and witness, ``repeat``
    times each (alternating), as whole commands (process start to exit, seconds), and verify every
    proof with ``snarkjs groth16 verify``.

    Returns:
        (runs, phases): runs rows ``tool, mode, repeat, wall_s, verified`` (mode ``command``); phases rows
        ``repeat, phase, ms, mode`` from zkgpu's ``--timings`` (its numeric entries).
    Raises:
        click.ClickException: a command failed or a proof was rejected.
    """
    runs, phases = [], []
    for i in range(repeat):
        pj, pub = workdir / f"snarkjs_proof_{i}.json", workdir / f"snarkjs_public_{i}.json"
        wall = snarkjs_prove(zkey, wtns, pj, pub)
        runs.append(dict(tool="snarkjs", mode="command", repeat=i, wall_s=wall, verified=snarkjs_verify(vkey, pub, pj)))
        pj, pub, tj = workdir / f"zkgpu_proof_{i}.json", workdir / f"zkgpu_public_{i}.json", workdir / f"zkgpu_timings_{i}.json"
        cmd = [sys.executable, "-m", "zkgpu.app.cli", "prove", "--zkey", str(zkey), "--wtns", str(wtns), "--proof", str(pj),
               "--public", str(pub), "--device", device, "--timings", str(tj),
               "--no-check-key", "--no-check-witness"]  # fmt: skip  # as snarkjs prove: no input checks; snarkjs verify checks every proof
        wall = _whole_command(cmd)
        runs.append(dict(tool=f"zkgpu-{device}", mode="command", repeat=i, wall_s=wall, verified=snarkjs_verify(vkey, pub, pj)))
        phases += [dict(repeat=i, phase=k, ms=v, mode="command") for k, v in json.loads(tj.read_text()).items()
                   if isinstance(v, (int, float))]  # key_check is a word, not a phase
    bad = [r for r in runs if not r["verified"]]
    if bad:
        raise click.ClickException(f"snarkjs groth16 verify rejected the proof of {bad[0]['tool']} (repeat {bad[0]['repeat']})")
    return runs, phases


def run_cold(zkey: Path, wtns: Path, vkey: Path, *, workdir: Path) -> tuple[list[dict], list[dict]]:
    """A machine that has never run zkgpu, on the GPU: in fresh, empty kernel caches (``CUPY_CACHE_DIR``,
    ``NUMBA_CACHE_DIR`` and ``XDG_CACHE_HOME`` in ``workdir``), time ``zkgpu build`` (mode ``cold_build``), then the
    first whole ``zkgpu prove`` command after it (mode ``cold_first``), whose proof snarkjs verifies.

    Returns:
        (runs, phases) rows as :func:`run_prove_bench`'s, repeat 0.
    Raises:
        click.ClickException: a command failed or the proof was rejected.
    """
    caches = {k: str(workdir / f"cold-{k.lower()}") for k in ("CUPY_CACHE_DIR", "NUMBA_CACHE_DIR", "XDG_CACHE_HOME")}
    env = {**os.environ, **caches}
    build_wall = _whole_command([sys.executable, "-m", "zkgpu.app.cli", "build"], env=env)
    pj, pub, tj = workdir / "cold_proof.json", workdir / "cold_public.json", workdir / "cold_timings.json"
    wall = _whole_command([sys.executable, "-m", "zkgpu.app.cli", "prove", "--zkey", str(zkey), "--wtns", str(wtns), "--proof", str(pj),
                           "--public", str(pub), "--device", "gpu", "--timings", str(tj), "--no-check-key", "--no-check-witness"], env=env)
    ok = snarkjs_verify(vkey, pub, pj)
    if not ok:
        raise click.ClickException("snarkjs groth16 verify rejected the cold proof")
    runs = [dict(tool="zkgpu-build", mode="cold_build", repeat=0, wall_s=build_wall, verified=True),
            dict(tool="zkgpu-gpu", mode="cold_first", repeat=0, wall_s=wall, verified=ok)]
    phases = [dict(repeat=0, phase=k, ms=v, mode="cold_first") for k, v in json.loads(tj.read_text()).items() if isinstance(v, (int, float))]
    return runs, phases


def run_resident(zkey: Path, wtns: Path, vkey: Path, *, device: str, proofs: int, workdir: Path) -> tuple[list[dict], list[dict], dict]:
    """Many proofs, one key: read the key once into a :class:`zkgpu.groth16.prover.Prover` (no point checks,
    as the commands: snarkjs verifies every proof), prove the witness ``proofs`` times in this process, each
    with fresh r and s (:mod:`secrets`), one warm-up proof first (not counted); then verify every proof with
    ``snarkjs groth16 verify``.

    Returns:
        (runs, phases, summary): runs rows ``tool, mode="resident", repeat, wall_s, verified`` (``wall_s``:
        one :meth:`~zkgpu.groth16.prover.Prover.prove` call, perf_counter, the GPU synchronised inside);
        phases rows ``repeat, phase, ms, mode``; summary ``proofs, median_ms, proofs_per_s`` (proofs over
        the loop's wall time), ``read_key_ms`` (the one key read, parsed straight from the file).
    Raises:
        click.ClickException: a proof was rejected.
    """
    t = time.perf_counter()
    prover = Prover(read_zkey(zkey, check=False), device=device)
    read_ms = 1e3 * (time.perf_counter() - t)
    w = read_wtns(wtns)
    prover.prove(w)  # warm-up: kernels loaded, device tables built
    results, walls = [], []
    t_loop = time.perf_counter()
    for _ in range(proofs):
        t = time.perf_counter()
        results.append(prover.prove(w))
        walls.append(time.perf_counter() - t)
    loop_s = time.perf_counter() - t_loop
    runs, phases = [], []
    for i, (res, wall) in enumerate(zip(results, walls, strict=True)):
        pj, pub = workdir / f"resident_proof_{i}.json", workdir / f"resident_public_{i}.json"
        files: dict[str | Path, str] = {pj: json.dumps(proof_json(res)) + "\n", pub: json.dumps(public_json(res)) + "\n"}
        write_exclusive(files)
        runs.append(dict(tool=f"zkgpu-{device}", mode="resident", repeat=i, wall_s=wall, verified=snarkjs_verify(vkey, pub, pj)))
        phases += [dict(repeat=i, phase=k, ms=v, mode="resident") for k, v in res.timings_ms.items()]
    bad = [r for r in runs if not r["verified"]]
    if bad:
        raise click.ClickException(f"snarkjs groth16 verify rejected resident proof {bad[0]['repeat']}")
    summary = dict(proofs=proofs, median_ms=1e3 * statistics.median(walls), proofs_per_s=proofs / loop_s, read_key_ms=read_ms)
    return runs, phases, summary


@click.command("prove")
@click.option("--circuit", default=None, help="a built-in circuit to build (cached) and prove: mulchain-N or poseidon-N")
@click.option("--setup", type=click.Choice(["snarkjs", "fast"]), default="snarkjs", show_default=True,
              help="with --circuit: snarkjs's set-up, or zkgpu.groth16.setup's insecure fast one (large circuits)")
@click.option("--zkey", "zkey_path", default=None, type=click.Path(exists=True, dir_okay=False), help="or: an existing zkey ...")
@click.option("--wtns", "wtns_path", default=None, type=click.Path(exists=True, dir_okay=False), help="... its witness ...")
@click.option("--vkey", "vkey_path", default=None, type=click.Path(exists=True, dir_okay=False), help="... and verification key")
@click.option("--device", type=click.Choice(["gpu", "cpu"]), default="gpu", show_default=True)
@click.option("--repeat", default=3, show_default=True, type=click.IntRange(1, 100), help="proofs per tool")
@click.option("--workdir", default=None, type=click.Path(file_okay=False), help="circuit cache (default: a temporary folder)")
@click.option("--resident", default=0, show_default=True, type=click.IntRange(0, 1000),
              help="also N proofs in this process with the key read once (a Prover): per-proof ms and proofs/s")
@click.option("--cold", is_flag=True, help="--device gpu: first, zkgpu build and the first proof command in fresh kernel caches (a machine that never ran zkgpu)")
@click.option("--out", "out_base", default=None, help="base folder for the run folder (default data/)")
def bench_command(circuit, setup, zkey_path, wtns_path, vkey_path, device, repeat, resident, cold, workdir, out_base) -> None:
    """zkgpu prove against snarkjs groth16 prove on one circuit: whole-command times and zkgpu's phases."""
    if device == "gpu" and not _cuda.gpu_available():
        raise CliError("--device gpu: no CUDA GPU available; use --device cpu")
    if cold and device != "gpu":
        raise click.UsageError("--cold measures the GPU's kernel caches: use it with --device gpu")
    if bool(circuit) == bool(zkey_path and wtns_path and vkey_path):
        raise click.UsageError("give either --circuit NAME or all of --zkey, --wtns and --vkey")
    check_run_base(out_base)
    tmp = tempfile.TemporaryDirectory(prefix="zkgpu-bench-prove-")
    work = Path(workdir) if workdir else Path(tmp.name)
    try:
        build_s = {}
        if circuit:
            files = build(circuit, work, setup=setup)
            zkey_path, wtns_path, vkey_path, build_s = files.zkey, files.wtns, files.vkey, files.step_s
        zk = read_zkey(zkey_path)
        check_vkey(vkey_path)  # a FIFO never blocks snarkjs, a wrong file is named now
        run_work = Path(tempfile.mkdtemp(prefix="proofs-", dir=work))
        cold_runs, cold_phases = run_cold(Path(zkey_path), Path(wtns_path), Path(vkey_path), workdir=run_work) if cold else ([], [])
        runs, phases = run_prove_bench(Path(zkey_path), Path(wtns_path), Path(vkey_path), device=device, repeat=repeat, workdir=run_work)
        runs, phases = cold_runs + runs, cold_phases + phases
        res_summary = None
        if resident:
            r_runs, r_phases, res_summary = run_resident(Path(zkey_path), Path(wtns_path), Path(vkey_path), device=device,
                                                         proofs=resident, workdir=run_work)
            runs, phases = runs + r_runs, phases + r_phases
        node_version = subprocess.run([tools().node, "--version"], capture_output=True, text=True).stdout.strip()
    except ValueError as exc:  # an unknown circuit, an unreadable key
        raise CliError(str(exc)) from None
    except ToolError as exc:
        raise click.ClickException(str(exc)) from None
    run_dir = new_run_dir("bench-prove", base=Path(out_base) if out_base else None)
    pd.DataFrame(runs).to_csv(run_dir / "prove.csv", index=False)
    pd.DataFrame(phases).to_csv(run_dir / "phases.csv", index=False)
    snarkjs_version = json.loads((tools().modules / "snarkjs" / "package.json").read_text())["version"]
    write_json_new(
        run_dir / "manifest.json",
        build_manifest(
            benchmark="prove", circuit=circuit or str(zkey_path), setup=setup if circuit else None, device=device, repeat=repeat,
            n_vars=zk.n_vars, n_public=zk.n_public, domain_size=zk.domain_size, coefficients=len(zk.coef_signal),
            build_s=build_s, node=node_version, snarkjs=snarkjs_version, resident=res_summary,
            timing="whole commands (process start to exit, wall-clock s), alternating snarkjs / zkgpu; zkgpu phases "
                   "from zkgpu prove --timings (wall-clock ms, GPU synchronised after each phase); mode=resident rows: "
                   "one Prover.prove call each in one process, the key read once, after one warm-up proof (wall-clock s); "
                   "resident.proofs_per_s = proofs / the loop's wall time",
        ),
    )  # fmt: skip
    df = pd.DataFrame(runs)
    for tool, g in df[df["mode"] == "command"].groupby("tool"):
        click.echo(f"{tool:>12}: median {statistics.median(g.wall_s):8.2f} s over {len(g)} proofs, all verified by snarkjs")
    if res_summary is not None:
        click.echo(f"{'resident':>12}: median {res_summary['median_ms']:8.1f} ms per proof, {res_summary['proofs_per_s']:.2f} proofs/s "
                   f"over {resident} proofs (key read once, {res_summary['read_key_ms']:.0f} ms), all verified by snarkjs")
    pf = pd.DataFrame(phases)
    ph = pf[pf["mode"] == "command"].groupby("phase", sort=False)["ms"].median()
    click.echo(ph.to_string(float_format=lambda v: f"{v:10.1f}"))
    click.echo(f"(median ms per phase) written to {run_dir}")
    tmp.cleanup()
