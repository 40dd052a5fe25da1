"""The exclusions of one ``base...head`` pair, gathered with real git (issue 28, D87).

:func:`gather_facts` reads each changed path's facts (:class:`PathFacts`): binary from
``git diff --numstat``, the first :data:`SAMPLE_BYTES` of its blob (the head's; the
base's for a deletion) through one ``git cat-file --batch``, and ``linguist-generated``
/ ``linguist-vendored`` as the **base** tree's ``.gitattributes`` set them
(:meth:`wrapper.git.Git.attributes_at`): a PR that adds or edits a ``.gitattributes``
changes nothing. :func:`exclusions_for` adds the overrides: kdev.yaml, and the base
tree's ``.kdev/exclusions.yaml`` (never the head's), then decides every path.

``base_ref`` is the base branch's tip (PatchInfo.base_sha), as GitHub reads the base
branch's attributes; what the PR's own commits carry is never consulted.
"""

from __future__ import annotations

from dataclasses import dataclass

from wrapper.config_exclusions import (
    REPO_FILE,
    ExclusionsConfig,
    parse_repo_file,
    policy_for,
    reads_repo_file,
)
from wrapper.git import Git
from wrapper.review.exclusions import Decision, PathFacts, Policy, decide_all

SAMPLE_BYTES = 64 * 1024
GENERATED = "linguist-generated"
VENDORED = "linguist-vendored"
# git check-attr's answers; any other value (linguist-generated=1 ...) counts as unspecified.
_TRUTH = {"set": True, "true": True, "unset": False, "false": False}


@dataclass(frozen=True)
class ExclusionResult:
    """Every changed path's decision, the policy that made them, and whether the base
    tree had a :data:`REPO_FILE` that was read."""

    decisions: tuple[Decision, ...]
    policy: Policy
    repo_file_read: bool

    @property
    def excluded(self) -> tuple[Decision, ...]:
        return tuple(d for d in self.decisions if not d.reviewed)

    @property
    def reviewed_paths(self) -> tuple[str, ...]:
        return tuple(d.path for d in self.decisions if d.reviewed)


def gather_facts(git: Git, base_ref: str, head_ref: str) -> list[PathFacts]:
    """The facts of every path ``git diff base_ref...head_ref`` changes, in its order."""
    entries = git.diff_entries(base_ref, head_ref)
    paths = [entry.path for entry in entries]
    attributes = git.attributes_at(base_ref, paths, (GENERATED, VENDORED))
    starts = git.blob_starts(
        (e.blob for e in entries if e.blob is not None and not e.binary), SAMPLE_BYTES
    )
    facts: list[PathFacts] = []
    for entry in entries:
        attrs = attributes.get(entry.path, {})
        text = b"" if entry.blob is None else starts.get(entry.blob, b"")
        facts.append(
            PathFacts(
                path=entry.path,
                binary=entry.binary,
                head_text=text.decode("utf-8", "replace"),
                linguist_generated=_TRUTH.get(attrs.get(GENERATED, "")),
                linguist_vendored=_TRUTH.get(attrs.get(VENDORED, "")),
            )
        )
    return facts


def exclusions_for(
    git: Git, config: ExclusionsConfig, repo: str, base_ref: str, head_ref: str
) -> ExclusionResult:
    """The decisions for ``base_ref...head_ref`` of ``repo`` under ``config`` and the
    base tree's :data:`REPO_FILE`. ``ConfigError`` ``invalid_exclusions_file`` when that
    file is there and bad (the round fails loud)."""
    repo_file = None
    if reads_repo_file(config, repo):
        repo_file = parse_repo_file(git.file_at(base_ref, REPO_FILE))
    policy = policy_for(config, repo, repo_file)
    decisions = decide_all(gather_facts(git, base_ref, head_ref), policy)
    return ExclusionResult(decisions, policy, repo_file is not None)
