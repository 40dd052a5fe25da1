"""The room sizes of docs/architecture.md: no module over 500 lines, no function over 80.

The import walls are import-linter contracts in pyproject.toml, checked by ``make lint``
(``lint-imports``); this file checks what import-linter cannot: size.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("engine", "wrapper", "ghsim")
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


def _sources() -> list[Path]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.relative_to(ROOT).parts:
                continue  # alembic revisions are generated, append-only history
            found.append(path)
    return found


def test_sources_are_found() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in _sources()}
    assert "engine/errors.py" in names and "wrapper/errors.py" in names


def test_no_module_over_500_lines() -> None:
    big = []
    for path in _sources():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_MODULE_LINES:
            big.append(f"{path.relative_to(ROOT)}: {lines} lines")
    assert not big, "modules over 500 lines:\n" + "\n".join(big)


def _long_functions(path: Path, root: Path = ROOT) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    long = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            assert node.end_lineno is not None
            span = node.end_lineno - node.lineno + 1
            if span > MAX_FUNCTION_LINES:
                long.append(f"{path.relative_to(root)}:{node.lineno} {node.name}: {span} lines")
    return long


def test_no_function_over_80_lines() -> None:
    long = [item for path in _sources() for item in _long_functions(path)]
    assert not long, "functions over 80 lines:\n" + "\n".join(long)


def test_the_size_check_sees_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    sample = tmp_path / "sample.py"
    sample.write_text(f"def too_long() -> None:\n{body}\n\ndef short() -> None:\n    pass\n")
    assert _long_functions(sample, tmp_path) == ["sample.py:1 too_long: 81 lines"]


def _module_paths_named_in_docs() -> dict[str, list[str]]:
    pattern = re.compile(r"(?<![\w/.-])((?:engine|wrapper|ghsim)/[\w/]+\.py)\b")
    named: dict[str, list[str]] = {}
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            for path in pattern.findall(line):
                named.setdefault(path, []).append(f"{doc.relative_to(ROOT)}:{number}")
    return named


def test_every_module_path_in_the_docs_exists() -> None:
    named = _module_paths_named_in_docs()
    assert named, "the docs name no module path: the pattern is broken"
    missing = [
        f"{path} ({', '.join(where)})"
        for path, where in named.items()
        if not (ROOT / path).is_file()
    ]
    assert not missing, "docs name modules that do not exist:\n" + "\n".join(missing)
