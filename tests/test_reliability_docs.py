"""RELIABILITY.md names the tests that hold its rows: every name it gives must be a test function of the file its
row points at (a letter of its "Test files:" line, or ``file.py::name``), so a renamed test cannot leave a row
pointing at nothing."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NAME = re.compile(r"`(?:(test_\w+\.py)::)?(test_\w+?)(\*?)(?:\[[^`]*\])?`")


def _letters(text: str) -> dict[str, str]:
    line = text.split("Test files:", 1)[1].split("\n\n", 1)[0]
    return {letter: f for f, letter in re.findall(r"`tests/(test_\w+\.py)` \((\w)\)", line)}


def test_every_test_named_in_reliability_md_exists():
    text = (ROOT / "RELIABILITY.md").read_text(encoding="utf-8")
    letters = _letters(text)
    assert {"L", "C", "B", "F", "S"} <= set(letters), letters
    sources = {p.name: p.read_text(encoding="utf-8") for p in (ROOT / "tests").glob("test_*.py")}
    missing, named = [], 0
    for row in (ln for ln in text.splitlines() if re.match(r"\| [FG]?\d+ \|", ln)):
        for part in row.rstrip(" |").rsplit("|", 1)[1].split(";"):  # the Test cell; a letter scopes its part
            scope = re.match(r"\s*([A-Z]) ", part)
            for file, name, star in NAME.findall(part):
                where = file or (letters[scope.group(1)] if scope else None)
                pattern = re.compile("^def " + re.escape(name) + ("" if star else r"\b"), re.M)
                found = pattern.search(sources.get(where, "")) if where else any(pattern.search(s) for s in sources.values())
                named += 1
                if not found:
                    missing.append(f"{row.split('|')[1].strip()}: {where or 'tests/'}::{name}")
    assert named > 100 and not missing, missing
