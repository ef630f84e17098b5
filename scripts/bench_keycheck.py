"""Cost of zkgpu prove's input checks at 2^LOG points (issue 22): the key's point checks
(:mod:`zkgpu.groth16.keycheck`: on-curve, batched subgroup test) for G1 and G2, and the witness
check against an r1cs of 2^LOG constraints (mulchain). Prints one JSON line per measurement
(wall-clock seconds, median of --repeat runs); the points are 1024 distinct subgroup points tiled
(the checks' cost does not depend on which points they are).

    python scripts/bench_keycheck.py --log 19 [--repeat 3] [--rounds 16] [--read]

``--read`` also writes a synthetic 2^LOG key (the committed mulchain fixture's points tiled: valid
points, any order) to a temporary folder and times ``read_zkey`` without and with the point checks
(the second call with checks hits the content cache: that is the cost of a repeated read).
"""

from __future__ import annotations

import argparse
import json
import statistics
import struct
import tempfile
import time
from pathlib import Path

import numpy as np

from zkgpu.core import optional
from zkgpu.groth16 import formats, keycheck
from zkgpu.groth16.setup import mulchain_r1cs


def _tiled(group: str, n: int) -> np.ndarray:
    ark = optional.arkworks()
    g, limbs = (ark.G1Point(), 12) if group == "G1" else (ark.G2Point(), 24)
    base = b"".join((g * ark.Scalar(k + 2)).to_xy_bytes_le() for k in range(min(n, 1024)))
    arr = np.frombuffer(base, dtype="<u8").astype(np.uint64).reshape(-1, limbs)
    return np.ascontiguousarray(np.resize(arr, (n, limbs)))


def _median(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


FIXTURE = Path(formats.__file__).resolve().parent / "fixtures" / "circuit.zkey"


def synthetic_key(log: int, path: Path) -> None:
    """A valid-looking 2^log key: the fixture's header, its points tiled, 2^log coefficients."""
    raw = FIXTURE.read_bytes()
    _, secs = formats.read_sections(FIXTURE, b"zkey", 2)
    n = 1 << log

    def sec(t: int) -> bytes:
        off, size = secs[t][0]
        return raw[off : off + size]

    def tile(t: int, size: int, count: int) -> bytes:
        b = sec(t)
        return (b * (count * size // len(b) + 1))[: count * size]

    hdr = bytearray(sec(2))
    struct.pack_into("<III", hdr, 4 + 48 + 4 + 32, n, 2, n)  # nVars, nPublic, domainSize
    coef = np.zeros(n, dtype=[("m", "<u4"), ("c", "<u4"), ("s", "<u4"), ("v", "V32")])
    coef["m"] = np.arange(n) & 1
    coef["c"] = np.arange(n)
    coef["s"] = np.arange(n)
    body = {1: sec(1), 2: bytes(hdr), 3: tile(3, 96, 3), 4: struct.pack("<I", n) + coef.tobytes(),
            5: tile(5, 96, n), 6: tile(5, 96, n), 7: tile(7, 192, n), 8: tile(5, 96, n - 3), 9: tile(9, 96, n), 10: sec(10)}  # fmt: skip
    out = b"zkey" + struct.pack("<II", 1, len(body)) + b"".join(struct.pack("<IQ", t, len(b)) + b for t, b in body.items())
    path.write_bytes(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log", type=int, default=19)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=keycheck.ROUNDS)
    ap.add_argument("--read", action="store_true", help="also time read_zkey on a synthetic 2^LOG key")
    args = ap.parse_args()
    n = 1 << args.log
    if args.read:
        with tempfile.TemporaryDirectory() as tmp:
            key = Path(tmp) / "synthetic.zkey"
            synthetic_key(args.log, key)
            plain = _median(lambda: formats.read_zkey(key, check=False), args.repeat)
            t = time.perf_counter()
            formats.read_zkey(key)
            first = time.perf_counter() - t
            again = _median(lambda: formats.read_zkey(key), args.repeat)
            print(json.dumps({"check": "read_zkey", "n": n, "bytes": key.stat().st_size, "parse_s": round(plain, 3),
                              "parse_and_check_s": round(first, 3), "cached_s": round(again, 3)}))  # fmt: skip
    for group in ("G1", "G2"):
        arr = _tiled(group, n)
        on = _median(lambda a=arr, g=group: keycheck.first_off_curve(a, g), args.repeat)
        sub = _median(lambda a=arr, g=group: keycheck.subgroup_batch(a, g, rounds=args.rounds), args.repeat)
        print(json.dumps({"check": f"{group} points", "n": n, "on_curve_s": round(on, 3), "subgroup_s": round(sub, 3), "rounds": args.rounds}))
    r1, wit = mulchain_r1cs(n)
    vals = [int(v) for v in wit]
    wc = _median(lambda: keycheck.check_constraints(r1, vals), args.repeat)
    print(json.dumps({"check": "witness vs r1cs", "constraints": r1.n_constraints, "seconds": round(wc, 3)}))


if __name__ == "__main__":
    main()
