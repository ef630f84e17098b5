import numpy as np
import pandas as pd
import pytest

from zkgpu.core.events import COLUMNS, empty_events, h2d_overlap, normalize_events, union_ms


def test_empty_has_schema():
    df = empty_events()
    assert list(df.columns) == COLUMNS and len(df) == 0


def test_normalize_fills_and_checks():
    df = normalize_events(pd.DataFrame({"run": ["r"], "phase": ["ntt_msm_h"], "start_ns": [5], "end_ns": [9]}))
    assert list(df.columns) == COLUMNS and df.loc[0, "end_ns"] == 9 and pd.isna(df.loc[0, "worker"])
    with pytest.raises(ValueError, match="row 0"):
        normalize_events(pd.DataFrame({"phase": ["x"], "start_ns": [9], "end_ns": [5]}))


MS = 1_000_000


def test_union_ms():
    assert union_ms([], []) == 0.0
    assert union_ms([0], [5 * MS]) == 5.0
    # overlapping, touching, nested, disjoint, unsorted
    s = [10, 0, 2, 5, 20, 21]
    e = [12, 4, 3, 10, 30, 22]
    assert union_ms(np.array(s) * MS, np.array(e) * MS) == pytest.approx(4 + 5 + 2 + 10)
    with pytest.raises(ValueError, match="ends before"):
        union_ms([5], [3])
    with pytest.raises(ValueError, match="shape"):
        union_ms([1, 2], [3])


def test_h2d_overlap_exposed_copy_time():
    # copy a exposed (0-10); copy b (10-20) half hidden by a's kernels (10-15); copy c (20-30)
    # hidden by b's kernels (20-28) but for 2 ms
    o = h2d_overlap([(0, 10), (10, 20), (20, 30)], [(10, 15), (20, 28), (30, 40)])
    assert o["copy_ms"] == pytest.approx(30.0) and o["exposed_ms"] == pytest.approx(17.0)
    assert o["hidden_ms"] == pytest.approx(13.0) and o["kernel_ms"] == pytest.approx(23.0)
    # no overlap at all: everything exposed; full overlap: nothing
    assert h2d_overlap([(0, 5)], [(5, 9)])["exposed_ms"] == pytest.approx(5.0)
    assert h2d_overlap([(2, 4)], [(0, 9)])["exposed_ms"] == pytest.approx(0.0)
    assert h2d_overlap([], [(0, 1)]) == {"copy_ms": 0.0, "exposed_ms": 0.0, "hidden_ms": 0.0, "kernel_ms": 1.0}
    with pytest.raises(ValueError, match="ends before it starts"):
        h2d_overlap([(5, 1)], [])
