"""Run manifests and run folders under ``data/``: every recorded result says where it came from.

A manifest (``manifest.json``) holds the GPU, driver, CUDA, CuPy and package versions
(:func:`environment`), the git commit (and whether the tree was dirty), the UTC date, the command
and whatever sizes/parameters the producer adds. Run folders are created fresh and never reused,
so nothing recorded is overwritten.

Settings (:func:`configure`; the app layer sets them from ``ZKGPU_COMMIT`` and
``ZKGPU_DATA``): the commit to record where the checkout has no git (a copy sent to a lent GPU
machine), and the base folder of new run folders.
"""

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
    """Set what manifests record where git cannot tell, and where run folders go. A keyword not
    given keeps its current value (initially None for each).

    Args:
        commit: the commit of this copy of the code, recorded when the checkout has no git
            (e.g. ``$(git rev-parse HEAD)`` of the machine that made the copy); None: unknown.
        dirty: whether that copy had uncommitted changes; None: unknown.
        data_dir: the base folder of :func:`new_run_dir` (where replay looks); None: ``data/``.

    Raises:
        ValueError: ``commit`` empty or containing whitespace, or ``data_dir`` empty.
        TypeError: ``dirty`` not a bool or None.
    """
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
    """``{"commit": sha or None, "dirty": bool or None}`` for the code zkgpu runs from.

    A commit given to :func:`configure` (the app layer takes it from ``ZKGPU_COMMIT``, set by
    whoever made a copy of the tree, e.g. scripts/gpu_run.sh's caller) wins: a copy sent to a lent GPU machine may
    carry a ``.git`` whose HEAD is not the commit it was made from (there the tree then also reads as dirty); git's
    own HEAD is then kept beside it as ``git_head``. Otherwise git is asked (``git rev-parse HEAD`` in the
    repository folder), else None.
    """
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
    """The commit a manifest names, for display: its first ``width`` characters, ``+dirty`` when the tree had
    uncommitted changes, and ``unknown`` where the manifest has none (``commit: null``: a copy without git run
    without ``ZKGPU_COMMIT``, or a manifest that is not a dict)."""
    commit = manifest.get("commit") if isinstance(manifest, dict) else None
    if not isinstance(commit, str) or not commit:
        return "unknown"
    return commit[:width] + ("+dirty" if manifest.get("dirty") is True else "")


def build_manifest(**extra: Any) -> dict[str, Any]:
    """The environment (:func:`environment`), commit (:func:`git_commit`), UTC date and command
    line (:func:`portable_command`: ``zkgpu <args>``, paths relative to the data folder), plus ``extra`` (sizes,
    parameters)."""
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
    """``token`` relative to the data folder when it is a path (absolute, or relative to ``cwd`` and existing);
    a file of the repository relative to the repository where the data folder lies outside it; a path outside both
    keeps only its name, after ``.../``."""
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
    """The command line a manifest records: ``zkgpu <args>`` (the program's path dropped, whatever started it:
    the ``zkgpu`` script, ``python -m zkgpu.app.cli``, ``zkgpu/app/cli.py``), quoted as a shell would (``shlex``),
    with each path argument (``--out /x/data``, ``--out=/x/data``, ``FILE``) relative to the data folder ``data``
    (``../build/…`` for the repository's files); a path elsewhere keeps only its name (``.../name``), so no manifest
    carries the absolute paths of the machine that ran it. ``must_exist``: a relative token counts as a path only
    if it exists under ``cwd`` (default: the working folder); False: only absolute tokens are paths (old manifests,
    :func:`command_of`)."""
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
    """The command a manifest records, in the form :func:`portable_command` writes; an older manifest's
    ``<abs path>/cli.py bench … --out /abs/…`` is read the same way (its absolute paths made relative to the data
    folder, or reduced to their names), never rewritten on disk. None where the manifest has none."""
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
    """The base folder of a command's run folder (``base``, else :func:`data_dir`), checked before any work: it,
    or the nearest folder above it that exists, must be a folder this process can write into (so a benchmark
    never measures for minutes and then finds it cannot write; nothing is created here).

    Raises:
        CliError: ``base`` is empty, is (or lies under) a file, or is not writable (one line naming ``opt`` and the value).
    """
    if base is not None and not str(base).strip():
        raise CliError(f"{opt} {str(base)!r}: give a folder (or leave {opt} out for {data_dir()})")
    folder = Path(base) if base is not None else data_dir()
    label = opt if base is not None else f"the data folder (no {opt}; ZKGPU_DATA, else data/):"
    if folder.exists() and not folder.is_dir():
        raise CliError(f"{label} {folder}: {folder} is a file, not a folder (choose another path)")
    check_writable_under(label, folder if base is None else base, folder.absolute())
    return folder


def new_run_dir(kind: str, base: Path | None = None, gpu: str | None = None) -> Path:
    """Create and return a fresh ``<base>/<gpu-slug>-<YYYYMMDD>-<kind>[-N]/`` folder.

    ``base`` defaults to :func:`data_dir` (the configured folder, where replay looks, else
    ``data/``); ``gpu`` to this machine's GPU name (``cpu`` without one). An existing folder is
    never reused (a suffix is added).

    Raises:
        RuntimeError: no fresh name was free (1000 tries).
    """
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
    """Keep a cut-off run's folder as a record of what it measured, never as a complete recording: write its
    ``manifest.json`` (``manifest(interrupted=..., complete=False)``, a callable taking the extra keys, e.g. a
    producer's manifest builder) unless one exists, and rename the folder with :data:`INTERRUPTED_SUFFIX`. Returns
    the folder's path (unrenamed if the new name is taken or the rename fails). Never raises for the rename or the
    write (the run's own exception is the one to report)."""
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
    """Rename a recording's folder with :data:`INCOMPLETE_SUFFIX` (``-2``, ``-3`` ... after it if that name is taken);
    returns the new path, or ``run_dir`` if no rename succeeded. Never raises (the run's own error is the one to
    report)."""
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
    """Write a recording's ``manifest.json`` (exclusively, :func:`write_json_new`) and return the folder's path:
    renamed by :func:`mark_incomplete` when the manifest says ``"complete": false``, or when the write fails (a full
    disk; the error is raised after the rename)."""
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
