"""Run manifests, fresh run folders and the settings that reach them (zkgpu.core.manifest, zkgpu.app.settings)."""

import pytest

from zkgpu.app import settings
from zkgpu.core import manifest
from zkgpu.core.manifest import environment, git_commit, new_run_dir, write_json_new


def test_manifest_commit_configured_where_git_cannot_tell(monkeypatch, tmp_path, restore_settings):
    settings.apply({"ZKGPU_COMMIT": "abc123-dirty"})  # git describe --always --dirty
    assert git_commit()["commit"] == "abc123" and git_commit()["dirty"] is True
    settings.apply({"ZKGPU_COMMIT": "abc123"})
    real = git_commit()  # the configured commit wins; git's own HEAD is kept beside it
    assert real["commit"] == "abc123" and real["dirty"] is False and real.get("git_head") != "abc123"
    monkeypatch.setattr(manifest, "REPO_ROOT", tmp_path)  # a copy without .git (a lent GPU machine)
    assert git_commit() == {"commit": "abc123", "dirty": False}
    manifest.configure(dirty=None)  # commit kept
    assert git_commit() == {"commit": "abc123", "dirty": None}
    manifest.configure(commit=None)
    assert git_commit() == {"commit": None, "dirty": None}
    monkeypatch.setattr(manifest, "REPO_ROOT", manifest.Path(__file__).resolve().parents[1])
    assert git_commit()["commit"] not in (None, "abc123")  # nothing configured: git's HEAD
    with pytest.raises(ValueError, match="ZKGPU_COMMIT .*'a b'"):
        settings.apply({"ZKGPU_COMMIT": "a b"})
    with pytest.raises(TypeError, match="dirty"):
        manifest.configure(commit="abc", dirty="0")


def test_settings_table_names_every_variable_once():
    names = [name for name, _ in settings.table()]
    assert len(names) == len(set(names)) and all(n.startswith("ZKGPU_") for n in names)
    assert {"ZKGPU_COMMIT", "ZKGPU_DEBUG", "ZKGPU_NODE", "ZKGPU_DATA", "ZKGPU_MODE"} <= set(names)
    assert len(names) <= 8, names  # issue 23: kernel variants are keyword arguments, not variables


def test_zkgpu_node_takes_the_node_modules_of_its_prefix(tmp_path, restore_settings):
    from zkgpu.groth16 import circuits

    (tmp_path / "bin").mkdir()
    (tmp_path / "node_modules").mkdir()
    settings.apply({"ZKGPU_NODE": str(tmp_path / "bin" / "node")})
    assert circuits._NODE == {"node": str(tmp_path / "bin" / "node"), "node_modules": tmp_path / "node_modules"}
    settings.apply({"ZKGPU_NODE": "/usr/local/bin/nodejs-without-modules-here"})
    assert circuits._NODE["node_modules"] is None  # the repository's


def test_environment_names_the_packages_and_the_gpu():
    env = environment()
    assert env["zkgpu"] and env["python"] and "numpy" in env and "gpu" in env


def test_run_dirs_are_fresh_and_json_never_overwritten(tmp_path):
    a = new_run_dir("bench-x", base=tmp_path, gpu="NVIDIA H200")
    b = new_run_dir("bench-x", base=tmp_path, gpu="NVIDIA H200")
    assert a != b and a.name.startswith("nvidia-h200-") and b.name.endswith("-1")
    write_json_new(a / "m.json", {"x": 1})
    with pytest.raises(FileExistsError):
        write_json_new(a / "m.json", {"x": 2})
    assert '"x": 1' in (a / "m.json").read_text()
