"""The GPU MSM's kernel variants side by side in one process: the last step, the rounds' chunk starts, the chunk.

    python3 scripts/msm_variants_compare.py BASE_DIR [--sizes 26,24,22] [--repeat 5] [--porep-windows 12-16]

Per log2 size: device-resident points (zkgpu.gpu.msm.bases) and scalars (from 2^26 drawn on the GPU, uniform below 2^254),
uniform and PoRep-like (as ``zkgpu bench msm``:
the PoRep-like window from ``c="sparse"``, counted inside the timing); for each variant (:data:`VARIANTS`: the
final step one thread or one warp (zkgpu.gpu.msm.final), the rounds' chunk starts by search or from a table
(zkgpu.gpu.msm.reduce.ROUND_STARTS), the short runs summed before the rounds or not (SHORT_FIRST), the rounds' chunk
(ROUND_CHUNK), the level-0 chunk (zkgpu.gpu.msm.pippenger.CHUNK), the window reduction's threads (msm_final.REDUCE_THREADS,
MIN_RANGE)) the MSM's total time (CUDA events, warm-up
excluded, median of ``--repeat``) and one per-phase breakdown (zkgpu.gpu.msm.pippenger.Phases); then, with the shipped
defaults, both totals over points prepared once (``msm.prepare_points``, outside the timing) and the PoRep-like
total at each window of ``--porep-windows`` (at the first size and 2^22). Every result is
compared with the first variant's on the same input (they must agree bit for bit).

Writes a fresh run folder BASE_DIR/<gpu>-<date>-bench-msm-variants/ (zkgpu.core.manifest): manifest.json and
msm_variants.csv (log2_n, variant, c, scalars, what = total | phase:<name>, median_ms, min_ms, max_ms, repeat;
rewritten after each size); prints the totals, the phase table and the disagreements (exit 1 if any).
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from zkgpu.core import cuda as _cuda
from zkgpu.gpu.msm import bases, pippenger as msm, final as msm_final, reduce as msm_reduce, window as msm_window
from zkgpu.app import settings
from zkgpu.app.bench.msm import _porep_scalars
from zkgpu.arith.field import fr_random
from zkgpu.core.manifest import build_manifest, new_run_dir, write_json_new

# name -> (final, inverse, round_starts, short_first, round_chunk, chunk, reduce_threads, min_range); the first is
# the session-3 baseline (one-thread final, every partial through the rounds, 2^17 reduction threads), SWEEP the
# shipped defaults
VARIANTS = {
    "serial/search/all/L64": ("serial", "fermat", "search", False, 64, 64, 1 << 17, 1),
    "warp/table/all/L64": ("warp", "binary", "table", False, 64, 64, 1 << 17, 1),
    "warp/table/short-R16/L64": ("warp", "binary", "table", True, 16, 64, 1 << 17, 1),
    "warp/table/short-R16/L128": ("warp", "binary", "table", True, 16, 128, 1 << 17, 1),
    "warp/table/short-R16/L64/W16": ("warp", "binary", "table", True, 16, 64, 1 << 16, 1),
    "warp/table/short-R16/L64/W15": ("warp", "binary", "table", True, 16, 64, 1 << 15, 1),
    "shipped": ("warp", "binary", "table", True, 0, 64, 1 << 16, 16),
}
LARGE_VARIANTS = ("serial/search/all/L64", "warp/table/all/L64", "shipped")  # at 2^26 (time)
SWEEP = "shipped"  # the variant of the PoRep-like window sweep and the prepared-points rows


def _use(name: str) -> None:
    final, inverse, starts, short_first, round_chunk, chunk, reduce_threads, min_range = VARIANTS[name]
    msm_final.configure(final=final, inverse=inverse, reduce_threads=reduce_threads)
    msm_final.MIN_RANGE = min_range
    msm_reduce.configure(round_starts=starts, short_first=short_first, round_chunk=round_chunk)
    msm.configure(chunk=chunk)


def _device_scalars(cp, n: int, seed: int) -> dict:
    """Uniform scalars below 2^254 (< r) and PoRep-like ones (45% zero, 45% one) drawn on the GPU: at 2^26 the
    host's fr_random alone takes tens of seconds of the run's time limit."""
    cp.random.seed(seed)
    words = (cp.random.random((n, 8)) * 2.0**32).astype(cp.uint32)
    uni = cp.ascontiguousarray(words).view(cp.uint64).reshape(n, 4)
    uni[:, 3] &= cp.uint64((1 << 62) - 1)
    u = cp.random.random(n)
    porep = uni * (u >= 0.9).astype(cp.uint64)[:, None]  # 90% zero rows
    porep[:, 0] += ((u >= 0.45) & (u < 0.9)).astype(cp.uint64)  # half of them one
    return {"uniform": uni, "porep": porep}


def _windows(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1)) if lo else []


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base", type=Path, help="where the run folder is made (e.g. data/)")
    ap.add_argument("--sizes", default="26,24,22")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--porep-windows", default="")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--variants", default="", help="comma list of VARIANTS names (default: all; at 2^26 LARGE_VARIANTS)")
    args = ap.parse_args(argv)
    settings.apply()  # ZKGPU_COMMIT / ZKGPU_DIRTY (a copy without .git) reach the manifest, as in the zkgpu command
    cp = _cuda.cupy()
    out = new_run_dir("bench-msm-variants", base=args.base)
    write_json_new(out / "manifest.json", build_manifest(
        kind="bench-msm-variants", sizes_log2=args.sizes, repeat=args.repeat, warmup=1, seed=args.seed,
        porep_windows=args.porep_windows, variants={k: list(v) for k, v in VARIANTS.items()},
        timing="CUDA events (zkgpu.core.cuda.benchmark), medians, ms; phases: one run (zkgpu.gpu.msm.pippenger.Phases)",
        files=["msm_variants.csv"]))
    print(f"writing {out}", flush=True)
    rng = np.random.default_rng(args.seed)
    rows: list[dict] = []
    disagree: list[str] = []

    def add(lg: int, variant: str, c: int, scal: str, what: str, times: list[float]) -> None:
        rows.append(dict(log2_n=lg, variant=variant, c=c, scalars=scal, what=what, median_ms=float(np.median(times)),
                         min_ms=min(times), max_ms=max(times), repeat=len(times)))
        if what == "total":
            print(f"2^{lg} {variant:>24} c={c:2d} {scal:>7}: median {np.median(times):9.3f} ms", flush=True)

    for k, lg in enumerate(int(s) for s in args.sizes.split(",") if s.strip()):
        n = 1 << lg
        pts = bases.generate_points(n, args.seed)
        if lg >= 26:
            scalars = _device_scalars(cp, n, args.seed)
        else:
            scalars = {"uniform": cp.asarray(fr_random(n, rng)), "porep": cp.asarray(_porep_scalars(n, rng))}
        windows = {"uniform": msm.window_bits(n), "porep": msm_window.sparse_window_bits(scalars["porep"])}
        first: dict[str, np.ndarray] = {}
        names = LARGE_VARIANTS if lg >= 26 else tuple(VARIANTS)
        if args.variants:
            names = tuple(v for v in args.variants.split(",") if v)
            unknown = [v for v in names if v not in VARIANTS]
            if unknown:
                raise SystemExit(f"unknown variants {unknown}; known: {', '.join(VARIANTS)}")
        for name in names:
            _use(name)
            for scal, sc in scalars.items():
                c = windows[scal]
                got = cp.asnumpy(msm.msm_device(pts, sc, c))
                if first.setdefault(scal, got) is not got and not (got == first[scal]).all():
                    disagree.append(f"2^{lg} {scal} {name}")
                arg = "sparse" if scal == "porep" else None
                res = _cuda.benchmark(functools.partial(msm.msm_device, pts, sc, arg), warmup=1, repeat=args.repeat)
                add(lg, name, c, scal, "total", list(res.times_ms))
                ph = msm.Phases(True)
                msm.msm_device(pts, sc, arg, phases=ph)
                for pname, ms in ph.result().items():
                    add(lg, name, c, scal, f"phase:{pname}", [ms])
        _use(SWEEP)
        mont = msm.prepare_points(pts)  # points checked and in Montgomery form once (as sppark's preloaded msm_t)
        for scal, sc in scalars.items():
            arg = "sparse" if scal == "porep" else None
            got = cp.asnumpy(msm.msm_device(None, sc, arg, mont=mont))
            if not (got == first[scal]).all():
                disagree.append(f"2^{lg} {scal} prepared")
            res = _cuda.benchmark(functools.partial(msm.msm_device, None, sc, arg, mont=mont), warmup=1, repeat=args.repeat)
            add(lg, SWEEP + " prepared", windows[scal], scal, "total", list(res.times_ms))
        del mont
        for c in _windows(args.porep_windows) if k == 0 or lg == 22 else []:
            sc = scalars["porep"]
            got = cp.asnumpy(msm.msm_device(pts, sc, c))
            if not (got == first["porep"]).all():
                disagree.append(f"2^{lg} porep c={c}")
            res = _cuda.benchmark(functools.partial(msm.msm_device, pts, sc, c), warmup=1, repeat=args.repeat)
            add(lg, SWEEP + " sweep", c, "porep", "total", list(res.times_ms))
        del pts, scalars
        cp.get_default_memory_pool().free_all_blocks()
        pd.DataFrame(rows).to_csv(out / "msm_variants.csv", index=False)

    df = pd.DataFrame(rows)
    tot = df[df.what == "total"]
    print(tot.pivot_table(index=["log2_n", "scalars", "c"], columns="variant", values="median_ms").to_string(
        float_format=lambda v: f"{v:.2f}"))
    ph = df[df.what.str.startswith("phase:")]
    print(ph.pivot_table(index=["log2_n", "scalars", "what"], columns="variant", values="median_ms").to_string(
        float_format=lambda v: f"{v:.2f}"))
    print("results that disagree with the first variant's:", disagree or "none")
    return 1 if disagree else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
