"""``zkgpu bench sppark``: zkgpu's kernels beside sppark's, measured in the same GPU call, in one run folder.

Gathers ``sppark.txt`` (anchors/sppark-bench), ``sppark_porep.txt``, ``ntt.csv``, ``msm.csv`` into a ``bench-sppark``
folder with ``vs_sppark.csv`` and a manifest checking :data:`ACCEPTANCE_RULE`. ``zkgpu bench sppark-table`` prints the
newest ratio table."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click
import pandas as pd

from zkgpu.analysis.anchors import (
    POREP_FILE,
    compute_h_ms,
    load_vs_sppark,
    manifest_summary,
    markdown_table,
    porep_driver_control,
    read_sppark,
    read_sppark_manifest,
    row_label,
    sppark_provenance,
    vs_sppark,
)
from zkgpu.analysis.replay import find_benchmarks
from zkgpu.core.errors import CliError
from zkgpu.core.manifest import build_manifest, check_run_base, new_run_dir, write_json_new

__all__ = ["parse_log_sizes", "MAX_LOG_SIZE", "ACCEPTANCE_RULE", "write_recording", "latest_vs_sppark", "readme_block", "update_readme", "bench_command", "table_command"]

README_BEGIN = "<!-- vs-sppark:begin (zkgpu bench sppark-table --readme notes/vs-sppark.md rewrites this block) -->"
README_END = "<!-- vs-sppark:end -->"
SPPARK_SCALARS = ("uniform only: the anchor's driver draws uniform scalars in [0, r); zkgpu's PoRep-like MSM rows are "
                  "set against sppark's uniform time as context (like_for_like = false)")
SPPARK_SCALARS_POREP = ("uniform (the anchor, devpts_devsc) and PoRep-like (anchors/sppark-porep, devpts_devsc_porep: 45% zero, "
                        "45% one, 10% uniform in [0, r), zkgpu's distribution drawn by the driver's own seeded generator, "
                        "not the same values); each zkgpu MSM row is compared with the sppark row of its distribution")
TIMING = ("medians, ms, same GPU, same call. NTT: both device-resident, natural order in and out, CUDA events. MSM: "
          "points and scalars on the GPU; zkgpu: CUDA events around zkgpu.gpu.msm.pippenger.msm_device, which checks the points and puts "
          "them in Montgomery form inside the timing (rows 'points prepared': done once beforehand, untimed, as sppark's "
          "benchmark loads its points into msm_t before the timed invoke: the like-for-like rows; precomputed bases: around "
          "zkgpu.gpu.msm.precomp.msm_precomputed, its table of shifted bases built once beforehand, untimed, as sppark's msm_t "
          "has its points on the GPU before the call); sppark (devpts_devsc): wall "
          "clock around the whole msm_t::invoke, which includes its CPU-side combination of the windows")
ACCEPTANCE_RULE = ("issue 13's targets over the like-for-like rows only: rows that do the work sppark's timed row does "
                   "(every NTT row; the MSM 'points prepared' rows, on the scalar distribution of their sppark row). The MSM "
                   "rows that prepare the points inside the timing (more work) and those over precomputed bases (a table "
                   "built beforehand, which sppark's call has not) are shown beside them, not counted")
TIMING_POREP = TIMING.replace("(devpts_devsc)", "(devpts_devsc, and devpts_devsc_porep on PoRep-like scalars)")
POREP_NOTE = ("The PoRep-like MSM row is like for like: sppark's same call on scalars of zkgpu's PoRep-like distribution "
              "(45% zero, 45% one, 10% uniform; anchors/sppark-porep), both on 2^k points (sppark's tiled from 2^20 distinct "
              "ones, as in its uniform rows).")


def _run_manifest(run_dir: Path | None) -> dict[str, Any] | None:
    p = run_dir / "manifest.json" if run_dir is not None else None
    return json.loads(p.read_text()) if p is not None and p.exists() else None


def write_recording(
    sppark_file: str | Path, ntt_run: str | Path | None, msm_run: str | Path | None, *, sppark_porep: str | Path | None = None,
    kernel: str | None = None, sizes: Sequence[int] | None = None, base: str | Path | None = None, gpu: str | None = None,
) -> Path:
    """Gather a sppark-bench output and zkgpu's ``bench-ntt`` / ``bench-msm`` run folders (of the same GPU call)
    into a fresh ``<base>/<gpu>-<date>-bench-sppark[-N]/`` folder; returns it.

    Args:
        sppark_file: the anchor's ``sppark.txt``.
        sppark_porep: ``anchors/sppark-porep``'s output of the same call (rows ``devpts_devsc_porep``), copied as
            ``sppark_porep.txt``; zkgpu's PoRep-like MSM rows are then compared with it like for like. None: they
            are set against sppark's uniform time as context.
        ntt_run, msm_run: run folders holding ``ntt.csv`` / ``msm.csv`` (either may be None, not both).
        kernel: the NTT kernel the ratios and ``compute_h`` refer to (default: the first of the NTT run's
            ``kernels``); ``vs_sppark.csv`` keeps every kernel.
        sizes: the log2 sizes compared in the manifest's ratios and by :func:`zkgpu.analysis.anchors.load_vs_sppark` (default:
            every size both sides measured); the CSVs keep every size.
        base: where the run folder goes (default: :func:`zkgpu.core.manifest.new_run_dir`'s, data/). gpu: its name
            (default: this GPU).

    Raises:
        FileNotFoundError: a missing file or folder. ValueError: sppark.txt (or sppark_porep) without result rows, no
        zkgpu run given, or ``kernel`` not measured in the NTT run."""
    porep = [sppark_porep] if sppark_porep else []
    sppark = read_sppark(sppark_file, *porep)  # FileNotFoundError / ValueError before anything is written
    runs = {"ntt": Path(ntt_run) if ntt_run else None, "msm": Path(msm_run) if msm_run else None}
    if not any(runs.values()):
        raise ValueError("no zkgpu run folder given (need --ntt-run and/or --msm-run)")
    tables: dict[str, pd.DataFrame] = {}
    for name, d in runs.items():
        if d is not None:
            tables[name] = _read_run_csv(d, name)
    ntt_rows = tables.get("ntt")
    manifests = {name: _run_manifest(d) for name, d in runs.items() if d is not None}
    if ntt_rows is not None:
        measured = list(dict.fromkeys(ntt_rows["kernel"]))
        kernel = kernel or next(iter((manifests.get("ntt") or {}).get("kernels", [])), None) or measured[0]
        if kernel not in measured:
            raise ValueError(f"NTT kernel {kernel!r} not in the NTT run (measured: {', '.join(map(str, measured))})")
    vs_all = vs_sppark(ntt_rows, tables.get("msm"), sppark)
    vs = vs_sppark(ntt_rows, tables.get("msm"), sppark, kernel=kernel)
    if sizes:
        missing = sorted(set(sizes) - set(vs["log_n"]))
        if missing:
            have = ", ".join(map(str, sorted(set(vs["log_n"])))) or "none"
            raise ValueError(f"--sizes {','.join(map(str, missing))}: not measured by both sppark and zkgpu "
                             f"(log2 sizes both measured: {have})")
        vs = vs[vs["log_n"].isin(sizes)]
    if vs.empty:
        raise ValueError("no operation and size measured by both sppark and zkgpu: nothing to compare")
    h24 = compute_h_ms(ntt_rows, 24, kernel) if ntt_rows is not None else None
    counted = vs[vs["like_for_like"] & vs["same_work"]].dropna(subset=["ratio"])
    like = counted["ratio"]
    acceptance = {  # issue 13's targets: every like-for-like ratio <= 1.0, compute_h at 2^24 <= 35 ms
        "worst_like_for_like_ratio": float(like.max()) if len(like) else None,
        "all_like_for_like_at_most_1": bool(len(like)) and bool((like <= 1.0).all()),
        "compute_h_2^24_at_most_35_ms": None if h24 is None else h24 <= 35.0,
        "like_for_like_rows": list(dict.fromkeys(row_label(o, v, True) for o, v in zip(counted["op"], counted["variant"], strict=True))),
    }
    out = new_run_dir("bench-sppark", base=Path(base) if base else None, gpu=gpu)
    try:
        shutil.copyfile(sppark_file, out / "sppark.txt")
        if sppark_porep:
            shutil.copyfile(sppark_porep, out / POREP_FILE)
        for name, d in runs.items():
            if d is not None:
                shutil.copyfile(d / f"{name}.csv", out / f"{name}.csv")  # byte for byte, as the benchmark wrote it
        vs_all.to_csv(out / "vs_sppark.csv", index=False)
        extra = {"sppark_porep": sppark_provenance(sppark_porep),
                 "sppark_porep_control": porep_driver_control(sppark, sizes or None)} if sppark_porep else {}
        write_json_new(out / "manifest.json", build_manifest(
            benchmark="sppark-comparison", sppark=sppark_provenance(sppark_file), **extra,
            sppark_scalars=SPPARK_SCALARS_POREP if sppark_porep else SPPARK_SCALARS,
            ntt_kernel=kernel, sizes_log2=sorted(sizes) if sizes else None, zkgpu_runs=manifests, ratios=manifest_summary(vs),
            compute_h_ms={"2^24": h24}, acceptance=acceptance, acceptance_rule=ACCEPTANCE_RULE,
            timing=TIMING_POREP if sppark_porep else TIMING,
            files=["sppark.txt", *([POREP_FILE] if sppark_porep else []), *(f"{n}.csv" for n in tables), "vs_sppark.csv"]))
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)  # our own fresh folder: no half-written recording (a full disk, Ctrl-C)
        raise
    return out


def _read_run_csv(run_dir: Path, name: str) -> pd.DataFrame:
    """``run_dir/<name>.csv``. Raises FileNotFoundError: none; ValueError: not a CSV with rows."""
    f = run_dir / f"{name}.csv"
    if not f.is_file():
        raise FileNotFoundError(f"{f}: not a bench-{name} run folder")
    try:
        df = pd.read_csv(f)
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise ValueError(f"{f}: not a {name}.csv of zkgpu bench {name} ({_one_line(exc)})") from None
    need = {"ntt": {"log_n", "variant", "median_ms"}, "msm": {"log2_n", "mode", "scalars", "median_ms"}}[name]
    if df.empty or not need <= set(df.columns):
        raise ValueError(f"{f}: not a {name}.csv of zkgpu bench {name} (needs rows with columns {', '.join(sorted(need))})")
    return df


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]


def latest_vs_sppark(base: str | Path | None = None) -> tuple[Path, pd.DataFrame] | None:
    """The newest ``<gpu>-<date>-bench-sppark[-N]/`` folder under ``base`` (default: the replay data folder,
    :func:`zkgpu.analysis.replay.data_dir`) and its :func:`zkgpu.analysis.anchors.load_vs_sppark` table; None when there is none."""
    found = find_benchmarks("sppark", base)
    return None if found is None else (found[0], load_vs_sppark(found[0]))


def readme_block(base: str | Path | None = None) -> str:
    """notes/vs-sppark.md's zkgpu/sppark block (markers included) from the newest ``bench-sppark`` recording under
    ``base`` (default: the replay data folder), or a line saying there is none."""
    found = latest_vs_sppark(base)
    if found is None:
        body = "No `bench-sppark` recording in `data/` yet (`scripts/gpu_run.sh bench-sppark` makes one on a GPU)."
    else:
        path, vs = found
        m = read_sppark_manifest(path / "manifest.json")
        sp = str(m["sppark"].get("vendor", {}).get("sppark", "?"))
        h = m["compute_h_ms"].get("2^24")
        body = (f"`data/{path.name}` (sppark `{sp[:12]}`, NTT kernel `{m.get('ntt_kernel')}`; {m.get('timing', '')}; "
                f"below 1: zkgpu faster):\n\n{markdown_table(vs)}\n\n"
                + (f"zkgpu `compute_h` at 2^24: {h:.1f} ms. " if h is not None else "")
                + _msm_note(vs))
    return f"{README_BEGIN}\n{body}\n{README_END}"


def _msm_note(vs: pd.DataFrame) -> str:
    """README's sentence on the PoRep-like MSM row: like for like, context, or both (sizes without sppark PoRep rows)."""
    porep = vs[(vs["op"] == "msm") & (vs["variant"] == "porep")]
    if not len(porep) or not porep["like_for_like"].any():
        return "sppark's MSM rows have uniform scalars only; the PoRep-like row is context."
    if porep["like_for_like"].all():
        return POREP_NOTE
    return POREP_NOTE + " Sizes without a sppark PoRep-like row are set against its uniform time as context (a separate row)."


def update_readme(readme: str | Path, base: str | Path | None = None) -> bool:
    """Replace the block between :data:`README_BEGIN` and :data:`README_END` with :func:`readme_block`; True if changed.
    Raises ValueError: not UTF-8 or no markers. OSError: cannot be rewritten (unchanged)."""
    p = Path(readme)
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{p}: not a UTF-8 text file (byte {exc.start}); give the README") from None
    pat = re.compile(re.escape(README_BEGIN) + r".*?" + re.escape(README_END), re.S)
    if not pat.search(text):
        raise ValueError(f"{p}: no '{README_END}' block to rewrite")
    new = pat.sub(lambda _: readme_block(base), text, count=1)
    if new != text:  # a new file beside it, then renamed over it: a stopped write never leaves half a README
        tmp = p.with_name(f".{p.name}.zkgpu-tmp")
        try:
            tmp.write_text(new, encoding="utf-8")
            shutil.copymode(p, tmp)
            os.replace(tmp, p)
        finally:
            tmp.unlink(missing_ok=True)
    return new != text


#: the largest log2 size ``zkgpu bench sppark --sizes`` takes (BLS12-381's Fr has 2-adicity 32)
MAX_LOG_SIZE = 32


def parse_log_sizes(text: str, opt: str = "--sizes") -> list[int]:
    """``--sizes``: comma-separated log2 sizes in [1, :data:`MAX_LOG_SIZE`]; empty: all. Raises CliError: a bad item."""
    out = []
    for item in (t.strip() for t in text.split(",")):
        if not item and text.strip():
            raise CliError(f"{opt} {text!r}: an empty item; give log2 sizes separated by commas (e.g. {opt} 22,24,26)")
        if not item:
            continue
        try:
            lg = int(item)
        except ValueError:
            lg = 0
        if not 1 <= lg <= MAX_LOG_SIZE:
            raise CliError(f"{opt} {text!r}: {item!r} is not a log2 size in 1..{MAX_LOG_SIZE} (e.g. {opt} 22,24,26)")
        out.append(lg)
    return out


@click.command("sppark")
@click.option("--sppark", "sppark_file", required=True, type=click.Path(exists=True, dir_okay=False),
              help="the sppark-bench output (sppark.txt) of this GPU call")
@click.option("--sppark-porep", "sppark_porep", default=None, type=click.Path(exists=True, dir_okay=False),
              help="anchors/sppark-porep's output (sppark_porep.txt) of this GPU call: PoRep-like MSM like for like")
@click.option("--ntt-run", default=None, type=click.Path(exists=True, file_okay=False), help="the bench-ntt run folder")
@click.option("--msm-run", default=None, type=click.Path(exists=True, file_okay=False), help="the bench-msm run folder")
@click.option("--kernel", default=None, help="NTT kernel of the ratios (default: the NTT run's first kernel)")
@click.option("--sizes", default="", help="log2 sizes to compare, comma separated (default: every size both sides measured)")
@click.option("--out", "base", default=None, help="base folder for the run folder (default data/)")
def bench_sppark(sppark_file: str, sppark_porep: str | None, ntt_run: str | None, msm_run: str | None, kernel: str | None,
                 sizes: str, base: str | None) -> None:
    """One bench-sppark recording from a sppark-bench output and zkgpu's bench-ntt / bench-msm run folders of
    the same GPU call (scripts/kernels_vs_sppark.sh runs all three); prints the zkgpu/sppark ratios."""
    logs = parse_log_sizes(sizes)
    check_run_base(base)
    try:
        out = write_recording(sppark_file, ntt_run, msm_run, sppark_porep=sppark_porep, kernel=kernel, sizes=logs, base=base)
    except (ValueError, FileNotFoundError) as exc:
        raise CliError(str(exc)) from None
    m = json.loads((out / "manifest.json").read_text())
    click.echo(f"wrote {out}")
    click.echo(markdown_table(load_vs_sppark(out)))
    h = m["compute_h_ms"]["2^24"]
    click.echo(f"compute_h 2^24: {h:.2f} ms" if h is not None else "compute_h 2^24: not measured")
    acc = m["acceptance"]
    click.echo(f"issue 13 targets (like-for-like ratios <= 1.0, compute_h 2^24 <= 35 ms): "
               f"worst like-for-like ratio {acc['worst_like_for_like_ratio']}, all <= 1.0: {acc['all_like_for_like_at_most_1']}, "
               f"compute_h 2^24 <= 35 ms: {acc['compute_h_2^24_at_most_35_ms']}; counted: "
               f"{', '.join(acc['like_for_like_rows']) or 'none'} (MSM rows that prepare the points inside the timing, "
               f"or use precomputed bases, are not like for like)")
    control = {k: "–" if v["ratio"] is None else f"{v['ratio']:.3f}" for k, v in (m.get("sppark_porep_control") or {}).items()}
    if control:
        click.echo("PoRep-like driver's uniform control / the anchor's devpts_devsc (near 1: both drivers time sppark alike): "
                   + ", ".join(f"{k} {v}" for k, v in control.items()))


@click.command("sppark-table")
@click.option("--data", "base", default=None, type=click.Path(exists=True, file_okay=False), help="data folder (default data/)")
@click.option("--readme", default=None, type=click.Path(exists=True, dir_okay=False),
              help="rewrite this README's vs-sppark block instead of printing")
def sppark_table(base: str | None, readme: str | None) -> None:
    """The zkgpu/sppark ratio table of the newest bench-sppark recording, as markdown."""
    if readme:
        try:
            changed = update_readme(readme, base)
        except ValueError as exc:
            raise CliError(str(exc)) from None
        except OSError as exc:
            raise CliError(f"--readme {readme}: cannot rewrite it: {exc.strerror or exc}") from None
        click.echo(f"{readme}: {'updated' if changed else 'already current'}")
    else:
        try:
            click.echo(readme_block(base))
        except ValueError as exc:  # an unusable manifest, named
            raise CliError(str(exc)) from None


bench_command = bench_sppark
"""``zkgpu bench sppark`` (registered by :mod:`zkgpu.app.cli`)."""
table_command = sppark_table
"""``zkgpu bench sppark-table`` (registered by :mod:`zkgpu.app.cli`)."""
