"""Issue 22's independent break-it pass: the defects it found, each held by a test (RELIABILITY.md rows 160 on,
test letter X). Untrusted .r1cs files, manifests and forecasts, empty output names, options given twice, a
verification key that is a FIFO, outputs' modes, the built circuits' cache after an interrupted step."""

from __future__ import annotations

import json
import os
import re
import stat
import struct
import threading
from unittest import mock

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nodetools import need_node

from zkgpu.analysis import replay
from zkgpu.analysis.model import ModelParams, simulate
from zkgpu.analysis.replay import Recording
from zkgpu.app import pipeline_cmd
from zkgpu.app.cli import main
from zkgpu.arith.field import FQ, FR
from zkgpu.core.events import normalize_events
from zkgpu.groth16 import circuits, keycheck, setup
from zkgpu.groth16.formats import FormatError, read_zkey
from zkgpu.groth16.proof import check_vkey, write_exclusive
from zkgpu.groth16.prover import Prover
from zkgpu.groth16.setup import R1cs, mulchain_r1cs, read_r1cs
from zkgpu.story import forecast
from zkgpu.story.prove_results import recorded_prove_source

FIXTURE = circuits.REPO / "zkgpu" / "groth16" / "fixtures"


def _one_line_error(res, *words):
    assert res.exit_code == 2, (res.exit_code, res.stdout, res.stderr, res.exception)
    err = res.stderr.strip()
    assert "Traceback" not in res.stderr and "\n" not in err and "internal error" not in err, res.stderr
    for w in words:
        assert w in err, (w, err)


def _run(args, command=None):
    return CliRunner().invoke(pipeline_cmd.main if command == "pipeline" else main, args)


# --------------------------------------------------------------------------- .r1cs read at the door


def _r1cs_bytes(r1: R1cs, *, header: bytes | None = None, twice: bool = False, wire: int | None = None, coef: int | None = None) -> bytes:
    """An iden3 .r1cs of ``r1`` (sections 1 header, 2 constraints), with one thing broken when asked."""
    hdr = header if header is not None else (struct.pack("<I", 32) + FR.modulus.to_bytes(32, "little")
                                             + struct.pack("<IIIIQI", r1.n_wires, r1.n_pub_out, r1.n_pub_in, r1.n_prv_in, 0, r1.n_constraints))
    body = b""
    for c in range(r1.n_constraints):
        for k in "ABC":
            cs, ws, vs = r1.terms[k]
            terms = [(int(w), int(v)) for cc, w, v in zip(cs, ws, vs, strict=True) if cc == c]
            if c == 0 and k == "A" and (wire is not None or coef is not None):
                terms[0] = (wire if wire is not None else terms[0][0], coef if coef is not None else terms[0][1])
            body += struct.pack("<I", len(terms)) + b"".join(struct.pack("<I", w) + v.to_bytes(32, "little") for w, v in terms)
    secs = [(1, hdr), (2, body)] + ([(2, body)] if twice else [])
    return b"r1cs" + struct.pack("<II", 1, len(secs)) + b"".join(struct.pack("<IQ", t, len(p)) + p for t, p in secs)


@pytest.fixture
def mulchain():
    return mulchain_r1cs(4)[0]


def test_an_r1cs_wire_beyond_the_circuit_is_one_line(tmp_path, mulchain):
    f = tmp_path / "c.r1cs"
    f.write_bytes(_r1cs_bytes(mulchain, wire=0xFFFFFFF0))
    with pytest.raises(FormatError, match=re.escape("constraint 0 (A) names wire 4294967280, the circuit has 7")):
        read_r1cs(f)
    _one_line_error(_run(["setup", "--fast", str(f), str(tmp_path / "k.zkey")]), "names wire 4294967280")
    assert not (tmp_path / "k.zkey").exists()


def test_an_r1cs_header_of_the_wrong_size_is_refused_without_reading_past_it(tmp_path, mulchain):
    good = _r1cs_bytes(mulchain)
    for name, hdr, word in (("short", good[24:34], "header section has 10 bytes, expected"),
                            ("empty", b"", "header section has 0 bytes"),
                            ("n8", struct.pack("<I", 48) + FR.modulus.to_bytes(48, "little") + struct.pack("<IIIIQI", 7, 1, 1, 1, 0, 4),
                             "not for bls12381")):
        f = tmp_path / f"{name}.r1cs"
        f.write_bytes(_r1cs_bytes(mulchain, header=hdr))
        with pytest.raises(FormatError, match=re.escape(word)):
            read_r1cs(f)


def test_r1cs_counts_that_do_not_fit_are_refused(tmp_path, mulchain):
    hdr = struct.pack("<I", 32) + FR.modulus.to_bytes(32, "little") + struct.pack("<IIIIQI", 7, 1000, 1, 1, 0, 4)
    f = tmp_path / "c.r1cs"
    f.write_bytes(_r1cs_bytes(mulchain, header=hdr))
    with pytest.raises(FormatError, match=re.escape("1000 outputs, 1 public and 1 private inputs and the constant are more than its 7 wires")):
        read_r1cs(f)
    zkey = read_zkey(FIXTURE / "circuit.zkey")  # mulchain-8: 11 signals, 2 public
    other = mulchain_r1cs(8)[0]
    other.n_pub_in = 0
    with pytest.raises(ValueError, match="1 public signals but the key .* has 2"):
        Prover(zkey, device="cpu", r1cs=other)


def test_an_r1cs_coefficient_not_below_r_is_refused(tmp_path, mulchain):
    f = tmp_path / "c.r1cs"
    f.write_bytes(_r1cs_bytes(mulchain, coef=FR.modulus + 1))
    with pytest.raises(FormatError, match="constraint 0 \\(A\\) has a coefficient 0x73ed.* not below r"):
        read_r1cs(f)


def test_an_r1cs_section_given_twice_is_refused(tmp_path, mulchain):
    f = tmp_path / "c.r1cs"
    f.write_bytes(_r1cs_bytes(mulchain, twice=True))
    with pytest.raises(FormatError, match="section 2 appears 2 times"):
        read_r1cs(f)
    f.write_bytes(_r1cs_bytes(mulchain))
    assert read_r1cs(f).n_constraints == 4  # the writer above is sound


# --------------------------------------------------------------------------- empty output names


def test_empty_output_names_are_named_not_taken_for_the_working_folder(tmp_path, monkeypatch):
    z, w = str(FIXTURE / "circuit.zkey"), str(FIXTURE / "circuit.wtns")
    monkeypatch.chdir(tmp_path)
    _one_line_error(_run(["prove", "--device", "cpu", "--zkey", z, "--wtns", w, "--out", ""]), "--out ''", "give a folder")
    _one_line_error(_run(["prove", "--device", "cpu", "--zkey", z, "--wtns", w, "--proof", "p.json", "--public", "q.json", "--timings", ""]),
                    "--timings ''", "give a file name")
    _one_line_error(_run(["setup", "--fast", "x.r1cs", ""]), "OUT ''", "give a file name")
    rec = str(circuits.REPO / "data" / "nvidia-h200-20261129-record-2")
    _one_line_error(_run(["compare", rec, rec, "--csv", ""]), "--csv ''", "give a file name")
    (tmp_path / "a.log").write_text("")
    _one_line_error(_run(["diagnose", "a.log", "--out", ""]), "--out ''")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.log"]  # nothing written into the working folder


# --------------------------------------------------------------------------- manifests and forecasts


def _recording(folder, patch=None, raw=None):
    (folder / "events").mkdir(parents=True)
    normalize_events(pd.DataFrame({"run": ["b", "b"], "worker": [0, 0], "gpu": [0, 0], "partition": [0, 0], "phase": ["prove", "ntt_msm_h"],
                                   "start_ns": [0, 10], "end_ns": [100, 50]})).to_parquet(folder / "events" / "0.parquet")
    m = {"device": "cpu", "date_utc": "2099-01-01T00:00:00+00:00", "scenarios": {"baseline": {"events": "events/0.parquet", "config": {}}}}
    m.update(patch or {})
    (folder / "manifest.json").write_text(raw if raw is not None else json.dumps(m), encoding="utf-8")
    return folder


def _refused_everywhere(tmp_path, folder, word):
    with pytest.raises(ValueError, match=re.escape(word)):
        Recording.open(folder)
    with pytest.warns(UserWarning, match=re.escape(word)):
        assert replay.find_recordings(tmp_path) == []
    _one_line_error(_run(["trace", "export", str(folder), "--out", str(tmp_path / "t.json")]), word)


def test_a_manifest_with_a_key_twice_is_refused(tmp_path):
    first = '{"events": "events/other.parquet", "config": {}}'
    raw = ('{"device": "cpu", "scenarios": {"baseline": ' + first + ', "baseline": {"events": "events/0.parquet", "config": {}}}}')
    folder = _recording(tmp_path / "cpu-20990101-record", raw=raw)
    _refused_everywhere(tmp_path, folder, "the key 'baseline' appears twice")


def test_a_manifest_date_that_is_not_a_date_is_refused(tmp_path):
    folder = _recording(tmp_path / "cpu-20990101-record", {"date_utc": "zzzz"})
    _refused_everywhere(tmp_path, folder, "'date_utc' 'zzzz' is not an ISO 8601 date")


@pytest.mark.parametrize("patch, word", [
    ({"repeats": -3}, "'repeats' is -3, expected an integer >= 1"),
    ({"repeats": "many"}, "'repeats' is 'many'"),
    ({"n": -5}, "'n' is -5"),
    ({"partitions": 0}, "'partitions' is 0"),
    ({"scenarios": {"baseline": {"events": "events/0.parquet", "repeats": [{"events": 5}]}}}, "scenario 'baseline' run 0 field 'events' is an integer"),
    ({"scenarios": {"baseline": {"events": "events/0.parquet", "repeats": [1, 2]}}}, "field 'repeats' is '[1, 2]', expected an array of run objects"),
    ({"scenarios": {"baseline": {"events": "events/0.parquet", "rows": -1}}}, "field 'rows' is -1, expected a value >= 0"),
    ({"environment": {"gpu": 5}}, "'environment.gpu' is an integer"),
])
def test_manifest_runs_counts_and_gpu_are_checked_at_load(tmp_path, patch, word):
    folder = _recording(tmp_path / "cpu-20990101-record", patch)
    _refused_everywhere(tmp_path, folder, word)


def _forecast(folder, raw):
    path = folder / "forecast-from-x.json"
    path.write_text(raw)
    return path


def test_a_forecast_with_a_key_twice_or_an_inverted_band_is_refused(tmp_path):
    s = '{"partitions_per_min": 1.0, "compute_util": 0.5, "measured_per_min": 1.0'
    head = '{"kind": "forecast", "made_utc": "2026-12-01T12:00:00+00:00", "from_recording": "x", "scenarios": '
    path = _forecast(tmp_path, head + '{"a": ' + s + '}, "a": ' + s + ', "band_lo": 9}}}')
    with pytest.raises(ValueError, match=re.escape(f"{path}: not a JSON forecast (the key 'a' appears twice")):
        forecast.read_forecasts(tmp_path)
    path = _forecast(tmp_path, head + '{"a": ' + s + ', "band_lo": 9.0, "band_hi": 1.0}}}')
    with pytest.raises(ValueError, match=re.escape("band_lo <= band_hi")):
        forecast.read_forecasts(tmp_path)


# --------------------------------------------------------------------------- options given twice, bounds


def test_record_scenario_partitions_given_twice_is_refused(tmp_path):
    res = _run(["record", "--device", "cpu", "--out", str(tmp_path), "--scenario", "baseline",
                "--scenario-partitions", "baseline=3", "--scenario-partitions", "baseline=5"])
    _one_line_error(res, "--scenario-partitions 'baseline' given twice (3 and 5)")
    assert list(tmp_path.iterdir()) == []


def test_diagnose_the_same_log_twice_is_refused(tmp_path):
    log = tmp_path / "a.log"
    log.write_text("")
    (tmp_path / "b.log").symlink_to(log)
    _one_line_error(_run(["diagnose", str(log), str(tmp_path / "b.log")]), "is given twice")


def test_circuit_size_bounded_before_circom_runs(tmp_path):
    with pytest.raises(ValueError, match="N = 99999999 is more than 519217"):
        circuits.circuit_source("poseidon-99999999")
    _one_line_error(_run(["circuit", "mulchain-999999999", str(tmp_path)]), "mulchain-999999999", "2^28 domain")
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- the verification key


@pytest.fixture
def fifo(tmp_path):
    f = tmp_path / "vkey.fifo"
    os.mkfifo(f)
    yield f
    try:  # release a reader that blocked anyway, so a regression fails instead of hanging the suite
        fd = os.open(f, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
    except OSError:
        pass


def test_a_vkey_that_is_a_fifo_or_another_key_is_refused_before_the_run(tmp_path, fifo):
    z, w = str(FIXTURE / "circuit.zkey"), str(FIXTURE / "circuit.wtns")
    out = tmp_path / "data"
    done = threading.Event()
    res: dict = {}

    def go():
        res["record"] = _run(["record", "--device", "cpu", "--out", str(out), "--scenario", "baseline", "--partitions", "2",
                              "--no-sweep", "--no-bench", "--zkey", z, "--wtns", w, "--vkey", str(fifo)])
        done.set()

    threading.Thread(target=go, daemon=True).start()
    assert done.wait(60), "zkgpu record blocked on a FIFO vkey"
    _one_line_error(res["record"], "--vkey", "not a regular file")
    assert not out.exists() or list(out.iterdir()) == []
    _one_line_error(_run(["--device", "cpu", "--partitions", "2", "--zkey", z, "--wtns", w, "--vkey", str(fifo)], "pipeline"),
                    "not a regular file")
    other = tmp_path / "plonk.json"
    other.write_text(json.dumps({"protocol": "plonk", "curve": "bn128"}))
    with pytest.raises(FormatError, match=re.escape("not a Groth16 BLS12-381 verification key (protocol, curve: ('plonk', 'bn128'))")):
        check_vkey(other)
    assert check_vkey(FIXTURE / "vkey.json") == FIXTURE / "vkey.json"


# --------------------------------------------------------------------------- outputs


def test_exclusive_outputs_get_a_plain_files_mode_and_their_folder(tmp_path):
    mask = os.umask(0o022)
    os.umask(mask)
    write_exclusive({tmp_path / "a" / "b" / "t.json": "text", tmp_path / "k.bin": b"\x00\x01"})
    for p in (tmp_path / "a" / "b" / "t.json", tmp_path / "k.bin"):
        assert stat.S_IMODE(p.stat().st_mode) == 0o666 & ~mask, oct(p.stat().st_mode)  # was 0600 (mkstemp's)
    assert (tmp_path / "k.bin").read_bytes() == b"\x00\x01"
    assert not [p for p in tmp_path.rglob(".*.tmp")]


# --------------------------------------------------------------------------- the circuits' cache


@pytest.mark.slow
def test_a_built_circuit_whose_step_was_cut_is_made_again(tmp_path):
    need_node()
    first = circuits.build("mulchain-4", tmp_path, setup="fast")
    good = {p: p.read_bytes() for p in (first.wtns, first.vkey, first.r1cs)}
    first.wtns.write_bytes(good[first.wtns][:100])  # a `wtns calculate` stopped half-way (older versions wrote in place)
    first.vkey.write_text(good[first.vkey].decode()[:50])
    again = circuits.build("mulchain-4", tmp_path, setup="fast")
    assert again.step_s["witness"] > 0 and again.step_s["vkey"] > 0 and again.step_s["compile"] == 0
    assert again.wtns.read_bytes() == good[first.wtns] and json.loads(again.vkey.read_text())
    first.wasm.unlink()  # circom stopped between the r1cs and the wasm
    third = circuits.build("mulchain-4", tmp_path, setup="fast")
    assert third.step_s["compile"] > 0 and third.wasm.is_file() and third.r1cs.read_bytes() == good[first.r1cs]
    assert not list(third.root.glob(".*.tmp")) and not (third.root / ".compile.tmp").exists()


# --------------------------------------------------------------------------- the key checks against references


def _ark_g1(k: int) -> tuple[int, int]:
    raw = (ark().G1Point() * ark().Scalar(k)).to_xy_bytes_le()
    return int.from_bytes(raw[:48], "little"), int.from_bytes(raw[48:], "little")


def ark():
    return pytest.importorskip("py_arkworks_bls12381")


def _random_curve_g1(rng) -> tuple[int, int]:
    """A random point of E(Fq) (almost surely outside G1): x random, y = sqrt(x^3 + 4)."""
    q = FQ.modulus
    while True:
        x = int.from_bytes(rng.bytes(48), "little") % q
        y = pow(x**3 + 4, (q + 1) // 4, q)
        if y * y % q == (x**3 + 4) % q:
            return x, y


def _arr(points, width=12) -> np.ndarray:
    raw = b"".join(c.to_bytes(48, "little") for pt in points for c in pt)
    return np.frombuffer(raw, dtype="<u8").astype(np.uint64).reshape(len(points), width)


def test_compiled_on_curve_test_matches_the_python_ints(rng, monkeypatch):
    if keycheck._on_curve_kernel() is None:
        pytest.skip("numba is not installed: the Python-int path is the only one")
    q = FQ.modulus
    good = [_ark_g1(int(k)) for k in rng.integers(2, 2**62, 40)] + [(0, 2), (0, q - 2), (0, 0), _random_curve_g1(rng)]
    g2 = (ark().G2Point() * ark().Scalar(12345)).to_xy_bytes_le()
    g2pt = tuple(int.from_bytes(g2[48 * i : 48 * i + 48], "little") for i in range(4))
    cases = [(_arr(good), "G1", None), (_arr(good[:7] + [(5, 7)] + good[7:]), "G1", 7),
             (_arr([(q - 1, q - 1)] + good), "G1", 0), (_arr([g2pt, (0, 0, 0, 0), g2pt], 24), "G2", None),
             (_arr([g2pt, g2pt[:3] + (g2pt[3] ^ 1,)], 24), "G2", 1), (_arr([(1, 2, 3, 4)], 24), "G2", 0)]
    for arr, group, want in cases:
        assert keycheck.first_off_curve(arr, group) == want
    monkeypatch.setattr(keycheck, "_on_curve_kernel", lambda: None)  # the Python-int reference
    for arr, group, want in cases:
        assert keycheck.first_off_curve(arr, group) == want


@pytest.mark.slow
def test_subgroup_checks_agree_with_r_times_p(rng):
    """arkworks's is_in_subgroup (Scott's endomorphism tests: phi(P) = -u^2 P in G1, psi(P) = u P in G2) and the batch
    test against an independent reference, py_ecc's [r]P = O, on random points in and out of the subgroups."""
    bls = pytest.importorskip("py_ecc.optimized_bls12_381")
    r = FR.modulus

    def r_times_is_zero(pt, g2=False):
        if g2:
            x, y = bls.FQ2([pt[0], pt[1]]), bls.FQ2([pt[2], pt[3]])
            one = bls.FQ2.one()
        else:
            x, y, one = bls.FQ(pt[0]), bls.FQ(pt[1]), bls.FQ.one()
        return bls.is_inf(bls.multiply((x, y, one), r))

    pts = [_ark_g1(int(k)) for k in rng.integers(2, 2**62, 2)] + [_random_curve_g1(rng) for _ in range(2)] + [(0, 2)]
    for pt in pts:
        want = r_times_is_zero(pt)
        assert ark().G1Point.from_xy_bytes_unchecked_le(_arr([pt]).astype("<u8").tobytes()).is_in_subgroup() == want
        assert keycheck.subgroup_batch(_arr([pt] * 20), "G1") == want
    assert (0, 2) in pts and not r_times_is_zero((0, 2))  # the 3-torsion point
    good2 = ark().G2Point() * ark().Scalar(int(rng.integers(2, 2**62)))
    raw = good2.to_xy_bytes_le()
    g2 = tuple(int.from_bytes(raw[48 * i : 48 * i + 48], "little") for i in range(4))
    assert r_times_is_zero(g2, g2=True) and ark().G2Point.from_xy_bytes_unchecked_le(raw).is_in_subgroup()
    bad2 = _random_curve_g2(rng)
    assert not r_times_is_zero(bad2, g2=True)
    assert not ark().G2Point.from_xy_bytes_unchecked_le(_arr([bad2], 24).astype("<u8").tobytes()).is_in_subgroup()
    assert not keycheck.subgroup_batch(_arr([g2] * 10 + [bad2] + [g2] * 10, 24), "G2")


def _random_curve_g2(rng) -> tuple[int, int, int, int]:
    """A random point of E'(Fq2): y^2 = x^3 + 4(1 + u), x = (x0, 0) random, y by Fq2's square root."""
    q = FQ.modulus
    while True:
        x0 = int.from_bytes(rng.bytes(48), "little") % q
        a0, a1 = (x0**3 + 4) % q, 4  # x^3 + 4 + 4u with x = x0
        norm = (a0 * a0 + a1 * a1) % q  # sqrt in Fq2 via the norm
        n = pow(norm, (q + 1) // 4, q)
        if n * n % q != norm:
            continue
        for s in (n, q - n):
            t = (a0 + s) * pow(2, -1, q) % q
            y0 = pow(t, (q + 1) // 4, q)
            if y0 * y0 % q != t or y0 == 0:
                continue
            y1 = a1 * pow(2 * y0, -1, q) % q
            if ((y0 * y0 - y1 * y1) % q, 2 * y0 * y1 % q) == (a0, a1):
                return x0, 0, y0, y1


# --------------------------------------------------------------------------- the other recordings' manifests


def test_a_bench_prove_manifest_that_is_not_an_object_is_named(tmp_path):
    src = circuits.REPO / "data" / "nvidia-h200-20261201-bench-prove"
    d = tmp_path / "x-20990101-bench-prove"
    d.mkdir()
    for f in ("prove.csv", "phases.csv"):
        (d / f).write_bytes((src / f).read_bytes())
    (d / "manifest.json").write_text("[]")
    with pytest.raises(ValueError, match=re.escape(f"{d / 'manifest.json'} holds a JSON list")):
        recorded_prove_source(tmp_path)  # was: AttributeError in notebook 10


@pytest.mark.parametrize("patch, word", [(None, "holds a JSON list"), ({"sppark": "x"}, "'sppark' is 'x'"),
                                         ({"compute_h_ms": {"2^24": "fast"}}, "'compute_h_ms'"), ({"sizes_log2": "24"}, "'sizes_log2'")])
def test_a_bench_sppark_manifest_of_the_wrong_shape_is_one_line(tmp_path, patch, word):
    src = circuits.REPO / "data" / "nvidia-h200-20261201-bench-sppark-3"
    d = tmp_path / src.name
    d.mkdir()
    for f in src.iterdir():
        if f.is_file():
            (d / f.name).write_bytes(f.read_bytes())
    m = json.loads((src / "manifest.json").read_text())
    (d / "manifest.json").write_text("[]" if patch is None else json.dumps({**m, **patch}))
    _one_line_error(_run(["bench", "sppark-table", "--data", str(tmp_path)]), "manifest.json", word)  # was: internal error AttributeError


# --------------------------------------------------------------------------- fuzz: the r1cs reader


def _term_offsets(data: bytes) -> list[int]:
    """Byte offsets of every term (wire uint32, then a 32-byte coefficient) in an r1cs of :func:`_r1cs_bytes`."""
    hsize = struct.unpack_from("<Q", data, 16)[0]
    pos = 12 + 12 + hsize + 12  # the header section, then the constraint section's payload
    cons = struct.unpack_from("<I", data, 12 + 12 + 4 + 32 + 16 + 8)[0]
    out = []
    for _ in range(cons):
        for _k in "ABC":
            (nt,) = struct.unpack_from("<I", data, pos)
            pos += 4
            out += [pos + 36 * i for i in range(nt)]
            pos += 36 * nt
    return out


_R1CS_BASE = _r1cs_bytes(mulchain_r1cs(6)[0])
_TERMS = _term_offsets(_R1CS_BASE)


@st.composite
def _mutated_r1cs(draw):
    data = bytearray(_R1CS_BASE)
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["flip", "cut", "insert", "u32", "wire", "coef"]))
        pos = draw(st.integers(0, len(data) - 1)) if data else 0
        term = draw(st.sampled_from(_TERMS))
        if kind == "wire" and term + 4 <= len(data):  # a term's wire, perhaps beyond the wire count
            struct.pack_into("<I", data, term, draw(st.sampled_from([0, 8, 9, 255, 2**32 - 1])))
        elif kind == "coef" and term + 36 <= len(data):  # a term's coefficient, perhaps not below r
            data[term + 4 : term + 36] = draw(st.sampled_from([0, 1, FR.modulus - 1, FR.modulus, 2**256 - 1])).to_bytes(32, "little")
        elif kind == "flip" and data:
            data[pos] ^= draw(st.integers(1, 255))
        elif kind == "cut":
            del data[pos : pos + draw(st.integers(1, 100))]
        elif kind == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=40))
        elif kind == "u32" and pos + 4 <= len(data):  # a count, a wire, a size set to an extreme
            struct.pack_into("<I", data, pos, draw(st.sampled_from([0, 1, 7, 2**31, 2**32 - 1])))
    return bytes(data)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=_mutated_r1cs())
def test_fuzz_r1cs_reader_and_constraint_check(data, tmp_path):
    """Mutated r1cs bytes: read_r1cs gives an r1cs or a one-line FormatError, the compiled reader (numba) and the
    Python loop alike (the same terms, or the same message); an r1cs it gives can be checked against a witness of its
    length without any other exception (every wire below the count, every coefficient below r), the compiled check
    and the Python-int one giving the same answer."""
    path = tmp_path / "fuzz.r1cs"
    path.write_bytes(data)
    got: list = []
    for kernel in (True, False):
        with mock.patch.object(setup, "_walk_kernel", setup._walk_kernel if kernel else (lambda: None)):
            try:
                got.append(read_r1cs(path))
            except FormatError as exc:
                assert "\n" not in str(exc) and str(exc).startswith(str(path)), str(exc)
                got.append(str(exc))
    fast, ref = got
    if isinstance(fast, str) or isinstance(ref, str):
        assert fast == ref
        return
    r1 = fast
    assert 1 + r1.n_pub_out + r1.n_pub_in + r1.n_prv_in <= r1.n_wires
    for k in "ABC":
        assert np.array_equal(fast.terms[k][0], ref.terms[k][0]) and np.array_equal(fast.terms[k][1], ref.terms[k][1])
        assert fast.terms[k][2] == ref.terms[k][2]
    ones = [1] * r1.n_wires
    assert keycheck.check_constraints(r1, ones) == keycheck._first_failing_ints(ref, ones)


# --------------------------------------------------------------------------- the model at its bounds


@pytest.mark.parametrize("kw, pk, word", [
    ({"h2d_gbps": 1e-300}, {}, "beyond the model's clock"),
    ({"h2d_gbps": 10.0}, {"ntt_ms": 1e308}, "beyond the model's clock"),
    ({"h2d_gbps": 10.0, "partitions": 10**9}, {}, "partitions=1000000000 is more than 10000"),
    ({"h2d_gbps": 10.0, "gw": True}, {}, "gw must be an int >= 1, got True"),
])
def test_the_model_refuses_runs_beyond_its_clock_and_bools(kw, pk, word):
    params = ModelParams(**{"prep_msm_ms": 100.0, "ntt_ms": 50.0, "batch_add_ms": 20.0, "tail_msm_ms": 30.0, "h2d_bytes": 3e9,
                            "pageable_gbps": 3.0, "pinned_gbps": 25.0, **pk})
    with pytest.raises(ValueError, match=re.escape(word)):  # was: OverflowError / hours of simpy / gw = True accepted
        simulate(params, transfer="pinned", **{"partitions": 12, **kw})


# --------------------------------------------------------------------------- event tables: values


@pytest.mark.parametrize("col, value, word", [("gpu_ms", float("inf"), "column 'gpu_ms' has 1 value(s) outside [0, 1e+09] ms"),
                                              ("gpu_ms", -2.0, "column 'gpu_ms' has 1 value(s) outside"),
                                              ("partition", -7, "column 'partition' has 1 negative value(s)"),
                                              ("worker", -1, "column 'worker' has 1 negative value(s)"),
                                              ("bytes", -5, "column 'bytes' has 1 negative value(s)")])
def test_an_event_table_with_values_the_parser_would_drop_is_refused(tmp_path, col, value, word):
    folder = _recording(tmp_path / "cpu-20990101-record")
    ev = pd.read_parquet(folder / "events" / "0.parquet")
    ev[col] = ev[col].astype("float64") if col == "gpu_ms" else ev[col]
    ev.loc[0, col] = value
    ev.to_parquet(folder / "events" / "0.parquet")
    _one_line_error(_run(["trace", "export", str(folder), "--out", str(tmp_path / "t.json")]), "0.parquet", word)  # was: exported, exit 0
    assert not (tmp_path / "t.json").exists()


# --------------------------------------------------------------------------- brk9: a hand-built CSR


@pytest.mark.parametrize(
    "field_, value, match",
    [
        ("col", np.array([0, 10**8]), "term 1 has column 100000000"),
        ("col", np.array([0, -5]), "term 1 has column -5"),
        ("row_ptr", np.array([0, 1, 10**7]), "row_ptr runs from 0 to 10000000"),
        ("row_ptr", np.array([0, 2, 2, 2]), r"row_ptr has shape \(4,\)"),
        ("row_ptr", np.array([0, 3, 2]), "row_ptr runs from 0 to 2|decreases"),
        ("kind", np.array([1, 1], dtype=np.uint8), "term 0 has kind 1"),
    ],
)
def test_spmv_hand_built_csr_refused(field_, value, match):
    """spmv's compiled loop indexes with col and row_ptr unchecked: a hand-built FrCsr out of range crashed the
    process (a column 10^8, a row pointer past nnz) or gave garbage (a negative column) instead of an error."""
    from dataclasses import replace as dc_replace

    from zkgpu.arith.sparse import csr_from_coo, spmv

    ok = csr_from_coo([0, 1], [0, 1], [3, 5], 2, 2)
    w = np.array([[2, 0, 0, 0], [7, 0, 0, 0]], dtype=np.uint64)
    assert spmv(ok, w)[:, 0].tolist() == [6, 35]
    bad = dc_replace(ok, **{field_: value}, _val_mont=None)
    with pytest.raises(ValueError, match=match):
        spmv(bad, w)


def test_prove_with_a_file_where_the_key_cache_goes(tmp_path, monkeypatch):
    """A file at $XDG_CACHE_HOME/zkgpu/keys made zkgpu prove fail with "internal error ValueError" (configure's
    error escaped the CLI); the cache only saves time, so the command proves without it and says so."""
    from zkgpu.groth16 import keycache

    (tmp_path / "cache" / "zkgpu").mkdir(parents=True)
    (tmp_path / "cache" / "zkgpu" / "keys").write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(keycache, "_FOLDER", None)
    res = CliRunner().invoke(main, ["prove", "--zkey", str(FIXTURE / "circuit.zkey"), "--wtns", str(FIXTURE / "circuit.wtns"),
                                    "--out", str(tmp_path / "o"), "--device", "cpu", "--seed", "1"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "is a file, not a folder" in res.output and "internal error" not in res.output
    assert (tmp_path / "o" / "circuit.proof.json").is_file() and keycache.folder() is None


def test_diagnose_log_of_zero_ms_phases(tmp_path):
    """A log whose CUZK_TIMING phases are all 0 ms crashed diagnose (ZeroDivisionError in the hidden-H2D step, "internal
    error" from the CLI); it is undetermined, said in one line."""
    src = (replay.data_dir() / "nvidia-h200-20261129-record-2" / "logs" / "pinned_pool.log").read_text(encoding="utf-8")
    log = tmp_path / "zero.log"
    log.write_text(re.sub(r"(_ms=)(\d+)", r"\g<1>0", src), encoding="utf-8")
    res = CliRunner().invoke(main, ["diagnose", str(log), "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "internal error" not in res.output and "**undetermined**" in res.output and "take 0 ms" in res.output


@pytest.mark.parametrize(
    ("damage", "match"),
    [
        (lambda df: df.assign(mode="resident"), "no whole-command row of a zkgpu tool"),
        (lambda df: df.assign(wall_s="fast"), "column 'wall_s' holds 'fast', not a number"),
        (lambda df: pd.concat([df, df[df["mode"] == "cold_first"]]), "mode 'cold_first' appears more than once"),
        (lambda df: df.drop(columns="wall_s"), "no 'wall_s' column"),
        (lambda df: df.drop(columns="tool"), "no 'tool' column"),
    ],
    ids=["no-command-rows", "text-wall", "two-cold-first", "no-wall_s", "no-tool"],
)
def test_bench_prove_recording_with_damaged_table(tmp_path, damage, match):
    """A bench-prove recording's prove.csv was read unchecked: without command rows prove_key_numbers raised
    StopIteration, without a column KeyError, with text for seconds TypeError, with two cold_first rows a Series where a
    float goes. Recordings are untrusted: one ValueError naming the file and what is wrong."""
    import shutil

    from zkgpu.story import prove_results as pr

    src = replay.data_dir() / "nvidia-h200-20261203-bench-prove-2"
    folder = tmp_path / "nvidia-h200-20261204-bench-prove"
    shutil.copytree(src, folder)
    assert pr.prove_key_numbers(pr.recorded_prove_source(tmp_path))  # the copy reads as the original
    damage(pd.read_csv(src / "prove.csv")).to_csv(folder / "prove.csv", index=False)
    with pytest.raises(ValueError, match=match):
        pr.prove_key_numbers(pr.recorded_prove_source(tmp_path))


@pytest.fixture
def python_recursion_limit():
    """CPython's default recursion limit for the test (hypothesis raises it while it runs; json's C scanner then recurses
    as deep as the input, past the C stack): the deeply nested JSON tests meet what a zkgpu process meets."""
    import sys

    old = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    yield
    sys.setrecursionlimit(old)


def test_key_cache_entry_nested_too_deep(tmp_path, monkeypatch, python_recursion_limit):
    """A verdict entry of 4,000 '[' (within the 4 KiB limit) made json.loads raise RecursionError, which lookup did not
    catch: zkgpu prove failed with "internal error RecursionError". A damaged entry is ignored (the key checked again)."""
    from zkgpu.groth16 import keycache

    folder = tmp_path / "cache" / "zkgpu" / "keys"
    folder.mkdir(parents=True, mode=0o700)
    folder.chmod(0o700)
    data = (FIXTURE / "circuit.zkey").read_bytes()
    entry = folder / f"{keycache.digest(data).hex()}.json"
    entry.write_text("[" * 4000)
    entry.chmod(0o600)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(keycache, "_FOLDER", None)
    from zkgpu.groth16 import formats

    monkeypatch.setattr(formats, "_CACHE", type(formats._CACHE)())  # no in-memory hit from other tests
    res = CliRunner().invoke(main, ["prove", "--zkey", str(FIXTURE / "circuit.zkey"), "--wtns", str(FIXTURE / "circuit.wtns"),
                                    "--out", str(tmp_path / "o"), "--device", "cpu", "--seed", "1"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert (tmp_path / "o" / "circuit.proof.json").is_file()
    assert keycache.lookup(keycache.digest(data), len(data))  # the damaged entry replaced by a valid one


def test_recording_manifest_nested_too_deep(tmp_path, python_recursion_limit):
    """A manifest.json of 5,000 '[' raised RecursionError out of loads_strict, past every reader's ValueError handling
    (recordings are untrusted): now the readers' one-line ValueError naming the file."""
    import shutil

    from zkgpu.analysis.schema import loads_strict
    from zkgpu.story import prove_results as pr

    with pytest.raises(ValueError, match="nested too deeply"):
        loads_strict("[" * 5_000)
    folder = tmp_path / "nvidia-h200-20261204-bench-prove"
    shutil.copytree(replay.data_dir() / "nvidia-h200-20261203-bench-prove-2", folder)
    (folder / "manifest.json").write_text("[" * 5_000)
    with pytest.raises(ValueError, match="manifest.json is not readable JSON: JSON nested too deeply"):
        pr.recorded_prove_source(tmp_path)


def test_vkey_nested_too_deep(tmp_path, python_recursion_limit):
    """A --vkey of 5,000 '[' (far below its 64 MiB limit) raised RecursionError out of check_vkey (zkgpu bench prove's
    door check): now the FormatError naming --vkey."""
    deep = tmp_path / "vkey.json"
    deep.write_text("[" * 5_000)
    with pytest.raises(FormatError, match=r"--vkey .*: not JSON"):
        check_vkey(deep)


def test_key_numbers_and_inventory_nested_too_deep(tmp_path, python_recursion_limit):
    """Key numbers and an inventoried manifest of 5,000 '[' raised RecursionError past report's and inventory's
    ValueError handling; now the key numbers are 'unreadable' (ValueError) and the manifest is skipped as unreadable."""
    from zkgpu.app.report import read_key_numbers

    deep = tmp_path / "10_real_proof.json"
    deep.write_text("[" * 5_000)
    with pytest.raises(ValueError, match="nested too deeply"):
        read_key_numbers(deep)
    folder = tmp_path / "data" / "nvidia-h200-20261204-bench-prove"
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text("[" * 5_000)
    replay.inventory(tmp_path / "data")  # no RecursionError
