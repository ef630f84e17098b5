"""Montgomery-product variants of zkgpu/kernels/ff.cuh on the GPU (issue 13): checked, then timed.

    python3 scripts/ff_microbench.py --out DIR [--stages micro,ntt,msm] [--budget 120]
    python3 scripts/ff_microbench.py --summarize DIR/ff_microbench.json     (markdown tables)

Stages (each writes DIR/ff_microbench.json again when it ends, so a cut-off run keeps what it measured):

* ``micro``: kernels/ff_bench.cu built once per variant (VARIANTS: the ZK_FF_MUL / ZK_FF_PTX macros of
  ff.cuh) with CuPy's NVRTC. Each variant is first checked bit for bit against Python ints
  (a*b*R^-1 mod p and a^2*R^-1 mod p) on edge values (0, 1, p-1, p-2, R mod p and its neighbours,
  words of all ones below p) x edge values and seeded random pairs; a variant that fails is reported and
  not timed. Then products/s: ``THREADS`` threads x ZK_BENCH_ILP independent chains x ``iters`` dependent
  products (many waves of threads, so register counts do not skew it by a partial last wave), CUDA events,
  warm-up excluded, median of ``--repeat``.
* ``ntt``: the real NTT kernels (zkgpu.gpu.ntt.transform, forward, natural order in and out, device-resident, the
  stagewise and the fused algorithm) with ``ZKGPU_NTT_DEFINES=ZK_FF_MUL=<v>`` for each v of REAL_MUL, at
  2^22 and 2^24 (median ms); every output is compared bit for bit with the v = 0 output (the product
  before issue 13; v = 3 is the default since).
* ``msm``: zkgpu.gpu.msm.pippenger.run_benchmark (what ``zkgpu bench msm`` times: device-resident uniform scalars,
  pinned H2D, PoRep-like scalars) at 2^20 and 2^22 with msm.cu built with ZK_FF_MUL=<v>; the MSM of
  2^14 points is compared with the v = 0 result.

All modules are compiled first, in parallel worker processes that fill CuPy's on-disk kernel cache, so
the measuring process only loads them. ``--budget`` (s) skips what would start too late.
"""

from __future__ import annotations

import argparse
import functools
import json
import multiprocessing as mp
import os
import random
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from zkgpu.core import cuda as _cuda
from zkgpu.gpu.msm import bases, pippenger as msm
from zkgpu.gpu.ntt import transform as ntt
from zkgpu.arith.field import FQ, FR, fr_random

KERNEL_DIR = _cuda.KERNEL_DIR
FIELDS = {"fr": FR, "fq": FQ}

# name -> -D macros of ff_bench.cu. "ptx-volatile" is the stagewise NTT's product before issue 13 (ZK_FF_PTX with
# ZK_FF_MUL=0); "cxx-cios" the MSM's and the fused NTT's (the portable CIOS); "asm-evenodd" the default since.
# The first H200 run also had ZK_FF_MUL=2 (CIOS, one non-volatile asm per row), 4 (product scanning) and
# ZK_FF_SQR=1 (SOS squaring); they lost and were removed (notes/ff-arith.md).
VARIANTS: dict[str, tuple[tuple[str, str], ...]] = {
    "ptx-volatile": (("ZK_FF_PTX", "1"), ("ZK_FF_MUL", "0")),
    "cxx-cios": (("ZK_FF_MUL", "1"),),
    "asm-evenodd": (("ZK_FF_MUL", "3"),),
}
REAL_MUL = ("0", "1", "3")  # ZK_FF_MUL values for the real NTT and MSM kernels; "0": the product before issue 13
NTT_LOGS = (22, 24)
MSM_LOGS = (20, 22)
# threads of a bench launch: 8 x what an H200 holds at once at full occupancy (132 SMs x 2048), so the partial
# last wave (variants differ in registers, hence in resident threads) costs at most a few percent
THREADS = 132 * 2048 * 8  # (a multiple of 65536 / ZK_BENCH_ILP: _bench_inputs tiles 65536 elements)
ITERS = {"fr": 64, "fq": 32}


# ---------------------------------------------------------------------------------------------- values


def edge_values(field: Any) -> list[int]:
    """0, 1, p-1, p-2, R mod p and its neighbours, p/2, and the largest values below p whose low words are
    all ones (the longest carry chains) -- every one < p."""
    p, n = field.modulus, _limbs32(field)
    r = (1 << (32 * n)) % p
    vals = {0, 1, 2, p - 1, p - 2, r, r - 1, (r + 1) % p, p - r, p >> 1, (p >> 1) + 1}
    top = p >> (32 * (n - 1))
    vals |= {((top - 1) << (32 * (n - 1))) | ((1 << (32 * (n - 1))) - 1), (1 << (32 * (n - 1))) - 1}
    return sorted(v % p for v in vals)


def _limbs32(field: Any) -> int:
    return (field.modulus.bit_length() + 31) // 32


def check_pairs(field: Any, n_random: int = 4096, seed: int = 13) -> tuple[list[int], list[int]]:
    """Operand lists (a, b): every edge value with every edge value, then seeded random pairs below p."""
    edges = edge_values(field)
    rnd = random.Random(seed)
    a = [x for x in edges for _ in edges] + [rnd.randrange(field.modulus) for _ in range(n_random)]
    b = [y for _ in edges for y in edges] + [rnd.randrange(field.modulus) for _ in range(n_random)]
    return a, b


def to_words(ints: list[int], limbs: int) -> np.ndarray:
    """Python ints -> (n, limbs) uint32, little-endian limbs."""
    raw = b"".join(v.to_bytes(4 * limbs, "little") for v in ints)
    return np.frombuffer(raw, dtype="<u4").reshape(len(ints), limbs).astype(np.uint32)


def from_words(words: np.ndarray) -> list[int]:
    return [int.from_bytes(row.astype("<u4").tobytes(), "little") for row in np.asarray(words)]


def mont_mul(field: Any, a: int, b: int) -> int:
    """The Montgomery product a*b*R^-1 mod p (R = 2^(32 * limbs)), the value every variant must give."""
    n = _limbs32(field)
    return a * b * pow(1 << (32 * n), -1, field.modulus) % field.modulus


# ---------------------------------------------------------------------------------------------- GPU


def compile_module(defines: tuple[tuple[str, str], ...]) -> Any:
    """ff_bench.cu built with these -D macros (CuPy RawModule, NVRTC, cached on disk by CuPy)."""
    cp = _cuda.cupy()
    src = (KERNEL_DIR / "ff_bench.cu").read_text()
    opts = ("-std=c++17", f"-I{KERNEL_DIR}", *(f"-D{k}={v}" for k, v in defines))
    mod = cp.RawModule(code=src, options=opts)
    mod.get_function("fr_mul_check")  # compiles the whole module now
    return mod


def _launch(kern: Any, n: int, args: tuple) -> None:
    block = 256
    kern(((n + block - 1) // block,), (block,), args)


@functools.cache
def _expected(fname: str) -> tuple[list[int], list[int]]:
    """The Montgomery products and squares of check_pairs(field), from Python ints."""
    field = FIELDS[fname]
    a, b = check_pairs(field)
    return [mont_mul(field, x, y) for x, y in zip(a, b, strict=True)], [mont_mul(field, x, x) for x in a]


def random_words(field: Any, n: int, seed: int) -> np.ndarray:
    """n random elements below p as (n, limbs) uint32 (the top limb drawn below p's top limb)."""
    limbs = _limbs32(field)
    w = np.random.default_rng(seed).integers(0, 2**32, size=(n, limbs), dtype=np.uint64)
    w[:, -1] %= np.uint64(field.modulus >> (32 * (limbs - 1)))
    return w.astype(np.uint32)


def check_variant(mod: Any, fname: str) -> dict[str, Any]:
    """Compare the module's mul and sqr with Python ints; returns counts and the first mismatch."""
    cp = _cuda.cupy()
    field = FIELDS[fname]
    limbs = _limbs32(field)
    a, b = check_pairs(field)
    da, db = cp.asarray(to_words(a, limbs)), cp.asarray(to_words(b, limbs))
    out = cp.zeros_like(da)
    n = len(a)
    res: dict[str, Any] = {"pairs": n}
    _launch(mod.get_function(f"{fname}_mul_check"), n, (da, db, out, np.uint64(n)))
    got = from_words(cp.asnumpy(out))
    want_mul, want_sqr = _expected(fname)
    bad = [i for i in range(n) if got[i] != want_mul[i]]
    res["mul_mismatches"] = len(bad)
    if bad:
        i = bad[0]
        res["mul_first"] = f"a={a[i]:#x} b={b[i]:#x} got={got[i]:#x} want={want_mul[i]:#x}"
    _launch(mod.get_function(f"{fname}_sqr_check"), n, (da, out, np.uint64(n)))
    got = from_words(cp.asnumpy(out))
    bad = [i for i in range(n) if got[i] != want_sqr[i]]
    res["sqr_mismatches"] = len(bad)
    if bad:
        i = bad[0]
        res["sqr_first"] = f"a={a[i]:#x} got={got[i]:#x} want={want_sqr[i]:#x}"
    res["ok"] = not res["mul_mismatches"] and not res["sqr_mismatches"]
    return res


@functools.cache
def _bench_inputs(fname: str, ilp: int) -> tuple[Any, Any]:
    """The benchmark's operands on the device, THREADS * ilp elements each (made once per field)."""
    cp = _cuda.cupy()
    reps = THREADS * ilp // 65536  # 65536 random elements, tiled (the values do not change the timing)
    x, y = (cp.tile(cp.asarray(random_words(FIELDS[fname], 65536, seed)), (reps, 1)) for seed in (7, 8))
    return x, y


def time_variant(mod: Any, fname: str, repeat: int, ilp: int = 2) -> dict[str, float]:
    """Products/s of the module's mul and sqr chains (median of repeat launches, one warm-up)."""
    cp = _cuda.cupy()
    field = FIELDS[fname]
    limbs = _limbs32(field)
    x, y = _bench_inputs(fname, ilp)
    out = cp.zeros((THREADS, limbs), dtype=cp.uint32)
    iters = ITERS[fname]
    res: dict[str, float] = {}
    for op in ("mul", "sqr"):
        kern = mod.get_function(f"{fname}_{op}_bench")
        args = (x, y, out, np.uint64(THREADS), np.uint32(iters)) if op == "mul" else (x, out, np.uint64(THREADS), np.uint32(iters))
        bench = _cuda.benchmark(lambda kern=kern, args=args: _launch(kern, THREADS, args), warmup=1, repeat=repeat)
        med = bench.median_ms
        res[f"{op}_ms"] = med
        res[f"{op}_products_per_s"] = THREADS * ilp * iters / (med * 1e-3)
    return res


# ---------------------------------------------------------------------------------------------- real kernels


def _set_msm_defines(value: str | None) -> None:
    """msm.cu's build options: ZK_FF_MUL=value, or (None) msm.py's own (it reads them from its _defines())."""
    if value is None:
        msm._defines = _ORIG_MSM_DEFINES  # type: ignore[attr-defined]
    else:
        msm._defines = lambda: (*_ORIG_MSM_DEFINES(), ("ZK_FF_MUL", value))  # type: ignore[attr-defined]


_ORIG_MSM_DEFINES = msm._defines


def _ntt_data(log_n: int) -> Any:
    cp = _cuda.cupy()
    host = np.random.default_rng(log_n).integers(0, 2**64, size=(1 << log_n, 4), dtype=np.uint64)
    host[:, 3] >>= np.uint64(2)  # < 2^254 < r
    return cp.asarray(host)


def _set_ntt_mul(value: str | None) -> None:
    """The NTT modules' ZK_FF_MUL (through ZKGPU_NTT_DEFINES, read by zkgpu.gpu.ntt.transform at each call); None: unset."""
    if value is None:
        os.environ.pop("ZKGPU_NTT_DEFINES", None)
    else:
        os.environ["ZKGPU_NTT_DEFINES"] = f"ZK_FF_MUL={value}"


def _warm(kind: str, key: str) -> tuple[str, str, float, str]:
    """Worker process: compile one module (NVRTC -> CuPy's disk cache) by using it once."""
    t0 = time.perf_counter()
    try:
        if kind == "micro":
            compile_module(VARIANTS[key])
        elif kind == "ntt":
            _set_ntt_mul(key)
            d = _ntt_data(12)
            for spec in ("stagewise", "fused"):
                with ntt.kernel_settings(spec):
                    ntt.ntt_inplace(d.copy(), order="nn")
        else:
            _set_msm_defines(key)
            pts = bases.generate_points(1 << 10, 1)
            sc = _cuda.cupy().asarray(fr_random(1 << 10, 1))
            msm.msm(pts, sc)
        _cuda.cupy().cuda.Device().synchronize()
        return kind, key, time.perf_counter() - t0, ""
    except Exception:  # noqa: BLE001 - any failure of one module is reported in the JSON; the run goes on without it
        return kind, key, time.perf_counter() - t0, traceback.format_exc(limit=3)


def real_ntt(values: tuple[str, ...], repeat: int, deadline: float) -> list[dict[str, Any]]:
    cp = _cuda.cupy()
    rows: list[dict[str, Any]] = []
    for log_n in NTT_LOGS:
        base = _ntt_data(log_n)
        ref: dict[str, Any] = {}
        for spec in ("stagewise", "fused"):
            for v in values:
                if time.monotonic() > deadline:
                    return rows
                _set_ntt_mul(v)
                d = base.copy()
                try:
                    with ntt.kernel_settings(spec):
                        ntt.ntt_inplace(d, order="nn")
                        if v == "0":
                            ref[spec] = d.copy()
                            same: bool | None = True
                        else:
                            same = bool(cp.array_equal(d, ref[spec])) if spec in ref else None
                        res = _cuda.benchmark(lambda d=d: ntt.ntt_inplace(d, order="nn"), warmup=1, repeat=repeat)
                except Exception as exc:  # noqa: BLE001 - a failing variant is recorded; the others still run
                    rows.append(dict(log_n=log_n, kernel=spec, zk_ff_mul=v, error=repr(exc)))
                    print(f"ntt 2^{log_n} {spec} ZK_FF_MUL={v}: FAILED {exc!r}", flush=True)
                    continue
                rows.append(dict(log_n=log_n, kernel=spec, zk_ff_mul=v, median_ms=res.median_ms, min_ms=res.min_ms,
                                 equal_to_default=same))
                print(f"ntt 2^{log_n} {spec:9s} ZK_FF_MUL={v}: {res.median_ms:8.3f} ms  same as default: {same}", flush=True)
        _set_ntt_mul(None)
        del base, ref
        cp.get_default_memory_pool().free_all_blocks()
    return rows


def real_msm(values: tuple[str, ...], repeat: int, deadline: float) -> list[dict[str, Any]]:
    cp = _cuda.cupy()
    rows: list[dict[str, Any]] = []
    pts = None
    ref = None
    for v in values:
        if time.monotonic() > deadline:
            break
        _set_msm_defines(v)
        try:
            if pts is None:
                pts = bases.generate_points(1 << 14, 3)
                sc = cp.asarray(fr_random(1 << 14, 3))
            got = cp.asnumpy(msm.msm(pts, sc))
            if v == "0":
                ref = got
            same = bool(np.array_equal(got, ref)) if ref is not None else None
            bench = msm.run_benchmark(sizes=list(MSM_LOGS), repeat=repeat, warmup=1, phases=False)
        except Exception as exc:  # noqa: BLE001 - a failing variant is recorded; the others still run
            rows.append(dict(zk_ff_mul=v, error=repr(exc)))
            print(f"msm ZK_FF_MUL={v}: FAILED {exc!r}", flush=True)
            continue
        for row in bench:
            row.update(zk_ff_mul=v, equal_to_default=same, variant=f"ZK_FF_MUL={v}")
            rows.append(row)
            print(f"msm 2^{row['log2_n']} {row['mode']:10s} {row['scalars']:8s} ZK_FF_MUL={v}: {row['median_ms']:8.3f} ms"
                  f"  same as default: {same}", flush=True)
    _set_msm_defines(None)
    return rows


# ---------------------------------------------------------------------------------------------- summary


def summarize(result: dict[str, Any]) -> str:
    """Markdown tables of a run's JSON: products/s and the ratio to cxx-cios per variant and field; the
    real kernels' median ms per ZK_FF_MUL and the ratio to ZK_FF_MUL=0 (the product before issue 13), with the
    bit-exact flags."""
    out = [f"device: {result.get('device', {}).get('gpu')}, commit {result.get('commit', '')[:10]}", ""]
    out += ["| field | variant | check | mul G/s | x cxx-cios | sqr G/s | sqr x cxx-cios mul |", "|---|---|---|---|---|---|---|"]
    for fname, per in result.get("micro", {}).items():
        for name, e in per.items():
            ok = "ok" if e["check"]["ok"] else "FAILED"
            if "mul_products_per_s" in e:
                out.append(f"| {fname} | {name} | {ok} | {e['mul_products_per_s'] / 1e9:.2f} | {e.get('mul_speedup_vs_cxx_cios', float('nan')):.3f}"
                           f" | {e['sqr_products_per_s'] / 1e9:.2f} | {e.get('sqr_speedup_vs_cxx_cios_mul', float('nan')):.3f} |")
            else:
                out.append(f"| {fname} | {name} | {ok} | | | | |")
    rows = [r for r in result.get("ntt", []) if "median_ms" in r]
    if rows:
        base = {(r["log_n"], r["kernel"]): r["median_ms"] for r in rows if r["zk_ff_mul"] == "0"}
        out += ["", "| NTT fwd nn | ZK_FF_MUL | ms | x ZK_FF_MUL=0 | bit-exact |", "|---|---|---|---|---|"]
        for r in rows:
            b = base.get((r["log_n"], r["kernel"]))
            out.append(f"| 2^{r['log_n']} {r['kernel']} | {r['zk_ff_mul']} | {r['median_ms']:.3f} | "
                       f"{r['median_ms'] / b if b else float('nan'):.3f} | {r['equal_to_default']} |")
    rows = [r for r in result.get("msm", []) if "median_ms" in r]
    if rows:
        base = {(r["log2_n"], r["mode"], r["scalars"]): r["median_ms"] for r in rows if r["zk_ff_mul"] == "0"}
        out += ["", "| MSM | mode | scalars | ZK_FF_MUL | ms | x ZK_FF_MUL=0 | same result |", "|---|---|---|---|---|---|---|"]
        for r in rows:
            b = base.get((r["log2_n"], r["mode"], r["scalars"]))
            out.append(f"| 2^{r['log2_n']} | {r['mode']} | {r['scalars']} | {r['zk_ff_mul']} | {r['median_ms']:.3f} | "
                       f"{r['median_ms'] / b if b else float('nan'):.3f} | {r['equal_to_default']} |")
    errors = [r for r in result.get("ntt", []) + result.get("msm", []) if "error" in r]
    errors += [c for c in result.get("compile", []) if c.get("error")]
    if errors:
        out += ["", "errors:", *(f"- {e}" for e in errors)]
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "ff-out"), help="output folder (ff_microbench.json)")
    ap.add_argument("--stages", default="micro,ntt,msm", help="comma-separated: micro, ntt, msm")
    ap.add_argument("--budget", type=float, default=120.0, help="seconds; later steps are skipped past it")
    ap.add_argument("--repeat", type=int, default=10, help="timed repeats (median)")
    ap.add_argument("--summarize", metavar="JSON", default=None, help="print the tables of a finished run's JSON and exit")
    ap.add_argument("--jobs", type=int, default=min(16, os.cpu_count() or 1), help="parallel compile processes")
    args = ap.parse_args(argv)
    if args.summarize:
        print(summarize(json.loads(Path(args.summarize).read_text())))
        return 0
    t_start = time.monotonic()
    deadline = t_start + args.budget
    stages = [s for s in args.stages.split(",") if s]
    bad_stage = [s for s in stages if s not in ("micro", "ntt", "msm")]
    if bad_stage:
        ap.error(f"unknown stage(s) {bad_stage}: use micro, ntt, msm")
    if not _cuda.gpu_available():
        print("ff_microbench: no CUDA GPU (CuPy) here", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"device": _cuda.device_info(), "commit": os.environ.get("ZKGPU_COMMIT", ""),
                              "threads": THREADS, "iters": ITERS, "ilp": 2, "repeat": args.repeat,
                              "timing": "CUDA events, median of repeats, warm-up excluded",
                              "compile": [], "micro": {}, "ntt": [], "msm": []}

    def save() -> None:
        (out / "ff_microbench.json").write_text(json.dumps(result, indent=1, default=str))

    # 1. every module, in parallel processes (CuPy's disk cache carries them to this process)
    jobs = [("micro", k) for k in VARIANTS] if "micro" in stages else []
    jobs += [("ntt", v) for v in REAL_MUL] if "ntt" in stages else []
    jobs += [("msm", v) for v in REAL_MUL] if "msm" in stages else []
    compile_deadline = t_start + args.budget * 0.6
    pool = mp.get_context("spawn").Pool(max(1, min(args.jobs, len(jobs))))
    try:
        pending = [(kind, key, pool.apply_async(_warm, (kind, key))) for kind, key in jobs]
        for kind, key, fut in pending:
            try:
                _, _, secs, err = fut.get(timeout=max(1.0, compile_deadline - time.monotonic()))
            except mp.TimeoutError:
                secs, err = float("nan"), f"not compiled within {args.budget * 0.6:.0f} s"
            result["compile"].append(dict(kind=kind, key=key, seconds=round(secs, 1), error=err))
            print(f"compiled {kind} {key}: {secs:.1f} s {'FAILED ' + err if err else ''}", flush=True)
    finally:
        pool.terminate()  # the worker processes this script started (a compile past the deadline too)
    failed = {(c["kind"], c["key"]) for c in result["compile"] if c["error"]}
    save()

    # 2. microbenchmark: check, then time
    if "micro" in stages:
        for name, defs in VARIANTS.items():
            if ("micro", name) in failed:
                continue
            mod = compile_module(defs)
            for fname in FIELDS:
                if time.monotonic() > deadline:
                    break
                entry: dict[str, Any] = {"defines": dict(defs), "check": check_variant(mod, fname)}
                if entry["check"]["ok"]:
                    entry.update(time_variant(mod, fname, args.repeat))
                result["micro"].setdefault(fname, {})[name] = entry
                print(f"{fname} {name:20s} check {'ok' if entry['check']['ok'] else 'FAILED ' + json.dumps(entry['check'])}"
                      + (f"  mul {entry['mul_products_per_s'] / 1e9:7.2f} G/s  sqr {entry['sqr_products_per_s'] / 1e9:7.2f} G/s"
                         if "mul_products_per_s" in entry else ""), flush=True)
            save()
        for per in result["micro"].values():
            base = per.get("cxx-cios", {}).get("mul_products_per_s")
            if base:
                for entry in per.values():
                    if "mul_products_per_s" in entry:
                        entry["mul_speedup_vs_cxx_cios"] = entry["mul_products_per_s"] / base
                        entry["sqr_speedup_vs_cxx_cios_mul"] = entry["sqr_products_per_s"] / base
        save()

    # 3. the real kernels with each ZK_FF_MUL
    if "ntt" in stages:
        values = tuple(v for v in REAL_MUL if ("ntt", v) not in failed)
        result["ntt"] = real_ntt(values, args.repeat, deadline)
        save()
    if "msm" in stages:
        values = tuple(v for v in REAL_MUL if ("msm", v) not in failed)
        result["msm"] = real_msm(values, max(3, args.repeat // 2), deadline)
        save()
    result["seconds"] = round(time.monotonic() - t_start, 1)
    save()
    print(summarize(result))
    print(f"ff_microbench: {result['seconds']} s, written to {out / 'ff_microbench.json'}")
    return 0


if __name__ == "__main__":
    rc = main()
    sys.stdout.flush()
    sys.exit(rc)
