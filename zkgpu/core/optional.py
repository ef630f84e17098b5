"""Optional heavy dependencies, each imported once by an accessor that returns it or raises naming the pip extra.

:func:`arkworks`, :func:`py_ecc`, :func:`notebook_tools` raise ImportError; :func:`numba`, :func:`nvtx` return None;
:func:`cupyx` raises RuntimeError (no GPU). CuPy itself: :func:`zkgpu.core.cuda.cupy`."""

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
    """``py_arkworks_bls12381``. Raises ImportError: not installed (extra ``test``)."""
    return _required("py_arkworks_bls12381", "py-arkworks-bls12381")


def py_ecc() -> ModuleType:
    """``py_ecc.optimized_bls12_381``. Raises ImportError: not installed (extra ``test``)."""
    return _required("py_ecc.optimized_bls12_381", "py_ecc")


def numba() -> ModuleType | None:
    """``numba`` (``prep="cpu_parallel"``'s nogil kernels), or ``None`` when it is not installed."""
    return _try("numba")


def nvtx() -> ModuleType | None:
    """``nvtx`` (NVTX ranges around pipeline phases, for Nsight), or ``None`` when it is not installed."""
    return _try("nvtx")


def cupyx() -> ModuleType:
    """``cupyx``. Raises RuntimeError: no usable GPU."""
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
    """The notebook machinery of ``zkgpu report`` (nbformat, nbclient, nbconvert, papermill, ...) as one namespace.
    Raises ImportError: one of them is not installed (extra ``notebooks``; names it)."""
    found = {}
    for name, (module, attr) in _NOTEBOOK_TOOLS.items():
        mod = _try(module)
        if mod is None:
            raise ImportError(f"{module} is not installed: pip install -e '.[notebooks]' (zkgpu report runs the notebooks with it)")
        found[name] = mod if attr is None else getattr(mod, attr)
    return SimpleNamespace(**found)
