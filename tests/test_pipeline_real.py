"""The pipeline proving a real circuit (issue 14): every partition of ``run_pipeline`` with
``PipelineConfig.for_circuit(SnarkjsCircuit(...))`` is a Groth16 proof, equal to ``prove()``'s for
the same r, s, accepted by py_ecc's pairing and by ``snarkjs groth16 verify``, with the
investigation's phases in its event table. Uses the committed mulchain-8 fixture (no node needed
except for the snarkjs checks)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from nodetools import need_node

from zkgpu.app.pipeline_cmd import main as pipeline_main
from zkgpu.app.record import record
from zkgpu.arith.field import FR, fr_from_ints
from zkgpu.core import cuda as _cuda
from zkgpu.groth16.circuits import snarkjs_verify
from zkgpu.groth16.formats import read_wtns, read_zkey
from zkgpu.groth16.proof import proof_json, read_proof, verify_py_ecc
from zkgpu.groth16.prover import odd_coset_scalars, prove
from zkgpu.groth16.setup import mulchain_r1cs, write_wtns
from zkgpu.groth16.workload import SnarkjsCircuit, check_proofs, load_circuit, write_proofs
from zkgpu.pipeline import PipelineConfig, run_pipeline
from zkgpu.story.prove_results import real_pipeline_recording, real_pipeline_table

FIXTURE = Path(__file__).resolve().parent.parent / "zkgpu" / "groth16" / "fixtures"
ZKEY, WTNS, VKEY = FIXTURE / "circuit.zkey", FIXTURE / "circuit.wtns", FIXTURE / "vkey.json"
#: the phases every notebook reads, present in a real-proof run too
PHASES = {"synthesize", "prep_msm", "b_g2_msm", "ntt_msm_h", "h2d", "ntt", "h_msm", "barrier_wait", "batch_add", "tail_msm", "finalize"}
SEED = 5


@pytest.fixture(scope="module")
def second_wtns(tmp_path_factory):
    """A second witness of mulchain-8 (x = 4, y = 7: other public signals), from the Python r1cs."""
    path = tmp_path_factory.mktemp("wtns") / "x4y7.wtns"
    write_wtns(path, mulchain_r1cs(8, x=4, y=7)[1])
    return path


def _same_as_prove(rc: SnarkjsCircuit, pr, device: str = "cpu") -> bool:
    ref = prove(rc.zkey, rc.witness(pr.partition), device=device, seed=SEED * 1_000_003 + pr.partition)
    return all(np.array_equal(getattr(ref, k), getattr(pr.proof, k)) for k in "abc") and ref.public == pr.proof.public


@pytest.mark.parametrize(("transfer", "scope", "prep"), [("pageable", "coarse", "cpu"), ("pinned_pool", "narrow", "cpu"), ("pinned_pool", "none", "cpu_parallel")])
def test_cpu_pipeline_partitions_are_prove_proofs(transfer, scope, prep, second_wtns):
    """Each partition proves its witness (two witnesses with different public signals, cycled) and
    its proof is prove()'s for the same r, s; py_ecc accepts it; the event table has the phases."""
    rc = load_circuit(ZKEY, [WTNS, second_wtns], seed=SEED)
    res = run_pipeline(PipelineConfig.for_circuit(rc, partitions=4, device="cpu", transfer=transfer, lock_scope=scope, prep=prep, gw=2))
    assert res.ok, res.errors
    publics = []
    for pr in res.partitions:
        assert _same_as_prove(rc, pr)
        assert verify_py_ecc(rc.zkey, proof_json(pr.proof), pr.proof.public)
        publics.append(pr.proof.public)
    assert publics[0] == publics[2] != publics[1] == publics[3]
    assert PHASES <= set(res.events["phase"])
    assert (res.events.loc[res.events.phase == "synthesize", "partition"].nunique()) == 4


def test_random_r_s_when_unseeded():
    rc = load_circuit(ZKEY, [WTNS])
    res = run_pipeline(PipelineConfig.for_circuit(rc, partitions=2, device="cpu"))
    a, b = (p.proof for p in res.partitions)
    assert not np.array_equal(a.a, b.a)  # r, s from the CSPRNG per partition
    assert all(verify_py_ecc(rc.zkey, proof_json(p), p.public) for p in (a, b))


def test_a_bad_witness_gives_a_rejected_proof(tmp_path):
    """A witness that breaks the constraints is proven (as snarkjs would) and the check rejects it."""
    w = read_wtns(WTNS)
    w.values[5, 0] ^= np.uint64(1)  # a private signal changed: the constraints break
    rc = SnarkjsCircuit(read_zkey(ZKEY), [w], seed=SEED)
    res = run_pipeline(PipelineConfig.for_circuit(rc, partitions=1, device="cpu"))
    ok, tool = check_proofs(rc, res.partitions, None, None)
    assert tool == "py_ecc" and ok == {0: False}


def test_config_and_circuit_errors(tmp_path):
    rc = load_circuit(ZKEY, [WTNS])
    with pytest.raises(ValueError, match="must be the circuit's"):
        PipelineConfig(n=32, num_inputs=rc.num_inputs, real=rc)
    with pytest.raises(ValueError, match="at least one witness"):
        SnarkjsCircuit(rc.zkey, [])
    write_wtns(tmp_path / "short.wtns", [1, 2, 3])
    with pytest.raises(ValueError, match="expects 11"):
        load_circuit(ZKEY, [tmp_path / "short.wtns"])
    assert rc.describe()["domain_size"] == 16 and rc.describe()["n_public"] == 2


def test_write_proofs_never_overwrites(tmp_path):
    rc = load_circuit(ZKEY, [WTNS], seed=SEED)
    res = run_pipeline(PipelineConfig.for_circuit(rc, partitions=1, device="cpu"))
    written = write_proofs(res.partitions, tmp_path)
    assert [w[0] for w in written] == [0]
    proof, public = read_proof(written[0][1], written[0][2])
    assert verify_py_ecc(rc.zkey, proof, public)
    with pytest.raises(FileExistsError):
        write_proofs(res.partitions, tmp_path)


def test_snarkjs_verifies_every_partition(tmp_path, second_wtns):
    need_node()
    rc = load_circuit(ZKEY, [WTNS, second_wtns])
    res = run_pipeline(PipelineConfig.for_circuit(rc, partitions=3, device="cpu", transfer="pinned_pool"))
    written = write_proofs(res.partitions, tmp_path)
    assert len(written) == 3 and all(snarkjs_verify(VKEY, public, proof) for _, proof, public in written)
    ok, tool = check_proofs(rc, res.partitions, tmp_path / "again", VKEY)
    assert tool == "snarkjs" and ok == {0: True, 1: True, 2: True}


def test_pipeline_command_writes_verified_proofs(tmp_path):
    res = CliRunner().invoke(pipeline_main, ["--device", "cpu", "--zkey", str(ZKEY), "--wtns", str(WTNS), "--partitions", "2",
                                             "--transfer", "pinned_pool", "--out", str(tmp_path), "--seed", "3"])
    assert res.exit_code == 0, res.output
    assert "2/2 proofs verified by" in res.output
    proofs = sorted(tmp_path.glob("*/proofs/partition-*.proof.json"))
    assert len(proofs) == 2 and json.loads(proofs[0].read_text())["curve"] == "bls12381"
    for args, msg in ((["--zkey", str(ZKEY)], "needs at least one --wtns"), (["--wtns", str(WTNS)], "give its key with --zkey"),
                      (["--zkey", str(ZKEY), "--wtns", str(WTNS), "--log-n", "5"], "--log-n does not apply")):
        bad = CliRunner().invoke(pipeline_main, ["--device", "cpu", *args])
        assert bad.exit_code == 2 and msg in bad.output, bad.output


def test_record_real_circuit(tmp_path):
    """zkgpu record with a circuit: the manifest names it; each scenario's proofs are in proofs/ and verified."""
    rc = load_circuit(ZKEY, [WTNS])
    run_dir = record(tmp_path, device="cpu", scenarios=["baseline", "pinned_narrow"], partitions=2, circuit=rc, vkey=None)
    m = json.loads((run_dir / "manifest.json").read_text())
    assert m["circuit"]["domain_size"] == 16 and m["circuit"]["constraints"] == rc.constraints and m["n"] == 16
    for name in ("baseline", "pinned_narrow"):
        e = m["scenarios"][name]
        assert "error" not in e, e
        assert e["proofs"]["written"] == e["proofs"]["verified"] == 2
        assert len(list((run_dir / e["proofs"]["folder"]).glob("*.proof.json"))) == 2
        ev = pd.read_parquet(run_dir / e["events"])
        assert PHASES <= set(ev["phase"])
    with pytest.raises(ValueError, match="leave n out"):
        record(tmp_path, device="cpu", n=32, scenarios=["baseline"], circuit=rc)
    # notebook 10 reads such recordings from data/real/ (GPU ones only by default)
    (tmp_path / "real").mkdir()
    run_dir.rename(tmp_path / "real" / run_dir.name)
    assert real_pipeline_recording(tmp_path) is None
    rec = real_pipeline_recording(tmp_path, gpu_only=False)
    table = real_pipeline_table(rec)
    assert list(table.index) == ["baseline", "pinned_narrow"]
    assert (table["proofs_verified"] == 2).all() and (table["compute_utilization"].between(0, 1)).all()


@pytest.mark.gpu
@pytest.mark.parametrize(("transfer", "scope", "prep"), [("pageable", "coarse", "cpu"), ("pinned_pool", "narrow", "gpu"), ("registered", "none", "cpu")])
def test_gpu_pipeline_proofs_verify(transfer, scope, prep, second_wtns):
    """The GPU backend (the key's points on the device, the H scalars by NTT kernels) gives the same
    proofs as the CPU prover for the same r, s, and py_ecc accepts them."""
    rc = load_circuit(ZKEY, [WTNS, second_wtns], seed=SEED)
    res = run_pipeline(PipelineConfig.for_circuit(rc, partitions=4, device="gpu", transfer=transfer, lock_scope=scope, prep=prep, gw=2))
    assert res.ok, res.errors
    for pr in res.partitions:
        assert _same_as_prove(rc, pr)
        assert verify_py_ecc(rc.zkey, proof_json(pr.proof), pr.proof.public)
    assert PHASES <= set(res.events["phase"])


@pytest.mark.gpu
def test_gpu_pipeline_snarkjs(tmp_path):
    """On the GPU host: the GPU pipeline's proofs pass snarkjs groth16 verify."""
    need_node()
    rc = load_circuit(ZKEY, [WTNS])
    res = run_pipeline(PipelineConfig.for_circuit(rc, partitions=2, device="gpu", transfer="pinned_pool"))
    ok, tool = check_proofs(rc, res.partitions, tmp_path, VKEY)
    assert tool == "snarkjs" and all(ok.values()) and len(ok) == 2


@pytest.mark.gpu
def test_odd_coset_scalars_gpu_canonical_matches_cpu():
    """The pipeline's path into odd_coset_scalars (canonical h on the device, on a worker stream)
    gives the CPU path's scalars."""
    cp = _cuda.cupy()
    rng = np.random.default_rng(3)
    h = fr_from_ints([int(v) % FR.modulus for v in rng.integers(0, 2**62, size=64)])
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        got = odd_coset_scalars(cp.asarray(h))
    s.synchronize()
    assert np.array_equal(got.get(), odd_coset_scalars(h))
