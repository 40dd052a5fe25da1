"""ghsim's Checks API writes (issue 30): only an App creates check runs, GitHub's rules on
status, conclusion, output and annotations, and what the list shows of them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ghsim import GitHubSim
from ghsim.checkruns import NOT_AN_APP
from tests.appkit import install_app, key_pair

REPO = "octo/widgets"
TOKEN = "ghp_plain_user_token"


class Checks:
    def __init__(self, sim: GitHubSim, client: httpx.Client, token: str, head: str) -> None:
        self.sim, self.client, self.token, self.head = sim, client, token, head

    def post(self, body: dict[str, Any], token: str | None = None) -> httpx.Response:
        headers = {"Authorization": f"Bearer {token or self.token}"}
        return self.client.post(f"/repos/{REPO}/check-runs", json=body, headers=headers)

    def patch(self, run: int, body: dict[str, Any], token: str | None = None) -> httpx.Response:
        headers = {"Authorization": f"Bearer {token or self.token}"}
        return self.client.patch(f"/repos/{REPO}/check-runs/{run}", json=body, headers=headers)


@pytest.fixture
def checks(tmp_path: Path) -> Iterator[Checks]:
    with GitHubSim() as sim, httpx.Client(base_url=sim.url) as client:
        sim.add_token(TOKEN, ("maintainer", 7))
        sim.create_repo(REPO, files={"a.py": "1\n"})
        pr = sim.open_pr(REPO, "f", {"b.py": "2\n"})
        app = install_app(sim, tmp_path)
        token, _ = sim.issue_installation_token(app.installation)
        yield Checks(sim, client, token, pr.head_sha)


def note(line: int, level: str = "failure", **more: Any) -> dict[str, Any]:
    return {"path": "b.py", "start_line": line, "end_line": line, "annotation_level": level,
            "message": f"on {line}", **more}  # fmt: skip


def test_a_token_that_is_not_an_apps_gets_403(checks: Checks) -> None:
    answer = checks.post({"name": "c", "head_sha": checks.head}, token=TOKEN)
    assert answer.status_code == 403 and answer.json()["message"] == NOT_AN_APP
    made = checks.post({"name": "c", "head_sha": checks.head}).json()
    assert checks.patch(made["id"], {"status": "in_progress"}, token=TOKEN).status_code == 403


def test_a_run_goes_queued_then_completed_and_annotations_append(checks: Checks) -> None:
    made = checks.post({"name": "kdev/review", "head_sha": checks.head, "external_id": "x"})
    assert made.status_code == 201
    run = made.json()
    assert (run["status"], run["conclusion"], run["external_id"]) == ("queued", None, "x")
    assert run["app"]["slug"] == "kdev-review"
    output = {"title": "t", "summary": "s", "annotations": [note(n) for n in range(1, 51)]}
    assert checks.patch(run["id"], {"output": output}).json()["output"]["annotations_count"] == 50
    more = {"summary": "s2", "annotations": [note(51, "notice")]}
    done = checks.patch(run["id"], {"conclusion": "neutral", "output": more}).json()
    # A conclusion sets the status to completed; a second batch is added, not replaced.
    assert (done["status"], done["conclusion"]) == ("completed", "neutral")
    assert done["output"]["annotations_count"] == 51 and done["output"]["summary"] == "s2"
    listed = checks.client.get(
        f"/repos/{REPO}/commits/{checks.head}/check-runs",
        params={"check_name": "kdev/review"},
        headers={"Authorization": f"Bearer {TOKEN}"},  # anyone may read them
    ).json()
    assert [r["id"] for r in listed["check_runs"]] == [run["id"]]
    assert listed["check_runs"][0]["output"]["annotations_count"] == 51
    by_app = checks.client.get(
        f"/repos/{REPO}/commits/{checks.head}/check-runs",
        params={"app_id": run["app"]["id"] + 1},
        headers={"Authorization": f"Bearer {TOKEN}"},
    ).json()
    assert by_app["total_count"] == 0  # another App's runs only: none


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"name": None}, '"name" wasn\'t supplied'),
        ({"head_sha": None}, '"head_sha" wasn\'t supplied'),
        ({"name": "c", "head_sha": "0" * 40}, "No commit found for SHA"),
        ({"status": "completed"}, '"conclusion" wasn\'t supplied'),
        ({"completed_at": "2026-01-01T00:00:00Z"}, '"conclusion" wasn\'t supplied'),
        ({"status": "waiting"}, '"status" is not a member'),
        ({"conclusion": "error"}, '"conclusion" is not a member'),
        ({"conclusion": "stale"}, "conclusion to stale"),
        ({"output": {"summary": "s"}}, '"title" wasn\'t supplied'),
        ({"output": {"title": "t", "summary": "s" * 65536}}, "Only 65535 characters"),
        ({"output": {"title": "t", "summary": "s", "annotations": [note(1)] * 51}}, "50"),
        ({"output": {"title": "t", "summary": "s", "annotations": [note(1, "error")]}}, "level"),
        (
            {"output": {"title": "t", "summary": "s", "annotations": [{"path": "b.py"}]}},
            '"start_line" wasn\'t supplied',
        ),  # fmt: skip
        (
            {
                "output": {
                    "title": "t",
                    "summary": "s",
                    "annotations": [{**note(1), "end_line": 2, "start_column": 1}],
                }
            },
            "start_column",
        ),  # fmt: skip
    ],
)
def test_an_invalid_request_is_422_and_makes_nothing(
    checks: Checks, body: dict[str, Any], fragment: str
) -> None:
    full = {"name": "c", "head_sha": checks.head, **body}
    answer = checks.post({k: v for k, v in full.items() if v is not None})  # None: left out
    assert answer.status_code == 422, answer.text
    assert fragment.lower() in answer.json()["message"].lower()
    assert checks.sim.check_runs_for(checks.sim.repo(REPO), checks.head) == []


def test_a_bad_update_changes_nothing_and_another_apps_run_is_403(checks: Checks) -> None:
    run = checks.post({"name": "c", "head_sha": checks.head, "status": "in_progress"}).json()
    bad = {"conclusion": "success", "output": {"summary": "s", "annotations": [note(1)] * 51}}
    assert checks.patch(run["id"], bad).status_code == 422
    [kept] = checks.sim.check_runs_for(checks.sim.repo(REPO), checks.head)
    assert (kept.status, kept.conclusion, kept.annotations) == ("in_progress", None, [])
    other = checks.sim.create_app("other-app", key_pair(1).public)
    token, _ = checks.sim.issue_installation_token(checks.sim.install_app(other.id, "octo"))
    assert checks.patch(run["id"], {"conclusion": "success"}, token=token).status_code == 403
    assert checks.patch(999, {"conclusion": "success"}).status_code == 404
