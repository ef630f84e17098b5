"""Recorded runs in ``data/``: finding them, reading them, and the tables every notebook shares.

:func:`recorded_source` reads the newest GPU recording, else the newest CPU one. Live mode is
:func:`zkgpu.app.live.open_source`. Reference numbers are read from ``data/reference/``."""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from zkgpu.analysis import metrics
from zkgpu.analysis.schema import check_manifest as _check_manifest
from zkgpu.analysis.schema import loads_strict, read_events
from zkgpu.core.events import normalize_events
from zkgpu.core.manifest import DATA_DIR, command_of

__all__ = ["configure", "data_dir", "reference_path", "shown_path", "Recording", "find_recordings", "read_events",
           "RECORDING_KINDS", "inventory", "inventory_by_kind", "benchmark_pivot", "latest_recording", "find_benchmarks", "benchmark_folders",
           "is_default_ntt_run", "Source", "recorded_source", "STORY_ORDER", "story_order", "reference_table",
           "scenario_table"]

_RECORD_RE = re.compile(r"^(?P<gpu>.+)-(?P<date>\d{8})-record(?:-(?P<n>\d+))?$")
_INCOMPLETE_RE = re.compile(r"^(?P<gpu>.+)-(?P<date>\d{8})-record(?:-\d+)?-incomplete(?:-\d+)?$")  # zkgpu.core.manifest.mark_incomplete
_BENCH_RE = re.compile(r"^(?P<gpu>.+)-(?P<date>\d{8})-bench-(?P<kind>[a-z0-9-]+?)(?:-(?P<n>\d+))?$")
#: The order in which the story meets the scenarios: baseline → registered → pinned pool → narrow
#: lock → the gw sweep (1, 2 = pinned_pool, 3) → compute-only. Tables and figures follow it.
STORY_ORDER: tuple[str, ...] = ("baseline", "registered", "pinned_pool", "pinned_narrow", "pinned_gw1", "pinned_gw3", "compute_only")


def story_order(names: Iterable[str]) -> list[str]:
    """``names`` sorted in :data:`STORY_ORDER` (unknown names after, in their given order)."""
    names = list(dict.fromkeys(names))
    pos = {n: i for i, n in enumerate(STORY_ORDER)}
    return sorted(names, key=lambda n: (pos.get(n, len(pos)), names.index(n)))


_DATA_DIR: Path | None = None  # set by configure(); None: the repository's data/


def configure(data_dir: str | Path | None = None) -> None:
    """Set the folder of recorded runs (None: the repository's ``data/``). Raises ValueError: an empty string."""
    global _DATA_DIR
    if data_dir is not None and not str(data_dir).strip():
        raise ValueError(f"data_dir must be a folder path or None, got {data_dir!r}")
    _DATA_DIR = Path(data_dir) if data_dir is not None else None


def data_dir() -> Path:
    """The folder holding recorded runs: the one given to :func:`configure`, else the repository's ``data/``."""
    return _DATA_DIR if _DATA_DIR is not None else DATA_DIR


def shown_path(path: str | Path) -> str:
    """``path`` as a page may print it, never absolute: ``data/...`` under :func:`data_dir`, relative to
    the repository under it, else the folder's name alone (a temporary live run's folder)."""
    p = Path(path)
    for root, prefix in ((data_dir(), "data"), (DATA_DIR.parent, "")):
        try:
            rel = p.resolve().relative_to(Path(root).resolve())
        except ValueError:
            continue
        return (Path(prefix) / rel).as_posix() if prefix else rel.as_posix()
    return p.name


def reference_path(name: str = "") -> Path:
    """A file under the repository's ``data/reference/`` (the seed's lines, upstream's tables)."""
    return DATA_DIR / "reference" / name


# --------------------------------------------------------------------------- recordings

@dataclass
class Recording:
    """One recording: a folder with ``manifest.json``, ``events/*.parquet``, ``logs/*.log`` and benchmark tables."""

    path: Path
    manifest: dict[str, Any] = field(repr=False)

    @classmethod
    def open(cls, path: str | Path) -> Recording:
        """Read ``<path>/manifest.json``. Raises FileNotFoundError: none; ValueError: not a recording's manifest."""
        p = Path(path)
        if p.name in ("", ".."):  # "." or "..": the folder's own name, for labels and the files named after it
            p = p.resolve()
        mf = p / "manifest.json"
        if not mf.is_file():
            raise FileNotFoundError(f"{p} has no manifest.json: not a finished recording")
        try:
            manifest = loads_strict(mf.read_text(encoding="utf-8"))
        except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, a key twice
            raise ValueError(f"{mf} is not readable JSON: {exc}") from exc
        if not isinstance(manifest, dict):
            raise ValueError(f"{mf} holds a JSON {type(manifest).__name__}, not the object a recording writes")
        _check_manifest(mf, manifest)
        return cls(p, manifest)

    @property
    def gpu(self) -> str | None:
        """GPU name from the manifest's environment, None for a CPU recording."""
        env = self.manifest.get("environment") or {}
        return env.get("gpu") if self.manifest.get("device", "gpu") != "cpu" else None

    @property
    def is_gpu(self) -> bool:
        return self.gpu is not None

    @property
    def date(self) -> str:
        return str(self.manifest.get("date_utc", ""))

    @property
    def label(self) -> str:
        """Human label: folder, device, date, size."""
        dev = self.gpu or "CPU (no GPU: CPU milliseconds, not GPU numbers)"
        n = self.manifest.get("n")
        load = self.host_load_threads
        extra = f"; host memory load: {load} threads (zkgpu.transfer.hostload)" if load else ""
        return f"{self.folder} [{dev}; {self.date}; n={n}, partitions={self.manifest.get('partitions')}{extra}]"

    @property
    def folder(self) -> str:
        """The recording as pages and key numbers name it: its folder under the data folder (``data/last-mile/...``,
        :func:`shown_path`), since names repeat across sub-folders (a main and a last-mile ``...-record-2``)."""
        return shown_path(self.path)

    @property
    def host_load_threads(self) -> int:
        """Threads of :class:`zkgpu.transfer.hostload.HostMemoryLoad` that ran during the scenarios (0: none)."""
        return int((self.manifest.get("host_load") or {}).get("threads") or 0)

    @property
    def command(self) -> str | None:
        """The command that recorded it, ``zkgpu <args>`` with paths relative to the data folder (an older
        manifest's absolute paths read the same way: :func:`zkgpu.core.manifest.command_of`)."""
        return command_of(self.manifest, data_dir())

    @property
    def incomplete(self) -> str | None:
        """Why the recording is not complete (``"complete": false`` with ``"incomplete"``, or the older form: an
        ``"interrupted"`` reason under a normal folder name), else None."""
        m = self.manifest
        if m.get("complete") is False or m.get("interrupted"):
            return str(m.get("incomplete") or m.get("interrupted") or "marked incomplete")
        return None

    @property
    def scenarios(self) -> list[str]:
        """Names of the recorded scenarios, in recording order."""
        return list((self.manifest.get("scenarios") or {}).keys())

    def scenario(self, name: str) -> dict[str, Any]:
        """A scenario's manifest entry. Raises KeyError: unknown (lists the known ones)."""
        sc = self.manifest.get("scenarios") or {}
        if name not in sc:
            raise KeyError(f"scenario {name!r} is not in {self.path.name}; recorded: {list(sc)}")
        return sc[name]

    def file(self, rel: str) -> Path:
        """A manifest path inside the run folder. Raises ValueError: absolute or leading out of it."""
        root = self.path.resolve()
        p = (self.path / rel).resolve()
        if not p.is_relative_to(root):
            raise ValueError(f"{self.path.name}/manifest.json names {rel!r}, outside the run folder")
        return p

    @property
    def repeats(self) -> int:
        """Runs of every scenario (``zkgpu record --repeats``; 1 for recordings made before repeats)."""
        k = self.manifest.get("repeats", 1)
        return k if isinstance(k, int) and not isinstance(k, bool) and k >= 1 else 1

    def runs(self, name: str) -> list[dict[str, Any]]:
        """The manifest entries of every run of one scenario, in recording order: its ``repeats`` list,
        or the scenario's own entry when it was run once. Raises KeyError for an unknown scenario."""
        entry = self.scenario(name)
        reps = entry.get("repeats")
        if isinstance(reps, list) and reps and all(isinstance(r, dict) for r in reps):
            return reps
        return [entry]

    def events(self, name: str, run: int | None = None) -> pd.DataFrame:
        """A scenario's event table: its median-throughput run, or run ``run``. Raises KeyError: unknown scenario or no
        events. ValueError: bad path or unreadable file. IndexError: bad ``run``."""
        entry = self.scenario(name) if run is None else self.runs(name)[run]
        rel = entry.get("events")
        if not rel:
            raise KeyError(f"scenario {name!r} in {self.path.name} has no event table: {entry.get('error', 'no reason recorded')}")
        return read_events(self.file(rel))

    def all_events(self, names: Iterable[str] | None = None) -> pd.DataFrame:
        """Event tables of several (default: all successful) scenarios, concatenated."""
        names = list(names) if names is not None else [s for s in self.scenarios if self.scenario(s).get("events")]
        frames = [self.events(s) for s in names]
        return pd.concat(frames, ignore_index=True) if frames else normalize_events(pd.DataFrame())

    def log_path(self, name: str) -> Path | None:
        """The cuzk-format log of one scenario, or None."""
        rel = self.scenario(name).get("log")
        return self.file(rel) if rel else None

    def sweep(self) -> pd.DataFrame | None:
        """The H2D bandwidth sweep recorded with the scenarios, or None."""
        rel = self.manifest.get("sweep")
        if not rel:
            return None
        p = self.file(rel)
        return pd.read_parquet(p) if p.suffix == ".parquet" else pd.read_csv(p)

    def host_alloc(self) -> pd.DataFrame | None:
        """cudaHostAlloc / cudaHostRegister costs recorded with the sweep (``host_alloc.csv``), or None."""
        p = self.path / "host_alloc.csv"
        return pd.read_csv(p) if p.is_file() else None

    def benchmarks(self) -> dict[str, pd.DataFrame]:
        """Kernel benchmark tables recorded with the scenarios: ``{name: DataFrame}``."""
        out: dict[str, pd.DataFrame] = {}
        for name, rel in (self.manifest.get("benchmarks") or {}).items():
            if isinstance(rel, str) and self.file(rel).is_file():
                out[name] = _read_table(self.file(rel))
        return out


def _read_table(p: Path) -> pd.DataFrame:
    if p.suffix == ".parquet":
        return pd.read_parquet(p)
    if p.suffix == ".json":
        obj = json.loads(p.read_text(encoding="utf-8"))
        return pd.json_normalize(obj if isinstance(obj, list) else obj.get("results", [obj]))
    return pd.read_csv(p)


def _sort_key(rec: Recording) -> tuple[str, str, int]:
    m = _RECORD_RE.match(rec.path.name)
    n = int(m.group("n")) if m and m.group("n") else 0
    return (rec.date, m.group("date") if m else "", n)


def find_recordings(base: str | Path | None = None) -> list[Recording]:
    """Every finished recording under ``base``, newest first; incomplete or unreadable ones skipped with a UserWarning."""
    root = Path(base) if base is not None else data_dir()
    found = []
    if root.is_dir():
        for p in root.iterdir():
            if not (p.is_dir() and (p / "manifest.json").is_file()):
                continue
            if _INCOMPLETE_RE.match(p.name):
                warnings.warn(f"skipping incomplete recording {p} (it did not finish, or no scenario succeeded)", UserWarning, stacklevel=2)
                continue
            if not _RECORD_RE.match(p.name):
                continue
            try:
                rec = Recording.open(p)
            except (OSError, ValueError) as exc:
                warnings.warn(f"skipping recording {p}: {exc}", UserWarning, stacklevel=2)
                continue
            why = rec.incomplete
            if why:  # the old form: an interrupted recording under a normal name
                warnings.warn(f"skipping incomplete recording {p}: {why}", UserWarning, stacklevel=2)
                continue
            found.append(rec)
    return sorted(found, key=_sort_key, reverse=True)


def latest_recording(base: str | Path | None = None, gpu_only: bool = False) -> Recording | None:
    """The newest GPU recording; else (unless ``gpu_only``) the newest CPU one; else None."""
    recs = find_recordings(base)
    gpu = [r for r in recs if r.is_gpu]
    if gpu:
        return gpu[0]
    if gpu_only or not recs:
        return None
    return recs[0]


def benchmark_folders(kind: str, base: str | Path | None = None) -> list[Path]:
    """Every ``<gpu>-<date>-bench-<kind>[-N]/`` folder with a manifest under ``base`` (default :func:`data_dir`), newest first."""
    root = Path(base) if base is not None else data_dir()
    cands = []
    if root.is_dir():
        for p in root.iterdir():
            m = _BENCH_RE.match(p.name)
            if p.is_dir() and m and m.group("kind") == kind and (p / "manifest.json").is_file():
                cands.append((m.group("date"), int(m.group("n") or 0), p))
    return [p for _, _, p in sorted(cands, reverse=True)]


def find_benchmarks(
    kind: str, base: str | Path | None = None, *, where: Callable[[dict[str, pd.DataFrame]], bool] | None = None
) -> tuple[Path, dict[str, pd.DataFrame]] | None:
    """Newest finished ``<gpu>-<date>-bench-<kind>[-N]/`` folder accepted by ``where``, and its tables; or None."""
    for p in benchmark_folders(kind, base):
        tables = {}
        for f in sorted(p.iterdir()):
            if f.suffix in (".csv", ".parquet") or (f.suffix == ".json" and f.name != "manifest.json"):
                try:
                    tables[f.stem] = _read_table(f)
                except (ValueError, OSError):
                    continue
        if tables and (where is None or where(tables)):
            return p, tables
    return None


def is_default_ntt_run(tables: dict[str, pd.DataFrame]) -> bool:
    """True when a ``bench-ntt`` table has the default kernel's forward rows and ``compute_h`` rows."""
    t = tables.get("ntt")
    if t is None or not {"kernel", "variant"} <= set(t.columns):
        return False
    default = t[t["kernel"] == "stagewise"]
    return bool((default["variant"] == "forward-nn").any() and (default["variant"] == "compute_h").any())


#: What each kind of recorded folder in ``data/`` is, and which notebooks read it (:func:`inventory`).
RECORDING_KINDS: dict[str, str] = {
    "record": "the scenario matrix (baseline → compute_only) by `zkgpu record`; notebooks 00-08 replay the newest",
    "bench": "kernel and transfer benchmarks (`zkgpu bench`, scripts/gpu_run.sh); the newest of each kind feeds "
             "05 (h2d, load), 07b (prep), 08 (ntt, msm, sppark) and 10 (prove)",
    "last-mile": "data/last-mile/: the scenarios that take prep_msm off the critical path; 07b and 08 replay the newest",
    "real": "data/real/: the pipeline proving a real circom circuit; notebook 10 replays the newest",
    "seed-regime": "data/seed-regime/: prep_msm threads × host load, the grid point nearest the seed's proportions (04)",
    "other": "anything else with a manifest, e.g. an anchor run beside a benchmark (anchors/)"}


def inventory(base: str | Path | None = None) -> pd.DataFrame:
    """Every folder with a manifest under ``base`` and one sub-level, newest first. Columns: ``folder``, ``kind``
    (:data:`RECORDING_KINDS` or other), ``detail``, ``date_utc``, ``gpu``."""
    root = Path(base) if base is not None else data_dir()
    rows = []
    for mf in sorted([*root.glob("*/manifest.json"), *root.glob("*/*/manifest.json")]):
        folder = mf.parent
        rel = folder.relative_to(root)
        try:
            loaded = json.loads(mf.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):  # RecursionError: nested deeper than json's stack
            loaded = None
        m: dict[str, Any] = loaded if isinstance(loaded, dict) else {}
        sub = rel.parts[0] if len(rel.parts) > 1 else ""
        bench = _BENCH_RE.match(folder.name)
        kind = sub or ("record" if _RECORD_RE.match(folder.name) else "bench" if bench else "other")
        scen = m.get("scenarios")
        if not m:
            detail = "unreadable manifest"
        elif kind == "bench" and bench:
            detail = bench.group("kind")
        else:
            detail = f"{len(scen)} scenario{'s' if len(scen) != 1 else ''}" if isinstance(scen, dict) else ""
        env = m["environment"] if isinstance(m.get("environment"), dict) else {}
        rows.append({"folder": rel.as_posix(), "kind": kind, "detail": detail, "date_utc": str(m.get("date_utc") or ""),
                     "gpu": str(env.get("gpu") or ("CPU" if m.get("device") == "cpu" else ""))})
    cols = ["folder", "kind", "detail", "date_utc", "gpu"]
    out = pd.DataFrame(rows, columns=cols)
    return out.sort_values(["date_utc", "folder"], ascending=False, ignore_index=True) if len(out) else out


def _details(details: Iterable[str]) -> str:
    """Distinct details joined; scenario counts as one range ("7–12 scenarios")."""
    ds, counts = sorted({d for d in details if d}), sorted({int(d.split()[0]) for d in details if re.fullmatch(r"\d+ scenarios?", d)})
    rest = [d for d in ds if not re.fullmatch(r"\d+ scenarios?", d)]
    return ", ".join([*rest, *([f"{counts[0]}{'' if len(counts) == 1 else f'–{counts[-1]}'} scenario{'s' if counts[-1] != 1 else ''}"] if counts else [])])


def inventory_by_kind(inv: pd.DataFrame) -> pd.DataFrame:
    """:func:`inventory` counted per kind: ``recordings``, ``details``, ``what``."""
    kinds = [k for k in RECORDING_KINDS if k in set(inv["kind"])] + sorted(set(inv["kind"]) - set(RECORDING_KINDS))
    rows = {k: {"recordings": int((inv["kind"] == k).sum()), "details": _details(inv.loc[inv["kind"] == k, "detail"]),
                "what": RECORDING_KINDS.get(k, "")} for k in kinds}
    out = pd.DataFrame.from_dict(rows, orient="index", columns=["recordings", "details", "what"])
    out.index.name = "kind"
    return out


# --------------------------------------------------------------------------- the notebook's source


@dataclass
class Source:
    """The data a notebook works on: ``kind`` (live, recorded-gpu, recorded-cpu, cpu-standin), ``recording``, ``mode``,
    and ``ignored`` parameters ``{name: value}``."""

    kind: str
    recording: Recording
    mode: str
    ignored: dict[str, Any] = field(default_factory=dict)

    @property
    def on_gpu(self) -> bool:
        """True when the numbers are GPU measurements (live or a GPU recording)."""
        return self.kind in ("live", "recorded-gpu")

    @property
    def device_label(self) -> str:
        return self.recording.gpu or "CPU"

    def banner(self) -> str:
        """One paragraph saying where every number below comes from."""
        r = self.recording
        if self.kind == "live":
            head = f"LIVE: measured now on {r.gpu}"
        elif self.kind == "recorded-gpu":
            head = f"REPLAY of a GPU recording on {r.gpu}"
        elif self.kind == "recorded-cpu":
            head = "REPLAY of a CPU recording (no GPU recording in data/ yet): CPU milliseconds, NOT GPU numbers"
        else:
            head = (
                "CPU STAND-IN: no recording exists in data/, so a tiny CPU run of the pipeline was made now "
                "(device=cpu). Its milliseconds are CPU milliseconds, NOT GPU numbers; the shapes of the "
                "timelines and the mechanisms are what to look at"
            )
        text = f"{head}.\nData: {r.label}\nFolder: {shown_path(r.path)}"
        if self.ignored:
            n = r.manifest.get("n")
            size = f"n = 2^{int(n).bit_length() - 1}" if isinstance(n, int) and n > 0 and n & (n - 1) == 0 else f"n = {n}"
            names = ", ".join(f"{k} = {v}" for k, v in self.ignored.items())
            text += (f"\n{names} ignored: replaying a recording at {size}, {r.manifest.get('partitions')} partitions, "
                     f"host load {r.host_load_threads} threads")
        return text

    @property
    def scenarios(self) -> list[str]:
        return self.recording.scenarios

    def has(self, scenario: str) -> bool:
        """True when the scenario was recorded with an event table."""
        return scenario in self.scenarios and bool(self.recording.scenario(scenario).get("events"))

    def events(self, scenario: str, run: int | None = None) -> pd.DataFrame:
        return self.recording.events(scenario, run)

    def runs(self, scenario: str) -> list[dict[str, Any]]:
        return self.recording.runs(scenario)

    def all_events(self, names: Iterable[str] | None = None) -> pd.DataFrame:
        return self.recording.all_events(names)

    def log_path(self, scenario: str) -> Path | None:
        return self.recording.log_path(scenario)

    def config(self, scenario: str) -> dict[str, Any]:
        return dict(self.recording.scenario(scenario).get("config") or {})

    def sweep(self) -> pd.DataFrame | None:
        """The recording's H2D sweep, else the newest ``bench-h2d`` folder's table (GPU only)."""
        s = self.recording.sweep()
        if s is not None:
            return s
        if self.kind != "recorded-gpu":
            return None
        found = find_benchmarks("h2d")
        return found[1].get("sweep") if found else None

    def h2d_under_load(self) -> pd.DataFrame | None:
        """Pageable vs pinned H2D under host memory load: the newest ``bench-load`` folder's
        ``load`` table (:func:`zkgpu.app.bench.hostload.h2d_under_load`), for GPU recordings; else None."""
        if self.kind != "recorded-gpu":
            return None
        found = find_benchmarks("load")
        return found[1].get("load") if found else None

    def host_alloc(self) -> pd.DataFrame | None:
        """Pinning costs per size: the recording's, else the newest ``bench-h2d`` folder's (GPU only)."""
        h = self.recording.host_alloc()
        if h is not None or self.kind != "recorded-gpu":
            return h
        found = find_benchmarks("h2d")
        return found[1].get("host_alloc") if found else None

    def benchmarks(self) -> dict[str, pd.DataFrame]:
        """Kernel benchmarks: the recording's, plus the newest ``bench-ntt``/``bench-msm`` folders (GPU)."""
        out = dict(self.recording.benchmarks())
        if self.kind == "recorded-gpu":
            for kind in ("ntt", "msm"):
                if not any(k.startswith(kind) for k in out):
                    found = find_benchmarks(kind, where=is_default_ntt_run if kind == "ntt" else None)
                    if found:
                        for stem, df in found[1].items():
                            out[f"{kind}:{stem}"] = df
        return out


def recorded_source(base: str | Path | None = None) -> Source | None:
    """The newest GPU recording under ``base`` (default :func:`data_dir`), else the newest CPU one,
    as a replay :class:`Source`; None when there is no recording."""
    rec = latest_recording(base)
    if rec is None:
        return None
    return Source("recorded-gpu" if rec.is_gpu else "recorded-cpu", rec, "replay")


# --------------------------------------------------------------------------- shared notebook tables


def reference_table(name: str) -> pd.DataFrame:
    """A CSV of upstream's published numbers from ``data/reference/`` (e.g. ``cuzk_utilization.csv``)."""
    return pd.read_csv(reference_path(name))


def _median_ms(ev: pd.DataFrame, phase: str) -> float:
    sel = ev[ev["phase"] == phase]
    return float(((sel["end_ns"] - sel["start_ns"]) / 1e6).median()) if len(sel) else float("nan")


#: the columns of :func:`scenario_table` that also get ``<column>_min`` / ``<column>_max`` over the repeats
SPREAD_COLUMNS = ("partitions_per_min", "compute_util", "kernel_util", "timeline_util", "ntt_msm_h_ms", "prep_msm_ms",
                  "h2d_gbps", "h2d_share")
_PHASES_MS = ("ntt_msm_h", "h2d", "ntt", "h_msm", "prep_msm", "barrier_wait", "mutex_wait", "batch_add", "tail_msm", "prove")


def run_row(ev: pd.DataFrame) -> dict[str, float]:
    """One run's numbers: throughput, the three utilizations, median phase ms, H2D rate and share
    (the columns :func:`scenario_table` documents, less the settings)."""
    u = metrics.utilization(ev)
    gb = metrics.effective_h2d_gbps(ev)
    row = {
        "partitions": int(u["partitions"].sum()),
        "wall_ms": float(u["wall_ms"].max()),
        "partitions_per_min": float(u["partitions_per_min"].sum()),
        **{k: float(u[k].mean()) for k in metrics.UTILIZATIONS},
    }
    for ph in _PHASES_MS:
        row[f"{ph}_ms"] = _median_ms(ev, ph)
    row["h2d_gbps"] = float(gb["gbps"].iloc[0]) if len(gb) else float("nan")
    per = metrics.h2d_share(ev, by=("partition",))
    per = per[per["ntt_msm_h_ms"] > 0]
    row["h2d_share"] = float(per["h2d_ms"].sum() / per["ntt_msm_h_ms"].sum()) if len(per) else float("nan")
    return row


def repeat_table(source: Source, names: Iterable[str] | None = None) -> pd.DataFrame:
    """One row per run of every recorded scenario (story order): ``scenario``, ``run`` (0-based, in
    recording order) and :func:`run_row`'s numbers. Runs without an event table are left out."""
    names = [s for s in (names if names is not None else story_order(source.scenarios)) if source.has(s)]
    rows = []
    for name in names:
        for k, entry in enumerate(source.runs(name)):
            if entry.get("events"):
                rows.append({"scenario": name, "run": k, **_run_row_cached(source, name, k, entry["events"])})
    return pd.DataFrame(rows)


_ROWS: dict[tuple[str, int, int], dict[str, float]] = {}  # (events file, mtime_ns, size) -> run_row: files are written once


def _run_row_cached(source: Source, name: str, k: int, rel: str) -> dict[str, float]:
    """:func:`run_row` of one run, computed once per process and events file (keyed by its path, mtime and size)."""
    try:
        f = source.recording.file(rel)
        st = f.stat()
        key = (str(f.resolve()), st.st_mtime_ns, st.st_size)
    except (OSError, TypeError, ValueError):  # events() raises the one-line error
        return run_row(source.events(name, k))
    if key not in _ROWS:
        if len(_ROWS) > 4096:
            _ROWS.clear()
        _ROWS[key] = run_row(source.events(name, k))
    return dict(_ROWS[key])


def scenario_table(source: Source, names: Iterable[str] | None = None) -> pd.DataFrame:
    """One row per scenario (:data:`STORY_ORDER`): settings and the medians over its runs, with ``<col>_min/_max``.
    Columns: settings, ``repeats``, ``partitions``, ``wall_ms``, ``partitions_per_min``, the three utilizations
    (:func:`zkgpu.analysis.metrics.utilization`), median phase ms, ``h2d_gbps``, ``h2d_share``."""
    reps = repeat_table(source, names)
    if reps.empty:
        return pd.DataFrame()
    rows = []
    for name, g in reps.groupby("scenario", sort=False):
        cfg = source.config(str(name))
        num = g.drop(columns=["scenario", "run"])
        row: dict[str, Any] = {"scenario": name, "transfer": cfg.get("transfer"), "lock_scope": cfg.get("lock_scope"), "gw": cfg.get("gw"),
                               "prep": cfg.get("prep"), "repeats": len(g), **num.median().to_dict()}
        row["partitions"] = int(row["partitions"])
        for col in SPREAD_COLUMNS:
            row[f"{col}_min"], row[f"{col}_max"] = float(num[col].min()), float(num[col].max())
        rows.append(row)
    out = pd.DataFrame(rows).set_index("scenario")
    out.attrs["recording"] = source.recording.folder
    return out


def spread(table: pd.DataFrame, column: str = "partitions_per_min") -> pd.Series:
    """(max - min) / median of ``column`` over each scenario's runs (0 with one run), from :func:`scenario_table`."""
    return (table[f"{column}_max"] - table[f"{column}_min"]) / table[column]


def benchmark_pivot(df: pd.DataFrame) -> pd.DataFrame | None:
    """A kernel benchmark table as median ms: a row per size, a column per varying descriptor; None if not one."""
    size_col = next((c for c in ("log_n", "log2_n") if c in df.columns), None)
    if size_col is None or "median_ms" not in df.columns:
        return None
    keys = [c for c in ("kernel", "variant", "mode", "scalars", "radix") if c in df.columns and df[c].nunique(dropna=False) > 1]
    if not keys:
        return df.groupby(size_col)[["median_ms"]].median()
    return df.pivot_table(index=size_col, columns=keys, values="median_ms", aggfunc="median")
