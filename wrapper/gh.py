"""The GitHub calls only kdev makes, built on the engine client's generic calls.

The engine's :class:`~engine.github.GitHubClient` knows pull listings, comment feeds and
the generic ``request`` / ``graphql`` / ``get_rest`` / ``post_rest``; it has no endpoint
that only kdev uses. The typed reads and writes kdev needs live here, as functions of
a client:

    get_pull             GET /repos/{repo}/pulls/{n}, parsed strictly into PullRequest
    pull_graph           POST /graphql: review decision, auto-merge, merge state (PullGraph)
    compare              GET /repos/{repo}/compare/{base}...{head} (Comparison)
    get_comment          GET one issue or diff comment (raw object)
    post_issue_comment   POST /repos/{repo}/issues/{n}/comments (the created comment)
    post_line_comment    POST /repos/{repo}/pulls/{n}/comments: a new review thread on
                         path/line of commit_id (the created comment)
    create_reaction      POST /repos/{repo}/{issues|pulls}/comments/{id}/reactions (the
                         reaction; 201 made, 200 when this user already reacted so)

Errors are the engine's: transport errors, statuses and GraphQL errors are translated by
the client's one table; a missing object or an answer of the wrong shape found here is
raised through ``client.error`` (redacted and logged like every other), as
``GitHubNotFound`` / ``GitHubMalformedPayload``. Bad arguments raise ``InvalidInput``
before any request is sent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote

from engine.errors import InvalidInput
from engine.github import (
    MALFORMED_PAYLOAD,
    GitHubClient,
    GitHubMalformedPayload,
    GitHubNotFound,
    Malformed,
    PullRequest,
    get_field,
    optional_field,
    parse_pull_item,
    parse_time,
    validate_repo_name,
)

_SHA = re.compile(r"[0-9a-f]{40}")


def check_sha(sha: str, said: str) -> None:
    """``InvalidInput invalid_ref`` (``{said} a 40-hex sha, got ...``) unless ``sha`` is a
    full commit sha: the argument check of every kdev call on one commit."""
    if not _SHA.fullmatch(sha):
        raise InvalidInput(f"{said} a 40-hex sha, got {sha!r}", "invalid_ref")


@dataclass(frozen=True)
class PullGraph:
    """The GraphQL facts of one pull request (``repository.pullRequest``).

    ``review_decision`` is APPROVED, CHANGES_REQUESTED, REVIEW_REQUIRED or None;
    ``auto_merge_*`` are None when auto-merge is off; ``head_repository`` (OWNER/NAME) is
    None when the head repository was deleted.
    """

    number: int
    state: str  # OPEN | CLOSED | MERGED
    is_draft: bool
    is_cross_repository: bool
    head_repository: str | None
    review_decision: str | None
    auto_merge_enabled_at: datetime | None
    auto_merge_method: str | None
    merge_state_status: str | None
    head_ref_oid: str
    head_ref_name: str
    base_ref_name: str
    url: str

    @property
    def auto_merge_armed(self) -> bool:
        """True when an auto-merge request is enabled."""
        return self.auto_merge_method is not None or self.auto_merge_enabled_at is not None


@dataclass(frozen=True)
class Comparison:
    """``GET /compare/{base}...{head}``: commits of head not in base, and of base not in head."""

    ahead_by: int
    behind_by: int
    status: str  # identical | ahead | behind | diverged


_COMMENT_PATHS = {"issue": "issues/comments", "diff": "pulls/comments"}

_PULL_GRAPH_QUERY = """
query($owner: String!, $name: String!, $number: Int!) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      number state isDraft isCrossRepository
      headRepository { nameWithOwner }
      reviewDecision
      autoMergeRequest { enabledAt mergeMethod }
      mergeStateStatus headRefOid headRefName baseRefName url
    }
  }
}
""".strip()


def _check_id(value: int, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInput(f"{what} is a positive integer, got {value!r}", "invalid_number")


def get_pull(client: GitHubClient, repo: str, number: int) -> PullRequest:
    """``GET /repos/{repo}/pulls/{number}`` parsed strictly (a ghost author is malformed)."""
    validate_repo_name(repo)
    _check_id(number, "a pull number")
    item = client.request("GET", f"repos/{repo}/pulls/{number}", expect=dict)
    try:
        return parse_pull_item(item)
    except Malformed as exc:
        said = f"cannot read pull #{number} of {repo}: {exc.detail}"
        raise client.error(GitHubMalformedPayload, said, 200) from None


def pull_graph(client: GitHubClient, repo: str, number: int) -> PullGraph:
    """The GraphQL view of pull ``number`` of ``repo`` (one ``POST /graphql``).

    Errors translate as for every request (GraphQL errors by the client's table: NOT_FOUND
    is ``not_found``, RATE_LIMITED ``rate_limited``, any other ``malformed_payload``); in
    addition a ``pullRequest: null`` is ``not_found`` and an unexpected shape
    ``malformed_payload``.
    """
    validate_repo_name(repo)
    _check_id(number, "a pull number")
    owner, name = repo.split("/", 1)
    what = f"pull #{number} of {repo} (GraphQL)"
    variables = {"owner": owner, "name": name, "number": number}
    data = client.graphql(_PULL_GRAPH_QUERY, variables, what=what)
    repository = data.get("repository")
    pull = repository.get("pullRequest") if isinstance(repository, dict) else None
    if pull is None:
        raise client.error(GitHubNotFound, f"{what}: no such pull request", 200)
    try:
        return _parse_pull_graph(pull)
    except Malformed as exc:
        said = f"cannot read {what}: {exc.detail}"
        raise client.error(GitHubMalformedPayload, said, 200) from None


def _parse_pull_graph(item: Any) -> PullGraph:
    if not isinstance(item, dict):
        raise Malformed(MALFORMED_PAYLOAD, "pullRequest is not an object")
    where = "pullRequest."
    head_repo = optional_field(item, "headRepository", dict, where)
    auto = optional_field(item, "autoMergeRequest", dict, where)
    enabled = None if auto is None else optional_field(auto, "enabledAt", str, "autoMergeRequest.")
    method = None if auto is None else optional_field(auto, "mergeMethod", str, "autoMergeRequest.")
    return PullGraph(
        number=get_field(item, "number", int, where),
        state=get_field(item, "state", str, where),
        is_draft=get_field(item, "isDraft", bool, where),
        is_cross_repository=get_field(item, "isCrossRepository", bool, where),
        head_repository=None
        if head_repo is None
        else get_field(head_repo, "nameWithOwner", str, "headRepository."),
        review_decision=optional_field(item, "reviewDecision", str, where),
        auto_merge_enabled_at=parse_time(enabled, "enabledAt"),
        auto_merge_method=None if auto is None else method or "MERGE",
        merge_state_status=optional_field(item, "mergeStateStatus", str, where),
        head_ref_oid=get_field(item, "headRefOid", str, where),
        head_ref_name=get_field(item, "headRefName", str, where),
        base_ref_name=get_field(item, "baseRefName", str, where),
        url=get_field(item, "url", str, where),
    )


def compare(client: GitHubClient, repo: str, base: str, head: str) -> Comparison:
    """``GET /repos/{repo}/compare/{base}...{head}``: how far head is ahead/behind base."""
    validate_repo_name(repo)
    for side in (base, head):
        if not side or ".." in side or any(c.isspace() for c in side):
            raise InvalidInput(f"a compare side is a ref or sha, got {side!r}", "invalid_ref")
    spec = quote(f"{base}...{head}", safe="/:.")
    body = client.request("GET", f"repos/{repo}/compare/{spec}", expect=dict)
    try:
        return Comparison(
            ahead_by=get_field(body, "ahead_by", int, ""),
            behind_by=get_field(body, "behind_by", int, ""),
            status=get_field(body, "status", str, ""),
        )
    except Malformed as exc:
        said = f"cannot read compare {base}...{head} of {repo}: {exc.detail}"
        raise client.error(GitHubMalformedPayload, said, 200) from None


def get_comment(
    client: GitHubClient, repo: str, comment_id: int, kind: str = "issue"
) -> dict[str, Any]:
    """One comment as GitHub returns it: ``GET /repos/{repo}/issues/comments/{id}``
    (``kind="issue"``) or ``/pulls/comments/{id}`` (``kind="diff"``).

    Unconditional (no ETag). Errors translate as for every request (a missing
    comment is ``not_found``); a body that is not a JSON object is ``malformed_payload``.
    """
    validate_repo_name(repo)
    _check_id(comment_id, "a comment id")
    if kind not in _COMMENT_PATHS:
        raise InvalidInput(f"a comment kind is 'issue' or 'diff', got {kind!r}", "invalid_kind")
    return client.request("GET", f"repos/{repo}/{_COMMENT_PATHS[kind]}/{comment_id}", expect=dict)


def post_issue_comment(client: GitHubClient, repo: str, number: int, body: str) -> dict[str, Any]:
    """``POST /repos/{repo}/issues/{number}/comments`` with ``body``; returns the
    created comment (GitHub answers 201). Never conditional, never retried: a
    failure raises :class:`~engine.github.GitHubError` with the same reasons as a read."""
    validate_repo_name(repo)
    _check_id(number, "an issue number")
    if not isinstance(body, str) or not body:
        raise InvalidInput("a comment body is a non-empty string", "invalid_body")
    path = f"repos/{repo}/issues/{number}/comments"
    return client.request("POST", path, body={"body": body}, expect=dict)


# The reaction types GitHub takes (the ``content`` enum of reactions/create-for-issue-comment
# in GitHub's REST description; anything else is a 422).
REACTIONS = frozenset({"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"})


def create_reaction(
    client: GitHubClient, repo: str, kind: str, comment_id: int, content: str
) -> dict[str, Any]:
    """``POST /repos/{repo}/issues/comments/{id}/reactions`` (``kind="issue"``) or
    ``/pulls/comments/{id}/reactions`` (``kind="diff"``) with ``content``; returns the
    reaction. GitHub keeps one reaction per user and content: sent again, it answers 200
    "Reaction exists" with the same reaction, never a second one. Never retried."""
    validate_repo_name(repo)
    _check_id(comment_id, "a comment id")
    if kind not in _COMMENT_PATHS:
        raise InvalidInput(f"a comment kind is 'issue' or 'diff', got {kind!r}", "invalid_kind")
    if content not in REACTIONS:
        raise InvalidInput(
            f"a reaction is one of {sorted(REACTIONS)}, got {content!r}", "invalid_body"
        )
    path = f"repos/{repo}/{_COMMENT_PATHS[kind]}/{comment_id}/reactions"
    return client.request("POST", path, body={"content": content}, expect=dict)


def post_line_comment(
    client: GitHubClient,
    repo: str,
    number: int,
    body: str,
    *,
    commit_id: str,
    path: str,
    line: int,
    side: str = "RIGHT",
) -> dict[str, Any]:
    """``POST /repos/{repo}/pulls/{number}/comments``: a new review thread on ``path``
    line ``line`` (``side`` RIGHT: the head's side of the diff) of ``commit_id``; returns
    the created comment. Never retried; failures as :func:`post_issue_comment`."""
    validate_repo_name(repo)
    _check_id(number, "a pull number")
    _check_id(line, "a line number")
    if not isinstance(body, str) or not body:
        raise InvalidInput("a comment body is a non-empty string", "invalid_body")
    if not path or side not in ("RIGHT", "LEFT"):
        raise InvalidInput("a review comment needs a path and side RIGHT or LEFT", "invalid_body")
    payload = {"body": body, "commit_id": commit_id, "path": path, "line": line, "side": side}
    path_url = f"repos/{repo}/pulls/{number}/comments"
    return client.request("POST", path_url, body=payload, expect=dict)


# == branch protection (kdev pr-status, issue 18) =========================================
#
#   branch_protection    GET /repos/{repo}/branches/{branch}/protection: classic
#                        protection (needs admin rights), None when "Branch not protected"
#   branch_rules         GET /repos/{repo}/rules/branches/{branch}: the active ruleset rules
#                        (read access is enough)
#
# Both parse into BranchRequirements. A 404 other than "Branch not protected" (GitHub's
# answer to a user's token without admin rights) and a 403 (a bot's token without the
# administration permission) propagate as GitHubNotFound / GitHubHttpError: the caller
# decides what an unreadable protection means (wrapper/authorloop/protection.py).

BRANCH_NOT_PROTECTED = "Branch not protected"


@dataclass(frozen=True)
class ReviewRule:
    """Required approving reviews, from classic protection or a ``pull_request`` rule."""

    source: str  # "classic" or "ruleset <id>"
    required_approvals: int
    dismiss_stale: bool
    require_code_owner: bool
    require_last_push_approval: bool


@dataclass(frozen=True)
class ChecksRule:
    """Required status checks (contexts) and whether the head must be up to date."""

    source: str
    contexts: tuple[str, ...]
    strict: bool


@dataclass(frozen=True)
class BranchRequirements:
    """What one source (classic protection, or the rules endpoint) requires of a branch;
    ``other`` names the rule types that do not concern a pull request's readiness here."""

    reviews: tuple[ReviewRule, ...] = ()
    checks: tuple[ChecksRule, ...] = ()
    other: tuple[str, ...] = ()


def _branch_path(repo: str, branch: str, suffix: str) -> str:
    validate_repo_name(repo)
    if not branch or ".." in branch or any(c.isspace() for c in branch) or "\\" in branch:
        raise InvalidInput(f"a branch name, got {branch!r}", "invalid_ref")
    return suffix.format(repo=repo, branch=quote(branch, safe="/"))


def branch_protection(client: GitHubClient, repo: str, branch: str) -> BranchRequirements | None:
    """Classic protection of ``branch``; None when GitHub says the branch is not protected."""
    path = _branch_path(repo, branch, "repos/{repo}/branches/{branch}/protection")
    try:
        body = client.request("GET", path, expect=dict)
    except GitHubNotFound as exc:
        if exc.message.endswith(f": {BRANCH_NOT_PROTECTED}"):
            return None
        raise
    try:
        return _parse_classic(body)
    except Malformed as exc:
        said = f"cannot read the protection of {branch} in {repo}: {exc.detail}"
        raise client.error(GitHubMalformedPayload, said, 200) from None


def _parse_classic(body: dict[str, Any]) -> BranchRequirements:
    reviews, checks = [], []
    section = body.get("required_pull_request_reviews")
    if section is not None:
        where = "required_pull_request_reviews."
        if not isinstance(section, dict):
            raise Malformed(MALFORMED_PAYLOAD, f"{where[:-1]} is not an object")
        count = section.get("required_approving_review_count", 1)  # GitHub's default
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise Malformed(MALFORMED_PAYLOAD, f"{where}required_approving_review_count")
        reviews.append(
            ReviewRule(
                "classic",
                count,
                get_field(section, "dismiss_stale_reviews", bool, where),
                get_field(section, "require_code_owner_reviews", bool, where),
                bool(section.get("require_last_push_approval") is True),
            )
        )
    status = body.get("required_status_checks")
    if status is not None:
        where = "required_status_checks."
        if not isinstance(status, dict):
            raise Malformed(MALFORMED_PAYLOAD, f"{where[:-1]} is not an object")
        contexts = list(get_field(status, "contexts", list, where))
        for item in get_field(status, "checks", list, where):
            if not isinstance(item, dict) or not isinstance(item.get("context"), str):
                raise Malformed(MALFORMED_PAYLOAD, f"{where}checks has an item without context")
            contexts.append(item["context"])
        if not all(isinstance(c, str) for c in contexts):
            raise Malformed(MALFORMED_PAYLOAD, f"{where}contexts are not all strings")
        strict = status.get("strict") is True
        checks.append(ChecksRule("classic", tuple(dict.fromkeys(contexts)), strict))
    return BranchRequirements(tuple(reviews), tuple(checks))


def branch_rules(client: GitHubClient, repo: str, branch: str) -> BranchRequirements:
    """The active ruleset rules that apply to ``branch`` (every page, or an error)."""
    path = _branch_path(repo, branch, "repos/{repo}/rules/branches/{branch}")
    read = client.get_rest(path, {"per_page": 100}, paginate=True)
    what = f"the rules of {branch} in {repo}"
    if not read.complete:
        raise client.error(GitHubMalformedPayload, f"{what}: more pages than read", 200)
    try:
        return _parse_rules(read.body)
    except Malformed as exc:
        raise client.error(
            GitHubMalformedPayload, f"cannot read {what}: {exc.detail}", 200
        ) from None


def _parse_rules(items: list[Any]) -> BranchRequirements:
    reviews, checks, other = [], [], []
    for index, rule in enumerate(items):
        where = f"rules[{index}]."
        if not isinstance(rule, dict):
            raise Malformed(MALFORMED_PAYLOAD, f"{where[:-1]} is not an object")
        kind = get_field(rule, "type", str, where)
        source = f"ruleset {rule.get('ruleset_id', '?')}"
        params = rule.get("parameters") or {}
        if not isinstance(params, dict):
            raise Malformed(MALFORMED_PAYLOAD, f"{where}parameters is not an object")
        where += "parameters."
        if kind == "pull_request":
            reviews.append(
                ReviewRule(
                    source,
                    get_field(params, "required_approving_review_count", int, where),
                    get_field(params, "dismiss_stale_reviews_on_push", bool, where),
                    get_field(params, "require_code_owner_review", bool, where),
                    get_field(params, "require_last_push_approval", bool, where),
                )
            )
        elif kind == "required_status_checks":
            contexts = []
            for item in get_field(params, "required_status_checks", list, where):
                if not isinstance(item, dict) or not isinstance(item.get("context"), str):
                    raise Malformed(MALFORMED_PAYLOAD, f"{where}a check without context")
                contexts.append(item["context"])
            strict = get_field(params, "strict_required_status_checks_policy", bool, where)
            checks.append(ChecksRule(source, tuple(dict.fromkeys(contexts)), strict))
        else:
            other.append(kind)
    return BranchRequirements(tuple(reviews), tuple(checks), tuple(dict.fromkeys(other)))
