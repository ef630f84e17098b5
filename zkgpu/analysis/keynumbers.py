"""The key-numbers contract: each notebook's finding and numbers as one JSON file, which the
report's index page and the tests read.

A notebook calls ``keynumbers.save_key_numbers(name, {key: keynumbers.number(value, unit, label,
scenario, recording)}, finding=...)``; the file ``<out_dir>/<name>.json`` holds ``{"finding": "<one
sentence>", "numbers": {key: {"value", "unit", "label", "scenario", "recording"}}}``. A ``%`` value is a
fraction in [0, 1]. A number is identified by (key, recording, scenario): two pages may show different
values under one key only when they name different recordings (the report's tests check it). Plain ``key: scalar`` entries are kept as they are (rendered with no unit).
The folder is the ``out_dir`` keyword, else the one given to :func:`configure` (``zkgpu.app.live``
passes ``$ZKGPU_NB_OUT``, which ``zkgpu report`` sets); with neither, nothing is written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["UNITS", "configure", "number", "save_key_numbers", "save_figure", "identity", "recorded_from"]

#: Units a key number may carry (the key-numbers contract): "%" values are fractions in [0, 1].
UNITS = ("%", "ms", "GB/s", "partitions/min", "x", "")

_OUT_DIR: Path | None = None  # set by configure(); None: save_key_numbers writes nothing
_RECORDING: tuple[str, dict[str, str]] = ("", {})  # set by recorded_from(): the recording of entries that name none


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
    """One key number of the key-numbers contract: ``{"value", "unit", "label", "scenario", "recording"}``
    (``recording``: the folder name of the recording it was computed from, '' where none applies).

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
    """Write a notebook's finding and key numbers as JSON into ``<out_dir>/<name>.json``.

    The file is ``{"finding": "<one sentence>", "numbers": {key: {"value", "unit", "label",
    "scenario"}}}`` (build entries with :func:`number`; plain ``key: scalar`` entries are kept as
    they are). ``out_dir`` defaults to the folder given to :func:`configure`; with neither, nothing
    is written and None returned. Values must be JSON-serializable (numpy scalars are converted); the
    keys keep the order the notebook gave them (the index page lists them in that order).

    Returns: the file written, or None.
    """
    folder = Path(out_dir) if out_dir is not None else _OUT_DIR
    if folder is None:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    f = folder / f"{name}.json"
    doc = {"finding": str(finding), "numbers": _plain({k: _stamp(str(k), e) for k, e in numbers.items()})}
    f.write_text(json.dumps(doc, indent=2, default=str) + "\n", encoding="utf-8")
    return f


def save_figure(key: str, png: bytes, caption: str, notebook: str = "", *, out_dir: str | Path | None = None) -> Path | None:
    """Keep a figure for the report's landing page: ``<out_dir>/figures/<key>.png`` and ``<key>.json``
    (``{"caption", "notebook"}``); the folder as :func:`save_key_numbers` (nothing written without one).

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
    (figs / f"{key}.json").write_text(json.dumps({"caption": caption, "notebook": notebook}) + "\n", encoding="utf-8")
    return figs / f"{key}.png"
