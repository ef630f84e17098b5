"""Optional heavy dependencies, imported in one place (the import-graph pattern of ARCHITECTURE.md).

zkgpu's modules import everything at module level except these packages, which are large, need a GPU
or are only installed with an extra. A module that uses one calls the accessor below at the point of
use; the accessor imports the package once (cached) and either returns it or raises one clear error
naming the pip extra that provides it. CuPy itself goes through :func:`zkgpu.core.cuda.cupy` (it also
checks that a device is present); ``cupyx`` through :func:`cupyx` here.

========================  ===================  ===============================  =================
accessor                  package              extra (pyproject.toml)           missing ->
========================  ===================  ===============================  =================
:func:`arkworks`          py-arkworks-bls12381 ``test``                         ImportError
:func:`py_ecc`            py_ecc               ``test``                         ImportError
:func:`numba`             numba                ``cpu-parallel`` / ``test``      ``None``
:func:`nvtx`              nvtx                 ``gpu-cuda13`` / ``notebooks``   ``None``
:func:`cupyx`             cupyx (CuPy)         ``gpu-cuda13`` / ``gpu-cuda12``  RuntimeError
:func:`notebook_tools`    nbformat, nbclient,  ``notebooks``                    ImportError
                          nbconvert, papermill,
                          jupyter_client, zmq
========================  ===================  ===============================  =================

The notebook machinery (:func:`notebook_tools`) is installed with the ``notebooks`` extra that ``make``
always installs, but importing it takes over a second: ``zkgpu report`` (:mod:`zkgpu.app.report`) reaches
it here when it runs notebooks, so that ``zkgpu --help`` and the other commands start without it.
"""

from __future__ import annotations

import functools
import importlib
from types import ModuleType, SimpleNamespace

from zkgpu.core import cuda as _cuda

__all__ = ["arkworks", "py_ecc", "numba", "nvtx", "cupyx", "notebook_tools", "has"]


@functools.cache
def _try(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def has(name: str) -> bool:
    """True when the optional package ``name`` (an importable module name) can be imported."""
    return _try(name) is not None


def _required(name: str, dist: str) -> ModuleType:
    mod = _try(name)
    if mod is None:
        raise ImportError(f"{dist} is not installed: pip install -e '.[test]' (or {dist})")
    return mod


def arkworks() -> ModuleType:
    """``py_arkworks_bls12381`` (the independent BLS12-381 reference: G1/G2 points, scalars, pairings).

    Raises:
        ImportError: the package is not installed (``pip install -e '.[test]'``).
    """
    return _required("py_arkworks_bls12381", "py-arkworks-bls12381")


def py_ecc() -> ModuleType:
    """``py_ecc.optimized_bls12_381`` (the second BLS12-381 reference: projective points, ``FQ``, ``Z1``;
    the independent pairing check of :func:`zkgpu.groth16.proof.verify_py_ecc`).

    Raises:
        ImportError: the package is not installed (``pip install -e '.[test]'``).
    """
    return _required("py_ecc.optimized_bls12_381", "py_ecc")


def numba() -> ModuleType | None:
    """``numba`` (``prep="cpu_parallel"``'s nogil kernels), or ``None`` when it is not installed."""
    return _try("numba")


def nvtx() -> ModuleType | None:
    """``nvtx`` (NVTX ranges around pipeline phases, for Nsight), or ``None`` when it is not installed."""
    return _try("nvtx")


def cupyx() -> ModuleType:
    """``cupyx`` (pinned host arrays: ``cupyx.empty_pinned``).

    Raises:
        RuntimeError: no usable GPU (the same condition and message as :func:`zkgpu.core.cuda.cupy`).
    """
    _cuda.cupy()
    mod = _try("cupyx")
    if mod is None:  # pragma: no cover - cupy imports cupyx itself
        raise RuntimeError("cupyx is missing although CuPy imported")
    return mod


#: name in :func:`notebook_tools`'s namespace -> (module, attribute or None for the module itself)
_NOTEBOOK_TOOLS = {
    "nbformat": ("nbformat", None),
    "zmq": ("zmq", None),
    "DictLoader": ("jinja2", "DictLoader"),
    "KernelSpecManager": ("jupyter_client.kernelspec", "KernelSpecManager"),
    "NoSuchKernel": ("jupyter_client.kernelspec", "NoSuchKernel"),
    "KernelManager": ("jupyter_client.manager", "KernelManager"),
    "NotebookClient": ("nbclient", "NotebookClient"),
    "CellExecutionError": ("nbclient.exceptions", "CellExecutionError"),
    "HTMLExporter": ("nbconvert", "HTMLExporter"),
    "TagRemovePreprocessor": ("nbconvert.preprocessors", "TagRemovePreprocessor"),
    "load_notebook_node": ("papermill.iorw", "load_notebook_node"),
    "parameterize_notebook": ("papermill.parameterize", "parameterize_notebook"),
    "Config": ("traitlets.config", "Config"),
}


@functools.cache
def notebook_tools() -> SimpleNamespace:
    """What ``zkgpu report`` needs to execute and render notebooks, imported once on first use:
    ``nbformat``, ``zmq``, jinja2's ``DictLoader``, jupyter_client's ``KernelSpecManager``,
    ``NoSuchKernel``, ``KernelManager``, nbclient's ``NotebookClient``, ``CellExecutionError``,
    nbconvert's ``HTMLExporter``, ``TagRemovePreprocessor``, papermill's ``load_notebook_node``,
    ``parameterize_notebook`` and traitlets' ``Config``, as attributes of one namespace.

    Raises:
        ImportError: one of them is not installed (``pip install -e '.[notebooks]'``; names it).
    """
    found = {}
    for name, (module, attr) in _NOTEBOOK_TOOLS.items():
        mod = _try(module)
        if mod is None:
            raise ImportError(f"{module} is not installed: pip install -e '.[notebooks]' (zkgpu report runs the notebooks with it)")
        found[name] = mod if attr is None else getattr(mod, attr)
    return SimpleNamespace(**found)
