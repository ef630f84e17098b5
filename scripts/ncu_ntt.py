"""Profile target for ncu (issue 13): per kernel spec (comma-separated), one forward NTT "nr" at 2^L after a
warm-up one, then (unless the third argument is "no-h") one compute_h, so `ncu -k regex:ntt_pass --launch-skip N`
sees steady-state launches. With specs A,B and "no-h" the ntt_pass launches are A's warm-up passes, A's measured
ones, then B's (3 each at 2^24).

    ncu --clock-control none -k regex:ntt_ -c 4 python3 scripts/ncu_ntt.py fused-r4 24
    ncu --clock-control none -k regex:ntt_pass -c 12 python3 scripts/ncu_ntt.py stagewise,stagewise-sh 24 no-h
"""

from __future__ import annotations

import sys

import numpy as np

from zkgpu.core import cuda as _cuda
from zkgpu.gpu.ntt import transform as ntt
from zkgpu.app.bench.ntt import kernel_settings
from zkgpu.gpu.fr_device import to_montgomery
from zkgpu.gpu.ntt.qap import compute_h_inplace


def main(specs: str = "fused", log_n: int = 24, with_h: bool = True) -> None:
    cp = _cuda.cupy()
    n = 1 << log_n
    host = np.random.default_rng(1).integers(0, 2**64, size=(n, 4), dtype=np.uint64)
    host[:, 3] >>= np.uint64(2)
    d = cp.asarray(host)
    to_montgomery(d)
    e, f = d.copy(), d.copy()
    for spec in specs.split(","):
        with kernel_settings(spec):
            ntt.ntt_inplace(d, order="nr")  # warm-up (tables, module load)
            cp.cuda.Device().synchronize()
            ntt.ntt_inplace(d, order="nr")
            if with_h:
                compute_h_inplace(d, e, f)
        cp.cuda.Device().synchronize()


if __name__ == "__main__":
    args = sys.argv[1:]
    main(args[0] if args else "fused", int(args[1]) if len(args) > 1 else 24, not (len(args) > 2 and args[2] == "no-h"))
