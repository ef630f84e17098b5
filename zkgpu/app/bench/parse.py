"""``zkgpu bench parse``: throughput of the log parser (:mod:`zkgpu.analysis.logs`) on synthetic multi-job
cuzk logs (:func:`synthetic_log`), a CPU benchmark."""

from __future__ import annotations

import resource
import shutil
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

import click
import pandas as pd

from zkgpu.analysis.logs import parse_file, partition_table, to_events
from zkgpu.app.parse_cmd import write_table
from zkgpu.core.errors import CliError, OneLineCommand, check_new_outputs, sigterm_as_interrupt
from zkgpu.core.manifest import DATA_DIR

__all__ = ["synthetic_log", "bench_parse", "bench_parse_command", "BENCH_PARSE_SIZES", "BENCH_PARSE_MAX"]

_SYNTH_SOURCE = DATA_DIR / "nvidia-h200-20261129-record-2" / "logs" / "baseline.log"


def synthetic_log(path: str | Path, n_lines: int, *, template: str | Path | None = None) -> Path:
    """Write an ``n_lines``-line log of time-shifted copies of ``template`` (default: a recorded ``baseline.log``).
    Raises FileExistsError: ``path`` exists. FileNotFoundError: no template. ValueError: n_lines < 1."""
    if isinstance(n_lines, bool) or not isinstance(n_lines, int) or n_lines < 1:
        raise ValueError(f"n_lines must be a positive int, got {n_lines!r}")
    src = Path(template) if template is not None else _SYNTH_SOURCE
    if not src.is_file():
        raise FileNotFoundError(f"template log not found: {src}")
    lines = src.read_text(encoding="utf-8").splitlines()
    span = max((float(ln.split(",", 2)[1]) for ln in lines if ln.startswith("TIMELINE,")), default=0.0) + 1.0
    out = Path(path)
    written = 0
    with open(out, "x", encoding="utf-8") as f:
        k = 0
        while written < n_lines:
            for line in lines[: n_lines - written]:
                if line.startswith("TIMELINE,"):
                    _, t, ev, job, rest = (line.split(",", 4) + [""])[:5]
                    line = f"TIMELINE,{float(t) + k * span:g},{ev},{job}-{k},{rest}"
                f.write(line + "\n")
            written += min(len(lines), n_lines - written)
            k += 1
    return out


#: log sizes of ``zkgpu bench parse`` (lines)
BENCH_PARSE_SIZES = (10_000, 30_000, 100_000, 300_000, 1_000_000)
#: the largest log ``zkgpu bench parse`` writes (lines; about 0.8 GB on disk)
BENCH_PARSE_MAX = 10_000_000


def bench_parse(sizes: Iterable[int] = BENCH_PARSE_SIZES, *, workdir: str | Path | None = None) -> pd.DataFrame:
    """Time parse_file (``rows=False``), partition_table and to_events on synthetic logs, smallest first. Row per size:
    ``lines``, ``bytes``, ``parse_s``, ``partition_table_s``, ``to_events_s``, ``total_s``, ``cpu_s``, ``lines_per_s``,
    ``lines_per_cpu_s``, ``partitions``, ``events``, ``peak_rss_mb``."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="zkgpu-bench-parse-", dir=workdir) as tmp:
        for n in sorted(sizes):
            f = synthetic_log(Path(tmp) / f"{n}.log", int(n))
            c0, t0 = time.process_time(), time.perf_counter()
            parsed = parse_file(f, rows=False)
            t1 = time.perf_counter()
            pt = partition_table(parsed)
            t2 = time.perf_counter()
            ev = to_events(parsed)
            t3, c3 = time.perf_counter(), time.process_time()
            rows.append({"lines": parsed.n_lines, "bytes": f.stat().st_size, "parse_s": t1 - t0, "partition_table_s": t2 - t1,
                         "to_events_s": t3 - t2, "total_s": t3 - t0, "cpu_s": c3 - c0, "lines_per_s": parsed.n_lines / (t3 - t0),
                         "lines_per_cpu_s": parsed.n_lines / max(c3 - c0, 1e-9), "partitions": len(pt), "events": len(ev),
                         "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
            del parsed, pt, ev
            f.unlink()
    return pd.DataFrame(rows)


@click.command("parse", cls=OneLineCommand)
@click.option("--sizes", default=",".join(str(n) for n in BENCH_PARSE_SIZES), show_default=True, help="log sizes in lines, comma separated")
@click.option("--out", "out", default=None, help="write the table to this CSV file (default: print CSV to stdout)")
def bench_parse_command(sizes: str, out: str | None) -> None:
    """Log parser throughput (lines/s) on synthetic multi-job cuzk logs of 10k .. 1M lines: parse,
    partition table and event table, wall seconds and peak memory; CSV to stdout or --out. A CPU
    benchmark (no GPU needed)."""
    try:
        ns = [int(x) for x in sizes.split(",") if x.strip()]
    except ValueError:
        ns = []
    if not ns or min(ns) < 1:
        raise CliError(f"--sizes {sizes!r}: give positive line counts separated by commas (e.g. --sizes 10000,100000)")
    if max(ns) > BENCH_PARSE_MAX:
        raise CliError(f"--sizes {max(ns)}: at most {BENCH_PARSE_MAX} lines per log (about 0.8 GB of disk; choose a smaller size)")
    if out is not None:
        if not out.endswith(".csv"):
            raise CliError(f"--out {out}: the table is written as CSV, so the name must end in .csv (e.g. --out bench-parse.csv)")
        check_new_outputs({"--out": out}, "zkgpu bench parse")
    tmp_dir = tempfile.gettempdir()
    with open(_SYNTH_SOURCE, "rb") as f:
        bytes_per_line = _SYNTH_SOURCE.stat().st_size / max(1, sum(1 for _ in f))
    need, free = int(1.2 * bytes_per_line * max(ns)), shutil.disk_usage(tmp_dir).free
    if need > free:
        raise CliError(f"--sizes {max(ns)}: the synthetic log needs about {need / 1e9:.1f} GB, {tmp_dir} has {free / 1e9:.1f} GB free (choose a smaller size or set TMPDIR)")
    with sigterm_as_interrupt():  # SIGTERM removes the temporary log, as Ctrl-C does
        df = bench_parse(ns)
    if out is None:
        click.echo(df.to_csv(index=False, float_format="%.4g"), nl=False)
    else:
        write_table(df, out)
        click.echo(df.to_string(index=False, float_format=lambda x: f"{x:.4g}"))
        click.echo(f"wrote {out}")
