"""kdev init: starter files that validate, units with this host's paths, no overwrite (D75)."""

from __future__ import annotations

import configparser
import os
import pwd
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from wrapper.errors import ConfigError
from wrapper.starterfiles import SOURCES, Host, render_all, starter_dir, this_host

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[2]
TARGETS = sorted(SOURCES)


def kdev(*args: str, cwd: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": f"{BIN}{os.pathsep}/usr/bin:/bin", "HOME": str(cwd), **extra}
    return subprocess.run([str(BIN / "kdev"), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60, check=False)  # fmt: skip


def unit(path: Path) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(path.read_text())
    return parser


def written(directory: Path) -> list[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*") if p.is_file())


def test_init_writes_files_that_validate(tmp_path: Path) -> None:
    out = tmp_path / "site"
    result = kdev("init", "--dir", "site", "--repo", "acme/app", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert written(out) == TARGETS
    assert [line.split()[1] for line in result.stdout.splitlines()[:6]] == [
        str(out / name) for name in SOURCES
    ]
    assert "next:" in result.stdout and "li schedule apply" in result.stdout
    assert ("PrivateTmp=yes hides" in result.stdout) == tmp_path.is_relative_to("/tmp")
    checked = kdev("config", "validate", "--repos-config", str(out / "repos.yaml"), cwd=tmp_path,
                   KDEV_CONFIG=str(out / "kdev.yaml"), OPENAI_API_KEY="sk-test")  # fmt: skip
    assert checked.returncode == 0 and checked.stdout.strip() == "configuration ok", checked
    # Without the starter reviewer's key in the environment, validate says so (D74).
    keyless = kdev("config", "validate", cwd=tmp_path, KDEV_CONFIG=str(out / "kdev.yaml"))
    assert keyless.returncode == 2 and "[reviewer_key_missing]" in keyless.stdout, keyless
    plan = subprocess.run(
        [str(BIN / "li"), "schedule", "apply", str(out / "schedules.yaml"), "--dry-run"],
        cwd=tmp_path,
        env={
            "PATH": f"{BIN}:/usr/bin:/bin",
            "HOME": str(tmp_path),
            "LI_COMMAND_ALLOWLIST": "kdev",
            "LI_DATABASE_URL": f"sqlite:///{tmp_path / 'li.db'}",
        },  # fmt: skip
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert plan.returncode == 0 and "error" not in plan.stderr.lower(), plan.stderr
    assert plan.stdout.split() == [*"CREATE review-prs CREATE pr-sweep".split()] + [
        *"dry run: nothing changed".split()
    ]
    assert "acme/app" in (out / "schedules.yaml").read_text()
    assert "octo/widgets" not in (out / "repos.yaml").read_text()


def test_the_units_name_this_install_the_user_and_the_directory(tmp_path: Path) -> None:
    assert kdev("init", "--dir", str(tmp_path), cwd=tmp_path).returncode == 0
    user = pwd.getpwuid(os.getuid()).pw_name
    for name in ("li-engine.service", "kdev-pr-sweep.service"):
        parsed = unit(tmp_path / "systemd" / name)
        service = parsed["Service"]
        argv = shlex.split(service["ExecStart"])
        assert Path(argv[0]).parent == BIN and Path(argv[0]).is_file(), argv
        assert service["User"] == user and service["WorkingDirectory"] == str(tmp_path)
        assert service["ReadWritePaths"] == str(tmp_path) and "StateDirectory" not in service
        assert service["NoNewPrivileges"] == "yes" and service["ProtectSystem"] == "strict"
        documentation = parsed["Unit"]["Documentation"]
        assert Path(documentation.removeprefix("file://")).is_file(), documentation
    sweep_unit = unit(tmp_path / "systemd" / "kdev-pr-sweep.service")
    sweep = shlex.split(sweep_unit["Service"]["ExecStart"])
    assert sweep[sweep.index("--repos-config") + 1] == str(tmp_path / "repos.yaml")


@pytest.mark.parametrize("present", ["kdev.yaml", "systemd/kdev-pr-sweep.timer"])
def test_an_existing_target_is_refused_and_nothing_is_written(tmp_path: Path, present: str) -> None:
    (tmp_path / present).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / present).write_text("mine\n")
    result = kdev("init", "--dir", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: refusing to overwrite") and line.endswith("[init_target_exists]")
    assert str(tmp_path / present) in line
    assert written(tmp_path) == [present] and (tmp_path / present).read_text() == "mine\n"


def test_a_second_init_is_refused_and_force_overwrites(tmp_path: Path) -> None:
    assert kdev("init", cwd=tmp_path).returncode == 0  # default: the current directory
    (tmp_path / "kdev.yaml").write_text("edited\n")
    again = kdev("init", cwd=tmp_path)
    assert again.returncode == 2 and "[init_target_exists]" in again.stderr
    assert (tmp_path / "kdev.yaml").read_text() == "edited\n"
    forced = kdev("init", "--force", cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert (tmp_path / "kdev.yaml").read_text() == (starter_dir() / "kdev.yaml").read_text()


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--user", "no-such-user-kdev"], "init_unknown_user"),
        (["--repo", "../escape"], "invalid_repo"),
        (["--dir", "with space"], "init_unsafe_path"),
        (["--dir", "100%"], "init_unsafe_path"),
    ],
)
def test_bad_arguments_fail_closed_before_writing(
    tmp_path: Path, args: list[str], reason: str
) -> None:
    result = kdev("init", *args, cwd=tmp_path)
    assert result.returncode == 2 and result.stderr.strip().endswith(f"[{reason}]"), result
    assert written(tmp_path) == []


def test_a_directory_that_cannot_be_made_is_one_error(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("a file, not a directory\n")
    result = kdev("init", "--dir", "taken/site", cwd=tmp_path)
    assert result.returncode == 2, result
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: cannot write ") and line.endswith("[init_write_failed]")
    assert written(tmp_path) == ["taken"]


def test_an_interpreter_without_li_and_kdev_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        this_host(tmp_path, scripts=tmp_path)
    assert caught.value.reason == "init_no_executables"


def test_an_install_under_home_gets_bind_mounts_not_a_hidden_home() -> None:
    """A pipx install lives in ~/.local: ProtectHome=yes would hide ExecStart itself."""
    home = Path("/home/ci/.local/pipx/venvs/pr-review-pipeline")
    host = Host(home / "bin", "ci", "ci", Path("/home/ci/site"), (home, Path("/usr")))
    service = configparser.ConfigParser(strict=False, interpolation=None)
    service.optionxform = str  # type: ignore[assignment,method-assign]
    service.read_string(render_all(host)["systemd/li-engine.service"])
    assert service["Service"]["ProtectHome"] == "tmpfs"
    assert service["Service"]["BindReadOnlyPaths"] == f"{home / 'bin'} {home}"
    assert service["Service"]["BindPaths"] == "/home/ci/site"
    assert service["Service"]["ExecStart"].startswith(f"{home}/bin/li ")


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="needs systemd-analyze")
def test_the_written_units_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    assert kdev("init", "--dir", str(tmp_path), cwd=tmp_path).returncode == 0
    units = sorted(str(p) for p in (tmp_path / "systemd").iterdir())
    result = subprocess.run(
        ["systemd-analyze", "verify", *units], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0 and result.stderr == "", result.stderr


def test_the_repository_paths_are_links_to_the_packaged_starter_files() -> None:
    """One copy (D75): the root examples and contrib/ are links into wrapper/starter/."""
    starter = ROOT / "wrapper" / "starter"
    links = {
        "schedules.example.yaml": starter / "schedules.example.yaml",
        "repos.example.yaml": starter / "repos.example.yaml",
        "contrib/systemd": starter / "systemd",
        "contrib/Containerfile": starter / "Containerfile",
    }
    for name, target in links.items():
        assert (ROOT / name).is_symlink() and (ROOT / name).resolve() == target, name
    assert starter_dir() == starter
