"""zkgpu.story.prove_results reads bench-prove recordings with and without the ``mode`` column
(``zkgpu bench prove --resident N`` rows), and refuses an unknown mode by name."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from zkgpu.story import prove_results

RECORDING = Path(__file__).resolve().parent.parent / "data" / "nvidia-h200-20261201-bench-prove"


@pytest.fixture
def copy(tmp_path):
    if not RECORDING.is_dir():
        pytest.skip(f"{RECORDING} is not in this checkout")
    dst = tmp_path / RECORDING.name
    shutil.copytree(RECORDING, dst)
    return tmp_path, dst


def test_a_recording_without_mode_holds_commands(copy):
    base, _ = copy
    src = prove_results.recorded_prove_source(base)
    assert len(src.runs) and src.resident.empty and "mode" not in src.runs.columns
    assert "resident_proof_ms" not in prove_results.prove_key_numbers(src)


def test_resident_rows_are_kept_apart(copy):
    base, dst = copy
    runs = pd.read_csv(dst / "prove.csv").assign(mode="command")
    extra = pd.DataFrame([dict(tool="zkgpu-gpu", mode="resident", repeat=i, wall_s=0.1 + i / 100, verified=True) for i in range(3)])
    pd.concat([runs, extra]).to_csv(dst / "prove.csv", index=False)
    src = prove_results.recorded_prove_source(base)
    assert src.runs.equals(prove_results.recorded_prove_source(base).runs) and len(src.runs) == len(runs)
    assert len(src.resident) == 3
    key = {k: v["value"] for k, v in prove_results.prove_key_numbers(src).items()}
    assert key["resident_proof_ms"] == pytest.approx(110.0)
    assert key["zkgpu_prove_ms"] == pytest.approx(1e3 * runs[runs.tool == "zkgpu-gpu"].wall_s.median())


def test_an_unknown_mode_is_named(copy):
    base, dst = copy
    pd.read_csv(dst / "prove.csv").assign(mode="bogus").to_csv(dst / "prove.csv", index=False)
    with pytest.raises(ValueError, match="unknown mode 'bogus'"):
        prove_results.recorded_prove_source(base)
