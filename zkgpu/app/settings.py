"""The ``ZKGPU_*`` environment variables: read once, checked, and applied (:data:`SETTINGS`, :func:`apply`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from zkgpu.core import cuda as _cuda
from zkgpu.core import errors, manifest

# replay, keynumbers, live and groth16.circuits are imported by the setter that needs them: a command starts
# without pandas or the pipeline unless a variable of theirs is set

__all__ = ["Setting", "SETTINGS", "apply", "table", "cache_root"]


def _flag(name: str, value: str) -> bool:
    v = value.strip().lower()
    if v in ("1", "true", "yes", "on"):
        return True
    if v in ("", "0", "false", "no", "off"):
        return False
    raise ValueError(f"{name} must be 0 or 1 (or true/false), got {value!r}")


def _int(name: str, value: str, low: int = 1) -> int:
    try:
        n = int(value.strip(), 0)
    except ValueError:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}") from None
    if n < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return n


def _named(name: str, fn: Callable[[], object]) -> None:
    """Run a library ``configure`` call; its one-line ValueError gets the variable's name in front."""
    try:
        fn()
    except ValueError as exc:
        msg = str(exc)
        raise ValueError(msg if msg.startswith(name) else f"{name}: {msg}") from None


def _data(value: str) -> None:
    path = Path(value)
    if path.exists() and not path.is_dir():
        raise ValueError(f"{value} is a file; the data folder (where recordings go and replay looks) must be a folder: point ZKGPU_DATA at one, or unset it for data/")
    from zkgpu.analysis import replay

    manifest.configure(data_dir=value)  # where new run folders go
    replay.configure(data_dir=value)  # where replay looks: the same folder


def _checked_by_live(name: str) -> Callable[[str], None]:
    """A variable :mod:`zkgpu.app.live` reads when a notebook opens its data: checked here, up front."""
    def check(value: str) -> None:
        from zkgpu.app import live

        if name == "ZKGPU_MODE":
            try:
                live.resolve_mode(value)
            except ValueError as exc:
                raise ValueError(f"{exc} (unset ZKGPU_MODE or pass --mode replay)") from None
        elif name == "ZKGPU_HOST_LOAD":
            _int(name, value, low=0)
    return check


def _keynumbers_out(value: str) -> None:
    from zkgpu.analysis import keynumbers

    keynumbers.configure(out_dir=value)


def _commit(value: str) -> None:
    name = value.strip()
    dirty = name.endswith("-dirty")
    try:
        manifest.configure(commit=name.removesuffix("-dirty") if dirty else name, dirty=dirty)
    except ValueError:
        raise ValueError(f"ZKGPU_COMMIT must be a commit name without spaces, got {value!r}") from None


def _node(value: str) -> None:
    """node (a binary or command name) and the node_modules of its prefix, when ``PREFIX/bin/node`` has one."""
    from zkgpu.groth16 import circuits

    node = Path(value.strip())
    beside = node.parent.parent / "node_modules" if node.parent.name == "bin" else None
    circuits.configure(node=value.strip(), node_modules=beside if beside is not None and beside.is_dir() else None)


@dataclass(frozen=True)
class Setting:
    """One environment variable: its name, what it sets, and the call that applies a value."""

    name: str
    sets: str
    apply: Callable[[str], None]


SETTINGS: tuple[Setting, ...] = (
    Setting("ZKGPU_DISABLE_GPU", "1 hides the GPU: every API takes its CPU path (`_cuda.configure(gpu=False)`)",
            lambda v: _cuda.configure(gpu=not _flag("ZKGPU_DISABLE_GPU", v))),
    Setting("ZKGPU_COMMIT", "the commit recorded in manifests where the tree has no .git, `git describe --always --dirty --abbrev=40` "
                            "(a `-dirty` suffix: uncommitted changes) (`manifest.configure(commit=, dirty=)`)", _commit),
    Setting("ZKGPU_DATA", "the folder of recordings: where new run folders go and replay looks (`manifest.configure(data_dir=)`, `replay.configure(data_dir=)`)",
            lambda v: _named("ZKGPU_DATA", lambda: _data(v))),
    Setting("ZKGPU_NB_OUT", "where notebooks write their key numbers (live runs: its sibling `live/`); `zkgpu report` sets it (`keynumbers.configure(out_dir=)`)",
            lambda v: _named("ZKGPU_NB_OUT", lambda: _keynumbers_out(v))),
    Setting("ZKGPU_MODE", "`live`, `replay` or `auto` for the notebooks (read by `zkgpu.app.live.resolve_mode`)", _checked_by_live("ZKGPU_MODE")),
    Setting("ZKGPU_HOST_LOAD", "host-memory load threads of a live notebook run (read by `zkgpu.app.live.open_source`)", _checked_by_live("ZKGPU_HOST_LOAD")),
    Setting("ZKGPU_NODE", "the node binary of circom2/snarkjs, else node on PATH; a `PREFIX/bin/node` with a `PREFIX/node_modules` "
                          "takes that folder, else the repository's (`groth16.circuits.configure(node=, node_modules=)`)", _node),
    Setting("ZKGPU_DEBUG", "1: CLI errors re-raise with their traceback (`errors.configure(debug=)`)",
            lambda v: errors.configure(debug=_flag("ZKGPU_DEBUG", v))),
)


def apply(environ: Mapping[str, str] | None = None) -> list[str]:
    """Apply every set ``ZKGPU_*`` variable of ``environ`` (default ``os.environ``); their names. Raises ValueError."""
    env = os.environ if environ is None else environ
    done = []
    for s in SETTINGS:
        if s.name in env and env[s.name] != "":
            s.apply(env[s.name])
            done.append(s.name)
    return done


def table() -> list[tuple[str, str]]:
    """(variable, what it sets) for every setting, in the order of :data:`SETTINGS` (for docs and tests)."""
    return [(s.name, s.sets) for s in SETTINGS]


def cache_root(environ: Mapping[str, str] | None = None) -> Path:
    """zkgpu's per-user cache folder: ``$XDG_CACHE_HOME/zkgpu``, else ``~/.cache/zkgpu`` (the XDG base-directory
    rule; an empty value counts as unset). Holds the CPU stand-in recordings and the key checks' verdicts."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CACHE_HOME")
    return (Path(base) if base else Path.home() / ".cache") / "zkgpu"
