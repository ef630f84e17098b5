"""Recordings read at the door: a manifest's fields and an event table's columns checked once, each refusal
one line naming the file and the field or column (issue 22: everything read from a file is untrusted)."""

from __future__ import annotations

import datetime as _dt
import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from zkgpu.core.events import normalize_events

__all__ = ["loads_strict", "check_manifest", "read_events"]


_JSON_TYPE = {dict: "an object", list: "an array", str: "a string", bool: "true/false", int: "an integer", float: "a number"}
#: the manifest fields a reader uses, with the JSON types they may hold (None: null or absent)
_MANIFEST_FIELDS: dict[str, tuple[type, ...]] = {
    "scenarios": (dict,), "environment": (dict,), "host_load": (dict,), "benchmarks": (dict,), "circuit": (dict, str), "resident": (dict,),
    "sweep": (str,), "device": (str,), "date_utc": (str,), "command": (str,), "kind": (str,), "notes": (list,),
    "n": (int,), "partitions": (int,), "complete": (bool,), "interrupted": (str,), "incomplete": (str,),
}
_SCENARIO_FIELDS: dict[str, tuple[type, ...]] = {
    "events": (str,), "log": (str,), "config": (dict,), "settings": (dict,), "error": (str,), "skipped": (str,),
    "interrupted": (str,), "seconds": (int, float), "rows": (int,), "partitions_ok": (int,), "host_load": (dict,),
}
_MAX_GPU_MS = 1e9
"""The longest GPU time one event may hold, ms: the log parser's bound on a duration."""
_NON_NEGATIVE = ("seconds", "rows", "partitions_ok")
#: event-table columns that must be present, without nulls, with these kinds (pandas dtype kinds: i integer, O/U/T text)
_EVENT_COLUMNS: dict[str, str] = {"phase": "text", "start_ns": "integer", "end_ns": "integer"}


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for k, v in pairs:
        if k in seen:
            raise ValueError(f"the key {k!r} appears twice in one object (JSON keeps only the last: refused)")
        seen[k] = v
    return seen


def loads_strict(text: str) -> Any:
    """``json.loads`` for a file we did not write (a manifest, a forecast): a key given twice in one object (two
    scenarios of one name, whose first JSON would silently drop) raises ValueError naming it; so does JSON nested deeper
    than the parser's stack (json.loads' RecursionError)."""
    try:
        return json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except RecursionError:
        raise ValueError("JSON nested too deeply to read (a damaged file?)") from None


def _type_error(mf: Path, where: str, v: Any, allowed: tuple[type, ...]) -> ValueError:
    want = " or ".join(_JSON_TYPE[t] for t in allowed)
    got = "true/false" if isinstance(v, bool) else _JSON_TYPE.get(type(v), type(v).__name__)
    return ValueError(f"{mf}: {where} is {got} ({str(v)[:40]!r}), expected {want}")


def _typed(v: Any, allowed: tuple[type, ...]) -> bool:
    if isinstance(v, bool):
        return bool in allowed
    return isinstance(v, allowed) and not (float in allowed and isinstance(v, float) and not math.isfinite(v))


def _iso_date(v: Any) -> bool:
    if not isinstance(v, str):
        return False
    try:
        _dt.datetime.fromisoformat(v)
    except ValueError:
        return False
    return True


def check_manifest(mf: Path, manifest: Any) -> None:
    """The one check of a recording's manifest, at load (it is untrusted: a copy from elsewhere, a hand edit): an
    object whose fields a reader uses hold the JSON types :data:`_MANIFEST_FIELDS` / :data:`_SCENARIO_FIELDS` name
    (null allowed), ``host_load.threads`` an integer >= 0, ``environment.gpu`` text, ``date_utc`` an ISO 8601 date
    (recordings are ordered by it), ``n``, ``partitions`` and ``repeats`` integers >= 1, a scenario's ``repeats`` an
    array of run objects whose fields are checked as the scenario's, ``seconds``/``rows``/``partitions_ok`` >= 0.
    Raises ValueError naming the file and the field."""
    if not isinstance(manifest, dict):
        raise ValueError(f"{mf} holds a JSON {type(manifest).__name__}, not the object a recording writes")
    for key, allowed in _MANIFEST_FIELDS.items():
        v = manifest.get(key)
        if v is not None and not _typed(v, allowed):
            raise _type_error(mf, f"'{key}'", v, allowed)
    threads = (manifest.get("host_load") or {}).get("threads")
    if threads is not None and not (_typed(threads, (int,)) and threads >= 0):
        raise _type_error(mf, "'host_load.threads'", threads, (int,))
    gpu = (manifest.get("environment") or {}).get("gpu")
    if gpu is not None and not isinstance(gpu, str):
        raise _type_error(mf, "'environment.gpu'", gpu, (str,))
    date = manifest.get("date_utc")
    if date is not None and not _iso_date(date):
        raise ValueError(f"{mf}: 'date_utc' {str(date)[:40]!r} is not an ISO 8601 date (e.g. 2026-12-01T20:49:00+00:00): "
                         "recordings are ordered by it")
    for key, low in (("n", 1), ("partitions", 1), ("repeats", 1)):
        v = manifest.get(key)
        if v is not None and not (_typed(v, (int,)) and v >= low):
            raise ValueError(f"{mf}: '{key}' is {repr(v)[:40]}, expected an integer >= {low}")
    for name, entry in (manifest.get("scenarios") or {}).items():
        if not isinstance(entry, dict):
            raise _type_error(mf, f"scenario {name!r}", entry, (dict,))
        runs = entry.get("repeats")
        if runs is not None and not (isinstance(runs, list) and all(isinstance(r, dict) for r in runs)):
            raise ValueError(f"{mf}: scenario {name!r} field 'repeats' is {str(runs)[:40]!r}, expected an array of run objects")
        for where, run in [(f"scenario {name!r}", entry)] + [(f"scenario {name!r} run {i}", r) for i, r in enumerate(runs or [])]:
            for key, allowed in _SCENARIO_FIELDS.items():
                v = run.get(key)
                if v is not None and not _typed(v, allowed):
                    raise _type_error(mf, f"{where} field '{key}'", v, allowed)
                if v is not None and key in _NON_NEGATIVE and v < 0:
                    raise ValueError(f"{mf}: {where} field '{key}' is {v!r}, expected a value >= 0")
    for name, v in (manifest.get("benchmarks") or {}).items():
        if not isinstance(v, str):
            raise _type_error(mf, f"benchmarks {name!r}", v, (str,))


def read_events(path: Path) -> pd.DataFrame:
    """The one reader of a recorded event table (Parquet, schema of :mod:`zkgpu.core.events`), checked at load: a
    regular file whose ``phase`` (text), ``start_ns`` and ``end_ns`` (integers, ``0 <= start_ns <= end_ns``) columns
    are present without nulls (a missing one was read as zeros or NA), every other column of the schema convertible to
    its dtype, ``worker``/``gpu``/``partition``/``bytes`` >= 0 or null, ``gpu_ms`` in [0, 1e9] ms or NaN.

    Raises:
        ValueError: one line naming the file and the column (or why it is unreadable).
    """
    if not path.is_file():
        raise ValueError(f"events file {path}: {'a folder' if path.is_dir() else 'missing or not a regular file'}, not a Parquet table")
    try:
        df = pd.read_parquet(path)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise ValueError(f"unreadable events file {path}: {' '.join(str(exc).split())[:200]}") from exc
    for col, kind in _EVENT_COLUMNS.items():
        if col not in df.columns:
            raise ValueError(f"events file {path}: no column '{col}' (an event table has {', '.join(_EVENT_COLUMNS)})")
        c = df[col]
        if c.isna().any():
            raise ValueError(f"events file {path}: column '{col}' has {int(c.isna().sum())} null value(s)")
        ok = pd.api.types.is_integer_dtype(c) if kind == "integer" else (pd.api.types.is_string_dtype(c) or pd.api.types.is_object_dtype(c)) and all(isinstance(x, str) for x in c)
        if not ok:
            raise ValueError(f"events file {path}: column '{col}' holds {c.dtype}, expected {kind} values")
    if (df["start_ns"] < 0).any():
        raise ValueError(f"events file {path}: column 'start_ns' has {int((df['start_ns'] < 0).sum())} negative value(s) (ns since the run's epoch)")
    try:
        out = normalize_events(df)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"events file {path}: {' '.join(str(exc).split())[:200]}") from exc
    for col in ("worker", "gpu", "partition", "bytes"):  # ids and sizes: >= 0 or null, as the log parser keeps them
        bad = int((out[col].fillna(0) < 0).sum())
        if bad:
            raise ValueError(f"events file {path}: column '{col}' has {bad} negative value(s)")
    g = out["gpu_ms"]
    bad = int((g.notna() & ~(g.between(0, _MAX_GPU_MS))).sum())
    if bad:  # inf, negative, beyond the log parser's duration bound: the utilizations would be inf or negative
        raise ValueError(f"events file {path}: column 'gpu_ms' has {bad} value(s) outside [0, {_MAX_GPU_MS:.0e}] ms (NaN: none measured)")
    return out
