"""The walls of docs/architecture.md hold in ``make lint``: every import-linter contract of
pyproject.toml fails on a violation planted in a scratch copy of the packages, and the
copy without them keeps every contract (so each failure is the planted one's)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
# contract name -> (planted file, its text): each breaks that contract and no other.
PLANTED = {
    "li never imports kdev or the simulator": (
        "engine/_planted_wall.py",
        "def later() -> None:\n    import wrapper.config  # noqa\n",
    ),
    "kdev uses only li's public surface": (
        "wrapper/_planted_surface.py",
        "from engine.apitypes import Decision  # not on kdev's allow-list\n",
    ),
    "no import cycle inside a package": (
        "wrapper/_planted_cycle_b.py",
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
        "    from wrapper import _planted_cycle_a  # noqa\n",
    ),
    "pure modules import no I/O": (
        "engine/poll/plan.py",
        None,  # appended: a lazy httpx import in a pure module
    ),
}
CYCLE_PARTNER = (
    "wrapper/_planted_cycle_a.py",
    "def f() -> None:\n    from wrapper import _planted_cycle_b  # noqa\n",
)


def _contract_names() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return [c["name"] for c in config["tool"]["importlinter"]["contracts"]]


def _scratch(tmp_path: Path) -> Path:
    copy = tmp_path / "repo"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for package in ("engine", "wrapper", "ghsim"):
        shutil.copytree(ROOT / package, copy / package, ignore=ignore)
    (copy / "tests").mkdir()
    for name in ("__init__.py", "archcontracts.py"):
        shutil.copy(ROOT / "tests" / name, copy / "tests" / name)
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    return copy


def _lint(repo: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def _verdicts(out: str) -> dict[str, str]:
    found = {}
    for line in out.splitlines():
        for word in ("KEPT", "BROKEN"):
            if line.endswith(f" {word}"):
                found[line[: -len(word) - 1]] = word
    return found


def test_every_contract_is_planted_here() -> None:
    assert sorted(PLANTED) == sorted(_contract_names())


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    tmp = tmp_path_factory.mktemp("walls")
    clean = _lint(_scratch(tmp / "clean"))
    dirty_repo = _scratch(tmp / "dirty")
    for path, text in PLANTED.values():
        target = dirty_repo / path
        if text is None:
            target.write_text(
                target.read_text(encoding="utf-8") + "\n\ndef _planted() -> None:\n"
                "    import httpx  # noqa\n",
                encoding="utf-8",
            )
        else:
            target.write_text(text, encoding="utf-8")
    (dirty_repo / CYCLE_PARTNER[0]).write_text(CYCLE_PARTNER[1], encoding="utf-8")
    dirty = _lint(dirty_repo)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert dirty.returncode != 0
    return clean.stdout, dirty.stdout


def test_the_clean_copy_keeps_every_contract(planted: tuple[str, str]) -> None:
    clean, _ = planted
    assert _verdicts(clean) == dict.fromkeys(_contract_names(), "KEPT")


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_each_contract_fails_on_its_planted_violation(planted: tuple[str, str], name: str) -> None:
    _, dirty = planted
    assert _verdicts(dirty)[name] == "BROKEN"
    module = PLANTED[name][0].removesuffix(".py").replace("/", ".")
    assert module in _section(dirty, name)


def _section(out: str, name: str) -> str:
    """The broken-contract report of ``name``: from its underlined heading to the next."""
    broken = out.split("Broken contracts", 1)[1]
    start = broken.index(f"\n{name}\n{'-' * len(name)}\n")
    headings = [broken.find(f"\n{other}\n{'-' * len(other)}\n", start + 1) for other in PLANTED]
    ends = [index for index in headings if index > start]
    return broken[start : min(ends, default=len(broken))]


def test_the_doc_draws_the_wall_the_contract_holds() -> None:
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    drawn = doc.split("wrapper  ──may import──▶", 1)[1].split("engine   ──never", 1)[0]
    names = set(re.findall(r"\bengine(?:\.[a-z_]+)*", drawn))
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (contract,) = [
        c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "allowed_imports"
    ]
    assert names == {*contract["allowed"], *contract.get("allowed_exact", [])}
