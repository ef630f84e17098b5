"""``zkgpu build``: compile every kernel module the prover and pipeline use (NTT, QAP, G1/G2 MSM, the synthesis's
spmv, prep, msm_precomp) into CuPy's cache, before the first proof."""

from __future__ import annotations

import json
import time

import click

from zkgpu.core import cuda as _cuda
from zkgpu.core.errors import CliError
from zkgpu.groth16.formats import read_wtns, read_zkey
from zkgpu.groth16.prover import FIXTURE, prove

__all__ = ["build_command", "build_all"]

OTHER_MODULES = ("prep", "msm_precomp")
"""Modules the prover does not load, built with their default options (the pipeline's prep_msm and the
precomputed-bases MSM)."""


def build_all() -> list[tuple[str, float]]:
    """Compile or load every kernel module; ``(step, seconds)`` in order. Raises RuntimeError: no usable GPU."""
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
