"""The import graph of ``zkgpu/`` against ARCHITECTURE.md: layers, no cycles, imports at module level.

Every import of every module under ``zkgpu/`` is read with :mod:`ast` -- at module level, inside
functions and under ``if TYPE_CHECKING:``; ``import x``, ``from . import y``, ``from .x import y``,
relative and absolute -- into one graph of zkgpu modules (an edge per importing module and imported
module; a package's ``__init__`` is the module of the package's name, and importing ``a.b`` is an edge
to ``a.b`` only, not to ``a``). The one layer table is ARCHITECTURE.md's module table
(``| `module` | layer | concern |``); this test reads it and fails on:

- ``cycle``: a strongly connected group of modules, with one cycle through it spelled out;
- ``layer``: an edge that goes up a stack, between the producer (P) and analysis (A) stacks, into the
  app layer from below, or to ``zkgpu.app.cli`` from anywhere; and a module placed below its own package
  (importing ``a.b.c`` runs ``a/b/__init__.py`` first);
- ``function-level``: an import inside a function (only ``zkgpu.core.optional`` and ``zkgpu.core.cuda`` may
  import optional packages there: that is the optional-import pattern; app-layer modules may import zkgpu
  modules there, so that a command starts with only what it runs: those edges still count in the graph and
  its layer rules);
- ``optional``: a library module (core .. A2) importing a package that ``[project] dependencies``
  does not install, other than through ``zkgpu.core.optional`` / ``_cuda.cupy()`` (a ``TYPE_CHECKING``
  import, for annotations, is allowed);
- ``size``: a module over :data:`MAX_LINES` lines;
- ``environ``: ``os.environ`` / ``os.getenv`` / ``os.putenv`` outside the app layer;
- ``unlisted`` / ``unwritten``: a module the table does not place / a table row with no module.

A violation whose key is in :data:`KNOWN_VIOLATIONS` is tolerated; a key there that no longer occurs
fails too, so the set only shrinks. The checker itself is tested on small synthetic trees below.
"""

from __future__ import annotations

import ast
import re
import sys
import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "zkgpu"
TOP = "zkgpu.app.cli"  # the command-line entry point: imports the command groups, imported by nothing
MAX_LINES = 700
# the two modules that import optional heavy packages (the optional-import pattern of ARCHITECTURE.md)
OPTIONAL_GATES = frozenset({"zkgpu.core.optional", "zkgpu.core.cuda"})

# Stacks and their order. core is under both stacks; P (producers: what runs on the GPU and writes
# recordings) and A (analysis: what reads recordings) are siblings; app (commands, report) is on top.
LAYERS: dict[str, tuple[str, int]] = {
    "core": ("core", 0),
    **{f"P{i}": ("P", i) for i in range(1, 6)},
    **{f"A{i}": ("A", i) for i in range(1, 3)},
    "app": ("app", 9),
}

# Today's violations, each with the issue-11 helper whose branch removes it. The lead deletes each
# entry as the branches merge; the test fails on an entry that no longer occurs, so none go stale.
KNOWN_VIOLATIONS: dict[str, str] = {}


# --------------------------------------------------------------------------------------------------
# reading the package


@dataclass(frozen=True)
class Import:
    """One import statement's edge: ``src`` imports ``dst`` (a module name, or an external package's
    top-level name) at ``line``; ``where`` is ``module``, ``function`` or ``type-checking``."""

    src: str
    dst: str
    line: int
    where: str
    internal: bool


@dataclass
class Module:
    name: str
    path: Path
    lines: int
    imports: list[Import] = field(default_factory=list)
    environ_lines: list[int] = field(default_factory=list)


def module_names(root: Path, package: str) -> dict[str, Path]:
    """``{dotted module name: file}`` for every ``.py`` file of ``root/package`` (``__init__`` named
    after its package)."""
    out = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


class _Reader(ast.NodeVisitor):
    def __init__(self, mod: Module, is_package: bool, known: Mapping[str, Path], package: str) -> None:
        self.mod, self.known, self.package = mod, known, package
        # the package a relative import of level 1 starts from
        self.base = mod.name if is_package else mod.name.rpartition(".")[0]
        self.where = ["module"]
        self.os_names = {"os"}  # what `os` is bound to (`import os as _os`)

    def _scoped(self, node: ast.AST, where: str) -> None:
        self.where.append(where)
        self.generic_visit(node)
        self.where.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._scoped(node, "function")

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._scoped(node, "function")

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._scoped(node, "function")

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test) and self.where[-1] == "module":
            self.where.append("type-checking")
            for stmt in node.body:
                self.visit(stmt)
            self.where.pop()
            for stmt in node.orelse:
                self.visit(stmt)
        else:
            self.generic_visit(node)

    def _add(self, target: str, line: int) -> None:
        internal = target == self.package or target.startswith(self.package + ".")
        if internal:
            while target not in self.known and "." in target:  # no such module (yet): its package
                target = target.rpartition(".")[0]
        else:
            target = target.partition(".")[0]
        self.mod.imports.append(Import(self.mod.name, target, line, self.where[-1], internal))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name, node.lineno)
            if alias.name == "os":
                self.os_names.add(alias.asname or "os")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base = self.base
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            source = f"{base}.{node.module}" if node.module else base
        else:
            source = node.module or ""
        if source == "__future__":
            return
        for alias in node.names:
            sub = f"{source}.{alias.name}"
            self._add(sub if sub in self.known else source, node.lineno)
            if source in ("os",) and alias.name in ("environ", "getenv", "putenv", "unsetenv"):
                self.mod.environ_lines.append(node.lineno)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if (
            isinstance(node.value, ast.Name)
            and node.value.id in self.os_names
            and node.attr in ("environ", "getenv", "putenv", "unsetenv")
        ):
            self.mod.environ_lines.append(node.lineno)
        self.generic_visit(node)


def read_package(root: Path, package: str = PACKAGE) -> dict[str, Module]:
    """Every module of ``root/package`` with its imports (see :class:`Import`)."""
    known = module_names(root, package)
    mods = {}
    for name, path in known.items():
        text = path.read_text()
        mod = Module(name, path, len(text.splitlines()))
        _Reader(mod, path.name == "__init__.py", known, package).visit(ast.parse(text, str(path)))
        mods[name] = mod
    return mods


# --------------------------------------------------------------------------------------------------
# the layer table (ARCHITECTURE.md)

_ROW = re.compile(r"^\|\s*`([A-Za-z0-9_./]+)`\s*\|\s*([A-Za-z0-9]+)\s*\|\s*(.*?)\s*\|\s*$")


def read_layer_table(text: str, package: str = PACKAGE) -> dict[str, str]:
    """``{dotted prefix: layer}`` from the markdown table headed ``| folder | layer | concern |``: a row
    names a folder of the package (``gpu/msm/``, relative to the package), whose every module has that
    layer unless a deeper row names its folder, or the package itself (its ``__init__`` only)."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if re.match(r"^\|\s*folder\s*\|\s*layer\s*\|\s*concern\s*\|", ln))
    table: dict[str, str] = {}
    for ln in lines[start + 2 :]:
        if not ln.startswith("|"):
            break
        m = _ROW.match(ln)
        assert m, f"ARCHITECTURE.md folder table: cannot read the row {ln!r} (| `folder/` | layer | concern |)"
        name, layer, concern = m.groups()
        assert name == package or name.endswith("/"), f"ARCHITECTURE.md: {name!r} is neither the package nor a folder/"
        full = package if name == package else f"{package}.{name.rstrip('/').replace('/', '.')}"
        assert layer in LAYERS, f"ARCHITECTURE.md: {name} has layer {layer!r}, not one of {sorted(LAYERS)}"
        assert concern, f"ARCHITECTURE.md: {name} has no concern"
        assert full not in table, f"ARCHITECTURE.md: {name} is listed twice"
        table[full] = layer
    return table


def module_layers(modules: Iterable[str], folders: Mapping[str, str], package: str = PACKAGE) -> dict[str, str]:
    """``{module: layer}``: each module takes the layer of the deepest folder row it sits in (the
    package's own row places its ``__init__`` only); a module in no row's folder is left out (unlisted)."""
    out = {}
    for name in modules:
        if name == package:
            if package in folders:
                out[name] = folders[package]
            continue
        parts = name.split(".")
        for i in range(len(parts), 1, -1):
            pre = ".".join(parts[:i])
            if pre in folders and pre != package:
                out[name] = folders[pre]
                break
    return out


# --------------------------------------------------------------------------------------------------
# the rules


def edge_rule(src_layer: str, dst_layer: str, dst: str, top: str = TOP) -> str | None:
    """Why an import from a module of ``src_layer`` of the module ``dst`` (of ``dst_layer``) is not
    allowed, or ``None`` when it is."""
    (s_stack, s_rank), (d_stack, d_rank) = LAYERS[src_layer], LAYERS[dst_layer]
    if dst == top:
        return f"nothing imports {top}"
    if d_stack == "app" and s_stack != "app":
        return "imports the app layer"
    if s_stack == "P" and d_stack == "A":
        return "producer -> analysis"
    if s_stack == "A" and d_stack == "P":
        return "analysis -> producer"
    if s_stack == "core" and d_stack != "core":
        return "core imports upward"
    if s_stack == d_stack and d_rank > s_rank:
        return "upward"
    return None


def required_packages(pyproject: Path) -> set[str]:
    """Top-level import names of ``[project] dependencies`` (what every install has), and the stdlib."""
    deps = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    dists = {re.split(r"[<>=!~ ;\[]", d, maxsplit=1)[0].lower().replace("_", "-") for d in deps}
    names = set(sys.stdlib_module_names)
    for top, owners in metadata.packages_distributions().items():
        if any(o.lower().replace("_", "-") in dists for o in owners):
            names.add(top)
    names |= {d.replace("-", "_") for d in dists}
    return names


def _sccs(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Strongly connected components (Tarjan), iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    out.append(sorted(comp))
    return out


def _a_cycle(graph: Mapping[str, set[str]], comp: list[str]) -> list[str]:
    """A shortest cycle through ``comp[0]`` inside the component (breadth-first)."""
    inside, start = set(comp), comp[0]
    prev: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & inside):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(prev[path[-1]])
                    return [*reversed(path), start]
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"no cycle through {start}")  # pragma: no cover - comp is strongly connected


def violations(
    mods: Mapping[str, Module],
    table: Mapping[str, str],
    required: Iterable[str],
    top: str = TOP,
    gates: Iterable[str] = OPTIONAL_GATES,
    max_lines: int = MAX_LINES,
) -> dict[str, str]:
    """``{key: message}`` for every rule broken (the keys are what :data:`KNOWN_VIOLATIONS` lists)."""
    required, gates = set(required), set(gates)
    out: dict[str, str] = {}
    for name in sorted(set(table) - set(mods)):
        out[f"unwritten: {name}"] = f"{name} is in ARCHITECTURE.md's module table but there is no such module"
    for name in sorted(set(mods) - set(table)):
        out[f"unlisted: {name}"] = f"{name} is not in ARCHITECTURE.md's folder table: put it in a folder that has a row"
    graph: dict[str, set[str]] = {name: set() for name in mods}
    for mod in mods.values():
        layer = table.get(mod.name)
        if mod.lines > max_lines:
            out[f"size: {mod.name}"] = f"{mod.name} has {mod.lines} lines (at most {max_lines})"
        if mod.environ_lines and layer != "app":
            out[f"environ: {mod.name}"] = (
                f"{mod.name} ({layer or 'unlisted'}) reads the environment at line(s) "
                f"{', '.join(map(str, sorted(set(mod.environ_lines))))}: only the app layer does (settings)"
            )
        parent = mod.name.rpartition(".")[0]
        if layer and parent in table:  # importing a.b.c runs a.b's __init__ first
            why = edge_rule(layer, table[parent], parent, top)
            if why:
                out[f"layer: {mod.name} -> {parent}"] = (
                    f"{mod.name} ({layer}) is inside the package {parent} ({table[parent]}), whose __init__ "
                    f"runs when it is imported: {why}"
                )
        for imp in mod.imports:
            if imp.internal:
                if imp.dst == mod.name or imp.dst not in mods:
                    continue
                graph[mod.name].add(imp.dst)
                if imp.where == "function" and layer != "app":
                    out.setdefault(
                        f"function-level: {mod.name} -> {imp.dst}",
                        f"{mod.name}:{imp.line} imports {imp.dst} inside a function: imports go at module level",
                    )
                dst_layer = table.get(imp.dst)
                if layer and dst_layer:
                    why = edge_rule(layer, dst_layer, imp.dst, top)
                    if why:
                        out.setdefault(
                            f"layer: {mod.name} -> {imp.dst}",
                            f"{mod.name} ({layer}) imports {imp.dst} ({dst_layer}) at line {imp.line}: {why}",
                        )
                continue
            optional = imp.dst not in required
            if imp.where == "function" and not (optional and mod.name in gates):
                out.setdefault(
                    f"function-level: {mod.name} -> {imp.dst}",
                    f"{mod.name}:{imp.line} imports {imp.dst} inside a function: "
                    + ("optional packages go through zkgpu.core.optional / _cuda.cupy()" if optional else "imports go at module level"),
                )
            elif optional and imp.where == "module" and mod.name not in gates and layer != "app":
                out.setdefault(
                    f"optional: {mod.name} -> {imp.dst}",
                    f"{mod.name}:{imp.line} ({layer or 'unlisted'}) imports {imp.dst}, which [project] dependencies do not "
                    "install: library modules reach optional packages through zkgpu.core.optional / _cuda.cupy()",
                )
    for comp in _sccs(graph):
        if len(comp) > 1:
            out[f"cycle: {' '.join(comp)}"] = f"import cycle among {', '.join(comp)}: {' -> '.join(_a_cycle(graph, comp))}"
    return out


# --------------------------------------------------------------------------------------------------
# the package


@pytest.fixture(scope="module")
def found() -> dict[str, str]:
    mods = read_package(ROOT)
    folders = read_layer_table((ROOT / "ARCHITECTURE.md").read_text())
    found = violations(mods, module_layers(mods, folders), required_packages(ROOT / "pyproject.toml"))
    for prefix in folders:
        if not any(m == prefix or m.startswith(prefix + ".") for m in mods):
            found[f"unwritten: {prefix}"] = f"{prefix} is in ARCHITECTURE.md's folder table but holds no module"
    return found


def test_import_graph_follows_architecture(found):
    new = {k: v for k, v in found.items() if k not in KNOWN_VIOLATIONS}
    assert not new, "the import graph breaks ARCHITECTURE.md's rules:\n" + "\n".join(
        f"  {v}" for _, v in sorted(new.items())
    )


def test_known_violations_still_occur(found):
    gone = sorted(set(KNOWN_VIOLATIONS) - set(found))
    assert not gone, "fixed; remove from KNOWN_VIOLATIONS in tests/test_architecture.py:\n" + "\n".join(
        f"  {k!r}  ({KNOWN_VIOLATIONS[k]})" for k in gone
    )


def test_module_table_rows_are_modules():
    """Every row names a folder of the package, every module sits in a row's folder (``unwritten``/
    ``unlisted`` above), and the doc's layers table names the same layers as :data:`LAYERS`."""
    text = (ROOT / "ARCHITECTURE.md").read_text()
    table = read_layer_table(text)
    assert set(table.values()) <= set(LAYERS)
    for layer in LAYERS:
        assert re.search(rf"^\|\s*{layer}\b", text, re.M), f"ARCHITECTURE.md's layers table has no row {layer}"


def test_configuration_table_is_the_settings_table():
    """ARCHITECTURE.md's configuration table names the variables ``zkgpu.app.settings`` reads, no more."""
    text = (ROOT / "ARCHITECTURE.md").read_text()
    section = text.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    documented = {v for row in re.findall(r"^\|([^|]*)\|", section, re.M) for v in re.findall(r"ZKGPU_\w+", row)}
    assert documented, "ARCHITECTURE.md's Configuration section has no table of ZKGPU_* variables"
    if not (ROOT / "zkgpu" / "app" / "settings.py").exists():
        assert "unwritten: zkgpu.app.settings" in KNOWN_VIOLATIONS
        pytest.skip("zkgpu/app/settings.py is not written yet (KNOWN_VIOLATIONS)")
    from zkgpu.app import settings

    read = {name for name, _ in settings.table()}
    assert read == documented, f"only in zkgpu.app.settings: {sorted(read - documented)}; only in ARCHITECTURE.md: {sorted(documented - read)}"


# --------------------------------------------------------------------------------------------------
# the checker on synthetic trees


def _tree(tmp_path: Path, files: Mapping[str, str]) -> dict[str, Module]:
    for rel, body in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(body))
    return read_package(tmp_path, "pkg")


REQUIRED = {"os", "typing", "numpy"}


def _check(tmp_path, files, table, **kw):
    table = {("pkg" if k == "" else f"pkg.{k}"): v for k, v in table.items()}
    return violations(_tree(tmp_path, files), table, REQUIRED, top="pkg.cli", gates={"pkg.optional"}, **kw)


def test_reads_every_import_form(tmp_path):
    mods = _tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "",
            "pkg/b.py": "",
            "pkg/sub/__init__.py": "from . import c\nfrom .c import X\nfrom .. import a\n",
            "pkg/sub/c.py": "X = 1\n",
            "pkg/m.py": """
                import os, pkg.a
                from . import b
                from .sub import c
                from .sub.c import X
                from pkg import sub
                from typing import TYPE_CHECKING
                if TYPE_CHECKING:
                    import cupy
                def f():
                    import numpy as np
                    from .a import thing
                class K:
                    from . import a
            """,
        },
    )
    got = {(i.dst, i.where) for i in mods["pkg.m"].imports}
    assert got == {
        ("os", "module"),
        ("pkg.a", "module"),
        ("pkg.b", "module"),
        ("pkg.sub.c", "module"),
        ("pkg.sub", "module"),
        ("typing", "module"),
        ("cupy", "type-checking"),
        ("numpy", "function"),
        ("pkg.a", "function"),
    }
    assert {i.dst for i in mods["pkg.sub"].imports} == {"pkg.sub.c", "pkg.a"}


def test_catches_a_cycle(tmp_path):
    files = {
        "pkg/__init__.py": "",
        "pkg/a.py": "from . import b\n",
        "pkg/b.py": "from .c import f\n",
        "pkg/c.py": "def f():\n    from . import a\n",
    }
    found = _check(tmp_path, files, {"": "core", "a": "P2", "b": "P2", "c": "P2"})
    assert found["cycle: pkg.a pkg.b pkg.c"].endswith("pkg.a -> pkg.b -> pkg.c -> pkg.a")
    assert "function-level: pkg.c -> pkg.a" in found


@pytest.mark.parametrize(
    ("src", "dst", "why"),
    [
        ("P2", "P4", "upward"),
        ("P5", "A1", "producer -> analysis"),
        ("A2", "P1", "analysis -> producer"),
        ("A1", "app", "imports the app layer"),
        ("core", "P1", "core imports upward"),
        ("app", "app:cli", "nothing imports pkg.cli"),
    ],
)
def test_catches_an_edge_against_the_layers(tmp_path, src, dst, why):
    dst_layer, _, dst_name = dst.partition(":")
    dst_name = dst_name or "lo"
    files = {"pkg/__init__.py": "", "pkg/hi.py": f"from . import {dst_name}\n", f"pkg/{dst_name}.py": ""}
    found = _check(tmp_path, files, {"": "core", "hi": src, dst_name: dst_layer})
    assert found == {
        f"layer: pkg.hi -> pkg.{dst_name}": f"pkg.hi ({src}) imports pkg.{dst_name} ({dst_layer}) at line 1: {why}"
    }


def test_catches_a_module_below_its_package(tmp_path):
    """Importing ``pkg.sub.m`` runs ``pkg/sub/__init__.py``: a module sits at or above its package."""
    files = {"pkg/__init__.py": "", "pkg/sub/__init__.py": "", "pkg/sub/m.py": ""}
    found = _check(tmp_path, files, {"": "core", "sub": "P5", "sub.m": "A2"})
    assert list(found) == ["layer: pkg.sub.m -> pkg.sub"]
    assert found["layer: pkg.sub.m -> pkg.sub"].endswith("whose __init__ runs when it is imported: analysis -> producer")
    assert _check(tmp_path, files, {"": "core", "sub": "core", "sub.m": "A2"}) == {}


@pytest.mark.parametrize(("src", "dst"), [("P4", "P2"), ("P3", "P3"), ("A2", "core"), ("app", "P5"), ("app", "A2")])
def test_allows_down_and_sideways(tmp_path, src, dst):
    files = {"pkg/__init__.py": "", "pkg/hi.py": "from .lo import x\n", "pkg/lo.py": "x = 1\n"}
    assert _check(tmp_path, files, {"": "core", "hi": src, "lo": dst}) == {}


def test_catches_function_level_and_optional_imports(tmp_path):
    files = {
        "pkg/__init__.py": "",
        "pkg/optional.py": "def cupy():\n    import cupy\n    return cupy\n",
        "pkg/lib.py": "import cupy\nimport numpy\ndef f():\n    import os\n    from . import optional\n",
        "pkg/app.py": "import cupy\n",
    }
    found = _check(tmp_path, files, {"": "core", "optional": "core", "lib": "P2", "app": "app"})
    assert set(found) == {
        "optional: pkg.lib -> cupy",
        "function-level: pkg.lib -> os",
        "function-level: pkg.lib -> pkg.optional",
    }


def test_catches_size_environ_and_table_gaps(tmp_path):
    files = {
        "pkg/__init__.py": "",
        "pkg/big.py": "x = 1\n" * 11,
        "pkg/env.py": "import os\nimport os as _os\nA = os.environ.get('A')\nB = _os.getenv('B')\n",
        "pkg/envapp.py": "import os\nA = os.environ['A']\n",
        "pkg/alias.py": "from os import getenv\n",
        "pkg/new.py": "",
    }
    table = {"": "core", "big": "P1", "env": "A1", "envapp": "app", "alias": "core", "gone": "P1"}
    found = _check(tmp_path, files, table, max_lines=10)
    assert set(found) == {"size: pkg.big", "environ: pkg.env", "environ: pkg.alias", "unlisted: pkg.new", "unwritten: pkg.gone"}
    assert "line(s) 3, 4" in found["environ: pkg.env"]


def test_reads_the_layer_table():
    text = """
        intro
        | folder | layer | concern |
        |---|---|---|
        | `zkgpu` | core | the package: version |
        | `pipeline/` | P4 | the pipeline |
        | `gpu/msm/` | P2 | the MSM |

        after
    """
    folders = read_layer_table(textwrap.dedent(text))
    assert folders == {"zkgpu": "core", "zkgpu.pipeline": "P4", "zkgpu.gpu.msm": "P2"}
    mods = ["zkgpu", "zkgpu.pipeline", "zkgpu.pipeline.config", "zkgpu.gpu.msm.window", "zkgpu.gpu", "zkgpu.loose"]
    assert module_layers(mods, folders) == {
        "zkgpu": "core", "zkgpu.pipeline": "P4", "zkgpu.pipeline.config": "P4", "zkgpu.gpu.msm.window": "P2"}
    with pytest.raises(AssertionError, match="not one of"):
        read_layer_table("| folder | layer | concern |\n|-|-|-|\n| `x/` | P9 | y |\n")
    with pytest.raises(AssertionError, match="neither the package nor a folder"):
        read_layer_table("| folder | layer | concern |\n|-|-|-|\n| `x` | P1 | y |\n")
