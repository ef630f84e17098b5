"""environment.yml lists the same packages as pyproject's core + notebooks + test extras; the
README's test command and ``make lint`` are what .ci/run calls; the pre-commit hooks run make lint's
tools; ``zkgpu info`` runs."""

from __future__ import annotations

import re
from pathlib import Path

import tomllib
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent


def _name(req: str) -> str:
    return re.split(r"[<>=!~ \[]", req.strip(), maxsplit=1)[0].lower().replace("_", "-")


def test_environment_yml_matches_pyproject():
    pp = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    want = {_name(r) for r in pp["dependencies"]}
    for extra in ("notebooks", "test"):
        want |= {_name(r) for r in pp["optional-dependencies"][extra]}
    have = set()
    text = (ROOT / "environment.yml").read_text()
    for line in text.split("dependencies:", 1)[1].splitlines():
        m = re.match(r"\s+-\s+([A-Za-z0-9_.\-]+)", line)
        if m and m.group(1) not in ("pip", "python", "-e"):
            have.add(_name(m.group(1)))
    assert want == have, f"only in pyproject: {want - have}; only in environment.yml: {have - want}"


def test_ci_runs_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in readme and "make report" in readme
    assert re.search(r"^make test$", ci, re.M) and re.search(r"^make test-slow$", ci, re.M)  # together: every test once
    # and the linters, which the README says CI runs
    assert re.search(r"^make lint\b", ci, re.M) and "`make lint`" in readme


def test_pre_commit_hooks_run_make_lints_tools():
    """The pre-commit hooks are the linters `make lint` runs, from the Makefile's .venv (offline)."""
    hooks = (ROOT / ".pre-commit-config.yaml").read_text()
    make = (ROOT / "Makefile").read_text()
    assert "repo: local" in hooks
    for tool in ("ruff check", "mypy"):
        assert f".venv/bin/{tool}" in hooks and f"$(BIN)/{tool}" in make


def test_info_command_runs():
    from zkgpu.app.cli import main

    res = CliRunner().invoke(main, ["info", "--json"])
    assert res.exit_code == 0, res.output
    assert '"gpu"' in res.output and '"zkgpu"' in res.output
