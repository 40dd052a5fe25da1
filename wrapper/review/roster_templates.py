"""Starter rosters: ``kdev reviewers detect-language`` and ``install-template LANG``.

:func:`count_languages` (pure) counts a checkout's files by language from their
extensions; :func:`detect_languages` walks the checkout, skipping ``.git`` and dependency
and build directories (``node_modules``, ``.venv``, ``target``, ...). A starter roster is a
``wrapper/templates/rosters/<LANG>.md`` file: two focused reviewers, a ``# Guidelines``
section and a configuration pinned to the built-in reviewers' version. It is checked
with the roster parser before it is written, and an existing ``AGENT-REVIEWERS.md`` is
never overwritten without ``force``.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from wrapper.errors import ConfigError
from wrapper.review.roster import ROSTER_FILE, build_roster
from wrapper.review.roster_defaults import DEFAULTS_VERSION

# Language -> the file extensions that count for it.
EXTENSIONS: dict[str, tuple[str, ...]] = {
    "python": (".py", ".pyi"),
    "typescript": (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs"),
    "go": (".go",),
    "rust": (".rs",),
    "java": (".java", ".kt"),
}
SKIPPED_DIRS = frozenset(
    {".git", "node_modules", ".venv", "venv", "target", "build", "dist", "vendor", "__pycache__"}
)
UNKNOWN_LANGUAGE = "unknown_language"
ROSTER_EXISTS = "roster_exists"


@dataclass(frozen=True)
class LanguageCount:
    """One detected language and how many files of the checkout are written in it."""

    language: str
    files: int

    def to_json(self) -> dict[str, object]:
        return {"language": self.language, "files": self.files}


def count_languages(paths: Iterable[str]) -> list[LanguageCount]:
    """Languages by file count, most files first (ties by name); unknown files ignored."""
    language_of = {ext: lang for lang, exts in EXTENSIONS.items() for ext in exts}
    counts = Counter(
        language_of[suffix]
        for path in paths
        if (suffix := os.path.splitext(path)[1].lower()) in language_of
    )
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [LanguageCount(language, files) for language, files in ordered]


def _walked_files(root: Path) -> list[str]:
    found: list[str] = []
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = [d for d in subdirs if d not in SKIPPED_DIRS]
        found += [os.path.relpath(os.path.join(directory, f), root) for f in files]
    return found


def detect_languages(root: Path) -> list[LanguageCount]:
    """The languages of the checkout at ``root``; see :func:`count_languages`."""
    if not root.is_dir():
        raise ConfigError(f"{root} is not a directory", "checkout_missing")
    return count_languages(_walked_files(root))


def template_text(language: str) -> str:
    """The starter roster for ``language``; ``unknown_language`` names the known ones."""
    if language not in EXTENSIONS:
        known = ", ".join(sorted(EXTENSIONS))
        raise ConfigError(f"no roster template for {language!r} (known: {known})", UNKNOWN_LANGUAGE)
    source = resources.files("wrapper").joinpath("templates", "rosters", f"{language}.md")
    return source.read_text(encoding="utf-8").replace("{{DEFAULTS_VERSION}}", DEFAULTS_VERSION)


def install_template(root: Path, language: str, *, force: bool = False) -> Path:
    """Write the starter roster for ``language`` to ``root/AGENT-REVIEWERS.md``."""
    text = template_text(language)
    build_roster({ROSTER_FILE: text}, ["x"])  # a template that does not parse is a bug
    target = root / ROSTER_FILE
    if not root.is_dir():
        raise ConfigError(f"{root} is not a directory", "checkout_missing")
    if target.exists() and not force:
        raise ConfigError(f"{target} exists; --force replaces it", ROSTER_EXISTS)
    target.write_text(text, encoding="utf-8")
    return target
