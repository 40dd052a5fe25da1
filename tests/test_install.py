"""The wheel stands on its own: built, installed into a fresh venv, run with no checkout.

The wheel and its venv come from the session fixture ``installed_wheel`` (tests/wheelkit.py,
which says how it is built offline, docs/decisions.md D18-D20). Every command here runs
from a scratch cwd of this module's own with a scrubbed environment, so nothing of the
checkout is importable.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.wheelkit import ROOT, InstalledWheel, scrubbed_env

REPO = "octo/widgets"
TOKEN = "ghp_InstalledWheelToken0123456789"


@dataclass
class Installed:
    venv: Path
    bin: Path
    work: Path
    env: dict[str, str]

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            list(argv),
            cwd=self.work,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if check:
            assert result.returncode == 0, f"{argv}: {result.stdout}{result.stderr}"
        return result


@pytest.fixture(scope="module")
def installed(
    installed_wheel: InstalledWheel, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Installed]:
    work = tmp_path_factory.mktemp("elsewhere")
    env = {
        **scrubbed_env(installed_wheel, work),
        "LI_DATABASE_URL": f"sqlite:///{work / 'li.db'}",
    }
    yield Installed(installed_wheel.venv, installed_wheel.bin, work, env)


def test_the_installed_packages_come_from_the_wheel_not_the_checkout(
    installed: Installed,
) -> None:
    probe = (
        "import engine, wrapper, ghsim, importlib.metadata as m, json; "
        "print(json.dumps([engine.__file__, wrapper.__file__, ghsim.__file__, "
        "m.version('pr-review-pipeline')]))"
    )
    out = installed.run(str(installed.bin / "python"), "-c", probe).stdout
    *files, version = json.loads(out)
    for file in files:
        assert Path(file).is_relative_to(installed.venv), file
        assert not Path(file).is_relative_to(ROOT), file
    migrations = Path(files[0]).parent / "migrations" / "versions"
    assert sorted(p.name for p in migrations.glob("*.py")) == sorted(
        p.name for p in (ROOT / "engine" / "migrations" / "versions").glob("*.py")
    )
    assert installed.run("li", "--version").stdout.strip() == f"li {version}"
    assert installed.run("kdev", "--version").stdout.strip() == f"kdev {version}"


def test_li_db_upgrade_and_schedule_list_work_from_the_wheel(installed: Installed) -> None:
    upgraded = installed.run("li", "db", "upgrade")
    assert "error" not in upgraded.stderr
    assert json.loads(installed.run("li", "schedule", "list", "--json").stdout) == []
    current = installed.run("li", "db", "current").stdout
    assert "(head;" in current, current


def rpc(url: str, method: str, *args: Any, **kwargs: Any) -> Any:
    body = json.dumps({"method": method, "args": list(args), "kwargs": kwargs}).encode()
    request = urllib.request.Request(
        f"{url}/_ghsim/rpc", data=body, headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())["result"]


def test_kdev_init_from_the_wheel_writes_starter_files_that_validate(
    installed: Installed,
) -> None:
    """The examples, the units and their Documentation= file are package data (D75)."""
    site = installed.work / "site"
    wrote = installed.run("kdev", "init", "--dir", str(site), "--repo", REPO).stdout
    names = sorted(str(p.relative_to(site)) for p in site.rglob("*") if p.is_file())
    assert names == sorted(
        ["kdev.yaml", "schedules.yaml", "repos.yaml"]
        + [f"systemd/{n}" for n in ("li-engine.service", "kdev-pr-sweep.service")]
        + ["systemd/kdev-pr-sweep.timer"]
    ), wrote
    # The starter reviewer's key must be set for validate to pass (it checks, D74).
    env = {**installed.env, "KDEV_CONFIG": str(site / "kdev.yaml"), "OPENAI_API_KEY": "sk-..."}
    checked = subprocess.run(
        ["kdev", "config", "validate", "--repos-config", str(site / "repos.yaml")],
        cwd=installed.work, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert checked.returncode == 0 and checked.stdout.strip() == "configuration ok", checked
    installed.run("li", "db", "upgrade")
    plan = subprocess.run(
        ["li", "schedule", "apply", str(site / "schedules.yaml"), "--dry-run"],
        cwd=installed.work, env={**installed.env, "LI_COMMAND_ALLOWLIST": "kdev"},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert plan.returncode == 0 and "error" not in plan.stderr.lower(), plan.stderr
    assert "CREATE    review-prs" in plan.stdout and "CREATE    pr-sweep" in plan.stdout
    for unit in ("li-engine.service", "kdev-pr-sweep.service"):
        lines = (site / "systemd" / unit).read_text().splitlines()
        (start,) = [line for line in lines if line.startswith("ExecStart=")]
        assert start.startswith(f"ExecStart={installed.bin}/"), start
        (doc,) = [line for line in lines if line.startswith("Documentation=file://")]
        readme = Path(doc.removeprefix("Documentation=file://"))
        assert readme.is_file() and readme.is_relative_to(installed.venv), doc
    again = installed.run("kdev", "init", "--dir", str(site), check=False)
    assert again.returncode == 2 and again.stderr.strip().endswith("[init_target_exists]")
    starter = readme.parent
    for name in ("schedules.example.yaml", "repos.example.yaml", "kdev.yaml", "Containerfile"):
        assert (starter / name).read_bytes() == (ROOT / "wrapper" / "starter" / name).read_bytes()
    assert "--state-dir" in installed.run("ghsim", "--help").stdout


@pytest.fixture
def installed_sim(installed: Installed) -> Iterator[tuple[str, Path]]:
    """The installed wheel's ``ghsim`` console script, in its own process."""
    state = installed.work / "github"
    process = subprocess.Popen(
        [str(installed.bin / "ghsim"), "--port", "0"] + ["--state-dir", str(state), "--repo", REPO],
        cwd=installed.work,
        env={**installed.env, "GHSIM_TOKENS": TOKEN},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        yield url, state
    finally:
        process.terminate()
        process.wait(timeout=30)
        if process.stdout is not None:
            process.stdout.close()


def test_one_fire_runs_kdev_review_pr_from_the_installed_console_scripts(
    installed: Installed, installed_sim: tuple[str, Path]
) -> None:
    url, state = installed_sim
    pr = rpc(url, "open_pr", REPO, "feature", files={"app.py": "x = 1  # TODO\n"})
    checkout = installed.work / "checkout"
    subprocess.run(
        ["git", "clone", "-q", str(state / "repos" / "octo" / "widgets.git"), str(checkout)],
        check=True,
        env=installed.env,
    )
    config = installed.work / "kdev.yaml"
    config.write_text(
        "reviewer:\n  backend: command\n"
        f"  argv: [{installed.bin / 'python'}, -P, -m, wrapper.stub_reviewer]\n"
        "  model: stub-reviewer\n"
        # The stub runs in the reviewer sandbox: it needs the venvs' Pythons and packages.
        f"sandbox_paths: [{installed.bin.parent}, {sys.prefix}, {sys.base_prefix}]\n",
        encoding="utf-8",
    )
    env = {
        **installed.env,
        "LI_COMMAND_ALLOWLIST": "kdev",
        "GITHUB_API_URL": url,
        "GITHUB_TOKEN": TOKEN,
        "KDEV_CONFIG": str(config),
        "KDEV_REVIEWS_DIR": str(installed.work / "reviews"),
    }
    installed.env.update(env)
    installed.run("li", "db", "upgrade")
    installed.run(
        *("li", "schedule", "add", "review-prs", "--github", REPO, "--backfill"),
        *("--cwd", str(checkout)),
        *("--env-passthrough", "GITHUB_API_URL", "--env-passthrough", "GITHUB_TOKEN"),
        *("--env-passthrough", "KDEV_CONFIG", "--env-passthrough", "KDEV_REVIEWS_DIR"),
        *("--command", "kdev", "--", "review-pr", "--repo", "{{ repo }}"),
        *("--pr", "{{ pr_number }}", "--head-sha", "{{ head_sha }}"),
    )
    fired = json.loads(
        installed.run("li", "schedule", "trigger", "review-prs", "--wait", "--json").stdout
    )
    assert fired["status"] == "ok"
    (run,) = fired["runs"]
    assert run["status"] == "succeeded", run
    assert run["trigger_context"]["pr_number"] == pr["number"]
    verdicts = json.loads(installed.run("kdev", "verdicts", "--json").stdout)
    assert [(v["pr"], v["verdict"]) for v in verdicts] == [(pr["number"], "REQUEST_CHANGES")]
    assert TOKEN not in json.dumps(run) + json.dumps(verdicts)
