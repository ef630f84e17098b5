"""The ``ZKGPU_*`` environment variables, read in one place (app layer) and handed to the library's
``configure()`` functions. Library modules never read the environment; the command entry points
(``zkgpu`` in :mod:`zkgpu.cli`, ``python -m zkgpu.pipeline``) call :func:`apply` once at start.

=======================  ============================================  =====================================
variable                 value                                         sets
=======================  ============================================  =====================================
``ZKGPU_DEBUG``          on unless unset, empty, ``0``, ``false``,     :func:`zkgpu.errors.configure` (``debug``:
                         ``no``, ``off`` (any case)                    tracebacks of internal errors)
``ZKGPU_NVTX``           ``0``: off; anything else: on                 :func:`zkgpu.trace.configure` (``nvtx``)
``ZKGPU_COMMIT``         a commit name (used when the checkout has     :func:`zkgpu.manifest.configure`
                         no git, e.g. a copy on a lent GPU machine)    (``commit``)
``ZKGPU_DIRTY``          ``0``, ``false`` or empty: clean; else dirty  :func:`zkgpu.manifest.configure` (``dirty``)
``ZKGPU_DATA``           a folder: where new run folders go            :func:`zkgpu.manifest.configure` (``data_dir``)
``ZKGPU_NODE``           the node binary (else ``node`` on PATH)       :func:`zkgpu.groth16.circuits.configure`
``ZKGPU_NODE_MODULES``   the node_modules folder (else the             :func:`zkgpu.groth16.circuits.configure`
                         repository's)                                 (``node_modules``)
=======================  ============================================  =====================================

An empty value counts as unset. ``python -m zkgpu.groth16.circuits`` (a script run as ``__main__``)
reads ``ZKGPU_NODE`` / ``ZKGPU_NODE_MODULES`` itself, in its own ``__main__`` block.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from . import errors, manifest, trace
from .groth16 import circuits

__all__ = ["apply", "flag"]

_OFF = ("", "0", "false", "no", "off")


def flag(value: str | None) -> bool:
    """A boolean setting: off for None, empty, ``0``, ``false``, ``no``, ``off`` (any case, spaces
    stripped); any other value is on (asking for more)."""
    return (value or "").strip().lower() not in _OFF


def apply(environ: Mapping[str, str] | None = None) -> None:
    """Read the variables of the module table from ``environ`` (default ``os.environ``) and
    configure the library with them.

    Raises:
        ValueError: a value the library's ``configure()`` refuses (the variable and value named).
    """
    env = os.environ if environ is None else environ

    def get(name: str) -> str | None:
        return env.get(name) or None

    errors.configure(debug=flag(get("ZKGPU_DEBUG")))
    trace.configure(nvtx=get("ZKGPU_NVTX") != "0")
    dirty = env.get("ZKGPU_DIRTY")
    commit = get("ZKGPU_COMMIT")
    try:
        manifest.configure(commit=commit and commit.strip(), dirty=None if dirty is None else dirty not in ("0", "false", ""), data_dir=get("ZKGPU_DATA"))
    except ValueError as exc:
        raise ValueError(f"ZKGPU_COMMIT={commit!r} / ZKGPU_DATA={get('ZKGPU_DATA')!r}: {exc}") from exc
    circuits.configure(node=get("ZKGPU_NODE"), node_modules=get("ZKGPU_NODE_MODULES"))
