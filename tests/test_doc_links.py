"""Every relative link of the docs resolves: to a file that exists and, with ``#``, to one
of its headings (GitHub's anchors). The markdown that ships in the wheel links to
nothing outside the package (D75)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.test_self_contained import MARKDOWN_LINK, without_code

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# Markdown that is package data: an installed reader has only the package around it.
PACKAGED = [ROOT / "ghsim" / "README.md", ROOT / "wrapper" / "starter" / "README.md"]
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but ``-`` and ``_`` dropped,
    each space a hyphen."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and (match := HEADING.match(line)):
            base = slug(match.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def relative_links(path: Path) -> list[str]:
    text = without_code(path.read_text(encoding="utf-8"))
    return [t for t in MARKDOWN_LINK.findall(text) if not re.match(r"[a-z][a-z0-9+.-]*:", t)]


def broken(path: Path, root: Path = ROOT) -> list[str]:
    hits = []
    for target in relative_links(path):
        name, _, anchor = target.partition("#")
        file = (path.parent / name).resolve() if name else path
        if not file.is_file():
            hits.append(f"{path.relative_to(root)}: {target} (no such file)")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            hits.append(f"{path.relative_to(root)}: {target} (no such heading)")
    return hits


def test_every_relative_link_of_the_docs_resolves() -> None:
    links = [link for path in DOCS for link in relative_links(path)]
    assert len(links) > 20 and any("#" in link for link in links)
    assert [hit for path in DOCS for hit in broken(path)] == []


def test_packaged_markdown_links_only_inside_its_package() -> None:
    for path in PACKAGED:
        package = path.parent
        for target in relative_links(path):
            resolved = (path.parent / target.partition("#")[0]).resolve()
            assert resolved.is_relative_to(package), f"{path}: {target}"
        assert broken(path) == []


def test_the_checker_catches_a_missing_file_and_a_missing_heading(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n## The API proxy (`reviewer.api_proxy`)\n\n## Twice\n\n## Twice\n\n"
        "[a](page.md#title) [b](#the-api-proxy-reviewerapi_proxy) [c](#twice-1)\n"
        "[d](missing.md) [e](#nowhere) [f](page.md#twice-2) `[g](in-code.md)`\n"
    )
    assert broken(page, tmp_path) == [
        "page.md: missing.md (no such file)",
        "page.md: #nowhere (no such heading)",
        "page.md: page.md#twice-2 (no such heading)",
    ]
