"""Real Groth16 proofs: snarkjs/circom BLS12-381 circuits proven by zkgpu, verified by snarkjs and py_ecc.

The circuits are compiled and set up at test time (circom2/snarkjs from node_modules, `make node`)
into build/test-circuits (cached between runs, git-ignored). Without node the tests that need it
are skipped, unless ZKGPU_REQUIRE_NODE=1 (as `make test` sets) makes that a failure.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from nodetools import need_node

from zkgpu.app.cli import main
from zkgpu.arith.field import FR, fr_from_ints, fr_to_ints
from zkgpu.gpu.ntt.qap import compute_h_reference
from zkgpu.groth16.circuits import ToolError, _locked, build, circuit_source, snarkjs_verify, tools
from zkgpu.groth16.formats import FormatError, read_wtns, read_zkey
from zkgpu.groth16.proof import proof_json, read_proof, verify_py_ecc
from zkgpu.groth16.prover import (
    check_witness,
    evaluate_qap,
    h_scalars,
    prove,
    root_exponent,
    snarkjs_order,
    snarkjs_root,
)

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("ZKGPU_CIRCUIT_CACHE", ROOT / "build" / "test-circuits"))
FIXTURE = ROOT / "zkgpu" / "groth16" / "fixtures"  # mulchain-8, committed: proofs without node
P = FR.modulus


def test_tools_take_node_and_modules_from_keywords_and_configure(tmp_path, restore_settings):
    from zkgpu.app import settings
    from zkgpu.groth16 import circuits

    with pytest.raises(ToolError, match="node /nonexistent/node: not an executable"):
        tools(node="/nonexistent/node")
    settings.apply({"ZKGPU_NODE": "/nonexistent/node"})
    with pytest.raises(ToolError, match="/nonexistent/node"):
        tools()
    circuits.configure(node=None)
    if shutil.which("node"):
        with pytest.raises(ToolError, match=f"not found in {tmp_path}"):
            tools(node_modules=tmp_path)
    with pytest.raises(ValueError, match="node_modules must be a path"):
        circuits.configure(node_modules="")


@pytest.fixture(scope="session")
def mulchain():
    need_node()
    return build("mulchain-8", CACHE)


@pytest.fixture(scope="session")
def mulchain_bn128():
    """The same circuit for bn128 (snarkjs's default curve): compiled without --prime, bn128 ptau."""
    t = need_node()
    root = CACHE / "mulchain-8-bn128"
    zkey, wtns = root / "circuit.zkey", root / "circuit.wtns"
    CACHE.mkdir(parents=True, exist_ok=True)
    with _locked(CACHE / ".mulchain-8-bn128.lock"):  # xdist workers build it once
        _build_bn128(t, root, zkey, wtns)
    return zkey, wtns


def _build_bn128(t, root: Path, zkey: Path, wtns: Path) -> None:
    if not (zkey.exists() and wtns.exists()):
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        src, inp = circuit_source("mulchain-8")
        (root / "c.circom").write_text(src)
        (root / "in.json").write_text(json.dumps(inp))
        t.run([*t.circom2, str(root / "c.circom"), "--r1cs", "--wasm", "-o", str(root)])
        t.run([*t.snarkjs, "powersoftau", "new", "bn128", "4", str(root / "p0.ptau")])
        t.run([*t.snarkjs, "powersoftau", "prepare", "phase2", str(root / "p0.ptau"), str(root / "p.ptau")])
        t.run([*t.snarkjs, "groth16", "setup", str(root / "c.r1cs"), str(root / "p.ptau"), str(zkey)])
        t.run([*t.snarkjs, "wtns", "calculate", str(root / "c_js" / "c.wasm"), str(root / "in.json"), str(wtns)])


def test_concurrent_builds_share_one_powers_of_tau(tmp_path):
    """Three processes build two circuits of one ptau size into one folder at once (as xdist workers
    do): each waits for the other's lock, none races on the shared powers-of-tau files."""
    from concurrent.futures import ProcessPoolExecutor

    need_node()
    with ProcessPoolExecutor(3) as ex:
        built = list(ex.map(build, ("mulchain-8", "mulchain-9", "mulchain-8"), [tmp_path] * 3))
    assert all(f.zkey.exists() and f.wtns.exists() for f in built)
    assert sorted(p.name for p in tmp_path.glob("*.ptau")) == ["bls12381_4.ptau"]


# --------------------------------------------------------------------------- conventions (no node)


def test_snarkjs_roots_are_ours_to_an_odd_power():
    k = root_exponent()
    assert k % 2 == 1
    for L in (1, 4, 10, 19, 32):
        assert snarkjs_root(L) == pow(FR.root_of_unity(L), k % (1 << L), P)
        assert pow(snarkjs_root(L), 1 << L, P) == 1 and pow(snarkjs_root(L), 1 << (L - 1), P) == P - 1
    assert snarkjs_root(32) == pow(5, (P - 1) >> 32, P)  # ffjavascript: the smallest non-residue, 5
    perm = snarkjs_order(6)
    assert sorted(perm.tolist()) == list(range(64))
    w = FR.root_of_unity(6)
    assert all(pow(w, int(perm[j]), P) == pow(snarkjs_root(6), j, P) for j in range(64))


def _interpolate(vals, w):
    """Coefficients of the polynomial with values vals[j] at w^j (O(n^2) inverse DFT)."""
    n = len(vals)
    ninv, winv = pow(n, -1, P), pow(w, -1, P)
    return [ninv * sum(v * pow(winv, i * j, P) for j, v in enumerate(vals)) % P for i in range(n)]


def _evaluate(coeffs, x):
    acc = 0
    for c in reversed(coeffs):
        acc = (acc * x + c) % P
    return acc


@pytest.mark.parametrize("log_n", [1, 3, 5])
def test_h_scalars_both_conventions(log_n):
    """snarkjs's convention (A*B - C on the odd coset of the 2n-th roots, snarkjs's roots), computed
    directly from the interpolated polynomials, equals h_scalars (built from zkgpu.gpu.ntt.qap's coset-by-7
    quotient, cuzk's convention; see the next test for that one)."""
    rng = random.Random(log_n)
    n = 1 << log_n
    a = [rng.randrange(P) for _ in range(n)]
    b = [rng.randrange(P) for _ in range(n)]
    c = [x * y % P for x, y in zip(a, b, strict=True)]  # c = a*b on the domain, as snarkjs builds it
    ws = snarkjs_root(log_n)
    A, B, C = (_interpolate(v, ws) for v in (a, b, c))
    w2 = snarkjs_root(log_n + 1)
    odd = [pow(w2, 2 * i + 1, P) for i in range(n)]
    want = [(_evaluate(A, x) * _evaluate(B, x) - _evaluate(C, x)) % P for x in odd]
    got = fr_to_ints(h_scalars(*(fr_from_ints(v) for v in (a, b, c)), device="cpu"))
    assert got == want


def test_cuzk_h_times_z_is_ab_minus_c():
    """cuzk's convention: zkgpu.gpu.ntt.qap's h (coset by 7) on a divisible input is the exact quotient."""
    rng = random.Random(7)
    log_n, n = 4, 16
    a = [rng.randrange(P) for _ in range(n)]
    b = [rng.randrange(P) for _ in range(n)]
    c = [x * y % P for x, y in zip(a, b, strict=True)]
    perm = snarkjs_order(log_n)
    ours = []
    for v in (a, b, c):
        o = [0] * n
        for j, val in enumerate(v):
            o[perm[j]] = val
        ours.append(o)
    h = compute_h_reference(*ours)
    ws = snarkjs_root(log_n)
    A, B, C = (_interpolate(v, ws) for v in (a, b, c))
    for _ in range(3):
        x = rng.randrange(P)
        assert _evaluate(h, x) * (pow(x, n, P) - 1) % P == (_evaluate(A, x) * _evaluate(B, x) - _evaluate(C, x)) % P


@pytest.mark.gpu
def test_h_scalars_gpu_matches_cpu():
    rng = random.Random(3)
    n = 1 << 10
    a = [rng.randrange(P) for _ in range(n)]
    b = [rng.randrange(P) for _ in range(n)]
    c = [x * y % P for x, y in zip(a, b, strict=True)]
    arrs = [fr_from_ints(v) for v in (a, b, c)]
    assert np.array_equal(h_scalars(*arrs, device="gpu"), h_scalars(*arrs, device="cpu"))


# --------------------------------------------------------------------------- readers


def test_read_mulchain(mulchain):
    zk, w = read_zkey(mulchain.zkey), read_wtns(mulchain.wtns)
    assert (zk.n_vars, zk.n_public, zk.domain_size) == (11, 2, 16)  # x, y, out, t[8]; out and y public
    assert len(w) == zk.n_vars
    vals = fr_to_ints(w.values)
    assert vals[0] == 1 and vals[2] == 5  # the constant, then out, then y (public input)
    t = 3 * 5
    for _ in range(7):
        t = t * 3 + 5
    assert vals[1] == t
    # coefficients are small ints once the R^2 factor is removed (here 1 and -1)
    assert set(zk.coef_value) <= {1, P - 1}
    a, b, c = evaluate_qap(zk, w)
    assert fr_to_ints(c) == [x * y % P for x, y in zip(fr_to_ints(a), fr_to_ints(b), strict=True)]


def test_wrong_curve_is_named(mulchain_bn128):
    zkey, wtns = mulchain_bn128
    with pytest.raises(FormatError, match="curve bn128; zkgpu proves on bls12381 only"):
        read_zkey(zkey)
    with pytest.raises(FormatError, match="curve bn128"):
        read_wtns(wtns)


def test_truncated_and_corrupt_files(mulchain, tmp_path):
    raw = mulchain.zkey.read_bytes()
    cut = tmp_path / "cut.zkey"
    cut.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(FormatError, match="truncated"):
        read_zkey(cut)
    bad_magic = tmp_path / "magic.zkey"
    bad_magic.write_bytes(b"zkez" + raw[4:])
    with pytest.raises(FormatError, match="not a .zkey file"):
        read_zkey(bad_magic)
    # the last H point's x coordinate set to 2^384 - 1 (>= q)
    h_off = _section_offset(raw, 9)
    h_size = 96 * read_zkey(mulchain.zkey).domain_size
    corrupt = bytearray(raw)
    corrupt[h_off + h_size - 96 : h_off + h_size - 48] = b"\xff" * 48
    (tmp_path / "coord.zkey").write_bytes(bytes(corrupt))
    with pytest.raises(FormatError, match=r"H \(section 9\) coordinate .* is not below q"):
        read_zkey(tmp_path / "coord.zkey")
    wraw = mulchain.wtns.read_bytes()
    (tmp_path / "cut.wtns").write_bytes(wraw[:-5])
    with pytest.raises(FormatError, match="truncated"):
        read_wtns(tmp_path / "cut.wtns")
    with pytest.raises(FormatError, match="magic"):
        read_wtns(mulchain.zkey)


def _section_offset(raw: bytes, typ: int) -> int:
    (nsec,) = struct.unpack_from("<I", raw, 8)
    pos = 12
    for _ in range(nsec):
        t, size = struct.unpack_from("<IQ", raw, pos)
        if t == typ:
            return pos + 12
        pos += 12 + size
    raise AssertionError(f"no section {typ}")


def _tamper_wtns(src: Path, dst: Path, signal: int, value: int) -> None:
    raw = bytearray(src.read_bytes())
    off = _section_offset(bytes(raw), 2) + 32 * signal
    raw[off : off + 32] = value.to_bytes(32, "little")
    dst.write_bytes(bytes(raw))


# --------------------------------------------------------------------------- proofs


def _prove_cli(zkey, wtns, tmp_path, device="cpu", tag="p", seed=None, extra=()):
    proof, public = tmp_path / f"{tag}_proof.json", tmp_path / f"{tag}_public.json"
    args = ["prove", "--zkey", str(zkey), "--wtns", str(wtns), "--proof", str(proof), "--public", str(public), "--device", device, *extra]
    if seed is not None:
        args += ["--seed", str(seed)]
    res = CliRunner().invoke(main, args)
    return res, proof, public


def test_cpu_proof_verified_by_snarkjs_and_py_ecc(mulchain, tmp_path):
    res, proof, public = _prove_cli(mulchain.zkey, mulchain.wtns, tmp_path)
    assert res.exit_code == 0, res.output
    assert snarkjs_verify(mulchain.vkey, public, proof)
    zk = read_zkey(mulchain.zkey)
    pj, pub = read_proof(proof, public)
    assert verify_py_ecc(zk, pj, pub)
    assert pj["curve"] == "bls12381" and pj["pi_a"][2] == "1" and pj["pi_b"][2] == ["1", "0"]


def test_overlapped_g2_msm_gives_the_same_proof():
    zk, w = read_zkey(FIXTURE / "circuit.zkey"), read_wtns(FIXTURE / "circuit.wtns")
    on, off = prove(zk, w, device="cpu", seed=3), prove(zk, w, device="cpu", seed=3, overlap=False)
    assert np.array_equal(on.a, off.a) and np.array_equal(on.b, off.b) and np.array_equal(on.c, off.c)
    assert {"g2_wait", "msm_b2_g2", "msm_b2_g2.start"} <= set(on.timings_ms) and "g2_wait" not in off.timings_ms


def test_gpu_prover_g2_msm_is_the_cpu_one():
    """The GPU prover's G2 MSM (``msm(..., group="g2")``: msm.cu built for G2 on a GPU, its CPU reference
    without one) gives msm_g2_cpu's point in msm_g2_cpu's layout, on the key's B2 points with the witness,
    with scalars 0, 1 and r-1, and on one point."""
    from zkgpu.gpu.msm.pippenger import msm
    from zkgpu.groth16.prover import msm_g2_cpu

    zk, w = read_zkey(FIXTURE / "circuit.zkey"), read_wtns(FIXTURE / "circuit.wtns")
    edge = fr_from_ints([0, 1, P - 1] + [5] * (zk.b2.shape[0] - 3))
    for sc in (w.values, edge):
        assert np.array_equal(msm(zk.b2, sc, group="g2"), msm_g2_cpu(zk.b2, sc))
    assert np.array_equal(msm(zk.b2[-1:], w.values[-1:], group="g2"), msm_g2_cpu(zk.b2[-1:], w.values[-1:]))


def test_proofs_are_randomised_and_seed_fixes_them(mulchain, tmp_path):
    outs = []
    for tag, seed in (("r1", None), ("r2", None), ("s1", 5), ("s2", 5)):
        res, proof, public = _prove_cli(mulchain.zkey, mulchain.wtns, tmp_path, tag=tag, seed=seed)
        assert res.exit_code == 0, res.output
        outs.append(json.loads(proof.read_text()))
    assert outs[0] != outs[1]  # r, s from the CSPRNG
    assert outs[2] == outs[3]


def test_rejections(mulchain, tmp_path):
    """A tampered proof, a wrong public input and a witness that breaks the constraints are rejected
    by snarkjs and by the py_ecc check alike."""
    zk = read_zkey(mulchain.zkey)
    res, proof, public = _prove_cli(mulchain.zkey, mulchain.wtns, tmp_path, seed=1)
    assert res.exit_code == 0, res.output
    pj, pub = read_proof(proof, public)
    # tampered: pi_a replaced by pi_c (a valid curve point, the wrong one)
    bad = dict(pj, pi_a=pj["pi_c"])
    (tmp_path / "bad_proof.json").write_text(json.dumps(bad))
    assert not snarkjs_verify(mulchain.vkey, public, tmp_path / "bad_proof.json")
    assert not verify_py_ecc(zk, bad, pub)
    # wrong public input
    wrong = [str(pub[0]), str(pub[1] + 1)]
    (tmp_path / "wrong_public.json").write_text(json.dumps(wrong))
    assert not snarkjs_verify(mulchain.vkey, tmp_path / "wrong_public.json", proof)
    assert not verify_py_ecc(zk, pj, [pub[0], pub[1] + 1])
    # a false statement: the output signal changed in the witness (constraints no longer hold)
    _tamper_wtns(mulchain.wtns, tmp_path / "false.wtns", 1, 12345)
    res, fproof, fpublic = _prove_cli(mulchain.zkey, tmp_path / "false.wtns", tmp_path, tag="false", seed=1, extra=["--no-check-witness"])
    assert res.exit_code == 0, res.output
    assert json.loads(fpublic.read_text())[0] == "12345"
    assert not snarkjs_verify(mulchain.vkey, fpublic, fproof)
    assert not verify_py_ecc(zk, *read_proof(fproof, fpublic))


def test_cli_errors_are_one_line(mulchain, mulchain_bn128, tmp_path):
    other = build("mulchain-9", CACHE)  # a witness of another circuit
    cases = [
        (mulchain.zkey, other.wtns, "the witness has 12 signals but the key"),
        (mulchain_bn128[0], mulchain.wtns, "curve bn128"),
        (mulchain.wtns, mulchain.wtns, "not a .zkey file"),
        (tmp_path / "missing.zkey", mulchain.wtns, "cannot read"),
    ]
    for zkey, wtns, msg in cases:
        res, _, _ = _prove_cli(zkey, wtns, tmp_path, tag="err")
        assert res.exit_code == 2  # bad input (break1 item 12)
        lines = [ln for ln in res.output.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("Error: ") and msg in lines[0], res.output
    with pytest.raises(ValueError, match="another circuit"):
        check_witness(read_zkey(mulchain.zkey), read_wtns(other.wtns))


@pytest.mark.slow
def test_poseidon_proof(tmp_path):
    """A circomlib Poseidon(2) hash (517 constraints, domain 2^10) proven on the CPU, verified by snarkjs."""
    need_node()
    files = build("poseidon-1", CACHE)
    res, proof, public = _prove_cli(files.zkey, files.wtns, tmp_path)
    assert res.exit_code == 0, res.output
    assert snarkjs_verify(files.vkey, public, proof)


@pytest.mark.gpu
def test_gpu_proof_verified_by_snarkjs(mulchain, tmp_path):
    res, proof, public = _prove_cli(mulchain.zkey, mulchain.wtns, tmp_path, device="gpu")
    assert res.exit_code == 0, res.output
    assert snarkjs_verify(mulchain.vkey, public, proof)
    zk = read_zkey(mulchain.zkey)
    w = read_wtns(mulchain.wtns)
    g, c = prove(zk, w, device="gpu", seed=9), prove(zk, w, device="cpu", seed=9)
    assert np.array_equal(g.a, c.a) and np.array_equal(g.b, c.b) and np.array_equal(g.c, c.c)


@pytest.mark.gpu
def test_gpu_poseidon_matches_cpu(tmp_path):
    need_node()
    files = build("poseidon-1", CACHE)
    zk, w = read_zkey(files.zkey), read_wtns(files.wtns)
    g, c = prove(zk, w, device="gpu", seed=4), prove(zk, w, device="cpu", seed=4)
    assert np.array_equal(g.a, c.a) and np.array_equal(g.b, c.b) and np.array_equal(g.c, c.c)


# --------------------------------------------------------------------------- committed fixture (no node)


def test_fixture_cpu_proof_passes_py_ecc():
    zk, w = read_zkey(FIXTURE / "circuit.zkey"), read_wtns(FIXTURE / "circuit.wtns")
    res = prove(zk, w, device="cpu", seed=2)
    assert verify_py_ecc(zk, proof_json(res), res.public)
    assert res.public == fr_to_ints(w.values[1:3])


@pytest.mark.gpu
def test_fixture_gpu_proof_equals_cpu_proof():
    """The GPU path (zkgpu.gpu.ntt.qap + zkgpu.gpu.msm.pippenger kernels) gives the same proof as the CPU references for
    fixed r, s, and py_ecc accepts it; runs without node."""
    zk, w = read_zkey(FIXTURE / "circuit.zkey"), read_wtns(FIXTURE / "circuit.wtns")
    g, c = prove(zk, w, device="gpu", seed=11), prove(zk, w, device="cpu", seed=11)
    assert np.array_equal(g.a, c.a) and np.array_equal(g.b, c.b) and np.array_equal(g.c, c.c)
    assert verify_py_ecc(zk, proof_json(g), g.public)
    assert set(g.timings_ms) >= {"synthesis", "h_scalars", "msm_a", "msm_b1", "msm_l", "msm_h", "msm_b2_g2", "total"}


@pytest.mark.gpu
def test_fq_from_mont_gpu_matches_host(monkeypatch):
    """The reader's GPU conversion of Montgomery-form coordinates (msm.cu fq_from_mont) equals the
    host loop, and names the first coordinate >= q."""
    from zkgpu.arith.field import FQ
    from zkgpu.groth16 import formats

    rng = random.Random(5)
    n = formats._GPU_MIN + 3
    vals = [0, 1, FQ.modulus - 1] + [rng.randrange(FQ.modulus) for _ in range(n - 3)]
    raw = b"".join(v.to_bytes(48, "little") for v in vals)
    gpu = formats._fq_from_mont_le(raw, n, Path("k.zkey"), "H")
    want = np.frombuffer(b"".join((v * FQ.R_inv % FQ.modulus).to_bytes(48, "little") for v in vals), dtype="<u8").reshape(n, 6)
    assert np.array_equal(gpu, want)
    bad = bytearray(raw)
    bad[48 * 12345 : 48 * 12346] = b"\xff" * 48
    with pytest.raises(FormatError, match="H coordinate 12345 = 0xff"):
        formats._fq_from_mont_le(bytes(bad), n, Path("k.zkey"), "H")
    monkeypatch.setattr(formats, "_GPU_MIN", 10**9)  # the host loop on the same input
    assert np.array_equal(formats._fq_from_mont_le(raw, n, Path("k.zkey"), "H"), want)


def test_bench_prove_records_and_notebook_replays_it(mulchain, tmp_path):
    """zkgpu bench prove (CPU, tiny circuit) writes a run folder with a manifest; notebook 10's loader
    replays it and its key numbers come from it."""
    from zkgpu.app import live
    from zkgpu.story import prove_results as proofs

    res = CliRunner().invoke(main, ["bench", "prove", "--zkey", str(mulchain.zkey), "--wtns", str(mulchain.wtns), "--vkey",
                                    str(mulchain.vkey), "--device", "cpu", "--repeat", "1", "--resident", "2", "--out", str(tmp_path)])  # fmt: skip
    assert res.exit_code == 0, res.output
    (run,) = [p for p in tmp_path.iterdir() if p.name.endswith("-bench-prove")]
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["resident"]["proofs"] == 2 and manifest["resident"]["proofs_per_s"] > 0 and "resident" in res.output
    assert manifest["benchmark"] == "prove" and manifest["domain_size"] == 16 and manifest["device"] == "cpu"
    src = live.open_prove_source("replay", base=tmp_path)
    again = proofs.recorded_prove_source(tmp_path)
    assert again is not None and again.folder == src.folder and again.kind == src.kind and again.runs.equals(src.runs)
    assert src.kind == "recorded-cpu" and src.folder == run and "NOT GPU numbers" in src.banner()
    assert set(src.runs.tool) == {"snarkjs", "zkgpu-cpu"} and src.runs.verified.all() and len(src.runs) == 2
    assert len(src.resident) == 2 and src.resident.verified.all() and set(src.resident.tool) == {"zkgpu-cpu"}
    key = {k: v["value"] for k, v in proofs.prove_key_numbers(src).items()}
    assert key["resident_proof_ms"] == pytest.approx(1e3 * src.resident.wall_s.median())
    assert key["resident_proofs_per_s"] == pytest.approx(manifest["resident"]["proofs_per_s"])
    assert key["all_verified"] == "yes" and key["domain_size"] == 16
    assert "accepted by snarkjs" in proofs.prove_finding(src)
    assert key["speedup_vs_snarkjs"] == pytest.approx(
        src.runs[src.runs.tool == "snarkjs"].wall_s.median() / src.runs[src.runs.tool == "zkgpu-cpu"].wall_s.median()
    )
    tl = proofs.phase_timeline(src.phases)
    assert list(tl.phase) == [p for p in proofs.TIMELINE_PHASES if p in set(tl.phase)] and (tl.ms >= 0).all()
    main_ = tl[tl["on"] != "CPU thread"]  # the main thread's phases lie end to end
    assert main_.start_ms.iloc[1:].tolist() == pytest.approx((main_.start_ms + main_.ms).iloc[:-1].tolist())
    (g2,) = tl[tl.phase == "msm_b2_g2"].itertuples()  # the overlapped G2 MSM starts after the files are read
    assert g2.on == "CPU thread" and g2.start_ms >= main_[main_.phase == "read"].ms.iloc[0]
    assert "g2_wait" in set(main_.phase) and key["g2_hidden_ms"] >= 0


def test_bench_prove_usage_errors(tmp_path):
    res = CliRunner().invoke(main, ["bench", "prove", "--device", "cpu"])
    assert res.exit_code == 2 and "either --circuit NAME or all of --zkey" in res.output
    res = CliRunner().invoke(main, ["bench", "prove", "--circuit", "sha-3", "--device", "cpu", "--workdir", str(tmp_path)])
    assert res.exit_code == 2 and "unknown circuit 'sha-3'" in res.output


# --------------------------------------------------------------------------- the fast (insecure) set-up


@pytest.mark.parametrize("name", ["mulchain-8", "poseidon-1"])
def test_fast_setup_keys_work_with_snarkjs(name, tmp_path):
    """zkgpu.groth16.setup's key: snarkjs exports its verification key, proves with it, and accepts
    both snarkjs's and zkgpu's proofs; a wrong public input is still rejected."""
    t = need_node()
    files = build(name, CACHE, setup="fast")
    res, proof, public = _prove_cli(files.zkey, files.wtns, tmp_path)
    assert res.exit_code == 0, res.output
    assert snarkjs_verify(files.vkey, public, proof)
    zk = read_zkey(files.zkey)
    assert verify_py_ecc(zk, *read_proof(proof, public))
    t.run([*t.snarkjs, "groth16", "prove", str(files.zkey), str(files.wtns), str(tmp_path / "s.json"), str(tmp_path / "sp.json")])
    assert snarkjs_verify(files.vkey, tmp_path / "sp.json", tmp_path / "s.json")
    pub = json.loads(public.read_text())
    (tmp_path / "wrong.json").write_text(json.dumps([pub[0], str(int(pub[1]) + 1)]))
    assert not snarkjs_verify(files.vkey, tmp_path / "wrong.json", proof)
    # the same circuit's snarkjs key has the same shape
    ref = read_zkey(build(name, CACHE).zkey) if name == "mulchain-8" else zk
    assert (zk.n_vars, zk.n_public, zk.domain_size, len(zk.coef_value)) == (ref.n_vars, ref.n_public, ref.domain_size, len(ref.coef_value))


def test_fast_setup_rejects_other_curves(mulchain_bn128, tmp_path):
    from zkgpu.groth16.setup import fast_setup

    with pytest.raises(FormatError, match="not for bls12381"):
        fast_setup(mulchain_bn128[0].parent / "c.r1cs", tmp_path / "k.zkey")


@pytest.mark.parametrize("n", [8, 9])
def test_python_mulchain_is_circoms(n):
    """zkgpu.groth16.setup.mulchain_r1cs builds circom2's mulchain-N term for term, and its witness."""
    from zkgpu.groth16.setup import mulchain_r1cs, read_r1cs

    need_node()
    files = build(f"mulchain-{n}", CACHE)
    ref, mine = read_r1cs(files.r1cs), mulchain_r1cs(n)
    r1, wit = mine
    assert (r1.n_wires, r1.n_pub_out, r1.n_pub_in, r1.n_prv_in, r1.n_constraints) == (
        ref.n_wires, ref.n_pub_out, ref.n_pub_in, ref.n_prv_in, ref.n_constraints)  # fmt: skip
    for k in "ABC":
        assert np.array_equal(r1.terms[k][0], ref.terms[k][0]) and np.array_equal(r1.terms[k][1], ref.terms[k][1])
        assert r1.terms[k][2] == ref.terms[k][2]
    assert wit == fr_to_ints(read_wtns(files.wtns).values)


def test_python_mulchain_key_and_witness_prove(tmp_path):
    """Without node: python -m zkgpu.groth16.setup mulchain N writes a key and witness that prove and
    pass py_ecc's pairing check (what the GPU host runs at 2^18 without node)."""
    from zkgpu.groth16.setup import main as setup_main

    assert setup_main(["mulchain", "20", str(tmp_path)]) == 0
    zk, w = read_zkey(tmp_path / "circuit.zkey"), read_wtns(tmp_path / "circuit.wtns")
    assert zk.domain_size == 32 and zk.n_public == 2
    res = prove(zk, w, device="cpu")
    assert verify_py_ecc(zk, proof_json(res), res.public)
    assert setup_main(["mulchain", "1", str(tmp_path)]) == 2


# --------------------------------------------------------------------------- issue 22: witness vs r1cs, outputs


def _one_line_error(res, msg: str) -> None:
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert res.exit_code == 2 and len(lines) == 1 and lines[0].startswith("Error: ") and msg in lines[0], res.output


def test_witness_checked_against_the_r1cs_beside_the_key(mulchain, tmp_path):
    """The build puts circuit.r1cs beside circuit.zkey: prove checks A.w o B.w = C.w by default and names
    the first failing constraint; --r1cs names it explicitly; nothing is written."""
    _tamper_wtns(mulchain.wtns, tmp_path / "false.wtns", 1, 12345)
    res, proof, public = _prove_cli(mulchain.zkey, tmp_path / "false.wtns", tmp_path, tag="f")
    _one_line_error(res, "the witness does not satisfy the circuit: constraint ")
    assert not proof.exists() and not public.exists()
    key = tmp_path / "alone.zkey"  # no r1cs beside it: --r1cs
    shutil.copy(mulchain.zkey, key)
    res, _, _ = _prove_cli(key, tmp_path / "false.wtns", tmp_path, tag="g", extra=["--r1cs", str(mulchain.r1cs)])
    _one_line_error(res, "constraint ")
    other = build("mulchain-9", CACHE)
    res, _, _ = _prove_cli(key, mulchain.wtns, tmp_path, tag="h", extra=["--r1cs", str(other.r1cs)])
    _one_line_error(res, "not the key's circuit")
    res, proof, _ = _prove_cli(mulchain.zkey, mulchain.wtns, tmp_path, tag="ok", extra=["--verify"])
    assert res.exit_code == 0, res.output


def test_verify_refusal_blames_the_key_when_the_witness_satisfies_the_circuit(mulchain, tmp_path):
    """A key whose IC (verifying part) belongs to another circuit: the witness satisfies the r1cs, so
    --verify's refusal names the key, not the witness."""
    raw = bytearray(mulchain.zkey.read_bytes())
    off = _section_offset(bytes(raw), 3)
    raw[off : off + 96], raw[off + 96 : off + 192] = raw[off + 96 : off + 192], raw[off : off + 96]  # IC0 <-> IC1
    tmp_key = tmp_path / "k.zkey"
    tmp_key.write_bytes(bytes(raw))
    res, proof, _ = _prove_cli(tmp_key, mulchain.wtns, tmp_path, tag="v", extra=["--verify", "--r1cs", str(mulchain.r1cs)])
    _one_line_error(res, "the witness satisfies")
    assert "the key is not this circuit's" in res.output and not proof.exists()


def test_outputs_all_or_none_and_never_overwritten(mulchain, tmp_path, monkeypatch):
    from zkgpu.groth16 import proof as proof_mod

    # --public in a missing folder: created; --timings where a file blocks the folder: refused before proving
    res, proof, public = _prove_cli(mulchain.zkey, mulchain.wtns, tmp_path, tag="a", extra=["--timings", str(tmp_path / "new" / "t.json")])
    assert res.exit_code == 0, res.output and (tmp_path / "new" / "t.json").exists()
    (tmp_path / "blocker").write_text("x")
    res, proof, public = _prove_cli(mulchain.zkey, mulchain.wtns, tmp_path, tag="b", extra=["--timings", str(tmp_path / "blocker" / "t.json")])
    assert res.exit_code == 2 and not proof.exists() and not public.exists()
    # a file created between the check and the write (a concurrent prove): nothing overwritten, nothing left
    real = proof_mod.write_exclusive

    def racing(files):
        (tmp_path / "c_public.json").write_text("theirs")
        return real(files)

    monkeypatch.setattr("zkgpu.app.prove_cmd.write_exclusive", racing)
    res, proof, public = _prove_cli(mulchain.zkey, mulchain.wtns, tmp_path, tag="c")
    _one_line_error(res, "was created meanwhile")
    assert public.read_text() == "theirs" and not proof.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_many_witnesses_one_key(mulchain, tmp_path):
    w2 = tmp_path / "second.wtns"
    shutil.copy(mulchain.wtns, w2)
    out = tmp_path / "proofs"
    res = CliRunner().invoke(main, ["prove", "--zkey", str(mulchain.zkey), "--wtns", str(mulchain.wtns), "--wtns", str(w2),
                                    "--out", str(out), "--device", "cpu", "--timings", str(tmp_path / "t.json")])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "2 proofs written" in res.output and "proofs/s" in res.output
    for stem in ("circuit", "second"):
        assert snarkjs_verify(mulchain.vkey, out / f"{stem}.public.json", out / f"{stem}.proof.json")
    t = json.loads((tmp_path / "t.json").read_text())
    assert t["proofs"] == 2 and t["proofs_per_s"] > 0 and {"synthesis", "msm_a", "witness_check"} <= set(t["per_witness"][1])
    res = CliRunner().invoke(main, ["prove", "--zkey", str(mulchain.zkey), "--wtns", str(mulchain.wtns), "--wtns", str(w2), "--device", "cpu"])
    _one_line_error(res, "give --out DIR")
    res = CliRunner().invoke(main, ["prove", "--zkey", str(mulchain.zkey), "--wtns", str(w2), "--wtns", str(w2), "--out", str(tmp_path / "o2"), "--device", "cpu"])
    _one_line_error(res, "two witnesses are named second")


def test_setup_fast_command(mulchain, tmp_path):
    out = tmp_path / "k.zkey"
    res = CliRunner().invoke(main, ["setup", "--fast", str(mulchain.r1cs), str(out)])
    assert res.exit_code == 0, res.output and json.loads(res.output)["insecure"] is True
    res2, proof, public = _prove_cli(out, mulchain.wtns, tmp_path, extra=["--r1cs", str(mulchain.r1cs), "--verify"])
    assert res2.exit_code == 0, res2.output
    res = CliRunner().invoke(main, ["setup", "--fast", str(mulchain.r1cs), str(out)])
    _one_line_error(res, "exists")
    res = CliRunner().invoke(main, ["setup", str(mulchain.r1cs), str(tmp_path / "x.zkey")])
    assert res.exit_code == 2 and "--fast" in res.output


def test_python_setup_never_replaces_and_bounds_n(tmp_path, capsys):
    from zkgpu.groth16 import setup

    (tmp_path / "circuit.zkey").write_text("mine")
    assert setup.main(["mulchain", "4", str(tmp_path)]) == 2
    assert "exists" in capsys.readouterr().err and (tmp_path / "circuit.zkey").read_text() == "mine"
    assert setup.main(["mulchain", str(2**32), str(tmp_path / "big")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "2^28" in err and not (tmp_path / "big").exists()


def test_circuit_never_writes_through_a_symlink(tmp_path):
    need_node()
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    folder = tmp_path / "circuits"
    (folder / "mulchain-4").mkdir(parents=True)
    (folder / "mulchain-4" / "input.json").symlink_to(outside)
    res = CliRunner().invoke(main, ["circuit", "mulchain-4", str(folder)])
    _one_line_error(res, "is a symlink")
    assert outside.read_text() == "keep"
    (folder / "mulchain-5").symlink_to(tmp_path)
    res = CliRunner().invoke(main, ["circuit", "mulchain-5", str(folder)])
    _one_line_error(res, "symlink")


def test_readers_match_snarkjs_json_export(mulchain, tmp_path):
    """read_zkey against snarkjs's own reading of the same key (``snarkjs zkey export json``): every point,
    the counts and every coefficient."""
    out = tmp_path / "zkey.json"
    t = tools()
    t.run([*t.snarkjs, "zkey", "export", "json", str(mulchain.zkey), str(out)])
    ref = json.loads(out.read_text())
    zk = read_zkey(mulchain.zkey)
    assert (ref["nVars"], ref["nPublic"], ref["domainSize"]) == (zk.n_vars, zk.n_public, zk.domain_size)

    def g1(p):
        return [0, 0] if p is None or p[2] == "0" else [int(p[0]), int(p[1])]

    def g2(p):
        return [0, 0, 0, 0] if p[2] == ["0", "0"] else [int(p[0][0]), int(p[0][1]), int(p[1][0]), int(p[1][1])]

    def ours(arr):
        raw = np.ascontiguousarray(arr).astype("<u8").tobytes()
        return [[int.from_bytes(raw[i + j : i + j + 48], "little") for j in range(0, arr.shape[1] * 8, 48)] for i in range(0, len(raw), arr.shape[1] * 8)]

    for name, key, conv in (("vk_alpha_1", "alpha1", g1), ("vk_beta_1", "beta1", g1), ("vk_delta_1", "delta1", g1),
                            ("vk_beta_2", "beta2", g2), ("vk_gamma_2", "gamma2", g2), ("vk_delta_2", "delta2", g2)):  # fmt: skip
        assert ours(getattr(zk, key)) == [conv(ref[name])], name
    for name, key, conv in (("IC", "ic", g1), ("A", "a", g1), ("B1", "b1", g1), ("B2", "b2", g2), ("hExps", "h", g1)):
        assert ours(getattr(zk, key)) == [conv(p) for p in ref[name]], name
    assert ours(zk.c) == [g1(p) for p in ref["C"][zk.n_public + 1 :]]
    coefs = sorted((c["matrix"], c["constraint"], c["signal"], int(c["value"])) for c in ref["ccoefs"])
    assert coefs == sorted(zip(zk.coef_matrix.tolist(), zk.coef_constraint.tolist(), zk.coef_signal.tolist(), zk.coef_value, strict=True))
    wout = tmp_path / "wtns.json"
    t.run([*t.snarkjs, "wtns", "export", "json", str(mulchain.wtns), str(wout)])
    assert fr_to_ints(read_wtns(mulchain.wtns).values) == [int(v) for v in json.loads(wout.read_text())]


@pytest.mark.gpu
def test_gpu_prover_many_witnesses_equal_cpu_proofs():
    """The Prover (one key read, many witnesses) on the GPU gives the CPU's proofs for the same seed."""
    from zkgpu.groth16.prover import Prover

    zk, w = read_zkey(FIXTURE / "circuit.zkey"), read_wtns(FIXTURE / "circuit.wtns")
    gpu, cpu = Prover(zk, device="gpu"), Prover(zk, device="cpu")
    for seed in (1, 2):
        g, c = gpu.prove(w, seed=seed), cpu.prove(w, seed=seed)
        assert np.array_equal(g.a, c.a) and np.array_equal(g.b, c.b) and np.array_equal(g.c, c.c)


def test_build_without_a_gpu_is_one_line(monkeypatch):
    from zkgpu.core import cuda as _cuda

    monkeypatch.setattr(_cuda, "gpu_available", lambda: False)
    monkeypatch.setattr(_cuda, "cupy", lambda: (_ for _ in ()).throw(RuntimeError("no CUDA GPU (CuPy) available")))
    res = CliRunner().invoke(main, ["build"])
    assert res.exit_code == 2 and res.output.strip().count("\n") == 0 and "build: no CUDA GPU" in res.output, res.output


@pytest.mark.gpu
def test_build_compiles_every_module_then_loads_them():
    """zkgpu build (issue 25: no cold-start tax): every step runs, and the prover's first proof afterwards needs
    no compilation (its msm_a far below the build's first step)."""
    from zkgpu.app.build_cmd import build_all

    steps = build_all()
    assert [s for s, _ in steps][1:] == ["prep", "msm_precomp"] and all(v >= 0 for _, v in steps)
    res = CliRunner().invoke(main, ["build", "--json"])
    assert res.exit_code == 0 and json.loads(res.output)[0]["seconds"] >= 0
