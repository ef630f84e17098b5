"""zkgpu.analysis.anchors: parsing sppark-bench output and the zkgpu/sppark ratio table (no GPU needed)."""

from __future__ import annotations

import pandas as pd
import pytest

from zkgpu.analysis.anchors import load_ntt_vs_sppark, ntt_vs_sppark, read_sppark, sppark_provenance

SAMPLE = """# vendor: sppark          17278d74295392f9813f009300b257a688422b7a  github.com/supranational/sppark
# vendor: blst            dece82ea537b422890888bacde4034ca5b5a44d8  github.com/supranational/blst
# sppark_bench: BLS12-381 Fr NTT + G1 MSM; sppark@17278d7; 16 host threads
gpu,NVIDIA H200,cc 9.0,132 SMs,139.8 GiB,driver 13000,runtime 13000
# check NTT forward y[0] == P(1): PASS
op,lg_n,variant,median_ms,min_ms,max_ms,repeats,check
ntt,22,dev_fwd,1.117,1.100,1.200,7,-
ntt,22,dev_inv,1.180,1.170,1.190,7,-
ntt,24,dev_fwd,4.740,4.700,4.800,7,-
ntt,26,dev_fwd,,,,0,SKIPPED(deadline)
msm,22,devpts_devsc,52.7,52.0,53.0,7,PASS
"""


def test_read_sppark_and_ratios(tmp_path):
    f = tmp_path / "sppark.txt"
    f.write_text(SAMPLE)
    df = read_sppark(f)
    assert list(df["variant"]) == ["dev_fwd", "dev_inv", "dev_fwd", "dev_fwd", "devpts_devsc"]
    assert df["median_ms"].isna().sum() == 1
    rows = [
        dict(log_n=22, variant="forward-nn", kernel="fused", median_ms=0.5585),
        dict(log_n=22, variant="inverse-nn", kernel="fused", median_ms=2.36),
        dict(log_n=24, variant="forward-nn", kernel="stagewise", median_ms=7.75),
        dict(log_n=24, variant="forward-nr", kernel="stagewise", median_ms=7.0),  # no sppark counterpart
    ]
    vs = ntt_vs_sppark(rows, df)
    got = {(r.log_n, r.variant, r.kernel): round(r.ratio, 3) for r in vs.itertuples()}
    assert got == {(22, "forward-nn", "fused"): 0.5, (22, "inverse-nn", "fused"): 2.0, (24, "forward-nn", "stagewise"): 1.635}


def test_read_sppark_without_rows(tmp_path):
    f = tmp_path / "sppark.txt"
    f.write_text("no GPU: CUDA driver version is insufficient\n")
    with pytest.raises(ValueError, match="no sppark-bench result rows"):
        read_sppark(f)


def test_sppark_provenance(tmp_path):
    f = tmp_path / "sppark.txt"
    f.write_text(SAMPLE)
    p = sppark_provenance(f)
    assert p["vendor"] == {"sppark": "17278d74295392f9813f009300b257a688422b7a", "blst": "dece82ea537b422890888bacde4034ca5b5a44d8"}
    assert "sppark@17278d7" in p["revision"] and p["gpu"].startswith("NVIDIA H200")


def test_load_ntt_vs_sppark(tmp_path):
    (tmp_path / "sppark.txt").write_text(SAMPLE)
    pd.DataFrame([dict(log_n=24, variant="forward-nn", kernel="fused", median_ms=4.74 * 0.9)]).to_csv(
        tmp_path / "ntt.csv", index=False
    )
    vs = load_ntt_vs_sppark(tmp_path)
    assert len(vs) == 1 and abs(vs["ratio"].iloc[0] - 0.9) < 1e-12
    (tmp_path / "sppark.txt").unlink()
    with pytest.raises(FileNotFoundError, match="--sppark"):
        load_ntt_vs_sppark(tmp_path)
