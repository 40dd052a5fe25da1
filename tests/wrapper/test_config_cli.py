"""kdev config validate / show: every problem at once, FILE:LINE, JSON; --config wins."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent

KDEV_YAML = """\
reviewer:
  backend: command
  argv: [x]
  model: m
  timeout_seconds: -1
budgets:
  daily_legs_per_repo: many
notify:
  - {type: telegram}
bogus: 1
"""
REPOS_YAML = """\
identity:
  name: x
repositories: 5
"""


def kdev(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ["PATH"], "HOME": str(cwd)}
    return subprocess.run([str(BIN / "kdev"), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60, check=False)  # fmt: skip


def test_validate_reports_every_problem_with_its_line(tmp_path: Path) -> None:
    (tmp_path / "kdev.yaml").write_text(KDEV_YAML)
    (tmp_path / "repos.yaml").write_text(REPOS_YAML)
    result = kdev("--config", "kdev.yaml", "config", "validate", "--repos-config", "repos.yaml",
                  cwd=tmp_path)  # fmt: skip
    assert result.returncode == 2
    assert result.stdout.splitlines() == [
        "kdev.yaml:5: reviewer.timeout_seconds: input should be greater than or equal to 1, got -1",
        "kdev.yaml:7: budgets.daily_legs_per_repo: input should be a valid integer, got 'many'",
        result.stdout.splitlines()[2],
        "kdev.yaml:10: (top level): unknown key 'bogus'",
        "repos.yaml:1: identity: missing required key 'email'",
        "repos.yaml:3: repositories: input should be a valid list, got 5",
    ]
    assert result.stdout.splitlines()[2].startswith("kdev.yaml:9: notify[0]: ")
    assert result.stderr.strip() == "error: 6 problem(s) in the configuration [invalid_config]"
    as_json = kdev("--config", "kdev.yaml", "config", "validate", "--json", cwd=tmp_path)
    shown = json.loads(as_json.stdout)
    assert shown["ok"] is False and [p["line"] for p in shown["problems"]] == [5, 7, 9, 10]


def test_validate_a_good_config_and_a_yaml_syntax_error(tmp_path: Path) -> None:
    (tmp_path / "kdev.yaml").write_text("budgets:\n  daily_legs_per_repo: 3\n")
    good = kdev("--config", "kdev.yaml", "config", "validate", cwd=tmp_path)
    assert good.returncode == 0 and good.stdout.strip() == "configuration ok"
    (tmp_path / "broken.yaml").write_text("budgets:\n  daily_legs_per_repo: [3\n")
    broken = kdev("--config", "broken.yaml", "config", "validate", cwd=tmp_path)
    assert broken.returncode == 2 and broken.stdout.startswith("broken.yaml:")
    assert "not valid YAML" in broken.stdout


def test_show_prints_the_effective_config(tmp_path: Path) -> None:
    (tmp_path / "kdev.yaml").write_text("budgets:\n  daily_legs_per_repo: 3\n")
    shown = kdev("--config", "kdev.yaml", "config", "show", "--json", cwd=tmp_path)
    data = json.loads(shown.stdout)
    assert data["budgets"]["daily_legs_per_repo"] == 3
    assert data["budgets"]["max_concurrent_legs_per_repo"] == 2  # a default, shown
    nothing = kdev("config", "validate", cwd=tmp_path)
    assert nothing.returncode == 2 and nothing.stderr.strip().endswith("[usage_error]")


def test_show_withholds_a_webhook_urls_secret_path(tmp_path: Path) -> None:
    hook = "https://hooks.example.test/services/T0SECRET/B0SECRET/abcdefghijklmnopqrstuvwx"
    (tmp_path / "kdev.yaml").write_text(f"notify:\n  - {{type: webhook, url: '{hook}'}}\n")
    for args in (("--json",), ()):
        shown = kdev("--config", "kdev.yaml", "config", "show", *args, cwd=tmp_path)
        assert shown.returncode == 0, shown.stderr
        assert "T0SECRET" not in shown.stdout and "abcdefghijklmnop" not in shown.stdout
        assert "<withheld>" in shown.stdout
