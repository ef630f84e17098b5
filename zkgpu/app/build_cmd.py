"""``zkgpu build``: compile every kernel module the prover and the pipeline use, ahead of the first proof.

CuPy compiles a ``RawModule`` with NVRTC on its first kernel lookup and keeps the cubin in its on-disk cache
(``~/.cupy/kernel_cache``, or ``CUPY_CACHE_DIR``), keyed by the source, the options (zkgpu passes the kernel
sources' hash, :func:`zkgpu.core.cuda.build_options`) and the GPU's architecture. A fresh machine pays that
compilation inside its first proof (seconds per module: issue 25 measured 10.8 s in the first ``msm_a``).
``zkgpu build`` pays it once, up front: it proves the committed fixture circuit on the GPU (the NTT, QAP and
G1 and G2 MSM modules and the synthesis's spmv with the prover's own build options, and their per-process set-up) and loads the
pipeline's other modules (prep, msm_precomp). Every later process then loads cubins from the cache.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

from zkgpu.core import cuda as _cuda
from zkgpu.core.errors import CliError
from zkgpu.groth16.formats import read_wtns, read_zkey
from zkgpu.groth16.prover import prove

__all__ = ["build_command", "build_all"]

FIXTURE = Path(__file__).resolve().parent.parent / "groth16" / "fixtures"
OTHER_MODULES = ("prep", "msm_precomp")
"""Modules the prover does not load, built with their default options (the pipeline's prep_msm and the
precomputed-bases MSM)."""


def build_all() -> list[tuple[str, float]]:
    """Compile (or load from CuPy's cache) every kernel module; returns ``(step, seconds)`` in order.

    Raises:
        RuntimeError: no usable GPU (CuPy missing, or no device).
    """
    _cuda.cupy()  # a clear RuntimeError without a GPU
    steps = []
    t = time.perf_counter()
    zk, w = read_zkey(FIXTURE / "circuit.zkey"), read_wtns(FIXTURE / "circuit.wtns")
    prove(zk, w, device="gpu", seed=1)
    steps.append(("prover (spmv, ntt, fr_ops, msm g1 and g2) + fixture proof", time.perf_counter() - t))
    for name in OTHER_MODULES:
        t = time.perf_counter()
        _cuda.get_module(name).compile()
        steps.append((name, time.perf_counter() - t))
    return steps


@click.command("build")
@click.option("--json", "as_json", is_flag=True, help="print the steps and seconds as JSON")
def build_command(as_json: bool) -> None:
    """Compile the GPU kernels ahead of the first proof (into CuPy's on-disk cache), and say how long each took."""
    try:
        steps = build_all()
    except RuntimeError as exc:
        raise CliError(f"build: {exc}") from None
    if as_json:
        click.echo(json.dumps([{"step": s, "seconds": round(v, 3)} for s, v in steps], indent=2))
        return
    for s, v in steps:
        click.echo(f"{v:8.2f} s  {s}")
    click.echo(f"{sum(v for _, v in steps):8.2f} s  in all (a second run loads the cache: compare)")
