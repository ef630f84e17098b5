"""Proofs as snarkjs JSON, and an independent pairing check with py_ecc.

``proof.json`` (snarkjs ``groth16 prove``): ``pi_a`` and ``pi_c`` are ``[x, y, "1"]``, ``pi_b`` is
``[[x.c0, x.c1], [y.c0, y.c1], ["1", "0"]]`` (projective coordinates with Z = 1, decimal strings),
plus ``"protocol": "groth16"`` and ``"curve": "bls12381"``. ``public.json`` is the list of public
signals as decimal strings.

:func:`verify_py_ecc` checks ``e(A, B) = e(alpha1, beta2) * e(vk_x, gamma2) * e(C, delta2)`` with
``vk_x = IC_0 + sum_i x_i IC_i`` (Groth 2016, as snarkjs ``groth16 verify``) using py_ecc's
BLS12-381 pairing, code independent of both snarkjs and arkworks (pure Python: a few seconds).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from zkgpu.arith.field import FQ, FR
from zkgpu.core import optional
from zkgpu.groth16.formats import ZKey
from zkgpu.groth16.prover import ProveResult

__all__ = ["proof_json", "public_json", "write_exclusive", "write_proof", "read_proof", "verify_py_ecc"]


def _ints(arr: np.ndarray) -> list[int]:
    raw = np.ascontiguousarray(arr, dtype=np.uint64).astype("<u8").tobytes()
    return [int.from_bytes(raw[i : i + 48], "little") for i in range(0, len(raw), 48)]


def _g1_json(arr: np.ndarray) -> list[str]:
    x, y = _ints(arr)
    return ["0", "1", "0"] if x == y == 0 else [str(x), str(y), "1"]


def proof_json(result: ProveResult) -> dict[str, Any]:
    """The snarkjs ``proof.json`` object of a proof."""
    x0, x1, y0, y1 = _ints(result.b)
    return {
        "pi_a": _g1_json(result.a),
        "pi_b": [[str(x0), str(x1)], [str(y0), str(y1)], ["1", "0"]],
        "pi_c": _g1_json(result.c),
        "protocol": "groth16",
        "curve": "bls12381",
    }


def public_json(result: ProveResult) -> list[str]:
    """The snarkjs ``public.json`` list (decimal strings)."""
    return [str(v) for v in result.public]


def write_exclusive(files: dict[str | Path, str]) -> None:
    """Write every file or none, each created exclusively and atomically.

    Each text goes to a temporary file in its target's folder (missing folders are created), is
    flushed to disk, then hard-linked to its name (``os.link`` fails if the name exists: a file
    created meanwhile, e.g. by a concurrent run, is never overwritten) and the temporary name
    removed. If any step fails, the names linked so far are removed again.

    Raises:
        FileExistsError: a target exists (nothing written). OSError: a folder that cannot be
            created or written, a full disk (nothing written).
    """
    temps: list[str] = []
    linked: list[Path] = []
    try:
        for target, text in files.items():
            target = Path(target)
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
            temps.append(tmp)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
        for (target, _), tmp in zip(files.items(), temps, strict=True):
            os.link(tmp, target)
            linked.append(Path(target))
    except BaseException:
        for p in linked:
            p.unlink(missing_ok=True)
        raise
    finally:
        for tmp in temps:
            Path(tmp).unlink(missing_ok=True)


def write_proof(result: ProveResult, proof_path: str | Path, public_path: str | Path, extra: dict[str | Path, str] | None = None) -> None:
    """Write ``proof.json`` and ``public.json`` as snarkjs does (and ``extra`` files), all or none,
    never overwriting (:func:`write_exclusive`)."""
    files: dict[str | Path, str] = {
        proof_path: json.dumps(proof_json(result), indent=1) + "\n",
        public_path: json.dumps(public_json(result), indent=1) + "\n",
    }
    write_exclusive({**files, **(extra or {})})


def read_proof(proof_path: str | Path, public_path: str | Path) -> tuple[dict[str, Any], list[int]]:
    """Read a snarkjs proof and its public signals.

    Raises:
        ValueError: unreadable JSON, not a bls12381 Groth16 proof, or a non-integer public signal.
    """
    try:
        proof = json.loads(Path(proof_path).read_text(encoding="utf-8"))
        public = [int(v) for v in json.loads(Path(public_path).read_text(encoding="utf-8"))]
    except (OSError, ValueError, TypeError) as exc:
        raise ValueError(f"cannot read the proof {proof_path} / {public_path}: {exc}") from None
    if proof.get("protocol") != "groth16" or proof.get("curve") != "bls12381":
        raise ValueError(f"{proof_path}: not a bls12381 Groth16 proof ({proof.get('protocol')}, {proof.get('curve')})")
    return proof, public


def _py_ecc_g1(x: int, y: int) -> Any:
    e = optional.py_ecc()
    return e.Z1 if x == y == 0 else (e.FQ(x), e.FQ(y), e.FQ.one())


def _py_ecc_g2(x0: int, x1: int, y0: int, y1: int) -> Any:
    e = optional.py_ecc()
    return e.Z2 if x0 == x1 == y0 == y1 == 0 else (e.FQ2([x0, x1]), e.FQ2([y0, y1]), e.FQ2.one())


def verify_py_ecc(zkey: ZKey, proof: dict[str, Any], public: list[int]) -> bool:
    """Groth16 verification with py_ecc's BLS12-381 pairing (module docstring).

    Args:
        zkey: the key whose verifying part (alpha1, beta2, gamma2, delta2, IC) is used.
        proof: a snarkjs proof object (:func:`proof_json` or :func:`read_proof`).
        public: the public signals.

    Returns:
        True when the pairing equation holds; False for a wrong proof, a public input count that
        differs from the key's, a value >= r, or a point off the curve.
    """
    e = optional.py_ecc()
    if len(public) != zkey.n_public or any(not 0 <= v < FR.modulus for v in public):
        return False
    try:
        pa = _py_ecc_g1(int(proof["pi_a"][0]), int(proof["pi_a"][1]))
        pc = _py_ecc_g1(int(proof["pi_c"][0]), int(proof["pi_c"][1]))
        (x0, x1), (y0, y1) = proof["pi_b"][0], proof["pi_b"][1]
        pb = _py_ecc_g2(int(x0), int(x1), int(y0), int(y1))
    except (KeyError, IndexError, TypeError, ValueError):
        return False
    q = FQ.modulus
    coords = [int(v) for v in (*proof["pi_a"][:2], *proof["pi_c"][:2], x0, x1, y0, y1)]
    if any(not 0 <= v < q for v in coords) or not (e.is_on_curve(pa, e.b) and e.is_on_curve(pc, e.b) and e.is_on_curve(pb, e.b2)):
        return False
    ic = [_py_ecc_g1(*_ints(zkey.ic[i : i + 1])) for i in range(zkey.ic.shape[0])]
    vk_x = ic[0]
    for v, pt in zip(public, ic[1:], strict=True):  # len(public) == n_public, checked above
        vk_x = e.add(vk_x, e.multiply(pt, v))
    alpha = _py_ecc_g1(*_ints(zkey.alpha1))
    beta2, gamma2, delta2 = (_py_ecc_g2(*_ints(g)) for g in (zkey.beta2, zkey.gamma2, zkey.delta2))
    acc = e.FQ12.one()
    for g2, g1 in ((pb, e.neg(pa)), (beta2, alpha), (gamma2, vk_x), (delta2, pc)):
        acc = acc * e.pairing(g2, g1, final_exponentiate=False)
    return e.final_exponentiate(acc) == e.FQ12.one()
