"""The merge gate (issue 27, D85): a commit status on every head ``kdev review-pr``
decides, so branch protection can require kdev's verdict.

    outcome                          state     description
    reviewed / carried_forward       success   approved by kdev          (APPROVE)
                                     failure   changes requested by kdev (anything else)
    a leg starts                     pending   review running
    deferred_budget                  pending   review deferred (BUDGET: COUNT/LIMIT)
    skipped_all_excluded             failure   nothing reviewed: every path excluded (D87)
    a KdevError out of review_pr     error     kdev failed: REASON (the reason code only)
    an error that is no KdevError    error     kdev failed: internal_error
    other skipped_*                  (none)

A carried-forward verdict (a base merge, an update-branch cascade: the same diff at a
new head) sets the same state on the new head, without a leg. The descriptions hang on
the outcome and the verdict only, so a rerun of a head writes nothing: before posting,
:class:`StatusGate` reads the head's combined status and posts only when the newest
status of its context differs in state or description (GitHub keeps at most 1000
statuses per sha and context).

:class:`MergeGate` is the one interface the workflow sees; :class:`StatusGate` sets
commit statuses with kdev's token; when kdev is a GitHub App the gate is a check run
instead (:class:`wrapper.review.check_gate.CheckRunGate`, D109), which also shows the
round's summary and findings (:mod:`wrapper.review.gate_detail`). A gate that cannot be
set (a GitHub failure, a description holding a secret) is logged at WARNING with its
reason code and shown in the run's report (``merge_gate``): it never turns a decided
review into a failure, and never replaces the error of a run that failed. The gate is
off unless ``merge_gate.enabled`` (:mod:`wrapper.config_gate`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal, Protocol

from engine.errors import LiError
from engine.github import GitHubClient, GitHubError
from engine.github.appconfig import app_config_from
from wrapper.config import KdevConfig
from wrapper.config_gate import MergeGateSettings
from wrapper.errors import KdevError, Outcome
from wrapper.gh_checks import list_check_runs
from wrapper.gh_reviews import MAX_STATUS_DESCRIPTION, combined_status, create_status
from wrapper.leakscan import known_secrets, refuse_leak, withhold_leak
from wrapper.post import BodyGate
from wrapper.review.check_gate import AS_CHECK, CheckRunGate, GateDetail, external_id
from wrapper.review.context import ReviewContext, ReviewReport, ReviewRequest
from wrapper.review.gate_detail import round_detail

GateState = Literal["success", "failure", "pending", "error"]

STATUS_READ_FAILED = "merge_gate_read_failed"
STATUS_POST_FAILED = "merge_gate_post_failed"
APPROVED = "approved by kdev"
CHANGES_REQUESTED = "changes requested by kdev"
RUNNING = "review running"
NOTHING_REVIEWED = "nothing reviewed: every path excluded"

log = logging.getLogger("kdev.review")


class MergeGate(Protocol):
    """Where kdev's decision on one head of one repository is shown to branch
    protection (a commit status context now; a check run later)."""

    @property
    def name(self) -> str:
        """The context (or check name) branch protection requires."""
        ...

    @property
    def kind(self) -> str:
        """``status`` or ``check run``: what branch protection is to require."""
        ...

    def set(
        self, head_sha: str, state: GateState, description: str, detail: GateDetail | None = None
    ) -> bool:
        """Show ``state`` with ``description`` on ``head_sha`` (and ``detail``, the
        round's summary and findings, where the gate has room for them). False when the
        newest one there already says exactly that (nothing is written); a KdevError
        (with its reason code) when it cannot be read or written."""
        ...


class StatusGate:
    """:class:`MergeGate` as commit statuses of ``context`` on ``repo``."""

    kind = "status"

    def __init__(
        self, github: GitHubClient, repo: str, context: str, secrets: Sequence[str]
    ) -> None:
        self.github = github
        self.repo = repo
        self.name = context  # the status's context
        self.secrets = list(secrets)

    def set(
        self, head_sha: str, state: GateState, description: str, detail: GateDetail | None = None
    ) -> bool:
        del detail  # a status has a description only
        refuse_leak(description, self.secrets, f"the {self.name} status description")
        where = f"the {self.name} status of {head_sha[:12]} in {self.repo}"
        try:
            latest = combined_status(self.github, self.repo, head_sha).latest(self.name)
        except GitHubError as exc:
            raise KdevError(
                f"cannot read {where}: {exc.message} [{exc.reason}]", STATUS_READ_FAILED
            ) from None
        if latest == (state, description):
            return False
        try:
            create_status(
                self.github,
                self.repo,
                head_sha,
                state,
                context=self.name,
                description=description,
            )
        except GitHubError as exc:
            raise KdevError(
                f"cannot set {where}: {exc.message} [{exc.reason}]", STATUS_POST_FAILED
            ) from None
        return True


def gate_settings(config: KdevConfig, repo: str) -> MergeGateSettings:
    """The ``merge_gate`` of ``repo``: its ``repositories`` block's, else the global one."""
    own = config.repositories.get(repo.lower())
    if own is not None and own.merge_gate is not None:
        return own.merge_gate
    return config.merge_gate


def gate_is_check(environ: Mapping[str, str]) -> bool:
    """Whether the gate is a check run: kdev's identity is a GitHub App (D109)."""
    return app_config_from(environ) is not None


def gate_at(
    github: GitHubClient, repo: str, head: str, context: str, check: bool = False
) -> dict[str, str | None]:
    """The gate at ``head`` as ``kdev pr-status`` and the sweep's digest show it: the
    newest status of ``context`` or, with ``check``, kdev's check run of that name
    (its conclusion, else its status; its title). State and description None: none.
    GitHub errors propagate."""
    if check:
        runs = list_check_runs(github, repo, head, context)
        mine = [r for r in runs if r.external_id == external_id(head)]
        run = mine[0] if mine else None
        state = None if run is None else (run.conclusion or run.status)
        title = None if run is None else run.title
        return {"context": context, "kind": "check run", "state": state, "description": title}
    latest = combined_status(github, repo, head).latest(context)
    state, description = latest if latest is not None else (None, None)
    return {"context": context, "state": state, "description": description}


def shown_for(report: ReviewReport) -> tuple[GateState, str] | None:
    """The state and description of a decided run's outcome (the module's table)."""
    if report.outcome in (Outcome.REVIEWED, Outcome.CARRIED_FORWARD):
        if report.verdict == "APPROVE":
            return "success", APPROVED
        return "failure", CHANGES_REQUESTED  # fail closed: only APPROVE is green
    if report.outcome is Outcome.DEFERRED_BUDGET:
        return "pending", f"review deferred ({report.detail})"
    if report.outcome is Outcome.SKIPPED_ALL_EXCLUDED:
        return "failure", NOTHING_REVIEWED  # never green for a diff nobody read
    return None


@dataclass
class GateRun:
    """The gate of one ``review_pr`` run: the head it is aimed at (known once step 1 has
    resolved it) and the gate, or None when the gate is off; ``detail_of`` the summary
    and findings a decided report shows (a check-run gate's, D109)."""

    gate: MergeGate | None
    head_sha: str
    secrets: Sequence[str] = ()  # withheld from what is logged
    detail_of: Callable[[ReviewReport], GateDetail | None] | None = None

    def aim(self, head_sha: str) -> None:
        """The head the run decides (resolved in step 1)."""
        self.head_sha = head_sha

    def running(self) -> None:
        """A leg starts: ``pending``, ``review running``."""
        self._set("pending", RUNNING)

    def decided(self, report: ReviewReport) -> ReviewReport:
        """``report`` with what its outcome set on the gate (``merge_gate``), if any."""
        shown = shown_for(report)
        if shown is None:
            return report
        self.head_sha = report.head_sha
        detail = None
        if self.gate is not None and self.detail_of is not None:
            detail = self.detail_of(report)
        result = self._set(*shown, detail)
        return report if result is None else replace(report, merge_gate=result)

    def failed(self, reason: str) -> None:
        """The run fails with ``reason``: ``error``. Never raises (the run's own error is
        what its caller must see)."""
        try:
            self._set("error", f"kdev failed: {reason}")
        except Exception as problem:
            log.warning("the merge gate failed: %s [%s]", type(problem).__name__, reason)

    def _set(
        self, state: GateState, description: str, detail: GateDetail | None = None
    ) -> dict[str, str] | None:
        if self.gate is None:
            return None
        if not self.head_sha:
            log.warning("the merge gate is not set: the run ended before its head was known")
            return None
        description = description[:MAX_STATUS_DESCRIPTION]
        result = {"context": self.gate.name, "state": state, "description": description}
        if self.gate.kind == "check run":
            status, conclusion = AS_CHECK[state]
            result = {**result, "kind": "check run", "state": conclusion or status}
        try:
            changed = self.gate.set(self.head_sha, state, description, detail)
        except LiError as exc:
            shown = withhold_leak(KdevError(exc.message, exc.reason), self.secrets)
            log.warning(
                "the %s %s of %s was not set: %s [%s]",
                self.gate.name,
                self.gate.kind,
                self.head_sha[:12],
                shown.message,
                shown.reason,
            )
            return {**result, "action": "failed", "reason": shown.reason}
        return {**result, "action": "set" if changed else "unchanged"}


def open_gate(ctx: ReviewContext, req: ReviewRequest) -> GateRun:
    """The gate of a run for ``req``: a :class:`CheckRunGate` when kdev is a GitHub App,
    else a :class:`StatusGate`; none when it is off."""
    settings = gate_settings(ctx.config, req.repo)
    if not settings.enabled:
        return GateRun(None, req.head_sha)
    secrets = known_secrets(ctx.config, ctx.environ)
    if gate_is_check(ctx.environ):
        what = f"the {settings.context} check run for {req.repo} #{req.pr}"
        body = BodyGate(ctx.config, ctx.environ, what)
        check = CheckRunGate(ctx.github, req.repo, settings.context, body)
        return GateRun(check, req.head_sha, secrets, lambda r: round_detail(ctx, req, r))
    gate = StatusGate(ctx.github, req.repo, settings.context, secrets)
    return GateRun(gate, req.head_sha, secrets)
