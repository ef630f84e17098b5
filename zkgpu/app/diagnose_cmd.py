"""``zkgpu diagnose LOG ... [--nsys] [--out DIR] [--json]``: what limits a cuzk deployment's GPUs, from its logs.

``--out DIR`` (must not exist) gets diagnosis.md/.html, figures/ and diagnosis.json, written atomically."""

from __future__ import annotations

import html
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import click
import matplotlib.pyplot as plt

from zkgpu.analysis import metrics
from zkgpu.analysis.logs import read_nsys_sqlite
from zkgpu.analysis.plots import bars
from zkgpu.app.parse_cmd import check_log as parse_check_log
from zkgpu.core.errors import CliError, OneLineCommand, check_writable_under
from zkgpu.story.diagnose import Diagnosis, diagnose_file, markdown

__all__ = ["diagnose_command", "check_log", "write_report", "html_page"]


def check_log(log: str) -> None:
    """Refuse a LOG that is not a readable, uncompressed regular file. Raises CliError."""
    parse_check_log(log, "diagnose", "a saved copy of the engine's stderr")


def _names(logs: list[str]) -> list[str]:
    """A distinct name per log: the file stem, with its position when two logs share a stem."""
    stems = [Path(x).stem for x in logs]
    return [s if stems.count(s) == 1 else f"{i + 1}-{s}" for i, s in enumerate(stems)]


def _figure(diag: Diagnosis, path: Path) -> bool:
    """The GPU's time per partition (:func:`zkgpu.analysis.plots.bars.critical_path`) of one log, as PNG;
    False when the log has nothing to draw."""
    if diag.events is None or not len(diag.events):
        return False
    try:
        table = metrics.critical_path(diag.events)
        fig, _ = bars.critical_path(table, title=f"{diag.log}: the GPU's time per partition")
    except (ValueError, KeyError):
        return False
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return True


def html_page(diags: list[Diagnosis], figures: dict[str, str]) -> str:
    """A self-contained HTML page of the diagnoses (figures by relative path)."""
    def esc(text: str) -> str:
        return html.escape(text).replace("**", "")

    body = ["<h1>zkgpu diagnose</h1>"]
    for d in diags:
        body.append(f"<h2>{esc(d.log)}: <code>{esc(d.bottleneck)}</code> ({esc(d.confidence)})</h2>")
        body.append(f"<p><b>Recommendation:</b> {esc(d.recommendation)}.</p>")
        if d.predicted_gain is not None:
            body.append(f"<p><b>Predicted gain:</b> {d.predicted_gain['ratio']:.2f}&times; ({esc(d.predicted_gain['change'])}).</p>")
        if d.log in figures:
            body.append(f"<img src=\"{html.escape(figures[d.log])}\" alt=\"the GPU's time per partition, {esc(d.log)}\" style=\"max-width:100%\">")
        for s in d.steps:
            body.append(f"<h3>{esc(s.title)} &mdash; {esc(s.status)}</h3><p>{esc(s.text)}</p>")
            items = [f"<li>evidence: {esc(e)}</li>" for e in s.evidence] + [f"<li>missing: {esc(m)}</li>" for m in s.missing]
            if items:
                body.append("<ul>" + "".join(items) + "</ul>")
    return ("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>zkgpu diagnose</title>"
            "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto}</style></head><body>"
            + "\n".join(body) + "</body></html>\n")


def write_report(diags: list[Diagnosis], out: Path, as_json: bool) -> None:
    """Write the report folder ``out`` atomically. Raises CliError: ``out`` exists, or a write fails."""
    parent = out.parent if str(out.parent) else Path(".")
    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=parent))
    try:
        (tmp / "figures").mkdir()
        figures = {d.log: f"figures/{d.log}.png" for d in diags if _figure(d, tmp / "figures" / f"{d.log}.png")}
        md = "# zkgpu diagnose\n\n" + "\n".join(markdown(d, figures.get(d.log)) for d in diags)
        files: dict[str, str] = {"diagnosis.md": md, "diagnosis.html": html_page(diags, figures)}
        if as_json:
            files["diagnosis.json"] = json.dumps([d.to_json() for d in diags], indent=2) + "\n"
        for name, text in files.items():
            with open(tmp / name, "x", encoding="utf-8") as f:
                f.write(text)
        if out.exists():
            raise CliError(f"--out {out} appeared while diagnosing: zkgpu diagnose never reuses a folder (choose another name)")
        os.rename(tmp, out)
    except OSError as exc:
        raise CliError(f"--out {out}: cannot write the report: {exc.strerror or exc} (choose another path)") from exc
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one is missing: check_log names it
        return False


@click.command("diagnose", cls=OneLineCommand)
@click.argument("logs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--nsys", "nsys", default=None, type=click.Path(dir_okay=False),
              help="an nsys export (nsys export --type sqlite) of the same run: the copies' measured times (one LOG only)")
@click.option("--out", "out", default=None, type=click.Path(), help="write diagnosis.md/.html, figures/ (and diagnosis.json) into this new folder")
@click.option("--json", "as_json", is_flag=True, default=False, help="JSON: printed, or diagnosis.json under --out")
@click.option("--progress/--no-progress", default=True, show_default=True, help="progress bar on stderr for logs of 8 MB and more")
def diagnose_command(logs: tuple[str, ...], nsys: str | None, out: str | None, as_json: bool, progress: bool) -> None:
    """Diagnose what limits the GPUs from cuzk-format LOGs (CUZK_TIMING, CUZK_NTT_H, TIMELINE,
    GPU_TIMING, FIN_TIMING lines; any subset): the verdict (h2d_pageable, prep_msm_barrier, lock_scope,
    host_side, gpu_bound or undetermined), its evidence, what is missing, the change to make and the
    model's predicted gain."""
    if nsys is not None and len(logs) > 1:
        raise CliError(f"--nsys {nsys} belongs to one run: give one LOG with it (got {len(logs)})")
    same = next((log for i, log in enumerate(logs) if any(_same_file(log, other) for other in logs[:i])), None)
    if same is not None:
        raise CliError(f"LOG {same} is given twice: each LOG is one run, so a copy would count that run twice")
    if out is not None:
        if not out.strip():
            raise CliError(f"--out {out!r}: give a new folder for the report")
        if Path(out).exists():
            raise CliError(f"--out {out} exists: zkgpu diagnose never reuses a folder (choose a new name)")
        check_writable_under("--out", out, Path(out).parent if str(Path(out).parent) else Path("."))
    for log in logs:
        check_log(log)
    measured: Any = None
    if nsys is not None:
        try:
            measured = read_nsys_sqlite(nsys)
        except (FileNotFoundError, ValueError) as exc:
            raise CliError(f"--nsys {nsys}: {exc}") from None
    diags = []
    for log, name in zip(logs, _names(list(logs)), strict=True):
        try:
            d = diagnose_file(log, measured=measured, progress=progress)
        except OSError as exc:
            raise CliError(f"cannot read {log}: {exc.strerror or exc}") from exc
        d.log = name
        diags.append(d)
    if out is not None:
        write_report(diags, Path(out), as_json)
        click.echo(f"wrote {out}/diagnosis.md, diagnosis.html{', diagnosis.json' if as_json else ''}: "
                   + ", ".join(f"{d.log} {d.bottleneck}" for d in diags))
    elif as_json:
        click.echo(json.dumps([d.to_json() for d in diags], indent=2))
    else:
        click.echo("\n".join(markdown(d) for d in diags))
