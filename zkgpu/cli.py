"""The ``zkgpu`` command: ``info``, ``bench``, ``record``, ``report``, ``parse``."""

from __future__ import annotations

import json
import platform
import sys
from importlib import metadata

import click

from . import __version__


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def environment() -> dict:
    """What zkgpu finds on this machine: GPU or none, driver, CUDA, CuPy, nvtx and versions."""
    from ._cuda import device_info  # noqa: PLC0415

    info = {
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


@click.group()
@click.version_option(__version__, prog_name="zkgpu")
def main() -> None:
    """zkgpu: GPU bottlenecks in ZK provers (BLS12-381 NTT/MSM, H2D paths, cuzk pipeline)."""


@main.command()
@click.option("--json", "as_json", is_flag=True, help="print JSON instead of a table")
def info(as_json: bool) -> None:
    """Print the GPU (or none), driver, CUDA, CuPy, nvtx and package versions."""
    env = environment()
    if as_json:
        click.echo(json.dumps(env, indent=2))
        return
    if env.get("gpu") is None:
        click.echo("GPU: none found (CPU reference paths and recorded-data replay only)")
    for k, v in env.items():
        click.echo(f"{k:>22}: {v}")


@main.group()
def bench() -> None:
    """Benchmarks on the GPU (CUDA events, warm-up excluded, medians) written under data/."""


@main.command()
@click.option("--mode", type=click.Choice(["auto", "live", "replay"]), default=None, help="ZKGPU_MODE for the notebooks")
@click.option("--out", "out_dir", default="reports", show_default=True, help="output folder for the HTML")
@click.option("--only", multiple=True, help="run only notebooks whose name contains this (repeatable)")
def report(mode: str | None, out_dir: str, only: tuple[str, ...]) -> None:
    """Execute every notebook in notebooks/ and write HTML plus an index into reports/."""
    from .report import run_report  # noqa: PLC0415

    ok = run_report(out_dir=out_dir, mode=mode, only=only)
    sys.exit(0 if ok else 1)


def _register_optional_commands() -> None:
    """Attach commands whose modules may not exist yet in a partial checkout."""
    import importlib  # noqa: PLC0415

    for mod, attr, group in (
        ("zkgpu.ntt", "bench_command", bench),
        ("zkgpu.msm", "bench_command", bench),
        ("zkgpu.prep", "bench_command", bench),
        ("zkgpu.transfer", "bench_command", bench),
        ("zkgpu.hostload", "bench_command", bench),
        ("zkgpu.record", "record_command", main),
        ("zkgpu.logs", "parse_command", main),
    ):
        try:
            module = importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name != mod:  # a real import error inside an existing module
                raise
            continue
        cmd = getattr(module, attr, None)
        if cmd is not None:
            group.add_command(cmd)


_register_optional_commands()

if __name__ == "__main__":
    main()
