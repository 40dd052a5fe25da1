"""Settings.from_env on pydantic-settings (issue 15): every variable, malformed values,
the explicit mapping over os.environ, and the special cases kept from the hand parser."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from engine.config import Settings, default_database_url
from engine.errors import ConfigError

PARSED: list[tuple[str, str, str, Any]] = [
    ("LI_DATABASE_URL", " sqlite:////tmp/x.db ", "database_url", "sqlite:////tmp/x.db"),
    ("LI_COMMAND_ALLOWLIST", "sh, true,,echo ", "command_allowlist", {"sh", "true", "echo"}),
    (
        "LI_ENV_PASSTHROUGH",
        "GITHUB_TOKEN, KDEV_CONFIG",
        "env_passthrough",
        ("GITHUB_TOKEN", "KDEV_CONFIG"),
    ),
    ("LI_MAX_CONCURRENT_ACTIONS", "7", "max_concurrent_actions", 7),
    ("LI_KILL_GRACE", "1.5", "kill_grace_seconds", 1.5),
    ("LI_KILL_GRACE", "0", "kill_grace_seconds", 0.0),
    ("LI_SHUTDOWN_GRACE", "90", "shutdown_grace_seconds", 90.0),
    ("LI_SYNC_INTERVAL", "0.25", "sync_interval_seconds", 0.25),
    (
        "GITHUB_API_URL",
        "http://ghe.example/api/v3//",
        "github_api_url",
        "http://ghe.example/api/v3",
    ),
    ("GITHUB_TOKEN", "tok-a", "github_token", "tok-a"),
    ("GH_TOKEN", "tok-b", "github_token", "tok-b"),
    ("LI_GITHUB_TIMEOUT", "4.5", "github_timeout_seconds", 4.5),
    ("LI_GITHUB_RATE", "120", "github_requests_per_minute", 120),
    ("LI_POLL_THREADS", "12", "poll_threads_setting", 12),
]


@pytest.mark.parametrize(("variable", "raw", "field", "expected"), PARSED)
def test_each_variable_is_parsed(variable: str, raw: str, field: str, expected: Any) -> None:
    made = Settings.from_env({variable: raw})
    assert getattr(made, field) == expected
    assert getattr(Settings.from_env({}), field) != expected, "the value is not the default"


def test_zero_means_the_default_for_the_sync_interval_and_the_github_timeout() -> None:
    made = Settings.from_env({"LI_SYNC_INTERVAL": "0", "LI_GITHUB_TIMEOUT": "0"})
    assert (made.sync_interval_seconds, made.github_timeout_seconds) == (2.0, 30.0)


def test_an_empty_mapping_gives_the_documented_defaults() -> None:
    made = Settings.from_env({})
    assert made.database_url == default_database_url() and made.database_url_is_default
    assert made.command_allowlist == frozenset() and made.env_passthrough == ()
    assert (made.max_concurrent_actions, made.kill_grace_seconds) == (4, 5.0)
    assert (made.shutdown_grace_seconds, made.sync_interval_seconds) == (30.0, 2.0)
    assert made.github_api_url == "https://api.github.com" and made.github_token is None
    assert (made.github_timeout_seconds, made.github_requests_per_minute) == (30.0, 810)
    assert (made.poll_threads_setting, made.poll_threads) == (None, 7)
    assert made == Settings()


def test_the_database_url_special_cases() -> None:
    given_url = Settings.from_env({"LI_DATABASE_URL": "sqlite:////tmp/y.db"})
    assert given_url.database_url_is_default is False
    for blank in ("", "   "):
        made = Settings.from_env({"LI_DATABASE_URL": blank})
        assert made.database_url == default_database_url() and made.database_url_is_default


def test_github_token_wins_over_gh_token_and_an_empty_one_falls_through() -> None:
    assert Settings.from_env({"GITHUB_TOKEN": "a", "GH_TOKEN": "b"}).github_token == "a"
    assert Settings.from_env({"GITHUB_TOKEN": "", "GH_TOKEN": "b"}).github_token == "b"
    assert Settings.from_env({"GITHUB_TOKEN": ""}).github_token is None


def test_the_token_is_hidden_and_the_settings_are_frozen() -> None:
    made = Settings.from_env({"GITHUB_TOKEN": "s3cret-token-value"})
    assert isinstance(made.github_token, str)
    assert "s3cret-token-value" not in repr(made) and "s3cret-token-value" not in str(made)
    with pytest.raises(ValidationError):
        made.max_concurrent_actions = 9  # type: ignore[misc]
    copied = made.model_copy(update={"shutdown_grace_seconds": 1.0})
    assert copied.shutdown_grace_seconds == 1.0 and made.shutdown_grace_seconds == 30.0


MALFORMED = [
    ("LI_MAX_CONCURRENT_ACTIONS", "many"),
    ("LI_MAX_CONCURRENT_ACTIONS", "0"),
    ("LI_MAX_CONCURRENT_ACTIONS", "-3"),
    ("LI_KILL_GRACE", "soon"),
    ("LI_KILL_GRACE", "-1"),
    ("LI_SHUTDOWN_GRACE", "nan"),
    ("LI_SYNC_INTERVAL", "inf"),
    ("LI_GITHUB_TIMEOUT", "30s"),
    ("LI_GITHUB_RATE", "1.5"),
    ("LI_GITHUB_RATE", "0"),
    ("LI_POLL_THREADS", "0"),
    ("LI_POLL_THREADS", "500"),
    ("LI_ENV_PASSTHROUGH", "GOOD,1BAD"),
    ("LI_ENV_PASSTHROUGH", "A-B"),
]


@pytest.mark.parametrize(("variable", "raw"), MALFORMED)
def test_a_malformed_value_is_one_line_naming_the_variable(variable: str, raw: str) -> None:
    with pytest.raises(ConfigError) as caught:
        Settings.from_env({variable: raw, "GITHUB_TOKEN": "tok-never-shown"})
    error = caught.value
    assert error.reason == "invalid_setting"
    assert error.message.startswith(variable) and "\n" not in error.message
    assert "tok-never-shown" not in str(error)


@settings(max_examples=150, deadline=None)
@given(
    variable=st.sampled_from(sorted({name for name, _, _, _ in PARSED})),
    raw=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12),
)
def test_any_value_parses_or_is_refused_with_invalid_setting(variable: str, raw: str) -> None:
    """Fail closed: arbitrary text never escapes as a pydantic or other exception."""
    try:
        made = Settings.from_env({variable: raw})
    except ConfigError as error:
        assert error.reason == "invalid_setting" and variable in error.message
    else:
        assert made.max_concurrent_actions >= 1 and made.github_requests_per_minute >= 1
        assert min(made.kill_grace_seconds, made.shutdown_grace_seconds) >= 0
        assert made.sync_interval_seconds > 0 and made.github_timeout_seconds > 0


CHILD = """
import json
from engine.config import Settings
explicit = Settings.from_env({"LI_MAX_CONCURRENT_ACTIONS": "3"})
ambient = Settings.from_env()
keyword = Settings(kill_grace_seconds=1.0)
print(json.dumps({
    "explicit": [explicit.max_concurrent_actions, explicit.github_token,
                 explicit.database_url_is_default],
    "ambient": [ambient.max_concurrent_actions, ambient.github_token,
                ambient.database_url_is_default],
    "keyword": [keyword.max_concurrent_actions, keyword.github_token,
                keyword.database_url_is_default],
}))
"""


def test_the_explicit_mapping_wins_over_os_environ() -> None:
    """A real process whose os.environ holds other values: only from_env() reads them."""
    env = dict(os.environ)
    env.update(
        LI_MAX_CONCURRENT_ACTIONS="9",
        GITHUB_TOKEN="tok-from-os-environ",
        LI_DATABASE_URL="sqlite:////tmp/from-os-environ.db",
    )
    done = subprocess.run(
        [sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True
    )
    seen = json.loads(done.stdout)
    assert seen["explicit"] == [3, None, True]
    assert seen["ambient"] == [9, "tok-from-os-environ", False]
    assert seen["keyword"] == [4, None, True]
