"""The ``zkgpu`` command: ``info``, ``bench``, ``record``, ``report``, ``parse``, ``trace``, ``prove``.

Every error is one line on stderr with exit status 2 (:mod:`zkgpu.core.errors`)."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from zkgpu import __version__
from zkgpu.app import settings
from zkgpu.core.errors import CliError, OneLineGroup, check_new_outputs, check_writable_under
from zkgpu.core.manifest import check_run_base, data_dir, environment

if TYPE_CHECKING:
    from zkgpu.analysis.replay import Recording

# Each command's module is imported when the command runs (or when --help lists it), not at start-up:
# `zkgpu prove` loads the prover, not pandas, matplotlib and the pipeline (issue 25: light commands).
_BENCH = {
    "ntt": "zkgpu.app.bench.ntt:bench_command", "msm": "zkgpu.app.bench.msm:bench_command",
    "prep": "zkgpu.app.bench.prep:bench_command", "sppark": "zkgpu.app.bench.sppark:bench_command",
    "sppark-table": "zkgpu.app.bench.sppark:table_command", "h2d": "zkgpu.app.bench.transfer:bench_command",
    "load": "zkgpu.app.bench.hostload:bench_command", "parse": "zkgpu.app.bench.parse:bench_parse_command",
    "prove": "zkgpu.app.bench.prove:bench_command", "keycheck": "zkgpu.app.bench.keycheck:bench_command",
}
_MAIN = {
    "record": "zkgpu.app.record:record_command", "parse": "zkgpu.app.parse_cmd:parse_command",
    "diagnose": "zkgpu.app.diagnose_cmd:diagnose_command", "prove": "zkgpu.app.prove_cmd:prove_command",
    "circuit": "zkgpu.app.prove_cmd:circuit_command", "setup": "zkgpu.app.prove_cmd:setup_command",
    "pipeline": "zkgpu.app.pipeline_cmd:main", "build": "zkgpu.app.build_cmd:build_command",
}


class LazyGroup(OneLineGroup):
    """A click group whose subcommands named in ``lazy`` ("module:attribute") are imported on first use
    (the lazy-loading pattern of click's documentation, "Lazily Loading Subcommands")."""

    def __init__(self, *args, lazy: dict[str, str] | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy and cmd_name not in self.commands:
            module, attr = self.lazy[cmd_name].split(":")
            self.add_command(getattr(importlib.import_module(module), attr), cmd_name)
        return super().get_command(ctx, cmd_name)


@click.group(cls=LazyGroup, lazy=_MAIN)
@click.version_option(__version__, prog_name="zkgpu")
def main() -> None:
    """zkgpu: GPU bottlenecks in ZK provers (BLS12-381 NTT/MSM, H2D paths, cuzk pipeline)."""
    try:
        settings.apply()  # the ZKGPU_* variables (zkgpu.app.settings), once, before any command
    except ValueError as exc:
        raise CliError(str(exc)) from exc


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


@main.group(cls=LazyGroup, lazy=_BENCH)
def bench() -> None:
    """Benchmarks: GPU kernels and transfers (CUDA events, warm-up excluded, medians, written
    under data/) and the log parser (``bench parse``, CPU, CSV)."""


@main.command()
@click.option("--mode", type=click.Choice(["auto", "live", "replay"]), default=None, help="ZKGPU_MODE for the notebooks")
@click.option("--out", "out_dir", default="reports", show_default=True, help="output folder for the HTML")
@click.option("--only", multiple=True, help="run only notebooks whose name contains this (repeatable)")
def report(mode: str | None, out_dir: str, only: tuple[str, ...]) -> None:
    """Execute every notebook in notebooks/ and write HTML plus an index into reports/."""
    from zkgpu.app import report as report_mod

    try:  # ZKGPU_MODE and ZKGPU_HOST_LOAD are checked here, before any notebook runs
        resolved = report_mod.resolve_report_mode(mode)
    except ValueError as exc:
        raise CliError(f"{exc} (unset ZKGPU_MODE or pass --mode replay)") from exc
    try:
        report_mod.notebook_parameters(resolved)
    except ValueError as exc:
        raise CliError(str(exc)) from exc
    if not out_dir.strip():
        raise CliError(f"--out {out_dir!r}: give a folder for the HTML (e.g. --out reports)")
    check_writable_under("--out", out_dir, Path(out_dir).absolute())  # a file there, or a read-only folder: before any notebook runs
    if only and not report_mod.find_notebooks(only=only):
        names = ", ".join(p.stem for p in report_mod.find_notebooks())
        raise CliError(f"--only {' '.join(only)}: no notebook name contains it (notebooks: {names})")
    ok = report_mod.run_report(out_dir=out_dir, mode=mode, only=only, environment=environment())
    sys.exit(0 if ok else 1)


@main.group("trace")
def trace_group() -> None:
    """Zoomable timelines of recorded runs (Chrome / Perfetto trace-event JSON)."""


@trace_group.command("export")
@click.argument("run")
@click.option("--scenario", "scenarios", multiple=True, help="export only this scenario (repeatable; default: all)")
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False), help="the JSON file to write (must not exist)")
def trace_export(run: str, scenarios: tuple[str, ...], out: str) -> None:
    """Write RUN's event table as trace-event JSON for ui.perfetto.dev or chrome://tracing.

    RUN is a recording folder (with manifest.json) or its name under data/. One process per GPU
    and scenario, one thread per worker with its CPU threads apart, one slice per event row
    (bytes and GPU ms in its args); see zkgpu.analysis.chrome_trace.
    """
    from zkgpu.analysis.chrome_trace import ExportError, export_recording, open_run

    try:
        path, rows = export_recording(open_run(run), out, scenarios)
    except ExportError as exc:
        raise CliError(str(exc)) from None
    except OSError as exc:  # unwritable --out, unreadable event table
        raise CliError(f"cannot export {run} to {out}: {exc.strerror or exc}") from None
    click.echo(f"wrote {rows} events to {path}: open it in https://ui.perfetto.dev or chrome://tracing")



def _open_recording(arg: str, what: str) -> Recording:
    """A recording folder given on the command line (a path, or a folder name under the data folder or its
    last-mile/); one-line CliError otherwise."""
    from zkgpu.analysis.replay import Recording

    if not arg.strip():
        raise CliError(f"{what}: '' is not a recording folder")
    for cand in (Path(arg), data_dir() / arg, data_dir() / "last-mile" / arg):
        if (cand / "manifest.json").is_file():
            try:
                return Recording.open(cand)
            except (FileNotFoundError, ValueError) as exc:
                raise CliError(f"{what}: {exc}") from None
            except OSError as exc:
                raise CliError(f"{what}: cannot read {cand}: {exc.strerror or exc}") from None
    raise CliError(f"{what}: {arg!r} is not a recording (no manifest.json there, nor under {data_dir()})")


@main.command("compare")
@click.argument("run_a")
@click.argument("run_b")
@click.option("--csv", "csv_out", default=None, help="also write the table as CSV to this new file")
def compare_cmd(run_a: str, run_b: str, csv_out: str | None) -> None:
    """RUN_A against RUN_B, scenario by scenario: throughput and the three utilizations (median and min-max
    over each recording's runs), the relative difference, and whether it exceeds the runs' own spread (the
    two ranges do not overlap; a side with one run gets no verdict)."""
    from zkgpu.analysis import compare as compare_mod
    from zkgpu.groth16.proof import write_exclusive

    check_new_outputs({"--csv": csv_out}, "zkgpu compare")  # before any work: a name, new, in a writable folder
    a, b = _open_recording(run_a, "compare"), _open_recording(run_b, "compare")
    t = compare_mod.compare(a, b)
    if t.empty:
        raise CliError(f"compare: {a.path.name} and {b.path.name} share no scenario with an event table")
    click.echo(f"A = {a.folder} ({a.repeats} run(s) per scenario), B = {b.folder} ({b.repeats})")
    for name, g in t.groupby("scenario", sort=False):
        click.echo(f"{name}:")
        for _, r in g.iterrows():
            pct = r["metric"] != "partitions_per_min"
            f = (lambda v: f"{100 * v:5.1f}%") if pct else (lambda v: f"{v:7.1f}")
            click.echo(f"  {r['metric']:<19} A {f(r['a'])} [{f(r['a_min'])}..{f(r['a_max'])}]  B {f(r['b'])} "
                       f"[{f(r['b_min'])}..{f(r['b_max'])}]  {100 * r['rel_diff']:+6.1f}%  {r['verdict']}")
    if csv_out is not None:
        try:
            files: dict[str | Path, str] = {csv_out: str(t.to_csv(index=False))}
            write_exclusive(files)  # all or nothing, never over a file created meanwhile
        except FileExistsError:
            raise CliError(f"compare: --csv {csv_out} was created meanwhile: nothing is overwritten") from None
        except OSError as exc:
            raise CliError(f"compare: cannot write {csv_out}: {exc.strerror or exc}") from None


@main.command("forecast")
@click.argument("recording", required=False)
@click.option("--out", "out_dir", default=None, help="folder for the forecast file (default: forecasts/ in the repository)")
def forecast_cmd(recording: str | None, out_dir: str | None) -> None:
    """Write the model's forecast of the next recording of each last-mile scenario, made from RECORDING alone
    (a recording folder; default: the newest in data/last-mile/), to forecast-from-<recording>.json. Commit it
    before the next recording is made: notebook 07b then sets that recording against it (a blind test)."""
    from zkgpu.analysis.replay import Recording, Source
    from zkgpu.story import forecast
    from zkgpu.story.bottleneck import last_mile_recordings

    if recording is not None and not recording.strip():
        raise CliError("forecast: RECORDING '': give a recording folder (or leave it out for the newest last-mile recording)")
    out = check_run_base(out_dir if out_dir is not None else forecast.FORECAST_DIR)  # before any work: a folder we can write into
    try:
        if recording is None:
            recs = last_mile_recordings()
            if not recs:
                raise CliError(f"forecast: no GPU last-mile recording in {data_dir() / 'last-mile'} or {data_dir()}: record one "
                               "(scripts/gpu_run.sh record-last-mile)")
            rec = recs[0]
        else:
            rec = Recording.open(recording)
    except (FileNotFoundError, ValueError) as exc:
        raise CliError(f"forecast: {exc}") from None
    except OSError as exc:
        raise CliError(f"forecast: cannot read {recording}: {exc.strerror or exc}") from None
    try:
        path = forecast.write_forecast(Source("recorded-gpu", rec, "replay"), out)
    except (FileExistsError, ValueError) as exc:
        raise CliError(f"forecast: {exc}") from None
    except OSError as exc:
        raise CliError(f"forecast: cannot write into {out}: {exc.strerror or exc}") from None
    click.echo(f"wrote {path}")


if __name__ == "__main__":
    main()
