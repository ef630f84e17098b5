"""Run manifests and run folders under ``data/``: every recorded result says where it came from.

A manifest (``manifest.json``) holds the GPU, driver, CUDA, CuPy and package versions (from
:func:`zkgpu.cli.environment`), the git commit (and whether the tree was dirty), the UTC date,
the command and whatever sizes/parameters the producer adds. Run folders are created fresh and
never reused, so nothing recorded is overwritten.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["REPO_ROOT", "DATA_DIR", "git_commit", "build_manifest", "new_run_dir", "write_json_new"]

REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = REPO_ROOT / "data"


def git_commit() -> dict[str, Any]:
    """``{"commit": sha or None, "dirty": bool or None}`` for the checkout zkgpu runs from.

    Where the tree has no ``.git`` (a copy sent to a lent GPU machine), ``ZKGPU_COMMIT`` and
    ``ZKGPU_DIRTY`` (set by whoever made the copy, e.g. scripts/gpu_run.sh's caller) are used.
    """
    if os.environ.get("ZKGPU_COMMIT"):
        dirty = os.environ.get("ZKGPU_DIRTY")
        return {"commit": os.environ["ZKGPU_COMMIT"], "dirty": None if dirty is None else dirty not in ("0", "false", "")}
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO_ROOT, capture_output=True, text=True).stdout.strip())
        return {"commit": sha, "dirty": dirty}
    except (OSError, subprocess.CalledProcessError):
        return {"commit": None, "dirty": None}


def build_manifest(**extra: Any) -> dict[str, Any]:
    """The environment, commit, UTC date and command line, plus ``extra`` (sizes, parameters)."""
    from .cli import environment

    m: dict[str, Any] = {
        "date_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(sys.argv),
        **git_commit(),
        "environment": environment(),
    }
    m.update(extra)
    return m


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "cpu"


def new_run_dir(kind: str, base: Path | None = None, gpu: str | None = None) -> Path:
    """Create and return a fresh ``<base>/<gpu-slug>-<YYYYMMDD>-<kind>[-N]/`` folder.

    ``base`` defaults to ``$ZKGPU_DATA`` when set (where replay looks), else ``data/``; an
    existing folder is never reused (a suffix is added).
    """
    from ._cuda import device_info

    base = Path(base) if base is not None else Path(os.environ.get("ZKGPU_DATA") or DATA_DIR)
    gpu = gpu or device_info().get("gpu") or "cpu"
    stem = f"{_slug(gpu)}-{_dt.datetime.now(_dt.timezone.utc):%Y%m%d}-{_slug(kind)}"
    for i in range(1000):
        path = base / (stem if i == 0 else f"{stem}-{i}")
        try:
            path.mkdir(parents=True, exist_ok=False)
            return path
        except FileExistsError:
            continue
    raise RuntimeError(f"could not create a fresh run folder under {base}")


def write_json_new(path: Path, obj: Any) -> Path:
    """Write JSON to a file that must not exist yet (``FileExistsError`` otherwise)."""
    with open(path, "x", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, sort_keys=True, default=str)
        f.write("\n")
    return path
