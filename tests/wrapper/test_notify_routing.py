"""Notices reach the PR's owner (issue 18): the schedule's recipient (``--notify-to``,
kdev.yaml ``repositories.<repo>.notify_to``, a repos.yaml entry's ``notify`` in the
sweep), else the recipient ``notify_authors`` maps the PR author to, else ``notify``.

Real parts: ghsim over HTTP, the stub reviewer as a real process, file targets on disk,
the real ``kdev`` command for the CLI's one-line errors."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.wrapper.reviewbench import BIN, REPO, Bench
from wrapper.config import KdevConfig, load_config
from wrapper.errors import ConfigError, Outcome
from wrapper.leakscan import known_secrets
from wrapper.notify import route


def lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def routed_config(bench: Bench, **extra: Any) -> KdevConfig:
    return bench.config(
        recipients={
            "alice": [{"type": "file", "path": str(bench.root / "alice.jsonl")}],
            "bob": [{"type": "file", "path": str(bench.root / "bob.jsonl")}],
            "ops": [{"type": "file", "path": str(bench.root / "ops.jsonl")}],
        },
        notify_authors={"Alice-Dev": "alice", "bob-dev": "bob"},
        **extra,
    )


def test_two_authors_verdicts_reach_two_different_targets(bench: Bench) -> None:
    config = routed_config(bench)
    by_alice = bench.sim.open_pr(REPO, "a", {"a.py": "x = 1  # TODO\n"}, author="alice-dev")
    by_bob = bench.sim.open_pr(REPO, "b", {"b.py": "y = 2\n"}, author="bob-dev")
    by_carol = bench.sim.open_pr(REPO, "c", {"c.py": "z = 3\n"}, author="carol")
    for pr in (by_alice, by_bob, by_carol):
        assert bench.review(pr.number, config=config).outcome is Outcome.REVIEWED
    [to_alice] = lines(bench.root / "alice.jsonl")
    [to_bob] = lines(bench.root / "bob.jsonl")
    assert to_alice["fields"]["pr"] == by_alice.number
    assert to_alice["fields"]["verdict"] == "REQUEST_CHANGES"
    assert to_bob["fields"]["pr"] == by_bob.number
    assert to_bob["fields"]["verdict"] == "APPROVE"
    # An author without a mapping falls back to the global target, and only there.
    assert [n["fields"]["pr"] for n in bench.notes()] == [by_carol.number]
    assert lines(bench.root / "ops.jsonl") == []


def test_the_repository_recipient_wins_over_the_authors(bench: Bench) -> None:
    config = routed_config(bench, repositories={REPO.upper(): {"notify_to": "ops"}})
    pr = bench.sim.open_pr(REPO, "a", {"a.py": "x = 1\n"}, author="alice-dev")
    assert bench.review(pr.number, config=config).outcome is Outcome.REVIEWED
    assert [n["fields"]["pr"] for n in lines(bench.root / "ops.jsonl")] == [pr.number]
    assert lines(bench.root / "alice.jsonl") == [] and bench.notes() == []


def test_notify_to_wins_over_everything_and_an_unknown_one_does_no_work(bench: Bench) -> None:
    config = routed_config(bench, repositories={REPO: {"notify_to": "ops"}})
    pr = bench.sim.open_pr(REPO, "a", {"a.py": "x = 1\n"}, author="alice-dev")
    assert bench.review(pr.number, config=config, notify_to="bob").outcome is Outcome.REVIEWED
    assert [n["fields"]["pr"] for n in lines(bench.root / "bob.jsonl")] == [pr.number]
    assert lines(bench.root / "ops.jsonl") == [] and lines(bench.root / "alice.jsonl") == []
    other = bench.sim.open_pr(REPO, "b", {"b.py": "y = 1\n"}, author="alice-dev")
    with pytest.raises(ConfigError) as caught:
        bench.review(other.number, config=config, notify_to="nobody")
    assert caught.value.reason == "unknown_recipient"
    assert bench.legs() == 1  # the refused run started no leg


def test_a_failure_notice_goes_to_the_authors_recipient_too(bench: Bench) -> None:
    config = routed_config(bench)
    pr = bench.sim.open_pr(REPO, "a", {"a.py": "x = 1\n"}, author="alice-dev")
    with pytest.raises(Exception):  # noqa: B017 - the reviewer's failure, any kind
        bench.review(pr.number, config=config, environ={"KDEV_STUB_EXIT": "3"})
    [note] = lines(bench.root / "alice.jsonl")
    assert note["fields"]["outcome"] == "failure" and note["fields"]["pr"] == pr.number
    assert bench.notes() == []


def test_route_precedence_is_schedule_then_repository_then_author_then_global() -> None:
    config = KdevConfig.model_validate(
        {
            "notify": [{"type": "log"}],
            "recipients": {
                "a": [{"type": "file", "path": "/a"}],
                "r": [{"type": "file", "path": "/r"}],
                "s": [{"type": "file", "path": "/s"}],
            },
            "notify_authors": {"Alice": "a"},
            "repositories": {"Octo/Widgets": {"notify_to": "r"}},
        }
    )
    sched = config.recipients["s"]

    def path(targets: list[Any]) -> str:
        [target] = targets
        return str(getattr(target, "path", target.type))

    assert path(route(config, "octo/widgets", "alice", schedule_targets=sched)) == "/s"
    assert path(route(config, "octo/widgets", "alice", notify_to="s")) == "/s"
    assert path(route(config, "octo/widgets", "alice")) == "/r"
    assert path(route(config, "octo/gadgets", "ALICE")) == "/a"
    assert path(route(config, "octo/gadgets", "bob")) == "log"
    assert path(route(config, "octo/gadgets", None)) == "log"
    with pytest.raises(ConfigError) as caught:
        route(config, "octo/gadgets", None, notify_to="missing")
    assert caught.value.reason == "unknown_recipient"


@pytest.mark.parametrize(
    "data, problem",
    [
        ({"notify_authors": {"alice": "nobody"}}, "notify_authors.alice: 'nobody' is not a key"),
        ({"repositories": {"octo/w": {"notify_to": "nobody"}}}, "'nobody' is not a key"),
        ({"repositories": {"octo/w": {"notify": "x"}}}, "repositories.octo/w.notify"),
        ({"repositories": {"../w": {}}}, "is not a repository name"),
        ({"recipients": {"x": []}}, "recipient 'x' has no targets"),
        ({"recipients": {"bad name": [{"type": "log"}]}}, "is not a recipient name"),
        ({"recipients": {"x": [{"type": "github-comment"}]}}, "github-comment belongs in"),
        ({"notify_authors": {"-bad-": "x"}, "recipients": {"x": [{"type": "log"}]}}, "-bad-"),
        ({"notify_authors": {"A": "x", "a": "x"}, "recipients": {"x": [{"type": "log"}]}}, "twice"),
    ],
)
def test_a_bad_routing_config_is_one_line_error(
    tmp_path: Path, data: dict[str, Any], problem: str
) -> None:
    path = tmp_path / "kdev.yaml"
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError) as caught:
        load_config(str(path))
    assert caught.value.reason == "invalid_config"
    assert problem in caught.value.message and "\n" not in caught.value.message


def test_a_recipients_webhook_url_is_a_known_secret() -> None:
    url = "https://hooks.example.invalid/services/T0/B0/very-secret-part"
    config = KdevConfig.model_validate({"recipients": {"x": [{"type": "webhook", "url": url}]}})
    assert url in known_secrets(config, {})


def test_the_cli_refuses_an_unknown_notify_to_in_one_line(bench: Bench) -> None:
    env = bench.kdev_env(routed_config(bench))
    done = subprocess.run(
        [str(BIN / "kdev"), "review-pr", "--repo", REPO, "--pr", "1", "--notify-to", "nobody"],
        env=env,
        cwd=bench.checkout,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert "'nobody'" in line and line.endswith("[unknown_recipient]")
