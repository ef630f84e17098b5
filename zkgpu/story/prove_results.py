"""Notebook 10's data: a ``bench-prove`` recording (``prove.csv``, ``phases.csv``, ``manifest.json``) as a
:class:`ProveSource`, its phases on one time axis and its key numbers; real-circuit pipeline recordings under
:data:`REAL_DIR` (:func:`real_pipeline_recording`, :func:`real_pipeline_table`). Phase names are
:mod:`zkgpu.groth16.prover`'s plus ``read``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from zkgpu.analysis.keynumbers import number
from zkgpu.analysis.metrics import compute_utilization, throughput
from zkgpu.analysis.replay import Recording, benchmark_folders, data_dir, find_benchmarks, find_recordings, shown_path
from zkgpu.analysis.schema import check_manifest, loads_strict
from zkgpu.core.manifest import commit_label

__all__ = [
    "TIMELINE_PHASES",
    "GPU_PHASES",
    "ProveSource",
    "recorded_prove_source",
    "prove_recordings",
    "g2_where",
    "phase_comparison",
    "history_summary",
    "resident_table",
    "cold_summary",
    "real_g2_summary",
    "phase_timeline",
    "plot_phase_timeline",
    "command_ms",
    "prove_key_numbers",
    "prove_finding",
    "REAL_DIR",
    "real_pipeline_recording",
    "real_pipeline_table",
]

REAL_DIR = "real"
"""Sub-folder of ``data/`` for recordings of the pipeline proving a real circuit
(``scripts/gpu_run.sh record-real`` writes there), kept apart so that the scenario notebooks'
newest recording stays a synthetic scenario matrix."""

TIMELINE_PHASES = ("read", "key_matrices", "synthesis", "h_scalars", "msm_a", "msm_b1", "msm_l", "msm_h", "msm_b2_g2", "g2_wait", "finish")
"""The phases of one proof in the order they run on the main thread (one after the other); with
``overlap`` (the default) the G2 MSM runs on its own thread from ``msm_b2_g2.start`` and the main
thread waits for what is left of it in ``g2_wait``; without ``overlap``, or on the GPU (recordings since 2026-12-03),
it runs on the main thread after the G1 MSMs. ``key_matrices``: the key's A and B matrices built for a single
proof (recordings since 2026-12-03; a resident key builds them once)."""
GPU_PHASES = ("h_scalars", "msm_a", "msm_b1", "msm_l", "msm_h")
"""Phases on zkgpu's kernels with ``--device gpu`` in every recording (:func:`phase_timeline` adds the G2 MSM and synthesis where
the recording shows them there)."""


@dataclass
class ProveSource:
    """A set of proofs and their timings.

    Attributes:
        kind: ``recorded-gpu``, ``recorded-cpu``, ``live`` or ``cpu-standin``.
        runs: rows ``tool, repeat, wall_s, verified`` (whole commands).
        phases: rows ``repeat, phase, ms``.
        manifest: the recording's manifest (live: the circuit's sizes).
        folder: the recording folder, or None.
        resident: rows ``tool, repeat, wall_s, verified`` of resident-key proofs (empty when none).
        cold: rows ``tool, mode, repeat, wall_s, verified`` of ``--cold`` runs (empty when none).
        resident_phases: rows ``repeat, phase, ms`` of the resident proofs.
    """

    kind: str
    runs: pd.DataFrame
    phases: pd.DataFrame
    manifest: dict
    folder: Path | None
    resident: pd.DataFrame = field(default_factory=pd.DataFrame)
    cold: pd.DataFrame = field(default_factory=pd.DataFrame)
    resident_phases: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def on_gpu(self) -> bool:
        return self.kind in ("recorded-gpu", "live")

    def banner(self) -> str:
        m = self.manifest
        size = f"{m.get('circuit')}: {m.get('n_vars')} signals, domain {m.get('domain_size')}"
        if self.kind.startswith("recorded"):
            gpu = (m.get("environment") or {}).get("gpu") or "no GPU"
            what = "REPLAY of a GPU recording" if self.on_gpu else "REPLAY of a CPU recording"
            head = f"{what} made {m.get('date_utc', '?')} on {gpu} ({self.folder.name if self.folder is not None else '?'}), commit {commit_label(m)}"
        else:
            head = "proven now (no bench-prove recording in data/ or live mode)"
        note = "" if self.on_gpu else " -- CPU reference paths: NOT GPU numbers"
        return f"{head}; {size}; device {m.get('device')}{note}"


def recorded_prove_source(base: str | Path | None = None) -> ProveSource | None:
    """The newest ``<gpu>-<date>-bench-prove[-N]/`` folder under ``base`` (default: the replay data
    folder, :func:`zkgpu.analysis.replay.data_dir`) that has both tables, as a :class:`ProveSource`; None when
    there is none.

    Raises:
        ValueError: the folder's manifest.json is not JSON, not an object, or a field of the wrong type (names it).
    """
    found = find_benchmarks("prove", base, where=lambda t: {"prove", "phases"} <= set(t))
    if found is None:
        return None
    return _prove_source(*found)


def _prove_source(folder: Path, tables: dict[str, pd.DataFrame]) -> ProveSource:
    mf = folder / "manifest.json"
    try:
        manifest = loads_strict(mf.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ValueError(f"{mf} is not readable JSON: {exc}") from exc
    check_manifest(mf, manifest)  # the recordings' one check: an object whose fields hold their types
    kind = "recorded-gpu" if manifest.get("device") == "gpu" else "recorded-cpu"
    runs, phases = (_by_mode(tables[k], folder / f"{k}.csv") for k in ("prove", "phases"))
    _check_tables(runs, phases, folder)
    return ProveSource(kind=kind, runs=runs[runs["mode"] == "command"].drop(columns="mode"),
                       phases=phases[phases["mode"] == "command"].drop(columns="mode"), manifest=manifest, folder=folder,
                       resident=runs[runs["mode"] == "resident"].drop(columns="mode").reset_index(drop=True),
                       cold=runs[runs["mode"].isin(COLD_MODES)].reset_index(drop=True),
                       resident_phases=phases[phases["mode"] == "resident"].drop(columns="mode").reset_index(drop=True))  # fmt: skip


def prove_recordings(base: str | Path | None = None) -> list[ProveSource]:
    """Every ``bench-prove`` recording under ``base`` (default: the replay data folder) with both tables, oldest first:
    the history :func:`phase_comparison` draws.

    Raises:
        ValueError: as :func:`recorded_prove_source`.
    """
    out = []
    for folder in reversed(benchmark_folders("prove", base)):
        tables = {k: pd.read_csv(folder / f"{k}.csv") for k in ("prove", "phases") if (folder / f"{k}.csv").is_file()}
        if len(tables) == 2:
            out.append(_prove_source(folder, tables))
    return out


_COLUMNS = {"prove": {"tool": None, "repeat": "n", "wall_s": "n"}, "phases": {"repeat": "n", "phase": None, "ms": "n"}}
"""The columns each table needs (``n``: numeric), beside ``mode`` (:func:`_by_mode`)."""


def _check_tables(runs: pd.DataFrame, phases: pd.DataFrame, folder: Path) -> None:
    """A recording's tables hold what the readers below use: the columns (numbers where numbers go), one row per cold
    mode, and whole-command rows of a zkgpu tool (files are untrusted: a damaged one is named, not a KeyError).

    Raises:
        ValueError: one line naming the file and the column or rows."""
    for name, df in (("prove", runs), ("phases", phases)):
        for col, kind in _COLUMNS[name].items():
            if col not in df.columns:
                raise ValueError(f"{folder / name}.csv: no {col!r} column (columns: {', '.join(map(str, df.columns))})")
            if kind == "n" and not pd.api.types.is_numeric_dtype(df[col]):
                bad = df[col][pd.to_numeric(df[col], errors="coerce").isna()].iloc[0] if len(df) else None
                raise ValueError(f"{folder / name}.csv: column {col!r} holds {bad!r}, not a number")
    dup = runs["mode"][runs["mode"].isin(COLD_MODES)].duplicated()
    if dup.any():
        raise ValueError(f"{folder / 'prove'}.csv: mode {runs['mode'][dup[dup].index[0]]!r} appears more than once")
    cmd = runs[runs["mode"] == "command"]
    if not cmd["tool"].astype(str).str.startswith("zkgpu").any():
        raise ValueError(f"{folder / 'prove'}.csv: no whole-command row of a zkgpu tool (mode command, tool zkgpu-*)")


COLD_MODES = ("cold_build", "cold_first")
"""The modes of ``zkgpu bench prove --cold``'s rows (:class:`ProveSource` ``cold``)."""


def _by_mode(df: pd.DataFrame, path: Path) -> pd.DataFrame:
    """A table with its ``mode`` column (``command``, ``resident`` or :data:`COLD_MODES`); a recording without one holds
    commands only.

    Raises:
        ValueError: another mode (names it and the file).
    """
    if "mode" not in df.columns:
        return df.assign(mode="command")
    bad = sorted(set(df["mode"].astype(str)) - {"command", "resident", *COLD_MODES})
    if bad:
        raise ValueError(f"{path}: unknown mode {bad[0]!r} (expected command, resident, cold_build or cold_first)")
    return df


def phase_timeline(phases: pd.DataFrame, *, gpu: bool = True) -> pd.DataFrame:
    """Median ms per phase on one time axis: columns ``phase, start_ms, ms, on``, where ``on`` is ``GPU``, ``CPU``
    or ``CPU thread`` (the overlapped G2 MSM, at its recorded start).
    """
    med = phases.groupby("phase")["ms"].median()
    background = "msm_b2_g2.start" in med.index
    device_side = set(GPU_PHASES) | ({"msm_b2_g2"} | ({"synthesis"} if "key_matrices" in med.index else set()) if gpu else set())
    rows, t = [], 0.0
    for ph in TIMELINE_PHASES:
        if ph not in med.index:
            continue
        if ph == "msm_b2_g2" and background:
            start = float(med.get("read", 0.0)) + float(med["msm_b2_g2.start"])
            rows.append(dict(phase=ph, start_ms=start, ms=float(med[ph]), on="CPU thread"))
            continue
        rows.append(dict(phase=ph, start_ms=t, ms=float(med[ph]), on="GPU" if ph in device_side else "CPU"))
        t += float(med[ph])
    return pd.DataFrame(rows)


def plot_phase_timeline(timeline: pd.DataFrame, *, on_gpu: bool, ax=None):
    """Horizontal bars, one per phase, at its start (ms): zkgpu's kernels, the main thread's CPU
    work and the overlapped G2 MSM coloured apart."""
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


def command_ms(src: ProveSource) -> float:
    """The median time of one whole ``zkgpu prove`` command (ms): process start, imports, key read, the phases,
    writing the proof (:func:`phase_timeline` has the phases alone)."""
    med = src.runs.groupby("tool")["wall_s"].median()
    zk_tool = next(t for t in med.index if t.startswith("zkgpu"))
    return 1e3 * float(med[zk_tool])


def prove_key_numbers(src: ProveSource) -> dict:
    """Key numbers in the report's contract (:func:`zkgpu.analysis.keynumbers.number` entries): ``source`` (the kind), the
    circuit's size, whether every proof verified, whole-command medians in ms, the speed-up over
    snarkjs when both were timed as whole commands, the share of the main thread's time in CPU
    phases, and ``g2_hidden_ms``: the G2 MSM's time overlapped with other phases."""
    med = src.runs.groupby("tool")["wall_s"].median()
    zk_tool = next(t for t in med.index if t.startswith("zkgpu"))
    tl = phase_timeline(src.phases, gpu=src.on_gpu)
    main = tl[tl["on"] != "CPU thread"]
    total = float(main.ms.sum()) or float("nan")
    num = functools.partial(number, recording=shown_path(src.folder) if src.folder is not None else "")  # each number names its recording
    out = {
        "source": num(src.kind, "", "data source"),
        "device": num(str(src.manifest.get("device")), "", "device of zkgpu prove"),
        "domain_size": num(int(src.manifest["domain_size"]), "", "QAP domain size n (NTT size, H MSM length)"),
        "n_vars": num(int(src.manifest["n_vars"]), "", "signals (A, B MSM length)"),
        "all_verified": num("yes" if bool(src.runs.verified.all()) else "no", "", "every proof accepted by snarkjs groth16 verify"),
        "zkgpu_prove_ms": num(command_ms(src), "ms", "zkgpu prove, whole command, median"),
        "proof_phases_ms": num(float((tl["start_ms"] + tl["ms"]).max()) if len(tl) else float("nan"), "ms",
                               "zkgpu prove's phases, key read to the last phase's end, median proof (inside the whole command)"),
        "cpu_phase_share": num(float(main.loc[main["on"] == "CPU", "ms"].sum()) / total, "%",
                               "share of the proof's main-thread time in CPU phases"),
        "kernel_phases_ms": num(float(main.loc[main["on"] == "GPU", "ms"].sum()), "ms", "time in kernel phases, median proof"),
    }
    g2 = tl[tl.phase == "msm_b2_g2"]
    if len(g2) and g2["on"].iloc[0] == "CPU thread":  # the G2 MSM's time the main thread did not wait for
        waited = float(main.loc[main.phase == "g2_wait", "ms"].sum())
        out["g2_hidden_ms"] = num(max(0.0, float(g2.ms.iloc[0]) - waited), "ms", "G2 MSM time hidden behind other phases")
    if len(src.resident):
        res = src.manifest.get("resident") or {}
        out["resident_proof_ms"] = num(1e3 * float(src.resident["wall_s"].median()), "ms",
                                       "one proof with the key resident (Prover.prove, key read once), median")
        if isinstance(res.get("proofs_per_s"), (int, float)):
            out["resident_proofs_per_s"] = num(float(res["proofs_per_s"]), "",
                                               f"proofs per second with the key resident, over {res.get('proofs')} proofs")
    phase_med = src.phases.groupby("phase")["ms"].median()
    for ph, label in (("synthesis", "synthesis (A·w, B·w, C), median proof"), ("msm_b2_g2", f"the G2 MSM ({g2_where(src)}), median proof")):
        if ph in phase_med.index:
            out[f"{ph}_ms"] = num(float(phase_med[ph]), "ms", label)
    cold = src.cold.set_index("mode")["wall_s"] if len(src.cold) else pd.Series(dtype=float)
    if "cold_build" in cold.index:
        out["cold_build_ms"] = num(1e3 * float(cold["cold_build"]), "ms", "zkgpu build in empty kernel caches")
    if "cold_first" in cold.index:
        out["cold_first_command_ms"] = num(1e3 * float(cold["cold_first"]), "ms", "the first whole zkgpu prove command after zkgpu build")
    if "snarkjs" in med.index:
        out["snarkjs_prove_ms"] = num(1e3 * float(med["snarkjs"]), "ms", "snarkjs groth16 prove, whole command, median")
        out["speedup_vs_snarkjs"] = num(float(med["snarkjs"] / med[zk_tool]), "x", "snarkjs time / zkgpu time")
    return out


def g2_where(src: ProveSource) -> str:
    """Where a recording's G2 MSM ran, from its phases: ``GPU``, ``CPU`` (main thread) or ``CPU thread`` (overlapped)."""
    tl = phase_timeline(src.phases, gpu=src.on_gpu)
    g2 = tl.loc[tl["phase"] == "msm_b2_g2", "on"]
    return str(g2.iloc[0]) if len(g2) else "not recorded"


COMPARED_PHASES = ("one proof", "read", "key_matrices", "synthesis", "h_scalars", "msm_a", "msm_b1", "msm_l", "msm_h", "msm_b2_g2",
                   "g2_wait", "finish")
"""The rows of :func:`phase_comparison`: ``one proof`` (a whole command, or one resident proof), then the phases."""


def _series_name(src: ProveSource, what: str) -> str:
    return f"{src.folder.name if src.folder is not None else src.kind} ({what}, G2 MSM {g2_where(src)})"


def phase_comparison(sources: list[ProveSource]) -> pd.DataFrame:
    """The median ms of each phase of one proof (:data:`COMPARED_PHASES`), per recording: columns ``series, phase, ms``.

    One series per recording's whole commands, oldest first (its ``one proof`` row: the command's median), then one for
    the newest recording's resident-key proofs when it has them (``one proof``: a ``Prover.prove`` call's median).
    """
    rows = []
    for src in sources:
        name = _series_name(src, "whole command")
        med = src.phases.groupby("phase")["ms"].median()
        rows.append(dict(series=name, phase="one proof", ms=command_ms(src)))
        rows += [dict(series=name, phase=ph, ms=float(med[ph])) for ph in COMPARED_PHASES[1:] if ph in med.index]
    last = sources[-1] if sources else None
    if last is not None and len(last.resident) and len(last.resident_phases):
        name = _series_name(last, "key resident")
        med = last.resident_phases.groupby("phase")["ms"].median()
        rows.append(dict(series=name, phase="one proof", ms=1e3 * float(last.resident["wall_s"].median())))
        rows += [dict(series=name, phase=ph, ms=float(med[ph])) for ph in COMPARED_PHASES[1:] if ph in med.index]
    out = pd.DataFrame(rows, columns=["series", "phase", "ms"])
    order = {ph: i for i, ph in enumerate(COMPARED_PHASES)}
    return out.sort_values("phase", key=lambda c: c.map(order), kind="stable").reset_index(drop=True)


def history_summary(sources: list[ProveSource]) -> str:
    """Two sentences from the oldest and the newest recording: the whole command and the G2 MSM then and now, and
    the newest command's largest phases ('' with fewer than two recordings)."""
    if len(sources) < 2:
        return ""
    old, new = sources[0], sources[-1]
    om, nm = (s.phases.groupby("phase")["ms"].median() for s in (old, new))
    tl = phase_timeline(new.phases, gpu=new.on_gpu)
    top = tl.sort_values("ms", ascending=False).head(3)
    g2 = lambda m, s: f"{m['msm_b2_g2']:,.0f} ms ({g2_where(s)})" if "msm_b2_g2" in m.index else "not recorded"  # noqa: E731
    text = (f"In {old.folder.name if old.folder else '?'}, one whole `zkgpu prove` command took {command_ms(old):,.0f} ms and its "
            f"G2 MSM {g2(om, old)}; in {new.folder.name if new.folder else '?'}, the newest, the command takes "
            f"{command_ms(new):,.0f} ms and the G2 MSM {g2(nm, new)}. ")
    return text + ("Its largest phases now: " + ", ".join(f"{r.phase} {r.ms:,.0f} ms ({r.on})" for r in top.itertuples())
                   + "; the rest of the command, outside the phases, is the process starting, its imports and writing the proof.")


def resident_table(src: ProveSource) -> pd.DataFrame:
    """The resident-key proofs in one row (empty when not recorded): proofs, key read (ms), per-proof median / min / max
    (ms), proofs/s (the manifest's: proofs over the loop's wall time), all verified."""
    if not len(src.resident):
        return pd.DataFrame()
    res, ms = src.manifest.get("resident") or {}, 1e3 * src.resident["wall_s"]
    return pd.DataFrame([{"proofs": len(ms), "read_key_ms": res.get("read_key_ms"), "proof_median_ms": float(ms.median()),
                          "proof_min_ms": float(ms.min()), "proof_max_ms": float(ms.max()), "proofs_per_s": res.get("proofs_per_s"),
                          "all_verified": bool(src.resident["verified"].all())}], index=["key resident"])  # fmt: skip


def cold_summary(src: ProveSource) -> str:
    """One sentence on ``--cold``'s rows against the warm commands ('' when not recorded)."""
    cold = src.cold.set_index("mode")["wall_s"] if len(src.cold) else pd.Series(dtype=float)
    if not {"cold_build", "cold_first"} <= set(cold.index):
        return ""
    return (f"From empty kernel caches, `zkgpu build` took {cold['cold_build']:,.1f} s; the first whole command after it took "
            f"{1e3 * cold['cold_first']:,.0f} ms, against {command_ms(src):,.0f} ms for the warm commands' median.")


def real_g2_summary(rec: Recording) -> str:
    """Where the real-circuit recording's ``b_g2_msm`` ran, read from its events: its median ms per scenario and whether
    any GPU time was recorded for it."""
    parts = []
    for name in rec.scenarios:
        if "events" not in rec.scenario(name):
            continue
        g2 = rec.events(name).query("phase == 'b_g2_msm'")
        if not len(g2):
            continue
        ms = float(((g2["end_ns"] - g2["start_ns"]) / 1e6).median())
        where = "with GPU time recorded" if g2["gpu_ms"].notna().any() else "with no GPU time recorded: on the CPU"
        parts.append(f"{name}: {ms:,.0f} ms per partition (median), {where}")
    return ("In this recording, b_g2_msm took " + "; ".join(parts) + ".") if parts else ""


def prove_finding(src: ProveSource) -> str:
    """One sentence for the report's index: what was proven, whether snarkjs accepted it, and the
    time against snarkjs's when both were measured."""
    k = prove_key_numbers(src)
    v = {name: d["value"] for name, d in k.items()}
    ok = "every proof was accepted by snarkjs groth16 verify" if v["all_verified"] == "yes" else "NOT every proof verified"
    text = (f"zkgpu prove ({v['device']}) proved a circom circuit with a 2^{int(v['domain_size']).bit_length() - 1} domain "
            f"in {v['zkgpu_prove_ms']:,.0f} ms (median whole command) and {ok}")
    if "speedup_vs_snarkjs" in v:
        text += f"; snarkjs took {v['snarkjs_prove_ms']:,.0f} ms ({v['speedup_vs_snarkjs']:.2f}x zkgpu's time)"
    return text + "."


def real_pipeline_recording(base: str | Path | None = None, *, gpu_only: bool = True) -> Recording | None:
    """The newest recording under ``<base>/real/`` (:data:`REAL_DIR`; base default the replay data
    folder) whose manifest names a circuit; with ``gpu_only`` (default) only GPU ones. None when
    there is none."""
    root = Path(base) if base is not None else data_dir()
    for rec in find_recordings(root / REAL_DIR):
        if rec.manifest.get("circuit") and (rec.is_gpu or not gpu_only):
            return rec
    return None


def real_pipeline_table(rec: Recording) -> pd.DataFrame:
    """One row per scenario of a real-circuit recording: partitions proven, proofs accepted (of
    written) and by which verifier, the run's wall time (s), seconds per proof and compute
    utilization (:func:`zkgpu.analysis.metrics.compute_utilization`: kernel time without exposed H2D over
    wall time, a fraction)."""
    rows = []
    for name in rec.scenarios:
        e = rec.scenario(name)
        if "events" not in e:
            continue
        ev = rec.events(name)
        tp, cu = throughput(ev), compute_utilization(ev)
        pr = e.get("proofs") or {}
        rows.append({
            "scenario": name, "partitions_ok": e.get("partitions_ok"), "proofs_verified": pr.get("verified"),
            "proofs_written": pr.get("written"), "verifier": pr.get("tool"), "wall_s": float(tp["wall_ms"].iloc[0]) / 1e3,
            "s_per_partition": float(tp["s_per_partition"].iloc[0]), "compute_utilization": float(cu["utilization"].iloc[0]),
        })  # fmt: skip
    return pd.DataFrame(rows).set_index("scenario") if rows else pd.DataFrame()
