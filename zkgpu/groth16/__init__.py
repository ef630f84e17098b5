"""Real Groth16 proofs: snarkjs/circom BLS12-381 keys and witnesses proven on zkgpu's kernels.

- :mod:`~zkgpu.groth16.formats` -- ``.zkey`` / ``.wtns`` readers (:func:`read_zkey`, :func:`read_wtns`).
- :mod:`~zkgpu.groth16.prover` -- :func:`prove` (GPU NTT/MSM or CPU references), the H convention.
- :mod:`~zkgpu.groth16.proof` -- snarkjs JSON output and an independent py_ecc pairing check.
- :mod:`~zkgpu.groth16.circuits` -- circom2/snarkjs from ``node_modules``: compile, set up, witness,
  verify (tests, the large circuit, the benchmark).
- :mod:`~zkgpu.groth16.cli` -- ``zkgpu prove`` (its benchmark, ``zkgpu bench prove``, is :mod:`zkgpu.bench.prove`).
"""

from .formats import FormatError, Witness, ZKey, read_wtns, read_zkey
from .proof import proof_json, public_json, read_proof, verify_py_ecc, write_proof
from .prover import ProveResult, evaluate_qap, h_scalars, prove

__all__ = [
    "FormatError",
    "Witness",
    "ZKey",
    "read_wtns",
    "read_zkey",
    "ProveResult",
    "evaluate_qap",
    "h_scalars",
    "prove",
    "proof_json",
    "public_json",
    "read_proof",
    "verify_py_ecc",
    "write_proof",
]
