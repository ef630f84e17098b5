"""``zkgpu prove``: proofs from a snarkjs key and witnesses, ``zkgpu circuit``: a circom circuit, its key
and witness, and ``zkgpu setup --fast``: the insecure benchmark key of an r1cs (app layer). The benchmark
against ``snarkjs groth16 prove``, ``zkgpu bench prove``, is :mod:`zkgpu.app.bench.prove`."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

from zkgpu.app.settings import cache_root
from zkgpu.core import cuda as _cuda
from zkgpu.core.errors import CliError, check_new_outputs
from zkgpu.groth16 import keycache
from zkgpu.groth16.circuits import ToolError, build
from zkgpu.groth16.formats import FormatError, read_wtns, read_zkey
from zkgpu.groth16.proof import proof_json, public_json, verify_py_ecc, write_exclusive
from zkgpu.groth16.prover import Prover, start_warm_up
from zkgpu.groth16.setup import fast_setup, read_r1cs

__all__ = ["prove_command", "circuit_command", "setup_command"]


def _outputs(wtns_paths: tuple[str, ...], proof_path: str | None, public_path: str | None, out_dir: str | None) -> list[tuple[str, str]]:
    """(proof, public) paths per witness, from --proof/--public (one witness) or --out DIR (any number)."""
    if out_dir is not None:
        if proof_path or public_path:
            raise CliError("--out DIR names the outputs itself: leave out --proof and --public")
        if not out_dir.strip():
            raise CliError(f"--out {out_dir!r}: give a folder for the proofs")
        stems = [Path(w).name.removesuffix(".wtns") for w in wtns_paths]
        dup = next((s for s in stems if stems.count(s) > 1), None)
        if dup is not None:
            raise CliError(f"--wtns: two witnesses are named {dup}: their proofs in --out {out_dir} would collide (rename one)")
        return [(str(Path(out_dir) / f"{s}.proof.json"), str(Path(out_dir) / f"{s}.public.json")) for s in stems]
    if len(wtns_paths) != 1:
        raise CliError(f"{len(wtns_paths)} witnesses: give --out DIR (one proof and public file per witness there)")
    if not proof_path or not public_path:
        raise CliError("give --proof FILE and --public FILE (or --out DIR)")
    return [(proof_path, public_path)]


def _r1cs_for(zkey_path: str, r1cs_path: str | None, check: bool) -> Path | None:
    if not check:
        return None
    if r1cs_path is not None:
        return Path(r1cs_path)
    beside = Path(zkey_path).with_suffix(".r1cs")
    return beside if beside.is_file() else None


@click.command("prove")
@click.option("--zkey", "zkey_path", required=True, type=click.Path(dir_okay=False), help="snarkjs Groth16 proving key (.zkey, bls12381)")
@click.option("--wtns", "wtns_paths", required=True, multiple=True, type=click.Path(dir_okay=False), help="circom witness (.wtns); repeat for many proofs with one key read (then --out)")
@click.option("--proof", "proof_path", type=click.Path(dir_okay=False), default=None, help="output: proof.json (snarkjs format), one witness")
@click.option("--public", "public_path", type=click.Path(dir_okay=False), default=None, help="output: public.json, one witness")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None, help="output folder: <witness>.proof.json and <witness>.public.json per witness")
@click.option("--r1cs", "r1cs_path", type=click.Path(dir_okay=False), default=None, help="the circuit: each witness must satisfy it (default: KEY's name with .r1cs, if that file exists)")
@click.option("--check-witness/--no-check-witness", default=True, show_default=True, help="check each witness against the r1cs before proving")
@click.option("--check-key/--no-check-key", default=True, show_default=True, help="check every key point (curve, subgroup, degenerate key); --no-check-key only for a key you made yourself")
@click.option("--device", type=click.Choice(["gpu", "cpu"]), default="gpu", show_default=True, help="gpu: zkgpu's NTT/MSM kernels; cpu: the references")
@click.option("--seed", type=int, default=None, help="fix the random r, s (tests only: the proof is then not zero-knowledge)")
@click.option("--timings", "timings_path", type=click.Path(dir_okay=False), default=None, help="also write the per-phase ms as JSON (per witness, and proofs/s)")
@click.option("--verify/--no-verify", default=False, show_default=True, help="verify each proof (py_ecc pairing, seconds) before writing; exit 2 if rejected")
def prove_command(zkey_path, wtns_paths, proof_path, public_path, out_dir, r1cs_path, check_witness, check_key, device, seed, timings_path, verify) -> None:
    """Prove circom witnesses with a snarkjs BLS12-381 zkey; snarkjs groth16 verify accepts the output.

    Every input is checked at the door: the key's points (on the curve, in the prime-order subgroup,
    a non-degenerate key; once per key content: a passed check is kept in $XDG_CACHE_HOME/zkgpu/keys,
    default ~/.cache/zkgpu/keys, by the key's SHA-256 tree hash), and each witness against the circuit's r1cs
    (--r1cs, or the .r1cs beside the key): the first failing constraint is named. Without an r1cs
    a wrong witness gives a proof that verification rejects (the zkey holds no C matrix), as with
    snarkjs. All outputs are written or none, each created exclusively (never overwriting), after
    every proof is made.
    """
    outs = _outputs(wtns_paths, proof_path, public_path, out_dir)
    targets = {f"--proof {i}" if out_dir else "--proof": p for i, (p, _) in enumerate(outs)}
    targets.update({f"--public {i}" if out_dir else "--public": q for i, (_, q) in enumerate(outs)})
    check_new_outputs({**targets, "--timings": timings_path}, "zkgpu prove")
    if device == "gpu" and not _cuda.gpu_available():
        raise CliError("--device gpu: no CUDA GPU available (CuPy missing or no device); use --device cpu")
    try:
        keycache.configure(folder=cache_root() / "keys")  # the key checks' verdicts, per user ($XDG_CACHE_HOME)
    except ValueError as exc:  # a file where the folder goes: the cache only saves time, so prove without it
        keycache.configure(folder=None)
        click.echo(f"warning: {exc}: key-check verdicts are not kept", err=True)
    warm = start_warm_up() if device == "gpu" else None  # CUDA context and kernel modules while the key is read
    t0 = time.perf_counter()
    r1 = _r1cs_for(zkey_path, r1cs_path, check_witness)
    try:
        zkey = read_zkey(zkey_path, check=check_key)
        r1cs = read_r1cs(r1) if r1 is not None else None
        prover = Prover(zkey, device=device, r1cs=r1cs, resident=len(wtns_paths) > 1)  # one proof: its MSMs copy the points
    except (ValueError, OSError) as exc:
        if warm is not None:
            warm.join()  # no exit while the warm-up thread still drives the GPU
        raise CliError(str(exc)) from None
    if warm is not None:
        warm.join()
    t_key = 1e3 * (time.perf_counter() - t0)
    results: list = []
    per: list[dict] = []
    t_all = time.perf_counter()
    for w_path in wtns_paths:
        t1 = time.perf_counter()
        try:
            wtns = read_wtns(w_path)
            t_read = 1e3 * (time.perf_counter() - t1)
            res = prover.prove(wtns, seed=seed)
        except (ValueError, OSError) as exc:
            raise CliError(str(exc)) from None
        except RuntimeError as exc:
            raise click.ClickException(str(exc)) from None
        except ImportError as exc:  # py-arkworks-bls12381 (G2 MSM, r/s terms) is in the test extra
            raise click.ClickException(f"zkgpu prove needs {exc.name}: pip install 'zkgpu[test]'") from None
        if verify and not verify_py_ecc(zkey, proof_json(res), [int(v) for v in public_json(res)]):
            why = (f"the witness satisfies {r1}, so the key is not this circuit's" if r1cs is not None
                   else "the witness does not satisfy the key's circuit, or the key is another circuit's (give --r1cs to tell which)")  # fmt: skip
            raise CliError(f"the proof of {w_path} does not verify against {zkey_path}: {why} (nothing written)")
        results.append(res)
        per.append({"wtns": str(w_path), "read_wtns": t_read, **res.timings_ms})
    seconds = time.perf_counter() - t_all
    timings: dict = {"read": t_key + t_read if len(per) == 1 else t_key, **{k: v for k, v in per[0].items() if k != "wtns"},
                     "key_check": zkey.checked}
    if len(per) > 1:
        timings = {"read_key": t_key, "key_check": zkey.checked, "proofs": len(per), "proofs_per_s": len(per) / seconds,
                   "per_witness": per}
    extra = {timings_path: json.dumps(timings, indent=1) + "\n"} if timings_path else {}
    try:
        _write_all(results, outs, extra)
    except FileExistsError as exc:
        raise CliError(f"{exc.filename} was created meanwhile: zkgpu prove never overwrites a file (nothing written)") from None
    except OSError as exc:
        raise CliError(f"cannot write the outputs: {exc.strerror or exc} ({exc.filename}; nothing written)") from None
    if len(results) == 1:
        click.echo(
            f"proof written to {outs[0][0]}, {len(results[0].public)} public signals to {outs[0][1]} "
            f"(n_vars {zkey.n_vars}, domain 2^{zkey.log_n}, device {device}, {timings['read'] + timings['total']:.0f} ms)"
        )
    else:
        click.echo(
            f"{len(results)} proofs written to {out_dir} (key read {t_key:.0f} ms once, then {len(results) / seconds:.2f} proofs/s; "
            f"n_vars {zkey.n_vars}, domain 2^{zkey.log_n}, device {device})"
        )


def _write_all(results: list, outs: list[tuple[str, str]], extra: dict) -> None:
    files: dict[str | Path, str] = {}
    for res, (p, q) in zip(results, outs, strict=True):
        files.update({p: json.dumps(proof_json(res), indent=1) + "\n", q: json.dumps(public_json(res), indent=1) + "\n"})
    write_exclusive({**files, **extra})


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


@click.command("setup")
@click.argument("r1cs", type=click.Path(dir_okay=False))
@click.argument("out", type=click.Path(dir_okay=False))
@click.option("--fast", is_flag=True, required=True, help="required: the known-toxic-waste key (INSECURE, benchmarks only)")
@click.option("--seed", type=int, default=0, show_default=True, help="the toxic waste's seed")
def setup_command(r1cs: str, out: str, fast: bool, seed: int) -> None:
    """Write an INSECURE Groth16 key OUT (.zkey, snarkjs format) for a circom BLS12-381 R1CS: its toxic
    waste is derivable by anyone, so proofs made with it prove nothing (benchmarks only; a real key comes
    from snarkjs's powers of tau and groth16 setup). OUT must not exist."""
    check_new_outputs({"OUT": out}, "zkgpu setup")
    try:
        info = fast_setup(r1cs, out, seed=seed)
    except FileExistsError:
        raise CliError(f"OUT {out} was created meanwhile: zkgpu setup never overwrites a file") from None
    except FormatError as exc:
        raise CliError(str(exc)) from None
    except OSError as exc:
        raise CliError(f"cannot write {out}: {exc.strerror or exc}") from None
    click.echo(json.dumps({"zkey": out, "insecure": True, **info}))
