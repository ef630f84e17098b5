"""Proofs as snarkjs JSON (``pi_a``/``pi_c`` ``[x, y, "1"]``, ``pi_b`` Fq2 pairs, decimal strings; ``public.json``
the public signals), and :func:`verify_py_ecc`, an independent pairing check with py_ecc (Groth 2016, as snarkjs
``groth16 verify``).
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from zkgpu.arith.field import FQ, FR
from zkgpu.core import optional
from zkgpu.groth16.formats import FormatError, ZKey
from zkgpu.groth16.prover import ProveResult

__all__ = ["proof_json", "public_json", "write_exclusive", "write_proof", "read_proof", "check_vkey", "verify_py_ecc"]


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


def write_exclusive(files: dict[str | Path, str] | dict[str | Path, bytes] | dict[str | Path, str | bytes]) -> None:
    """Write every file or none, each created exclusively and atomically (temporary file, fsync, ``os.link``, so an
    existing name is never overwritten; linked names are removed on failure). str as UTF-8, bytes as they are; mode
    0666 less the umask.

    Raises:
        FileExistsError: a target exists (nothing written). OSError: a folder cannot be created or written, a full
            disk (nothing written).
    """
    temps: list[str] = []
    linked: list[Path] = []
    umask = os.umask(0o022)
    os.umask(umask)
    try:
        for target, text in files.items():
            target = Path(target)
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
            temps.append(tmp)
            os.fchmod(fd, 0o666 & ~umask)
            with os.fdopen(fd, "wb") as f:
                f.write(text.encode("utf-8") if isinstance(text, str) else text)
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


MAX_VKEY_BYTES = 64 << 20
"""The largest verification key read (about 200 bytes per public signal: 64 MiB is some 300k of them)."""


def check_vkey(path: str | Path) -> Path:
    """A snarkjs verification key (``vkey.json``) checked at the door, before any work that ends with
    ``snarkjs groth16 verify`` reading it: a regular file (a FIFO, a device or a folder is refused before any read,
    so nothing blocks), at most :data:`MAX_VKEY_BYTES`, a JSON object with ``protocol`` ``groth16`` and ``curve``
    ``bls12381``. Returns the path.

    Raises:
        FormatError (a ValueError): one line naming the file and what is wrong.
    """
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise FormatError(f"--vkey {path}: cannot read ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise FormatError(f"--vkey {path}: not a regular file (a FIFO, a device or a folder): give the vkey.json of "
                              "snarkjs zkey export verificationkey")
        if st.st_size > MAX_VKEY_BYTES:
            raise FormatError(f"--vkey {path}: {st.st_size} bytes, more than a verification key's {MAX_VKEY_BYTES}")
        raw = f.read(MAX_VKEY_BYTES + 1)
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:  # RecursionError: nested deeper than json's stack
        raise FormatError(f"--vkey {path}: not JSON ({' '.join(str(exc).split())[:120]})") from None
    if not isinstance(doc, dict) or doc.get("protocol") != "groth16" or doc.get("curve") != "bls12381":
        got = (doc.get("protocol"), doc.get("curve")) if isinstance(doc, dict) else type(doc).__name__
        raise FormatError(f"--vkey {path}: not a Groth16 BLS12-381 verification key (protocol, curve: {got})")
    return path


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
    """Groth16 verification of ``proof`` with ``public`` signals against ``zkey``'s verifying part, with py_ecc's
    pairing: True when ``e(A, B) = e(alpha1, beta2) e(vk_x, gamma2) e(C, delta2)``; False for a wrong proof, a public
    count unlike the key's, a value >= r or a point off the curve.
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
