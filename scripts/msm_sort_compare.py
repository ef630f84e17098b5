"""The GPU MSM with CuPy's 64-bit sort against zkgpu.gpu.msm.devsort's CUB bucket-field sort, and the window sweep.

    python3 scripts/msm_sort_compare.py BASE_DIR [--sizes 24,22,20] [--windows 13-22] [--repeat 5]

Per log2 size: device-resident points (zkgpu.gpu.msm.bases) and scalars (uniform, and PoRep-like as in
``zkgpu bench msm``); for each sort backend (``devsort.configure(backend=...)``: ``cupy`` = the MSM's
sort before devsort, ``cub`` = devsort) the MSM's total time (CUDA events, warm-up excluded, median of
``--repeat``) and one per-phase breakdown (zkgpu.gpu.msm.pippenger.Phases); the host syncs counted around one MSM;
then, with the CUB sort, the total at every window c of ``--windows``. Every result point is compared
with the first one of its size and scalars (same input, so every backend and window must agree).

Writes a fresh run folder BASE_DIR/<gpu>-<date>-bench-msm-sort/ (zkgpu.core.manifest): manifest.json, msm_sort.csv
(log2_n, sort, c, scalars, what = total | phase:<name>, median_ms, min_ms, max_ms, repeat; rewritten after
each size, so a run cut short keeps the sizes it finished) and syncs.json (host syncs per size and sort, the
results that disagree); prints the sync counts, the agreement and the best c per size (from the CSV rows).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from zkgpu.core import cuda as _cuda
from zkgpu.gpu.msm import bases, devsort, pippenger as msm
from zkgpu.app import settings
from zkgpu.app.bench.msm import _porep_scalars
from zkgpu.arith.field import fr_random
from zkgpu.core.manifest import build_manifest, new_run_dir, write_json_new


def _windows(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base", type=Path, help="where the run folder is made (e.g. data/)")
    ap.add_argument("--sizes", default="24,22,20")
    ap.add_argument("--windows", default="13-22", help="c range of the window sweep (CUB sort), e.g. 13-18; '' skips it")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--sweep-repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    settings.apply()  # ZKGPU_COMMIT / ZKGPU_DIRTY (a copy without .git) reach the manifest, as in the zkgpu command
    cp = _cuda.cupy()
    out = new_run_dir("bench-msm-sort", base=args.base)
    lib = devsort.library_path()
    write_json_new(out / "manifest.json", build_manifest(
        kind="bench-msm-sort", sizes_log2=args.sizes, windows=args.windows, repeat=args.repeat,
        sweep_repeat=args.sweep_repeat, warmup=1, seed=args.seed, msm_settings=msm.settings(),
        devsort_available=devsort.available(), devsort_library=lib.name if lib else None,
        timing="CUDA events (zkgpu.core.cuda.benchmark), medians, ms; phases: one run (zkgpu.gpu.msm.pippenger.Phases)",
        files=["msm_sort.csv", "syncs.json"]))
    print(f"devsort available: {devsort.available()} ({lib}); writing {out}", flush=True)
    rng = np.random.default_rng(args.seed)
    rows: list[dict] = []
    report: dict = {"syncs": {}, "disagree": []}

    def add(lg: int, sort: str, c: int, scal: str, what: str, times: list[float]) -> None:
        rows.append(dict(log2_n=lg, sort=sort, c=c, scalars=scal, what=what, median_ms=float(np.median(times)),
                         min_ms=min(times), max_ms=max(times), repeat=len(times)))
        if what == "total":
            print(f"2^{lg} {sort:>4} c={c:2d} {scal:>7}: median {np.median(times):9.3f} ms", flush=True)

    for lg in (int(s) for s in args.sizes.split(",") if s.strip()):
        n = 1 << lg
        c0 = msm.window_bits(n)
        pts = bases.generate_points(n, args.seed)
        scalars = {"uniform": cp.asarray(fr_random(n, rng)), "porep": cp.asarray(_porep_scalars(n, rng))}
        first: dict[str, np.ndarray] = {}

        def check(scal: str, out, label: str, first=first, lg=lg) -> None:
            got = cp.asnumpy(out)
            if scal not in first:
                first[scal] = got
            elif not (got == first[scal]).all():
                report["disagree"].append(f"2^{lg} {scal} {label}")

        for sort in ("cupy", "cub"):
            devsort.configure(backend=sort)
            for scal, sc in scalars.items():
                check(scal, msm.msm_device(pts, sc), sort)
                res = _cuda.benchmark(functools.partial(msm.msm_device, pts, sc, None), warmup=1, repeat=args.repeat)
                add(lg, sort, c0, scal, "total", list(res.times_ms))
                ph = msm.Phases(True)
                msm.msm_device(pts, sc, None, phases=ph)
                for name, ms in ph.result().items():
                    add(lg, sort, c0, scal, f"phase:{name}", [ms])
            before = _cuda.sync_counts()
            cp.asnumpy(msm.msm_device(pts, scalars["uniform"]))
            after = _cuda.sync_counts()
            report["syncs"][f"2^{lg} {sort}"] = {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}
        devsort.configure(backend="auto")
        for c in _windows(args.windows) if args.windows else []:
            for scal, sc in scalars.items():
                check(scal, msm.msm_device(pts, sc, c), f"cub c={c}")
                res = _cuda.benchmark(functools.partial(msm.msm_device, pts, sc, c), warmup=1, repeat=args.sweep_repeat)
                add(lg, "cub", c, scal, "total", list(res.times_ms))
        del pts, scalars
        cp.get_default_memory_pool().free_all_blocks()
        pd.DataFrame(rows).to_csv(out / "msm_sort.csv", index=False)  # after each size: a timeout keeps the rest
        (out / "syncs.json").write_text(json.dumps(report, indent=1) + "\n")

    df = pd.DataFrame(rows)
    print("host syncs around one msm_device (uniform):", json.dumps(report["syncs"], indent=1))
    print("results that disagree with the first of their size:", report["disagree"] or "none")
    tot = df[(df.what == "total") & (df.sort == "cub")]
    best = tot.loc[tot.groupby(["log2_n", "scalars"]).median_ms.idxmin(), ["log2_n", "scalars", "c", "median_ms"]]
    print("best c with the CUB sort (median ms):\n" + best.to_string(index=False))
    phases = df[df.what.str.startswith("phase:") & (df.scalars == "uniform")]
    print(phases.pivot_table(index=["log2_n", "what"], columns="sort", values="median_ms").to_string(float_format=lambda v: f"{v:.3f}"))
    return 1 if report["disagree"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
