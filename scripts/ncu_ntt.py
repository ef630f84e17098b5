"""Profile target for ncu (issue 13): one forward NTT "nr" and one compute_h at 2^24 with the given
kernel, after a warm-up, so `ncu -k regex:ntt_fused --launch-skip N` sees steady-state launches.

    ncu --clock-control none -k regex:ntt_ -c 4 python3 scripts/ncu_ntt.py fused-r4 24
"""

from __future__ import annotations

import sys

import numpy as np

from zkgpu import _cuda, ntt
from zkgpu.bench.ntt import kernel_settings
from zkgpu.fr_device import to_montgomery
from zkgpu.qap import compute_h_inplace


def main(spec: str = "fused", log_n: int = 24) -> None:
    cp = _cuda.cupy()
    n = 1 << log_n
    host = np.random.default_rng(1).integers(0, 2**64, size=(n, 4), dtype=np.uint64)
    host[:, 3] >>= np.uint64(2)
    d = cp.asarray(host)
    to_montgomery(d)
    e, f = d.copy(), d.copy()
    with kernel_settings(spec):
        ntt.ntt_inplace(d, order="nr")  # warm-up (tables, module load)
        cp.cuda.Device().synchronize()
        ntt.ntt_inplace(d, order="nr")
        compute_h_inplace(d, e, f)
    cp.cuda.Device().synchronize()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "fused", int(sys.argv[2]) if len(sys.argv) > 2 else 24)
