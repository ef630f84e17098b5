"""Run manifests (``manifest.json``: environment, commit, date, command, parameters) and fresh run folders."""

from __future__ import annotations

import datetime as _dt
import enum
import json
import os
import platform
import re
import shlex
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from zkgpu import __version__
from zkgpu.core.cuda import device_info
from zkgpu.core.errors import CliError, check_writable_under

__all__ = ["REPO_ROOT", "DATA_DIR", "configure", "data_dir", "environment", "git_commit", "commit_label", "build_manifest",
           "portable_command", "command_of",
           "check_run_base", "new_run_dir", "mark_interrupted", "INTERRUPTED_SUFFIX", "mark_incomplete", "INCOMPLETE_SUFFIX", "write_run_manifest",
           "write_json_new"]

REPO_ROOT = Path(__file__).resolve().parents[2]
DATA_DIR = REPO_ROOT / "data"

_SETTINGS: dict[str, Any] = {"commit": None, "dirty": None, "data_dir": None}


class _Keep(enum.Enum):
    KEEP = "keep"


_KEEP = _Keep.KEEP


def configure(*, commit: str | None | _Keep = _KEEP, dirty: bool | None | _Keep = _KEEP, data_dir: str | os.PathLike[str] | None | _Keep = _KEEP) -> None:
    """Set the commit recorded where git cannot tell, and the base of run folders; a keyword not given is kept.

    Args:
        commit: this copy's commit (None: unknown). dirty: uncommitted changes (None: unknown).
        data_dir: base folder of :func:`new_run_dir`; None: ``data/``.
    Raises:
        ValueError: ``commit`` empty or with whitespace, or ``data_dir`` empty. TypeError: ``dirty`` not bool/None."""
    if commit is not _KEEP:
        if commit is not None and (not isinstance(commit, str) or not commit or commit.split() != [commit]):
            raise ValueError(f"manifest.configure: commit must be a non-empty name without spaces, got {commit!r}")
        _SETTINGS["commit"] = commit
    if dirty is not _KEEP:
        if dirty is not None and not isinstance(dirty, bool):
            raise TypeError(f"manifest.configure: dirty must be a bool or None, got {dirty!r}")
        _SETTINGS["dirty"] = dirty
    if data_dir is not _KEEP:
        if data_dir is not None and not str(data_dir):
            raise ValueError("manifest.configure: data_dir must be a folder, got ''")
        _SETTINGS["data_dir"] = None if data_dir is None else Path(data_dir)


def data_dir() -> Path:
    """The base folder of new run folders: the configured ``data_dir``, else the repository's ``data/``."""
    return _SETTINGS["data_dir"] or DATA_DIR


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def environment() -> dict[str, Any]:
    """What zkgpu finds on this machine: the zkgpu, Python, platform and package versions (None
    where not installed), then :func:`zkgpu.core.cuda.device_info` (GPU or none, driver, CUDA, CuPy)."""
    info: dict[str, Any] = {
        "zkgpu": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "numpy": _version("numpy"),
        "pandas": _version("pandas"),
        "nvtx": _version("nvtx"),
        "py_ecc": _version("py_ecc"),
        "py-arkworks-bls12381": _version("py-arkworks-bls12381"),
    }
    info.update(device_info())
    return info


def git_commit() -> dict[str, Any]:
    """``{"commit", "dirty"}``: the configured commit (git's HEAD then kept as ``git_head``), else git's, else None."""
    head: dict[str, Any] | None
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout.strip()
        if Path(top).resolve() != REPO_ROOT:  # a copy inside some other checkout: not ours
            raise subprocess.CalledProcessError(1, "git rev-parse --show-toplevel")
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO_ROOT, capture_output=True, text=True).stdout.strip())
        head = {"commit": sha, "dirty": dirty}
    except (OSError, subprocess.CalledProcessError):
        head = None
    if _SETTINGS["commit"]:
        out = {"commit": _SETTINGS["commit"], "dirty": _SETTINGS["dirty"]}
        if head is not None and head["commit"] != _SETTINGS["commit"]:
            out["git_head"] = head["commit"]
        return out
    return head if head is not None else {"commit": None, "dirty": None}


def commit_label(manifest: Any, width: int = 10) -> str:
    """A manifest's commit for display: ``width`` characters, ``+dirty``, or ``unknown``."""
    commit = manifest.get("commit") if isinstance(manifest, dict) else None
    if not isinstance(commit, str) or not commit:
        return "unknown"
    return commit[:width] + ("+dirty" if manifest.get("dirty") is True else "")


def build_manifest(**extra: Any) -> dict[str, Any]:
    """Environment, commit, UTC date and :func:`portable_command`, plus ``extra``."""
    m: dict[str, Any] = {
        "date_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": portable_command(sys.argv, data_dir()),
        **git_commit(),
        "environment": environment(),
    }
    m.update(extra)
    return m


_PROGRAMS = ("cli.py", "__main__.py", "zkgpu", "zkgpu.app.cli")


def _portable_path(token: str, data: Path, cwd: Path, must_exist: bool) -> str:
    """``token`` relative to the data folder (or the repository), else ``.../name``."""
    if not token or token.startswith("-") or "\x00" in token:
        return token
    p = Path(token)
    if not p.is_absolute():
        if must_exist and not (cwd / p).exists():
            return token
        if not must_exist:
            return token
        p = cwd / p
    p = Path(os.path.normpath(p))
    base = Path(os.path.normpath(data.absolute()))
    repo = Path(os.path.normpath(REPO_ROOT))
    if p.is_relative_to(base) or (p.is_relative_to(repo) and base.is_relative_to(repo)):
        return os.path.relpath(p, base)
    if p.is_relative_to(repo):  # a data folder outside the checkout: the repository's files as typed in it
        return os.path.relpath(p, repo)
    return ".../" + p.name


def portable_command(argv: list[str], data: Path, cwd: Path | None = None, must_exist: bool = True) -> str:
    """``zkgpu <args>``, shell-quoted, path arguments relative to ``data`` (elsewhere ``.../name``). ``must_exist``: a
    relative token counts as a path only if it exists under ``cwd``; False: only absolute ones."""
    cwd = Path.cwd() if cwd is None else cwd
    args = list(argv[1:])
    ours = bool(argv) and (Path(argv[0]).name in _PROGRAMS or args[:2] == ["-m", "zkgpu.app.cli"])
    if args[:2] == ["-m", "zkgpu.app.cli"]:
        args = args[2:]
    out = [] if ours or not argv else [_portable_path(argv[0], data, cwd, must_exist)]  # another program (a script): its path
    for a in args:
        opt, eq, val = a.partition("=") if a.startswith("--") else ("", "", a)
        out.append(f"{opt}={_portable_path(val, data, cwd, must_exist)}" if eq else _portable_path(a, data, cwd, must_exist) if not opt else a)
    return shlex.join(["zkgpu", *out] if ours else out)


def command_of(manifest: Any, data: Path | None = None) -> str | None:
    """A manifest's command in :func:`portable_command`'s form (older absolute forms rewritten); None if absent."""
    cmd = manifest.get("command") if isinstance(manifest, dict) else None
    if not isinstance(cmd, str) or not cmd.strip():
        return None
    if cmd.startswith("zkgpu "):  # the new form
        return cmd
    try:
        argv = shlex.split(cmd)
    except ValueError:  # unbalanced quotes in an old, unquoted command
        argv = cmd.split()
    return portable_command(argv, data if data is not None else data_dir(), Path("/"), must_exist=False)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "cpu"


def check_run_base(base: str | os.PathLike[str] | None, opt: str = "--out") -> Path:
    """The base of a command's run folder (``base``, else :func:`data_dir`), checked writable before any work. Raises
    CliError: ``base`` empty, under a file, or not writable (names ``opt`` and the value)."""
    if base is not None and not str(base).strip():
        raise CliError(f"{opt} {str(base)!r}: give a folder (or leave {opt} out for {data_dir()})")
    folder = Path(base) if base is not None else data_dir()
    label = opt if base is not None else f"the data folder (no {opt}; ZKGPU_DATA, else data/):"
    if folder.exists() and not folder.is_dir():
        raise CliError(f"{label} {folder}: {folder} is a file, not a folder (choose another path)")
    check_writable_under(label, folder if base is None else base, folder.absolute())
    return folder


def new_run_dir(kind: str, base: Path | None = None, gpu: str | None = None) -> Path:
    """Create a fresh ``<base>/<gpu-slug>-<YYYYMMDD>-<kind>[-N]/`` (base: :func:`data_dir`; gpu: this machine's). Raises
    RuntimeError: no free name in 1000 tries."""
    base = Path(base) if base is not None else data_dir()
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


INTERRUPTED_SUFFIX = "-interrupted"
"""Appended to the name of a run folder whose run was cut off: replay's ``<gpu>-<date>-bench-<kind>[-N]`` pattern then
no longer takes it for a complete recording of ``<kind>``, and what it measured is kept."""


def mark_interrupted(run_dir: Path, manifest: Any, exc: BaseException) -> Path:
    """Write a cut-off run's manifest (``manifest(interrupted=, complete=False)``) unless present and add
    :data:`INTERRUPTED_SUFFIX` to the folder; returns its path. Never raises."""
    try:
        if not (run_dir / "manifest.json").exists():
            write_json_new(run_dir / "manifest.json", manifest(interrupted=f"{type(exc).__name__}: {exc}".strip(": "), complete=False))
    except (OSError, ValueError, TypeError):  # a full disk: the rows stay, the folder is still renamed
        pass
    target = run_dir.with_name(run_dir.name + INTERRUPTED_SUFFIX)
    try:
        if not target.exists():
            run_dir.rename(target)
            return target
    except OSError:
        pass
    return run_dir


INCOMPLETE_SUFFIX = "-incomplete"
"""Appended to the name of a recording (``zkgpu record``) that did not finish or recorded nothing usable: replay's
``<gpu>-<date>-record[-N]`` pattern then no longer takes it for a recording (it warns and skips it)."""


def mark_incomplete(run_dir: Path) -> Path:
    """Rename ``run_dir`` with :data:`INCOMPLETE_SUFFIX` (``-2``... if taken); returns the path. Never raises."""
    for i in range(1, 100):
        target = run_dir.with_name(run_dir.name + INCOMPLETE_SUFFIX + ("" if i == 1 else f"-{i}"))
        try:
            if not target.exists():
                run_dir.rename(target)
                return target
        except OSError:
            return run_dir
    return run_dir


def write_run_manifest(run_dir: Path, manifest: dict[str, Any]) -> Path:
    """Write ``manifest.json`` exclusively; the folder is renamed by :func:`mark_incomplete` if incomplete or the write fails."""
    try:
        write_json_new(run_dir / "manifest.json", manifest)
    except BaseException:
        mark_incomplete(run_dir)
        raise
    return mark_incomplete(run_dir) if manifest.get("complete") is False else run_dir


def write_json_new(path: Path, obj: Any) -> Path:
    """Write JSON to a file that must not exist yet (``FileExistsError`` otherwise)."""
    with open(path, "x", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, sort_keys=True, default=str)
        f.write("\n")
    return path
