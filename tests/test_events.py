import pandas as pd
import pytest

from zkgpu.events import COLUMNS, empty_events, normalize_events


def test_empty_has_schema():
    df = empty_events()
    assert list(df.columns) == COLUMNS and len(df) == 0


def test_normalize_fills_and_checks():
    df = normalize_events(pd.DataFrame({"run": ["r"], "phase": ["ntt_msm_h"], "start_ns": [5], "end_ns": [9]}))
    assert list(df.columns) == COLUMNS and df.loc[0, "end_ns"] == 9 and pd.isna(df.loc[0, "worker"])
    with pytest.raises(ValueError, match="row 0"):
        normalize_events(pd.DataFrame({"phase": ["x"], "start_ns": [9], "end_ns": [5]}))

