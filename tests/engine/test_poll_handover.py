"""A github_poll schedule hands its commands the GitHub endpoint it polled with (D74):
GITHUB_API_URL unlisted, the token file's name, never an unlisted token value."""

from __future__ import annotations

import uuid
from pathlib import Path

from sqlalchemy import Engine as SAEngine

from engine.poll.config import validate_poll_config
from engine.poll.handover import github_environment, token_source_variable
from engine.run.actions import fire_schedule
from engine.run.daemon import Engine
from engine.schedules.spec import ScheduleSpec
from engine.store.models import RunStatus, TriggerType
from engine.store.store import Store
from ghsim import GitHubSim
from tests.factories import FakeClock, settings_for

REPO = "octo/widgets"
SHOW = ["-c", 'printf "%s|%s|%s" "$GITHUB_API_URL" "$GITHUB_TOKEN_FILE" "$GITHUB_TOKEN"']


def test_a_fired_command_sees_the_engines_api_url_unlisted(
    db: SAEngine, db_url: str, tmp_path: Path
) -> None:
    clock = FakeClock()
    token = f"tok-{uuid.uuid4().hex}"
    store = Store(db, clock)
    with GitHubSim(tmp_path / "sim", clock=clock) as sim:
        sim.add_token(token, ("li-bot", 900))
        sim.create_repo(REPO)
        trigger = validate_poll_config({"repo": REPO, "poll_interval_seconds": 60})
        spec = ScheduleSpec(
            name="watch",
            trigger_type=TriggerType.GITHUB_POLL,
            trigger_config=trigger.model_dump(mode="json"),
            command="sh",
            args=SHOW,
        )
        assert spec.env_passthrough == []  # nothing listed
        store.add_schedule(spec)
        clock.advance(5)
        sim.open_pr(REPO, "feature", {"a.py": "x = 1\n"}, author=("alice", 71))
        clock.advance(61)
        settings = settings_for(db_url, github_api_url=sim.url + "/", github_token=token)
        polled = sim.url
        engine = Engine(settings, store)
        engine.start()
        try:
            [run] = engine.run_once()
        finally:
            engine.close()
    assert run.status == RunStatus.SUCCEEDED.value, run.stderr_tail
    url, _, _ = run.stdout_tail.split("|")
    assert url == polled  # what the engine polled (its trailing slash dropped)
    assert token not in run.stdout_tail  # the token was never listed: not handed over


def test_an_interval_schedule_gets_no_github_endpoint(db: SAEngine, db_url: str) -> None:
    store = Store(db, FakeClock())
    spec = ScheduleSpec(
        name="tick", trigger_type=TriggerType.INTERVAL, interval_seconds=60, command="sh", args=SHOW
    )
    schedule = store.add_schedule(spec)
    settings = settings_for(db_url, github_api_url="https://github.example.test/api/v3")
    run = fire_schedule(store, settings, schedule.id, "me", manual=True, environ={"PATH": "/bin"})
    assert run is not None and run.status == RunStatus.SUCCEEDED.value, run
    assert run.stdout_tail == "||"


def test_the_token_file_is_named_and_no_token_value_handed_over(tmp_path: Path) -> None:
    settings = settings_for("sqlite://", github_api_url="https://ghe.example.test/api/v3")
    token_file = tmp_path / "token"
    token_file.write_text("secret-value\n")
    from_file = {"GITHUB_TOKEN_FILE": str(token_file), "PATH": "/bin"}
    assert github_environment(settings, from_file) == {
        "GITHUB_API_URL": "https://ghe.example.test/api/v3",
        "GITHUB_TOKEN_FILE": str(token_file),
    }
    # A token variable wins over the file (engine.credentials): nothing named, no value.
    from_variable = {**from_file, "GITHUB_TOKEN": "secret-value"}
    assert token_source_variable(from_variable) is None
    assert "secret-value" not in github_environment(settings, from_variable).values()
    empty = {**from_file, "GH_TOKEN": ""}  # an empty variable counts as unset
    assert token_source_variable(empty) == "GITHUB_TOKEN_FILE"


def test_a_systemd_credential_directory_is_named_only_when_it_holds_the_token(
    tmp_path: Path,
) -> None:
    environ = {"CREDENTIALS_DIRECTORY": str(tmp_path)}
    assert token_source_variable(environ) is None  # no github_token in it: no source
    (tmp_path / "github_token").write_text("t\n")
    assert token_source_variable(environ) == "CREDENTIALS_DIRECTORY"
    settings = settings_for("sqlite://")
    assert github_environment(settings, environ) == {
        "GITHUB_API_URL": "https://api.github.com",  # the default, handed over too
        "CREDENTIALS_DIRECTORY": str(tmp_path),
    }


def test_with_a_github_app_the_command_gets_its_names_and_no_secret(tmp_path: Path) -> None:
    """Issue 30: the App's id, the key file's and the token cache's names, the
    installation; never the key or a token (D100)."""
    from engine.config import Settings

    key = tmp_path / "app.pem"
    environ = {
        "GITHUB_API_URL": "https://api.github.com",
        "GITHUB_APP_ID": "123456",
        "GITHUB_APP_PRIVATE_KEY_FILE": str(key),
        "GITHUB_APP_INSTALLATION_ID": "42",
        "GITHUB_APP_TOKEN_CACHE": str(tmp_path / "cache.json"),
        "CREDENTIALS_DIRECTORY": str(tmp_path),
    }
    handed = github_environment(Settings.from_env(environ), environ)
    assert handed == {
        "GITHUB_API_URL": "https://api.github.com",
        "GITHUB_APP_ID": "123456",
        "GITHUB_APP_PRIVATE_KEY_FILE": str(key),
        "GITHUB_APP_INSTALLATION_ID": "42",
        "GITHUB_APP_TOKEN_CACHE": str(tmp_path / "cache.json"),
    }
