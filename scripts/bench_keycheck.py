"""Cost of zkgpu prove's input checks at 2^LOG points (issue 22): the key's point checks
(:mod:`zkgpu.groth16.keycheck`: on-curve, batched subgroup test) for G1 and G2, and the witness
check against an r1cs of 2^LOG constraints (mulchain). Prints one JSON line per measurement
(wall-clock seconds, median of --repeat runs); the points are 1024 distinct subgroup points tiled
(the checks' cost does not depend on which points they are).

    python scripts/bench_keycheck.py --log 19 [--repeat 3] [--rounds 16]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

from zkgpu.core import optional
from zkgpu.groth16 import keycheck
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log", type=int, default=19)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=keycheck.ROUNDS)
    args = ap.parse_args()
    n = 1 << args.log
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
