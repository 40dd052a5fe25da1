"""Mention triggers end to end: a github_poll schedule with event "mentions" polls ghsim
over HTTP (pulls leg, then the issue- and review-comment feeds) and fires per accepted
comment or pull request, once."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine as SAEngine
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from engine.errors import LiError
from engine.github import GitHubClient
from engine.poll.config import validate_poll_config
from engine.poll.pollpass import poll_once
from engine.run.daemon import Engine
from engine.schedules.spec import ScheduleSpec
from engine.store.models import RunStatus, ScheduleRun, TriggerKey, TriggerType
from engine.store.pollstore import PollStore
from engine.store.store import Store
from ghsim import GitHubSim
from tests.engine.test_cli import Li, one_error_line
from tests.factories import FakeClock, settings_for

REPO = "octo/widgets"
HANDLE = "claude"
MAINT = ("maint", 501)
OTHER_MAINT = ("keeper", 502)
AGENT = ("li-bot", 900)  # the token's own account
ARGS = ["-c", 'echo "$@"', "fire", "{{ repo }}", "{{ pr_number }}", "{{ verb }}"]
# The schedule's verbs (the engine has none of its own; docs/triggers.md).
VERBS = {"verbs": ["review", "describe"], "default_verb": "review"}


@dataclass
class World:
    sim: GitHubSim
    clock: FakeClock
    store: Store
    db_url: str
    token: str

    def settings(self, **overrides: Any) -> Any:
        return settings_for(
            self.db_url, github_api_url=self.sim.url, github_token=self.token, **overrides
        )

    def add(self, name: str = "mentions", args: list[str] = ARGS, **mentions: Any) -> int:
        block = {
            "handle": HANDLE,
            "allowlist": [MAINT[1], OTHER_MAINT[1]],
            "self_user_id": AGENT[1],
            **VERBS,
            **mentions,
        }
        block = {key: value for key, value in block.items() if value is not None}
        trigger = validate_poll_config(
            {"repo": REPO, "poll_interval_seconds": 60, "event": "mentions", "mentions": block}
        )
        spec = ScheduleSpec(
            name=name,
            trigger_type=TriggerType.GITHUB_POLL,
            trigger_config=trigger.model_dump(mode="json"),
            command="sh",
            args=args,
        )
        return self.store.add_schedule(spec).id

    def poll(self) -> list[ScheduleRun]:
        """Advance past the poll interval and run one pass in a fresh engine."""
        self.clock.advance(61)
        engine = Engine(self.settings(), self.store)
        engine.start()
        try:
            return engine.run_once()
        finally:
            engine.close()

    def state(self, schedule_id: int) -> Any:
        return PollStore(self.store).get_state(schedule_id)

    def trigger_keys(self) -> list[str]:
        with Session(self.store.engine) as session:
            return sorted(session.scalars(select(TriggerKey.dedupe_key)))

    def fork_pr(self, branch: str = "contrib") -> Any:
        self.clock.advance(1)
        return self.sim.open_pr(
            REPO, branch, {"a.py": "x = 1\n"}, from_fork="forker/widgets", author=("forker", 777)
        )


@pytest.fixture
def world(db: SAEngine, db_url: str, tmp_path: Path) -> Iterator[World]:
    clock = FakeClock()
    token = f"tok-{uuid.uuid4().hex}"
    with GitHubSim(tmp_path / "sim", clock=clock) as sim:
        sim.add_token(token, AGENT)
        sim.create_repo(REPO)
        yield World(sim, clock, Store(db, clock), db_url, token)


def reasons(caplog: pytest.LogCaptureFixture) -> list[tuple[Any, str]]:
    """``(pr, reason)`` of every logged classifier decision."""
    return [
        (getattr(r, "pr", None), r.reason)  # type: ignore[attr-defined]
        for r in caplog.records
        if r.name == "engine.poll.pollpass" and hasattr(r, "reason")
    ]


def fired(runs: list[ScheduleRun]) -> list[ScheduleRun]:
    return [r for r in runs if r.status != RunStatus.REFUSED.value]


@pytest.mark.parametrize(
    ("body", "verb"),
    [
        (f"@{HANDLE} please have a look", "review"),
        (f"@{HANDLE} describe", "describe"),
    ],
)
def test_an_allowlisted_mention_on_a_fork_pr_fires_once_with_the_comment(
    world: World, body: str, verb: str
) -> None:
    world.add()
    pr = world.fork_pr()
    world.clock.advance(5)
    comment = world.sim.comment(REPO, pr.number, body, author=MAINT)
    [run] = world.poll()
    assert run.status == RunStatus.SUCCEEDED.value
    assert run.stdout_tail.strip() == f"{REPO} {pr.number} {verb}"
    context = run.trigger_context
    assert context["comment_id"] == comment.id
    assert context["comment_author"] == MAINT[0]
    assert context["comment_author_id"] == MAINT[1]
    assert context["verb"] == verb and context["event"] == "mention"
    assert context["head_sha"] == pr.head_sha and context["is_same_repo"] is False
    assert world.trigger_keys() == [f"mention:{REPO}:{pr.number}:{comment.id}"]


@pytest.mark.parametrize(
    ("author", "body", "reason"),
    [
        (("helper[bot]", 600), f"@{HANDLE} review", "bot_commenter"),
        (("stranger", 4444), f"@{HANDLE} review", "commenter_not_allowlisted"),
        (MAINT, f"```\n@{HANDLE} review\n```", "no_mention"),
    ],
)
def test_a_mention_that_must_not_fire_does_not(
    world: World,
    caplog: pytest.LogCaptureFixture,
    author: tuple[str, int],
    body: str,
    reason: str,
) -> None:
    # The bot is even allowlisted: it is refused before the allowlist.
    world.add(allowlist=[MAINT[1], 600, AGENT[1]])
    pr = world.fork_pr()
    world.clock.advance(5)
    world.sim.comment(REPO, pr.number, body, author=author)
    caplog.set_level(logging.DEBUG, logger="engine.poll.pollpass")
    assert world.poll() == []
    assert (pr.number, reason) in reasons(caplog)
    assert world.trigger_keys() == []


def test_the_agents_own_account_summons_a_review_despite_self_user_id(world: World) -> None:
    # A single-maintainer repository: the maintainer posts from the agent's account. A
    # schedule made before the upgrade still carries self_user_id; it is ignored.
    world.add(allowlist=[AGENT[1]], self_user_id=AGENT[1])
    pr = world.fork_pr()
    world.clock.advance(5)
    comment = world.sim.comment(REPO, pr.number, f"@{HANDLE} review", author=AGENT)
    [run] = world.poll()
    assert run.status == RunStatus.SUCCEEDED.value
    assert run.trigger_context["comment_author_id"] == AGENT[1]
    assert world.trigger_keys() == [f"mention:{REPO}:{pr.number}:{comment.id}"]


def test_an_impostor_with_a_freed_login_is_rejected(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    world.add()
    pr = world.fork_pr()
    world.sim.user("maint-renamed", id=MAINT[1])  # the maintainer renames...
    impostor = world.sim.user(MAINT[0], id=6666)  # ...and someone takes the old login
    assert impostor.login == MAINT[0]
    world.clock.advance(5)
    world.sim.comment(REPO, pr.number, f"@{HANDLE} review", author=(MAINT[0], 6666))
    caplog.set_level(logging.DEBUG, logger="engine.poll.pollpass")
    assert world.poll() == []
    assert (pr.number, "commenter_not_allowlisted") in reasons(caplog)


def test_re_polling_never_fires_twice_and_a_later_push_does_not_revive(world: World) -> None:
    sid = world.add()
    pr = world.fork_pr()
    world.clock.advance(5)
    comment = world.sim.comment(REPO, pr.number, f"@{HANDLE}", author=MAINT)
    assert len(fired(world.poll())) == 1
    assert world.state(sid).comments_watermark == comment.updated_at
    # The boundary second is offered again (since= is inclusive): the key absorbs it.
    assert world.poll() == []
    world.clock.advance(5)
    world.sim.push(REPO, pr.number, {"a.py": "x = 2\n"})
    assert world.poll() == []
    assert len(world.trigger_keys()) == 1


def test_editing_a_mention_into_an_old_comment_fires(world: World) -> None:
    world.add()
    pr = world.fork_pr()
    world.clock.advance(5)
    comment = world.sim.comment(REPO, pr.number, "looks interesting", author=MAINT)
    assert world.poll() == []
    world.clock.advance(5)
    world.sim.edit_comment(REPO, comment.id, f"looks interesting, @{HANDLE} describe")
    [run] = world.poll()
    assert run.trigger_context["comment_id"] == comment.id
    assert run.trigger_context["verb"] == "describe"


def test_a_comment_on_a_closed_pr_is_pr_not_open(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    sid = world.add()
    pr = world.fork_pr()
    world.clock.advance(5)
    world.sim.close(REPO, pr.number)
    world.sim.comment(REPO, pr.number, f"@{HANDLE} review", author=MAINT)
    caplog.set_level(logging.DEBUG, logger="engine.poll.pollpass")
    assert world.poll() == []
    assert (pr.number, "pr_not_open") in reasons(caplog)
    assert world.state(sid).open_prs == []


def test_a_review_comment_mention_fires(world: World) -> None:
    world.add()
    pr = world.fork_pr()
    world.clock.advance(5)
    comment = world.sim.comment(
        REPO,
        pr.number,
        f"@{HANDLE} this line?",
        author=OTHER_MAINT,
        kind="review",
        path="a.py",
        line=1,
    )
    [run] = world.poll()
    assert run.trigger_context["comment_id"] == comment.id
    assert run.trigger_context["comment_author_id"] == OTHER_MAINT[1]


def test_a_ghost_comment_is_skipped_and_the_rest_classified(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    world.add()
    pr = world.fork_pr()
    world.clock.advance(5)
    ghost = world.sim.comment(REPO, pr.number, f"@{HANDLE} review", author=("gone", 321))
    world.sim.set_comment_user_null(REPO, ghost.id)
    kept = world.sim.comment(REPO, pr.number, f"@{HANDLE} review", author=MAINT)
    caplog.set_level(logging.DEBUG, logger="engine.poll.pollpass")
    [run] = world.poll()
    assert run.trigger_context["comment_id"] == kept.id
    assert ("ghost_user", ghost.id) in [
        (getattr(r, "reason", None), getattr(r, "comment_id", None))
        for r in caplog.records
        if r.levelno == logging.WARNING
    ]


def test_an_allowlisted_authors_new_pr_fires_pr_opened_once_and_a_draft_does_not(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    world.add()
    world.clock.advance(5)
    pr = world.sim.open_pr(REPO, "ready", {"r.py": "1\n"}, author=MAINT)
    draft = world.sim.open_pr(REPO, "wip", {"w.py": "1\n"}, author=MAINT, draft=True)
    outsider = world.sim.open_pr(REPO, "drive-by", {"d.py": "1\n"}, author=("stranger", 4444))
    caplog.set_level(logging.DEBUG, logger="engine.poll.pollpass")
    [run] = world.poll()
    assert run.trigger_context["event"] == "pr_opened"
    assert run.trigger_context["pr_number"] == pr.number
    assert run.trigger_context["verb"] == "review"  # the schedule's default verb
    opened_sha = pr.head_sha
    logged = reasons(caplog)
    assert (draft.number, "draft") in logged
    assert (outsider.number, "author_not_allowlisted") in logged
    world.clock.advance(5)
    world.sim.push(REPO, pr.number, {"r.py": "2\n"})
    assert world.poll() == []
    assert world.trigger_keys() == [f"pr_opened:{REPO}:{pr.number}:{opened_sha}"]


def test_pr_opened_can_be_turned_off(world: World) -> None:
    world.add(pr_opened=False)
    world.clock.advance(5)
    world.sim.open_pr(REPO, "ready", {"r.py": "1\n"}, author=MAINT)
    assert world.poll() == []


def test_a_304_on_the_feeds_keeps_the_watermarks(world: World) -> None:
    sid = world.add()
    pr = world.fork_pr()
    world.clock.advance(5)
    world.sim.comment(REPO, pr.number, f"@{HANDLE}", author=MAINT)
    engine = Engine(world.settings(), world.store)
    engine.start()
    try:
        world.clock.advance(61)
        assert len(engine.run_once()) == 1
        before = world.state(sid)
        world.sim.clear_requests()
        world.clock.advance(61)
        assert engine.run_once() == []
    finally:
        engine.close()
    for path in (r"/issues/comments$", r"/pulls/comments$", r"/pulls$"):
        assert [r.status for r in world.sim.requests_to(path)] == [304], path
    after = world.state(sid)
    assert after.comments_watermark == before.comments_watermark is not None
    assert after.pr_watermark == before.pr_watermark is not None
    assert after.open_prs == before.open_prs == [pr.number]
    assert after.last_http_status == 304 and after.not_modified == 1


def test_a_failing_feed_is_the_poll_error_and_holds_the_comments_watermark(
    world: World,
) -> None:
    sid = world.add()
    pr = world.fork_pr()
    world.clock.advance(5)
    world.sim.comment(REPO, pr.number, f"@{HANDLE}", author=MAINT)
    world.sim.inject_fault("GET", r"/pulls/comments$", status=502)
    # The issue feed was read before the review feed failed: its mention fired.
    assert len(fired(world.poll())) == 1
    state = world.state(sid)
    assert state.last_error_reason == "server_error"
    assert state.comments_watermark is None and state.open_prs == [pr.number]
    assert world.poll() == []  # the next pass re-reads both feeds; the key absorbs it
    state = world.state(sid)
    assert state.last_error_reason is None and state.comments_watermark is not None


def test_preview_shows_a_mention_without_firing(world: World) -> None:
    sid = world.add()
    pr = world.fork_pr()
    world.clock.advance(5)
    world.sim.comment(REPO, pr.number, f"@{HANDLE}", author=MAINT)
    ticket = PollStore(world.store).claim_poll(sid, "preview", peek=True)
    assert ticket is not None
    with GitHubClient(world.settings()) as client:
        report = poll_once(
            PollStore(world.store), world.settings(), client, ticket, "preview", dry_run=True
        )
    assert [d.decision for d in report.decisions] == ["would_fire"]
    assert world.trigger_keys() == []


# -- configuration errors ----------------------------------------------------------------


@pytest.fixture
def li(db: SAEngine, db_url: str) -> Li:
    return Li(db_url, allow="sh")


@pytest.mark.parametrize("bad", ["abc", "0", "-5"])
def test_a_bad_allow_user_is_a_one_line_allowlist_config_error(li: Li, bad: str) -> None:
    _, _, err = li(
        "schedule",
        "add",
        "m",
        "--github",
        REPO,
        "--event",
        "mentions",
        "--handle",
        HANDLE,
        "--allow-user",
        "501",
        "--allow-user",
        bad,
        "--command",
        "sh",
        code=2,
    )
    one_error_line(err, "allowlist_config_error")
    assert li.json("schedule", "list") == []


def test_a_mentions_schedule_is_added_from_the_cli(li: Li) -> None:
    _, _, added_err = li(
        "schedule",
        "add",
        "m",
        "--github",
        REPO,
        "--event",
        "mentions",
        "--handle",
        HANDLE,
        "--allow-user",
        "501",
        "--allow-user",
        "502",
        "--self-user-id",
        "900",
        "--command",
        "sh",
    )
    assert "self_user_id_ignored" in added_err
    shown = li.json("schedule", "show", "m")
    assert isinstance(shown, dict)
    assert shown["trigger_config"]["mentions"] == {
        "handle": HANDLE,
        "allowlist": [501, 502],
        "self_user_id": 900,
        "pr_opened": True,
    }
    _, _, err = li(
        "schedule", "add", "n", "--github", REPO, "--handle", HANDLE, "--command", "sh", code=2
    )
    one_error_line(err, "invalid_trigger")


@pytest.mark.parametrize("bad", ["true", "1.5", '"--5"'])
def test_a_bad_allowlist_in_a_schedule_file_is_a_one_line_error(
    li: Li, tmp_path: Path, bad: str
) -> None:
    path = tmp_path / "set.yaml"
    path.write_text(
        "version: 1\nowner: ops\nschedules:\n"
        "  - name: m\n    github:\n      repo: octo/widgets\n      event: mentions\n"
        f"      mentions:\n        handle: claude\n        allowlist: [501, {bad}]\n"
        "    command: sh\n"
    )
    _, _, err = li("schedule", "apply", str(path), code=2)
    one_error_line(err, "allowlist_config_error")
    assert f"{path}:10:" in err
    assert li.json("schedule", "list") == []


def test_a_mentions_block_in_a_schedule_file_round_trips(li: Li, tmp_path: Path) -> None:
    path = tmp_path / "set.yaml"
    path.write_text(
        "version: 1\nowner: ops\nschedules:\n"
        "  - name: m\n    github:\n      repo: octo/widgets\n      event: mentions\n"
        "      mentions:\n        handle: claude\n        allowlist: [501]\n"
        "        self_user_id: 900\n"
        "    command: sh\n"
    )
    li("schedule", "apply", str(path))
    shown = li.json("schedule", "show", "m")
    assert isinstance(shown, dict)
    assert shown["trigger_config"]["mentions"]["allowlist"] == [501]
    _, out, _ = li("schedule", "apply", str(path), "--dry-run")
    assert "CREATE" not in out and "UPDATE" not in out


def test_trigger_keys_are_unique_per_schedule(world: World) -> None:
    sid = world.add()
    ticket = PollStore(world.store).claim_poll(sid, "x", manual=True)
    assert ticket is not None
    pstore = PollStore(world.store)
    first = pstore.claim_trigger(ticket, dedupe_key="mention:k", context={}, argv=["sh"], owner="x")
    again = pstore.claim_trigger(ticket, dedupe_key="mention:k", context={}, argv=["sh"], owner="x")
    assert first is not None and again is None
    with Session(world.store.engine) as session:
        assert session.scalar(select(func.count()).select_from(TriggerKey)) == 1


def test_the_verb_comes_from_the_schedule_and_without_one_there_is_none(world: World) -> None:
    # Custom verbs: the engine knows no word of its own.
    world.add("own", verbs=["deploy"], default_verb="go")
    # No verbs at all, and args that do not use one: fires with no verb variable.
    world.add("plain", args=ARGS[:-1], verbs=None, default_verb=None)
    # No verbs, args that use one: refused loudly (template_undefined), never guessed.
    world.add("strict", verbs=None, default_verb=None)
    pr = world.sim.open_pr(REPO, "b", {"b.py": "1\n"}, author=("stranger", 4444))
    world.clock.advance(5)
    world.sim.comment(REPO, pr.number, f"@{HANDLE} Deploy", author=MAINT)
    world.sim.comment(REPO, pr.number, f"@{HANDLE} describe", author=OTHER_MAINT)
    world.poll()
    with Session(world.store.engine) as session:
        runs = list(session.scalars(select(ScheduleRun)))
    by_schedule: dict[str, list[tuple[str, Any, str | None]]] = {}
    for run in sorted(runs, key=lambda r: r.trigger_context["comment_id"]):
        by_schedule.setdefault(run.schedule_name, []).append(
            (run.status, run.trigger_context.get("verb", "-"), run.reason)
        )
    ok, refused = RunStatus.SUCCEEDED.value, RunStatus.REFUSED.value
    assert by_schedule == {
        "own": [(ok, "deploy", None), (ok, "go", None)],
        "plain": [(ok, "-", None), (ok, "-", None)],
        "strict": [(refused, "-", "template_undefined"), (refused, "-", "template_undefined")],
    }


def test_a_stored_mentions_block_without_verbs_reads_back_unchanged() -> None:
    # Schedules stored before verbs existed keep the same trigger_config dump.
    old = {
        "repo": REPO,
        "event": "mentions",
        "mentions": {"handle": HANDLE, "allowlist": [501], "self_user_id": None, "pr_opened": True},
    }
    assert validate_poll_config(old).model_dump(mode="json")["mentions"] == old["mentions"]
    new = {**old, "mentions": {**old["mentions"], "verbs": ["Ship", "ship"], "default_verb": "Go"}}
    dumped = validate_poll_config(new).model_dump(mode="json")["mentions"]
    assert (dumped["verbs"], dumped["default_verb"]) == (["ship"], "go")


@pytest.mark.parametrize(
    ("block", "where"),
    [
        ({"verbs": ["two words"]}, "mentions.verbs"),
        ({"verbs": "ship"}, "mentions.verbs"),
        ({"verbs": [1]}, "mentions.verbs"),
        ({"default_verb": "a-b"}, "mentions.default_verb"),
        ({"default_verb": ""}, "mentions.default_verb"),
    ],
)
def test_a_bad_verb_is_refused_naming_the_field(block: dict[str, Any], where: str) -> None:
    config = {
        "repo": REPO,
        "event": "mentions",
        "mentions": {"handle": HANDLE, "allowlist": [501], **block},
    }
    with pytest.raises(LiError) as caught:
        validate_poll_config(config)
    assert caught.value.reason == "invalid_trigger_config"
    assert caught.value.message.startswith(f"trigger_config.{where}: ")


def test_every_trigger_decision_is_logged_once_at_debug_accepted_included(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    world.add()
    pr = world.fork_pr()
    world.clock.advance(5)
    asked = world.sim.comment(REPO, pr.number, f"@{HANDLE} review", author=MAINT)
    stranger = world.sim.comment(REPO, pr.number, f"@{HANDLE} review", author=("x", 4444))
    chat = world.sim.comment(REPO, pr.number, "nice work", author=MAINT)
    caplog.set_level(logging.DEBUG, logger="engine.poll.pollpass")
    assert len(fired(world.poll())) == 1
    poll_records = [r for r in caplog.records if r.name.startswith("engine.poll")]
    assert [r for r in poll_records if r.levelno >= logging.INFO] == []
    triggers = [
        (r.trigger, r.pr, r.comment_id, r.reason, r.levelno)  # type: ignore[attr-defined]
        for r in poll_records
        if hasattr(r, "trigger")
    ]
    comments = {t[2]: t[3] for t in triggers if t[2] is not None}
    assert comments == {
        asked.id: "accepted",
        stranger.id: "commenter_not_allowlisted",
        chat.id: "no_mention",
    }
    [pull] = [t for t in triggers if t[0] == "pull"]  # the pulls leg's one decision
    assert pull[1] == pr.number and pull[3] == "author_not_allowlisted"
    assert len(triggers) == len(set(triggers)) == 4  # each decision once
    assert {t[4] for t in triggers} == {logging.DEBUG}
    outcomes = [
        (r.pr, r.reason)  # type: ignore[attr-defined]
        for r in poll_records
        if hasattr(r, "decision")
    ]
    assert outcomes == [(pr.number, "fired")]
