"""No import cycle between the modules of one package, counting every import.

``make lint`` checks this as the ``acyclic_modules`` contract (tests/archcontracts.py);
this file checks the same graph under pytest, and that the graph sees what it must:
every import statement, those inside functions (the lazy imports of D61) and under
``TYPE_CHECKING`` included, so a late import hides a cycle from the interpreter but not
from this test (docs/architecture.md, "Walls").
"""

from __future__ import annotations

import sys
from pathlib import Path

import grimp

from tests.archcontracts import import_graph, strongly_connected

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("engine", "wrapper", "ghsim")


def test_no_import_cycle_in_any_package() -> None:
    cycles = strongly_connected(import_graph(PACKAGES))
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
