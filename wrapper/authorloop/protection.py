"""Branch protection in ``kdev pr-status``: what the base branch requires of a pull request,
and whether its head meets it (docs/author-loop.md, docs/decisions.md "Branch protection in
pr-status").

Two sources, both from GitHub: classic protection (``GET .../branches/{base}/protection``,
which needs admin rights) and the ruleset rules of the base branch (``GET .../rules/branches/
{base}``, read access). Their requirements add up: the most approvals any source asks for,
every required check of every source. The state is one of

- ``unsatisfied``: a requirement we could read is not met (the reasons say which);
- ``unknown``: nothing we read is unmet, but a part could not be read (``no_admin_read``:
  the token may not read classic protection) or a rule kdev does not evaluate applies;
- ``none``: both sources were read and neither protects the branch;
- ``satisfied``: both were read, and every requirement is met.

Approvals are counted as GitHub counts them: per reviewer the latest APPROVED,
CHANGES_REQUESTED or DISMISSED review decides; only reviewers with write access (author
association OWNER, MEMBER or COLLABORATOR) count, never the pull's author; when stale
approvals are dismissed on push (or the last push must be approved) only approvals of the
current head count.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from engine.github import (
    GitHubClient,
    GitHubError,
    GitHubHttpError,
    GitHubMalformedPayload,
    GitHubNotFound,
    PullRequest,
)
from wrapper.gh import BranchRequirements, branch_protection, branch_rules, compare
from wrapper.jsonform import JsonForm

logger = logging.getLogger(__name__)

NO_ADMIN_READ = "no_admin_read"
WRITE_ASSOCIATIONS = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})
DECISIVE_STATES = frozenset({"APPROVED", "CHANGES_REQUESTED", "DISMISSED"})
# Rule types that do not decide whether an open pull request may merge now; any other type
# (update, required_deployments, workflows, code_scanning, file rules, new ones) is not
# evaluated by kdev and makes the state ``unknown`` rather than ``satisfied``.
NOT_GATING_RULES = frozenset(
    {
        "creation",
        "deletion",
        "non_fast_forward",
        "required_linear_history",
        "required_signatures",
        "merge_queue",
        "copilot_code_review",
    }
)
# A check-run bucket (wrapper.authorloop.watch.check_bucket) or commit-status state -> the
# state of a required check; the worst of a context's answers wins.
_CHECK_STATE = {
    "pass": "passed",
    "skipping": "passed",
    "pending": "pending",
    "success": "passed",
}
_WORST = ("failing", "pending", "passed")

T = TypeVar("T")


@dataclass(frozen=True)
class Requirements:
    """The requirements of every source, added up."""

    sources: list[str] = field(default_factory=list)
    required_approvals: int = 0
    review_rules: int = 0
    dismiss_stale: bool = False
    require_last_push_approval: bool = False
    checks: list[str] = field(default_factory=list)
    strict: bool = False
    not_evaluated: list[str] = field(default_factory=list)

    @classmethod
    def combine(cls, parts: list[BranchRequirements]) -> Requirements:
        reviews = [r for p in parts for r in p.reviews]
        check_rules = [c for p in parts for c in p.checks]
        sources = [r.source for r in reviews] + [c.source for c in check_rules]
        return cls(
            sources=list(dict.fromkeys(sources)),
            required_approvals=max((r.required_approvals for r in reviews), default=0),
            review_rules=len(reviews),
            dismiss_stale=any(r.dismiss_stale for r in reviews),
            require_last_push_approval=any(r.require_last_push_approval for r in reviews),
            checks=list(dict.fromkeys(c for rule in check_rules for c in rule.contexts)),
            strict=any(c.strict for c in check_rules),
            not_evaluated=sorted({k for p in parts for k in p.other} - NOT_GATING_RULES),
        )


@dataclass(frozen=True)
class ProtectionStatus(JsonForm):
    state: str  # satisfied | unsatisfied | none | unknown
    reasons: list[str]  # why unsatisfied, one phrase each
    codes: list[str]  # their reason codes
    unknown: list[str]  # what could not be read or evaluated (no_admin_read, ...)
    classic: str  # protected | not_protected | unreadable
    rules: str  # read | unreadable
    requirements: Requirements
    approvals: list[str]  # reviewers whose approval counts
    approvals_at_head: int
    not_counted: dict[str, str]  # reviewer -> why their latest review does not count
    changes_requested_by: list[str]
    checks: dict[str, str]  # required context -> passed|failing|pending|missing|unknown
    behind_by: int | None  # commits of the base the head lacks (read only when strict)

    def lines(self) -> list[str]:
        """``protection: <state> (...)`` and, when something is required, the details."""
        why = "; ".join(self.reasons)
        if self.unknown:
            unknown = ", ".join(self.unknown)
            why = unknown if self.state == "unknown" else f"{why}; unknown: {unknown}"
        out = [f"protection: {self.state}" + (f" ({why})" if why else "")]
        req = self.requirements
        if req.review_rules:
            stale = "dismissed on push" if req.dismiss_stale else "kept on push"
            who = ", ".join(self.approvals) or "nobody"
            bound = "at least " if self.classic == "unreadable" else ""
            out.append(
                f"  approvals: {len(self.approvals)} of {bound}{req.required_approvals} required "
                f"({who}; {self.approvals_at_head} at the head; stale approvals {stale})"
            )
            out += [f"  not counted: {u} ({w})" for u, w in sorted(self.not_counted.items())]
        if req.checks:
            shown = ", ".join(f"{c}: {s}" for c, s in self.checks.items())
            strict = " (head must be up to date)" if req.strict else ""
            out.append(f"  required checks: {shown}{strict}")
        return out


def read_protection(
    github: GitHubClient, repo: str, pull: PullRequest, ci: dict[str, str]
) -> ProtectionStatus:
    """Read both sources for ``pull``'s base and judge its head; ``ci`` is the head's check
    runs as name -> bucket. Never raises for GitHub: what cannot be read is ``unknown``."""
    unknown: list[str] = []
    classic_state, classic = _read_classic(github, repo, pull.base_ref, unknown)
    rules = _guarded(lambda: branch_rules(github, repo, pull.base_ref), "rules", unknown)
    req = Requirements.combine([p for p in (classic, rules) if p is not None])
    unknown += [f"not_evaluated:{kind}" for kind in req.not_evaluated]
    reviews: list[Any] | None = []
    if req.review_rules:
        path = f"repos/{repo}/pulls/{pull.number}/reviews"
        reviews = _guarded(lambda: _listing(github, path, None), "reviews", unknown)
    statuses: dict[str, str] | None = {}
    if req.checks:
        statuses = _guarded(lambda: _statuses(github, repo, pull.head_sha), "statuses", unknown)
    behind = None
    if req.strict:
        base, head = pull.base_ref, pull.head_sha
        comparison = _guarded(lambda: compare(github, repo, base, head), "compare", unknown)
        behind = None if comparison is None else comparison.behind_by
    protected = classic is not None or (rules is not None and rules != BranchRequirements())
    seen = Seen(classic_state, "unreadable" if rules is None else "read", protected)
    status = judge(req, seen, reviews, pull, ci, statuses, behind, unknown)
    if status.unknown:
        logger.warning("protection of %s #%s: unknown: %s", repo, pull.number, status.unknown)
    return status


@dataclass(frozen=True)
class Seen:
    """What was read: classic ``protected | not_protected | unreadable``, rules ``read |
    unreadable``, and whether either showed any protection."""

    classic: str
    rules: str
    protected: bool


def judge(
    req: Requirements,
    seen: Seen,
    reviews: list[Any] | None,
    pull: PullRequest,
    ci: dict[str, str],
    statuses: dict[str, str] | None,
    behind: int | None,
    unknown: list[str],
) -> ProtectionStatus:
    """Pure: the state of ``pull``'s head against ``req``. ``reviews`` or ``statuses`` None:
    they could not be read, so the approvals, or a check without a check run, are not
    judged (the reason is already in ``unknown``)."""
    head_only = req.dismiss_stale or req.require_last_push_approval
    tally = count_approvals(reviews or [], pull.head_sha, pull.user_login, head_only=head_only)
    checks = {
        c: check_state(ci.get(c), None if statuses is None else statuses.get(c)) for c in req.checks
    }
    if statuses is None:
        checks = {c: "unknown" if s == "missing" else s for c, s in checks.items()}
    reasons: list[str] = []
    codes: list[str] = []

    def unmet(code: str, reason: str) -> None:
        codes.append(code)
        reasons.append(reason)

    if req.review_rules and reviews is not None:
        if len(tally.approvers) < req.required_approvals:
            unmet(
                "approvals_missing", f"approvals {len(tally.approvers)} of {req.required_approvals}"
            )
        if tally.changes_requested:
            unmet("changes_requested", f"changes requested by {', '.join(tally.changes_requested)}")
        if req.require_last_push_approval and tally.at_head == 0:
            unmet("last_push_not_approved", "the last push is not approved")
    for context, state in checks.items():
        if state not in ("passed", "unknown"):
            unmet(f"check_{state}", f"check {context} {state}")
    if req.strict and behind:
        unmet("behind_base", f"head {behind} commits behind {pull.base_ref}")
    if codes:
        state = "unsatisfied"
    elif unknown:
        state = "unknown"
    elif not seen.protected:
        state = "none"
    else:
        state = "satisfied"
    return ProtectionStatus(
        state=state,
        reasons=reasons,
        codes=codes,
        unknown=list(unknown),
        classic=seen.classic,
        rules=seen.rules,
        requirements=req,
        approvals=tally.approvers,
        approvals_at_head=tally.at_head,
        not_counted=tally.not_counted,
        changes_requested_by=tally.changes_requested,
        checks=checks,
        behind_by=behind,
    )


@dataclass(frozen=True)
class Tally:
    approvers: list[str]
    at_head: int
    not_counted: dict[str, str]
    changes_requested: list[str]


def count_approvals(reviews: list[Any], head: str, author: str, *, head_only: bool) -> Tally:
    """Pure: GitHub's count. Reviews come oldest first (as GitHub lists them); per reviewer
    the latest APPROVED, CHANGES_REQUESTED or DISMISSED review decides (a COMMENTED one
    changes nothing). It counts when APPROVED, by someone with write access who is not the
    author, and (``head_only``) of the current head."""
    latest: dict[str, dict[str, Any]] = {}
    for review in reviews:
        user = review.get("user") if isinstance(review, dict) else None
        login = user.get("login") if isinstance(user, dict) else None
        if isinstance(login, str) and review.get("state") in DECISIVE_STATES:
            latest[login] = review
    approvers, requested, not_counted, at_head = [], [], {}, 0
    for login, review in sorted(latest.items()):
        if review["state"] == "DISMISSED":
            not_counted[login] = "dismissed"
        elif login == author:
            not_counted[login] = "author"
        elif review.get("author_association") not in WRITE_ASSOCIATIONS:
            not_counted[login] = "no_write_access"
        elif review["state"] == "CHANGES_REQUESTED":
            requested.append(login)
        elif review.get("commit_id") == head:
            approvers.append(login)
            at_head += 1
        elif head_only:
            not_counted[login] = "stale"
        else:
            approvers.append(login)
    return Tally(approvers, at_head, not_counted, requested)


def check_state(bucket: str | None, status: str | None) -> str:
    """Pure: a required context from its check run's bucket and its commit status's state:
    ``missing`` when neither reported, else the worse of the two."""
    found = [_CHECK_STATE.get(v, "failing") for v in (bucket, status) if v is not None]
    if not found:
        return "missing"
    return min(found, key=_WORST.index)


def _read_classic(
    github: GitHubClient, repo: str, branch: str, unknown: list[str]
) -> tuple[str, BranchRequirements | None]:
    try:
        found = branch_protection(github, repo, branch)
    except (GitHubNotFound, GitHubHttpError) as exc:
        if exc.status in (403, 404):  # a user's token gets 404, a bot's 403
            unknown.append(NO_ADMIN_READ)
        else:
            unknown.append(f"classic:{exc.reason}")
        return "unreadable", None
    except GitHubError as exc:
        unknown.append(f"classic:{exc.reason}")
        return "unreadable", None
    return ("not_protected", None) if found is None else ("protected", found)


def _guarded(read: Callable[[], T], what: str, unknown: list[str]) -> T | None:
    """``read()``, or None with ``what:<reason>`` noted in ``unknown`` when GitHub fails."""
    try:
        return read()
    except GitHubError as exc:
        unknown.append(f"{what}:{exc.reason}")
        return None


def _listing(github: GitHubClient, path: str, items_key: str | None) -> list[Any]:
    read = github.get_rest(path, {"per_page": 100}, paginate=True, items_key=items_key)
    if not read.complete:
        raise github.error(GitHubMalformedPayload, f"{path}: more pages than read", 200)
    return list(read.body)


def _statuses(github: GitHubClient, repo: str, sha: str) -> dict[str, str]:
    """The head's commit statuses, context -> state (GitHub gives the latest per context)."""
    items = _listing(github, f"repos/{repo}/commits/{sha}/status", "statuses")
    return {
        str(s.get("context")): str(s.get("state"))
        for s in items
        if isinstance(s, dict) and isinstance(s.get("context"), str)
    }
