"""engine.plainenv answers for ``Settings.from_env`` only when it plainly accepts the
environment, and then with its database URL (issue 25): hypothesis draws environments
from every variable ``Settings`` reads (its field names too, lowercase look-alikes and
unrelated names) with plain, odd and malformed values, and both are compared."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import AliasChoices

from engine import config as engine_config
from engine import plainenv
from engine.config import Settings
from engine.errors import ConfigError
from engine.plainenv import FIELD_NAMES, VARIABLES, plain_database_url


def settings_url(environ: Mapping[str, str]) -> tuple[str, str]:
    """``Settings.from_env``'s database URL, or its error and reason code."""
    try:
        return ("url", Settings.from_env(environ).database_url)
    except ConfigError as exc:
        return ("error", exc.reason)


def test_it_knows_every_variable_settings_reads() -> None:
    """A new Settings field fails here until plainenv knows its variable: it could
    otherwise accept an environment that Settings refuses."""
    aliases: set[str] = set()
    for field in Settings.model_fields.values():
        alias = field.validation_alias
        if isinstance(alias, AliasChoices):
            aliases.update(str(choice) for choice in alias.choices)
        elif alias is not None:
            aliases.add(str(alias))
    assert aliases == set(VARIABLES)
    assert set(Settings.model_fields) == FIELD_NAMES
    assert plainenv.NAME.pattern == engine_config._NAME.pattern
    assert engine_config.default_database_url() == Settings().database_url


def test_a_pipeline_environment_is_answered_with_settings_url() -> None:
    environ = {
        "PATH": "/usr/bin",
        "LI_DATABASE_URL": " sqlite:////var/lib/li/li.db ",
        "LI_COMMAND_ALLOWLIST": "kdev, git",
        "LI_ENV_PASSTHROUGH": "GITHUB_API_URL,GITHUB_TOKEN,KDEV_CONFIG",
        "GITHUB_TOKEN": "",
        "GH_TOKEN": "tok-1",
        "LI_GITHUB_RATE": "120",
        "LI_POLL_THREADS": "8",
        "LI_GITHUB_MAX_BODY_BYTES": "2048",
    }
    assert plain_database_url(environ) == "sqlite:////var/lib/li/li.db"
    assert settings_url(environ) == ("url", plain_database_url(environ))
    assert plain_database_url({}) == Settings.from_env({}).database_url
    assert plain_database_url({"LI_DATABASE_URL": "  "}) == Settings.from_env({}).database_url


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("LI_GITHUB_RATE", "0"),
        ("LI_GITHUB_TIMEOUT", "-1"),
        ("LI_POLL_THREADS", "101"),
        ("LI_MAX_CONCURRENT_ACTIONS", "four"),
        ("LI_ENV_PASSTHROUGH", "GOOD,not-a-name"),
        ("LI_GITHUB_MAX_BODY_BYTES", "1023"),
        ("LI_GITHUB_DEADLINE", "0.5"),
        ("LI_GITHUB_MAX_REDIRECTS", "21"),
        ("heartbeat_interval_seconds", "soon"),
    ],
)
def test_a_malformed_setting_is_never_answered(name: str, value: str) -> None:
    """Fail closed: Settings' own one-line error is what the caller then gets."""
    assert plain_database_url({name: value}) is None
    assert settings_url({name: value}) == ("error", "invalid_setting")


NAMES = sorted(
    {*VARIABLES, *FIELD_NAMES, *(name.lower() for name in VARIABLES), "PATH", "LI_OTHER"}
    | {"GITHUB_TOKEN_FILE", "CREDENTIALS_DIRECTORY"}
)
ODD = [
    "", " ", "0", "1", "7", "00", "30", "101", "1024", "999999999", "1e3", "+5", "-1",
    " 5", "5\n", "1_000", "1.5", ".5", "5.", "inf", "nan", "true", "abc", "A_1, B2",
    "sqlite:///x.db", "tok\udcff", "\u0663",
]  # fmt: skip


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(
        st.sampled_from(NAMES),
        st.one_of(st.sampled_from(ODD), st.text(max_size=6), st.from_regex(r"[0-9.]{1,6}")),
        max_size=6,
    )
)
def test_an_answer_is_always_settings_answer(environ: dict[str, str]) -> None:
    answer = plain_database_url(environ)
    if answer is not None:
        assert settings_url(environ) == ("url", answer)
