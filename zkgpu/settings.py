"""The environment variables zkgpu understands: read once, checked, and applied (app layer).

Library modules never read ``os.environ``: each takes keyword arguments or has a ``configure()``
function. This module is the one table of variables (:data:`SETTINGS`); the app entry points
(``zkgpu`` in :mod:`zkgpu.cli`, ``python -m zkgpu.pipeline``, the test suite's conftest) call
:func:`apply` first. ``python -m zkgpu.groth16.circuits`` runs that module as ``__main__`` (a second
copy that this module would not reach) and reads ``ZKGPU_NODE`` / ``ZKGPU_NODE_MODULES`` in its
own ``__main__`` block.

A bad value is refused with one line naming the variable and the value (``ValueError``). An empty
value counts as unset.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from . import errors, manifest, trace
from .groth16 import circuits

__all__ = ["Setting", "SETTINGS", "apply", "table"]


def _flag(name: str, value: str) -> bool:
    v = value.strip().lower()
    if v in ("1", "true", "yes", "on"):
        return True
    if v in ("", "0", "false", "no", "off"):
        return False
    raise ValueError(f"{name} must be 0 or 1 (or true/false), got {value!r}")


def _commit(value: str) -> None:
    try:
        manifest.configure(commit=value.strip())
    except ValueError:
        raise ValueError(f"ZKGPU_COMMIT must be a commit name without spaces, got {value!r}") from None


@dataclass(frozen=True)
class Setting:
    """One environment variable: its name, what it sets, and the call that applies a value."""

    name: str
    sets: str
    apply: Callable[[str], None]


SETTINGS: tuple[Setting, ...] = (
    Setting("ZKGPU_NVTX", "0 turns the NVTX ranges off (`trace.configure(nvtx=)`)", lambda v: trace.configure(nvtx=_flag("ZKGPU_NVTX", v))),
    Setting("ZKGPU_COMMIT", "the commit recorded in manifests where the tree has no .git (`manifest.configure(commit=)`)", _commit),
    Setting("ZKGPU_DIRTY", "whether that tree had uncommitted changes (`manifest.configure(dirty=)`)",
            lambda v: manifest.configure(dirty=_flag("ZKGPU_DIRTY", v))),
    Setting("ZKGPU_DATA", "the base folder of new run folders, where replay looks (`manifest.configure(data_dir=)`)",
            lambda v: manifest.configure(data_dir=v)),
    Setting("ZKGPU_NODE", "the node binary of circom2/snarkjs, else node on PATH (`groth16.circuits.configure(node=)`)",
            lambda v: circuits.configure(node=v)),
    Setting("ZKGPU_NODE_MODULES", "their node_modules folder, else the repository's (`groth16.circuits.configure(node_modules=)`)",
            lambda v: circuits.configure(node_modules=v)),
    Setting("ZKGPU_DEBUG", "1: CLI errors re-raise with their traceback (`errors.configure(debug=)`)",
            lambda v: errors.configure(debug=_flag("ZKGPU_DEBUG", v))),
)


def apply(environ: Mapping[str, str] | None = None) -> list[str]:
    """Apply every set ``ZKGPU_*`` variable of ``environ`` (default ``os.environ``); returns their names.

    Raises:
        ValueError: a variable has a bad value (one line naming it and the value).
    """
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
