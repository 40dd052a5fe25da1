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


def kdev(*args: str, cwd: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ["PATH"], "HOME": str(cwd), **extra}
    return subprocess.run([str(BIN / "kdev"), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60, check=False)  # fmt: skip


def test_validate_reports_every_problem_with_its_line(tmp_path: Path) -> None:
    (tmp_path / "kdev.yaml").write_text(KDEV_YAML)
    (tmp_path / "repos.yaml").write_text(REPOS_YAML)
    result = kdev("--config", "kdev.yaml", "config", "validate", "--repos-config", "repos.yaml",
                  cwd=tmp_path)  # fmt: skip
    assert result.returncode == 2
    path = os.environ["PATH"]
    assert result.stdout.splitlines() == [
        f"kdev.yaml:3: reviewer.argv[0]: reviewer executable 'x' is not on PATH {path!r}"
        " [reviewer_spawn_failed]",
        "kdev.yaml:5: reviewer.timeout_seconds: input should be greater than or equal to 1,"
        " got -1 [invalid_config]",
        "kdev.yaml:7: budgets.daily_legs_per_repo: input should be a valid integer, got 'many'"
        " [invalid_config]",
        result.stdout.splitlines()[3],
        "kdev.yaml:10: (top level): unknown key 'bogus' [invalid_config]",
        "repos.yaml:1: identity: missing required key 'email' [invalid_config]",
        "repos.yaml:3: repositories: input should be a valid list, got 5 [invalid_config]",
    ]
    assert result.stdout.splitlines()[3].startswith("kdev.yaml:9: notify[0]: ")
    assert result.stderr.strip() == "error: 7 problem(s) in the configuration [invalid_config]"
    as_json = kdev("--config", "kdev.yaml", "config", "validate", "--json", cwd=tmp_path)
    shown = json.loads(as_json.stdout)
    assert shown["ok"] is False and [p["line"] for p in shown["problems"]] == [3, 5, 7, 9, 10]
    assert shown["problems"][0]["reason"] == "reviewer_spawn_failed"
    assert as_json.returncode == 2


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


# == what the config names must exist (D74) ==============================================


CMD = "backend: command\n"


def validate(tmp_path: Path, text: str, **env: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "kdev.yaml").write_text(text)
    return kdev("--config", "kdev.yaml", "config", "validate", cwd=tmp_path, **env)


def tool(tmp_path: Path) -> Path:
    """An executable file outside the sandbox's system directories."""
    path = tmp_path / "bin" / "reviewer-cli"
    path.parent.mkdir(exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


def test_a_reviewer_executable_not_on_path_is_a_problem(tmp_path: Path) -> None:
    result = validate(tmp_path, f"reviewer:\n  {CMD}  argv: [no-such-cli-x1]\n")
    assert result.returncode == 2, result
    [line] = result.stdout.splitlines()
    assert line.startswith("kdev.yaml:3: reviewer.argv[0]: reviewer executable 'no-such-cli-x1'")
    assert line.endswith(" [reviewer_spawn_failed]")
    absent = f"reviewer:\n  {CMD}  argv: [{tmp_path}/nothing]\nsandbox: 'off'\n"
    missing = validate(tmp_path, absent)
    assert missing.returncode == 2
    assert f"{tmp_path}/nothing is not an executable file" in missing.stdout
    relative = validate(tmp_path, f"reviewer:\n  {CMD}  argv: [bin/x]\nsandbox: 'off'\n")
    assert "must be a bare name or an absolute path" in relative.stdout
    found = validate(tmp_path, f"reviewer:\n  {CMD}  argv: [sh, -c, 'true']\n")  # /usr/bin/sh
    assert found.returncode == 0 and found.stdout.strip() == "configuration ok", found


def test_an_executable_outside_the_sandbox_is_a_problem_unless_bound(tmp_path: Path) -> None:
    cli = tool(tmp_path)
    text = f"reviewer:\n  {CMD}  argv: [{cli}]\nsandbox: required\n"
    outside = validate(tmp_path, text)
    assert outside.returncode == 2
    assert outside.stdout.strip() == (
        f"kdev.yaml:3: reviewer.argv[0]: reviewer executable {cli} is not visible in the"
        " sandbox; add its directory to sandbox_paths (sandbox: required)"
        " [reviewer_spawn_failed]"
    )
    bound = validate(tmp_path, text + f"sandbox_paths: [{cli.parent}]\n")
    assert bound.returncode == 0, bound.stdout
    off = validate(tmp_path, f"reviewer:\n  {CMD}  argv: [{cli}]\nsandbox: 'off'\n")
    assert off.returncode == 0, off.stdout
    # On PATH, found outside the sandbox too (the rule applies to what PATH resolves to).
    on_path = validate(
        tmp_path, f"reviewer:\n  {CMD}  argv: [reviewer-cli]\n", PATH=f"{cli.parent}:/usr/bin:/bin"
    )
    assert "is not visible in the sandbox" in on_path.stdout


def test_an_unset_key_variable_is_a_problem(tmp_path: Path) -> None:
    text = (
        "reviewer:\n  backend: openai\n  base_url: https://llm.example.test/v1\n"
        "  model: m\n  api_key_env: MY_LLM_KEY\n"
    )
    unset = validate(tmp_path, text)
    assert unset.returncode == 2
    assert unset.stdout.strip() == (
        "kdev.yaml:5: reviewer.api_key_env: the API key variable MY_LLM_KEY is not set"
        " (or empty) in kdev's environment [reviewer_key_missing]"
    )
    assert validate(tmp_path, text, MY_LLM_KEY="").returncode == 2  # empty counts as unset
    assert validate(tmp_path, text, MY_LLM_KEY="k-1").returncode == 0
    proxied = (
        f"reviewer:\n  {CMD}  argv: [sh]\n  api_proxy:\n    upstream: https://llm.example.test\n"
        "    key_env: PROXY_KEY\n    base_url_env: [LLM_BASE_URL]\n"
    )
    result = validate(tmp_path, proxied)
    assert result.stdout.startswith("kdev.yaml:6: reviewer.api_proxy.key_env: the API key")
    assert result.stdout.strip().endswith("[reviewer_key_missing]")


def test_two_problems_are_both_reported_with_their_lines(tmp_path: Path) -> None:
    text = (
        "reviewer:\n"
        f"  {CMD}"
        "  argv: [no-such-cli-x2]\n"
        "  env_passthrough: [HAVE_IT, LACK_IT]\n"
        "reviewer_env: [ALSO_LACKING]\n"
        "secret_env: [NOT_SET_IS_FINE]\n"
    )
    result = validate(tmp_path, text, HAVE_IT="1")
    assert result.returncode == 2
    lines = result.stdout.splitlines()
    assert [line.split(": ")[0] for line in lines] == ["kdev.yaml:3", "kdev.yaml:4", "kdev.yaml:5"]
    assert lines[1] == (
        "kdev.yaml:4: reviewer.env_passthrough[1]: the variable LACK_IT is not set in kdev's"
        " environment [env_missing]"
    )
    assert "reviewer_env[0]: the variable ALSO_LACKING" in lines[2]
    assert result.stderr.strip() == "error: 3 problem(s) in the configuration [invalid_config]"


def test_a_typo_names_the_nearest_key_and_hides_nothing(tmp_path: Path) -> None:
    text = (
        "reviwer: {}\n"
        "reviewer:\n"
        f"  {CMD}"
        "  argv: [no-such-cli-x3]\n"
        "  timeuot_seconds: 5\n"
        "budgets:\n"
        "  daily_legs_per_rep: 3\n"
        "notify:\n"
        "  - {type: webhook, url: 'https://h.example.test', timeout: 3}\n"
        "zzzz: 1\n"
    )
    lines = validate(tmp_path, text).stdout.splitlines()
    assert lines == [
        "kdev.yaml:1: (top level): unknown key 'reviwer'; did you mean 'reviewer'?"
        " [invalid_config]",
        lines[1],
        "kdev.yaml:5: reviewer: unknown key 'timeuot_seconds'; did you mean 'timeout_seconds'?"
        " [invalid_config]",
        "kdev.yaml:7: budgets: unknown key 'daily_legs_per_rep'; did you mean"
        " 'daily_legs_per_repo'? [invalid_config]",
        "kdev.yaml:9: notify[0]: unknown key 'timeout'; did you mean 'timeout_seconds'?"
        " [invalid_config]",
        "kdev.yaml:10: (top level): unknown key 'zzzz' [invalid_config]",  # nothing near
    ]
    # The typo in the reviewer block does not hide its missing executable.
    assert lines[1].startswith("kdev.yaml:4: reviewer.argv[0]: reviewer executable")


def test_no_message_carries_a_pydantic_prefix(tmp_path: Path) -> None:
    text = "sandbox_paths: [relative/dir]\nnotify_authors: {alice: bob}\nrecipients: {}\nbogus: 1\n"
    checked = validate(tmp_path, text)
    assert checked.returncode == 2
    assert checked.stdout.splitlines()[0] == (
        "kdev.yaml:1: sandbox_paths: sandbox_paths entry 'relative/dir' is not an absolute"
        " path [invalid_config]"
    )
    shown = kdev("--config", "kdev.yaml", "config", "show", cwd=tmp_path)
    assert shown.returncode == 2
    for output in (checked.stdout, checked.stderr, shown.stderr):
        for prefix in ("Value error", "value error", "Extra inputs", "Assertion failed"):
            assert prefix not in output, output
    (tmp_path / "typo.yaml").write_text("reviwer: {}\n")
    typo = kdev("--config", "typo.yaml", "config", "show", cwd=tmp_path)
    assert typo.stderr.strip() == (
        "error: KDEV_CONFIG typo.yaml: reviwer: unknown key [invalid_config]"
    )


def test_review_post_without_a_mention_handle_is_refused_by_validate(tmp_path: Path) -> None:
    """A review round is posted through the gate, which needs mention_handle: validate
    says so (before, the first review run found out, after the reviewer's leg)."""
    top = validate(tmp_path, "review_post: {enabled: true}\n")
    assert top.returncode == 2, top
    assert "review_post needs mention_handle" in top.stdout and "[invalid_config]" in top.stdout
    one = validate(tmp_path, "repositories:\n  octo/widgets:\n    review_post: {enabled: true}\n")
    assert one.returncode == 2 and "review_post needs mention_handle" in one.stdout, one
    fine = validate(tmp_path, "review_post: {enabled: true}\nmention_handle: kdev-bot\n")
    assert fine.returncode == 0 and fine.stdout.strip() == "configuration ok", fine
