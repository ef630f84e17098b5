"""Many proofs, one key: zkgpu.groth16.prover.Prover proves repeatedly with the key read once (fresh r, s each
time), on the CPU, and on the GPU with the key's points resident on the device (the committed mulchain-8 key)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from zkgpu.groth16.formats import read_wtns, read_zkey
from zkgpu.groth16.proof import proof_json, public_json, verify_py_ecc
from zkgpu.groth16.prover import Prover, prove

FIXTURE = Path(__file__).resolve().parent.parent / "zkgpu" / "groth16" / "fixtures"


def test_cpu_prover_proves_again_and_again():
    zk, w = read_zkey(FIXTURE / "circuit.zkey"), read_wtns(FIXTURE / "circuit.wtns")
    prover = Prover(zk, device="cpu")
    first, second = prover.prove(w), prover.prove(w)
    assert not np.array_equal(first.a, second.a)  # fresh r, s
    for res in (first, second):
        assert verify_py_ecc(zk, proof_json(res), [int(v) for v in public_json(res)])
    seeded = prover.prove(w, seed=4)
    ref = prove(zk, w, device="cpu", seed=4)
    assert np.array_equal(seeded.a, ref.a) and np.array_equal(seeded.b, ref.b) and np.array_equal(seeded.c, ref.c)
    assert "witness_check" in seeded.timings_ms


@pytest.mark.gpu
@pytest.mark.parametrize("resident", [True, False])
def test_gpu_prover_with_resident_points_matches_cpu(resident):
    zk, w = read_zkey(FIXTURE / "circuit.zkey"), read_wtns(FIXTURE / "circuit.wtns")
    prover = Prover(zk, device="gpu", resident=resident)
    assert isinstance(prover.zkey.a, np.ndarray)  # the caller's key is untouched
    ref = prove(zk, w, device="cpu", seed=11)
    for _ in range(2):
        got = prover.prove(w, seed=11)
        assert np.array_equal(got.a, ref.a) and np.array_equal(got.b, ref.b) and np.array_equal(got.c, ref.c)


def test_warm_up_proves_the_fixture_on_a_thread_and_drops_its_errors(monkeypatch):
    """start_warm_up: one GPU proof of the committed fixture on a daemon thread; an error there is not raised (the
    command's own proof meets it)."""
    from zkgpu.groth16 import prover

    seen = []

    def fake(zk, w, **kw):
        seen.append((zk.n_vars, len(w), kw))
        raise RuntimeError("no GPU")

    monkeypatch.setattr(prover, "prove", fake)
    t = prover.start_warm_up()
    t.join(30)
    assert not t.is_alive() and t.daemon
    assert len(seen) == 1 and seen[0][0] == seen[0][1] and seen[0][2] == {"device": "gpu", "seed": 1}
