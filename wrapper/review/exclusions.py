"""Which changed paths the reviewer reads, and why the others are left out (issue 28, D87).

Pure rules, no I/O: :mod:`wrapper.review.exclusion_facts` gathers each path's facts
with git; :func:`decide_all` turns them into one :class:`Decision` per path, either
reviewed or excluded with the rule that excluded it and a detail. The verdict header
and the review summary list every exclusion (``format_exclusions``); an excluded path
is never shown as reviewed.

The default rules (docs/reviewers.md "What the reviewer reads: exclusions"):

- ``binary``: git diffs it as binary (``-`` in ``git diff --numstat``); there is no text
  to read. Always excluded, whatever the overrides say.
- ``linguist-generated`` / ``linguist-vendored``: the attribute is set for the path by
  the *base* tree's ``.gitattributes`` (GitHub hides generated files in its diffs:
  https://github.com/github-linguist/linguist/blob/main/docs/overrides.md). Unset
  (``-linguist-generated`` or ``=false``) turns the name and content rules of its kind
  off for that path, as Linguist does.
- ``lockfile``: the file name is a lockfile of a common ecosystem (:data:`LOCKFILES`).
  This includes ``yarn.lock``, ``go.sum`` and ``Gemfile.lock``, which Linguist does
  not count as generated (github-linguist/linguist#4445, #5681).
- ``vendored``: a path segment is one of :data:`VENDORED_DIRS`, a short list taken
  from Linguist's ``lib/linguist/vendor.yml``.
- ``minified``: ``*.min.js``/``*.min.css``/``*.map``, or a ``.js``/``.css`` file whose
  average line length is over 110 (Linguist's ``generated.rb`` threshold).
- ``generated-marker``: a comment line among the first 40 lines says the file is
  generated: the ``@generated`` tag, Go's ``Code generated ... DO NOT EDIT.``
  (https://go.dev/s/generatedcode), or ``DO NOT EDIT``.

Then kdev.yaml's overrides (:mod:`wrapper.config_exclusions`): ``exclude`` globs
exclude (rule ``config``), ``include`` globs re-admit a path any rule but ``binary``
excluded, and ``defaults: false`` turns every default rule off but ``binary``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

RULE_BINARY = "binary"
RULE_LINGUIST_GENERATED = "linguist-generated"
RULE_LINGUIST_VENDORED = "linguist-vendored"
RULE_LOCKFILE = "lockfile"
RULE_VENDORED = "vendored"
RULE_MINIFIED = "minified"
RULE_MARKER = "generated-marker"
RULE_CONFIG = "config"

LOCKFILES = frozenset(
    {
        "package-lock.json",
        "npm-shrinkwrap.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "bun.lock",
        "bun.lockb",
        "deno.lock",
        "poetry.lock",
        "Pipfile.lock",
        "pdm.lock",
        "uv.lock",
        "pixi.lock",
        "Cargo.lock",
        "Gemfile.lock",
        "composer.lock",
        "go.sum",
        "Gopkg.lock",
        "glide.lock",
        "mix.lock",
        "pubspec.lock",
        "Podfile.lock",
        "Package.resolved",
        "packages.lock.json",
        "paket.lock",
        "gradle.lockfile",
        "flake.lock",
        "MODULE.bazel.lock",
        ".terraform.lock.hcl",
        "conan.lock",
        "cabal.project.freeze",
    }
)
# A path segment that puts everything under it in a vendored tree.
VENDORED_DIRS = frozenset({"node_modules", "bower_components", "vendor", "third_party", "Pods"})
# Two-segment vendored trees: Carthage's build output and Yarn's own installed copies.
VENDORED_PAIRS = frozenset(
    {
        ("Carthage", "Build"),
        (".yarn", "releases"),
        (".yarn", "plugins"),
        (".yarn", "sdks"),
        (".yarn", "versions"),
        (".yarn", "unplugged"),
    }
)
MINIFIED_NAME = re.compile(r"[.-]min\.(?:js|css)$|\.(?:js|css)\.map$")
MINIFIABLE = (".js", ".mjs", ".cjs", ".css")
MINIFIED_AVERAGE = 110
MARKER_LINES = 40
# A comment leader, then the marker somewhere on the line.
_COMMENT = r"^\s*(?://|/\*|\*|#|--|;|%|<!--|\{-|\(\*)"
MARKERS = (
    ("@generated", re.compile(_COMMENT + r".*@generated\b")),
    ("Code generated ... DO NOT EDIT.", re.compile(r"^// Code generated .* DO NOT EDIT\.$")),
    ("DO NOT EDIT", re.compile(_COMMENT + r".*\bDO NOT EDIT\b")),
)


@dataclass(frozen=True)
class PathFacts:
    """What the rules know of one changed path.

    ``head_text``: the start of the file's content (the head's; the base's for a
    deletion), enough for the first :data:`MARKER_LINES` lines and a line-length
    average. ``linguist_generated``/``linguist_vendored``: the base tree's attribute
    for the path: True (set), False (unset or ``false``), None (unspecified).
    """

    path: str
    binary: bool = False
    head_text: str = ""
    linguist_generated: bool | None = None
    linguist_vendored: bool | None = None


@dataclass(frozen=True)
class Policy:
    """The overrides in force for one repository (:mod:`wrapper.config_exclusions`)."""

    defaults: bool = True
    exclude: tuple[str, ...] = ()
    include: tuple[str, ...] = ()


@dataclass(frozen=True)
class Decision:
    """One path: reviewed (``rule`` None) or excluded by ``rule`` because of ``detail``."""

    path: str
    rule: str | None = None
    detail: str = ""

    @property
    def reviewed(self) -> bool:
        return self.rule is None


def decide_all(facts: Iterable[PathFacts], policy: Policy = Policy()) -> tuple[Decision, ...]:
    """One decision per path, in the order given."""
    return tuple(decide(item, policy) for item in facts)


def decide(facts: PathFacts, policy: Policy = Policy()) -> Decision:
    """Whether ``facts.path`` is reviewed, under the default rules and ``policy``."""
    path = facts.path
    if facts.binary:
        return Decision(path, RULE_BINARY, "git diffs it as binary")
    found = _configured(path, policy.exclude)
    excluded = Decision(path, RULE_CONFIG, f"exclude: {found}") if found else None
    if excluded is None and policy.defaults:
        excluded = _default(facts)
    if excluded is None:
        return Decision(path)
    readmitted = _configured(path, policy.include)
    return Decision(path) if readmitted else excluded


def _configured(path: str, globs: Sequence[str]) -> str | None:
    return next((glob for glob in globs if glob_matches(glob, path)), None)


def _default(facts: PathFacts) -> Decision | None:
    path = facts.path
    if facts.linguist_generated:
        return Decision(path, RULE_LINGUIST_GENERATED, "set in the base's .gitattributes")
    if facts.linguist_vendored:
        return Decision(path, RULE_LINGUIST_VENDORED, "set in the base's .gitattributes")
    if facts.linguist_vendored is not False:
        segment = vendored_segment(path)
        if segment is not None:
            return Decision(path, RULE_VENDORED, f"under {segment}/")
    if facts.linguist_generated is False:
        return None
    name = path.rpartition("/")[2]
    if name in LOCKFILES:
        return Decision(path, RULE_LOCKFILE, name)
    minified = minified_reason(path, facts.head_text)
    if minified is not None:
        return Decision(path, RULE_MINIFIED, minified)
    marker = generated_marker(facts.head_text)
    if marker is not None:
        return Decision(path, RULE_MARKER, marker)
    return None


def vendored_segment(path: str) -> str | None:
    """The vendored directory ``path`` lies under (its leading segments), or None."""
    parts = path.split("/")[:-1]
    for index, part in enumerate(parts):
        if part in VENDORED_DIRS:
            return "/".join(parts[: index + 1])
        if tuple(parts[index : index + 2]) in VENDORED_PAIRS:
            return "/".join(parts[: index + 2])
    return None


def minified_reason(path: str, text: str) -> str | None:
    """Why ``path`` reads as minified: its name, or its average line length."""
    if MINIFIED_NAME.search(path):
        return "named as minified"
    if not path.endswith(MINIFIABLE) or not text:
        return None
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    if not lines:
        return None
    average = sum(len(line) for line in lines) / len(lines)
    if average > MINIFIED_AVERAGE:
        return f"average line length {average:.0f} > {MINIFIED_AVERAGE}"
    return None


def generated_marker(text: str) -> str | None:
    """The generated marker among the first :data:`MARKER_LINES` lines, or None."""
    for line in text.split("\n")[:MARKER_LINES]:
        line = line.rstrip("\r")
        for name, pattern in MARKERS:
            if pattern.search(line):
                return name
    return None


def glob_matches(glob: str, path: str) -> bool:
    """kdev.yaml's glob syntax: ``*`` and ``?`` stay within one segment, ``**`` spans
    segments, ``[...]`` is a class; a glob without ``/`` matches the file name at any
    depth; a glob ending in ``/`` matches everything under that directory."""
    return _compiled(glob).fullmatch(path) is not None


@lru_cache(maxsize=256)
def _compiled(glob: str) -> re.Pattern[str]:
    if glob.endswith("/"):
        glob += "**"
    anchored = "/" in glob.rstrip("/")
    body = _translate(glob.lstrip("/"))
    return re.compile(body if anchored else f"(?:.*/)?{body}")


def _translate(glob: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(glob):
        char = glob[index]
        if glob.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
        elif glob.startswith("**", index):
            out.append(".*")
            index += 2
        elif char == "*":
            out.append("[^/]*")
            index += 1
        elif char == "?":
            out.append("[^/]")
            index += 1
        elif char == "[" and "]" in glob[index + 2 :]:
            end = glob.index("]", index + 2)
            inner = glob[index + 1 : end]
            negated = inner.startswith("!")
            inner = re.sub(r"([\\^])", r"\\\1", inner[1:] if negated else inner)
            out.append(f"[{'^/' if negated else ''}{inner}]")
            index = end + 1
        else:
            out.append(re.escape(char))
            index += 1
    return "".join(out)


def format_exclusions(decisions: Iterable[Decision]) -> list[str]:
    """One line per excluded path, ``path (rule: detail)``, in the order given: what the
    verdict header and the review summary list."""
    return [f"{d.path} ({d.rule}: {d.detail})" for d in decisions if not d.reviewed]


def exclusions_header(decisions: Iterable[Decision]) -> str:
    """The block that opens a verdict with exclusions: ``Not reviewed (excluded, N):``
    then one ``- path (rule: detail)`` line each; "" when nothing is excluded."""
    lines = format_exclusions(decisions)
    if not lines:
        return ""
    listed = "".join(f"- {line}\n" for line in lines)
    return f"{HEADER_OPENING}{len(lines)}):\n{listed}"


HEADER_OPENING = "Not reviewed (excluded, "
_HEADER = re.compile(r"Not reviewed \(excluded, ([1-9][0-9]{0,5})\):\n")


def header_exclusions(body: str) -> list[str]:
    """The ``path (rule: detail)`` lines of the :func:`exclusions_header` that opens a
    verdict's ``body`` ([] when it does not open with one): what its notice lists."""
    found = _HEADER.match(body)
    if found is None:
        return []
    lines = body[found.end() :].split("\n")[: int(found.group(1))]
    return [line[2:] for line in lines if line.startswith("- ")]
