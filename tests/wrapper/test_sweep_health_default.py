"""The sweep's health section covers every github_poll schedule of the repos by default."""

from __future__ import annotations

import os
import subprocess
from typing import Any

from tests.wrapper.test_sweep import BIN, IDENTITY, REPO, Bench, bench, sweep
from wrapper.sweep.config import SweepConfig

__all__ = ["bench"]


def config_of(repos: list[dict[str, Any]], **health: Any) -> SweepConfig:
    """A repos config whose health section is exactly ``health`` (nothing named: default)."""
    return SweepConfig.model_validate(
        {"identity": IDENTITY, "repositories": repos, "health": health}
    )


def test_by_default_every_poll_schedule_of_a_configured_repo_is_checked(bench: Bench) -> None:
    url = f"sqlite:///{bench.root / 'li.db'}"
    env = {
        **os.environ,
        "LI_DATABASE_URL": url,
        "LI_COMMAND_ALLOWLIST": "sh",
        "GITHUB_API_URL": bench.sim.url,
        "GITHUB_TOKEN": "not-a-valid-token",
    }

    def li(*args: str) -> None:
        subprocess.run([str(BIN / "li"), *args], env=env, capture_output=True, check=True)

    li("schedule", "add", "blind-one", "--github", REPO, "--command", "sh", "--", "-c", "true")
    li("schedule", "add", "elsewhere", "--github", "octo/other", "--command", "sh", "--", "true")
    for name in ("blind-one", "elsewhere"):
        for _ in range(3):  # 401 three times in a row: blind
            li("schedule", "trigger", name)
            li("engine", "run", "--once")
    other = {"repo": "octo/unwatched", "checkout": str(bench.checkout)}
    repos = [{"repo": REPO, "checkout": str(bench.checkout)}, other]
    report = sweep(bench, config=config_of(repos, database_url=url))
    found = sorted((p.code, p.subject) for p in report.health)
    # The blind schedule of a configured repo is reported; the one of another repo is
    # not; a configured repo no schedule watches is a line of its own.
    assert ("schedule_blind", "blind-one") in found
    assert not any(subject == "elsewhere" for _, subject in found)
    assert ("schedule_missing", "octo/unwatched") in found
    # An explicit list overrides the default; [] turns the check off.
    off = config_of(repos, database_url=url, review_schedules=[])
    assert not any(p.code.startswith("schedule_") for p in sweep(bench, config=off).health)


def test_by_default_a_missing_li_database_is_reported_not_silent(bench: Bench) -> None:
    repos = [{"repo": REPO, "checkout": str(bench.checkout)}]
    config = config_of(repos, database_url=f"sqlite:///{bench.root / 'none' / 'li.db'}")
    codes = [p.code for p in sweep(bench, config=config).health]
    assert codes == ["health_unreadable"]
