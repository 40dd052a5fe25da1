"""contrib/systemd units and the Containerfile: verified, hardened, pointing at real verbs."""

from __future__ import annotations

import configparser
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engine.credentials import CREDENTIAL_NAME

ROOT = Path(__file__).resolve().parent.parent
UNITS = ROOT / "contrib" / "systemd"
BIN = Path(sys.executable).parent
INSTALLED_BIN = "/opt/pr-review/bin/"
HARDENING = {
    "NoNewPrivileges": "yes",
    "ProtectSystem": "strict",
    "PrivateTmp": "yes",
    "ProtectHome": "yes",
}


def unit(name: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string((UNITS / name).read_text())
    return parser


@pytest.mark.parametrize("name", ["li-engine.service", "kdev-pr-sweep.service"])
def test_services_are_hardened_and_read_secrets_from_a_file(name: str) -> None:
    service = unit(name)["Service"]
    for key, value in HARDENING.items():
        assert service.get(key) == value, key
    assert service["EnvironmentFile"].startswith("/etc/")
    assert "TOKEN" not in service.get("ExecStart", "") and "Environment" not in service


@pytest.mark.parametrize("name", ["li-engine.service", "kdev-pr-sweep.service"])
def test_services_load_the_github_token_as_a_systemd_credential(name: str) -> None:
    """The token reaches li and kdev as ``$CREDENTIALS_DIRECTORY/github_token``, never
    through an environment block (D66)."""
    text = (UNITS / name).read_text()
    credential, _, source = unit(name)["Service"]["LoadCredential"].partition(":")
    assert credential == CREDENTIAL_NAME and source.startswith("/etc/pr-review/")
    assert "GITHUB_TOKEN=" not in text and "GH_TOKEN" not in text


def test_the_documented_env_file_holds_no_github_token() -> None:
    """docs/operations.md's engine.env passes the credential's directory through to kdev
    and holds no token; the token file is the unit's LoadCredential source."""
    operations = (ROOT / "docs" / "operations.md").read_text()
    lines = operations.splitlines()
    passthrough = next(line for line in lines if line.startswith("LI_ENV_PASSTHROUGH="))
    assert "CREDENTIALS_DIRECTORY" in passthrough.split("=", 1)[1].split(",")
    assert not any(line.startswith(("GITHUB_TOKEN=", "GH_TOKEN=")) for line in lines)
    source = unit("li-engine.service")["Service"]["LoadCredential"].partition(":")[2]
    assert source in operations


def test_the_engine_restarts_and_drains() -> None:
    engine = unit("li-engine.service")
    service = engine["Service"]
    assert service["Restart"] == "on-failure" and service["KillSignal"] == "SIGTERM"
    argv = shlex.split(service["ExecStart"])
    assert argv[0] == INSTALLED_BIN + "li" and argv[argv.index("engine") + 1] == "run"
    assert "--drain-timeout" in argv and "--metrics-addr" in argv
    assert engine["Unit"]["StartLimitBurst"]
    assert unit("kdev-pr-sweep.timer")["Timer"]["OnCalendar"]


def test_exec_start_lines_are_valid_invocations() -> None:
    """Every ExecStart parses with the real program (its --help for those arguments)."""
    for name in ("li-engine.service", "kdev-pr-sweep.service"):
        argv = shlex.split(unit(name)["Service"]["ExecStart"])
        program = argv[0].removeprefix(INSTALLED_BIN)
        checked = subprocess.run(
            [str(BIN / program), *argv[1:], "--help"], capture_output=True, text=True, timeout=60
        )
        assert checked.returncode == 0, (name, checked.stderr)


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="needs systemd-analyze")
def test_systemd_analyze_verify(tmp_path: Path) -> None:
    for path in UNITS.iterdir():
        text = path.read_text().replace(INSTALLED_BIN, f"{BIN}/")
        (tmp_path / path.name).write_text(text)
    result = subprocess.run(
        ["systemd-analyze", "verify", *sorted(str(p) for p in tmp_path.iterdir())],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0 and result.stderr == "", result.stderr


def test_the_containerfile_installs_the_wheel_and_runs_the_engine() -> None:
    text = (ROOT / "contrib" / "Containerfile").read_text()
    assert "pip install" in text and ".whl" in text
    assert 'CMD ["li", "--log-format", "json", "engine", "run"' in text
    assert "USER " in text


def test_the_engine_unit_leaves_room_for_the_reviewer_sandbox() -> None:
    """bwrap needs new namespaces and a fresh /proc: options that forbid them (or mask
    parts of the host's /proc, which makes the kernel refuse the new mount) would push
    every review into the weaker fallback, or refuse it under ``sandbox: required``."""
    service = unit("li-engine.service")["Service"]
    for key in ("RestrictNamespaces", "ProtectKernelTunables", "ProtectKernelLogs",
                "ProtectControlGroups", "ProcSubset"):  # fmt: skip
        assert key not in service, key
