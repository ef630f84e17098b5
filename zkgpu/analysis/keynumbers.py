"""The key-numbers contract: each notebook's finding and numbers as one JSON file, read by the report's index page
and the tests.

``<out_dir>/<name>.json`` holds ``{"finding": "<one sentence>", "numbers": {key: {"value", "unit", "label",
"scenario", "recording"}}, "shown": [...]}``; a ``%`` value is a fraction in [0, 1]. A number is identified by
(key, recording, scenario). :data:`STATISTICS` defines each shared name once; :func:`show` notes what a page shows
under it, so a test can check one name shows one value. The folder is ``out_dir``, else :func:`configure`'s;
with neither, nothing is written.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

__all__ = ["UNITS", "STATISTICS", "configure", "number", "save_key_numbers", "save_figure", "identity", "recorded_from", "base_name", "show",
           "current_recording", "opened", "MEAN_PER_PARTITION", "MEAN_PER_EVENT", "REPRESENTATIVE_RUN", "GPU_PHASES_MEDIAN",
           "GPU_PHASES_MODEL"]

#: Units a key number may carry (the key-numbers contract): "%" values are fractions in [0, 1].
UNITS = ("%", "ms", "GB/s", "partitions/min", "x", "")

#: The report's shared names, each with its one statistic (issue 21: "one number per name"). A table column or
#: row, a key number or a figure caption that shows one of these names (:func:`base_name`) shows this
#: statistic for the scenario and recording it names, unless it prints another one beside it (``statistic``
#: of :func:`show`, e.g. "the representative run's mean per partition" under the bars that add up).
STATISTICS: dict[str, str] = {
    "partitions_per_min": "partitions finished per minute over each run's wall span; median over the scenario's runs",
    "compute_util": "kernel time (copies left out) over each run's wall span; median over the scenario's runs",
    "kernel_util": "upstream's kernel utilization (gpu_total − barrier_wait over the wall span) of each run; median over the runs",
    "timeline_util": "time some worker is between GPU_START and GPU_END over each run's wall span; median over the runs",
    "h2d_share": "the H2D share: Σ exposed H2D / Σ ntt_msm_h of each run; median over the runs",
    "h2d_gbps": "Σ bytes of a, b, c / Σ CUDA-event copy time of each run; median over the runs",
    "h2d_exposed": "exposed H2D per partition (copy time no kernel hid): the representative run's mean per partition, "
                   "as the bars of the GPU's time per partition and of ntt_msm_h's split",
    **{ph: f"median duration of a run's {ph} events; median over the scenario's runs"
       for ph in ("ntt_msm_h", "prep_msm", "mutex_wait", "barrier_wait", "mutex_held", "h2d")},
    "gpu_phases": "the GPU phases' wall time per partition without the exposed copies (NTT, H MSM, batch_add, tail_msm, the host "
                  "work inside them included): the representative run's mean per partition, the segments of the GPU's time that add up",
    "prove": "one proof of `zkgpu prove`, the whole command (process start, key read, phases, writing); median over the proofs",
    "proof_phases": "one proof's phases inside `zkgpu prove`, from reading the key to the last phase's end; the median proof",
}
#: The statistics a page may show under a :data:`STATISTICS` name instead of the name's own, said where it shows
#: them (``zkgpu.app.view.table`` prints a table's ``attrs["statistic"]`` in its caption): the functions that compute
#: them set it (:func:`zkgpu.analysis.metrics.critical_path`, :func:`zkgpu.analysis.metrics.ntt_msm_h_split`,
#: :func:`zkgpu.analysis.gpu_time.gpu_time_split`: :data:`MEAN_PER_PARTITION`; :func:`zkgpu.analysis.metrics.mutex_stats`:
#: :data:`MEAN_PER_EVENT`). The notebooks pass them the scenarios' representative runs (``Source.events``).
MEAN_PER_PARTITION = "the representative run's mean per partition (the parts add up)"
MEAN_PER_EVENT = "the representative run's mean per event"
REPRESENTATIVE_RUN = "the representative run (each scenario's median-throughput run)"
#: ``gpu_phases`` as :func:`zkgpu.analysis.gpu_time.gpu_ms_per_partition` computes it (07b's GPU budget and idle table).
GPU_PHASES_MEDIAN = "the median partition's GPU phases without the copies (overlapping workers each count their own)"
#: ``gpu_phases`` as the model takes it (:func:`zkgpu.analysis.model.compute_bound_per_min`: calibrated on pinned_pool).
GPU_PHASES_MODEL = "the model's, calibrated on pinned_pool"

_OUT_DIR: Path | None = None  # set by configure(); None: save_key_numbers writes nothing
_RECORDING: tuple[str, dict[str, str]] = ("", {})  # set by recorded_from(): the recording of entries that name none
_OPENED = ""  # set by opened(): the recording the notebook opened, the default of what show() notes


def configure(out_dir: str | Path | None = None) -> None:
    """Set the folder :func:`save_key_numbers` writes into when it is given no ``out_dir``
    (None: write nothing). The app layer calls it (``zkgpu.app.live`` with ``$ZKGPU_NB_OUT``).

    Raises:
        ValueError: ``out_dir`` is an empty string or an existing file (names it).
    """
    global _OUT_DIR
    folder = None if out_dir is None else Path(out_dir)
    if folder is not None and (not str(out_dir).strip() or folder.is_file()):
        raise ValueError(f"out_dir must be a folder (or None), got {str(out_dir)!r}")
    _OUT_DIR = folder


def number(value: Any, unit: str = "", label: str = "", scenario: str = "", recording: str = "") -> dict[str, Any]:
    """One key number: ``{"value", "unit", "label", "scenario", "recording"}`` (``recording``: the recording's folder
    name, or ''). ``value`` is a float, int or str (numpy scalars converted; NaN becomes null); ``%`` is a fraction.

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
    return {"value": v, "unit": unit, "label": label, "scenario": scenario, "recording": str(recording)}


def identity(key: str, entry: Any) -> tuple[str, str, str]:
    """A key number's identity, (key, recording, scenario): one value per identity across the report."""
    if isinstance(entry, dict):
        return key, str(entry.get("recording") or ""), str(entry.get("scenario") or "")
    return key, "", ""


def recorded_from(recording: str, **prefixes: str) -> None:
    """Name the recording the next :func:`save_key_numbers` call's entries come from, where an entry
    names none: ``recording`` (a folder name), or ``prefixes[p]`` for a key starting with ``p``
    (``recorded_from("record-2", last_mile_="record-4")``)."""
    global _RECORDING
    _RECORDING = (str(recording), {k: str(v) for k, v in prefixes.items()})


def opened(recording: str) -> None:
    """Name the recording the notebook opened (``zkgpu.app.live.open_source`` calls it): what :func:`show`
    notes is from it unless :func:`recorded_from` or the caller names another."""
    global _OPENED
    _OPENED = str(recording)


def current_recording() -> str:
    """The recording :func:`recorded_from` named last for entries that name none, else the one :func:`opened`
    named ('' before either)."""
    return _RECORDING[0] or _OPENED


def base_name(label: Any) -> str | None:
    """The :data:`STATISTICS` name a shown label stands for, or None: lower case, spaces as ``_``, a
    parenthesised note, a unit (``_ms``, ``_s``, `` ms``) and statistic words (``mean``, ``median``) left
    out, so that ``"mutex_held_mean_ms"``, ``"mutex held (ms)"`` and ``"mutex_held_ms"`` are one name; a
    scenario prefix (``baseline_h2d_share``) is left to the caller."""
    if not isinstance(label, str):
        return None
    n = re.sub(r"\(.*?\)", "", label.lower()).strip().replace(" ", "_").replace("-", "_")
    n = re.sub(r"(_?(ms|s|%))$", "", n)
    parts = [p for p in n.split("_") if p and p not in ("mean", "median", "avg")]
    n = "_".join(parts)
    n = {"exposed_h2d": "h2d_exposed", "per_min": "partitions_per_min", "throughput": "partitions_per_min", "gpu_phase": "gpu_phases",
         "gpu_phases_per_partition": "gpu_phases", "gpu_ms_per_partition": "gpu_phases"}.get(n, n)
    return n if n in STATISTICS else None


_SHOWN: list[dict[str, Any]] = []  # what the page showed under STATISTICS names since its last save_key_numbers


def show(name: str, value: Any, text: str, *, scenario: str = "", recording: str | None = None, statistic: str = "", unit: str = "") -> None:
    """Note that the page shows ``value`` (printed as ``text``) under the :data:`STATISTICS` name ``name``
    for ``scenario``; ``recording`` defaults to :func:`current_recording`; ``statistic``: '' for the
    name's own, else the one printed beside it. :func:`save_key_numbers` writes what was noted under
    ``"shown"`` and starts afresh. A name outside :data:`STATISTICS` is ignored."""
    if name not in STATISTICS:
        return
    v = value.item() if hasattr(value, "item") else value
    if not isinstance(v, (int, float)) or isinstance(v, bool) or v != v:
        return
    _SHOWN.append({"name": name, "value": float(v), "text": str(text), "scenario": str(scenario),
                   "recording": str(current_recording() if recording is None else recording), "statistic": str(statistic), "unit": str(unit)})


def _stamp(key: str, entry: Any) -> Any:
    """``entry`` with its recording filled in from :func:`recorded_from` where it has none."""
    if not isinstance(entry, dict) or "value" not in entry or entry.get("recording"):
        return entry
    default, prefixes = _RECORDING
    rec = next((r for p, r in prefixes.items() if key.startswith(p)), default)
    return {**entry, "recording": rec} if rec else entry


def _plain(v: Any) -> Any:
    """``v`` with numpy scalars turned into Python ones, through dicts, lists and tuples."""
    if hasattr(v, "item"):
        return v.item()
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


def save_key_numbers(name: str, numbers: dict[str, Any], finding: str = "", *, out_dir: str | Path | None = None) -> Path | None:
    """Write a notebook's finding and key numbers (entries from :func:`number`, or plain scalars) and what :func:`show`
    noted since the last call to ``<out_dir>/<name>.json``, keys in the given order; ``out_dir`` defaults to
    :func:`configure`'s. Returns the file written, or None when there is no folder.
    """
    folder = Path(out_dir) if out_dir is not None else _OUT_DIR
    shown = list(_SHOWN)
    _SHOWN.clear()
    if folder is None:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    f = folder / f"{name}.json"
    doc: dict[str, Any] = {"finding": str(finding), "numbers": _plain({k: _stamp(str(k), e) for k, e in numbers.items()})}
    if shown:
        doc["shown"] = shown
    f.write_text(json.dumps(doc, indent=2, default=str) + "\n", encoding="utf-8")
    return f


def save_figure(key: str, png: bytes, caption: str, notebook: str = "", *, out_dir: str | Path | None = None,
                recording: str | None = None) -> Path | None:
    """Keep a figure for the landing page: ``<out_dir>/figures/<key>.png`` and ``<key>.json`` (``{"caption",
    "notebook", "recording"}``, recording defaulting to :func:`current_recording`); nothing written without a folder.

    Raises:
        ValueError: ``key`` is not a plain name (letters, digits, ``_``, ``-``).
    """
    if not key or not all(ch.isalnum() or ch in "_-" for ch in key):
        raise ValueError(f"a figure key is a plain name (letters, digits, _ and -), got {key!r}")
    folder = Path(out_dir) if out_dir is not None else _OUT_DIR
    if folder is None:
        return None
    figs = folder / "figures"
    figs.mkdir(parents=True, exist_ok=True)
    (figs / f"{key}.png").write_bytes(png)
    rec = current_recording() if recording is None else str(recording)
    (figs / f"{key}.json").write_text(json.dumps({"caption": caption, "notebook": notebook, "recording": rec}) + "\n", encoding="utf-8")
    return figs / f"{key}.png"
