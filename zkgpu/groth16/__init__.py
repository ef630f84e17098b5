"""Real Groth16 proofs: snarkjs/circom BLS12-381 keys and witnesses proven on zkgpu's kernels.

The package imports nothing (importing one module must not load the others, ARCHITECTURE.md): import the
module you need.

- :mod:`~zkgpu.groth16.formats` -- ``.zkey`` / ``.wtns`` readers (:func:`read_zkey`, :func:`read_wtns`).
- :mod:`~zkgpu.groth16.keycheck` -- the key's points checked (curve, subgroup, degenerate keys), a witness against an r1cs.
- :mod:`~zkgpu.groth16.prover` -- :func:`prove` (GPU NTT/MSM or CPU references), the H convention, :class:`Prover` (one key, many witnesses).
- :mod:`~zkgpu.groth16.proof` -- snarkjs JSON output and an independent py_ecc pairing check.
- :mod:`~zkgpu.groth16.circuits` -- circom2/snarkjs from ``node_modules``: compile, set up, witness,
  verify (tests, the large circuit, the benchmark).
- :mod:`~zkgpu.story.prove_results` -- reading recorded prove benchmarks (the analysis side).
- :mod:`~zkgpu.app.prove_cmd` -- ``zkgpu prove`` (its benchmark, ``zkgpu bench prove``, is :mod:`zkgpu.app.bench.prove`).
"""
