"""Untrusted keys and witnesses (issue 22): the door of each format (regular files only, reads bounded by
the headers), every key point on its curve and in its prime-order subgroup, degenerate keys, and the
witness checked against the circuit's r1cs. The committed mulchain-8 fixture, no node needed."""

from __future__ import annotations

import os
import struct
import time
from pathlib import Path

import numpy as np
import pytest

from zkgpu.arith.field import FQ, FR
from zkgpu.groth16 import keycheck
from zkgpu.groth16.formats import FormatError, read_wtns, read_zkey
from zkgpu.groth16.setup import mulchain_r1cs

ark = pytest.importorskip("py_arkworks_bls12381")

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "zkgpu" / "groth16" / "fixtures"
Q, R = FQ.modulus, FR.modulus
T3 = (0, 2)  # the 3-torsion point of y^2 = x^3 + 4 (issue 22's example)
H1 = 0x396C8C005555E1568C00AAAB0000AAAB  # G1's cofactor


def _sections(raw: bytes) -> dict[int, int]:
    (nsec,) = struct.unpack_from("<I", raw, 8)
    pos, out = 12, {}
    for _ in range(nsec):
        t, size = struct.unpack_from("<IQ", raw, pos)
        out[t] = pos + 12
        pos += 12 + size
    return out


def _mont(v: int) -> bytes:
    return (v * FQ.R % Q).to_bytes(48, "little")


def _g1_bytes(x: int, y: int) -> bytes:
    return _mont(x) + _mont(y)


def _header_points_offset(raw: bytes) -> int:
    return _sections(raw)[2] + 4 + 48 + 4 + 32 + 12  # n8q, q, n8r, r, nVars/nPublic/domain


_HEAD = {"alpha1": (0, 96), "beta1": (96, 96), "beta2": (192, 192), "gamma2": (384, 192), "delta1": (576, 96), "delta2": (672, 192)}


def _patched(tmp_path: Path, name: str, edits: list[tuple[int, bytes]]) -> Path:
    raw = bytearray((FIXTURE / "circuit.zkey").read_bytes())
    for off, b in edits:
        raw[off : off + len(b)] = b
    out = tmp_path / f"{name}.zkey"
    out.write_bytes(bytes(raw))
    return out


def _sqrt(a: int) -> int | None:
    s = pow(a, (Q + 1) // 4, Q)
    return s if s * s % Q == a % Q else None


def _bad_g1(rng) -> tuple[int, int]:
    """A random point of E(Fq) outside G1 (its cofactor part not zero)."""
    while True:
        x = int(rng.integers(1, 2**62))
        y = _sqrt(x**3 + 4)
        if y is None:
            continue
        p = ark.G1Point.from_xy_bytes_unchecked_le(x.to_bytes(48, "little") + y.to_bytes(48, "little"))
        if not p.is_in_subgroup():
            return x, y


def _g1_point_arr(points: list[tuple[int, int]]) -> np.ndarray:
    raw = b"".join(x.to_bytes(48, "little") + y.to_bytes(48, "little") for x, y in points)
    return np.frombuffer(raw, dtype="<u8").astype(np.uint64).reshape(len(points), 12)


def _good_g1(k: int) -> tuple[int, int]:
    raw = (ark.G1Point() * ark.Scalar(k)).to_xy_bytes_le()
    return int.from_bytes(raw[:48], "little"), int.from_bytes(raw[48:], "little")


# --------------------------------------------------------------------------- the door


@pytest.mark.parametrize("reader", [read_zkey, read_wtns])
def test_refuses_fifo_folder_and_device_before_reading(reader, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)  # nobody writes: reading it would hang
    t0 = time.perf_counter()
    with pytest.raises(FormatError, match="a FIFO, not a"):
        reader(fifo)
    with pytest.raises(FormatError, match="a folder, not a"):
        reader(tmp_path)
    with pytest.raises(FormatError, match="a device, not a"):
        reader("/dev/zero")  # endless: reading it would fill memory
    assert time.perf_counter() - t0 < 5


def test_section_larger_than_the_file_is_refused_before_reading(tmp_path):
    raw = bytearray((FIXTURE / "circuit.wtns").read_bytes())
    struct.pack_into("<Q", raw, 12 + 4, 1 << 60)  # section 1 announces 2^60 bytes
    (tmp_path / "huge.wtns").write_bytes(bytes(raw))
    with pytest.raises(FormatError, match="truncated: section 1 needs 1152921504606846976 bytes"):
        read_wtns(tmp_path / "huge.wtns")


def test_fixture_key_passes_the_checks(tmp_path):
    zk = read_zkey(FIXTURE / "circuit.zkey")
    keycheck.check_key(zk)
    assert read_zkey(FIXTURE / "circuit.zkey") is zk  # cached by content
    copy = tmp_path / "copy.zkey"
    copy.write_bytes((FIXTURE / "circuit.zkey").read_bytes())
    again = read_zkey(copy)
    assert again.path == copy and again.a is zk.a  # the same validated arrays, named by the new path


# --------------------------------------------------------------------------- subgroup and curve


@pytest.mark.parametrize("section,index", [(5, 0), (5, 10), (8, 3), (9, 15), (6, 4), (3, 1)])
def test_g1_point_outside_the_subgroup_is_refused(section, index, tmp_path, rng):
    raw = (FIXTURE / "circuit.zkey").read_bytes()
    for tag, pt in (("t3", T3), ("rand", _bad_g1(rng))):
        path = _patched(tmp_path, f"s{section}-{tag}", [(_sections(raw)[section] + 96 * index, _g1_bytes(*pt))])
        with pytest.raises(FormatError, match=r"outside the prime-order G1 subgroup|not in the prime-order"):
            read_zkey(path)


@pytest.mark.parametrize("name", ["alpha1", "beta1", "delta1"])
def test_header_g1_point_outside_the_subgroup_is_refused(name, tmp_path):
    raw = (FIXTURE / "circuit.zkey").read_bytes()
    off = _header_points_offset(raw) + _HEAD[name][0]
    with pytest.raises(FormatError, match=f"{name} is not in the prime-order subgroup"):
        read_zkey(_patched(tmp_path, name, [(off, _g1_bytes(*T3))]))


def _fq2_sqrt(a0: int, a1: int) -> tuple[int, int] | None:
    alpha = _sqrt(a0 * a0 + a1 * a1)
    if alpha is None:
        return None
    inv2 = pow(2, -1, Q)
    for d in ((a0 + alpha) * inv2 % Q, (a0 - alpha) * inv2 % Q):
        x0 = _sqrt(d)
        if x0:
            x1 = a1 * pow(2 * x0, -1, Q) % Q
            if ((x0 * x0 - x1 * x1) % Q, 2 * x0 * x1 % Q) == (a0 % Q, a1 % Q):
                return x0, x1
    return None


def _bad_g2(rng) -> bytes:
    while True:
        x0, x1 = (int(v) for v in rng.integers(1, 2**62, size=2))
        sx0, sx1 = (x0 * x0 - x1 * x1) % Q, 2 * x0 * x1 % Q
        cx0, cx1 = (sx0 * x0 - sx1 * x1) % Q, (sx0 * x1 + sx1 * x0) % Q
        y = _fq2_sqrt(cx0 + 4, cx1 + 4)
        if y is None:
            continue
        raw = b"".join(v.to_bytes(48, "little") for v in (x0, x1, *y))
        if not ark.G2Point.from_xy_bytes_unchecked_le(raw).is_in_subgroup():
            return raw


def test_g2_point_outside_the_subgroup_is_refused(tmp_path, rng):
    raw = (FIXTURE / "circuit.zkey").read_bytes()
    bad = _bad_g2(rng)
    mont = b"".join(_mont(int.from_bytes(bad[i : i + 48], "little")) for i in range(0, 192, 48))
    with pytest.raises(FormatError, match="B2 \\(section 7\\) holds a point outside the prime-order G2 subgroup"):
        read_zkey(_patched(tmp_path, "b2", [(_sections(raw)[7] + 192 * 2, mont)]))
    with pytest.raises(FormatError, match="delta2 is not in the prime-order subgroup"):
        read_zkey(_patched(tmp_path, "d2", [(_header_points_offset(raw) + _HEAD["delta2"][0], mont)]))


def test_ic_point_off_the_curve_is_one_line(tmp_path):
    raw = (FIXTURE / "circuit.zkey").read_bytes()
    with pytest.raises(FormatError, match=r"IC \(section 3\) point 1 is not on the G1 curve") as exc:
        read_zkey(_patched(tmp_path, "ic", [(_sections(raw)[3] + 96, _g1_bytes(1, 1))]))
    assert "\n" not in str(exc.value)


def test_batch_catches_one_bad_point_always_and_cancelling_pairs(rng):
    good = [_good_g1(k) for k in range(2, 60)]
    bad = _bad_g1(rng)
    arr = _g1_point_arr(good[:30] + [bad] + good[30:])
    for _ in range(5):
        assert not keycheck.subgroup_batch(arr, "G1", rounds=1)  # the round "all" alone finds one bad point
    neg = (bad[0], Q - bad[1])  # t and -t cancel in the plain sum: the random rounds find them
    pair = _g1_point_arr(good[:20] + [bad] + good[20:40] + [neg])
    assert keycheck.subgroup_batch(_g1_point_arr(good), "G1")
    assert not keycheck.subgroup_batch(pair, "G1", rounds=16)
    t3 = _g1_point_arr(good + [T3, T3, T3])  # 3 T = O
    assert not keycheck.subgroup_batch(t3, "G1", rounds=16)


def test_first_off_curve_g1_and_g2():
    arr = _g1_point_arr([_good_g1(3), (0, 0), (5, 7), _good_g1(4)])
    assert keycheck.first_off_curve(arr, "G1") == 2
    g2 = (ark.G2Point() * ark.Scalar(7)).to_xy_bytes_le()
    a2 = np.frombuffer(g2 + bytes(192) + g2[:-1] + b"\x00", dtype="<u8").astype(np.uint64).reshape(3, 24)
    got = keycheck.first_off_curve(a2, "G2")
    assert got == (2 if g2[-1] else None)


# --------------------------------------------------------------------------- degenerate keys


@pytest.mark.parametrize("name", ["alpha1", "beta1", "beta2", "gamma2", "delta1", "delta2"])
def test_identity_in_the_header_is_refused(name, tmp_path):
    raw = (FIXTURE / "circuit.zkey").read_bytes()
    off, size = _HEAD[name]
    with pytest.raises(FormatError, match=f"degenerate key: {name} is the identity"):
        read_zkey(_patched(tmp_path, name, [(_header_points_offset(raw) + off, bytes(size))]))


def test_delta1_and_delta2_must_agree(tmp_path):
    raw = (FIXTURE / "circuit.zkey").read_bytes()
    base = _header_points_offset(raw)
    gamma2 = raw[base + 384 : base + 576]
    with pytest.raises(FormatError, match="delta1 and delta2 are not the same scalar's points"):
        read_zkey(_patched(tmp_path, "d", [(base + 672, gamma2)]))
    beta2 = raw[base + 192 : base + 384]
    with pytest.raises(FormatError, match="delta1 and delta2"):
        read_zkey(_patched(tmp_path, "d2", [(base + 672, beta2)]))


# --------------------------------------------------------------------------- witness vs circuit


def test_check_constraints_names_the_first_failing_constraint():
    r1, wit = mulchain_r1cs(8)
    assert keycheck.check_constraints(r1, [v % R for v in wit]) is None
    bad = list(wit)
    bad[-1] = (bad[-1] + 1) % R  # the last chain wire: only its own constraint(s) fail
    first = keycheck.check_constraints(r1, bad)
    assert first is not None
    cs = {k: set(r1.terms[k][0][r1.terms[k][1] == len(wit) - 1].tolist()) for k in "ABC"}
    assert first == min(set().union(*cs.values()))
    with pytest.raises(ValueError, match="another circuit"):
        keycheck.check_constraints(r1, wit[:-1])


def _random_r1cs(pyrng, m: int = 60, nw: int = 40):
    """A satisfied random r1cs: A, B rows of 0-3 terms with coefficients 0, 1, r - 1 or random, and C rows of
    random terms closed by a term on wire 0 (the constant 1) that makes each constraint hold."""
    from zkgpu.groth16.setup import R1cs

    w = [1] + [pyrng.randrange(R) for _ in range(nw - 1)]
    coef = lambda: pyrng.choice([0, 1, R - 1, pyrng.randrange(R), pyrng.randrange(R)])  # noqa: E731
    terms = {k: ([], [], []) for k in "ABC"}
    for c in range(m):
        ev = {}
        for k in "ABC":
            row = [(pyrng.randrange(nw), coef()) for _ in range(pyrng.randrange(4))]
            if k == "C":
                row.append((0, (ev["A"] * ev["B"] - sum(v * w[j] for j, v in row)) % R))
            for j, v in row:
                terms[k][0].append(c)
                terms[k][1].append(j)
                terms[k][2].append(v)
            ev[k] = sum(v * w[j] for j, v in row) % R
    return R1cs(nw, 1, 1, 1, m, {k: (np.array(cs, dtype=np.int64), np.array(ws, dtype=np.int64), vs) for k, (cs, ws, vs) in terms.items()}), w


def test_compiled_constraint_check_matches_python_ints(pyrng, monkeypatch):
    """The numba constraint check against the Python-int reference (:func:`keycheck._first_failing_ints`) on
    random satisfied r1cs (every coefficient kind, repeated and unsorted terms) and on each broken by one witness
    value or one coefficient; a witness given as ints or as the reader's uint64 array gives the same answer."""
    from zkgpu.arith.field import fr_from_ints

    assert keycheck._constraint_kernel() is not None
    for _ in range(20):
        r1, w = _random_r1cs(pyrng)
        assert keycheck.check_constraints(r1, w) is None and keycheck.check_constraints(r1, fr_from_ints(w)) is None
        assert keycheck._first_failing_ints(r1, w) is None
        bad = list(w)
        bad[pyrng.randrange(1, len(w))] = pyrng.randrange(R)
        want = keycheck._first_failing_ints(r1, bad)
        assert keycheck.check_constraints(r1, bad) == want == keycheck.check_constraints(r1, fr_from_ints(bad))
        k = pyrng.choice("ABC")
        cs, ws, vs = r1.terms[k]
        if len(vs):
            i = pyrng.randrange(len(vs))
            vs2 = list(vs)
            vs2[i] = pyrng.choice([0, 1, R - 1, pyrng.randrange(R)])
            other = type(r1)(r1.n_wires, 1, 1, 1, r1.n_constraints, {**r1.terms, k: (cs, ws, vs2)})
            assert keycheck.check_constraints(other, w) == keycheck._first_failing_ints(other, w)
    monkeypatch.setattr(keycheck, "_constraint_kernel", lambda: None)  # without numba: the reference itself
    assert keycheck.check_constraints(r1, fr_from_ints(bad)) == want
    with pytest.raises(ValueError, match="not a canonical"):
        keycheck.check_constraints(r1, np.full((r1.n_wires, 4), 2**64 - 1, dtype=np.uint64))


def test_constraint_check_refuses_terms_outside_the_circuit():
    r1, wit = mulchain_r1cs(4)
    cs, ws, vs = r1.terms["B"]
    for bad_cs, bad_ws, what in ((cs, np.array(ws) + 100, "wire"), (np.array(cs) + 100, ws, "constraint")):
        other = type(r1)(r1.n_wires, 1, 1, 1, r1.n_constraints, {**r1.terms, "B": (bad_cs, bad_ws, vs)})
        with pytest.raises(ValueError, match=f"name a {what} outside"):
            keycheck.check_constraints(other, wit)
    with pytest.raises(ValueError, match="give terms or arrays"):
        type(r1)(1, 0, 0, 0, 0)
    arrays = r1.arrays  # the terms as arrays, and back
    assert type(r1)(r1.n_wires, 1, 1, 1, r1.n_constraints, arrays=arrays).terms["C"][2] == [v % R for v in r1.terms["C"][2]]


@pytest.mark.parametrize("field", ["FQ", "FR"])
def test_vectorised_montgomery_conversion_matches_python_ints(field, rng, monkeypatch):
    """The readers' conversion (numba REDC, or the Python-int fallback) against x * k mod p on random
    values and the edges 0, 1, p - 1."""
    from zkgpu.groth16 import formats

    f = FQ if field == "FQ" else FR
    k = f.R_inv if field == "FQ" else pow(FR.R2, -1, R)
    vals = [int.from_bytes(rng.bytes(8 * f.limbs), "little") % f.modulus for _ in range(997)] + [0, 1, f.modulus - 1]
    limbs = np.frombuffer(b"".join(v.to_bytes(8 * f.limbs, "little") for v in vals), dtype="<u8").reshape(len(vals), f.limbs)
    want = [v * k % f.modulus for v in vals]
    for kernel in (True, False):
        if not kernel:
            monkeypatch.setattr(formats, "_redc_kernel", lambda: None)
        got = formats._limbs_mul_mod(limbs, k, f.modulus)
        assert [int.from_bytes(r.astype("<u8").tobytes(), "little") for r in got] == want


def test_prove_refuses_a_bad_key_unless_told_not_to_check(tmp_path):
    """zkgpu prove: a key with the 3-torsion point in A is one line, exit 2, nothing written; --no-check-key
    (a key you made yourself) skips the point checks."""
    from click.testing import CliRunner

    from zkgpu.app.cli import main

    raw = (FIXTURE / "circuit.zkey").read_bytes()
    key = _patched(tmp_path, "bad", [(_sections(raw)[5] + 96 * 4, _g1_bytes(*T3))])
    args = ["prove", "--zkey", str(key), "--wtns", str(FIXTURE / "circuit.wtns"), "--device", "cpu", "--seed", "1"]
    res = CliRunner().invoke(main, [*args, "--proof", str(tmp_path / "p.json"), "--public", str(tmp_path / "q.json")])
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert res.exit_code == 2 and len(lines) == 1 and "outside the prime-order G1 subgroup" in lines[0], res.output
    assert not (tmp_path / "p.json").exists()
    res = CliRunner().invoke(main, [*args, "--no-check-key", "--proof", str(tmp_path / "p2.json"), "--public", str(tmp_path / "q2.json")])
    assert res.exit_code == 0, res.output
