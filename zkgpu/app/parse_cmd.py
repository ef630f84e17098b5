"""``zkgpu parse LOGFILE``: a cuzk-format log summarized per partition, with every count of records
that were unknown, cut, malformed, merged or left unpaired, and optionally its event and partition
tables written to Parquet / CSV (:mod:`zkgpu.analysis.logs` does the parsing)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import click
import pandas as pd

from zkgpu.analysis.logs import parse_file, partition_table, to_events
from zkgpu.analysis.metrics import identity_check
from zkgpu.core.errors import CliError, OneLineCommand, check_new_outputs

__all__ = ["parse_command", "check_log", "write_table", "SHOW_ROWS", "COMPRESSED"]


def check_outputs(targets: dict[str, str | None]) -> None:
    """Every check on the output files of ``zkgpu parse``, before anything is read or written."""
    for opt, target in targets.items():
        if target is not None and not target.endswith((".parquet", ".csv")):
            raise CliError(f"{opt} {target}: the output must end in .parquet or .csv (e.g. {opt} events.parquet)")
    outputs: dict[str, str | os.PathLike | None] = dict(targets)
    check_new_outputs(outputs, "zkgpu parse", "give the event table and the partition table two names")


def write_table(df: pd.DataFrame, target: str) -> None:
    path = Path(target)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "xb") as f:  # exclusive create: never overwrite
            if target.endswith(".parquet"):
                df.to_parquet(f, index=False)
            else:
                df.to_csv(f, index=False)
    except FileExistsError as exc:
        raise CliError(f"{target} appeared while parsing: zkgpu parse never overwrites a file (choose another name)") from exc
    except OSError as exc:
        path.unlink(missing_ok=True)
        raise CliError(f"cannot write {target}: {exc.strerror or exc} (choose another path)") from exc
    except BaseException:
        path.unlink(missing_ok=True)  # no half-written table
        raise


#: magic bytes of compressed files -> (format, the command that decompresses it, keeping the file)
COMPRESSED = {re.compile(rb"\x1f\x8b"): ("gzip", "gunzip -k"), re.compile(rb"\x28\xb5\x2f\xfd"): ("zstd", "zstd -d"),
              re.compile(rb"\xfd7zXZ\x00"): ("xz", "unxz -k"), re.compile(rb"BZh[1-9]1AY&SY"): ("bzip2", "bunzip2 -k")}

def check_log(log: str, verb: str = "parse", example: str = "a saved copy of the stream") -> None:
    """Refuse a LOG that is not a readable, uncompressed regular file (message worded by ``verb``, ``example``). Raises
    CliError: not a regular file, unreadable, or compressed."""
    if not Path(log).is_file():
        raise CliError(f"{log} is not a regular file: give a log file (e.g. {example})")
    try:
        with open(log, "rb") as f:
            head = f.read(10)
    except OSError as exc:
        raise CliError(f"cannot read {log}: {exc.strerror or exc}") from exc
    for magic, (kind, tool) in COMPRESSED.items():
        if magic.match(head):
            raise CliError(f"{log} is {kind}-compressed: decompress it first (e.g. {tool} {log}) and {verb} the text log")


#: partitions ``zkgpu parse`` prints before summarizing the rest
SHOW_ROWS = 20


@click.command("parse", cls=OneLineCommand)
@click.argument("logfile", type=click.Path(exists=True, dir_okay=False))
@click.option("--out", "out", default=None, help="write the event table to X.parquet or X.csv")
@click.option("--partitions-out", default=None, help="also write the per-partition table (.parquet or .csv)")
@click.option("--run", "run", default=None, help="run name for the event table (default: file stem)")
@click.option("--rows", default=SHOW_ROWS, show_default=True, type=click.IntRange(min=0), help="partitions to print (medians of all are printed after them)")
@click.option("--progress/--no-progress", default=True, show_default=True, help="progress bar on stderr for files of 8 MB and more")
def parse_command(logfile: str, out: str | None, partitions_out: str | None, run: str | None, rows: int, progress: bool) -> None:
    """Parse a cuzk-format LOGFILE: print a per-partition summary and every count of records that
    were unknown, cut, malformed, merged or left unpaired."""
    check_outputs({"--out": out, "--partitions-out": partitions_out})
    check_log(logfile)
    try:
        parsed = parse_file(logfile, progress=progress, rows=False)
    except OSError as exc:
        raise CliError(f"cannot read {logfile}: {exc.strerror or exc}") from exc
    if not parsed.record_count() and parsed.undecodable_count:
        raise CliError(f"{logfile}: not a text log ({parsed.undecodable_count} of {parsed.n_lines} lines hold bytes that are "
                       "not UTF-8 text, or NULs) and no cuzk-format record in it: give the log as the engine wrote it")
    pt = partition_table(parsed)
    run = run or Path(logfile).stem
    cols = ["record", "prep_msm_ms", "mutex_wait_ms", "ntt_msm_h_ms", "barrier_wait_ms", "batch_add_ms", "tail_msm_ms", "gpu_total_ms", "mutex_held_ms"]
    click.echo(f"{logfile}: {parsed.n_lines} lines, {len(pt)} partitions")
    if len(pt):
        show = pt[cols].join(identity_check(pt)[["residual_ms"]])
        show = show.dropna(axis=1, how="all")

        def fmt(x: float) -> str:
            return f"{x:g}"

        click.echo(show.head(rows).to_string(index=False, na_rep="-", float_format=fmt))
        if len(show) > rows:
            med = show.drop(columns=["record"]).median(numeric_only=True).to_frame("median of all").T
            click.echo(f"... {len(show) - rows} more partitions; medians over all {len(show)}:")
            click.echo(med.to_string(na_rep="-", float_format=fmt))
    s = parsed.summary()
    click.echo("records: " + ", ".join(f"{k}={v}" for k, v in s.items() if k not in ("lines", "unknown")))
    click.echo(f"unknown lines: {parsed.unknown_count}")
    if not parsed.record_count():
        click.echo(f"note: no cuzk-format record (CUZK_TIMING:, CUZK_NTT_H:, TIMELINE, GPU_TIMING ...) in {logfile}", err=True)
    try:
        events = to_events(parsed, run=run) if out is not None else None
    except ValueError as exc:  # durations that add up past the int64 ns clock
        raise CliError(f"--out {out}: cannot place {logfile}'s events: {exc}") from None
    tables = [(target, df) for target, df in ((out, events), (partitions_out, pt)) if target is not None and df is not None]
    written: list[str] = []
    for target, df in tables:
        try:
            write_table(df, target)
        except BaseException:
            for done in written:  # all outputs or none: the first table goes if the second cannot be written
                Path(done).unlink(missing_ok=True)
            raise
        written.append(target)
    for target, df in tables:
        click.echo(f"wrote {len(df)} rows to {target}")

