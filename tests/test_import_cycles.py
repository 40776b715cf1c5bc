"""No import cycles among medasr's modules, read from the source with `ast`.

Every import counts, in a function body or under TYPE_CHECKING too: a cycle hidden in a
function (as the devserver's app.py and docs.py once had) is still two modules that
cannot be read, tested or moved one without the other. `from package import name`
counts as importing the submodule `package.name` when there is one.
"""

from __future__ import annotations

import ast
import graphlib
import itertools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("audit", "config", "service", "devserver", "storage", "tasks", "flows", "web")

Graph = dict[str, dict[str, int]]  # module -> {imported module: first line}


def _module_name(path: Path, *, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _known(name: str, modules: set[str]) -> str | None:
    """`name` if it is one of ours, else its longest prefix that is (None outside)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


def _targets(node: ast.AST, *, module: str, is_package: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:  # relative: resolve against the importing package
        package = module.split(".") if is_package else module.split(".")[:-1]
        anchor = package[: len(package) - node.level + 1]
        base = ".".join([*anchor, base] if base else anchor)
    return [f"{base}.{alias.name}" for alias in node.names]


def import_graph(root: Path, packages: tuple[str, ...]) -> Graph:
    """Which of our modules each of our modules imports, with the line of the first import."""
    paths = {
        _module_name(path, root=root): path
        for top in packages
        if (root / top).is_dir()
        for path in sorted((root / top).rglob("*.py"))
    }
    modules = set(paths)
    graph: Graph = {}
    for module, path in paths.items():
        edges = graph.setdefault(module, {})
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            is_package = path.name == "__init__.py"
            for target in _targets(node, module=module, is_package=is_package):
                found = _known(target, modules)
                if found is not None and found != module:
                    edges.setdefault(found, getattr(node, "lineno", 0))
    return graph


def find_cycle(graph: Graph) -> list[str] | None:
    """One import cycle (its modules, the first repeated at the end), or None."""
    sorter = graphlib.TopologicalSorter({m: set(edges) for m, edges in graph.items()})
    try:
        sorter.prepare()
    except graphlib.CycleError as error:
        cycle: list[str] = list(error.args[1])
        return cycle[::-1]  # graphlib lists it against the import direction
    return None


def _described(cycle: list[str], graph: Graph) -> str:
    steps = [f"{a} imports {b} (line {graph[a][b]})" for a, b in itertools.pairwise(cycle)]
    return "import cycle: " + "; ".join(steps)


def test_medasr_has_no_import_cycle() -> None:
    graph = import_graph(ROOT, PACKAGES)
    assert len(graph) > 50  # the walk found the tree
    cycle = find_cycle(graph)
    if cycle is not None:
        pytest.fail(_described(cycle, graph), pytrace=False)


def _write(root: Path, files: dict[str, str]) -> None:
    for name, source in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")


def test_a_cycle_through_a_function_body_and_a_submodule_is_found(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/app.py": "def make():\n    from pkg import docs\n    return docs\n",
            "pkg/docs.py": "from .app import make\n",
            "pkg/plain.py": "import pkg.app\nimport json\n",
        },
    )
    graph = import_graph(tmp_path, ("pkg",))
    assert graph["pkg.plain"] == {"pkg.app": 1}
    cycle = find_cycle(graph)
    assert cycle is not None
    assert set(cycle) == {"pkg.app", "pkg.docs"}
    described = _described(cycle, graph)
    assert "pkg.app imports pkg.docs (line 2)" in described
    assert "pkg.docs imports pkg.app (line 1)" in described


def test_a_tree_without_cycles_passes(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "from pkg.app import make\n",
            "pkg/app.py": "from pkg.common import helper\n",
            "pkg/docs.py": "from pkg.common import helper\n",
            "pkg/common.py": "import os\n",
        },
    )
    assert find_cycle(import_graph(tmp_path, ("pkg",))) is None
