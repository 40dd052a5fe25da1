"""Two import-linter contract types of this project's own (pyproject.toml
``contract_types``), so that ``make lint`` holds the walls of docs/architecture.md:

- ``allowed_imports``: the modules of ``source_modules`` may import, of the ``target``
  package, only the modules of ``allowed`` (each with its descendants) and of
  ``allowed_exact`` (without them). An allow-list:
  a new engine module is outside kdev's wall until someone adds it here and to the doc.
- ``acyclic_modules``: no import cycle between the modules of ``packages``, counting
  every import: those inside functions (lazy) and those under ``TYPE_CHECKING``, which
  this contract reads from its own graph whatever the session's
  ``exclude_type_checking_imports`` says (D72).

tests/test_walls.py plants a violation of each contract of pyproject.toml in a scratch
copy and shows ``lint-imports`` failing on it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Set
from typing import Any

import grimp
from importlinter import Contract, ContractCheck, fields, output


def _within(module: str, roots: Iterable[str]) -> bool:
    return any(module == root or module.startswith(root + ".") for root in roots)


class AllowedImportsContract(Contract):
    """``source_modules`` import nothing of ``target`` outside ``allowed``."""

    type_name = "allowed_imports"

    source_modules = fields.ListField(subfield=fields.StringField())
    target = fields.StringField()
    allowed = fields.ListField(subfield=fields.StringField())
    # Modules allowed without their descendants (the package's own ``__init__``).
    allowed_exact = fields.ListField(subfield=fields.StringField(), required=False)

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        sources: list[str] = list(self.source_modules)  # type: ignore[call-overload]
        target: str = str(self.target)
        allowed: list[str] = list(self.allowed)  # type: ignore[call-overload]
        exact = set(self.allowed_exact or [])  # type: ignore[call-overload]
        illegal: list[dict[str, Any]] = []
        for importer in sorted(graph.modules):
            if not _within(importer, sources):
                continue
            for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                if imported in exact or not _within(imported, [target]):
                    continue
                if not _within(imported, allowed):
                    details = graph.get_import_details(importer=importer, imported=imported)
                    lines = tuple(detail["line_number"] for detail in details)
                    illegal.append({"importer": importer, "imported": imported, "lines": lines})
        return ContractCheck(kept=not illegal, metadata={"illegal": illegal})

    def render_broken_contract(self, check: ContractCheck) -> None:
        output.print_error(f"Imports of {self.target} outside the allowed surface:", bold=False)
        output.new_line()
        for link in check.metadata["illegal"]:
            lines = ", ".join(map(str, link["lines"]))
            output.print_error(f"- {link['importer']} -> {link['imported']} (l.{lines})")
            output.new_line()


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
        for target in sorted(graph.get(node, ())):
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


def import_graph(packages: Iterable[str]) -> dict[str, set[str]]:
    """Module -> the modules of ``packages`` it imports, every import counted."""
    built = grimp.build_graph(*packages, cache_dir=None, exclude_type_checking_imports=False)
    return {m: set(built.find_modules_directly_imported_by(m)) for m in built.modules}


class AcyclicModulesContract(Contract):
    """No cycle between the modules of ``packages``, lazy and type-only imports counted."""

    type_name = "acyclic_modules"

    packages = fields.ListField(subfield=fields.StringField())

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        packages: list[str] = list(self.packages)  # type: ignore[call-overload]
        cycles = strongly_connected(import_graph(packages))
        return ContractCheck(kept=not cycles, metadata={"cycles": cycles})

    def render_broken_contract(self, check: ContractCheck) -> None:
        output.print_error("Import cycles (every import counted):", bold=False)
        output.new_line()
        for cycle in check.metadata["cycles"]:
            output.print_error("- " + " <-> ".join(cycle))
            output.new_line()
