"""A snarkjs key and circom witnesses as the pipeline's real circuit (:class:`SnarkjsCircuit`): partition p of
:func:`zkgpu.pipeline.run_pipeline` proves ``witnesses[p % len(witnesses)]`` with
:mod:`zkgpu.groth16.prover`'s functions (synthesize: ``evaluate_qap``; ntt_msm_h: the H computation and H MSM;
prep_msm/batch_add/tail_msm: the L, A, B1 MSMs; b_g2_msm: ``msm_g2_cpu``; finalize: ``assemble_proof``).
r and s come from a CSPRNG, or with ``seed`` from ``seed * 1_000_003 + partition`` (tests only).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from zkgpu.core import cuda as _cuda
from zkgpu.groth16.circuits import ToolError, snarkjs_verify
from zkgpu.groth16.formats import Witness, ZKey, read_wtns, read_zkey
from zkgpu.groth16.matrices import KeyMatrices, key_matrices
from zkgpu.groth16.proof import check_vkey, proof_json, verify_py_ecc, write_proof
from zkgpu.groth16.prover import (
    ProveResult,
    assemble_proof,
    check_witness,
    evaluate_qap,
    msm_g2_cpu,
    odd_coset_scalars,
    prepare_device,
    to_zkgpu_order,
)

__all__ = ["SnarkjsCircuit", "load_circuit", "write_proofs", "verify_proofs", "default_vkey", "resolve_vkey", "check_proofs"]


def _nonzero_rows(points: np.ndarray) -> np.ndarray:
    """``(m,)`` bool: the rows of ``(m, k)`` uint64 points that are not the identity (all zeros)."""
    return np.any(points != 0, axis=1)


class SnarkjsCircuit:
    """A snarkjs BLS12-381 ``zkey`` and one or more ``witnesses``, proven by the pipeline
    (:class:`zkgpu.pipeline.real.RealCircuit`); ``seed`` fixes r and s (tests only), ``name`` defaults to the key's
    folder name.

    Raises:
        ValueError: no witness, or a witness with another number of signals than the key's.
    """

    def __init__(self, zkey: ZKey, witnesses: list[Witness], *, seed: int | None = None, name: str | None = None) -> None:
        if not witnesses:
            raise ValueError("SnarkjsCircuit needs at least one witness")
        for w in witnesses:
            check_witness(zkey, w)
        self.zkey, self.witnesses, self.seed = zkey, list(witnesses), seed
        self.name = name or zkey.path.parent.name or zkey.path.stem
        self.n = zkey.domain_size
        self.num_inputs = zkey.n_public + 1
        self.aux_size = zkey.n_vars - self.num_inputs
        self.constraints = int(zkey.coef_constraint.max()) + 1 if zkey.coef_constraint.size else 0
        k = self.num_inputs
        self.a_aux_density = _nonzero_rows(zkey.a[k:])
        self.b_inp_density = _nonzero_rows(zkey.b1[:k])
        self.b_aux_density = _nonzero_rows(zkey.b1[k:])
        self.device = "cpu"
        self.matrices: KeyMatrices | None = None  # built by setup()

    def describe(self) -> dict[str, Any]:
        """The circuit for a manifest: name, key and witness paths, sizes, densities."""
        return {
            "name": self.name, "zkey": str(self.zkey.path), "wtns": [str(w.path) for w in self.witnesses],
            "constraints": self.constraints, "domain_size": self.n, "log_n": self.n.bit_length() - 1,
            "n_vars": self.zkey.n_vars, "n_public": self.zkey.n_public, "aux_size": self.aux_size,
            "a_aux_density": round(float(self.a_aux_density.mean()), 4) if self.aux_size else 0.0,
            "b_aux_density": round(float(self.b_aux_density.mean()), 4) if self.aux_size else 0.0,
            "seeded": self.seed is not None,
        }  # fmt: skip

    def as_dict(self) -> dict[str, Any]:
        """:meth:`describe` (what a manifest writes for a config that holds this circuit)."""
        return self.describe()

    def __repr__(self) -> str:
        return f"SnarkjsCircuit({self.name!r}, n={self.n}, n_vars={self.zkey.n_vars}, witnesses={len(self.witnesses)})"

    def setup(self, device: str) -> None:
        """Remember the device and build the key's A and B matrices (:func:`~zkgpu.groth16.matrices.key_matrices`,
        host CSR: the partitions' synthesis reads them); on the GPU build the H conversion's tables
        (:func:`~zkgpu.groth16.prover.prepare_device`) before any timed partition."""
        self.device = device
        self.matrices = key_matrices(self.zkey)
        if device == "gpu":
            prepare_device(self.n.bit_length() - 1)

    def bases(self) -> dict[str, np.ndarray]:
        """``{"h": H, "l": C, "a": A, "b_g1": B1}`` host points, A and B1 restricted to their densities."""
        k, z = self.num_inputs, self.zkey
        a_sel = np.concatenate([np.arange(k), k + np.flatnonzero(self.a_aux_density)])
        b_sel = np.concatenate([np.flatnonzero(self.b_inp_density), k + np.flatnonzero(self.b_aux_density)])
        return {"h": z.h, "l": z.c, "a": np.ascontiguousarray(z.a[a_sel]), "b_g1": np.ascontiguousarray(z.b1[b_sel])}

    def witness(self, partition: int) -> Witness:
        """The witness that ``partition`` proves."""
        return self.witnesses[partition % len(self.witnesses)]

    def inputs(self, partition: int) -> np.ndarray:
        """``(num_inputs, 4)`` uint64: 1 and the public signals of the partition's witness."""
        return self.witness(partition).values[: self.num_inputs]

    def synthesize_into(self, partition: int, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        """:func:`~zkgpu.groth16.prover.evaluate_qap` of the partition's witness, written in zkgpu's
        order into a, b, c (``(n, 4)`` uint64); returns the witness values ``(n_vars, 4)``."""
        w = self.witness(partition)
        for x, out in zip(evaluate_qap(self.zkey, w, matrices=self.matrices), (a, b, c), strict=True):
            to_zkgpu_order(x, out)
        return w.values

    def h_scalars(self, h: Any, stream: Any) -> Any:
        """:func:`~zkgpu.groth16.prover.odd_coset_scalars` of h (a CuPy array: on ``stream``)."""
        if stream is None or not _cuda.is_device_array(h):
            return odd_coset_scalars(h)
        with stream:
            return odd_coset_scalars(h)

    def b_g2(self, witness: np.ndarray) -> np.ndarray:
        """:func:`~zkgpu.groth16.prover.msm_g2_cpu` of the witness over the key's B2 points."""
        return msm_g2_cpu(self.zkey.b2, witness)

    def finish(self, partition: int, witness: np.ndarray, msms: dict[str, np.ndarray], b2: np.ndarray) -> ProveResult:
        """:func:`~zkgpu.groth16.prover.assemble_proof` (r, s seeded per partition when ``seed`` is set)."""
        seed = None if self.seed is None else self.seed * 1_000_003 + partition
        return assemble_proof(self.zkey, witness, msms, b2, seed=seed, device=self.device)


def load_circuit(zkey_path: str | Path, wtns_paths: list[str | Path] | tuple[str | Path, ...], *, seed: int | None = None,
                 vkey: str | Path | None = None) -> SnarkjsCircuit:
    """Read a key and its witnesses into a :class:`SnarkjsCircuit`; check the verification key its proofs will be
    checked with (:func:`resolve_vkey`: ``vkey``, else ``vkey.json`` beside the key), so a bad one is refused before
    any run.

    Raises:
        FormatError / OSError: an unreadable or invalid file (:mod:`zkgpu.groth16.formats`), or vkey.
        ValueError: no witness, or one that does not match the key.
    """
    zkey = read_zkey(zkey_path)
    resolve_vkey(zkey_path, vkey)
    return SnarkjsCircuit(zkey, [read_wtns(p) for p in wtns_paths], seed=seed)


def write_proofs(partitions: Iterable[Any], folder: str | Path) -> list[tuple[int, Path, Path]]:
    """Write each proven partition's proof as ``folder/partition-<p>.proof.json`` and ``.public.json`` (partitions
    without a proof skipped; existing files never replaced). Returns ``[(partition, proof path, public path)]``.

    Raises:
        FileExistsError: a proof file exists already.
    """
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for pr in partitions:
        if getattr(pr, "proof", None) is None:
            continue
        proof, public = out / f"partition-{pr.partition}.proof.json", out / f"partition-{pr.partition}.public.json"
        for f in (proof, public):
            if f.exists():
                raise FileExistsError(f"{f} exists; proofs are written to a fresh folder")
        write_proof(pr.proof, proof, public)
        written.append((pr.partition, proof, public))
    return written


def verify_proofs(written: Iterable[tuple[int, Path, Path]], vkey: str | Path) -> dict[int, bool]:
    """``snarkjs groth16 verify`` of each written proof (:func:`write_proofs`): ``{partition: accepted}``.

    Raises:
        ToolError: node, snarkjs missing (:func:`zkgpu.groth16.circuits.tools`).
    """
    return {p: snarkjs_verify(vkey, public, proof) for p, proof, public in written}


def default_vkey(zkey_path: str | Path) -> Path | None:
    """``vkey.json`` beside the key (where ``zkgpu circuit`` puts it), or None."""
    p = Path(zkey_path).with_name("vkey.json")
    return p if p.is_file() else None


def resolve_vkey(zkey_path: str | Path, vkey: str | Path | None) -> Path | None:
    """The verification key the proofs of ``zkey_path`` will be checked with, checked at the door
    (:func:`zkgpu.groth16.proof.check_vkey`): ``vkey`` when given, else :func:`default_vkey`, else None (py_ecc).

    Raises:
        FormatError: a vkey that is not a regular file, not JSON or not a Groth16 BLS12-381 key.
    """
    found = Path(vkey) if vkey is not None else default_vkey(zkey_path)
    return check_vkey(found) if found is not None else None


def check_proofs(real: SnarkjsCircuit, partitions: Iterable[Any], folder: str | Path | None, vkey: str | Path | None) -> tuple[dict[int, bool], str]:
    """Write the partitions' proofs to ``folder`` (when given) and verify each, with snarkjs when written with a vkey
    and node, else py_ecc. Returns ``({partition: accepted}, tool)``; partitions without a proof are left out.
    """
    proven = [p for p in partitions if getattr(p, "proof", None) is not None]
    vkey = resolve_vkey(real.zkey.path, vkey)
    if folder is not None:
        written = write_proofs(proven, folder)
        if vkey is not None:
            try:
                return verify_proofs(written, vkey), "snarkjs"
            except ToolError:
                pass  # no node here: py_ecc below
    return {p.partition: verify_py_ecc(real.zkey, proof_json(p.proof), p.proof.public) for p in proven}, "py_ecc"
