"""Documented commands work: every ``sh`` block of README.md and docs/ runs against ghsim.

Each file's blocks run in order in one bash (``set -euo pipefail``), so a block can use
what an earlier one added, in a scratch world: HOME is a temporary directory holding
``~/kdev.yaml`` (the stub reviewer) and a checkout ``~/src/widgets`` of the simulated
``octo/widgets``; the cwd holds copies of the example files; ``GITHUB_TOKEN`` and
``GITHUB_API_URL`` reach the simulator. A long-running ``li engine run`` is let start
and is then stopped with SIGTERM, as an operator stops it. A block preceded by
``<!-- not-run: reason -->`` is skipped; the few that are must say why
(docs/decisions.md D21). After a file's blocks, a check per file fires what the
examples added and asserts that the fires succeed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ghsim import GitHubSim
from tests.llmkit import chat_completion, fake_upstream

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
REPO = "octo/widgets"
TOKEN = "ghp_DocsExampleToken0123456789abcdef"
MAINTAINER = ("maintainer", 501)
OPENAI_ENDPOINT = "base_url: https://api.openai.com/v1"  # the starter kdev.yaml's reviewer
FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
NOT_RUN = re.compile(r"^\s*<!--\s*not-run:\s*(?P<reason>.*?)\s*-->\s*$")
SHELL_INFO = {"sh", "bash", "shell"}
# At most this many blocks may be skipped, each with its reason.
# README: install and make targets (3); docs/operations.md: host setup as root, systemctl
# and a container engine (3), which this machine cannot run; the unit files themselves
# are checked by tests/test_service_files.py.
MAX_NOT_RUN = 6
# `li ... engine run` without --once: started in the background, stopped with SIGTERM
# once its engine row exists (plus a moment for its signal handlers), as an operator
# stops it; the function returns the engine's own exit status.
PRELUDE = """
li() {
  case " $* " in
    *" engine run "*)
      case " $* " in
        *" --once "*) command li "$@" ;;
        *)
          command li "$@" &
          local pid=$! tries=0
          until command li engine status --json 2>/dev/null | grep -Eq "pid.: $pid,"; do
            tries=$((tries + 1)); [ $tries -lt 120 ] || break; sleep 0.25
          done
          sleep 2; kill -TERM $pid; wait $pid ;;
      esac ;;
    *) command li "$@" ;;
  esac
}
"""


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    text: str
    not_run: str | None

    def __str__(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def shell_blocks(path: Path) -> list[Block]:
    """Fenced sh/bash/shell blocks of ``path`` with the not-run reason that precedes each."""
    blocks: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        indent, fence = len(opening["indent"]), opening["fence"]
        body: list[str] = []
        start = index
        index += 1
        while index < len(lines) and not lines[index].strip().startswith(fence):
            body.append(lines[index][indent:] if lines[index][:indent].isspace() else lines[index])
            index += 1
        index += 1
        if opening["info"].strip() not in SHELL_INFO:
            continue
        previous = next((line for line in reversed(lines[:start]) if line.strip()), "")
        marker = NOT_RUN.match(previous)
        blocks.append(Block(path, start + 1, "\n".join(body), marker["reason"] if marker else None))
    return blocks


@dataclass
class World:
    sim: GitHubSim
    home: Path
    env: dict[str, str]

    def run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(argv),
            cwd=self.home,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def json(self, *argv: str) -> object:
        result = self.run(*argv)
        assert result.returncode == 0, f"{argv}: {result.stdout}{result.stderr}"
        return json.loads(result.stdout)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    home = tmp_path / "home"
    home.mkdir()
    with GitHubSim(tmp_path / "github") as sim:
        # The existing PR is from before any schedule is added (no boundary-second ties).
        sim.set_time(datetime.now(UTC) - timedelta(minutes=10))
        sim.add_token(TOKEN, ("review-bot", 4242))
        sim.create_repo(REPO, files={"README.md": "# widgets\n", "app.py": "print(1)\n"})
        pull = sim.open_pr(REPO, "feature/docs", {"app.py": "print(2)\n"}, author=MAINTAINER)
        sim.set_check_run(REPO, pull.head_sha, "ci")  # green, for kdev check-ci
        sim.use_real_time()
        checkout = home / "src" / "widgets"
        subprocess.run(["git", "clone", "-q", str(sim.repo_path(REPO)), str(checkout)], check=True)
        (home / "kdev.yaml").write_text(
            "reviewer:\n  backend: command\n"
            f"  argv: [{sys.executable}, -P, -m, wrapper.stub_reviewer]\n"
            "  model: stub-reviewer\n"
            # The stub runs in the reviewer sandbox: it needs this Python and the package.
            f"sandbox_paths: [{sys.prefix}, {sys.base_prefix}, {ROOT}]\n",
            encoding="utf-8",
        )
        for name in ("schedules.example.yaml", "repos.example.yaml"):
            shutil.copy(ROOT / name, home / name)
        env = {
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}/usr/bin:/bin",
            "HOME": str(home),
            "LANG": "C.UTF-8",
            "LI_DATABASE_URL": f"sqlite:///{home / 'li.db'}",
            "GITHUB_API_URL": sim.url,
            "GITHUB_TOKEN": TOKEN,
            "KDEV_CONFIG": str(home / "kdev.yaml"),
            # The examples assume the real api.github.com; here kdev must reach ghsim too.
            "LI_ENV_PASSTHROUGH": "GITHUB_API_URL",
        }
        yield World(sim, home, env)


def run_blocks(world: World, blocks: list[Block]) -> str:
    script = [PRELUDE, "set -euo pipefail"]
    for block in blocks:
        if block.not_run is None:
            script += [f"echo '::: {block}' >&2", block.text]
    saved = world.home / ".docs-env"
    script.append(f"env -0 > {saved}")
    result = world.run("bash", "-c", "\n".join(script))
    assert result.returncode == 0, (
        f"a documented block failed (the last '::: file:line' names it):\n"
        f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    )
    # What the examples exported (LI_COMMAND_ALLOWLIST ...) holds for the checks too.
    exported = (item.partition("=") for item in saved.read_text().split("\0") if item)
    world.env = {key: value for key, _, value in exported if key not in ("_", "SHLVL", "PWD")}
    return result.stdout


def fire_and_check(world: World, name: str, expected_runs: int) -> list[dict[str, object]]:
    """``li schedule trigger NAME --wait``: every fired run succeeded."""
    fired = world.json("li", "schedule", "trigger", name, "--wait", "--json")
    assert isinstance(fired, dict)
    runs: list[dict[str, object]] = fired["runs"]
    assert [run["status"] for run in runs] == ["succeeded"] * expected_runs, runs
    return runs


def check_readme(world: World) -> None:
    """The README's schedule runs the kdev.yaml its `kdev init` wrote, whose reviewer is an
    OpenAI-compatible endpoint: here a fake one, with the key exported, as in
    tests/e2e/test_newcomer.py (which follows the recipe against the installed wheel)."""
    config = world.home / "pr-review" / "kdev.yaml"
    starter = config.read_text(encoding="utf-8")
    with fake_upstream() as llm:
        llm.answer = chat_completion("Fine.\n\nVERDICT: APPROVE")
        config.write_text(starter.replace(OPENAI_ENDPOINT, f"base_url: {llm.url}/v1"))
        world.env["OPENAI_API_KEY"] = "sk-docs-example"
        world.sim.advance(2)
        world.sim.push(REPO, 1, {"app.py": "print(3)\n"})
        fire_and_check(world, "review-prs", 1)
    assert len(llm.seen) == 1
    verdicts = world.json("kdev", "verdicts", "--json")
    assert isinstance(verdicts, list) and [(v["pr"], v["verdict"]) for v in verdicts] == [
        (1, "APPROVE")
    ]


def check_poller(world: World) -> None:
    world.sim.advance(2)
    world.sim.push(REPO, 1, {"app.py": "print(3)\n"})
    fire_and_check(world, "review-prs", 1)


def check_triggers(world: World) -> None:
    world.sim.advance(2)
    world.sim.comment(REPO, 1, "@claude please look", author=MAINTAINER)
    opened = world.sim.open_pr(REPO, "feature/new", {"b.py": "x = 1\n"}, author=("dev", 502))
    fired = world.json("li", "schedule", "trigger", "summon", "--wait", "--json")
    assert isinstance(fired, dict)
    contexts = sorted(
        (run["trigger_context"]["event"], run["trigger_context"]["pr_number"], run["status"])
        for run in fired["runs"]
    )
    assert contexts == [("mention", 1, "succeeded"), ("pr_opened", opened.number, "succeeded")]


def check_health(world: World) -> None:
    documented = json.loads(json_blocks(ROOT / "docs" / "health.md")[0])
    world.env["LI_COMMAND_ALLOWLIST"] = "kdev"
    world.json("li", "schedule", "add", "watch", "--github", REPO, "--json", "--command", "kdev")
    actual = world.json("li", "schedule", "health", "--json")
    assert isinstance(actual, list) and isinstance(documented, list)
    assert set(actual[0]) == set(documented[0])


def json_blocks(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return re.findall(r"^```json\n(.*?)^```$", text, flags=re.S | re.M)


def prepare_github_app(world: World) -> None:
    """docs/github-app.md's starting point: the App (id 123456) created and installed on
    octo/widgets, its private key downloaded as GitHub names the file."""
    from tests.appkit import key_pair

    app = world.sim.create_app("kdev-review", key_pair().public, app_id=123456)
    world.sim.install_app(app.id, "octo")
    downloads = world.home / "Downloads"
    downloads.mkdir()
    (downloads / "kdev-review.2026-03-01.private-key.pem").write_text(key_pair().private)


def check_github_app(world: World) -> None:
    """The recipe's reads went out as the App: one token minted, shared in a 0600 file,
    and the poll's launch posted as the bot."""
    assert len(world.sim.requests_to(r"/access_tokens$", "POST")) == 1
    cache = world.home / ".cache" / "li" / "github-app"
    [token_file] = list(cache.glob("*.json"))
    assert token_file.stat().st_mode & 0o777 == 0o600
    assert "GITHUB_TOKEN" not in world.env


PREPARE: dict[str, Callable[[World], None]] = {"github-app.md": prepare_github_app}
CHECKS: dict[str, Callable[[World], None]] = {
    "github-app.md": check_github_app,
    "README.md": check_readme,
    "poller.md": check_poller,
    "triggers.md": check_triggers,
    "health.md": check_health,
}


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.name)
def test_the_documented_commands_run(document: Path, request: pytest.FixtureRequest) -> None:
    blocks = [block for block in shell_blocks(document) if block.not_run is None]
    check = CHECKS.get(document.name)
    if not blocks and check is None:
        return  # nothing to run on this page (the parser is tested below)
    world: World = request.getfixturevalue("world")
    prepare = PREPARE.get(document.name)
    if prepare is not None:
        prepare(world)
    if blocks:
        run_blocks(world, blocks)
    if check is not None:
        check(world)


def test_only_a_few_blocks_are_not_run_and_each_says_why() -> None:
    skipped = [block for path in DOCUMENTS for block in shell_blocks(path) if block.not_run]
    assert all(len(block.not_run or "") >= 20 for block in skipped), skipped
    assert len(skipped) <= MAX_NOT_RUN, [str(block) for block in skipped]


def test_the_block_parser_finds_fences_markers_and_indented_blocks(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "text\n\n<!-- not-run: needs a real GitHub account -->\n```sh\nli x\n```\n\n"
        "- item\n\n  ```sh\n  li y \\\n    --z\n  ```\n\n```yaml\na: 1\n```\n"
        "```\nli synopsis\n```\n",
        encoding="utf-8",
    )
    blocks = shell_blocks(page)
    assert [(b.line, b.text, b.not_run) for b in blocks] == [
        (4, "li x", "needs a real GitHub account"),
        (10, "li y \\\n  --z", None),
    ]
