"""Where a notebook's numbers come from: a live measurement now, or a recorded run from ``data/``.

Every notebook starts with ``src = replay.open_source(...)`` and then asks ``src`` for event
tables, logs, the bandwidth sweep and kernel benchmarks; the rest of the notebook does not know
where they came from. ``src.banner()`` states it plainly at the top of the output.

Mode (``ZKGPU_MODE``; :func:`resolve_mode`):

* ``live``: measure now on the GPU (``zkgpu.record`` runs the requested scenarios into a
  temporary folder at the size the notebook's parameters cell gives);
* ``replay``: read recorded data (the default without a GPU);
* ``auto`` (default): ``live`` when a GPU is present, else ``replay``.

How replay chooses its data (:func:`open_source`), first match wins:

1. the newest GPU recording: a ``data/<gpu>-<YYYYMMDD>-record[-N]/`` folder holding
   ``manifest.json`` whose environment names a GPU (newest by manifest date, then folder name);
2. otherwise the newest CPU recording in ``data/`` (``zkgpu record --device cpu``), labelled CPU;
3. otherwise a tiny CPU run of the pipeline made now (``zkgpu.record`` with ``device="cpu"``),
   cached under ``$ZKGPU_CACHE`` (default ``~/.cache/zkgpu``) keyed by the source of the package,
   and labelled as a CPU stand-in: its milliseconds are CPU milliseconds, never GPU numbers.

``$ZKGPU_DATA`` overrides the ``data/`` folder (tests). Upstream's published numbers and the
seed's log lines are always read from ``data/reference/`` (:func:`reference_path`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from .events import normalize_events
from .manifest import DATA_DIR

if TYPE_CHECKING:
    from .model import ModelParams

__all__ = [
    "MODES",
    "resolve_mode",
    "data_dir",
    "reference_path",
    "Recording",
    "find_recordings",
    "benchmark_pivot",
    "latest_recording",
    "find_benchmarks",
    "Source",
    "open_source",
    "save_key_numbers",
    "number",
    "UNITS",
    "STORY_ORDER",
    "story_order",
    "reference_table",
    "scenario_table",
    "demo_nsys_sqlite",
    "calibrated_params",
    "model_vs_measured",
]

MODES = ("live", "replay", "auto")
_RECORD_RE = re.compile(r"^(?P<gpu>.+)-(?P<date>\d{8})-record(?:-(?P<n>\d+))?$")
_BENCH_RE = re.compile(r"^(?P<gpu>.+)-(?P<date>\d{8})-bench-(?P<kind>[a-z0-9-]+?)(?:-(?P<n>\d+))?$")
#: The order in which the story meets the scenarios: baseline → registered → pinned pool → narrow
#: lock → the gw sweep (1, 2 = pinned_pool, 3) → compute-only. Tables and figures follow it.
STORY_ORDER: tuple[str, ...] = ("baseline", "registered", "pinned_pool", "pinned_narrow", "pinned_gw1", "pinned_gw3", "compute_only")


def story_order(names: Iterable[str]) -> list[str]:
    """``names`` sorted in :data:`STORY_ORDER` (unknown names after, in their given order)."""
    names = list(dict.fromkeys(names))
    pos = {n: i for i, n in enumerate(STORY_ORDER)}
    return sorted(names, key=lambda n: (pos.get(n, len(pos)), names.index(n)))


def resolve_mode(mode: str | None = None) -> str:
    """``live`` or ``replay`` from ``mode`` or ``$ZKGPU_MODE`` (``auto``: live iff a GPU is present).

    Raises:
        ValueError: an unknown mode (names it).
    """
    m = (mode or os.environ.get("ZKGPU_MODE") or "auto").strip().lower()
    if m not in MODES:
        raise ValueError(f"ZKGPU_MODE must be one of {MODES}, got {m!r}")
    if m == "auto":
        from ._cuda import gpu_available

        return "live" if gpu_available() else "replay"
    return m


def data_dir() -> Path:
    """The folder holding recorded runs: ``$ZKGPU_DATA`` or the repository's ``data/``."""
    env = os.environ.get("ZKGPU_DATA")
    return Path(env) if env else DATA_DIR


def reference_path(name: str = "") -> Path:
    """A file under the repository's ``data/reference/`` (the seed's lines, upstream's tables)."""
    return DATA_DIR / "reference" / name


# --------------------------------------------------------------------------- recordings


@dataclass
class Recording:
    """One recorded scenario run: a folder with ``manifest.json`` (written by ``zkgpu record``).

    Layout: ``manifest.json``; ``events/<scenario>.parquet`` (event tables); ``logs/<scenario>.log``
    (cuzk-format logs); ``sweep.parquet`` / ``sweep.csv`` (H2D bandwidth sweep), ``host_alloc.csv``;
    ``bench/*.csv`` (kernel benchmarks). Paths inside the manifest are relative to the folder.
    """

    path: Path
    manifest: dict[str, Any] = field(repr=False)

    @classmethod
    def open(cls, path: str | Path) -> Recording:
        """Read ``<path>/manifest.json``.

        Raises:
            FileNotFoundError: no manifest.json in ``path``.
            ValueError: the manifest is not JSON, or not the shape a recording writes (an object
                whose ``scenarios`` is an object of objects and ``environment`` an object); the
                message names the folder and what is wrong.
        """
        p = Path(path)
        mf = p / "manifest.json"
        if not mf.is_file():
            raise FileNotFoundError(f"{p} has no manifest.json: not a finished recording")
        try:
            manifest = json.loads(mf.read_text(encoding="utf-8"))
        except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
            raise ValueError(f"{mf} is not readable JSON: {exc}") from exc
        if not isinstance(manifest, dict):
            raise ValueError(f"{mf} holds a JSON {type(manifest).__name__}, not the object a recording writes")
        for key in ("scenarios", "environment"):
            v = manifest.get(key)
            if v is not None and not isinstance(v, dict):
                raise ValueError(f"{mf}: '{key}' is a JSON {type(v).__name__}, expected an object")
        bad = [k for k, v in (manifest.get("scenarios") or {}).items() if not isinstance(v, dict)]
        if bad:
            raise ValueError(f"{mf}: scenario entries {bad} are not objects")
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
        extra = f"; host memory load: {load} threads (zkgpu.hostload)" if load else ""
        return f"{self.path.name} [{dev}; {self.date}; n={n}, partitions={self.manifest.get('partitions')}{extra}]"

    @property
    def host_load_threads(self) -> int:
        """Threads of :class:`zkgpu.hostload.HostMemoryLoad` that ran during the scenarios (0: none)."""
        return int((self.manifest.get("host_load") or {}).get("threads") or 0)

    @property
    def scenarios(self) -> list[str]:
        """Names of the recorded scenarios, in recording order."""
        return list((self.manifest.get("scenarios") or {}).keys())

    def scenario(self, name: str) -> dict[str, Any]:
        """The manifest entry of one scenario (config, files, seconds, pool stats).

        Raises:
            KeyError: unknown scenario (lists the known ones).
        """
        sc = self.manifest.get("scenarios") or {}
        if name not in sc:
            raise KeyError(f"scenario {name!r} is not in {self.path.name}; recorded: {list(sc)}")
        return sc[name]

    def file(self, rel: str) -> Path:
        """A path named in the manifest, inside the run folder.

        Raises:
            ValueError: ``rel`` is absolute or leads out of the run folder (``../..``, a symlink).
        """
        root = self.path.resolve()
        p = (self.path / rel).resolve()
        if not p.is_relative_to(root):
            raise ValueError(f"{self.path.name}/manifest.json names {rel!r}, outside the run folder")
        return p

    def events(self, name: str) -> pd.DataFrame:
        """Event table of one scenario (schema of :mod:`zkgpu.events`).

        Raises:
            KeyError: unknown scenario or one without an event table. ValueError: the path leaves
            the run folder, or an unreadable events file (truncated, not Parquet), naming it.
        """
        entry = self.scenario(name)
        rel = entry.get("events")
        if not rel:
            raise KeyError(f"scenario {name!r} in {self.path.name} has no event table: {entry.get('error', 'no reason recorded')}")
        p = self.file(rel)
        try:
            return normalize_events(pd.read_parquet(p))
        except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
            raise ValueError(f"unreadable events file {p}: {' '.join(str(exc).split())[:200]}") from exc

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
    """Every finished recording (``*-record*/manifest.json``) under ``base``, newest first.

    Folders without a manifest (recordings killed hard) are skipped silently; a folder whose
    manifest cannot be used (not JSON, not an object, ``scenarios`` not an object ...) is skipped
    with a ``UserWarning`` naming the folder and the problem, so one odd folder never stops a replay.
    """
    root = Path(base) if base is not None else data_dir()
    found = []
    if root.is_dir():
        for p in root.iterdir():
            if p.is_dir() and _RECORD_RE.match(p.name) and (p / "manifest.json").is_file():
                try:
                    found.append(Recording.open(p))
                except (OSError, ValueError) as exc:
                    warnings.warn(f"skipping recording {p}: {exc}", UserWarning, stacklevel=2)
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


def find_benchmarks(kind: str, base: str | Path | None = None) -> tuple[Path, dict[str, pd.DataFrame]] | None:
    """Newest ``<gpu>-<date>-bench-<kind>[-N]/`` folder under ``base`` and its CSV/Parquet/JSON tables.

    Returns:
        ``(folder, {file stem: DataFrame})`` or None when no such folder exists.
    """
    root = Path(base) if base is not None else data_dir()
    cands = []
    if root.is_dir():
        for p in root.iterdir():
            m = _BENCH_RE.match(p.name)
            if p.is_dir() and m and m.group("kind") == kind:
                cands.append((m.group("date"), int(m.group("n") or 0), p))
    for _, _, p in sorted(cands, reverse=True):
        tables = {}
        for f in sorted(p.iterdir()):
            if f.suffix in (".csv", ".parquet") or (f.suffix == ".json" and f.name != "manifest.json"):
                try:
                    tables[f.stem] = _read_table(f)
                except (ValueError, OSError):
                    continue
        if tables:
            return p, tables
    return None


# --------------------------------------------------------------------------- the notebook's source


@dataclass
class Source:
    """The data a notebook works on, and a plain statement of where it came from.

    Attributes:
        kind: ``live`` (measured now on the GPU), ``recorded-gpu``, ``recorded-cpu`` or
            ``cpu-standin`` (tiny CPU pipeline run made now because no recording exists).
        recording: the recording (a temporary one in live mode and for the CPU stand-in).
        mode: the resolved mode (``live`` or ``replay``).
    """

    kind: str
    recording: Recording
    mode: str

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
        return f"{head}.\nData: {r.label}\nFolder: {r.path}"

    @property
    def scenarios(self) -> list[str]:
        return self.recording.scenarios

    def has(self, scenario: str) -> bool:
        """True when the scenario was recorded with an event table."""
        return scenario in self.scenarios and bool(self.recording.scenario(scenario).get("events"))

    def events(self, scenario: str) -> pd.DataFrame:
        return self.recording.events(scenario)

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
        ``load`` table (:func:`zkgpu.bench.hostload.h2d_under_load`), for GPU recordings; else None."""
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
                    found = find_benchmarks(kind)
                    if found:
                        for stem, df in found[1].items():
                            out[f"{kind}:{stem}"] = df
        return out


def _cache_root() -> Path:
    env = os.environ.get("ZKGPU_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "zkgpu"


# modules that only read or present data: editing them does not change what the stand-in records
_NOT_RECORDING = frozenset({"replay.py", "model.py", "metrics.py", "plots.py", "report.py", "cli.py", "logs.py"})


def _package_hash() -> str:
    """Hash of the package sources that produce a recording (pipeline, kernels, transfer, trace ...)."""
    h = hashlib.sha256()
    pkg = Path(__file__).resolve().parent
    for p in sorted(list(pkg.rglob("*.py")) + list(pkg.rglob("*.cu")) + list(pkg.rglob("*.cuh"))):
        if p.parent == pkg and p.name in _NOT_RECORDING:
            continue
        h.update(p.relative_to(pkg).as_posix().encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def _prune_standins(root: Path, keep: Path, max_age_s: float = 3600.0) -> None:
    """Remove other CPU stand-ins older than ``max_age_s`` (stale package versions)."""
    import time

    now = time.time()
    for p in root.glob("cpu-standin-*"):
        try:
            if p != keep and p.is_dir() and now - p.stat().st_mtime > max_age_s:
                shutil.rmtree(p, ignore_errors=True)
        except OSError:
            continue


def _cpu_standin(n: int | None = None, partitions: int | None = None) -> Recording:
    """A tiny CPU recording of every scenario made now (once per package source and size; cached)."""
    from . import record

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
        run_dir = record.record(out=tmp, device="cpu", n=n, partitions=partitions, quick=True, scenarios=None)
        try:
            run_dir.rename(final)
        except OSError:  # another process finished first
            pass
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
    """The notebook's data: a live measurement (mode ``live``) or a recording (``replay``).

    Args:
        mode: ``live``, ``replay`` or ``auto`` (default ``$ZKGPU_MODE``, else auto).
        n: constraints per partition for a live run (default: ``zkgpu.record``'s GPU size).
        partitions: partitions per scenario for a live run.
        scenarios: scenarios to run live (default: all of ``zkgpu.record.SCENARIOS``); replay
            always reads whatever was recorded.
        sweep, bench: in live mode also run the H2D sweep / kernel benchmarks.
        base: folder of recordings (default :func:`data_dir`).
        host_load: live runs: :class:`zkgpu.hostload.HostMemoryLoad` threads during the scenarios
            (default ``$ZKGPU_HOST_LOAD``, else :data:`LIVE_HOST_LOAD`, the committed recordings'
            setting; 0 for an idle host).

    A live run is recorded into a new ``zkgpu-live-*`` folder under ``$ZKGPU_LIVE_DIR`` (set by
    ``zkgpu report``, which exports its traces), else under the system's temporary folder.

    Raises:
        RuntimeError: ``live`` was asked for but no GPU is present.
        ValueError: ``$ZKGPU_HOST_LOAD`` is not an integer >= 0.
    """
    m = resolve_mode(mode)
    if m == "live":
        from . import record
        from ._cuda import gpu_available

        if not gpu_available():
            raise RuntimeError("ZKGPU_MODE=live needs a CUDA GPU (CuPy); none was found. Use ZKGPU_MODE=replay.")
        if host_load is None:
            env = os.environ.get("ZKGPU_HOST_LOAD", "").strip()
            if env and not env.isdigit():
                raise ValueError(f"ZKGPU_HOST_LOAD must be an integer >= 0, got {env!r}")
            host_load = int(env) if env else LIVE_HOST_LOAD
        live_dir = os.environ.get("ZKGPU_LIVE_DIR") or None  # zkgpu report keeps its live runs there
        if live_dir:
            Path(live_dir).mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix="zkgpu-live-", dir=live_dir))
        run_dir = record.record(out=tmp, device="gpu", n=n, partitions=partitions, quick=True,
                                scenarios=list(scenarios) if scenarios is not None else None,
                                sweep=sweep, bench=bench, host_load=host_load)
        return Source("live", Recording.open(run_dir), m)
    rec = latest_recording(base)
    if rec is not None:
        return Source("recorded-gpu" if rec.is_gpu else "recorded-cpu", rec, m)
    return Source("cpu-standin", _cpu_standin(), m)


#: Units a key number may carry (the key-numbers contract): "%" values are fractions in [0, 1].
UNITS = ("%", "ms", "GB/s", "partitions/min", "x", "")


def number(value: Any, unit: str = "", label: str = "", scenario: str = "") -> dict[str, Any]:
    """One key number of the key-numbers contract: ``{"value", "unit", "label", "scenario"}``.

    ``value`` is a float, int or str (numpy scalars converted; NaN kept as null by JSON); a ``%``
    value is a fraction in [0, 1].

    Raises:
        ValueError: ``unit`` not one of :data:`UNITS`, or a ``%`` value outside [0, 1].
    """
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {UNITS}, got {unit!r}")
    v = value.item() if hasattr(value, "item") else value
    if not isinstance(v, (int, float, str)):
        raise ValueError(f"a key number is a float, int or str, got {type(v).__name__} for {label or unit!r}")
    if unit == "%" and isinstance(v, (int, float)) and not (v != v or -1e-9 <= v <= 1 + 1e-9):
        raise ValueError(f"a % key number is a fraction in [0, 1], got {v!r} for {label!r}")
    return {"value": v, "unit": unit, "label": label, "scenario": scenario}


def save_key_numbers(name: str, numbers: dict[str, Any], finding: str = "") -> Path | None:
    """Write a notebook's finding and key numbers as JSON into ``$ZKGPU_NB_OUT/<name>.json``.

    The file is ``{"finding": "<one sentence>", "numbers": {key: {"value", "unit", "label",
    "scenario"}}}`` (build entries with :func:`number`; plain ``key: scalar`` entries are kept as
    they are). The report's index page and the tests read it. Does nothing (returns None) when
    ``ZKGPU_NB_OUT`` is unset. Values must be JSON-serializable (numpy scalars are converted).
    """
    out = os.environ.get("ZKGPU_NB_OUT")
    if not out:
        return None
    p = Path(out)
    p.mkdir(parents=True, exist_ok=True)

    def conv(v: Any) -> Any:
        if hasattr(v, "item"):
            return v.item()
        if isinstance(v, dict):
            return {str(k): conv(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [conv(x) for x in v]
        return v

    f = p / f"{name}.json"
    doc = {"finding": str(finding), "numbers": conv(numbers)}
    f.write_text(json.dumps(doc, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
    return f


# --------------------------------------------------------------------------- shared notebook tables


def reference_table(name: str) -> pd.DataFrame:
    """A CSV of upstream's published numbers from ``data/reference/`` (e.g. ``cuzk_utilization.csv``)."""
    return pd.read_csv(reference_path(name))


def _median_ms(ev: pd.DataFrame, phase: str) -> float:
    sel = ev[ev["phase"] == phase]
    return float(((sel["end_ns"] - sel["start_ns"]) / 1e6).median()) if len(sel) else float("nan")


def scenario_table(source: Source, names: Iterable[str] | None = None) -> pd.DataFrame:
    """One row per recorded scenario (in :data:`STORY_ORDER`): settings, throughput, utilizations
    and median phase times.

    Columns: ``scenario, transfer, lock_scope, gw, partitions, wall_ms, partitions_per_min``,
    ``compute_util``, ``kernel_util``, ``timeline_util`` (all from :func:`zkgpu.metrics.utilization`:
    kernels only / upstream's kernel figure with the H2D copies counted / TIMELINE, over the run's
    wall span), median ms of ``ntt_msm_h, h2d, ntt, h_msm,
    prep_msm, barrier_wait, mutex_wait, batch_add, tail_msm, prove`` (``h2d_ms``: the host waiting
    for the copies), ``h2d_gbps`` (:func:`zkgpu.metrics.effective_h2d_gbps`), ``h2d_share`` and
    ``h2d_exposed_ms`` (median per partition): the copy time that lengthened ntt_msm_h
    (:func:`zkgpu.metrics.h2d_share`). Milliseconds are the recording's device's.
    """
    from . import metrics

    names = [s for s in (names if names is not None else story_order(source.scenarios)) if source.has(s)]
    rows = []
    for name in names:
        ev = source.events(name)
        cfg = source.config(name)
        u = metrics.utilization(ev)
        gb = metrics.effective_h2d_gbps(ev)
        row = {
            "scenario": name,
            "transfer": cfg.get("transfer"),
            "lock_scope": cfg.get("lock_scope"),
            "gw": cfg.get("gw"),
            "partitions": int(u["partitions"].sum()),
            "wall_ms": float(u["wall_ms"].max()),
            "partitions_per_min": float(u["partitions_per_min"].sum()),
            **{k: float(u[k].mean()) for k in metrics.UTILIZATIONS},
        }
        for ph in ("ntt_msm_h", "h2d", "ntt", "h_msm", "prep_msm", "barrier_wait", "mutex_wait", "batch_add", "tail_msm", "prove"):
            row[f"{ph}_ms"] = _median_ms(ev, ph)
        row["h2d_gbps"] = float(gb["gbps"].iloc[0]) if len(gb) else float("nan")
        per = metrics.h2d_share(ev, by=("partition",))
        per = per[per["ntt_msm_h_ms"] > 0]
        row["h2d_share"] = float(per["h2d_ms"].sum() / per["ntt_msm_h_ms"].sum()) if len(per) else float("nan")
        row["h2d_exposed_ms"] = float(per["h2d_ms"].median()) if len(per) else float("nan")
        rows.append(row)
    return pd.DataFrame(rows).set_index("scenario") if rows else pd.DataFrame()


def benchmark_pivot(df: pd.DataFrame) -> pd.DataFrame | None:
    """A kernel benchmark table (``zkgpu bench ntt|msm``) as median ms: one row per size (``log_n``
    or ``log2_n``), one column per combination of the descriptive columns that vary in the table
    (``kernel``, ``variant``, ``mode``, ``scalars``, ``radix``), so that no two kinds of measurement share a
    cell. Returns None when the table has no size column or no ``median_ms``."""
    size_col = next((c for c in ("log_n", "log2_n") if c in df.columns), None)
    if size_col is None or "median_ms" not in df.columns:
        return None
    keys = [c for c in ("kernel", "variant", "mode", "scalars", "radix") if c in df.columns and df[c].nunique(dropna=False) > 1]
    if not keys:
        return df.groupby(size_col)[["median_ms"]].median()
    return df.pivot_table(index=size_col, columns=keys, values="median_ms", aggfunc="median")


def demo_nsys_sqlite(events: pd.DataFrame, path: str | Path) -> Path:
    """Write an event table as a tiny SQLite file in the layout of ``nsys export --type sqlite``.

    For the Nsight appendix (no nsys exists on our H200 host): ``StringIds(id, value)``;
    ``NVTX_EVENTS(start, end, text, textId, domainId, globalTid, eventType)`` with one domain-create
    row (eventType 75, text = the NVTX domain ``zkgpu``) and one push/pop range (eventType 59) per
    event, labelled as :mod:`zkgpu.trace` labels its ranges (``"<phase> p<partition> w<worker>"``); ``CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId,
    streamId, shortName)`` for the GPU compute phases (``ntt``, ``h_msm``, ``batch_add``,
    ``tail_msm``); ``CUPTI_ACTIVITY_KIND_MEMCPY(start, end, bytes, copyKind=1 HtoD, srcKind
    1 pageable / 2 pinned, dstKind 3 device, deviceId, streamId)`` for ``h2d`` rows.
    Times are copied from ``start_ns``/``end_ns``. The file must not exist (FileExistsError).
    """
    import sqlite3

    p = Path(path)
    if p.exists():
        raise FileExistsError(f"{p} exists; demo_nsys_sqlite writes new files only")
    con = sqlite3.connect(p)
    try:
        con.executescript(
            """
            CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, "end" INTEGER, eventType INTEGER NOT NULL,
                text TEXT, textId INTEGER, domainId INTEGER, globalTid INTEGER);
            CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, "end" INTEGER NOT NULL,
                deviceId INTEGER, streamId INTEGER, shortName INTEGER);
            CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, "end" INTEGER NOT NULL,
                bytes INTEGER, copyKind INTEGER, srcKind INTEGER, dstKind INTEGER, deviceId INTEGER, streamId INTEGER);
            """
        )
        strings: dict[str, int] = {}

        def sid(s: str) -> int:
            if s not in strings:
                strings[s] = len(strings) + 1
                con.execute("INSERT INTO StringIds VALUES (?, ?)", (strings[s], s))
            return strings[s]

        con.execute("INSERT INTO NVTX_EVENTS VALUES (0, NULL, 75, 'zkgpu', NULL, 1, NULL)")
        kernels = {"ntt": "ntt_radix_pass", "h_msm": "msm_bucket_accumulate", "batch_add": "batch_addition", "tail_msm": "msm_bucket_accumulate"}
        for r in events.itertuples(index=False):
            w = None if pd.isna(r.worker) else int(r.worker)
            part = None if pd.isna(r.partition) else int(r.partition)
            text = str(r.phase) + (f" p{part}" if part is not None else "") + (f" w{w}" if w is not None else "")  # zkgpu.trace label
            tid = 1000 + (w if w is not None else 99)
            con.execute("INSERT INTO NVTX_EVENTS VALUES (?, ?, 59, NULL, ?, 1, ?)", (int(r.start_ns), int(r.end_ns), sid(text), tid))
            dev = 0 if pd.isna(r.gpu) else int(r.gpu)
            if r.phase in kernels:
                con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?, ?, ?)",
                            (int(r.start_ns), int(r.end_ns), dev, 7 + (w or 0), sid(kernels[r.phase])))
            elif r.phase == "h2d" and not pd.isna(r.bytes):
                src = 1 if "pageable" in str(r.detail) else 2
                con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?, ?, ?, 1, ?, 3, ?, ?)",
                            (int(r.start_ns), int(r.end_ns), int(r.bytes), src, dev, 7 + (w or 0)))
        con.commit()
    finally:
        con.close()
    return p


def _h2d_rate_gbps(events: pd.DataFrame) -> float | None:
    h = events[(events["phase"] == "h2d") & events["bytes"].notna()]
    secs = float(((h["end_ns"] - h["start_ns"]) / 1e9).sum())
    return float(h["bytes"].astype("float64").sum()) / secs / 1e9 if secs > 0 else None


def calibrated_params(
    source: Source, scenario: str = "baseline", *, pageable_scenario: str = "baseline", pinned_scenario: str = "pinned_pool"
) -> ModelParams:
    """:func:`zkgpu.calibration.calibrate` on one recorded scenario, with both H2D rates from the recording.

    The pageable rate comes from ``pageable_scenario``'s ``h2d`` rows, the pinned rate from
    ``pinned_scenario``'s (Σ bytes / Σ interval time, the same clock as the calibration);
    the calibrated scenario's own rows supply the rate of its own path.

    Raises:
        ValueError: a rate is needed but neither scenario measured it (from ``calibrate``).
    """
    from .calibration import calibrate

    ev = source.events(scenario)
    transfer = source.config(scenario).get("transfer", "pageable")
    kind = "pageable" if transfer == "pageable" else "pinned"
    rates: dict[str, float | None] = {"pageable": None, "pinned": None}
    for name, k in ((pageable_scenario, "pageable"), (pinned_scenario, "pinned")):
        if k != kind and source.has(name):
            rates[k] = _h2d_rate_gbps(source.events(name))
    return calibrate(ev, pageable_gbps=rates["pageable"], pinned_gbps=rates["pinned"], transfer=transfer,
                     source=f"calibrated from {scenario} of {source.recording.path.name} ({source.device_label})")


def model_vs_measured(source: Source, names: Iterable[str] | None = None, calibrate_on: str = "pinned_pool") -> pd.DataFrame:
    """The model's prediction of each recorded scenario against its measurement.

    The model is calibrated once on ``calibrate_on`` (:func:`calibrated_params`) and then run with
    each scenario's settings (partitions, gw, lock scope; transfer ``resident`` for
    ``compute_only``, whose copies happen before the lock, else the scenario's path), without
    looking at that scenario's events. Both sides go through :func:`zkgpu.metrics.utilization`.

    Returns: DataFrame indexed by scenario (story order) with ``measured_per_min``,
    ``model_per_min``, ``rel_err`` ((model − measured) / measured of the throughput),
    ``measured_compute_util``, ``model_compute_util``.

    Raises:
        KeyError: ``calibrate_on`` is not recorded.
    """
    from . import metrics, model

    params = calibrated_params(source, scenario=calibrate_on)
    rows = []
    for name in [s for s in (names if names is not None else story_order(source.scenarios)) if source.has(s)]:
        cfg = source.config(name)
        transfer = "resident" if name == "compute_only" else (cfg.get("transfer") or "pinned")
        sim = model.simulate(params, partitions=int(cfg["partitions"]), gw=int(cfg["gw"]), scope=cfg["lock_scope"], transfer=transfer)
        meas = metrics.utilization(source.events(name)).iloc[0]
        rows.append({"scenario": name, "measured_per_min": float(meas["partitions_per_min"]), "model_per_min": sim.partitions_per_min,
                     "rel_err": (sim.partitions_per_min - float(meas["partitions_per_min"])) / float(meas["partitions_per_min"]),
                     "measured_compute_util": float(meas["compute_util"]), "model_compute_util": sim.compute_util})
    return pd.DataFrame(rows).set_index("scenario")
