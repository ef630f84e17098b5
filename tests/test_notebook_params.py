"""Every notebook's parameters cell is one that papermill reads: its parameter inference
(``papermill.inspect_notebook``, what ``papermill --help-notebook`` prints) finds every name the
cell assigns, with its type, default and help; ``-p`` overrides are then not reported as unknown."""

from __future__ import annotations

import ast
import logging
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
papermill = pytest.importorskip("papermill")

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
TYPES = {"MODE": "Optional[str]", "N": "Optional[int]", "PARTITIONS": "Optional[int]", "HOST_LOAD": "Optional[int]"}


def _parameters_cell(path: Path):
    nb = nbformat.read(path, as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "code" and "parameters" in c.metadata.get("tags", [])]
    assert len(cells) == 1, f"{path.name}: one cell tagged 'parameters'"
    return cells[0]


def _assigned(source: str) -> dict[str, object]:
    """Names the cell assigns and their default values (evaluated literals), from Python's own parser."""
    out = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = ast.literal_eval(node.value)
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                out[t.id] = ast.literal_eval(node.value)
    return out


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_papermill_infers_every_parameter_with_its_type(path: Path):
    cell = _parameters_cell(path)
    assigned = _assigned(cell.source)
    assert set(TYPES) <= set(assigned), f"{path.name}: the suite's parameters are {sorted(TYPES)}"
    inferred = papermill.inspect_notebook(str(path))
    assert set(inferred) == set(assigned), f"{path.name}: papermill reads {sorted(inferred)} of {sorted(assigned)}"
    for name, p in inferred.items():
        assert p["inferred_type_name"] not in ("None", ""), f"{path.name}: {name} has no type for papermill"
        if name in TYPES:
            assert p["inferred_type_name"] == TYPES[name]
        assert ast.literal_eval(p["default"]) == assigned[name]
        assert p["help"], f"{path.name}: {name} needs a help comment on its line"


@pytest.mark.slow
def test_papermill_override_is_not_unknown(tmp_path: Path, caplog, monkeypatch):
    """papermill injects a -p value after the parameters cell without an 'unknown parameter' warning."""
    monkeypatch.setenv("ZKGPU_MODE", "replay")
    monkeypatch.delenv("ZKGPU_NB_OUT", raising=False)
    out = tmp_path / "out.ipynb"
    with caplog.at_level(logging.WARNING, logger="papermill"):
        papermill.execute_notebook(str(ROOT / "notebooks" / "00_index.ipynb"), str(out),
                                   parameters={"MODE": "replay"}, kernel_name="python3",
                                   cwd=str(ROOT / "notebooks"), progress_bar=False)
    assert not [r for r in caplog.records if "unknown parameter" in r.getMessage().lower()]
    nb = nbformat.read(out, as_version=4)
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1 and 'MODE = "replay"' in injected[0].source
    assert "mode this session: replay" in "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
