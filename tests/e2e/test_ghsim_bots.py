"""ghsim's scripted review bots (ghsim/bots.py): trigger comments posted over HTTP get the
bots' scripted answers, in order, as the bots' accounts, after the trigger; silence, no
loops between bots, and the same scripts set up through ``/_ghsim/rpc``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from ghsim import GhsimError, GitHubSim
from ghsim.bots import BotReply

REPO = "octo/widgets"
TOKEN = "ghp_SimulatedBotsToken0123456789"
T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
CURSOR = ("cursor[bot]", 9002)
GEMINI = ("gemini-code-assist[bot]", 9001)
FINDING = "### Bug: division by zero\n\n**High Severity**\n\n`count` may be 0."


@pytest.fixture
def sim() -> Iterator[GitHubSim]:
    with GitHubSim() as server:
        server.set_time(T0)
        server.add_token(TOKEN, ("author", 77))
        server.create_repo(REPO)
        server.open_pr(REPO, "feature", {"calc.py": "a = 1\nb = 2\n"})
        yield server


@pytest.fixture
def client(sim: GitHubSim) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=sim.url, headers={"Authorization": f"Bearer {TOKEN}"}) as c:
        yield c


def post_trigger(client: httpx.Client, body: str) -> dict[str, Any]:
    answer = client.post(f"/repos/{REPO}/issues/1/comments", json={"body": body})
    assert answer.status_code == 201, answer.text
    created: dict[str, Any] = answer.json()
    return created


def by(client: httpx.Client, login: str) -> list[dict[str, Any]]:
    """The PR's comments of both kinds by ``login``, oldest first, as the API serves them."""
    issue = client.get(f"/repos/{REPO}/issues/1/comments").json()
    review = client.get(f"/repos/{REPO}/pulls/1/comments").json()
    found = [c for c in issue + review if c["user"]["login"] == login]
    return sorted(found, key=lambda c: c["id"])


def test_each_trigger_over_http_consumes_the_next_scripted_answer(
    sim: GitHubSim, client: httpx.Client
) -> None:
    bot = sim.add_review_bot(
        REPO,
        *CURSOR,
        trigger="@cursor review",
        answers=[
            {"body": FINDING, "path": "calc.py", "line": 2},
            None,  # silent
            ["first note", BotReply("second, inline", "calc.py", 1)],
        ],
    )
    trigger = post_trigger(client, "please @Cursor Review this")  # a literal, any case
    (finding,) = by(client, CURSOR[0])
    assert finding["body"] == FINDING
    assert (finding["path"], finding["line"]) == ("calc.py", 2)
    assert finding["commit_id"] == sim.pull(REPO, 1).head_sha
    assert finding["user"] == {**finding["user"], "id": CURSOR[1], "type": "Bot"}
    assert finding["id"] > trigger["id"] and finding["created_at"] >= trigger["created_at"]
    reviews = client.get(f"/repos/{REPO}/pulls/1/reviews").json()
    assert [(r["user"]["login"], r["state"]) for r in reviews] == [(CURSOR[0], "COMMENTED")]
    post_trigger(client, "no trigger in here")  # consumes nothing
    post_trigger(client, "@cursor review")  # the silent answer
    assert len(by(client, CURSOR[0])) == 1
    third = post_trigger(client, "@cursor review")
    answers = by(client, CURSOR[0])[1:]
    assert [(a["body"], a.get("path")) for a in answers] == [
        ("first note", None),
        ("second, inline", "calc.py"),
    ]
    assert all(a["id"] > third["id"] for a in answers)
    post_trigger(client, "@cursor review")  # the script is used up: silent from now on
    assert len(by(client, CURSOR[0])) == 3
    assert len(bot.triggered_by) == 4 and bot.posted == [a["id"] for a in by(client, CURSOR[0])]


def test_a_regex_trigger_and_a_delay_date_the_answer_after_the_trigger(
    sim: GitHubSim, client: httpx.Client
) -> None:
    sim.add_review_bot(
        REPO, *GEMINI, trigger=r"^/gemini\s+review$", regex=True, answers=["Summary"], delay=90
    )
    post_trigger(client, "not /gemini review at the start")
    assert by(client, GEMINI[0]) == []
    trigger = post_trigger(client, "/gemini  review")
    (answer,) = by(client, GEMINI[0])
    assert trigger["created_at"] == "2024-05-01T12:00:00Z"
    assert answer["created_at"] == "2024-05-01T12:01:30Z"  # time passed while it worked
    with pytest.raises(GhsimError, match="bad trigger regex"):
        sim.add_review_bot(REPO, "x[bot]", trigger="(", regex=True)


def test_a_review_comment_triggers_too_and_sim_comment_is_a_trigger(sim: GitHubSim) -> None:
    sim.add_review_bot(REPO, *GEMINI, trigger="/gemini review", answers=["one", "two"])
    sim.comment(REPO, 1, "/gemini review", author=("author", 77))
    sim.comment(REPO, 1, "/gemini review", kind="review", path="calc.py", line=1)
    answers = [c.body for c in sim.comments(REPO) if c.user.login == GEMINI[0]]
    assert answers == ["one", "two"]


def test_two_bots_never_answer_each_other(sim: GitHubSim, client: httpx.Client) -> None:
    # Each bot's answer holds the other's trigger (and its own): only a person's comment
    # is answered, once by each, and nothing after.
    sim.add_review_bot(REPO, *GEMINI, trigger="ping", answers=["ping pong"] * 5)
    sim.add_review_bot(REPO, *CURSOR, trigger="pong", answers=["pong ping"] * 5)
    post_trigger(client, "ping pong")
    logins = [c.user.login for c in sim.comments(REPO)]
    assert logins == ["author", GEMINI[0], CURSOR[0]]
    sim.comment(REPO, 1, "ping", author=GEMINI)  # a bot's comment through the helper too
    assert len(sim.comments(REPO)) == 4


def test_bots_are_per_repository_and_a_second_call_replaces_the_script(
    sim: GitHubSim, client: httpx.Client
) -> None:
    sim.create_repo("octo/other")
    sim.open_pr("octo/other", "f")
    sim.add_review_bot(REPO, *CURSOR, trigger="@cursor review", answers=["old"])
    sim.add_review_bot(REPO, *CURSOR, trigger="@cursor review", answers=["new"])
    sim.comment("octo/other", 1, "@cursor review")
    assert [c.user.login for c in sim.comments("octo/other")] == ["octo"]
    post_trigger(client, "@cursor review")
    assert [c["body"] for c in by(client, CURSOR[0])] == ["new"]
    assert len(sim.review_bots(REPO)) == 1 and sim.review_bots("octo/other") == []
    sim.user("Copilot")  # a known login without "[bot]" becomes a Bot account
    assert sim.add_review_bot(REPO, "Copilot", trigger="@copilot").user.type == "Bot"


@pytest.mark.parametrize("answer", [42, {"body": "x", "colour": "red"}, {"path": "a.py"}, [None]])
def test_a_malformed_answer_is_refused(sim: GitHubSim, answer: Any) -> None:
    with pytest.raises(GhsimError, match="a bot reply is"):
        sim.add_review_bot(REPO, *CURSOR, trigger="go", answers=[answer])


def test_bots_set_up_over_rpc_answer_http_triggers(sim: GitHubSim, client: httpx.Client) -> None:
    call = {
        "method": "add_review_bot",
        "args": [REPO, *CURSOR],
        "kwargs": {
            "trigger": "@cursor review",
            "answers": [None, [{"body": FINDING, "path": "calc.py", "line": 2}, "and a note"]],
        },
    }
    made = httpx.post(f"{sim.url}/_ghsim/rpc", json=call)
    assert made.status_code == 200, made.text
    assert made.json()["result"]["answers_left"] == 2
    post_trigger(client, "@cursor review")
    assert by(client, CURSOR[0]) == []
    post_trigger(client, "@cursor review")
    assert [(c["body"], c.get("line")) for c in by(client, CURSOR[0])] == [
        (FINDING, 2),
        ("and a note", None),
    ]
    listed = httpx.post(
        f"{sim.url}/_ghsim/rpc", json={"method": "review_bots", "args": [REPO]}
    ).json()["result"]
    assert [(b["user"]["login"], b["answers_left"], len(b["posted"])) for b in listed] == [
        (CURSOR[0], 0, 2)
    ]
    assert listed[0]["trigger"] == re.escape("@cursor review")
