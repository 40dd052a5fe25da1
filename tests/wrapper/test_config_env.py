"""kdev's light reader of the GitHub settings agrees with ``Settings.from_env`` (issue 19).

wrapper.config_env.github_settings keeps pydantic-settings off ``kdev review-pr``'s fast
path. It must give the fields the GitHub client reads exactly as ``Settings`` gives
them, and every error exactly as ``Settings`` raises it: hypothesis draws environments
from every variable ``Settings`` reads (its field names too, lowercase look-alikes and
unrelated names) with plain, odd and malformed values, and both readers are compared.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import AliasChoices

from engine import config as engine_config
from engine.config import Settings
from engine.errors import ConfigError
from engine.plainenv import FIELD_NAMES, NAME, VARIABLES
from wrapper import config_env
from wrapper.config_env import GitHubEnv, github_settings, read_plain

FIELDS = (
    "github_api_url",
    "github_token",
    "github_timeout_seconds",
    "github_requests_per_minute",
    "github_max_body_bytes",
    "github_deadline_seconds",
    "github_max_redirects",
)


def outcome(read: object, environ: Mapping[str, str]) -> tuple[object, ...]:
    """The GitHub fields, or the error's message and reason code."""
    try:
        value = read(environ)  # type: ignore[operator]
    except ConfigError as exc:
        return ("error", str(exc), exc.reason)
    return tuple(getattr(value, name) for name in FIELDS)


def test_the_reader_knows_every_variable_settings_reads() -> None:
    """A new Settings field fails here until config_env knows its variable: the light
    reader could otherwise accept an environment that Settings refuses."""
    aliases: set[str] = set()
    for field in Settings.model_fields.values():
        alias = field.validation_alias
        if isinstance(alias, AliasChoices):
            aliases.update(str(choice) for choice in alias.choices)
        elif alias is not None:
            aliases.add(str(alias))
    assert aliases == set(VARIABLES)
    assert set(Settings.model_fields) == FIELD_NAMES
    assert config_env.DEFAULT_GITHUB_API_URL == engine_config.DEFAULT_GITHUB_API_URL
    assert NAME.pattern == engine_config._NAME.pattern


def test_a_pipeline_environment_is_read_without_pydantic_settings() -> None:
    """What the engine passes to kdev (demo.run_demo's environment and more): the plain
    reader answers, and with Settings' values."""
    environ = {
        "PATH": "/usr/bin",
        "HOME": "/tmp/li-home",
        "LI_DATABASE_URL": "sqlite:////var/lib/li/li.db",
        "LI_COMMAND_ALLOWLIST": "kdev, git",
        "LI_ENV_PASSTHROUGH": "GITHUB_API_URL,GITHUB_TOKEN,KDEV_CONFIG",
        "GITHUB_API_URL": "http://127.0.0.1:8080/api/",
        "GITHUB_TOKEN": "",
        "GH_TOKEN": "tok-1",
        "LI_GITHUB_TIMEOUT": "0",
        "LI_GITHUB_RATE": "120",
        "LI_POLL_THREADS": "8",
        "KDEV_CONFIG": "/etc/kdev.yaml",
    }
    plain = read_plain(environ)
    assert isinstance(plain, GitHubEnv)
    assert isinstance(github_settings(environ), GitHubEnv)
    assert plain == GitHubEnv("http://127.0.0.1:8080/api", "tok-1", 30.0, 120)
    assert outcome(github_settings, environ) == outcome(Settings.from_env, environ)
    assert outcome(github_settings, {}) == outcome(Settings.from_env, {})


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("LI_GITHUB_RATE", "abc"),
        ("LI_GITHUB_RATE", "0"),
        ("LI_GITHUB_TIMEOUT", "-1"),
        ("LI_GITHUB_TIMEOUT", "nan"),
        ("LI_POLL_THREADS", "101"),
        ("LI_MAX_CONCURRENT_ACTIONS", "four"),
        ("LI_ENV_PASSTHROUGH", "GOOD,not-a-name"),
        ("LI_RUNS_KEEP_DAYS", "0"),
        ("LI_GITHUB_MAX_BODY_BYTES", "1023"),
        ("LI_GITHUB_DEADLINE", "0.5"),
        ("LI_GITHUB_MAX_REDIRECTS", "21"),
        ("heartbeat_interval_seconds", "soon"),
    ],
)
def test_a_malformed_setting_fails_as_settings_fails(name: str, value: str) -> None:
    """Fail closed: the light reader never turns a refused environment into a client."""
    environ = {"GITHUB_TOKEN": "tok", name: value}
    assert read_plain(environ) is None
    with pytest.raises(ConfigError) as caught:
        github_settings(environ)
    assert caught.value.reason == "invalid_setting"
    assert outcome(github_settings, environ) == outcome(Settings.from_env, environ)


NAMES = sorted(
    {*VARIABLES, *FIELD_NAMES, *(name.lower() for name in VARIABLES), "PATH", "LI_OTHER"}
)
ODD = [
    "", " ", "0", "1", "7", "00", "007", "30", "100", "101", "810", "999999999", "1e3",
    "+5", "-1", " 5", "5 ", "5\n", "1_000", "1.5", "0.0", ".5", "5.", "0.000000001",
    "inf", "nan", "-0", "true", "abc", "a,b", "A_1, B2", "9X", "http://h/api//",
    "tok\udcff", "\u0663",
]  # fmt: skip


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(
        st.sampled_from(NAMES),
        st.one_of(st.sampled_from(ODD), st.text(max_size=6), st.from_regex(r"[0-9.]{1,6}")),
        max_size=6,
    )
)
def test_both_readers_agree(environ: dict[str, str]) -> None:
    light = outcome(github_settings, environ)
    assert light == outcome(Settings.from_env, environ)
    if read_plain(environ) is not None:  # the fast answer is one Settings accepts
        assert light[0] != "error"


@pytest.mark.parametrize(
    "environ",
    [
        {"GITHUB_TOKEN": "tok-a", "GH_TOKEN": "tok-b"},
        {"GITHUB_TOKEN": "", "GH_TOKEN": "tok-b"},
        {"GH_TOKEN": " "},
        {"LI_GITHUB_TIMEOUT": "0.0", "GITHUB_API_URL": "https://ghe.example/api/v3//"},
        {"LI_GITHUB_TIMEOUT": "2.5", "LI_GITHUB_RATE": "1"},
        {"GITHUB_API_URL": ""},
        {"LI_GITHUB_MAX_BODY_BYTES": "1024", "LI_GITHUB_DEADLINE": "2.5"},
        {"LI_GITHUB_MAX_REDIRECTS": "0"},
    ],
)
def test_precedence_and_defaults_are_those_of_settings(environ: dict[str, str]) -> None:
    assert read_plain(environ) is not None
    assert outcome(github_settings, environ) == outcome(Settings.from_env, environ)


PLAIN = st.one_of(
    st.from_regex(r"(0|[1-9][0-9]{0,3})(\.[0-9]{1,3})?", fullmatch=True),
    st.sampled_from(["", "tok-a", "tok-b", "https://h/api/", "A,B_2", "kdev, git"]),
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(VARIABLES)), PLAIN, max_size=8))
def test_both_readers_agree_on_plain_environments(environ: dict[str, str]) -> None:
    """Mostly the fast answer: the GitHub values themselves must be Settings' values."""
    assert outcome(github_settings, environ) == outcome(Settings.from_env, environ)
