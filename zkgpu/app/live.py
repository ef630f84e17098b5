"""Measuring now, for the notebooks: ``open_source`` gives a :class:`~zkgpu.analysis.replay.Source`, live or replayed.

Mode (``$ZKGPU_MODE``): ``live`` (record now on the GPU), ``replay`` (recorded data) or ``auto``. Without a recording,
replay falls back to a cached tiny CPU run (``$XDG_CACHE_HOME/zkgpu``) labelled a CPU stand-in."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from zkgpu.analysis import keynumbers, replay
from zkgpu.analysis.replay import Recording, Source
from zkgpu.app import record
from zkgpu.app.bench.prove import run_prove_bench
from zkgpu.core import cuda as _cuda
from zkgpu.groth16.circuits import ToolError, tools
from zkgpu.groth16.formats import read_wtns, read_zkey
from zkgpu.groth16.proof import proof_json, read_proof, verify_py_ecc
from zkgpu.groth16.prover import prove
from zkgpu.story.prove_results import ProveSource, recorded_prove_source

__all__ = [
    "MODES",
    "NoGPUError",
    "resolve_mode",
    "configure_from_env",
    "LIVE_HOST_LOAD",
    "open_source",
    "FIXTURE",
    "open_prove_source",
]

MODES = ("live", "replay", "auto")


class NoGPUError(RuntimeError):
    """Live mode asked for without a GPU. In a notebook IPython shows it as its one line, without a
    traceback (``_render_traceback_``), so papermill's ``-p MODE live`` fails in one line."""

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


def resolve_mode(mode: str | None = None) -> str:
    """``live`` or ``replay`` from ``mode`` or ``$ZKGPU_MODE`` (``auto``: live iff a GPU). Raises ValueError: unknown."""
    m = (mode or os.environ.get("ZKGPU_MODE") or "auto").strip().lower()
    if m not in MODES:
        raise ValueError(f"ZKGPU_MODE must be one of {MODES}, got {m!r}")
    if m == "auto":
        return "live" if _cuda.gpu_available() else "replay"
    return m


def configure_from_env() -> None:
    """Pass ``$ZKGPU_DATA`` and ``$ZKGPU_NB_OUT`` to replay and keynumbers. Raises ValueError: NB_OUT is a file."""
    replay.configure(data_dir=os.environ.get("ZKGPU_DATA") or None)
    try:
        keynumbers.configure(out_dir=os.environ.get("ZKGPU_NB_OUT") or None)
    except ValueError as exc:
        raise ValueError(f"ZKGPU_NB_OUT: {exc}") from exc


def _cache_root() -> Path:
    """``$XDG_CACHE_HOME/zkgpu``, else ``~/.cache/zkgpu``."""
    env = os.environ.get("XDG_CACHE_HOME")
    return (Path(env) if env else Path.home() / ".cache") / "zkgpu"


# modules and packages that only read or present data: editing them does not change what the
# stand-in records
_NOT_RECORDING = ("analysis/", "story/", "app/report.py", "app/cli.py", "app/live.py", "app/parse_cmd.py", "app/view.py",
                  "app/whatif.py")


def _package_hash() -> str:
    """Hash of the package sources that produce a recording (pipeline, kernels, transfer, trace ...)."""
    h = hashlib.sha256()
    pkg = Path(__file__).resolve().parents[1]
    for p in sorted(list(pkg.rglob("*.py")) + list(pkg.rglob("*.cu")) + list(pkg.rglob("*.cuh"))):
        if p.relative_to(pkg).as_posix().startswith(_NOT_RECORDING):
            continue
        h.update(p.relative_to(pkg).as_posix().encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def _prune_standins(root: Path, keep: Path, max_age_s: float = 3600.0) -> None:
    """Remove other CPU stand-ins older than ``max_age_s`` (stale package versions)."""
    now = time.time()
    for p in root.glob("cpu-standin-*"):
        try:
            if p != keep and p.is_dir() and now - p.stat().st_mtime > max_age_s:
                shutil.rmtree(p, ignore_errors=True)
        except OSError:
            continue


def _cpu_standin(n: int | None = None, partitions: int | None = None) -> Recording:
    """A tiny CPU recording of every scenario made now (once per package source and size; cached)."""
    n = n or record.CPU_DEFAULT_N
    partitions = partitions or record.CPU_DEFAULT_PARTITIONS
    key = f"cpu-standin-{_package_hash()}-n{n}-p{partitions}"
    root = _cache_root()
    final = root / key
    try:
        return Recording.open(final)
    except FileNotFoundError:
        pass
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=key + ".", dir=root))
    try:
        run_dir = record.record(out=tmp, device="cpu", n=n, partitions=partitions, quick=True, scenarios=None, repeats=1)
        with contextlib.suppress(OSError):  # another process finished first
            run_dir.rename(final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _prune_standins(root, final)
    return Recording.open(final)


LIVE_HOST_LOAD = 8
"""Host memory-load threads of a live run by default: the setting of the committed H200 recordings
(``record --host-load 8``), so that live and replayed numbers describe the same regime."""


def open_source(
    mode: str | None = None,
    *,
    n: int | None = None,
    partitions: int | None = None,
    scenarios: Iterable[str] | None = None,
    sweep: bool = False,
    bench: bool = False,
    base: str | Path | None = None,
    host_load: int | None = None,
) -> Source:
    """The notebook's data: a live measurement or a recording.

    Args:
        mode: ``live``, ``replay`` or ``auto`` (default ``$ZKGPU_MODE``). n, partitions, scenarios: of a live run.
        sweep, bench: live: also the H2D sweep / kernel benchmarks. base: folder of recordings.
        host_load: live: HostMemoryLoad threads (default ``$ZKGPU_HOST_LOAD``, else :data:`LIVE_HOST_LOAD`).
    Raises:
        NoGPUError: ``live`` without a GPU. ValueError: bad ``$ZKGPU_HOST_LOAD``."""
    configure_from_env()
    m = resolve_mode(mode)
    if m == "live":
        if not _cuda.gpu_available():
            raise NoGPUError("MODE live needs a CUDA GPU (CuPy) and none was found: run with MODE replay (or ZKGPU_MODE=replay)")
        if host_load is None:
            env = os.environ.get("ZKGPU_HOST_LOAD", "").strip()
            if env and not env.isdigit():
                raise ValueError(f"ZKGPU_HOST_LOAD must be an integer >= 0, got {env!r}")
            host_load = int(env) if env else LIVE_HOST_LOAD
        nb_out = os.environ.get("ZKGPU_NB_OUT")
        live_dir = str(Path(nb_out).parent / "live") if nb_out else None  # zkgpu report keeps its live runs there
        if live_dir:
            Path(live_dir).mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix="zkgpu-live-", dir=live_dir))
        run_dir = record.record(out=tmp, device="gpu", n=n, partitions=partitions, quick=True,
                                scenarios=list(scenarios) if scenarios is not None else None,
                                sweep=sweep, bench=bench, host_load=host_load, repeats=1)
        rec = Recording.open(run_dir)
        keynumbers.opened(rec.folder)
        return Source("live", rec, m)
    src = replay.recorded_source(base)
    if src is None:
        src = Source("cpu-standin", _cpu_standin(), m)
    keynumbers.opened(src.recording.folder)  # what the page shows is from this recording unless it names another
    # a recording's size and load are fixed: the parameters asked for are named in the banner, not silently dropped
    src.ignored = {k: v for k, v in (("N", n), ("PARTITIONS", partitions), ("HOST_LOAD", host_load)) if v is not None}
    return src


FIXTURE = Path(__file__).resolve().parents[1] / "groth16" / "fixtures"
"""The committed tiny circuit (mulchain-8: ``circuit.zkey``, ``circuit.wtns``, ``vkey.json``)
that notebook 10 proves now when it has no ``bench-prove`` recording."""


def _prove_now(repeat: int = 2) -> ProveSource:
    """Prove the committed fixture now: with node, as ``zkgpu bench prove`` does (both tools as whole
    commands, snarkjs verifying); without, in process. py_ecc checks a zkgpu proof either way."""
    device = "gpu" if _cuda.gpu_available() else "cpu"
    zpath, wpath, vpath = FIXTURE / "circuit.zkey", FIXTURE / "circuit.wtns", FIXTURE / "vkey.json"
    zk = read_zkey(zpath)
    try:
        tools()
        node = True
    except ToolError:
        node = False
    with tempfile.TemporaryDirectory(prefix="zkgpu-nb10-") as tmp:
        if node:
            runs, phases = run_prove_bench(zpath, wpath, vpath, device=device, repeat=repeat, workdir=Path(tmp))
            proof, public = read_proof(Path(tmp) / "zkgpu_proof_0.json", Path(tmp) / "zkgpu_public_0.json")
            ok = verify_py_ecc(zk, proof, public)
            runs = [dict(r, verified=r["verified"] and (ok or r["tool"] == "snarkjs")) for r in runs]
        else:
            runs, phases = [], []
            for i in range(repeat):
                t0 = time.perf_counter()
                zk, w = read_zkey(zpath), read_wtns(wpath)
                t_read = 1e3 * (time.perf_counter() - t0)
                res = prove(zk, w, device=device)
                runs.append(dict(tool=f"zkgpu-{device}", repeat=i, wall_s=time.perf_counter() - t0,
                                 verified=verify_py_ecc(zk, proof_json(res), res.public)))  # fmt: skip
                phases += [dict(repeat=i, phase=k, ms=v) for k, v in {"read": t_read, **res.timings_ms}.items()]
    manifest = dict(
        circuit="mulchain-8 (committed fixture)", setup="snarkjs", device=device, n_vars=zk.n_vars, n_public=zk.n_public,
        domain_size=zk.domain_size, coefficients=len(zk.coef_signal),
        verifier="snarkjs groth16 verify + py_ecc pairing" if node else "py_ecc pairing (node not installed: no snarkjs)",
        timing="whole commands (process start to exit)" if node else "in process (no snarkjs to compare with)",
    )  # fmt: skip
    return ProveSource(kind="live" if device == "gpu" else "cpu-standin", runs=pd.DataFrame(runs), phases=pd.DataFrame(phases), manifest=manifest, folder=None)


def open_prove_source(mode: str | None = None, base: str | Path | None = None) -> ProveSource:
    """Notebook 10's data: the newest bench-prove recording, else a verified proof of :data:`FIXTURE` made now."""
    configure_from_env()
    if resolve_mode(mode) == "replay":
        found = recorded_prove_source(base)
        if found is not None:
            keynumbers.opened(replay.shown_path(found.folder) if found.folder is not None else "")
            return found
    keynumbers.opened("")
    return _prove_now()
