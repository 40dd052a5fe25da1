"""`li schedule events`, `li schedule runs --pr`, and `li schedule health` exit codes."""

from __future__ import annotations

from ghsim import GitHubSim
from tests.engine.test_cli import Li, one_error_line
from tests.engine.test_cli_poll import REPO, add_watch, li, sim

__all__ = ["li", "sim"]


def poll(li: Li) -> None:
    li("schedule", "trigger", "watch")
    li("engine", "run", "--once")


def test_events_and_runs_filter_on_a_pull_request(li: Li, sim: GitHubSim) -> None:
    add_watch(li)
    sim.advance(2)
    draft = sim.open_pr(REPO, "wip", {"w.py": "1\n"}, draft=True)
    ready = sim.open_pr(REPO, "ready", {"r.py": "1\n"})
    poll(li)
    events = li.json("schedule", "events", "watch", "--pr", str(draft.number))
    assert [(e["decision"], e["detail"], e["head_sha"]) for e in events] == [  # type: ignore[union-attr,index]
        ("excluded:draft", "draft", draft.head_sha)
    ]
    [fired] = li.json("schedule", "events", "watch", "--pr", str(ready.number), "--since", "1h")  # type: ignore[misc]
    assert fired["decision"] == "fired"
    [run] = li.json("schedule", "runs", "watch", "--pr", str(ready.number))  # type: ignore[misc]
    assert run["id"] == fired["run_id"] and run["pr_number"] == ready.number
    assert li.json("schedule", "runs", "watch", "--pr", str(draft.number)) == []
    _, out, _ = li("schedule", "events", "watch")
    assert "excluded:draft" in out and "fired" in out
    _, _, err = li("schedule", "events", "nope", code=3)
    one_error_line(err, "schedule_not_found")
    _, _, err = li("schedule", "events", "watch", "--since", "soon", code=2)
    one_error_line(err, "invalid_duration")


def test_health_exits_20_when_a_schedule_goes_blind_and_0_when_healthy(
    li: Li, sim: GitHubSim
) -> None:
    add_watch(li)
    poll(li)
    code, out, _ = li("schedule", "health")
    assert code == 0 and "healthy" in out
    li.env["GITHUB_TOKEN"] = "revoked-token"
    for _ in range(3):
        poll(li)
    code, out, _ = li("schedule", "health", code=20)
    assert "blind" in out
    code, out, _ = li("schedule", "health", "watch", "--json", code=20)
    assert '"state": "blind"' in out
