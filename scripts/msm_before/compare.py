"""Mid-session H200 aid (removed after the run): the MSM before (msm_before.py + msm_before.cu: zkgpu/msm.py
and msm.cu of the parent commit, with their host read-backs) against after (zkgpu.msm: no host sync) in one
process: equal results, sync counts, CUDA-event medians (idle, and with 2 pure-Python threads holding the
GIL as synthesis does), the host time to enqueue one call, and one Phases breakdown each.

    python3 scripts/msm_before/compare.py 20 22 24 > log; CSV to $OUT/msm-before-after.csv
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import msm_before as old  # noqa: E402

from zkgpu import _cuda, bases, msm  # noqa: E402
from zkgpu.field import fr_random  # noqa: E402

cp = _cuda.cupy()
_OLD_SRC = (HERE / "msm_before.cu").read_text()


@functools.cache
def _old_module():
    opts = ("-std=c++17", f"-I{_cuda.KERNEL_DIR}", "-DZKGPU_BEFORE=1")
    return cp.RawModule(code=_OLD_SRC, options=opts)


def _old_k(name):
    if name in old._FR_OPS_KERNELS:
        return _cuda.get_kernel("fr_ops", name)
    return _old_module().get_function(name)


old._k = _old_k


def porep(n, rng):
    sc = fr_random(n, rng)
    u = rng.random(n)
    sc[u < 0.45] = 0
    ones = (u >= 0.45) & (u < 0.9)
    sc[ones] = 0
    sc[ones, 0] = 1
    return sc


class GilLoad:
    def __init__(self, k):
        self.k, self.stop, self.threads = k, False, []

    def _spin(self):
        x = 0
        while not self.stop:
            for i in range(1000):
                x += i * i

    def __enter__(self):
        self.threads = [threading.Thread(target=self._spin, daemon=True) for _ in range(self.k)]
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *a):
        self.stop = True
        for t in self.threads:
            t.join()


def main(logs):
    rows = []
    out = Path(os.environ.get("OUT", ".")) / "msm-before-after.csv"
    rng = np.random.default_rng(7)
    for lg in logs:
        n = 1 << lg
        pts = bases.generate_points(n, 3)
        mont = msm.prepare_points(pts)
        for kind in ("uniform", "porep"):
            sc = cp.asarray(fr_random(n, rng) if kind == "uniform" else porep(n, rng))
            res = {}
            for label, mod in (("before", old), ("after", msm)):
                fn = functools.partial(mod.msm_device, None, sc, None, mont=mont, deferred=mod.DeferredCheck())
                res[label] = cp.asnumpy(fn())
                s0 = _cuda.sync_counts()
                fn()
                s1 = _cuda.sync_counts()
                syncs = {k: v - s0.get(k, 0) for k, v in s1.items() if v != s0.get(k, 0)}
                cp.cuda.get_current_stream().synchronize()
                t0 = time.perf_counter()
                fn()
                host_ms = (time.perf_counter() - t0) * 1e3
                cp.cuda.get_current_stream().synchronize()
                idle = _cuda.benchmark(fn, warmup=0, repeat=3).median_ms
                with GilLoad(2):
                    loaded = _cuda.benchmark(fn, warmup=0, repeat=3).median_ms
                ph = mod.Phases(True)
                mod.msm_device(None, sc, None, ph, mont=mont)
                phases = ph.result()
                row = dict(log2_n=lg, scalars=kind, version=label, median_ms=round(idle, 3), gil_load2_ms=round(loaded, 3),
                           host_enqueue_ms=round(host_ms, 3), syncs=sum(syncs.values()), sync_names=";".join(sorted(syncs)),
                           **{f"phase_{k}": round(v, 3) for k, v in phases.items()})
                rows.append(row)
                print(row, flush=True)
                pd.DataFrame(rows).to_csv(out, index=False)
            print(f"2^{lg} {kind}: before == after: {bool((res['before'] == res['after']).all())}", flush=True)
        del pts, mont, sc
        cp.get_default_memory_pool().free_all_blocks()
    df = pd.DataFrame(rows)
    print(df[["log2_n", "scalars", "version", "median_ms", "gil_load2_ms", "host_enqueue_ms", "syncs"]].to_string(index=False))


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [20, 22, 24])
