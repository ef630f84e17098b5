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


def test_cold_rows_are_kept_apart(copy):
    base, dst = copy
    runs = pd.read_csv(dst / "prove.csv").assign(mode="command")
    extra = pd.DataFrame([dict(tool="zkgpu-build", mode="cold_build", repeat=0, wall_s=30.0, verified=True),
                          dict(tool="zkgpu-gpu", mode="cold_first", repeat=0, wall_s=1.5, verified=True)])
    pd.concat([runs, extra]).to_csv(dst / "prove.csv", index=False)
    src = prove_results.recorded_prove_source(base)
    assert len(src.runs) == len(runs) and src.resident.empty
    assert src.cold["mode"].tolist() == ["cold_build", "cold_first"]


def test_bench_prove_cold_runs_build_then_one_command_in_fresh_caches(tmp_path, monkeypatch):
    """run_cold: zkgpu build, then one prove command, both with CUPY_CACHE_DIR, NUMBA_CACHE_DIR and XDG_CACHE_HOME in
    the work folder (stand-ins for the commands and snarkjs)."""
    import json

    from zkgpu.app.bench import prove as bench

    seen = []

    def fake(cmd, env=None):
        seen.append((cmd[3], {k: env[k] for k in ("CUPY_CACHE_DIR", "NUMBA_CACHE_DIR", "XDG_CACHE_HOME")}))
        if cmd[3] == "prove":
            (tmp_path / "cold_timings.json").write_text(json.dumps({"read": 10.0, "total": 20.0, "key_check": "no"}))
        return 2.0

    monkeypatch.setattr(bench, "_whole_command", fake)
    monkeypatch.setattr(bench, "snarkjs_verify", lambda *a: True)
    runs, phases = bench.run_cold(tmp_path / "k.zkey", tmp_path / "w.wtns", tmp_path / "v.json", workdir=tmp_path)
    assert [c for c, _ in seen] == ["build", "prove"] and seen[0][1] == seen[1][1]
    assert all(v.startswith(str(tmp_path)) for v in seen[0][1].values())
    assert [r["mode"] for r in runs] == ["cold_build", "cold_first"] and {p["phase"] for p in phases} == {"read", "total"}


DATA = RECORDING.parent
NEW = DATA / "nvidia-h200-20261203-bench-prove-1"


@pytest.mark.skipif(not NEW.is_dir(), reason="the 2026-12-03 bench-prove-1 recording is not in this checkout")
def test_the_history_places_each_g2_msm_where_its_recording_ran_it(tmp_path):
    """Notebook 10 draws every bench-prove recording, oldest first: the CPU thread's G2 MSM of 2026-12-01, the GPU's
    since; synthesis on the GPU where the proof built the key's matrices; the newest one's resident proofs last."""
    for name in ("nvidia-h200-20261201-bench-prove", NEW.name):
        shutil.copytree(DATA / name, tmp_path / name)
    old, new = prove_results.prove_recordings(tmp_path)
    assert (old.folder.name, new.folder.name) == ("nvidia-h200-20261201-bench-prove", NEW.name)
    assert prove_results.g2_where(old) == "CPU thread" and prove_results.g2_where(new) == "GPU"
    on = prove_results.phase_timeline(new.phases, gpu=True).set_index("phase")["on"]
    assert on["synthesis"] == on["msm_b2_g2"] == "GPU" and on["key_matrices"] == "CPU"
    assert prove_results.phase_timeline(old.phases).set_index("phase")["on"]["synthesis"] == "CPU"
    table = prove_results.phase_comparison([old, new])
    assert list(dict.fromkeys(table["series"]))[-1].endswith("(key resident, G2 MSM GPU)")
    one = table[table["phase"] == "one proof"].set_index("series")["ms"]
    assert one.iloc[-1] == pytest.approx(1e3 * new.resident["wall_s"].median())
    key = {k: v["value"] for k, v in prove_results.prove_key_numbers(new).items()}
    assert key["msm_b2_g2_ms"] == pytest.approx(new.phases.query("phase == 'msm_b2_g2'")["ms"].median())
    assert key["cold_first_command_ms"] == pytest.approx(1e3 * new.cold.set_index("mode").loc["cold_first", "wall_s"])
    assert "GPU" in prove_results.history_summary([old, new]) and prove_results.cold_summary(new).startswith("From empty")


def test_readme_gives_the_prove_figures_of_the_recording_it_names():
    """README's prove section quotes one bench-prove recording by folder: each figure is that recording's, to its digits."""
    import re

    text = (DATA.parent / "README.md").read_text(encoding="utf-8").split("## Proving real circuits\n", 1)[1].split("\n## ", 1)[0]
    folder = re.search(r"`data/([^`]+-bench-prove[^`]*)`", text).group(1)
    if not (DATA / folder).is_dir():
        pytest.skip(f"{folder} is not in this checkout")
    src = prove_results._prove_source(DATA / folder, {k: pd.read_csv(DATA / folder / f"{k}.csv") for k in ("prove", "phases")})
    key = {k: v["value"] for k, v in prove_results.prove_key_numbers(src).items()}
    flat = " ".join(text.split())
    assert key["all_verified"] == "yes"
    assert f"one whole `zkgpu prove` command takes {key['zkgpu_prove_ms'] / 1e3:.2f} s against snarkjs's {key['snarkjs_prove_ms'] / 1e3:.2f} s" in flat
    assert f"with the key resident, {key['resident_proof_ms']:.1f} ms per proof, {key['resident_proofs_per_s']:.1f} proofs/s" in flat
    assert f"the G2 MSM takes {key['msm_b2_g2_ms']:.1f} ms on the {prove_results.g2_where(src)} and synthesis {key['synthesis_ms']:.1f} ms" in flat
    assert f"the first command takes {key['cold_first_command_ms'] / 1e3:.2f} s" in flat
