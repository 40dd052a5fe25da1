"""The Checks API's writes (issue 30): ``POST /repos/{o}/{r}/check-runs`` and
``PATCH /repos/{o}/{r}/check-runs/{check_run_id}``, with GitHub's documented rules.

- **Only a GitHub App** may create or update a check run: "To create a check run, you
  must use a GitHub App" (docs: rest/checks/runs#create-a-check-run); "OAuth apps and
  personal access tokens (classic) cannot use this endpoint" (the OpenAPI description of
  ``checks/update``). Anything but an installation token is 403 "You must authenticate via
  a GitHub App." (the answer users report: EnricoMi/publish-unit-test-result-action#31,
  actions/github-script#118, github/rest-api-description#234).
- ``name`` and ``head_sha`` are required on create. ``status`` is ``queued`` (default),
  ``in_progress`` or ``completed``; ``conclusion`` one of action_required, cancelled,
  failure, neutral, success, skipped, stale, timed_out, "Required if you provide
  ``completed_at`` or a ``status`` of ``completed``"; "Providing ``conclusion`` will
  automatically set the ``status`` parameter to ``completed``. You cannot change a check run
  conclusion to ``stale``, only GitHub can set this." (``checks/create`` request body).
- ``output`` needs ``title`` and ``summary`` on create, ``summary`` on update; ``summary``
  and ``text`` have "Maximum length: 65535 characters". Too long is 422 "Invalid
  request.\\n\\nOnly 65535 characters are allowed; N were supplied." (reviewdog/action-eslint#139,
  reviewdog/action-rubocop#67).
- ``output.annotations``: "The Checks API limits the number of annotations to a maximum of
  50 per API request. To create more than 50 annotations, you have to make multiple
  requests to the Update a check run endpoint. Each time you update the check run,
  annotations are appended" (the request body's description). Each needs ``path``,
  ``start_line``, ``end_line``, ``annotation_level`` (notice, warning, failure) and
  ``message``; ``start_column``/``end_column`` only when ``start_line`` equals ``end_line``.

The wording of the other 422 answers ("Invalid request." then what is wrong) follows the
one GitHub sends for the length limit; the exact text for each is not documented.
A PATCH of another App's check run is 403, the answer ``checks/rerequest-run`` documents
for a run that "doesn't belong to the authenticated GitHub App".
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ghsim.apps import App
from ghsim.model import CheckRun, Repo

CREATE_DOC = "https://docs.github.com/rest/checks/runs#create-a-check-run"
UPDATE_DOC = "https://docs.github.com/rest/checks/runs#update-a-check-run"
NOT_AN_APP = "You must authenticate via a GitHub App."
STATUSES = ("queued", "in_progress", "completed")
CONCLUSIONS = (
    "action_required", "cancelled", "failure", "neutral", "success", "skipped", "stale",
    "timed_out",
)  # fmt: skip
LEVELS = ("notice", "warning", "failure")
MAX_TEXT = 65535
MAX_ANNOTATIONS = 50
MAX_TITLE = 255
ANNOTATION_KEYS = ("path", "start_line", "end_line", "annotation_level", "message")


class CheckRunRefused(Exception):
    """GitHub's answer to a check-run write it refuses: ``status`` and ``message``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def invalid(what: str) -> CheckRunRefused:
    return CheckRunRefused(422, f"Invalid request.\n\n{what}")


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise invalid(f'"{name}" is not a string.')
    if len(value) > MAX_TEXT:
        raise invalid(f"Only {MAX_TEXT} characters are allowed; {len(value)} were supplied.")
    return value


def _line(item: dict[str, Any], key: str) -> int:
    value = item.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise invalid(f'"{key}" is not a positive integer.')
    return value


def annotation(item: Any) -> dict[str, Any]:
    """One ``output.annotations`` item, checked (module doc)."""
    if not isinstance(item, dict):
        raise invalid("An annotation is not an object.")
    for key in ANNOTATION_KEYS:
        if key not in item:
            raise invalid(f'"{key}" wasn\'t supplied.')
    if not isinstance(item["path"], str) or not item["path"]:
        raise invalid('"path" is not a string.')
    start, end = _line(item, "start_line"), _line(item, "end_line")
    if end < start:
        raise invalid('"end_line" is before "start_line".')
    if item["annotation_level"] not in LEVELS:
        raise invalid(f'"annotation_level" is not a member of {list(LEVELS)}.')
    made = {
        "path": item["path"], "start_line": start, "end_line": end,
        "annotation_level": item["annotation_level"], "message": _text(item["message"], "message"),
    }  # fmt: skip
    if "title" in item:
        if not isinstance(item["title"], str) or len(item["title"]) > MAX_TITLE:
            raise invalid(f'"title" is not a string of at most {MAX_TITLE} characters.')
        made["title"] = item["title"]
    for key in ("start_column", "end_column"):
        if key in item:
            if start != end:
                raise invalid(f'"{key}" is allowed only when start_line equals end_line.')
            made[key] = _line(item, key)
    return made


def output(value: Any, creating: bool) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """The ``output`` object: its texts and its (at most 50) annotations."""
    if not isinstance(value, dict):
        raise invalid('"output" is not an object.')
    needed = ("title", "summary") if creating else ("summary",)
    for key in needed:
        if key not in value:
            raise invalid(f'"{key}" wasn\'t supplied.')
    texts = {k: _text(value[k], k) for k in ("title", "summary", "text") if k in value}
    notes = value.get("annotations", [])
    if not isinstance(notes, list):
        raise invalid('"annotations" is not an array.')
    if len(notes) > MAX_ANNOTATIONS:
        raise invalid(f"Only {MAX_ANNOTATIONS} annotations are allowed per request.")
    return texts, [annotation(n) for n in notes]


def status_and_conclusion(body: dict[str, Any], default: str) -> tuple[str, str | None]:
    """The run's status and conclusion after ``body`` (module doc)."""
    status, conclusion = body.get("status", default), body.get("conclusion")
    if status not in STATUSES:
        raise invalid(f'"status" is not a member of {list(STATUSES)}.')
    if conclusion is not None:
        if conclusion not in CONCLUSIONS:
            raise invalid(f'"conclusion" is not a member of {list(CONCLUSIONS)}.')
        if conclusion == "stale":
            raise invalid("You cannot change a check run conclusion to stale.")
        return "completed", conclusion  # a conclusion sets the status to completed
    if status == "completed" or "completed_at" in body:
        raise invalid('"conclusion" wasn\'t supplied.')
    return status, None


def apply(run: CheckRun, body: dict[str, Any], now: datetime, creating: bool) -> None:
    """``body``'s fields on ``run`` (already checked to be a dict)."""
    if creating or "status" in body or "conclusion" in body or "completed_at" in body:
        status, conclusion = status_and_conclusion(body, "queued")
    else:  # an update that leaves the status alone (adds annotations, say)
        status, conclusion = run.status, run.conclusion
    if "output" in body:
        texts, notes = output(body["output"], creating)
    else:
        texts, notes = {}, []
    if "external_id" in body and not isinstance(body["external_id"], str):
        raise invalid('"external_id" is not a string.')
    if "name" in body and (not isinstance(body["name"], str) or not body["name"]):
        raise invalid('"name" is not a string.')
    run.external_id = body.get("external_id", run.external_id)
    run.name = body.get("name", run.name)
    run.status, run.conclusion = status, conclusion
    if run.status != "completed":
        run.completed_at = None
    elif run.completed_at is None:
        run.completed_at = now
    run.output.update(texts)
    run.annotations.extend(notes)


def create(repo: Repo, app: App, run_id: int, body: Any, sha: str, now: datetime) -> CheckRun:
    """A new run of ``app`` on ``sha`` from ``body`` (``name`` checked by the caller)."""
    run = CheckRun(repo, run_id, sha, body["name"], "queued", None, now, None, app.id)
    apply(run, body, now, creating=True)
    return run
