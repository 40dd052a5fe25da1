"""CLI conventions shared by li and kdev (issue 15): -h, --json, --config, exit codes,
logging flags, no private imports of a dependency."""

from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from sqlalchemy import Engine

from engine import errors as li_errors
from engine.cli.app import EXIT_RUN_NOT_SUCCEEDED
from engine.cli.app import app as li_app
from engine.health.assess import EXIT_CODES as HEALTH_EXIT_CODES
from ghsim import GitHubSim
from ghsim.model import node_id
from tests.engine.test_cli import Li
from tests.wrapper.reviewbench import bench as bench  # noqa: F401 - the fixture
from tests.wrapper.test_review import REPO, Bench
from wrapper import errors as kdev_errors
from wrapper.authorloop.checkci import EXIT_CHECKS_FAILED
from wrapper.authorloop.watch import EXIT_MAX_DURATION
from wrapper.cli.app import app as kdev_app

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


@pytest.fixture
def li(db: Engine, db_url: str) -> Li:
    return Li(db_url)


def run(
    program: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / program), *args],
        env=env if env is not None else {**os.environ, "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["li"],
        ["li", "schedule"],
        ["li", "schedule", "add"],
        ["li", "engine", "run"],
        ["kdev"],
        ["kdev", "review-pr"],
        ["kdev", "verdict", "show"],
    ],
)
def test_dash_h_is_help(argv: list[str]) -> None:
    short, long = run(*argv, "-h"), run(*argv, "--help")
    assert short.returncode == 0 and long.returncode == 0, short.stderr
    assert short.stdout == long.stdout and "Usage:" in short.stdout


def test_li_db_current_json(li: Li) -> None:
    shown = li.json("db", "current")
    assert isinstance(shown, dict)
    assert shown["current"] == shown["head"] and shown["up_to_date"] is True


def test_li_trigger_without_wait_json(li: Li) -> None:
    li("schedule", "add", "later", "--every", "1h", "--command", "true")
    shown = li.json("schedule", "trigger", "later")
    assert isinstance(shown, dict)
    assert shown["schedule"] == "later" and shown["due"] is True and shown["next_fire_at"]


def test_kdev_verdict_show_takes_repo_and_pr_and_json(bench: Bench) -> None:  # noqa: F811
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "x = 1  # TODO\n"})
    report = bench.review(pr.number)
    env = bench.kdev_env()
    by_flags = run("kdev", "verdict", "show", "--repo", REPO, "--pr", str(pr.number), env=env)
    positional = run("kdev", "verdict", "show", REPO, str(pr.number), env=env)
    assert by_flags.returncode == 0, by_flags.stderr
    assert by_flags.stdout == positional.stdout and "VERDICT: REQUEST_CHANGES" in by_flags.stdout
    as_json = run(
        "kdev", "verdict", "show", "--repo", REPO, "--pr", str(pr.number), "--json", env=env
    )
    shown = json.loads(as_json.stdout)
    assert shown["verdict"] == "REQUEST_CHANGES" and shown["patch_id"] == report.patch_id
    assert shown["head_sha"] == pr.head_sha and shown["text"] == by_flags.stdout
    missing = run("kdev", "verdict", "show", "--repo", REPO, env=env)
    assert missing.returncode == 2 and missing.stderr.strip().endswith("[usage_error]")


def test_kdev_config_flag_replaces_kdev_config(bench: Bench) -> None:  # noqa: F811
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "x = 1\n"})
    bench.review(pr.number)
    env = bench.kdev_env()
    good = env.pop("KDEV_CONFIG")
    shown = run("kdev", "--config", good, "verdict", "show", "--repo", REPO, "--pr",
                str(pr.number), env=env)  # fmt: skip
    assert shown.returncode == 0 and "VERDICT:" in shown.stdout, shown.stderr
    bad = bench.root / "bad.yaml"
    bad.write_text("reviewer: [not, a, mapping]\n")
    env["KDEV_CONFIG"] = good  # the flag wins over the variable
    refused = run("kdev", "--config", str(bad), "verdict", "show", REPO, str(pr.number), env=env)
    assert refused.returncode == 2 and str(bad) in refused.stderr, refused.stderr


@pytest.fixture
def sim() -> Iterator[GitHubSim]:
    with GitHubSim() as running:
        running.add_token("tok-author", ("author-agent", 501))
        running.create_repo(REPO, files={"app.py": "print('hi')\n"})
        yield running


def test_kdev_resolve_and_hide_json_and_debug_http_log(sim: GitHubSim, tmp_path: Path) -> None:
    pr = sim.open_pr(REPO, "feature", {"a.py": "x = 1\n"})
    nit = sim.comment(REPO, pr.number, "nit", "alice", kind="review", path="a.py", line=1)
    old = sim.comment(REPO, pr.number, "stale", "alice")
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "GITHUB_API_URL": sim.url,
        "GITHUB_TOKEN": "tok-author",
    }
    node = node_id("PullRequestReviewComment", nit.id)
    resolved = run("kdev", "--log-level", "debug", "--log-format", "json", "resolve",
                   "--repo", REPO, "--pr", str(pr.number), "--node", node, "--json",
                   env=env)  # fmt: skip
    assert resolved.returncode == 0, resolved.stderr
    shown = json.loads(resolved.stdout)
    assert shown["resolved"] is True and shown["node"] == node and shown["thread"]
    assert sim.thread_resolved(REPO, nit.id)
    records = [json.loads(line) for line in resolved.stderr.splitlines()]
    http = [r for r in records if r["logger"] == "engine.github.client"]
    assert http and all(r["level"] == "debug" for r in http)
    assert any("POST /graphql -> 200" in r["message"] for r in http)
    assert "tok-author" not in resolved.stderr
    hidden = run("kdev", "hide", "--node", node_id("IssueComment", old.id), "--json", env=env)
    assert hidden.returncode == 0, hidden.stderr
    assert json.loads(hidden.stdout) == {
        "node": node_id("IssueComment", old.id),
        "hidden": True,
        "reason": "outdated",
    }
    quiet = run("kdev", "resolve", "--repo", REPO, "--pr", str(pr.number), "--node", node, env=env)
    assert quiet.returncode == 0 and "/graphql" not in quiet.stderr  # no HTTP lines at INFO


def exit_code_table() -> dict[int, str]:
    """code -> program ("li", "kdev", "both") from docs/exit-codes.md; a range counts
    for each number in it."""
    table: dict[int, str] = {}
    text = (ROOT / "docs" / "exit-codes.md").read_text()
    for first, last, program in re.findall(
        r"^\| (\d+)(?:-(\d+))? \| (li|kdev|both) \|", text, re.M
    ):
        for code in range(int(first), int(last or first) + 1):
            assert code not in table, f"exit code {code} is listed twice"
            table[code] = program
    return table


def test_one_exit_code_table_with_no_number_meaning_two_things() -> None:
    table = exit_code_table()
    li_codes = {
        cls.exit_code
        for cls in vars(li_errors).values()
        if isinstance(cls, type) and issubclass(cls, li_errors.LiError)
        and not issubclass(cls, kdev_errors.KdevError)
    } | {EXIT_RUN_NOT_SUCCEEDED} | set(HEALTH_EXIT_CODES.values())  # fmt: skip
    kdev_codes = {
        cls.exit_code
        for cls in vars(kdev_errors).values()
        if isinstance(cls, type) and issubclass(cls, kdev_errors.KdevError)
    } | {EXIT_MAX_DURATION, EXIT_CHECKS_FAILED}
    for code in li_codes:
        assert table.get(code) in ("li", "both"), f"li exit {code} is not li's in the table"
    for code in kdev_codes:
        assert table.get(code) in ("kdev", "both"), f"kdev exit {code} is not kdev's"
    shared = li_codes & kdev_codes
    assert shared == {1, 2} and all(table[c] == "both" for c in shared)


def test_no_import_of_a_dependencys_private_module() -> None:
    private = re.compile(r"^\s*(?:from|import)\s+([A-Za-z_]\w*)\.(_\w+)", re.M)
    ours = {"engine", "wrapper", "tests"}
    found = [
        f"{path.relative_to(ROOT)}: {m.group(0).strip()}"
        for folder in ("engine", "wrapper")
        for path in (ROOT / folder).rglob("*.py")
        for m in private.finditer(path.read_text())
        if m.group(1) not in ours
    ]
    assert found == []


@pytest.mark.parametrize("program", ["li", "kdev"])
def test_shell_completion_can_be_installed(program: str) -> None:
    # --show-completion detects the shell from the process's ancestors, as it does for a
    # user at a prompt: run it from bash (the `; exit $?` keeps bash from exec'ing the
    # program, which would leave no shell among its ancestors), whatever runs the tests.
    shown = subprocess.run(
        ["bash", "-c", f'"{BIN / program}" --show-completion; exit $?'],
        env={**os.environ, "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    assert not shown.stderr, shown.stderr
    assert f"_{program}_completion()" in shown.stdout and "complete " in shown.stdout
    assert "--install-completion" in run(program, "--help").stdout


def _option_type(written: Any, names: dict[str, Any]) -> str:
    """An annotation as written; a named option (wrapper/cli/options.py, an ``Annotated``
    alias) as the type it annotates."""
    alias = names.get(written) if isinstance(written, str) else written
    if typing.get_origin(alias) is typing.Annotated:
        kind = typing.get_args(alias)[0]
        return getattr(kind, "__name__", None) or str(kind)
    return str(written)


def all_options(program_app: Any) -> list[tuple[str, Any, str]]:
    """(command path, parameter, its annotation as written) of every command's options."""
    found = []
    pending = [("", typer.main.get_command(program_app))]
    while pending:
        path, command = pending.pop()
        callback = getattr(command, "callback", None)
        signature = inspect.signature(callback) if callback is not None else None
        for param in command.params:
            annotation = ""
            if signature is not None and param.name in signature.parameters:
                written = signature.parameters[param.name].annotation
                annotation = _option_type(written, inspect.unwrap(callback).__globals__)
            found.append((path, param, annotation))
        for name, child in getattr(command, "commands", {}).items():
            pending.append((f"{path} {name}".strip(), child))
    return found


@pytest.mark.parametrize("program_app", [li_app, kdev_app], ids=["li", "kdev"])
def test_one_flag_name_per_concept_and_durations_as_text(program_app: Any) -> None:
    checked = 0
    for path, param, annotation in all_options(program_app):
        opts = set(getattr(param, "opts", []))
        if param.name in ("checkout", "repo_root"):
            assert "--checkout" in opts, path
        if param.name in ("repo", "repo_opt") and opts:
            assert "--repo" in opts, path
        if param.name in ("pr", "pr_opt") and opts:
            assert "--pr" in opts, path
        if re.search(r"interval|timeout|duration|backoff|every", param.name or ""):
            # Durations are text like 5m everywhere, never an integer option.
            assert annotation.startswith("str"), (path, param.name, annotation)
            checked += 1
    assert checked >= 2
