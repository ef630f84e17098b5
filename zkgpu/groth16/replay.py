"""Notebook 10's data: a ``bench-prove`` recording from ``data/``, or a real proof made now.

:func:`open_prove_source` returns a :class:`ProveSource`: in replay mode the newest
``<gpu>-<date>-bench-prove[-N]/`` folder (``zkgpu bench prove``: ``prove.csv``, ``phases.csv``,
``manifest.json``); without one, or in live mode, it proves the committed tiny circuit
(``zkgpu/groth16/fixtures``: mulchain-8) now, on the GPU when there is one, else on the CPU, and
verifies the proof with py_ecc's pairing (and snarkjs, when node is installed), so the notebook
always shows a verified real proof and says which kind of numbers it shows.

Phase names are those of :mod:`zkgpu.groth16.prover` plus ``read`` (reading the zkey/wtns files).
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .. import _cuda, replay
from ..bench.prove import run_prove_bench
from ..replay import find_benchmarks, resolve_mode
from .circuits import ToolError, tools
from .formats import read_wtns, read_zkey
from .proof import proof_json, read_proof, verify_py_ecc
from .prover import prove

__all__ = [
    "FIXTURE",
    "TIMELINE_PHASES",
    "GPU_PHASES",
    "ProveSource",
    "open_prove_source",
    "phase_timeline",
    "plot_phase_timeline",
    "prove_key_numbers",
]

FIXTURE = Path(__file__).resolve().parent / "fixtures"
TIMELINE_PHASES = ("read", "synthesis", "h_scalars", "msm_a", "msm_b1", "msm_l", "msm_h", "msm_b2_g2", "g2_wait", "finish")
"""The phases of one proof in the order they run on the main thread (one after the other); with
``overlap`` (the default) the G2 MSM runs on its own thread from ``msm_b2_g2.start`` and the main
thread waits for what is left of it in ``g2_wait``."""
GPU_PHASES = ("h_scalars", "msm_a", "msm_b1", "msm_l", "msm_h")
"""Phases on zkgpu's kernels with ``--device gpu`` (the others run on the CPU in both modes)."""


@dataclass
class ProveSource:
    """A set of proofs and their timings.

    Attributes:
        kind: ``recorded-gpu`` / ``recorded-cpu`` (a bench-prove folder), ``live`` (the tiny
            circuit proven now on the GPU) or ``cpu-standin`` (the same on the CPU).
        runs: rows ``tool, repeat, wall_s, verified`` (whole commands, as ``zkgpu bench prove``;
            live without node: zkgpu in process only, no snarkjs row).
        phases: rows ``repeat, phase, ms``.
        manifest: the recording's manifest (for live: the circuit's sizes).
        folder: the recording folder, or None.
    """

    kind: str
    runs: pd.DataFrame
    phases: pd.DataFrame
    manifest: dict
    folder: Path | None

    @property
    def on_gpu(self) -> bool:
        return self.kind in ("recorded-gpu", "live")

    def banner(self) -> str:
        m = self.manifest
        size = f"{m.get('circuit')}: {m.get('n_vars')} signals, domain {m.get('domain_size')}"
        if self.kind.startswith("recorded"):
            gpu = (m.get("environment") or {}).get("gpu") or "no GPU"
            what = "REPLAY of a GPU recording" if self.on_gpu else "REPLAY of a CPU recording"
            head = f"{what} made {m.get('date_utc', '?')} on {gpu} ({self.folder.name}), commit {str(m.get('commit'))[:10]}"
        else:
            head = "proven now (no bench-prove recording in data/ or live mode)"
        note = "" if self.on_gpu else " -- CPU reference paths: NOT GPU numbers"
        return f"{head}; {size}; device {m.get('device')}{note}"


def _from_recording(folder: Path, tables: dict) -> ProveSource:
    manifest = json.loads((folder / "manifest.json").read_text())
    kind = "recorded-gpu" if manifest.get("device") == "gpu" else "recorded-cpu"
    return ProveSource(kind=kind, runs=tables["prove"], phases=tables["phases"], manifest=manifest, folder=folder)


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
        domain_size=zk.domain_size, coefficients=len(zk.coef_value),
        verifier="snarkjs groth16 verify + py_ecc pairing" if node else "py_ecc pairing (node not installed: no snarkjs)",
        timing="whole commands (process start to exit)" if node else "in process (no snarkjs to compare with)",
    )  # fmt: skip
    return ProveSource(kind="live" if device == "gpu" else "cpu-standin", runs=pd.DataFrame(runs), phases=pd.DataFrame(phases), manifest=manifest, folder=None)


def open_prove_source(mode: str | None = None, base: str | Path | None = None) -> ProveSource:
    """The newest bench-prove recording (replay), else a proof of the tiny circuit made now.

    Args:
        mode: ``live``, ``replay`` or None (``$ZKGPU_MODE``, else live with a GPU, replay without).
        base: the data folder (default ``data/``).
    """
    if resolve_mode(mode) == "replay":
        found = find_benchmarks("prove", base)
        if found is not None and {"prove", "phases"} <= set(found[1]):
            return _from_recording(*found)
    return _prove_now()


def phase_timeline(phases: pd.DataFrame) -> pd.DataFrame:
    """Median ms per phase on one time axis: columns ``phase, start_ms, ms, on``.

    ``on`` is ``GPU`` (zkgpu's kernels with --device gpu), ``CPU`` (the main thread) or
    ``CPU thread`` (the G2 MSM overlapped with the main thread, placed at its recorded start).
    """
    med = phases.groupby("phase")["ms"].median()
    background = "msm_b2_g2.start" in med.index
    rows, t = [], 0.0
    for ph in TIMELINE_PHASES:
        if ph not in med.index:
            continue
        if ph == "msm_b2_g2" and background:
            start = float(med.get("read", 0.0)) + float(med["msm_b2_g2.start"])
            rows.append(dict(phase=ph, start_ms=start, ms=float(med[ph]), on="CPU thread"))
            continue
        rows.append(dict(phase=ph, start_ms=t, ms=float(med[ph]), on="GPU" if ph in GPU_PHASES else "CPU"))
        t += float(med[ph])
    return pd.DataFrame(rows)


def plot_phase_timeline(timeline: pd.DataFrame, *, on_gpu: bool, ax=None):
    """Horizontal bars, one per phase, at its start (ms): zkgpu's kernels, the main thread's CPU
    work and the overlapped G2 MSM coloured apart."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(9, 3.4))
    colors = {"GPU": "tab:green" if on_gpu else "tab:olive", "CPU": "tab:gray", "CPU thread": "lightgray"}
    labels = {"GPU": "zkgpu kernels (GPU)" if on_gpu else "zkgpu kernels' CPU references", "CPU": "CPU, main thread",
              "CPU thread": "CPU, G2 MSM thread (overlapped)"}  # fmt: skip
    for i, r in enumerate(timeline.itertuples()):
        ax.barh(i, r.ms, left=r.start_ms, color=colors[r.on], hatch="//" if r.on == "CPU thread" else None)
    ax.set_yticks(range(len(timeline)), timeline.phase)
    ax.invert_yaxis()
    ax.set_xlabel("ms since the start of the proof")
    present = [k for k in colors if k in set(timeline["on"])]
    ax.legend(handles=[plt.Rectangle((0, 0), 1, 1, color=colors[k]) for k in present], labels=[labels[k] for k in present],
              loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=len(present), fontsize=8, frameon=False)  # fmt: skip
    ax.set_title("one real Groth16 proof, phase by phase (median over proofs)")
    ax.figure.tight_layout()
    ax.figure.zkgpu_caption = (
        "One bar per phase of `zkgpu prove`, drawn from its start to its end in ms since the proof began "
        "(median over the proofs): "
        + ", ".join(labels[k] for k in present) + "."
    )
    return ax


def prove_key_numbers(src: ProveSource) -> dict:
    """Key numbers in the report's contract (``replay.number`` entries): ``source`` (the kind), the
    circuit's size, whether every proof verified, whole-command medians in ms, the speed-up over
    snarkjs when both were timed as whole commands, the share of the main thread's time in CPU
    phases, and ``g2_hidden_ms``: the G2 MSM's time overlapped with other phases."""
    med = src.runs.groupby("tool")["wall_s"].median()
    zk_tool = next(t for t in med.index if t.startswith("zkgpu"))
    tl = phase_timeline(src.phases)
    main = tl[tl["on"] != "CPU thread"]
    total = float(main.ms.sum()) or float("nan")
    num = replay.number
    out = {
        "source": num(src.kind, "", "data source"),
        "device": num(str(src.manifest.get("device")), "", "device of zkgpu prove"),
        "domain_size": num(int(src.manifest["domain_size"]), "", "QAP domain size n (NTT size, H MSM length)"),
        "n_vars": num(int(src.manifest["n_vars"]), "", "signals (A, B MSM length)"),
        "all_verified": num(str(bool(src.runs.verified.all())), "", "every proof accepted by snarkjs groth16 verify"),
        "zkgpu_prove_ms": num(1e3 * float(med[zk_tool]), "ms", "zkgpu prove, whole command, median"),
        "cpu_phase_share": num(float(main.loc[main["on"] == "CPU", "ms"].sum()) / total, "%",
                               "share of the proof's main-thread time in CPU phases"),
        "gpu_phase_ms": num(float(main.loc[main["on"] == "GPU", "ms"].sum()), "ms", "time in kernel phases, median proof"),
    }
    g2 = tl[tl.phase == "msm_b2_g2"]
    if len(g2) and g2["on"].iloc[0] == "CPU thread":  # the G2 MSM's time the main thread did not wait for
        waited = float(main.loc[main.phase == "g2_wait", "ms"].sum())
        out["g2_hidden_ms"] = num(max(0.0, float(g2.ms.iloc[0]) - waited), "ms", "G2 MSM time hidden behind other phases")
    if "snarkjs" in med.index:
        out["snarkjs_prove_ms"] = num(1e3 * float(med["snarkjs"]), "ms", "snarkjs groth16 prove, whole command, median")
        out["speedup_vs_snarkjs"] = num(float(med["snarkjs"] / med[zk_tool]), "x", "snarkjs time / zkgpu time")
    return out


def prove_finding(src: ProveSource) -> str:
    """One sentence for the report's index: what was proven, whether snarkjs accepted it, and the
    time against snarkjs's when both were measured."""
    k = prove_key_numbers(src)
    v = {name: d["value"] for name, d in k.items()}
    ok = "every proof was accepted by snarkjs groth16 verify" if v["all_verified"] == "True" else "NOT every proof verified"
    text = (f"zkgpu prove ({v['device']}) proved a circom circuit with a 2^{int(v['domain_size']).bit_length() - 1} domain "
            f"in {v['zkgpu_prove_ms']:,.0f} ms (median whole command) and {ok}")
    if "speedup_vs_snarkjs" in v:
        text += f"; snarkjs took {v['snarkjs_prove_ms']:,.0f} ms ({v['speedup_vs_snarkjs']:.2f}x zkgpu's time)"
    return text + "."
