"""``zkgpu prove``: one proof from a snarkjs key and witness, and ``zkgpu circuit``: a circom circuit,
its key and witness (app layer). The benchmark against ``snarkjs groth16 prove``, ``zkgpu bench
prove``, is :mod:`zkgpu.app.bench.prove`."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

from zkgpu.core import cuda as _cuda
from zkgpu.core.errors import CliError, check_new_outputs
from zkgpu.groth16.circuits import ToolError, build
from zkgpu.groth16.formats import read_wtns, read_zkey
from zkgpu.groth16.proof import proof_json, public_json, verify_py_ecc, write_proof
from zkgpu.groth16.prover import prove

__all__ = ["prove_command", "circuit_command"]


@click.command("prove")
@click.option("--zkey", "zkey_path", required=True, type=click.Path(dir_okay=False), help="snarkjs Groth16 proving key (.zkey, bls12381)")
@click.option("--wtns", "wtns_path", required=True, type=click.Path(dir_okay=False), help="circom witness (.wtns)")
@click.option("--proof", "proof_path", required=True, type=click.Path(dir_okay=False), help="output: proof.json (snarkjs format)")
@click.option("--public", "public_path", required=True, type=click.Path(dir_okay=False), help="output: public.json")
@click.option("--device", type=click.Choice(["gpu", "cpu"]), default="gpu", show_default=True, help="gpu: zkgpu's NTT/MSM kernels; cpu: the references")
@click.option("--seed", type=int, default=None, help="fix the random r, s (tests only: the proof is then not zero-knowledge)")
@click.option("--timings", "timings_path", type=click.Path(dir_okay=False), default=None, help="also write the per-phase ms as JSON")
@click.option("--verify/--no-verify", default=False, show_default=True, help="verify the proof (py_ecc pairing, seconds) before writing; exit 2 if rejected")
def prove_command(zkey_path, wtns_path, proof_path, public_path, device, seed, timings_path, verify) -> None:
    """Prove a circom circuit's witness with a snarkjs BLS12-381 zkey; snarkjs groth16 verify accepts the output.

    The witness is not checked against the circuit (the zkey holds no C matrix: c = a·b per
    constraint), as in snarkjs groth16 prove: a wrong or corrupted .wtns gives a proof that
    verification rejects. --verify checks the proof with py_ecc's pairing (seconds) and exits 2
    if it is rejected. Outputs are checked before proving: none may exist or name another's file.
    """
    check_new_outputs({"--proof": proof_path, "--public": public_path, "--timings": timings_path}, "zkgpu prove")
    if device == "gpu" and not _cuda.gpu_available():
        raise CliError("--device gpu: no CUDA GPU available (CuPy missing or no device); use --device cpu")
    t0 = time.perf_counter()
    try:
        zkey = read_zkey(zkey_path)
        wtns = read_wtns(wtns_path)
    except (ValueError, OSError) as exc:
        raise CliError(str(exc)) from None
    t_read = 1e3 * (time.perf_counter() - t0)
    try:
        res = prove(zkey, wtns, device=device, seed=seed)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    except RuntimeError as exc:
        raise click.ClickException(str(exc)) from None
    except ImportError as exc:  # py-arkworks-bls12381 (G2 MSM, r/s terms) is in the test extra
        raise click.ClickException(f"zkgpu prove needs {exc.name}: pip install 'zkgpu[test]'") from None
    if verify and not verify_py_ecc(zkey, proof_json(res), [int(v) for v in public_json(res)]):
        raise CliError(f"the proof of {wtns_path} does not verify against {zkey_path}: the witness does not satisfy the circuit (nothing written)")
    timings = {"read": t_read, **res.timings_ms}
    try:
        write_proof(res, proof_path, public_path)
        if timings_path:
            Path(timings_path).write_text(json.dumps(timings, indent=1) + "\n", encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot write the outputs: {exc.strerror or exc} ({exc.filename}; choose another path)") from None
    click.echo(
        f"proof written to {proof_path}, {len(res.public)} public signals to {public_path} "
        f"(n_vars {zkey.n_vars}, domain 2^{zkey.log_n}, device {device}, {timings['read'] + timings['total']:.0f} ms)"
    )


@click.command("circuit")
@click.argument("name")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--fast", is_flag=True, help="zkgpu.groth16.setup's insecure known-toxic-waste set-up (minutes) instead of snarkjs's (hours at 2^19)")
def circuit_command(name: str, folder: str, fast: bool) -> None:
    """Build a circuit (NAME: mulchain-N or poseidon-N) with circom2 and snarkjs into FOLDER/NAME: its
    r1cs, key and witness (cached by name); prints the files' sizes and each step's seconds as JSON.
    node comes from $ZKGPU_NODE (and the node_modules of its prefix) or the repository's node_modules (make node)."""
    try:
        files = build(name, folder, setup="fast" if fast else "snarkjs")
    except (ValueError, ToolError) as exc:
        raise CliError(str(exc)) from None
    sizes = {p.name: p.stat().st_size for p in (files.r1cs, files.zkey, files.wtns)}
    click.echo(json.dumps({"root": str(files.root), "step_s": files.step_s, "bytes": sizes}, indent=1))
