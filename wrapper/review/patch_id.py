"""Patch-id of a pull request: what it changes, not how it got there (docs/decisions.md D3).

The patch-id is the first field of ``git diff base...head | git patch-id --verbatim``: the
diff runs from the merge base, so merging the base into the head, rebasing it, or
force-pushing the same change as a new commit keeps the patch-id; any change to what
the PR does gives a new one, whitespace included (re-indenting Python, YAML nesting or a
Makefile tab is a change). An empty diff has no patch-id (None).

The patch-id is always computed from exactly the commit the event named
(:func:`fetch_head_commit`), never from whatever ``refs/pull/N/head`` points to now: an
index entry ``head -> patch_id`` exists only if that patch-id was computed from that head.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from wrapper.errors import ConfigError, FetchError
from wrapper.git import Git
from wrapper.ledger.ledger import check_sha

if TYPE_CHECKING:
    from wrapper.config_exclusions import ExclusionsConfig
    from wrapper.review.exclusion_facts import ExclusionResult

BASE_REF_PREFIX = "refs/kdev/base/"
PULL_REF_PREFIX = "refs/kdev/pull/"


@dataclass(frozen=True)
class PatchInfo:
    """The diff of one PR head against its base, and its patch-id.

    The diff is held once, as git's bytes; its text is decoded only when read (D111): a
    round deferred for its size is planned on the bytes and never decodes them."""

    patch_id: str | None  # None when base...head is empty
    raw: bytes  # git diff base...head
    head_sha: str  # the commit the head ref points to
    base_sha: str  # the commit the base ref points to (the branch tip, not the merge base)
    # With exclusions (D87): every path's decision, and the bytes of the reviewed paths
    # only (what the reviewer reads; ``raw`` itself when nothing is excluded).
    exclusions: ExclusionResult | None = None
    reviewed_raw: bytes | None = None

    @cached_property
    def diff(self) -> str:
        """git diff base...head, decoded as UTF-8 with replacement."""
        return self.raw.decode("utf-8", "replace")

    @cached_property
    def reviewed_diff(self) -> str | None:
        """The reviewed paths' diff as text (None without exclusions; ``diff`` itself,
        not a second copy, when nothing is excluded)."""
        if self.reviewed_raw is None:
            return None
        if self.reviewed_raw is self.raw:
            return self.diff
        return self.reviewed_raw.decode("utf-8", "replace")

    @property
    def for_reviewer_raw(self) -> bytes:
        """The bytes of :attr:`for_reviewer`, undecoded."""
        return self.raw if self.reviewed_raw is None else self.reviewed_raw

    @property
    def for_reviewer(self) -> str:
        """The diff the reviewer is given: the reviewed paths' (``diff`` without exclusions)."""
        reviewed = self.reviewed_diff
        return self.diff if reviewed is None else reviewed


def fetch_pr_refs(git: Git, base_branch: str, pr: int, remote: str = "origin") -> tuple[str, str]:
    """Fetches the base branch and ``refs/pull/{pr}/head`` from ``remote`` in one fetch.

    Both are force-updated into ``refs/kdev/``; returns ``(base_ref, head_ref)``, the local
    ref names. Raises ``ConfigError`` ``invalid_branch`` for a name ``git check-ref-format
    --branch`` refuses, ``invalid_pr`` for a pr that is not a positive int, and
    ``FetchError`` ``fetch_failed`` when the fetch fails.
    """
    if isinstance(pr, bool) or not isinstance(pr, int) or pr < 1:
        raise ConfigError(f"pull request number {pr!r} is not a positive integer", "invalid_pr")
    if not git.is_valid_branch_name(base_branch):
        raise ConfigError(f"{base_branch!r} is not a valid branch name", "invalid_branch")
    base_ref = f"{BASE_REF_PREFIX}{base_branch}"
    head_ref = f"{PULL_REF_PREFIX}{pr}/head"
    git.fetch(
        remote,
        [f"+refs/heads/{base_branch}:{base_ref}", f"+refs/pull/{pr}/head:{head_ref}"],
    )
    return base_ref, head_ref


def fetch_head_commit(git: Git, sha: str, remote: str = "origin") -> bool:
    """True when commit ``sha`` is (now) in the checkout: already there, or fetched from
    ``remote`` by its SHA (protocol v2 serves any object the remote has; GitHub serves
    every commit of the repository network). False when the remote cannot give it (a
    force-pushed-away head that was garbage-collected, a network failure): the caller
    then records nothing. ``ConfigError invalid_sha`` for a malformed ``sha``."""
    check_sha(sha, "head_sha")
    if git.rev_parse(sha) is not None:
        return True
    try:
        git.fetch(remote, [sha])
    except FetchError:
        return False
    return git.rev_parse(sha) is not None


def compute_patch_id(
    git: Git,
    base_ref: str,
    head_ref: str,
    config: ExclusionsConfig | None = None,
    repo: str = "",
) -> PatchInfo:
    """The patch-id of ``base_ref...head_ref``, with the diff and both commit SHAs.

    With ``config`` (D87), ``repo``'s exclusions are decided from the base tip
    (:func:`~wrapper.review.exclusion_facts.exclusions_for`) and the patch-id is
    :func:`~wrapper.review.exclusion_diff.exclusion_patch_id`'s (D3's own when no trusted
    rule excluded a path); ``ConfigError invalid_exclusions_file`` for a bad base file.

    Raises ``FetchError`` ``ref_missing`` when either ref names no commit (the fetch did
    not bring it), and ``KdevError`` ``git_failed`` when git cannot diff them (for
    example, no merge base).
    """
    head_sha = git.rev_parse(head_ref)
    base_sha = git.rev_parse(base_ref)
    if head_sha is None:
        raise FetchError(f"{head_ref} names no commit; was it fetched?", "ref_missing")
    if base_sha is None:
        raise FetchError(f"{base_ref} names no commit; was it fetched?", "ref_missing")
    raw = git.diff(base_ref, head_ref)
    if config is not None and raw:
        return _with_exclusions(git, config, repo, base_ref, head_ref, raw, head_sha, base_sha)
    return PatchInfo(
        patch_id=git.patch_id(raw),
        raw=raw,
        head_sha=head_sha,
        base_sha=base_sha,
    )


def _with_exclusions(
    git: Git,
    config: ExclusionsConfig,
    repo: str,
    base_ref: str,
    head_ref: str,
    raw: bytes,
    head_sha: str,
    base_sha: str,
) -> PatchInfo:
    from wrapper.review.exclusion_diff import exclusion_patch_id, reviewed_diff
    from wrapper.review.exclusion_facts import exclusions_for

    result = exclusions_for(git, config, repo, base_ref, head_ref)
    return PatchInfo(
        patch_id=exclusion_patch_id(raw, result.decisions, git.patch_id),
        raw=raw,
        head_sha=head_sha,
        base_sha=base_sha,
        exclusions=result,
        # Nothing excluded: the same bytes, not a second copy of a large diff (D94).
        reviewed_raw=reviewed_diff(raw, result.decisions) if result.excluded else raw,
    )
