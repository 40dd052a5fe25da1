"""App authentication (issue 30): JWT -> installation token, shared, refreshed, refused."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from engine.config import Settings
from engine.errors import ConfigError, LiError
from engine.github import GitHubClient
from engine.github.appauth import AppTokenSource
from engine.github.appconfig import AppConfig, app_config_from
from engine.github.tokencache import CachedToken, TokenCache
from ghsim import GitHubSim
from tests.appkit import SimApp, install_app, key_pair

REPO = "octo/widgets"
T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


@pytest.fixture
def sim() -> Iterator[GitHubSim]:
    with GitHubSim() as s:
        s.set_time(T0)
        s.create_repo(REPO)
        s.create_repo("other/thing")
        yield s


@pytest.fixture
def app(sim: GitHubSim, tmp_path: Path) -> SimApp:
    return install_app(sim, tmp_path)


def env_of(sim: GitHubSim, app: SimApp, tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "GITHUB_API_URL": sim.url,
        "GITHUB_APP_ID": str(app.app.id),
        "GITHUB_APP_PRIVATE_KEY_FILE": str(app.key_file),
        "GITHUB_APP_INSTALLATION_ID": str(app.installation.id),
        "GITHUB_APP_TOKEN_CACHE": str(tmp_path / "cache" / "token.json"),
        **extra,
    }


def source_of(settings: Settings, sim: GitHubSim) -> AppTokenSource:
    assert settings.github_app is not None
    return AppTokenSource(settings.github_app, settings, clock=sim.now)


def minted(sim: GitHubSim) -> int:
    return len(sim.requests_to(r"/access_tokens$", "POST"))


def test_a_token_is_minted_once_and_shared_through_a_private_file(sim, app, tmp_path) -> None:
    settings = Settings.from_env(env_of(sim, app, tmp_path))
    first = source_of(settings, sim)
    token = first.token()
    assert token.startswith("ghs_") and minted(sim) == 1
    cache = settings.github_app.cache_path  # type: ignore[union-attr]
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    assert stat.S_IMODE(cache.parent.stat().st_mode) == 0o700
    assert source_of(settings, sim).token() == token  # another process: reads, mints nothing
    assert first.token() == token and minted(sim) == 1
    sim.advance(54 * 60)  # 6 minutes left: outside the 5-minute refresh margin
    assert source_of(settings, sim).token() == token and minted(sim) == 1
    sim.advance(2 * 60)  # 4 minutes left: inside it
    fresh = source_of(settings, sim).token()
    assert fresh != token and minted(sim) == 2
    assert first.token() == fresh and minted(sim) == 2  # the file's new token, not a third


def test_a_cache_file_others_could_write_is_never_used(sim, app, tmp_path) -> None:
    settings = Settings.from_env(env_of(sim, app, tmp_path))
    source = source_of(settings, sim)
    source.token()
    cache = TokenCache(settings.github_app.cache_path)  # type: ignore[union-attr]
    planted = CachedToken("ghs_planted", T0 + timedelta(hours=1), app.installation.id)
    cache.write(planted)
    cache.path.chmod(0o644)
    assert cache.read() is None
    assert source_of(settings, sim).token() != "ghs_planted"
    cache.path.write_text("{not json")
    cache.path.chmod(0o600)
    assert cache.read() is None


def test_requests_go_with_a_token_refreshed_mid_pass_and_a_401_mints_once_more(
    sim, app, tmp_path
) -> None:
    settings = Settings.from_env(env_of(sim, app, tmp_path))
    source = source_of(settings, sim)
    sim.open_pr(REPO, "feature", {"a.txt": "a\n"})
    with GitHubClient(settings, token_source=source, record_rates=False) as client:
        for _ in range(3):
            assert len(client.request("GET", f"repos/{REPO}/pulls", expect=list)) == 1
            sim.advance(28 * 60)  # the third request is past the first token's refresh point
        assert minted(sim) == 2
        sim.remove_token(source.token())  # GitHub stops taking it before its expiry
        before = len(sim.requests_to(rf"/repos/{REPO}/pulls$"))
        assert client.request("GET", f"repos/{REPO}/pulls", expect=list)
        statuses = [r.status for r in sim.requests_to(rf"/repos/{REPO}/pulls$")]
        assert statuses[before:] == [401, 200] and minted(sim) == 3


def _error(settings: Settings, sim: GitHubSim) -> LiError:
    with pytest.raises(LiError) as caught:
        source_of(settings, sim).token()
    message = str(caught.value)
    assert "\n" not in message and "PRIVATE KEY" not in message and "ghs_" not in message
    return caught.value


def test_each_refusal_is_one_line_with_its_reason(sim, app, tmp_path) -> None:
    env = env_of(sim, app, tmp_path)
    settings = Settings.from_env(env)
    sim.suspend_installation(app.installation.id)
    assert _error(settings, sim).reason == "app_installation_suspended"
    sim.unsuspend_installation(app.installation.id)
    sim.add_app_key(app.app.id, key_pair(1).public)
    sim.revoke_app_key(app.app.id, app.keys.public)
    revoked = _error(settings, sim)
    assert revoked.reason == "app_key_rejected" and "revoked" in revoked.message
    sim.add_app_key(app.app.id, app.keys.public)
    ahead = AppTokenSource(
        settings.github_app,  # type: ignore[arg-type]
        settings,
        clock=lambda: sim.now() + timedelta(minutes=5),
    )
    with pytest.raises(LiError) as skew:
        ahead.token()
    assert skew.value.reason == "app_clock_skew" and "clock" in skew.value.message
    behind = AppTokenSource(
        settings.github_app,  # type: ignore[arg-type]
        settings,
        clock=lambda: sim.now() - timedelta(minutes=15),
    )
    with pytest.raises(LiError) as late:
        behind.token()
    assert late.value.reason == "app_clock_skew"
    outside = Settings.from_env({**env, "GITHUB_APP_REPOSITORY": "other/thing"})
    refused = _error(outside, sim)
    assert refused.reason == "app_not_installed" and "other/thing" in refused.message
    foreign = sim.install_app(sim.create_app("foreign", key_pair(1).public).id, "other")
    mismatch = Settings.from_env({**env, "GITHUB_APP_INSTALLATION_ID": str(foreign.id)})
    assert _error(mismatch, sim).reason == "app_not_installed"
    app.key_file.write_text("not a key")
    assert _error(settings, sim).reason == "app_key_unreadable"


def test_the_installation_is_discovered_from_the_repository(sim, app, tmp_path) -> None:
    env = env_of(sim, app, tmp_path)
    del env["GITHUB_APP_INSTALLATION_ID"]
    settings = Settings.from_env({**env, "GITHUB_APP_REPOSITORY": REPO})
    assert source_of(settings, sim).token().startswith("ghs_")
    cached = TokenCache(settings.github_app.cache_path).read()  # type: ignore[union-attr]
    assert cached is not None and cached.installation_id == app.installation.id


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        ({"GITHUB_APP_ID": "abc"}, "invalid_app_config"),
        ({"GITHUB_APP_PRIVATE_KEY_FILE": ""}, "invalid_app_config"),
        ({"GITHUB_APP_INSTALLATION_ID": "12x"}, "invalid_app_config"),
        ({"GITHUB_APP_REPOSITORY": "no-slash"}, "invalid_app_config"),
        ({"GITHUB_TOKEN": "ghp_also"}, "ambiguous_github_auth"),
        ({"GITHUB_TOKEN_FILE": "/etc/token"}, "ambiguous_github_auth"),
    ],
)
def test_a_bad_app_configuration_is_refused(sim, app, tmp_path, extra, reason) -> None:
    with pytest.raises(ConfigError) as caught:
        Settings.from_env(env_of(sim, app, tmp_path, **extra))
    assert caught.value.reason == reason


def test_without_an_app_id_the_other_variables_are_a_mistake() -> None:
    assert app_config_from({}) is None
    with pytest.raises(ConfigError, match="without GITHUB_APP_ID"):
        app_config_from({"GITHUB_APP_INSTALLATION_ID": "5"})
    with pytest.raises(ConfigError, match="GITHUB_APP_INSTALLATION_ID or GITHUB_APP_REPOSITORY"):
        app_config_from({"GITHUB_APP_ID": "5", "GITHUB_APP_PRIVATE_KEY_FILE": "/k"})


def test_the_identity_and_the_repr_name_no_secret(sim, app, tmp_path) -> None:
    settings = Settings.from_env(env_of(sim, app, tmp_path))
    config = settings.github_app
    assert isinstance(config, AppConfig)
    source = source_of(settings, sim)
    token = source.token()
    assert config.identity == f"github-app:{app.app.id}:{app.installation.id}"
    shown = repr(source) + repr(TokenCache(config.cache_path).read()) + repr(settings)
    assert token not in shown and "PRIVATE" not in shown
    assert json.loads(config.cache_path.read_text())["token"] == token
    assert replace(config, installation_id=None).identity.endswith(":None")
    assert os.environ.get("GITHUB_APP_ID") is None


def test_every_app_refusal_has_a_health_cause_and_a_class() -> None:
    from engine.github import appauth
    from engine.github.appconfig import APP_AUTH_REASONS
    from engine.health.assess import APP_AUTH_ADVICE

    assert set(APP_AUTH_ADVICE) == APP_AUTH_REASONS
    kinds = {
        getattr(appauth, name).REASON
        for name in dir(appauth)
        if name.startswith("App") and hasattr(getattr(appauth, name), "REASON")
    }
    assert kinds == APP_AUTH_REASONS


def test_the_jwt_is_rs256_issued_a_minute_back_and_expires_within_ten_minutes() -> None:
    import jwt

    from engine.github.appauth import mint_jwt

    token = mint_jwt("123456", key_pair().private, T0)
    assert jwt.get_unverified_header(token)["alg"] == "RS256"
    claims = jwt.decode(
        token, key_pair().public, algorithms=["RS256"], options={"verify_exp": False}
    )
    epoch = int(T0.timestamp())
    assert claims == {"iat": epoch - 60, "exp": epoch + 540, "iss": "123456"}
    with pytest.raises(jwt.InvalidSignatureError):
        jwt.decode(token, key_pair(1).public, algorithms=["RS256"], options={"verify_exp": False})


def test_a_second_401_is_the_callers_error_not_a_loop(sim, app, tmp_path) -> None:
    from engine.github import GitHubError

    settings = Settings.from_env(env_of(sim, app, tmp_path))
    source = source_of(settings, sim)
    sim.inject_fault("GET", rf"^/repos/{REPO}/pulls$", status=401, times=2)
    with GitHubClient(settings, token_source=source, record_rates=False) as client:
        with pytest.raises(GitHubError) as caught:
            client.request("GET", f"repos/{REPO}/pulls", expect=list)
        assert caught.value.reason == "auth_error"
        assert [r.status for r in sim.requests_to(rf"/repos/{REPO}/pulls$")] == [401, 401]
        assert minted(sim) == 2  # the first token, and the one tried after the 401
        assert client.request("GET", f"repos/{REPO}/pulls", expect=list) == []
