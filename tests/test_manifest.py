"""Run manifests and fresh run folders."""

import pytest

from zkgpu.manifest import git_commit, new_run_dir, write_json_new


def test_manifest_commit_from_env(monkeypatch):
    monkeypatch.setenv("ZKGPU_COMMIT", "abc123")
    monkeypatch.setenv("ZKGPU_DIRTY", "0")
    assert git_commit() == {"commit": "abc123", "dirty": False}


def test_run_dirs_are_fresh_and_json_never_overwritten(tmp_path):
    a = new_run_dir("bench-x", base=tmp_path, gpu="NVIDIA H200")
    b = new_run_dir("bench-x", base=tmp_path, gpu="NVIDIA H200")
    assert a != b and a.name.startswith("nvidia-h200-") and b.name.endswith("-1")
    write_json_new(a / "m.json", {"x": 1})
    with pytest.raises(FileExistsError):
        write_json_new(a / "m.json", {"x": 2})
    assert '"x": 1' in (a / "m.json").read_text()
