"""Withdrawing a posted roster finding on its thread (the independent validator, D57).

A finding the validator found INVALID (or UNCERTAIN under ``uncertain_action: drop``)
is posted like every finding, then withdrawn where the author sees it:

- a line comment (its own review thread): a **reply** on the thread saying it is
  withdrawn and why (the validator's answer and reason), then the thread **resolved**
  (``resolveReviewThread``);
- a finding that fell back to a PR-level comment (no thread): a **reply** PR comment
  that quotes its id and gives the reason, signed with the same reviewer's
  ``<!-- kdev-agent: NAME -->`` so ``kdev comments --agent NAME`` lists it beside the
  finding, then the finding **hidden** (``minimizeComment``, classifier ``RESOLVED``).

Every reply passes the one posting gate (:func:`wrapper.post.post_gated`: prepared,
secret canary, id recorded). Each step is recorded in the round's findings record right
after it is done (``done``), so a run that fails or dies half-way is finished by the
next run of the pull request, which does only the steps left (:func:`withdraw_pending`).
A step that fails with a KdevError is recorded as the entry's ``error`` and the entry
stays pending; the caller fails the run (``findings_withdraw_incomplete``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from engine.github import GitHubError
from wrapper.authorloop.threads import resolve
from wrapper.errors import KdevError
from wrapper.post import post_gated
from wrapper.review.findings import signature
from wrapper.review.findings_target import PostTarget

log = logging.getLogger("kdev.findings")

WITHDRAW_FAILED = "finding_withdraw_failed"
WITHDRAW_INCOMPLETE = "findings_withdraw_incomplete"
THREAD_STEPS = ("replied", "resolved")
COMMENT_STEPS = ("replied", "hidden")

MINIMIZE_RESOLVED = """
mutation($subjectId: ID!) {
  minimizeComment(input: {subjectId: $subjectId, classifier: RESOLVED}) {
    minimizedComment { isMinimized minimizedReason }
  }
}
""".strip()

Step = Callable[[str, PostTarget, dict[str, Any]], None]


def steps_for(entry: dict[str, Any]) -> tuple[str, ...]:
    """The withdrawal steps of a withdrawn entry: none when it was never posted."""
    if not isinstance(entry.get("id"), int):
        return ()
    return THREAD_STEPS if entry.get("anchored") else COMMENT_STEPS


def pending(entry: dict[str, Any]) -> tuple[str, ...]:
    """The steps of ``entry`` not done yet, in order."""
    done = set(entry.get("done") or ())
    return tuple(step for step in steps_for(entry) if step not in done)


def withdrawal_text(entry: dict[str, Any]) -> str:
    """The reply that withdraws ``entry`` (the gate neutralises it like every body)."""
    answer = str(entry.get("validation") or "UNCERTAIN")
    why = "" if answer == "INVALID" else " (uncertain_action: drop)"
    return (
        f"Withdrawn by the independent validator: {answer}{why}: "
        f"{entry.get('reason') or 'no reason given'}"
    )


def withdraw_step(step: str, target: PostTarget, entry: dict[str, Any]) -> None:
    """Do one withdrawal step of ``entry`` on GitHub (see the module doc)."""
    repo, pr, comment_id = target.repo, target.pr, int(entry["id"])
    if step == "replied":
        _reply(target, entry, comment_id)
    elif step == "resolved":
        resolve(target.github, repo, pr, str(entry["node_id"]))
    elif step == "hidden":
        try:
            data = target.github.graphql(MINIMIZE_RESOLVED, {"subjectId": entry["node_id"]})
            hidden = bool(data["minimizeComment"]["minimizedComment"]["isMinimized"])
        except GitHubError as exc:
            raise KdevError(
                f"cannot hide withdrawn finding {comment_id}: {exc.message} [{exc.reason}]",
                WITHDRAW_FAILED,
            ) from None
        except (KeyError, TypeError) as exc:
            raise KdevError(f"unreadable hide answer: {exc}", WITHDRAW_FAILED) from None
        if not hidden:
            raise KdevError(f"GitHub did not hide comment {comment_id}", WITHDRAW_FAILED)
    else:
        raise KdevError(f"unknown withdrawal step {step!r}", WITHDRAW_FAILED)


def _reply(target: PostTarget, entry: dict[str, Any], comment_id: int) -> None:
    repo, pr = target.repo, target.pr
    if entry.get("anchored"):
        path = f"repos/{repo}/pulls/{pr}/comments/{comment_id}/replies"
        raw, trailer = withdrawal_text(entry), ""
    else:
        path = f"repos/{repo}/issues/{pr}/comments"
        raw = f"> Re: finding comment {comment_id}\n\n{withdrawal_text(entry)}"
        trailer = signature(str(entry.get("agent") or "-"))

    def send(body: str) -> dict[str, Any]:
        try:
            return target.github.post_rest(path, {"body": body})
        except GitHubError as exc:
            raise KdevError(
                f"cannot withdraw finding {comment_id} on {repo} #{pr}: "
                f"{exc.message} [{exc.reason}]",
                WITHDRAW_FAILED,
            ) from None

    post_gated(
        target.ledger,
        target.config,
        target.environ,
        repo,
        pr,
        raw,
        "withdrawal",
        send,
        WITHDRAW_FAILED,
        trailer,
    )


def withdraw_entries(
    target: PostTarget,
    entries: list[dict[str, Any]],
    save: Callable[[], None],
    step: Step = withdraw_step,
) -> int:
    """Do every pending step of ``entries`` in order, calling ``save`` after each one
    (recorded in the entry's ``done``); returns how many entries are still pending. A
    KdevError stops that entry (kept as its ``error``); anything else propagates."""
    left = 0
    for entry in entries:
        for name in pending(entry):
            try:
                step(name, target, entry)
            except KdevError as exc:
                log.error(
                    "finding %s of %s not withdrawn (%s): %s [%s]",
                    entry.get("id"),
                    entry.get("agent"),
                    name,
                    exc.message,
                    exc.reason,
                )
                entry["error"] = exc.reason
                save()
                break
            entry["done"] = [*(entry.get("done") or ()), name]
            entry.pop("error", None)
            save()
        left += bool(pending(entry))
    return left
