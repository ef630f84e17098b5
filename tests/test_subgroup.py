"""The endomorphism subgroup tests (issue 22): the constants zkgpu.arith.endo derives (β, ψ's coefficients) and their
sign conventions against py_ecc and py-arkworks-bls12381, the Python reference tests, and the device check
(zkgpu/kernels/subgroup.cu through zkgpu.gpu.subgroup) on edge cases: the identity, P and -P, points of every
small order of the cofactors (the 3-torsion point (0, 2), twist points of order 13 ...), random points of E(Fq)
and of the twist not multiplied by the cofactor, off-curve points, non-canonical coordinates, n = 1 and n not a
multiple of the block size, host chunks, and the key check's one-line refusals.

One body, several backends: ``emu`` (the kernels built by g++, tests/native/subgroup_emu.cpp, driven by the real
host code with numpy standing in for CuPy), ``gpu`` (@pytest.mark.gpu: the device), and for the key check ``cpu``
(the batched CPU path). Random points come from the test's seed, which a failure reports (tests/seeding.py).
"""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import numpy as np
import py_ecc.optimized_bls12_381 as pe
import pytest
from click.testing import CliRunner
from native import NumpyAsCupy, emulated_kernel, load
from test_keys import _HEAD, FIXTURE, _fq2_sqrt, _g1_bytes, _header_points_offset, _mont, _patched, _sections, _sqrt

from seeding import current_seed
from zkgpu.app.bench import keycheck as bench_keycheck
from zkgpu.app.cli import main
from zkgpu.arith import endo
from zkgpu.arith.field import FQ, FR
from zkgpu.core import cuda as _cuda
from zkgpu.gpu import subgroup
from zkgpu.groth16 import keycheck
from zkgpu.groth16.formats import read_zkey

ark = pytest.importorskip("py_arkworks_bls12381")

Q, R = FQ.modulus, FR.modulus
Z = endo.Z
H1 = (Z - 1) ** 2 // 3  # G1's cofactor
H2 = 0x5D543A95414E7F1091D50792876A202CD91DE4547085ABAA68A205B2E5A7DDFA628F1CB4D9E82EF21537E293A6691AE1616EC6E786F0C70CF1C38E31C7238E5  # G2's
G1_SMALL = (3, 11, 10177)  # primes of H1 (also 859267, 52437899)
G2_SMALL = (13, 23, 2713, 11953, 262069)  # the small primes of H2
OK, UNREDUCED, OFF, OUT = (subgroup.STATUS[k] for k in ("ok", "unreduced", "off_curve", "outside_subgroup"))


# ----------------------------------------------------------------------------- points as ints, py_ecc, arkworks


def rand_e1(pyrng) -> tuple[int, int]:
    """A random point of E(Fq), not multiplied by the cofactor (outside G1 but with probability ~2^-126)."""
    while True:
        x = pyrng.randrange(Q)
        y = _sqrt(x**3 + 4)
        if y is not None:
            return x, (y if pyrng.random() < 0.5 else Q - y)


def rand_e2(pyrng) -> tuple[tuple[int, int], tuple[int, int]]:
    """A random point of the twist E'(Fq2), not multiplied by the cofactor."""
    while True:
        x0, x1 = pyrng.randrange(Q), pyrng.randrange(Q)
        sx0, sx1 = (x0 * x0 - x1 * x1) % Q, 2 * x0 * x1 % Q
        y = _fq2_sqrt((sx0 * x0 - sx1 * x1 + 4) % Q, (sx0 * x1 + sx1 * x0 + 4) % Q)
        if y is not None:
            return (x0, x1), y


def _pe1(p):
    return pe.Z1 if p == (0, 0) else (pe.FQ(p[0]), pe.FQ(p[1]), pe.FQ.one())


def _pe2(p):
    return pe.Z2 if p == ((0, 0), (0, 0)) else (pe.FQ2(list(p[0])), pe.FQ2(list(p[1])), pe.FQ2.one())


def _ints1(p) -> tuple[int, int]:
    if pe.is_inf(p):
        return (0, 0)
    x, y = pe.normalize(p)
    return (int(x), int(y))


def _ints2(p):
    if pe.is_inf(p):
        return ((0, 0), (0, 0))
    x, y = pe.normalize(p)
    return ((int(x.coeffs[0]), int(x.coeffs[1])), (int(y.coeffs[0]), int(y.coeffs[1])))


def torsion(pyrng, group: str, ell: int):
    """A point of order ell (a prime of the cofactor): a random curve point times #E without its factors ell (its
    ell-primary part), times ell while that is not the identity."""
    m = (H1 if group == "g1" else H2) * R
    while m % ell == 0:
        m //= ell
    for _ in range(20):
        t = pe.multiply(_pe1(rand_e1(pyrng)) if group == "g1" else _pe2(rand_e2(pyrng)), m)
        if pe.is_inf(t):
            continue
        while not pe.is_inf(nxt := pe.multiply(t, ell)):
            t = nxt
        return _ints1(t) if group == "g1" else _ints2(t)
    raise AssertionError(f"no point of order {ell} in 20 tries, seed {current_seed()}")


def _flat(p, group: str) -> list[int]:
    return list(p) if group == "g1" else [*p[0], *p[1]]


def to_array(points: list, group: str) -> np.ndarray:
    """Points as ints -> the host layout, without any check (off-curve and >= q values pass through)."""
    raw = b"".join(v.to_bytes(48, "little") for p in points for v in _flat(p, group))
    return np.frombuffer(raw, dtype="<u8").astype(np.uint64).reshape(len(points), 12 if group == "g1" else 24)


def _ark(p, group: str):
    cls = ark.G1Point if group == "g1" else ark.G2Point
    return cls.from_xy_bytes_unchecked_le(b"".join(v.to_bytes(48, "little") for v in _flat(p, group)))


def on_curve(p, group: str) -> bool:
    if group == "g1":
        return pe.is_on_curve(_pe1(p), pe.b)
    return pe.is_on_curve(_pe2(p), pe.b2)


def truth(p, group: str) -> int:
    """The expected status of p: py_ecc's [r]P = O, arkworks's is_in_subgroup and endo's test must agree."""
    if any(v >= Q for v in _flat(p, group)):
        return UNREDUCED
    if not any(_flat(p, group)):
        return OK
    if not on_curve(p, group):
        return OFF
    pe_in = pe.is_inf(pe.multiply(_pe1(p) if group == "g1" else _pe2(p), R))
    ark_in = _ark(p, group).is_in_subgroup()
    endo_in = endo.g1_in_subgroup(*p) if group == "g1" else endo.g2_in_subgroup(*p)
    assert pe_in == ark_in == endo_in, f"py_ecc {pe_in}, arkworks {ark_in}, endo {endo_in} for {p}, seed {current_seed()}"
    return OK if pe_in else OUT


def _mul(group: str, k: int):
    return _ints1(pe.multiply(pe.G1, k)) if group == "g1" else _ints2(pe.multiply(pe.G2, k))


def _neg(p, group: str):
    return (p[0], (Q - p[1]) % Q) if group == "g1" else (p[0], ((Q - p[1][0]) % Q, (Q - p[1][1]) % Q))


def _off(p, group: str):
    """p with y (y.c0) + 1: off the curve."""
    out = (p[0], (p[1] + 1) % Q) if group == "g1" else (p[0], ((p[1][0] + 1) % Q, p[1][1]))
    assert not on_curve(out, group)
    return out


def cases(group: str, pyrng) -> dict[str, object]:
    """Labelled edge cases of the group, seeded."""
    gen = _mul(group, 1)
    k = pyrng.randrange(2, R)
    kp = _mul(group, k)
    rand = rand_e1(pyrng) if group == "g1" else rand_e2(pyrng)
    t = torsion(pyrng, group, G1_SMALL[1] if group == "g1" else G2_SMALL[0])
    plus_t = _ints1(pe.add(_pe1(kp), _pe1(t))) if group == "g1" else _ints2(pe.add(_pe2(kp), _pe2(t)))
    out: dict[str, object] = {
        "identity": (0, 0) if group == "g1" else ((0, 0), (0, 0)),
        "G": gen, "-G": _neg(gen, group), "kG": kp, "-kG": _neg(kp, group),
        "random curve point": rand, "-random curve point": _neg(rand, group),
        "kG + small torsion": plus_t,
    }  # fmt: skip
    for ell in G1_SMALL if group == "g1" else G2_SMALL:
        out[f"order {ell}"] = t if ell == (G1_SMALL[1] if group == "g1" else G2_SMALL[0]) else torsion(pyrng, group, ell)
    if group == "g1":
        out.update({"(0, 2)": (0, 2), "(0, q - 2)": (0, Q - 2), "(1, 1)": (1, 1), "G, y + 1": (gen[0], (gen[1] + 1) % Q),
                    "x + q": (gen[0] + Q, gen[1]), "x = 2^384 - 1": (2**384 - 1, gen[1]), "(0, 1)": (0, 1)})  # fmt: skip
    else:
        out.update({"(1, 1)": ((1, 0), (1, 0)), "G, y.c1 + 1": (gen[0], (gen[1][0], (gen[1][1] + 1) % Q)),
                    "x.c1 + q": ((gen[0][0], gen[0][1] + Q), gen[1]), "y.c0 = q": (gen[0], (Q, gen[1][1]))})  # fmt: skip
    return out


# ----------------------------------------------------------------------------- backends


@pytest.fixture(params=["emu", pytest.param("gpu", marks=pytest.mark.gpu)])
def device(request, monkeypatch) -> str:
    """The device path: ``emu`` (g++ build, numpy for CuPy) or ``gpu``."""
    if request.param == "emu":
        lib = load("subgroup_emu")
        monkeypatch.setattr(_cuda, "cupy", NumpyAsCupy)
        monkeypatch.setattr(subgroup, "_kernel", lambda name: emulated_kernel(lib, name))
    return request.param


def _status(res: subgroup.PointCheck) -> list[int]:
    return [int(v) for v in np.asarray(res.status if isinstance(res.status, np.ndarray) else _cuda.cupy().asnumpy(res.status))]


# ----------------------------------------------------------------------------- the constants


def test_constants_are_derived_with_the_sign_conventions_of_py_ecc_and_arkworks(pyrng):
    """σ(P) = [-z² mod r]P and ψ(Q) = [z mod r]Q on subgroup points (py_ecc's scalar multiplication); the other
    cube root of unity and the other sign of z fail; β is arkworks's (σ agrees with arkworks's is_in_subgroup
    on points in and out, test_python_reference_agrees_with_py_ecc_and_arkworks)."""
    assert endo.Z**4 - endo.Z**2 + 1 == R and endo.Z < 0 and endo.Z_ABS == 0xD201000000010000
    assert pow(endo.BETA, 3, Q) == 1 and endo.BETA != 1
    for _ in range(3):
        k = pyrng.randrange(1, R)
        p = _mul("g1", k)
        assert endo.sigma(p) == _ints1(pe.multiply(_pe1(p), (-(Z * Z)) % R)), f"seed {current_seed()}"
        other = (endo.BETA * endo.BETA * p[0] % Q, p[1])  # the other cube root of unity: σ² = [(-z²)²]
        assert other != endo.sigma(p) and other == _ints1(pe.multiply(_pe1(p), Z**4 % R))
        q2 = _mul("g2", k)
        assert endo.psi(q2) == _ints2(pe.multiply(_pe2(q2), Z % R)), f"seed {current_seed()}"
        assert endo.psi(q2) != _ints2(pe.multiply(_pe2(q2), endo.Z_ABS))
    rand = rand_e2(pyrng)  # ψ maps the whole twist to itself, subgroup or not
    assert on_curve(endo.psi(rand), "g2") and on_curve(endo.sigma(rand_e1(pyrng)), "g1")


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_python_reference_agrees_with_py_ecc_and_arkworks(group, pyrng):
    """truth() asserts that endo's test, py_ecc's [r]P = O and arkworks's is_in_subgroup agree on every case."""
    got = {name: truth(p, group) for name, p in cases(group, pyrng).items()}
    inside = {k for k, v in got.items() if v == OK}
    assert inside == {"identity", "G", "-G", "kG", "-kG"}, f"{got}, seed {current_seed()}"


# ----------------------------------------------------------------------------- the kernels


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_kernel_status_of_every_edge_case(group, device, pyrng):
    cs = cases(group, pyrng)
    names = list(cs)
    res = subgroup.check_points(to_array([cs[k] for k in names], group), group)
    want = {k: truth(cs[k], group) for k in names}
    got = dict(zip(names, _status(res), strict=True))
    assert got == want, f"{device} {group}: {[(k, got[k], want[k]) for k in names if got[k] != want[k]]}, seed {current_seed()}"
    firsts = [i for i, k in enumerate(names) if want[k] in (UNREDUCED, OFF)], [i for i, k in enumerate(names) if want[k] == OUT]
    assert (res.first_off_curve, res.first_outside) == (firsts[0][0], firsts[1][0]) and not res.ok


@pytest.mark.parametrize("group", ["g1", "g2"])
@pytest.mark.parametrize("n", [1, 2, 127, 129, 300])
def test_kernel_sizes_and_chunks(group, n, device, pyrng):
    """n subgroup points (n = 1, and n not a multiple of the block size) with a bad point at seeded places:
    every status and the first indices, in one launch and in host chunks of 7 (the last one short)."""
    pts = [_mul(group, pyrng.randrange(1, R)) for _ in range(min(n, 5))]
    pts = [pts[i % len(pts)] for i in range(n)]
    arr = to_array(pts, group)
    res = subgroup.check_points(arr, group)
    assert res.ok and _status(res) == [OK] * n, f"seed {current_seed()}"
    bad_t = torsion(pyrng, group, 3) if group == "g1" else rand_e2(pyrng)
    i_out, i_off = pyrng.randrange(n), pyrng.randrange(n)
    want = [OK] * n
    pts[i_off], want[i_off] = _off(pts[i_off], group), OFF
    pts[i_out], want[i_out] = bad_t, OUT  # the same index as i_off: outside, and no point off the curve
    for chunk in (subgroup.CHUNK, 7):
        res = subgroup.check_points(to_array(pts, group), group, chunk=chunk)
        assert _status(res) == want, f"{device} n={n} chunk {chunk}, seed {current_seed()}"
        assert res.first_outside == i_out and res.first_off_curve == (i_off if want[i_off] == OFF else None)


def test_kernel_empty_and_bad_arguments(device):
    res = subgroup.check_points(np.zeros((0, 12), np.uint64), "g1")
    assert res.ok and len(_status(res)) == 0
    with pytest.raises(ValueError, match="group must be 'g1' or 'g2'"):
        subgroup.check_points(np.zeros((1, 12), np.uint64), "g3")
    with pytest.raises(ValueError, match=r"shape \(n, 24\) for G2"):
        subgroup.check_points(np.zeros((1, 12), np.uint64), "G2")
    with pytest.raises(ValueError, match="uint64"):
        subgroup.check_points(np.zeros((1, 12), np.uint32), "g1")
    with pytest.raises(ValueError, match="chunk"):
        subgroup.check_points(np.zeros((1, 12), np.uint64), "g1", chunk=0)


@pytest.mark.gpu
def test_kernel_reads_device_points_in_place(pyrng):
    cp = _cuda.cupy()
    pts = [_mul("g1", pyrng.randrange(1, R)) for _ in range(3)] + [(0, 2)]
    res = subgroup.check_points(cp.asarray(to_array(pts, "g1")), "g1")
    assert isinstance(res.status, cp.ndarray) and _status(res) == [OK, OK, OK, OUT] and res.first_outside == 3


# ----------------------------------------------------------------------------- the key check


@pytest.fixture(params=["cpu", "emu", pytest.param("gpu", marks=pytest.mark.gpu)])
def key_backend(request, monkeypatch) -> str:
    """keycheck's path: ``cpu`` (batched arkworks), ``emu`` (the device path on the g++ kernels), ``gpu``."""
    if request.param == "emu":
        lib = load("subgroup_emu")
        monkeypatch.setattr(_cuda, "cupy", NumpyAsCupy)
        monkeypatch.setattr(subgroup, "_kernel", lambda name: emulated_kernel(lib, name))
    monkeypatch.setattr(keycheck, "_on_gpu", lambda: request.param != "cpu")
    return request.param


@pytest.mark.parametrize("section,index", [(5, 10), (9, 15), (3, 1), (6, 0)])
def test_key_check_names_the_section_and_the_point(section, index, key_backend, tmp_path, pyrng):
    raw = (FIXTURE / "circuit.zkey").read_bytes()
    names = {3: "IC (section 3)", 5: "A (section 5)", 6: "B1 (section 6)", 9: "H (section 9)"}
    for tag, pt in (("t3", (0, 2)), ("rand", rand_e1(pyrng))):
        path = _patched(tmp_path, f"s{section}-{tag}", [(_sections(raw)[section] + 96 * index, _g1_bytes(*pt))])
        want = f"{path}: corrupt key: {names[section]} holds a point outside the prime-order G1 subgroup: point {index}"
        with pytest.raises(ValueError, match=f"^{re.escape(want)}$"):
            read_zkey(path)
    off = _patched(tmp_path, "off", [(_sections(raw)[section] + 96 * index, _g1_bytes(1, 1))])
    with pytest.raises(ValueError, match=rf"point {index} is not on the G1 curve$"):
        read_zkey(off)


def test_key_check_g2_and_header_points(key_backend, tmp_path, pyrng):
    raw = (FIXTURE / "circuit.zkey").read_bytes()
    t13 = torsion(pyrng, "g2", 13)
    mont = b"".join(_mont(v) for v in _flat(t13, "g2"))
    with pytest.raises(ValueError, match=r"B2 \(section 7\) holds a point outside the prime-order G2 subgroup: point 2$"):
        read_zkey(_patched(tmp_path, "b2", [(_sections(raw)[7] + 192 * 2, mont)]))
    base = _header_points_offset(raw)
    for name in ("delta2", "gamma2"):
        with pytest.raises(ValueError, match=f"{name} is not in the prime-order subgroup$"):
            read_zkey(_patched(tmp_path, name, [(base + _HEAD[name][0], mont)]))
    for name in ("alpha1", "beta1", "delta1"):
        with pytest.raises(ValueError, match=f"{name} is not in the prime-order subgroup$"):
            read_zkey(_patched(tmp_path, name, [(base + _HEAD[name][0], _g1_bytes(*torsion(pyrng, "g1", 11)))]))
    with pytest.raises(ValueError, match="beta1 is not on the curve$"):
        read_zkey(_patched(tmp_path, "b1off", [(base + _HEAD["beta1"][0], _g1_bytes(1, 1))]))
    keycheck.check_key(read_zkey(FIXTURE / "circuit.zkey", check=False))  # the fixture passes on every path


def test_cpu_first_outside_finds_the_first_bad_point(pyrng):
    """The CPU path's bisection names the first point outside (several bad points, a cancelling pair, none)."""
    good = [_mul("g1", pyrng.randrange(1, R)) for _ in range(8)]
    pts = [good[i % 8] for i in range(200)]
    assert keycheck.first_outside(to_array(pts, "g1"), "G1") is None
    t, rand = torsion(pyrng, "g1", 11), rand_e1(pyrng)
    first = pyrng.randrange(150)
    pts[first], pts[first + 20], pts[first + 40] = t, _neg(t, "g1"), rand  # t and -t cancel in any sum holding both
    assert keycheck.first_outside(to_array(pts, "g1"), "G1") == first, f"seed {current_seed()}"
    assert keycheck.first_outside(to_array(pts[first + 1 :], "g1"), "G1") == 19, f"seed {current_seed()}"


# ----------------------------------------------------------------------------- zkgpu bench keycheck


class _EmuCupy(NumpyAsCupy):
    def get_default_memory_pool(self):
        return SimpleNamespace(free_all_blocks=lambda: None)


def test_bench_keycheck_rows_on_every_path(monkeypatch):
    """run_benchmark's rows at 2^3: the device path (emulated; wall time for the CUDA events), the CPU path, the
    whole-key check on both; every timed call checked the valid points as valid."""
    lib = load("subgroup_emu")
    monkeypatch.setattr(_cuda, "cupy", _EmuCupy)
    monkeypatch.setattr(subgroup, "_kernel", lambda name: emulated_kernel(lib, name))
    monkeypatch.setattr(bench_keycheck, "_events_ms", bench_keycheck._wall_ms)
    rows = bench_keycheck.run_benchmark([3], repeat=2, gpu=True, cpu_max_log=3, cpu_repeat=1)
    got = {(r["path"], r["group"], r["phase"]): r for r in rows}
    want = {("gpu", g, p) for g in ("g1", "g2") for p in ("device", "with_h2d")} | {("cpu", "g1", "host"), ("cpu", "g2", "host")}
    assert set(got) == want | {("gpu", "key", "check_key"), ("cpu", "key", "check_key")}
    assert all(r["median_ms"] > 0 and r["n"] == 8 for r in rows)
    assert got[("gpu", "g1", "device")]["repeat"] == 2 and got[("cpu", "key", "check_key")]["points"] == 5 * 8 + 6


def test_bench_keycheck_command_writes_a_recording(monkeypatch, tmp_path):
    monkeypatch.setattr(_cuda, "gpu_available", lambda: False)
    res = CliRunner().invoke(main, ["bench", "keycheck", "--logs", "2,3", "--cpu-max-log", "3", "--no-key", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    (run,) = tmp_path.iterdir()
    m = json.loads((run / "manifest.json").read_text())
    assert run.name.endswith("bench-keycheck") and m["benchmark"] == "keycheck" and m["logs"] == [2, 3] and m["paths"] == ["cpu"]
    rows = json.loads((run / "keycheck.json").read_text())
    assert sorted((r["log_n"], r["group"]) for r in rows) == [(2, "g1"), (2, "g2"), (3, "g1"), (3, "g2")]
    for args, what in ((["--logs", "24"], "nothing to time"), (["--logs", "x"], "comma-separated"), (["--logs", "30"], "0..26")):
        res = CliRunner().invoke(main, ["bench", "keycheck", *args, "--out", str(tmp_path)])
        assert res.exit_code == 2 and what in res.output, res.output
    assert len(list(tmp_path.iterdir())) == 1


def test_bench_keycheck_times_the_witness_check(monkeypatch, tmp_path):
    """--r1cs/--wtns (mulchain-8, circom's terms, written here): rows for reading the r1cs and the witness and for the
    check, at the circuit's domain; a witness that does not satisfy the r1cs, or one file alone, is refused in one line."""
    from test_reliability_break import _r1cs_bytes

    from zkgpu.groth16.setup import mulchain_r1cs, write_wtns

    r1, wit = mulchain_r1cs(8)
    (tmp_path / "mulchain-8").mkdir()
    r1p, wp, badp = (tmp_path / "mulchain-8" / n for n in ("circuit.r1cs", "circuit.wtns", "bad.wtns"))
    r1p.write_bytes(_r1cs_bytes(r1))
    write_wtns(wp, wit)
    write_wtns(badp, wit[:-1] + [(wit[-1] + 1) % R])
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.setattr(_cuda, "gpu_available", lambda: False)
    res = CliRunner().invoke(main, ["bench", "keycheck", "--logs", "none", "--r1cs", str(r1p), "--wtns", str(wp), "--repeat", "3", "--out", str(out)])
    assert res.exit_code == 0, res.output
    (run,) = out.iterdir()
    m = json.loads((run / "manifest.json").read_text())
    assert m["logs"] == [] and m["witness"] == {"r1cs": "mulchain-8/circuit.r1cs", "wtns": "mulchain-8/circuit.wtns"}
    rows = {r["phase"]: r for r in json.loads((run / "keycheck.json").read_text())}
    assert set(rows) == {"read_r1cs", "read_wtns", "check"}
    assert all(r["path"] == "cpu" and r["group"] == "witness" and r["log_n"] == 4 and r["repeat"] == 3 and r["median_ms"] > 0 for r in rows.values())
    assert rows["check"]["points"] == rows["read_r1cs"]["points"] == 8 and rows["read_wtns"]["points"] == 11
    for args, what in ((["--r1cs", str(r1p), "--wtns", str(badp)], "does not satisfy"), (["--r1cs", str(r1p)], "go together"),
                       ([], "nothing to time")):  # fmt: skip
        res = CliRunner().invoke(main, ["bench", "keycheck", "--logs", "none", *args, "--out", str(out)])
        assert res.exit_code == 2 and what in res.output and "Traceback" not in res.output, res.output
    assert len(list(out.iterdir())) == 1
