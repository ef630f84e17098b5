"""zkgpu beside sppark: the tidy table, the bench-sppark recording, README's block and the figure (CPU only).

Every number below is SYNTHETIC (made up for the test, not measured); the sppark.txt fixture has the format
of anchors/sppark-bench's output. The exception is test_real_porep_output, which reads a real H200 output of
anchors/sppark-porep (tests/fixtures/sppark_porep_h200.txt).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import matplotlib
import pandas as pd
import pytest
from click.testing import CliRunner

from zkgpu.analysis import plots
from zkgpu.analysis.anchors import (
    VS_COLUMNS,
    compute_h_ms,
    load_vs_sppark,
    manifest_summary,
    markdown_table,
    porep_driver_control,
    ratio_table,
    read_sppark,
    sppark_provenance,
    vs_sppark,
)
from zkgpu.app.bench.sppark import (
    README_BEGIN,
    README_END,
    latest_vs_sppark,
    readme_block,
    update_readme,
    write_recording,
)
from zkgpu.app.cli import main
from zkgpu.core.cuda import gpu_available

matplotlib.use("Agg")

SYNTHETIC_SPPARK = """# SYNTHETIC test fixture (format of anchors/sppark-bench; numbers made up)
# vendor: sppark          17278d74295392f9813f009300b257a688422b7a  github.com/supranational/sppark
# vendor: blst            dece82ea537b422890888bacde4034ca5b5a44d8  github.com/supranational/blst
# sppark_bench: BLS12-381 Fr NTT + G1 MSM; sppark@17278d7; 16 host threads
gpu,SYNTHETIC GPU,cc 9.0,132 SMs,139.8 GiB,driver 13000,runtime 13000
op,lg_n,variant,median_ms,min_ms,max_ms,repeats,check
ntt,22,dev_fwd,1.0,1.0,1.0,5,-
ntt,22,dev_inv,2.0,2.0,2.0,5,-
ntt,22,dev_coset_fwd,4.0,4.0,4.0,5,-
ntt,22,dev_coset_inv,5.0,5.0,5.0,5,-
ntt,24,dev_fwd,10.0,10.0,10.0,5,-
ntt,24,dev_inv,,,,0,SKIPPED(deadline)
msm,22,host_pageable,300.0,300.0,300.0,5,PASS
msm,22,devpts_devsc,100.0,100.0,100.0,5,PASS
msm,24,devpts_devsc,400.0,400.0,400.0,5,PASS
"""


def _ntt_rows():  # synthetic zkgpu bench ntt rows: two kernels
    rows = []
    for kernel, f in (("stagewise", 1.0), ("fused", 2.0)):
        for lg, base in ((22, 1.0), (24, 10.0)):
            for v, m in (("forward-nn", 0.5), ("inverse-nn", 1.0), ("coset-nn", 1.0), ("inverse-coset-nn", 1.0),
                         ("forward-nr", 1.0), ("compute_h", 7.0)):
                rows.append(dict(log_n=lg, variant=v, kernel=kernel, median_ms=base * m * f))
    return pd.DataFrame(rows)


def _msm_rows():  # synthetic zkgpu bench msm rows
    rows = []
    for lg, ms in ((22, 80.0), (24, 480.0)):
        for mode, sc, f in (("device", "uniform", 1.0), ("pinned_h2d", "uniform", 1.1), ("device", "porep", 0.5)):
            rows.append(dict(log2_n=lg, n=1 << lg, mode=mode, scalars=sc, variant="outline_mul/balanced/L32", median_ms=ms * f))
    return pd.DataFrame(rows)


@pytest.fixture
def sppark_file(tmp_path):
    f = tmp_path / "sppark.txt"
    f.write_text(SYNTHETIC_SPPARK)
    return f


def test_vs_sppark_tidy_table(sppark_file):
    vs = vs_sppark(_ntt_rows(), _msm_rows(), read_sppark(sppark_file), kernel="stagewise")
    assert list(vs.columns) == VS_COLUMNS
    got = {(r.op, r.variant, r.log_n): r.ratio for r in vs.itertuples()}
    assert got[("ntt", "forward", 22)] == pytest.approx(0.5)
    assert got[("ntt", "inverse", 22)] == pytest.approx(0.5)  # 1.0 / 2.0
    assert got[("ntt", "forward", 24)] == pytest.approx(0.5)
    assert pd.isna(got[("ntt", "inverse", 24)])  # sppark skipped it: no invented ratio
    assert got[("msm", "uniform", 22)] == pytest.approx(0.8) and got[("msm", "uniform", 24)] == pytest.approx(1.2)
    assert got[("msm", "porep", 22)] == pytest.approx(0.4)
    assert ("ntt", "coset", 24) not in got  # measured by zkgpu only
    porep = vs[vs["variant"] == "porep"]
    assert set(porep["sppark_scalars"]) == {"uniform"} and not porep["like_for_like"].any()
    assert vs[vs["op"] == "ntt"]["like_for_like"].all()
    assert list(dict.fromkeys(vs["variant"])) == ["forward", "inverse", "coset", "inverse-coset", "uniform", "porep"]
    assert set(vs["sppark_variant"]) == {"dev_fwd", "dev_inv", "dev_coset_fwd", "dev_coset_inv", "devpts_devsc"}


def test_ratio_table_needs_one_kernel(sppark_file):
    sp = read_sppark(sppark_file)
    both = vs_sppark(_ntt_rows(), None, sp)
    assert set(both["kernel"]) == {"stagewise", "fused"}
    with pytest.raises(ValueError, match="kernel="):
        ratio_table(both)
    t = ratio_table(vs_sppark(_ntt_rows(), _msm_rows(), sp, kernel="fused"))
    assert list(t.columns) == ["2^22", "2^24"]
    assert list(t.index) == ["NTT forward", "NTT inverse", "NTT coset", "NTT inverse-coset", "MSM uniform",
                             "MSM PoRep-like (sppark: uniform)"]
    assert t.loc["NTT forward", "2^22"] == pytest.approx(1.0)


def test_markdown_and_summary(sppark_file):
    vs = vs_sppark(_ntt_rows(), _msm_rows(), read_sppark(sppark_file), kernel="stagewise")
    md = markdown_table(vs)
    assert md.splitlines()[0].endswith("| 2^22 | 2^24 |")
    assert "| NTT forward | 0.50 (0.50 / 1.00) | 0.50 (5.00 / 10.0) |" in md
    assert "| NTT inverse | 0.50 (1.00 / 2.00) | – |" in md
    s = manifest_summary(vs)
    assert s["MSM uniform"]["2^24"] == {"ratio": pytest.approx(1.2), "zkgpu_ms": 480.0, "sppark_ms": 400.0}
    assert s["NTT inverse"]["2^24"]["ratio"] is None
    assert compute_h_ms(_ntt_rows(), 24, "stagewise") == pytest.approx(70.0)
    assert compute_h_ms(_ntt_rows(), 26) is None and compute_h_ms([], 24) is None


def test_empty_inputs(sppark_file):
    vs = vs_sppark(None, None, read_sppark(sppark_file))
    assert vs.empty and list(vs.columns) == VS_COLUMNS


def _runs(tmp_path):
    ntt_run, msm_run = tmp_path / "z" / "x-bench-ntt", tmp_path / "z" / "x-bench-msm"
    ntt_run.mkdir(parents=True)
    msm_run.mkdir()
    _ntt_rows().to_csv(ntt_run / "ntt.csv", index=False)
    (ntt_run / "manifest.json").write_text(json.dumps({"benchmark": "ntt", "kernels": ["fused", "stagewise"]}))
    _msm_rows().to_csv(msm_run / "msm.csv", index=False)
    return ntt_run, msm_run


def test_write_recording_and_replay(tmp_path, sppark_file):
    ntt_run, msm_run = _runs(tmp_path)
    data = tmp_path / "data"
    out = write_recording(sppark_file, ntt_run, msm_run, base=data, gpu="synthetic gpu")
    assert out.name.startswith("synthetic-gpu-") and out.name.endswith("-bench-sppark")
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "msm.csv", "ntt.csv", "sppark.txt", "vs_sppark.csv"]
    m = json.loads((out / "manifest.json").read_text())
    assert m["ntt_kernel"] == "fused"  # the NTT run's first kernel
    assert m["sppark"]["vendor"]["sppark"] == "17278d74295392f9813f009300b257a688422b7a"
    assert m["ratios"]["NTT forward"]["2^22"]["ratio"] == pytest.approx(1.0)
    assert m["compute_h_ms"]["2^24"] == pytest.approx(140.0)
    assert m["zkgpu_runs"]["ntt"]["kernels"] == ["fused", "stagewise"] and m["zkgpu_runs"]["msm"] is None
    assert "uniform only" in m["sppark_scalars"]
    # fused NTT 0.5-1.0; the MSM rows prepare their points inside the timing (MSM uniform 0.8-1.2): not counted
    assert m["acceptance"] == {"worst_like_for_like_ratio": pytest.approx(1.0), "all_like_for_like_at_most_1": True,
                               "compute_h_2^24_at_most_35_ms": False,
                               "like_for_like_rows": ["NTT forward", "NTT inverse", "NTT coset", "NTT inverse-coset"]}
    assert "not counted" in m["acceptance_rule"]
    assert set(pd.read_csv(out / "vs_sppark.csv")["kernel"].dropna()) >= {"fused", "stagewise"}
    path, vs = latest_vs_sppark(data)
    assert path == out and set(vs[vs["op"] == "ntt"]["kernel"]) == {"fused"}
    assert load_vs_sppark(out, kernel="stagewise")["ratio"].iloc[0] == pytest.approx(0.5)
    assert latest_vs_sppark(tmp_path / "nothing") is None


def test_write_recording_errors(tmp_path, sppark_file):
    ntt_run, _ = _runs(tmp_path)
    with pytest.raises(ValueError, match="no zkgpu run folder"):
        write_recording(sppark_file, None, None, base=tmp_path / "d", gpu="g")
    with pytest.raises(ValueError, match="'r9' not in the NTT run"):
        write_recording(sppark_file, ntt_run, None, kernel="r9", base=tmp_path / "d", gpu="g")
    with pytest.raises(FileNotFoundError, match="not a bench-msm run folder"):
        write_recording(sppark_file, None, tmp_path, base=tmp_path / "d", gpu="g")
    bad = tmp_path / "bad.txt"
    bad.write_text("no GPU: CUDA driver version is insufficient\n")
    with pytest.raises(ValueError, match="no sppark-bench result rows"):
        write_recording(bad, ntt_run, None, base=tmp_path / "d", gpu="g")
    assert not (tmp_path / "d").exists()  # nothing written on bad input


def test_readme_block(tmp_path, sppark_file):
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{README_BEGIN}\nold\n{README_END}\nrest\n")
    data = tmp_path / "data"
    assert "No `bench-sppark` recording" in readme_block(data)
    ntt_run, msm_run = _runs(tmp_path)
    write_recording(sppark_file, ntt_run, msm_run, base=data, gpu="g")
    assert update_readme(readme, data)
    text = readme.read_text()
    assert text.startswith("intro\n") and text.endswith("rest\n") and "old" not in text
    assert "| NTT forward | 1.00 (1.00 / 1.00) |" in text and "compute_h` at 2^24: 140.0 ms" in text
    assert not update_readme(readme, data)
    (tmp_path / "plain.md").write_text("no block\n")
    with pytest.raises(ValueError, match="vs-sppark:end"):
        update_readme(tmp_path / "plain.md", data)


def test_cli(tmp_path, sppark_file):
    ntt_run, msm_run = _runs(tmp_path)
    r = CliRunner().invoke(main, ["bench", "sppark", "--sppark", str(sppark_file), "--ntt-run", str(ntt_run),
                                  "--msm-run", str(msm_run), "--kernel", "stagewise", "--out", str(tmp_path / "data")])
    assert r.exit_code == 0, r.output
    assert "| NTT forward | 0.50 (0.50 / 1.00) |" in r.output and "compute_h 2^24: 70.00 ms" in r.output
    r = CliRunner().invoke(main, ["bench", "sppark", "--sppark", str(sppark_file), "--out", str(tmp_path / "data")])
    assert r.exit_code != 0 and "no zkgpu run folder" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(main, ["bench", "sppark-table", "--data", str(tmp_path / "data")])
    assert r.exit_code == 0 and README_BEGIN in r.output and "MSM uniform" in r.output


def test_sppark_ratios_figure(sppark_file):
    t = ratio_table(vs_sppark(_ntt_rows(), _msm_rows(), read_sppark(sppark_file), kernel="stagewise"))
    fig, ax = plots.sppark_ratios(t)
    # one row per operation (ten lines across sizes could not be told apart), one marker per size, the legend names the sizes
    assert [lab.get_text() for lab in ax.get_yticklabels()] == list(t.index)
    assert [x.get_text() for x in ax.get_legend().get_texts()] == [f"$2^{{{c[2:]}}}$" for c in t.columns]
    assert any(list(ln.get_xdata()) == [1.0, 1.0] for ln in ax.get_lines())  # parity line
    cap = plots.caption(fig)
    assert "NTT forward 0.50, 0.50" in cap and "NTT inverse 0.50, –" in cap and "uniform scalars only" in cap
    with pytest.raises(ValueError, match="empty"):
        plots.sppark_ratios(t.iloc[0:0])
    with pytest.raises(ValueError, match="2\\^k"):
        plots.sppark_ratios(t.rename(columns={"2^22": "big"}))


def test_readme_block_is_current():
    """notes/vs-sppark.md's zkgpu/sppark block shows the newest bench-sppark recording in data/ (or says there is none)."""
    root = Path(__file__).resolve().parents[1]
    text = (root / "notes" / "vs-sppark.md").read_text()
    assert readme_block(root / "data") in text, "run: zkgpu bench sppark-table --readme notes/vs-sppark.md"


def test_sizes_filter(tmp_path, sppark_file):
    ntt_run, msm_run = _runs(tmp_path)
    out = write_recording(sppark_file, ntt_run, msm_run, sizes=[24], base=tmp_path / "data", gpu="g")
    m = json.loads((out / "manifest.json").read_text())
    assert m["sizes_log2"] == [24] and set(m["ratios"]["NTT forward"]) == {"2^24"}
    assert set(load_vs_sppark(out)["log_n"]) == {24}
    assert set(pd.read_csv(out / "vs_sppark.csv")["log_n"]) == {22, 24}  # the CSV keeps every size
    r = CliRunner().invoke(main, ["bench", "sppark", "--sppark", str(sppark_file), "--ntt-run", str(ntt_run),
                                  "--sizes", "22,x", "--out", str(tmp_path / "data")])
    assert r.exit_code == 2 and "'22,x'" in r.output


def test_figure_skips_unmeasured_sizes(sppark_file):
    t = ratio_table(vs_sppark(_ntt_rows(), None, read_sppark(sppark_file), kernel="stagewise"))
    fig, ax = plots.sppark_ratios(t)
    assert "PoRep" not in plots.caption(fig)  # no MSM rows: no sentence about them
    row = list(t.index).index("NTT inverse")
    at = {c: [int(y) for _, y in coll.get_offsets()] for c, coll in zip(t.columns, ax.collections, strict=True)}
    assert row in at["2^22"] and row not in at["2^24"]  # 2^24 skipped by sppark: no marker drawn there


@pytest.mark.skipif(gpu_available(), reason="on a GPU the script measures for minutes")
def test_script_dry_run(tmp_path):
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, OUT=str(tmp_path), PYTHON=sys.executable)
    r = subprocess.run(["bash", str(root / "scripts" / "kernels_vs_sppark.sh")], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stdout.startswith("no CUDA GPU here: dry run") and "bench sppark --sppark" in r.stdout
    assert "--sizes 22,24,26" in r.stdout and not (tmp_path / "data").exists()
    assert "anchors/sppark-porep/run.sh --sizes 22,24,26" in r.stdout and "--sppark-porep" in r.stdout


def _notebook_cell(needle: str) -> str:
    nb = json.loads((Path(__file__).resolve().parents[1] / "notebooks" / "08_report.ipynb").read_text())
    (src,) = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code" and needle in "".join(c["source"])]
    return src


def test_notebook_08_section(tmp_path, sppark_file, monkeypatch, capsys):
    """Notebook 08's zkgpu/sppark cell, run on a synthetic recording and on a data folder without one."""
    from IPython.display import display

    from zkgpu.analysis import replay
    from zkgpu.app import view

    src = _notebook_cell("find_benchmarks(\"sppark\")")
    ns = dict(plots=plots, replay=replay, view=view, display=display)
    monkeypatch.setattr(replay, "data_dir", lambda: tmp_path / "empty")  # where the notebook's replay looks
    exec(src, dict(ns))  # the notebook's own cell, as its kernel runs it
    assert "no bench-sppark recording" in capsys.readouterr().out
    ntt_run, msm_run = _runs(tmp_path)
    out = write_recording(sppark_file, ntt_run, msm_run, kernel="stagewise", base=tmp_path / "data", gpu="g")
    monkeypatch.setattr(replay, "data_dir", lambda: tmp_path / "data")
    g = dict(ns)
    exec(src, g)
    assert g["vs_path"] == out and g["ratios"].loc["MSM uniform", "2^24"] == pytest.approx(1.2)
    shown = capsys.readouterr().out  # outside a notebook display() prints the reprs: table, figure, its caption
    assert shown.count("Styler") <= 1 and "display.Image" in shown and "display.Markdown" in shown  # 08 keeps the figure; the table may be in appendix_kernels


# ---------------------------------------------------------------- PoRep-like MSM like for like (anchors/sppark-porep)
SYNTHETIC_POREP = """# SYNTHETIC test fixture (format of anchors/sppark-porep; numbers made up)
# vendor: sppark          17278d74295392f9813f009300b257a688422b7a  github.com/supranational/sppark
# vendor: blst            dece82ea537b422890888bacde4034ca5b5a44d8  github.com/supranational/blst
# sppark_porep: BLS12-381 G1 MSM, PoRep-like scalars; sppark@17278d7; 16 host threads
gpu,SYNTHETIC GPU,cc 9.0,132 SMs,139.8 GiB,driver 13000,runtime 13000
# scalars: 67108864; zero 0.4500, one 0.4500, other 0.1000 (expected 0.45, 0.45, 0.10)
op,lg_n,variant,median_ms,min_ms,max_ms,repeats,check
msm,22,devpts_devsc_porep,50.0,49.0,51.0,5,PASS
msm,22,devpts_devsc_uniform,101.0,100.0,102.0,5,PASS
msm,24,devpts_devsc_porep,,,,0,SKIPPED(deadline)
"""


def _edited_copy(beside: Path, text: str) -> Path:
    f = beside.with_name("edited_" + beside.name)
    f.write_text(text)
    return f


@pytest.fixture
def porep_file(tmp_path):
    f = tmp_path / "sppark_porep.txt"
    f.write_text(SYNTHETIC_POREP)
    return f


def test_vs_sppark_porep_like_for_like(sppark_file, porep_file):
    sp = read_sppark(sppark_file, porep_file)
    assert list(sp["variant"])[-3:] == ["devpts_devsc_porep", "devpts_devsc_uniform", "devpts_devsc_porep"]
    vs = vs_sppark(None, _msm_rows(), sp)
    assert "devpts_devsc_uniform" not in set(vs["sppark_variant"])  # the driver's control rows are not compared
    porep = vs[vs["variant"] == "porep"].set_index("log_n")
    assert porep.loc[22, "ratio"] == pytest.approx(0.8)  # 40 / 50: against sppark's PoRep-like row
    assert pd.isna(porep.loc[24, "ratio"])  # sppark's PoRep-like row skipped: NaN, no fallback to its uniform time
    assert set(porep["sppark_variant"]) == {"devpts_devsc_porep"} and set(porep["sppark_scalars"]) == {"porep"}
    assert vs["like_for_like"].all()
    assert list(ratio_table(vs).index) == ["MSM uniform", "MSM PoRep-like"]
    failed = _edited_copy(porep_file, SYNTHETIC_POREP.replace("51.0,5,PASS", "51.0,5,FAIL"))
    vs = vs_sppark(None, _msm_rows(), read_sppark(sppark_file, failed))
    assert vs[vs["variant"] == "porep"]["ratio"].isna().all()  # a result that failed blst's check gives no ratio


def test_vs_sppark_porep_partial_falls_back(sppark_file, tmp_path):
    only22 = tmp_path / "p.txt"
    only22.write_text("\n".join(ln for ln in SYNTHETIC_POREP.splitlines() if not ln.startswith("msm,24")))
    vs = vs_sppark(None, _msm_rows(), read_sppark(sppark_file, only22))
    porep = vs[vs["variant"] == "porep"].set_index("log_n")
    assert porep.loc[22, "like_for_like"] and porep.loc[22, "sppark_scalars"] == "porep"
    assert not porep.loc[24, "like_for_like"] and porep.loc[24, "sppark_variant"] == "devpts_devsc"
    assert porep.loc[24, "ratio"] == pytest.approx(0.6)  # 240 / 400: context, labelled so
    t = ratio_table(vs)
    assert list(t.index) == ["MSM uniform", "MSM PoRep-like", "MSM PoRep-like (sppark: uniform)"]
    assert pd.isna(t.loc["MSM PoRep-like", "2^24"]) and pd.isna(t.loc["MSM PoRep-like (sppark: uniform)", "2^22"])


def test_write_recording_with_porep(tmp_path, sppark_file, porep_file):
    ntt_run, msm_run = _runs(tmp_path)
    data = tmp_path / "data"
    out = write_recording(sppark_file, ntt_run, msm_run, sppark_porep=porep_file, kernel="stagewise", base=data, gpu="g")
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "msm.csv", "ntt.csv", "sppark.txt", "sppark_porep.txt",
                                                     "vs_sppark.csv"]
    assert (out / "sppark_porep.txt").read_text() == SYNTHETIC_POREP
    m = json.loads((out / "manifest.json").read_text())
    assert m["files"][:2] == ["sppark.txt", "sppark_porep.txt"] and "PoRep-like" in m["sppark_scalars"]
    assert m["sppark_porep"]["vendor"]["sppark"] == "17278d74295392f9813f009300b257a688422b7a"
    assert "PoRep-like scalars" in m["sppark_porep"]["revision"] and "devpts_devsc_porep" in m["timing"]
    assert m["ratios"]["MSM PoRep-like"]["2^22"]["ratio"] == pytest.approx(0.8)
    assert "MSM PoRep-like (sppark: uniform)" not in m["ratios"]
    assert m["acceptance"]["worst_like_for_like_ratio"] == pytest.approx(0.5)  # stagewise NTT; no 'points prepared' MSM row
    assert m["sppark_porep_control"] == {"2^22": {"porep_driver_ms": 101.0, "anchor_ms": 100.0, "ratio": pytest.approx(1.01)}}
    vs = load_vs_sppark(out)
    assert vs[vs["variant"] == "porep"]["like_for_like"].all()
    block = readme_block(data)
    assert "| MSM PoRep-like | 0.80 (40.0 / 50.0) | – |" in block and "like for like" in block and "context" not in block
    bad = tmp_path / "bad.txt"
    bad.write_text("no GPU: CUDA driver version is insufficient\n")
    with pytest.raises(ValueError, match="bad.txt: no sppark-bench result rows"):
        write_recording(sppark_file, ntt_run, msm_run, sppark_porep=bad, base=tmp_path / "d", gpu="g")
    assert not (tmp_path / "d").exists()


def test_cli_with_porep(tmp_path, sppark_file, porep_file):
    _, msm_run = _runs(tmp_path)
    r = CliRunner().invoke(main, ["bench", "sppark", "--sppark", str(sppark_file), "--sppark-porep", str(porep_file),
                                  "--msm-run", str(msm_run), "--out", str(tmp_path / "data")])
    assert r.exit_code == 0, r.output
    assert "| MSM PoRep-like | 0.80 (40.0 / 50.0) | – |" in r.output and "time sppark alike): 2^22 1.010" in r.output
    r = CliRunner().invoke(main, ["bench", "sppark", "--sppark", str(sppark_file), "--sppark-porep", str(tmp_path / "none.txt"),
                                  "--msm-run", str(msm_run), "--out", str(tmp_path / "data")])
    assert r.exit_code == 2 and "none.txt" in r.output and "Traceback" not in r.output


def test_recording_without_porep_replays_as_recorded(tmp_path):
    """data/nvidia-h200-20261201-bench-sppark predates anchors/sppark-porep: its PoRep-like row stays context, and the
    ratios replayed from its files are the ones its manifest recorded."""
    run = Path(__file__).resolve().parents[1] / "data" / "nvidia-h200-20261201-bench-sppark"
    m = json.loads((run / "manifest.json").read_text())
    vs = load_vs_sppark(run)
    got = manifest_summary(vs)
    assert got.keys() == m["ratios"].keys()
    for row, sizes in m["ratios"].items():
        assert got[row].keys() == sizes.keys()
        for size, cell in sizes.items():
            assert got[row][size] == pytest.approx(cell, rel=1e-12), (row, size)  # JSON's float round trip
    porep = vs[vs["variant"] == "porep"]
    assert len(porep) == 3 and not porep["like_for_like"].any() and set(porep["sppark_variant"]) == {"devpts_devsc"}
    shutil.copytree(run, tmp_path / run.name)  # alone in a data folder: the newest there
    assert "the PoRep-like row is context" in readme_block(tmp_path)


def test_figure_porep_like_for_like(sppark_file, porep_file):
    t = ratio_table(vs_sppark(None, _msm_rows(), read_sppark(sppark_file, porep_file)))
    fig, ax = plots.sppark_ratios(t)
    assert "MSM PoRep-like" in [lab.get_text() for lab in ax.get_yticklabels()]
    assert "context, not a comparison" not in plots.caption(fig)  # like for like: no context sentence


def test_real_porep_output():
    """tests/fixtures/sppark_porep_h200.txt: anchors/sppark-porep's output of an H200 run (commit 21c1272, with
    --uniform-control), verbatim: its rows, provenance and control rows parse; beside the 20261201 recording's anchor
    rows (another call) the control ratios are near 1."""
    root = Path(__file__).resolve().parents[1]
    f = root / "tests" / "fixtures" / "sppark_porep_h200.txt"
    sp = read_sppark(f)
    assert list(sp["variant"]) == ["devpts_devsc_porep", "devpts_devsc_uniform"] * 3
    assert list(sp["lg_n"]) == [22, 22, 24, 24, 26, 26] and set(sp["check"]) == {"PASS"} and sp["median_ms"].notna().all()
    p = sppark_provenance(f)
    assert p["vendor"]["sppark"] == "17278d74295392f9813f009300b257a688422b7a" and p["gpu"].startswith("NVIDIA H200")
    anchor = read_sppark(root / "data" / "nvidia-h200-20261201-bench-sppark" / "sppark.txt", f)
    control = porep_driver_control(anchor, [22, 24, 26])
    assert set(control) == {"2^22", "2^24", "2^26"}
    assert all(0.95 < c["ratio"] < 1.05 for c in control.values())
    rows = pd.DataFrame([dict(log2_n=lg, mode="device", scalars="porep", median_ms=1.0) for lg in (22, 24, 26)])
    vs = vs_sppark(None, rows, anchor)
    assert vs["like_for_like"].all() and set(vs["sppark_variant"]) == {"devpts_devsc_porep"}


# ---------------------------------------------------------------- the like-for-like gate: the same work as sppark's row


def test_gate_counts_only_rows_doing_sppark_work(tmp_path, sppark_file, porep_file):
    """Issue 13's gate counts the NTT rows and the MSM 'points prepared' rows (points in Montgomery form before the
    timing, as sppark's msm_t holds them), on their own scalar distribution; the rows that prepare the points inside
    the timing (more work) and those over precomputed bases (a table sppark has not) are shown, not counted."""
    ntt_run, msm_run = _runs(tmp_path)
    rows = [dict(log2_n=lg, n=1 << lg, mode=mode, scalars=sc, variant="v", median_ms=ms)
            for lg in (22, 24)
            for mode, sc, ms in (("device", "uniform", 500.0), ("device", "porep", 500.0),  # 5x sppark: not counted
                                 ("device_prepared", "uniform", 90.0), ("device_prepared", "porep", 45.0),
                                 ("device_precomp", "uniform", 10.0), ("device_precomp", "porep", 5.0))]  # not counted either
    pd.DataFrame(rows).to_csv(msm_run / "msm.csv", index=False)
    vs = vs_sppark(None, pd.DataFrame(rows), read_sppark(sppark_file, porep_file))
    assert dict(zip(vs["zkgpu_variant"] + "@" + vs["log_n"].astype(str), vs["same_work"], strict=True)) == {
        f"{m}/{sc}@{lg}": m == "device_prepared" for lg in (22, 24) for m in ("device", "device_prepared", "device_precomp")
        for sc in ("uniform", "porep")}
    out = write_recording(sppark_file, ntt_run, msm_run, sppark_porep=porep_file, kernel="stagewise", base=tmp_path / "d", gpu="g")
    acc = json.loads((out / "manifest.json").read_text())["acceptance"]
    # counted: NTT 0.5; points prepared uniform 0.9 (2^22) / 0.225 (2^24), PoRep-like 0.9 (2^22 against devpts_devsc_porep
    # 50 ms); its 2^24 row falls back to sppark's uniform time (context): not counted
    assert acc["worst_like_for_like_ratio"] == pytest.approx(0.9) and acc["all_like_for_like_at_most_1"] is True
    assert acc["like_for_like_rows"] == ["NTT forward", "NTT inverse", "NTT coset", "NTT inverse-coset",
                                         "MSM points prepared, uniform", "MSM points prepared, PoRep-like"]
    res = CliRunner().invoke(main, ["bench", "sppark", "--sppark", str(sppark_file), "--ntt-run", str(ntt_run), "--msm-run",
                                    str(msm_run), "--kernel", "stagewise", "--out", str(tmp_path / "d2")])
    assert res.exit_code == 0, res.output
    assert "counted: NTT forward" in res.output and "MSM points prepared, PoRep-like" in res.output
