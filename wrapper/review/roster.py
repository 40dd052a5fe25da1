"""Reviewer rosters: ``AGENT-REVIEWERS.md`` files, merged with the default reviewers.

Pure functions over file texts; the only I/O is :func:`read_roster_files` (a directory
walk, for ``kdev roster``). Markdown is parsed with markdown-it-py (CommonMark); only
top-level headings count (a heading inside a list or blockquote is body text).

An ``AGENT-REVIEWERS.md`` may sit in any directory. In it:

- every H2 under the ``# Agents`` H1 is a reviewer: its name is the heading text
  (``[A-Za-z0-9][A-Za-z0-9._-]*``), its instructions the body up to the next H1/H2;
- every other H1 section is *context* handed to the reviewers it applies to; a lower
  directory's ``# Guidelines`` replaces the ones above it instead of adding to them;
- a ``# Configuration`` H1 in the ROOT file holds exactly one fenced JSON block
  (:func:`parse_configuration`); in any other file it is warned about and ignored.

Scoping: for each changed file, the roster files from its directory up to the root
apply; the defaults sit at the root. On a name collision the lower directory wins, and
a reviewer only ever sees changed files under its own directory. A reviewer runs when
it wins at least one changed file.

Problems are :class:`~wrapper.errors.ConfigError` with one-line messages naming the file:
``roster_config_error`` (the configuration block) and ``invalid_roster`` (an agents
section: a bad or duplicate name). Warnings are returned as one-line strings.
"""

from __future__ import annotations

import enum
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wrapper.errors import ConfigError
from wrapper.review.roster_config import (
    ROSTER_CONFIG_ERROR,
    UNCERTAIN_ACTIONS,
    IndependentValidator,
    RosterConfig,
    parse_configuration,
)
from wrapper.review.roster_defaults import DEFAULT_REVIEWERS, DEFAULTS_VERSION, markdown_parser

__all__ = [
    "DEFAULT_REVIEWERS",
    "INVALID_ROSTER",
    "ROSTER_CONFIG_ERROR",
    "ROSTER_FILE",
    "UNCERTAIN_ACTIONS",
    "DeclaredReviewer",
    "IndependentValidator",
    "Kind",
    "Roster",
    "RosterConfig",
    "RosterFile",
    "RosterReviewer",
    "Section",
    "build_roster",
    "parse_configuration",
    "parse_roster_file",
    "read_roster_files",
    "spawning_summary",
]

ROSTER_FILE = "AGENT-REVIEWERS.md"
INVALID_ROSTER = "invalid_roster"

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class Kind(enum.StrEnum):
    """Where a roster reviewer comes from."""

    DEFAULT = "default"  # one of DEFAULT_REVIEWERS, not overridden
    OVERRIDE = "override"  # a user reviewer named like a default
    USER = "user"  # a user reviewer of its own name


@dataclass(frozen=True)
class Section:
    """One H1 context section of a roster file."""

    source: str  # the roster file's path, e.g. "plugins/AGENT-REVIEWERS.md"
    title: str
    text: str


@dataclass(frozen=True)
class DeclaredReviewer:
    """An H2 under ``# Agents``."""

    name: str
    instructions: str
    source: str  # the roster file's path


@dataclass(frozen=True)
class RosterFile:
    """One parsed ``AGENT-REVIEWERS.md``."""

    path: str  # relative, "/"-separated
    directory: str  # "" for the root
    reviewers: tuple[DeclaredReviewer, ...]
    context: tuple[Section, ...]
    configuration: str | None  # the raw ``# Configuration`` section, if any


@dataclass(frozen=True)
class RosterReviewer:
    """One reviewer of the merged roster, with what it sees."""

    name: str
    kind: Kind  # default | override (a user reviewer named like a default) | user
    scope: str  # its directory, "" for the root
    source: str  # "default" or the roster file's path
    instructions: str
    changed_files: tuple[str, ...]
    context: tuple[Section, ...]  # the context sections applying to its changed files

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "scope": self.scope or ".",
            "source": self.source,
            "instructions": self.instructions,
            "changed_files": list(self.changed_files),
            "context": [{"source": s.source, "title": s.title} for s in self.context],
        }


@dataclass(frozen=True)
class Roster:
    """The merged roster for one change."""

    reviewers: tuple[RosterReviewer, ...]
    config: RosterConfig
    warnings: tuple[str, ...]

    @property
    def summary(self) -> str:
        """``Spawning N reviewers: A defaults + B user overrides (names) + C user
        reviewers (names)``; parts with a count of zero are left out."""
        return spawning_summary(self.reviewers)

    def to_json(self) -> dict[str, Any]:
        validator = self.config.independent_validator
        return {
            "summary": self.summary,
            "reviewers": [r.to_json() for r in self.reviewers],
            "config": {
                "defaults_version_checked": self.config.defaults_version_checked,
                "defaults_version": DEFAULTS_VERSION,
                "disabled": list(self.config.disabled),
                "overlap_acknowledged": list(self.config.overlap_acknowledged),
                "independent_validator": {
                    "enabled": validator.enabled,
                    "skip_for": list(validator.skip_for),
                    "uncertain_action": validator.uncertain_action,
                },
            },
            "warnings": list(self.warnings),
        }


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def spawning_summary(reviewers: Iterable[RosterReviewer]) -> str:
    """The one-line summary of ``reviewers``, e.g. ``Spawning 6 reviewers: 4 defaults +
    1 user override (code-reviewer) + 1 user reviewer (pci-auditor)``."""
    listed = list(reviewers)
    parts: list[str] = []
    kinds = (
        (Kind.DEFAULT, "default"),
        (Kind.OVERRIDE, "user override"),
        (Kind.USER, "user reviewer"),
    )
    for kind, word in kinds:
        group = [r for r in listed if r.kind == kind]
        if not group:
            continue
        part = _plural(len(group), word)
        if kind is not Kind.DEFAULT:
            part += f" ({', '.join(dict.fromkeys(r.name for r in group))})"
        parts.append(part)
    head = f"Spawning {_plural(len(listed), 'reviewer')}"
    return f"{head}: {' + '.join(parts)}" if parts else head


# --- parsing -------------------------------------------------------------------------


def _directory_of(path: str) -> str:
    parent = path.rpartition("/")[0]
    return parent


def parse_roster_file(path: str, text: str) -> tuple[RosterFile, list[str]]:
    """Parse one ``AGENT-REVIEWERS.md`` at relative ``path``; returns it and warnings.

    Raises ``ConfigError invalid_roster`` for a reviewer name that is not
    ``[A-Za-z0-9][A-Za-z0-9._-]*`` or appears twice in the file.
    """
    lines = text.splitlines()
    tokens = markdown_parser().parse(text)
    # (level, title, first line of the heading, first line after it), top level only.
    headings: list[tuple[int, str, int, int]] = []
    for index, token in enumerate(tokens):
        if token.type == "heading_open" and token.level == 0 and token.tag in ("h1", "h2"):
            assert token.map is not None
            title = tokens[index + 1].content.strip()
            headings.append((int(token.tag[1]), title, token.map[0], token.map[1]))
    warnings: list[str] = []
    reviewers: list[DeclaredReviewer] = []
    context: list[Section] = []
    configuration: str | None = None
    h1s = [h for h in headings if h[0] == 1]
    for position, (_, title, start, body_start) in enumerate(h1s):
        end = h1s[position + 1][2] if position + 1 < len(h1s) else len(lines)
        key = title.casefold()
        if key == "agents":
            subs = [h for h in headings if h[0] == 2 and start < h[2] < end]
            for number, (_, name, _, sub_body) in enumerate(subs):
                sub_end = subs[number + 1][2] if number + 1 < len(subs) else end
                if not _NAME.match(name):
                    raise ConfigError(
                        f"{path}: reviewer name {name!r} must match {_NAME.pattern}",
                        INVALID_ROSTER,
                    )
                if any(r.name == name for r in reviewers):
                    raise ConfigError(
                        f"{path}: reviewer {name!r} is declared twice", INVALID_ROSTER
                    )
                instructions = "\n".join(lines[sub_body:sub_end]).strip()
                if not instructions:
                    warnings.append(f"{path}: reviewer {name!r} has no instructions")
                reviewers.append(DeclaredReviewer(name, instructions, path))
        elif key == "configuration":
            configuration = "\n".join(lines[start:end])
        else:
            context.append(Section(path, title, "\n".join(lines[body_start:end]).strip()))
    roster = RosterFile(
        path=path,
        directory=_directory_of(path),
        reviewers=tuple(reviewers),
        context=tuple(context),
        configuration=configuration,
    )
    return roster, warnings


# --- merging -------------------------------------------------------------------------


GUIDELINES = "guidelines"


def _add_context(above: list[Section], here: Iterable[Section]) -> list[Section]:
    """The context of a lower directory added to what applies from above; its
    ``# Guidelines`` (any case) replaces the Guidelines sections from above."""
    added = list(here)
    if any(section.title.strip().lower() == GUIDELINES for section in added):
        above = [s for s in above if s.title.strip().lower() != GUIDELINES]
    return above + added


def _ancestors(path: str) -> list[str]:
    """The directories of ``path`` from the root ("") down to its own directory."""
    parts = path.split("/")[:-1]
    return ["/".join(parts[:depth]) for depth in range(len(parts) + 1)]


def build_roster(files: Mapping[str, str], changed: Iterable[str]) -> Roster:
    """The merged roster for ``changed`` files, given ``files`` (relative path of each
    ``AGENT-REVIEWERS.md`` -> its text). See the module doc for the rules.

    Order: defaults (in :data:`DEFAULT_REVIEWERS` order), then user reviewers from the
    root down, each directory in file order. Raises ConfigError as the parsers do.
    """
    warnings: list[str] = []
    parsed: dict[str, RosterFile] = {}
    for path in sorted(files):
        if path.rpartition("/")[2] != ROSTER_FILE:
            continue
        roster_file, file_warnings = parse_roster_file(path, files[path])
        warnings += file_warnings
        parsed[roster_file.directory] = roster_file
    config = RosterConfig()
    root = parsed.get("")
    if root is not None and root.configuration is not None:
        config, config_warnings = parse_configuration(root.path, root.configuration)
        warnings += config_warnings
    for directory, roster_file in parsed.items():
        if directory and roster_file.configuration is not None:
            warnings.append(
                f"{roster_file.path}: # Configuration is only read from the root file; ignored"
            )

    # Candidates by (scope, name), in output order.
    candidates: dict[tuple[str, str], tuple[Kind, str, str]] = {}
    for name, instructions in DEFAULT_REVIEWERS.items():
        if name not in config.disabled:
            candidates[("", name)] = (Kind.DEFAULT, "default", instructions)
    for directory in sorted(parsed, key=lambda d: (d.count("/") + bool(d), d)):
        for declared in parsed[directory].reviewers:
            kind = Kind.OVERRIDE if declared.name in DEFAULT_REVIEWERS else Kind.USER
            candidates.pop((directory, declared.name), None)
            candidates[(directory, declared.name)] = (
                kind,
                declared.source,
                declared.instructions,
            )

    assigned: dict[tuple[str, str], list[str]] = {key: [] for key in candidates}
    contexts: dict[tuple[str, str], dict[Section, None]] = {key: {} for key in candidates}
    for path in dict.fromkeys(changed):
        winners: dict[str, tuple[str, str]] = {}
        sections: list[Section] = []
        for directory in _ancestors(path):
            if directory in parsed:
                sections = _add_context(sections, parsed[directory].context)
            for scope, name in candidates:
                if scope == directory:
                    winners[name] = (scope, name)
        for key in winners.values():
            assigned[key].append(path)
            contexts[key].update(dict.fromkeys(sections))

    reviewers = tuple(
        RosterReviewer(
            name=name,
            kind=kind,
            scope=scope,
            source=source,
            instructions=instructions,
            changed_files=tuple(assigned[(scope, name)]),
            context=tuple(contexts[(scope, name)]),
        )
        for (scope, name), (kind, source, instructions) in candidates.items()
        if assigned[(scope, name)]
    )
    return Roster(reviewers=reviewers, config=config, warnings=tuple(warnings))


# --- I/O edge ------------------------------------------------------------------------


def read_roster_files(root: Path) -> dict[str, str]:
    """Every ``AGENT-REVIEWERS.md`` under ``root`` (``.git`` skipped, symlinks not
    followed): relative "/"-separated path -> text (UTF-8, undecodable bytes replaced)."""
    found: dict[str, str] = {}
    for directory, subdirs, names in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if d != ".git")
        if ROSTER_FILE in names:
            path = Path(directory) / ROSTER_FILE
            if path.is_symlink():
                continue
            relative = path.relative_to(root).as_posix()
            found[relative] = path.read_bytes().decode("utf-8", "replace")
    return found
