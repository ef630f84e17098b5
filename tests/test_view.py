"""zkgpu.app.view: tables formatted by column name (units, percentages, never scientific notation)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest

view = pytest.importorskip("zkgpu.app.view")


def test_column_formats_by_name():
    assert view.fmt(0.43463, "compute_util") == "43.5%"
    assert view.fmt(0.0000123, "h2d_share") == "0.0%"  # a share is never printed as 1.23e-05
    assert view.fmt(1234.56, "ntt_msm_h_ms") == "1,234.6 ms"
    assert view.fmt(3.2721, "h2d_gbps") == "3.27 GB/s"
    assert view.fmt(190.41, "partitions_per_min") == "190.4 /min"
    assert view.fmt(2.126, "ntt_msm_h_speedup") == "2.13×"
    assert view.fmt(117.0, "h2d") == "117.0 ms"  # a GPU-path category is ms per partition
    assert view.fmt(float("nan"), "compute_util") == "–"
    assert view.fmt(39.0, "allocations") == "39" and view.fmt(0.000012, "x") == "0.000"
    assert view.fmt(498.329, "band_lo") == "498.3 /min" and view.fmt(0.131, "band_rel") == "13.1%"  # the blind test's band


def test_table_styles_every_column_and_series_rows():
    df = pd.DataFrame({"compute_util": [0.5], "wall_ms": [5041.7], "n": [0.00001]}, index=["baseline"])
    html = view.table(df).to_html()
    assert "50.0%" in html and "5,041.7 ms" in html and "e-05" not in html
    s = pd.Series({"share": 0.003, "prove_start_ms": 8364.0}, name="baseline")
    html = view.table(s).to_html()
    assert "0.3%" in html and "8,364.0 ms" in html
    cmp = pd.DataFrame({"model": [0.4, 200.0], "rel_err": [0.1, -0.05]}, index=["compute_util", "ntt_msm_h_ms"])
    html = view.table(cmp, by_row=True).to_html()
    assert "40.0%" in html and "200.0 ms" in html and "-5.0%" in html


def test_differences_of_percentages_are_percentage_points_and_no_minus_zero():
    cmp = pd.DataFrame({"model": [0.385, 0.0], "measured": [0.435, 0.049], "diff": [-0.0497, -0.049]},
                       index=["compute_util", "barrier_wait_ms"])
    html = view.table(cmp, by_row=True).to_html()
    assert "-5.0 pp" in html and "0.0 ms" in html and "-0.0" not in html
    assert view.fmt(-0.0004, "share") == "0.0%" and view.fmt(-0.04, "wait_ms") == "0.0 ms"
    assert view.fmt(32.1, "s_per_proof") == "32.1 s" and view.fmt(89, "s_per_proof") == "89.0 s"


def test_definitions_render_as_a_markdown_table():
    from zkgpu.analysis.metrics import UTILIZATIONS

    md = view.definitions(UTILIZATIONS)
    lines = md.splitlines()
    assert lines[0].startswith("| name |") and lines[1] == "|---|---|---|" and len(lines) == 2 + len(UTILIZATIONS)


def test_byte_counts_read_in_binary_units():
    df = pd.DataFrame({"alloc_ms": [1.0, 2.0], "bytes": [403_000_000, 1 << 20]},
                      index=pd.Index([1 << 20, 1 << 32], name="size_bytes"))
    html = view.table(df).to_html()
    assert "1 MiB" in html and "4 GiB" in html and "384.3 MiB" in html and "4294967296" not in html


def test_table_percent_columns_whatever_their_name():
    # bottleneck.idle_table's causes are fractions of the GPU window under plain names ("compute")
    df = pd.DataFrame({"compute": [0.504], "exposed H2D": [0.0123], "window_ms": [1500.0]}, index=["baseline"])
    html = view.table(df, percent=["compute", "exposed H2D"]).to_html()
    assert "50.4%" in html and "1.2%" in html and "1,500.0 ms" in html and "0.504" not in html


def test_table_percent_accepts_one_column_name():
    df = pd.DataFrame({"ie": [0.25], "i": [3.0]}, index=["a"])
    html = view.table(df, percent="ie").to_html()
    assert "25.0%" in html and "300.0%" not in html


def test_table_hides_bare_row_numbers():
    html = view.table(pd.DataFrame({"scenario": ["a", "b"], "wall_ms": [1.0, 2.0]})).to_html()
    assert ">0<" not in html and ">1<" not in html and "a" in html
    named = view.table(pd.DataFrame({"wall_ms": [1.0]}, index=pd.Index(["baseline"], name="run"))).to_html()
    assert "baseline" in named


def test_the_gpus_time_columns_carry_their_unit():
    from zkgpu.analysis import gpu_time

    for c in (*gpu_time.BUSY_PARTS, *gpu_time.IDLE_PARTS):
        assert view.fmt(15.175, c) == "15.2 ms", c


def test_banner_names_ignored_parameters_and_no_absolute_path(tmp_path, monkeypatch):
    """Replay: N/PARTITIONS/HOST_LOAD cannot apply to a recording; the banner says so instead of dropping
    them silently, and names the folder relative to data/ (never the clone's absolute path)."""
    from zkgpu.analysis import replay
    from zkgpu.app import live

    src = live.open_source("replay", n=4096, partitions=3)
    if src.kind == "cpu-standin":
        pytest.skip("no recording in data/")
    text = src.banner()
    assert "N = 4096, PARTITIONS = 3 ignored: replaying a recording at n = 2^" in text
    assert str(replay.DATA_DIR.parent) not in text and "Folder: data/" in text
    assert "ignored" not in live.open_source("replay").banner()  # nothing asked for, nothing ignored
    assert replay.shown_path(tmp_path / "zkgpu-live-x") == "zkgpu-live-x"  # a temporary folder: its name alone


def test_live_without_gpu_fails_in_one_line(monkeypatch):
    from zkgpu.app import live
    from zkgpu.core import cuda

    monkeypatch.setattr(cuda, "gpu_available", lambda: False)
    with pytest.raises(live.NoGPUError, match="needs a CUDA GPU") as exc:
        live.open_source("live")
    assert exc.value._render_traceback_() == [f"NoGPUError: {exc.value}"] and "\n" not in str(exc.value)


def test_flags_read_yes_or_no_not_python_booleans():
    """00's seed table ('reproduced'), 05's ('ok'), 10's ('all_verified') and the blind test ('in_band') printed True/False."""
    df = pd.DataFrame({"reproduced": [True, None, False], "ok": np.array([True, False, True]), "n": [1, 2, 3]}, index=["a", "b", "c"])
    html = view.table(df).to_html()
    assert "True" not in html and "False" not in html and html.count(">yes<") == 3 and html.count(">no<") == 2 and ">–<" in html
    assert "yes" not in view.table(pd.DataFrame({"n": [1, 0]})).to_html()  # integers stay numbers
