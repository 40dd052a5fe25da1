"""Branch protection and rulesets: the scenario helpers, the state and the JSON GitHub serves.

Two kinds of protection apply to a branch, as on GitHub:

- **classic protection** (``protect_branch``): one record per branch name, read with
  ``GET /repos/{o}/{r}/branches/{branch}/protection``, which needs admin rights (the repo
  owner, or an account given them with ``grant_admin``);
- **rulesets** (``add_ruleset``): rules matched by ref-name patterns, read by anyone who can
  read the repository with ``GET /repos/{o}/{r}/rules/branches/{branch}``.

"Dismiss stale approvals" (classic ``dismiss_stale_reviews`` or a ruleset's
``dismiss_stale_reviews_on_push``) acts as on GitHub: a push that moves a pull request's
head turns the approving reviews of that pull into DISMISSED reviews.
"""

from __future__ import annotations

import fnmatch
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ghsim.core import Author, GhsimError, SimCore
from ghsim.model import Pull, Repo, User

ENFORCEMENTS = frozenset({"active", "evaluate", "disabled"})
PROTECTION_DOCS = "https://docs.github.com/rest/branches/branch-protection#get-branch-protection"


@dataclass
class BranchProtection:
    """Classic protection of one branch. ``required_approvals`` None: reviews not required;
    ``required_checks`` None: status checks not required."""

    repo: Repo
    branch: str
    required_approvals: int | None = 1
    dismiss_stale_reviews: bool = False
    require_code_owner_reviews: bool = False
    require_last_push_approval: bool = False
    required_checks: list[str] | None = None
    strict: bool = False
    enforce_admins: bool = False
    required_conversation_resolution: bool = False


@dataclass
class Ruleset:
    """A repository (or organization) ruleset targeting branches."""

    repo: Repo
    id: int
    name: str
    enforcement: str
    include: list[str]
    exclude: list[str]
    rules: list[dict[str, Any]] = field(default_factory=list)  # {"type", "parameters"?}
    source_type: str = "Repository"
    source: str = ""

    def applies_to(self, branch: str) -> bool:
        def matches(pattern: str) -> bool:
            if pattern == "~ALL":
                return True
            if pattern == "~DEFAULT_BRANCH":
                return branch == self.repo.default_branch
            full = pattern if pattern.startswith("refs/") else f"refs/heads/{pattern}"
            return fnmatch.fnmatchcase(f"refs/heads/{branch}", full)

        return any(matches(p) for p in self.include) and not any(matches(p) for p in self.exclude)


def pull_request_rule(
    required_approvals: int,
    *,
    dismiss_stale_reviews_on_push: bool = False,
    require_code_owner_review: bool = False,
    require_last_push_approval: bool = False,
    required_review_thread_resolution: bool = False,
) -> dict[str, Any]:
    """A ``pull_request`` rule with every parameter GitHub sends."""
    return {
        "type": "pull_request",
        "parameters": {
            "allowed_merge_methods": ["merge", "squash", "rebase"],
            "dismiss_stale_reviews_on_push": dismiss_stale_reviews_on_push,
            "require_code_owner_review": require_code_owner_review,
            "require_last_push_approval": require_last_push_approval,
            "required_approving_review_count": required_approvals,
            "required_review_thread_resolution": required_review_thread_resolution,
        },
    }


def status_checks_rule(contexts: Iterable[str], *, strict: bool = False) -> dict[str, Any]:
    """A ``required_status_checks`` rule."""
    return {
        "type": "required_status_checks",
        "parameters": {
            "do_not_enforce_on_create": False,
            "required_status_checks": [{"context": c} for c in contexts],
            "strict_required_status_checks_policy": strict,
        },
    }


class ProtectionSim(SimCore):
    """The protection helpers of :class:`ghsim.sim.GitHubSim` (one of its base classes)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._protections: dict[tuple[str, str], BranchProtection] = {}
        self._rulesets: list[Ruleset] = []
        self._admins: dict[str, set[int]] = {}  # repo key -> user ids with admin rights
        self._ruleset_ids = itertools.count(9001)

    # == scenario helpers ======================================================================

    def protect_branch(
        self,
        repo: str,
        branch: str,
        *,
        required_approvals: int | None = 1,
        dismiss_stale_reviews: bool = False,
        require_code_owner_reviews: bool = False,
        require_last_push_approval: bool = False,
        required_checks: Sequence[str] | None = None,
        strict: bool = False,
        enforce_admins: bool = False,
        required_conversation_resolution: bool = False,
    ) -> BranchProtection:
        """Classic protection of an existing ``branch`` (replaces an earlier one).

        ``required_approvals`` 0-6 (GitHub's range), or None for no required reviews;
        ``required_checks`` the status check contexts that must pass (None: not required).
        """
        with self.lock:
            target = self.repo(repo)
            if self.git.rev_parse(target.path, f"refs/heads/{branch}") is None:
                raise GhsimError(f"{repo} has no branch {branch}")
            if required_approvals is not None and not 0 <= required_approvals <= 6:
                raise GhsimError("required_approvals is 0-6 for classic protection")
            made = BranchProtection(
                target,
                branch,
                required_approvals,
                dismiss_stale_reviews,
                require_code_owner_reviews,
                require_last_push_approval,
                None if required_checks is None else list(required_checks),
                strict,
                enforce_admins,
                required_conversation_resolution,
            )
            self._protections[(target.key, branch)] = made
            return made

    def unprotect_branch(self, repo: str, branch: str) -> None:
        with self.lock:
            self._protections.pop((self.repo(repo).key, branch), None)

    def add_ruleset(
        self,
        repo: str,
        name: str,
        *,
        include: Sequence[str] = ("~DEFAULT_BRANCH",),
        exclude: Sequence[str] = (),
        enforcement: str = "active",
        required_approvals: int | None = None,
        dismiss_stale_reviews_on_push: bool = False,
        require_last_push_approval: bool = False,
        required_checks: Sequence[str] | None = None,
        strict: bool = False,
        rules: Sequence[dict[str, Any]] = (),
        source_type: str = "Repository",
        source: str | None = None,
    ) -> Ruleset:
        """A branch ruleset: a ``pull_request`` rule when ``required_approvals`` is given
        (0-10), a ``required_status_checks`` rule when ``required_checks`` is, plus any raw
        ``rules`` (``{"type": "deletion"}``, ...). ``include``/``exclude`` are ref-name
        patterns (``~DEFAULT_BRANCH``, ``~ALL``, ``refs/heads/release/*`` or a bare branch
        pattern); only ``active`` rulesets are served by the rules endpoint."""
        with self.lock:
            target = self.repo(repo)
            if enforcement not in ENFORCEMENTS:
                raise GhsimError(f"enforcement must be one of {sorted(ENFORCEMENTS)}")
            made_rules = [dict(rule) for rule in rules]
            if required_approvals is not None:
                if not 0 <= required_approvals <= 10:
                    raise GhsimError("required_approvals is 0-10 for a ruleset")
                rule = pull_request_rule(
                    required_approvals,
                    dismiss_stale_reviews_on_push=dismiss_stale_reviews_on_push,
                    require_last_push_approval=require_last_push_approval,
                )
                made_rules.append(rule)
            if required_checks is not None:
                made_rules.append(status_checks_rule(required_checks, strict=strict))
            made = Ruleset(
                target,
                next(self._ruleset_ids),
                name,
                enforcement,
                list(include),
                list(exclude),
                made_rules,
                source_type,
                source or target.full_name,
            )
            self._rulesets.append(made)
            return made

    def grant_admin(self, repo: str, user: Author) -> User:
        """Give ``user`` admin rights on ``repo`` (the owner always has them)."""
        with self.lock:
            target = self.repo(repo)
            account = self._author(user, target.owner)
            self._admins.setdefault(target.key, set()).add(account.id)
            return account

    # == lookups (read by the routes) =========================================================

    def is_admin(self, user: User | None, repo: Repo) -> bool:
        if user is None:
            return False
        return user.id == repo.owner.id or user.id in self._admins.get(repo.key, set())

    def protection_of(self, repo: Repo, branch: str) -> BranchProtection | None:
        return self._protections.get((repo.key, branch))

    def rules_for(self, repo: Repo, branch: str) -> list[dict[str, Any]]:
        """The active rules applying to ``branch``, each with its ruleset's details."""
        out = []
        for ruleset in self._rulesets:
            if ruleset.repo is not repo or ruleset.enforcement != "active":
                continue
            if not ruleset.applies_to(branch):
                continue
            for rule in ruleset.rules:
                out.append(
                    {
                        **rule,
                        "ruleset_source_type": ruleset.source_type,
                        "ruleset_source": ruleset.source,
                        "ruleset_id": ruleset.id,
                    }
                )
        return out

    def dismisses_stale_reviews(self, repo: Repo, branch: str) -> bool:
        classic = self.protection_of(repo, branch)
        if classic is not None and classic.dismiss_stale_reviews:
            return True
        return any(
            rule.get("type") == "pull_request"
            and rule.get("parameters", {}).get("dismiss_stale_reviews_on_push") is True
            for rule in self.rules_for(repo, branch)
        )

    def _dismiss_stale_approvals(self, pr: Pull) -> None:
        """On a push: approvals of an older head are dismissed when the base says so."""
        if not self.dismisses_stale_reviews(pr.repo, pr.base_ref):
            return
        for review in self._reviews:
            if (
                review.repo is pr.repo
                and review.pull_number == pr.number
                and review.state == "APPROVED"
                and review.commit_id != pr.head_sha
            ):
                review.state = "DISMISSED"


def protection_json(base_url: str, p: BranchProtection) -> dict[str, Any]:
    """``GET .../branches/{branch}/protection`` as GitHub answers it: the review and status
    check sections appear only when enabled."""
    url = f"{base_url}/repos/{p.repo.full_name}/branches/{p.branch}/protection"
    out: dict[str, Any] = {"url": url}
    if p.required_checks is not None:
        out["required_status_checks"] = {
            "url": f"{url}/required_status_checks",
            "strict": p.strict,
            "contexts": list(p.required_checks),
            "contexts_url": f"{url}/required_status_checks/contexts",
            "checks": [{"context": c, "app_id": None} for c in p.required_checks],
        }
    if p.required_approvals is not None:
        out["required_pull_request_reviews"] = {
            "url": f"{url}/required_pull_request_reviews",
            "dismiss_stale_reviews": p.dismiss_stale_reviews,
            "require_code_owner_reviews": p.require_code_owner_reviews,
            "required_approving_review_count": p.required_approvals,
            "require_last_push_approval": p.require_last_push_approval,
        }
    out["required_signatures"] = {"url": f"{url}/required_signatures", "enabled": False}
    out["enforce_admins"] = {"url": f"{url}/enforce_admins", "enabled": p.enforce_admins}
    for flag in ("required_linear_history", "allow_force_pushes", "allow_deletions"):
        out[flag] = {"enabled": False}
    out["block_creations"] = {"enabled": False}
    out["required_conversation_resolution"] = {"enabled": p.required_conversation_resolution}
    out["lock_branch"] = {"enabled": False}
    out["allow_fork_syncing"] = {"enabled": False}
    return out
