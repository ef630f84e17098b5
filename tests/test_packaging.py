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


def test_readme_stays_short_and_its_two_commands_section_says_what_they_do():
    """A new user's remarks (issue 21): the README did not say that make test apt-installs node, and GPU and conda lines sat in
    the two-commands section. It stays within 1,500 words; the section names both commands, says the Makefile's apt-get step
    (which the Makefile must still have) and leaves the GPU and conda set-ups to a section of their own."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    make = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert len(readme.split()) <= 1500, f"README.md has {len(readme.split())} words (at most 1,500)"
    two = readme.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    assert re.search(r"^make report\b", two, re.M) and re.search(r"^make test\b", two, re.M)
    assert "apt-get install nodejs npm" in two and re.search(r"apt-get install .*nodejs npm", make)
    assert re.search(r"^report:", make, re.M) and re.search(r"^test:", make, re.M)
    assert not re.search(r"gpu-cuda|conda|gpu-run", two), "GPU and conda set-ups belong outside the two commands"
    assert "gpu-cuda13" in readme and "conda env create" in readme
