"""No import cycle between the modules of one package, counting every import.

import-linter's contracts (pyproject.toml) hold the walls *between* the programs; this
file holds the layering *inside* each: grimp's graph counts every import statement,
those inside functions (the lazy imports of D61) and under ``TYPE_CHECKING`` included,
so a late import hides a cycle from the interpreter but not from this test
(docs/architecture.md, "Walls").
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Set
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("engine", "wrapper", "ghsim")


def strongly_connected(graph: Mapping[str, Set[str]]) -> list[list[str]]:
    """Every strongly connected component of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in graph:
                continue
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph) + 100))
    try:
        for node in sorted(graph):
            if node not in index:
                visit(node)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(found)


def _graph() -> dict[str, set[str]]:
    sys.path.insert(0, str(ROOT))
    try:
        built = grimp.build_graph(*PACKAGES, cache_dir=None)
    finally:
        sys.path.remove(str(ROOT))
    return {m: set(built.find_modules_directly_imported_by(m)) for m in built.modules}


def test_no_import_cycle_in_any_package() -> None:
    cycles = strongly_connected(_graph())
    assert not cycles, "import cycles (every import counted):\n" + "\n".join(
        " <-> ".join(cycle) for cycle in cycles
    )


def test_the_cycle_check_sees_a_lazy_and_a_type_only_cycle() -> None:
    graph = {"p.a": {"p.b"}, "p.b": {"p.c"}, "p.c": {"p.a"}, "p.d": {"p.a"}, "p.e": set()}
    assert strongly_connected(graph) == [["p.a", "p.b", "p.c"]]


def test_grimp_counts_function_level_and_type_checking_imports(tmp_path: Path) -> None:
    package = tmp_path / "cyc"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "one.py").write_text("def f():\n    from cyc import two\n")
    (package / "two.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from cyc import one\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        built = grimp.build_graph("cyc", cache_dir=None)
    finally:
        sys.path.remove(str(tmp_path))
    graph = {m: set(built.find_modules_directly_imported_by(m)) for m in built.modules}
    assert strongly_connected(graph) == [["cyc.one", "cyc.two"]]
