"""li's token sources (D66): the variables, GITHUB_TOKEN_FILE and the systemd credential,
in kdev's precedence and with its one-line error; li non-dumpable from its first verb."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.config import Settings
from engine.credentials import token_from_sources
from engine.errors import ConfigError
from ghsim import GitHubSim

LI = str(Path(sys.executable).with_name("li"))
TOKEN = "ghs_0123456789abcdef0123456789abcdef"
REPO = "octo/widgets"


def _file(path: Path, content: str | bytes) -> str:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return str(path)


def _credentials(tmp_path: Path, content: str | None) -> str:
    directory = tmp_path / "credentials"
    directory.mkdir()
    if content is not None:
        _file(directory / "github_token", content)
    return str(directory)


def test_each_source_alone_gives_the_token(tmp_path: Path) -> None:
    assert Settings.from_env({"GITHUB_TOKEN": TOKEN}).github_token == TOKEN
    assert Settings.from_env({"GH_TOKEN": TOKEN}).github_token == TOKEN
    file = _file(tmp_path / "token", f"  {TOKEN}\n")
    assert Settings.from_env({"GITHUB_TOKEN_FILE": file}).github_token == TOKEN
    credentials = _credentials(tmp_path, f"{TOKEN}\n")
    assert Settings.from_env({"CREDENTIALS_DIRECTORY": credentials}).github_token == TOKEN
    assert Settings.from_env({}).github_token is None


def test_precedence_is_variable_then_gh_token_then_file_then_credential(tmp_path: Path) -> None:
    file = _file(tmp_path / "token", "from-the-file")
    credentials = _credentials(tmp_path, "from-the-credential")
    everything = {
        "GITHUB_TOKEN": "from-github-token",
        "GH_TOKEN": "from-gh-token",
        "GITHUB_TOKEN_FILE": file,
        "CREDENTIALS_DIRECTORY": credentials,
    }
    expected = ["from-github-token", "from-gh-token", "from-the-file", "from-the-credential"]
    names = list(everything)
    for dropped, want in enumerate(expected):
        environ = {name: everything[name] for name in names[dropped:]}
        assert Settings.from_env(environ).github_token == want, environ
        assert token_from_sources(environ) == want
    # An empty variable counts as unset: the next source answers.
    assert Settings.from_env({"GITHUB_TOKEN": "", "GITHUB_TOKEN_FILE": file}).github_token == (
        "from-the-file"
    )


def test_a_variable_wins_without_the_file_being_read(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing")
    made = Settings.from_env({"GITHUB_TOKEN": TOKEN, "GITHUB_TOKEN_FILE": missing})
    assert made.github_token == TOKEN
    assert TOKEN not in repr(made)


def test_a_credentials_directory_without_the_credential_is_no_source(tmp_path: Path) -> None:
    credentials = _credentials(tmp_path, None)
    assert Settings.from_env({"CREDENTIALS_DIRECTORY": credentials}).github_token is None
    assert Settings.from_env({"CREDENTIALS_DIRECTORY": str(tmp_path / "no")}).github_token is None


@pytest.mark.parametrize("content", [None, "", "  \n", b"\xff\xfe token"])
def test_an_unreadable_or_empty_token_file_is_one_line(
    tmp_path: Path, content: str | bytes | None
) -> None:
    path = tmp_path / "token"
    if content is not None:
        _file(path, content)
    with pytest.raises(ConfigError) as caught:
        Settings.from_env({"GITHUB_TOKEN_FILE": str(path)})
    error = caught.value
    assert error.reason == "token_file_unreadable" and error.exit_code == 2
    assert "\n" not in error.message and str(path) in error.message
    assert "token" not in error.message.replace(str(path), "").replace("GITHUB_TOKEN_FILE", "")


def test_a_directory_as_token_file_and_an_empty_credential_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        Settings.from_env({"GITHUB_TOKEN_FILE": str(tmp_path)})
    assert caught.value.reason == "token_file_unreadable"
    credentials = _credentials(tmp_path, "\n")
    with pytest.raises(ConfigError) as caught:
        Settings.from_env({"CREDENTIALS_DIRECTORY": credentials})
    assert caught.value.reason == "token_file_unreadable"
    assert caught.value.message.startswith("systemd credential ")


def test_set_non_dumpable_makes_the_process_non_dumpable() -> None:
    script = (
        "import ctypes; from engine.credentials import set_non_dumpable; "
        "before = ctypes.CDLL(None).prctl(3, 0, 0, 0, 0); ok = set_non_dumpable(); "
        "print(before, ok, ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.split() == ["1", "True", "0"]


def _li(*args: str, env: dict[str, str], code: int = 0) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([LI, *args], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == code, done.stderr
    return done


def test_li_polls_with_a_systemd_credential_and_refuses_an_unreadable_file(
    tmp_path: Path,
) -> None:
    with GitHubSim(tmp_path / "sim") as sim:
        sim.create_repo(REPO)
        sim.add_token(TOKEN, ("li-credential-bot", 900))
        env = {
            "PATH": os.environ.get("PATH", os.defpath),
            "HOME": str(tmp_path),
            "LI_DATABASE_URL": f"sqlite:///{tmp_path / 'li.db'}",
            "LI_COMMAND_ALLOWLIST": "sh",
            "GITHUB_API_URL": sim.url,
            "CREDENTIALS_DIRECTORY": _credentials(tmp_path, f"{TOKEN}\n"),
        }
        _li("schedule", "add", "watch", "--github", REPO, "--command", "sh", env=env)
        sim.advance(5)
        pr = sim.open_pr(REPO, "feature", {"a.py": "1\n"})
        preview = json.loads(_li("schedule", "preview", "watch", "--json", env=env).stdout)
        assert [e["pr_number"] for e in preview["events"]] == [pr.number]
        assert {r.user for r in sim.requests} == {"li-credential-bot"}
        env["GITHUB_TOKEN_FILE"] = str(tmp_path / "missing")
        failed = _li("schedule", "list", env=env, code=2)
    assert failed.stderr.count("\n") == 1 and "[token_file_unreadable]" in failed.stderr
