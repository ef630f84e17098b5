"""A fast, INSECURE Groth16 set-up that writes a snarkjs-format ``.zkey`` (benchmarks only).

From **known** toxic waste (tau, alpha, beta, gamma, delta from a seed) it computes what snarkjs ``groth16 setup``
(``src/zkey_new.js``) writes for a circom ``.r1cs``: the domain n = 2^k >= constraints + public + 1 with one extra
constraint per public signal; ``u_s, v_s, w_s`` from the Lagrange basis at tau with snarkjs's roots; the A, B1,
B2, IC and C points; ``H_i = L'_{2i+1}(tau)/delta G1`` (odd-coset convention, :mod:`zkgpu.groth16.formats`);
the coefficient section (``value * R^2 mod r``), the header and an empty contributions section.
"""

from __future__ import annotations

import errno
import functools
import json
import os
import random
import struct
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from zkgpu.arith.field import FQ, FR, fr_from_ints, fr_to_ints
from zkgpu.core import optional
from zkgpu.groth16.formats import FormatError, read_sections
from zkgpu.groth16.proof import write_exclusive
from zkgpu.groth16.prover import snarkjs_root

__all__ = ["MAX_LOG_DOMAIN", "R1cs", "r1cs_header", "read_r1cs", "fast_setup", "mulchain_r1cs", "write_wtns"]

P = FR.modulus
MAX_LOG_DOMAIN = 28
"""The largest domain (2^28) the pure-Python fast set-up accepts: beyond it, hours and tens of GB."""


class R1cs:
    """A circom constraint system: counts and the A, B, C terms. Give ``terms`` or ``arrays``; the other is made on use.

    Attributes:
        n_wires, n_pub_out, n_pub_in, n_prv_in, n_constraints: the header's counts.
        terms: ``{"A"|"B"|"C": (constraint int64 array, wire int64 array, coefficient ints list)}``.
        arrays: the same with coefficients as an ``(n, 4)`` uint64 canonical Fr array.
    """

    def __init__(self, n_wires: int, n_pub_out: int, n_pub_in: int, n_prv_in: int, n_constraints: int, terms: dict | None = None,
                 *, arrays: dict | None = None):  # fmt: skip
        if (terms is None) == (arrays is None):
            raise ValueError("R1cs: give terms or arrays (one of them)")
        self.n_wires, self.n_pub_out, self.n_pub_in, self.n_prv_in = n_wires, n_pub_out, n_pub_in, n_prv_in
        self.n_constraints, self._terms, self._arrays = n_constraints, terms, arrays

    @property
    def n_public(self) -> int:
        return self.n_pub_out + self.n_pub_in

    @property
    def terms(self) -> dict:
        if self._terms is None:
            self._terms = {k: (cs, ws, fr_to_ints(co)) for k, (cs, ws, co) in self.arrays.items()}
        return self._terms

    @property
    def arrays(self) -> dict:
        if self._arrays is None:
            self._arrays = {k: (np.asarray(cs, dtype=np.int64).reshape(-1), np.asarray(ws, dtype=np.int64).reshape(-1),
                                fr_from_ints([int(v) % P for v in vs]).reshape(-1, 4))
                            for k, (cs, ws, vs) in self.terms.items()}  # fmt: skip
        return self._arrays


_R1CS_HEADER = struct.Struct("<IIIIQI")  # after n8 and the prime: nWires, nPubOut, nPubIn, nPrvIn, nLabels, nConstraints


def r1cs_header(path: str | Path, data: np.ndarray, secs: dict[int, list[tuple[int, int]]]) -> tuple[int, int, int, int, int]:
    """The checked header (section 1) of an r1cs read by :func:`zkgpu.groth16.formats.read_sections`:
    ``(n_wires, n_pub_out, n_pub_in, n_prv_in, n_constraints)``.

    Raises:
        FormatError: a missing or repeated section, a header of the wrong size (nothing is read past its
            section), a prime other than BLS12-381's r, or counts that do not fit (the constant, the outputs
            and the inputs are more than the wires).
    """
    for typ in (1, 2):
        if typ not in secs:
            raise FormatError(f"{path}: corrupt: {'header' if typ == 1 else 'constraint'} section ({typ}) missing")
        if len(secs[typ]) > 1:
            raise FormatError(f"{path}: corrupt: section {typ} appears {len(secs[typ])} times")
    off, size = secs[1][0]
    if size < 4:
        raise FormatError(f"{path}: corrupt: header section has {size} bytes")
    (n8,) = struct.unpack_from("<I", data, off)
    if size != 4 + n8 + _R1CS_HEADER.size:
        raise FormatError(f"{path}: corrupt: header section has {size} bytes, expected {4 + n8 + _R1CS_HEADER.size} (field size {n8})")
    prime = int.from_bytes(data[off + 4 : off + 4 + n8], "little")
    if n8 != 32 or prime != P:
        raise FormatError(f"{path}: the circuit is not for bls12381 (prime {prime:#x}); compile with --prime bls12381")
    wires, pub_out, pub_in, prv_in, _labels, cons = _R1CS_HEADER.unpack_from(data, off + 4 + n8)
    if 1 + pub_out + pub_in + prv_in > wires:
        raise FormatError(f"{path}: corrupt: {pub_out} outputs, {pub_in} public and {prv_in} private inputs and the constant "
                          f"are more than its {wires} wires")
    return wires, pub_out, pub_in, prv_in, cons


def read_r1cs(path: str | Path) -> R1cs:
    """Read a circom ``.r1cs`` (BLS12-381), checking the header, every wire below the wire count and coefficient below r
    (numba pass gives :attr:`R1cs.arrays`, else a Python loop gives :attr:`R1cs.terms`).

    Raises:
        FormatError: not an r1cs file, another curve, truncated or corrupt sections (names the constraint).
    """
    path = Path(path)
    data, secs = read_sections(path, b"r1cs", 1)
    wires, pub_out, pub_in, prv_in, cons = r1cs_header(path, data, secs)
    pos, end = secs[2][0][0], secs[2][0][0] + secs[2][0][1]
    walk = _walk_kernel() if sys.byteorder == "little" else None
    if walk is None:
        return R1cs(wires, pub_out, pub_in, prv_in, cons, _read_terms(path, data, pos, end, wires, cons))
    buf = np.frombuffer(data, dtype=np.uint8)
    st, c, k, val, pos, cs, ws, coef = walk(buf, pos, end, cons, wires, _R_BYTES)
    if st == 1:
        raise FormatError(f"{path}: truncated constraint section ({cons} constraints announced)")
    if st == 2:
        raise FormatError(f"{path}: corrupt: constraint {c} ({'ABC'[k]}) names wire {val}, the circuit has {wires}")
    if st == 3:
        raise FormatError(f"{path}: corrupt: constraint {c} ({'ABC'[k]}) has a coefficient {int.from_bytes(data[val : val + 32], 'little'):#x} not below r")
    if pos != end:
        raise FormatError(f"{path}: corrupt: constraint section has {end - pos} bytes left over")
    return R1cs(wires, pub_out, pub_in, prv_in, cons, arrays={k: (cs[i], ws[i], coef[i]) for i, k in enumerate("ABC")})


_R_BYTES = np.frombuffer(P.to_bytes(32, "little"), dtype=np.uint8).copy()


def _read_terms(path: Path, data: np.ndarray, pos: int, end: int, wires: int, cons: int) -> dict:
    """:func:`read_r1cs`'s constraint section without numba: the terms as Python ints."""
    view = memoryview(data)[:end]  # a constraint never reads past its section
    out: dict[str, tuple[list[int], list[int], list[int]]] = {k: ([], [], []) for k in "ABC"}
    tsize = 36
    try:
        for c in range(cons):
            for k in "ABC":
                (nt,) = struct.unpack_from("<I", view, pos)
                pos += 4
                if pos + nt * tsize > end:
                    raise struct.error
                cs, ws, vs = out[k]
                for _ in range(nt):
                    w = struct.unpack_from("<I", view, pos)[0]
                    v = int.from_bytes(view[pos + 4 : pos + tsize], "little")
                    if w >= wires:
                        raise FormatError(f"{path}: corrupt: constraint {c} ({k}) names wire {w}, the circuit has {wires}")
                    if v >= P:
                        raise FormatError(f"{path}: corrupt: constraint {c} ({k}) has a coefficient {v:#x} not below r")
                    ws.append(w)
                    vs.append(v)
                    cs.append(c)
                    pos += tsize
    except struct.error:
        raise FormatError(f"{path}: truncated constraint section ({cons} constraints announced)") from None
    if pos != end:
        raise FormatError(f"{path}: corrupt: constraint section has {end - pos} bytes left over")
    return {k: (np.array(v[0], dtype=np.int64), np.array(v[1], dtype=np.int64), v[2]) for k, v in out.items()}


@functools.lru_cache(maxsize=1)
def _walk_kernel() -> Any:
    """numba's pass over an r1cs constraint section (``buf`` uint8, bytes ``pos`` .. ``end``): per constraint, per
    matrix, a uint32 term count, then per term a uint32 wire and a 32-byte little-endian coefficient. Returns
    ``(status, constraint, matrix, value, pos, cs, ws, coef)``, the last three tuples over A, B, C of the terms'
    constraints and wires (int64) and coefficients (``(n, 4)`` uint64): status 0 (``pos`` where it stopped),
    1 truncated, 2 a wire not below ``wires`` (``value`` the wire), 3 a coefficient not below r (``value`` its
    offset); the first error in file order, as :func:`_read_terms` finds it. A first pass finds the term counts
    (and where the section is cut short), a second fills the arrays. None without numba."""
    numba = optional.numba()
    if numba is None:
        return None

    @numba.njit(nogil=True, cache=True)
    def walk(buf, pos, end, cons, wires, rb):  # no closure variables: numba's disk cache then hits in every process
        counts = np.zeros(3, dtype=np.int64)
        start = pos
        cut_c, cut_k = cons, 0  # the list whose count (or terms) lies past the end: the truncation, if any
        for c in range(cons):
            for k in range(3):
                if pos + 4 > end:
                    cut_c, cut_k = c, k
                    break
                nt = np.int64(buf[pos]) | (np.int64(buf[pos + 1]) << 8) | (np.int64(buf[pos + 2]) << 16) | (np.int64(buf[pos + 3]) << 24)
                if pos + 4 + nt * 36 > end:
                    cut_c, cut_k = c, k
                    break
                counts[k] += nt
                pos += 4 + nt * 36
            if cut_c < cons:
                break
        cs = (np.empty(counts[0], dtype=np.int64), np.empty(counts[1], dtype=np.int64), np.empty(counts[2], dtype=np.int64))
        ws = (np.empty(counts[0], dtype=np.int64), np.empty(counts[1], dtype=np.int64), np.empty(counts[2], dtype=np.int64))
        coef = (np.empty((counts[0], 4), dtype=np.uint64), np.empty((counts[1], 4), dtype=np.uint64),
                np.empty((counts[2], 4), dtype=np.uint64))  # fmt: skip
        fill = np.zeros(3, dtype=np.int64)
        pos = start
        for c in range(cut_c + 1 if cut_c < cons else cons):
            for k in range(3):
                if c == cut_c and k == cut_k:
                    return 1, c, k, 0, pos, cs, ws, coef
                nt = np.int64(buf[pos]) | (np.int64(buf[pos + 1]) << 8) | (np.int64(buf[pos + 2]) << 16) | (np.int64(buf[pos + 3]) << 24)
                pos += 4
                cs_k, ws_k, co_k = cs[k], ws[k], coef[k]
                t = fill[k]
                for _ in range(nt):
                    w = np.int64(buf[pos]) | (np.int64(buf[pos + 1]) << 8) | (np.int64(buf[pos + 2]) << 16) | (np.int64(buf[pos + 3]) << 24)
                    if w >= wires:
                        return 2, c, k, w, pos, cs, ws, coef
                    below = False
                    for b in range(31, -1, -1):
                        x, y = buf[pos + 4 + b], rb[b]
                        if x != y:
                            below = x < y
                            break
                    if not below:
                        return 3, c, k, pos + 4, pos, cs, ws, coef
                    cs_k[t] = c
                    ws_k[t] = w
                    for limb in range(4):
                        v = np.uint64(0)
                        for b in range(7, -1, -1):
                            v = (v << np.uint64(8)) | np.uint64(buf[pos + 4 + 8 * limb + b])
                        co_k[t, limb] = v
                    t += 1
                    pos += 36
                fill[k] = t
        return 0, 0, 0, 0, pos, cs, ws, coef

    return walk


def _lagrange_at(tau: int, log_n: int) -> list[int]:
    """``L_j(tau)`` for j < n = 2^log_n on snarkjs's roots (tau not a root of unity)."""
    n, w = 1 << log_n, snarkjs_root(log_n)
    pw, acc = [], 1
    for _ in range(n):
        pw.append(acc)
        acc = acc * w % P
    den = [(tau - x) % P for x in pw]
    # batch inversion (Montgomery's trick)
    pref, acc = [], 1
    for d in den:
        pref.append(acc)
        acc = acc * d % P
    inv_all = pow(acc, -1, P)
    inv = [0] * n
    for j in range(n - 1, -1, -1):
        inv[j] = inv_all * pref[j] % P
        inv_all = inv_all * den[j] % P
    k = (pow(tau, n, P) - 1) * pow(n, -1, P) % P
    return [k * x % P * i % P for x, i in zip(pw, inv, strict=True)]


def _mul_chunk(args: tuple[str, list[int]]) -> bytes:
    """Fixed-base multiples of the generator, as snarkjs stores points (Montgomery-form Fq, LE)."""
    ark = optional.arkworks()
    group, scalars = args
    g = ark.G1Point() if group == "G1" else ark.G2Point()
    q, R = FQ.modulus, FQ.R
    out = bytearray()
    for k in scalars:
        raw = (g * ark.Scalar.from_le_bytes((k % P).to_bytes(32, "little"))).to_xy_bytes_le()
        for i in range(0, len(raw), 48):
            out += (int.from_bytes(raw[i : i + 48], "little") * R % q).to_bytes(48, "little")
    return bytes(out)


def _points(group: str, scalars: list[int], pool: ProcessPoolExecutor | None) -> bytes:
    if pool is None or len(scalars) < 2048:
        return _mul_chunk((group, scalars))
    step = max(1024, len(scalars) // (8 * (os.cpu_count() or 1)))
    return b"".join(pool.map(_mul_chunk, [(group, scalars[i : i + step]) for i in range(0, len(scalars), step)]))


def _section(typ: int, payload: bytes) -> bytes:
    return struct.pack("<IQ", typ, len(payload)) + payload


def mulchain_r1cs(n: int, x: int = 3, y: int = 5) -> tuple[R1cs, list[int]]:
    """The constraint system and witness circom2 produces for ``mulchain-N``, built in Python term for term.
    Wires: 0 = 1, 1 = out, 2 = y (public), 3 = x, 4 + i = t[i]; constraints ``(-x) * y = -t[0]``,
    ``(-t[i-1]) * x = y - t[i]``.

    Raises:
        ValueError: n < 2.
    """
    if n < 2:
        raise ValueError(f"mulchain_r1cs needs n >= 2, got {n}")
    neg = P - 1
    t = [x * y % P]
    for _ in range(1, n):
        t.append((t[-1] * x + y) % P)
    wire_t = [4 + i for i in range(n - 1)] + [1]  # t[N-1] is the output wire
    a = ([0], [3], [neg])
    b = ([0], [2], [1])
    c = ([0], [4], [neg])
    for i in range(1, n):
        for vec, (wire, val) in ((a, (wire_t[i - 1], neg)), (b, (3, 1))):
            vec[0].append(i)
            vec[1].append(wire)
            vec[2].append(val)
        terms = sorted([(2, 1), (wire_t[i], neg)])  # by wire, as circom writes them
        for w, v in terms:
            c[0].append(i)
            c[1].append(w)
            c[2].append(v)
    arr = {k: (np.array(v[0], dtype=np.int64), np.array(v[1], dtype=np.int64), v[2]) for k, v in zip("ABC", (a, b, c), strict=True)}
    witness = [1, t[-1], y % P, x % P] + t[:-1]
    return R1cs(n_wires=n + 3, n_pub_out=1, n_pub_in=1, n_prv_in=1, n_constraints=n, terms=arr), witness


def write_wtns(path: str | Path, values: list[int]) -> None:
    """Write a ``.wtns`` file (version 2, BLS12-381 r; :mod:`zkgpu.groth16.formats`), never replacing one.

    Raises:
        FileExistsError: ``path`` exists.
    """
    hdr = struct.pack("<I", 32) + P.to_bytes(32, "little") + struct.pack("<I", len(values))
    body = b"".join((v % P).to_bytes(32, "little") for v in values)
    _write_new(path, b"wtns" + struct.pack("<II", 2, 2) + _section(1, hdr) + _section(2, body))


def _write_new(path: str | Path, data: bytes) -> None:
    """Create ``path`` exclusively and atomically (:func:`zkgpu.groth16.proof.write_exclusive`: a temporary file
    in its folder, created with its parents if missing, hard-linked to the name, ``FileExistsError`` if it exists)."""
    write_exclusive({path: data})


def fast_setup(r1cs_path: str | Path | R1cs, zkey_path: str | Path, *, seed: int = 0, workers: int | None = None) -> dict:
    """Write an insecure test ``.zkey`` for ``r1cs_path`` (a path or :class:`R1cs`) to ``zkey_path``, toxic waste from
    ``seed``, point multiplications on ``workers`` processes (default all cores).

    Returns:
        ``{"n_vars", "n_public", "domain_size", "coefficients"}``.

    Raises:
        FormatError: a bad r1cs, or a domain above 2^28 (:data:`MAX_LOG_DOMAIN`).
        FileExistsError: ``zkey_path`` exists (created exclusively).
    """
    r1 = r1cs_path if isinstance(r1cs_path, R1cs) else read_r1cs(r1cs_path)
    n_pub = r1.n_public
    m = r1.n_constraints
    need = m + n_pub + 1
    log_n = max(1, (need - 1).bit_length())
    if log_n > MAX_LOG_DOMAIN:
        raise FormatError(f"{r1cs_path if not isinstance(r1cs_path, R1cs) else 'the r1cs'}: {m} constraints need a domain of 2^{log_n}; the fast set-up stops at 2^{MAX_LOG_DOMAIN}")
    if Path(zkey_path).exists() or Path(zkey_path).is_symlink():
        raise FileExistsError(errno.EEXIST, "exists: the fast set-up never replaces a key", str(zkey_path))
    n = 1 << log_n
    rng = random.Random(seed)
    tau, alpha, beta, gamma, delta = (rng.randrange(2, P) for _ in range(5))
    lag = np.empty(n, dtype=object)
    lag[:] = _lagrange_at(tau, log_n)
    nv = r1.n_wires
    polys = {}
    for k in "ABC":
        cs, ws, vs = r1.terms[k]
        if k == "A":  # the public-input constraints
            cs = np.concatenate([cs, m + np.arange(n_pub + 1)])
            ws = np.concatenate([ws, np.arange(n_pub + 1)])
            vs = list(vs) + [1] * (n_pub + 1)
        acc = np.zeros(nv, dtype=object)
        coef = np.empty(len(vs), dtype=object)
        coef[:] = vs
        np.add.at(acc, ws, coef * lag[cs])
        polys[k] = acc % P
    u, v, w = polys["A"], polys["B"], polys["C"]
    lc = (beta * u + alpha * v + w) % P
    gi, di = pow(gamma, -1, P), pow(delta, -1, P)
    ic = (lc[: n_pub + 1] * gi % P).tolist()
    cq = (lc[n_pub + 1 :] * di % P).tolist()
    lag2 = _lagrange_at(tau, log_n + 1)
    hq = [lag2[2 * i + 1] * di % P for i in range(n)]
    workers = workers or os.cpu_count() or 1
    with ProcessPoolExecutor(max_workers=workers) if workers > 1 else _NoPool() as pool:
        pts = {
            "hdr1": _points("G1", [alpha, beta], pool),
            "hdr2": _points("G2", [beta, gamma], pool),
            "d1": _points("G1", [delta], pool),
            "d2": _points("G2", [delta], pool),
            3: _points("G1", ic, pool),
            5: _points("G1", u.tolist(), pool),
            6: _points("G1", v.tolist(), pool),
            7: _points("G2", v.tolist(), pool),
            8: _points("G1", cq, pool),
            9: _points("G1", hq, pool),
        }
    # the coefficient section: A and B terms (and the public constraints), by constraint
    rows = []
    for mat, k in ((0, "A"), (1, "B")):
        cs, ws, vs = r1.terms[k]
        rows += [(int(c), mat, int(s), val) for c, s, val in zip(cs, ws, vs, strict=True)]
    rows += [(m + s, 0, s, 1) for s in range(n_pub + 1)]
    rows.sort(key=lambda t: t[0])
    r2 = FR.R2
    coefs = struct.pack("<I", len(rows)) + b"".join(
        struct.pack("<III", mat, c, s) + (val * r2 % P).to_bytes(32, "little") for c, mat, s, val in rows
    )
    header = (
        struct.pack("<I", 48) + FQ.modulus.to_bytes(48, "little") + struct.pack("<I", 32) + P.to_bytes(32, "little")
        + struct.pack("<III", nv, n_pub, n)
        + pts["hdr1"] + pts["hdr2"][:192] + pts["hdr2"][192:] + pts["d1"] + pts["d2"]
    )  # fmt: skip
    body = (
        _section(1, struct.pack("<I", 1)) + _section(2, header) + _section(3, pts[3]) + _section(4, coefs)
        + _section(5, pts[5]) + _section(6, pts[6]) + _section(7, pts[7]) + _section(8, pts[8]) + _section(9, pts[9])
        + _section(10, struct.pack("<I", 0))
    )  # fmt: skip
    _write_new(zkey_path, b"zkey" + struct.pack("<II", 1, 10) + body)
    return {"n_vars": nv, "n_public": n_pub, "domain_size": n, "coefficients": len(rows)}


class _NoPool:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def main(argv: list[str] | None = None) -> int:
    """``python -m zkgpu.groth16.setup mulchain N FOLDER``: ``circuit.zkey`` (fast set-up) and
    ``circuit.wtns`` of :func:`mulchain_r1cs` in FOLDER, without node; prints sizes and seconds."""
    args = sys.argv[1:] if argv is None else argv
    limit = (1 << MAX_LOG_DOMAIN) - 3  # N constraints + 2 public signals + 1 fill the domain
    if len(args) != 3 or args[0] != "mulchain" or not args[1].isdigit() or not 2 <= int(args[1]) <= limit:
        print(f"usage: python -m zkgpu.groth16.setup mulchain N FOLDER   (2 <= N <= {limit}, the fast set-up's 2^{MAX_LOG_DOMAIN} domain)", file=sys.stderr)
        return 2
    folder = Path(args[2])
    outs = [folder / "circuit.zkey", folder / "circuit.wtns"]
    for out in outs:
        if out.exists() or out.is_symlink():
            print(f"error: {out} exists: the set-up never replaces a circuit's key or witness (choose another FOLDER)", file=sys.stderr)
            return 2
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        print(f"error: cannot create {folder}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    r1, wit = mulchain_r1cs(int(args[1]))
    try:
        info = fast_setup(r1, outs[0])
        write_wtns(outs[1], wit)
    except FileExistsError as exc:
        print(f"error: {exc.filename} was created meanwhile: the set-up never replaces it", file=sys.stderr)
        return 2
    print(json.dumps(dict(info, seconds=round(time.perf_counter() - t0, 2), folder=str(folder))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
