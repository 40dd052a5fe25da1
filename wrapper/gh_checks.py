"""The Checks API calls kdev makes (issue 30, D109): a check run's list, create, update.

Only a GitHub App's installation token may create or update a check run ("To create a
check run, you must use a GitHub App", docs.github.com/rest/checks/runs#create-a-check-run;
a token gets 403 "You must authenticate via a GitHub App."). ``output.summary`` and
``output.text`` take at most 65535 characters; ``output.annotations`` at most 50 per
request, and each update appends its annotations to the run's (the request body's
description in GitHub's OpenAPI description, ``checks/create`` and ``checks/update``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from engine.errors import InvalidInput
from engine.github import GitHubClient, validate_repo_name
from wrapper.gh import check_sha

MAX_SUMMARY_CHARS = 65535
MAX_ANNOTATIONS_PER_REQUEST = 50


@dataclass(frozen=True)
class CheckRunSeen:
    """One check run as the list shows it (the fields kdev compares)."""

    id: int
    name: str
    status: str
    conclusion: str | None
    external_id: str
    title: str | None
    annotations_count: int
    app_slug: str | None


def _seen(item: Any) -> CheckRunSeen | None:
    if not isinstance(item, dict) or not isinstance(item.get("id"), int):
        return None
    output: dict[str, Any] = item["output"] if isinstance(item.get("output"), dict) else {}
    app: dict[str, Any] = item["app"] if isinstance(item.get("app"), dict) else {}
    count = output.get("annotations_count")
    return CheckRunSeen(
        id=item["id"],
        name=str(item.get("name", "")),
        status=str(item.get("status", "")),
        conclusion=item.get("conclusion") if isinstance(item.get("conclusion"), str) else None,
        external_id=item.get("external_id") or "",
        title=output.get("title") if isinstance(output.get("title"), str) else None,
        annotations_count=count if isinstance(count, int) else 0,
        app_slug=app.get("slug") if isinstance(app.get("slug"), str) else None,
    )


def list_check_runs(client: GitHubClient, repo: str, sha: str, name: str) -> list[CheckRunSeen]:
    """The newest check runs named ``name`` on ``sha`` (GitHub's ``filter=latest``), newest
    first. GitHub errors propagate."""
    validate_repo_name(repo)
    check_sha(sha, "a check run is on")
    path = f"repos/{repo}/commits/{quote(sha)}/check-runs"
    params: dict[str, str | int] = {"check_name": name, "per_page": 100}
    body = client.request("GET", path, params=params, expect=dict)
    runs = body.get("check_runs")
    found = [_seen(item) for item in runs] if isinstance(runs, list) else []
    return [run for run in found if run is not None]


def create_check_run(client: GitHubClient, repo: str, payload: dict[str, Any]) -> CheckRunSeen:
    """``POST /repos/{repo}/check-runs`` with ``payload``; the run GitHub made."""
    validate_repo_name(repo)
    return _made(client.request("POST", f"repos/{repo}/check-runs", body=payload, expect=dict))


def update_check_run(
    client: GitHubClient, repo: str, run_id: int, payload: dict[str, Any]
) -> CheckRunSeen:
    """``PATCH /repos/{repo}/check-runs/{run_id}`` with ``payload``; the run as it is now."""
    validate_repo_name(repo)
    path = f"repos/{repo}/check-runs/{int(run_id)}"
    return _made(client.request("PATCH", path, body=payload, expect=dict))


def _made(body: dict[str, Any]) -> CheckRunSeen:
    seen = _seen(body)
    if seen is None:
        raise InvalidInput("GitHub answered a check run without an id", "malformed_payload")
    return seen
