"""A newcomer follows the README (issue 25): the wheel in a fresh venv, no checkout, the
README's own commands in order, and each pull request ends as the README says it will.

The README's part is read from README.md when the test runs: the ``sh`` blocks of its
"Install" and "Using a real reviewer" sections (not the not-run ones), run verbatim by
bash in a home directory outside the checkout with the fresh venv's scripts first on
PATH; the checks are the commands its prose names (``kdev explain --repo octo/widgets
--pr N``, ``li schedule health``) and the fates are the phrases it promises. The test's
part is only the world the README presumes: ghsim (the venv's console script, its own
process) serving ``octo/widgets`` with a pull request opened before any schedule, a
checkout in ``~/src/widgets``, ``GITHUB_TOKEN`` and ``OPENAI_API_KEY`` exported,
``GITHUB_API_URL`` naming ghsim, and one substitution in the ``kdev.yaml`` that
``kdev init`` wrote: its reviewer's ``base_url`` (a fake OpenAI-compatible endpoint on
loopback, tests/llmkit.py). The block that ends in ``li engine run`` runs in the
foreground of one shell, which is stopped with SIGTERM as the README says; the blocks
after it (the README's "poll now") run from a second shell with the first one's exports.
The README's other sections are for a checkout (``make demo``, ``make venv``): a
newcomer with an install has no Makefile (tests/test_docs.py and tests/e2e/test_demo.py
cover them).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tests.llmkit import FakeUpstream, chat_completion, fake_upstream
from tests.test_docs import OPENAI_ENDPOINT, Block, shell_blocks
from tests.wheelkit import ROOT, InstalledWheel, scrubbed_env

README = ROOT / "README.md"
RECIPE = ("Install", "Using a real reviewer")
REPO = "octo/widgets"
TOKEN = "ghp_NewcomerToken0123456789abcdef"
API_KEY = "sk-newcomer-0123456789abcdef"
# The fates the README promises (its "Then `kdev explain ...`" list), as explain's last line.
REVIEWED = "`reviewed`"  # then the verdict: the fake reviewer approves
FORK = "`not reviewed: excluded by same_repo_only (fork)`"
# `li engine run` (not --once) stays in the foreground; first the shell's environment is
# kept for the second shell (a newcomer's other terminal has the same exports).
ENGINE_RUN = re.compile(r"^li engine run(?! .*--once)", re.M)
PRELUDE = """
li() {
  case " $* " in
    *" engine run "*" --once "* | *" engine run --once "*) command li "$@" ;;
    *" engine run "*) env -0 > "$HOME/.terminal-env"; command li "$@" ;;
    *) command li "$@" ;;
  esac
}
set -euo pipefail
"""


def section_blocks(title: str) -> list[Block]:
    """The runnable ``sh`` blocks of README.md's ``## title`` section, in order."""
    lines = README.read_text(encoding="utf-8").splitlines()
    headings = [n + 1 for n, line in enumerate(lines) if line.startswith("## ")]
    (start,) = [n for n in headings if lines[n - 1] == f"## {title}"]
    end = min([n for n in headings if n > start], default=len(lines) + 1)
    blocks = [b for b in shell_blocks(README) if start < b.line < end and b.not_run is None]
    assert blocks, f"README.md has no runnable sh block under '## {title}'"
    return blocks


def recipe_text() -> str:
    """README.md's last recipe section, where the schedule is added."""
    text = README.read_text(encoding="utf-8").split(f"\n## {RECIPE[-1]}\n", 1)[1]
    return text.split("\n## ", 1)[0]


def promised(phrase: str) -> str:
    """``phrase`` (in backticks) as the README's recipe says it; the test fails if not."""
    assert phrase in recipe_text(), f"the README no longer promises {phrase}"
    return phrase.strip("`")


def readme_command(prefix: str) -> list[str]:
    """The first backticked command of the recipe's prose that starts with ``prefix``."""
    found = re.search(rf"`({re.escape(prefix)}[^`]*)`", recipe_text())
    assert found, f"README.md's recipe shows no `{prefix}...`"
    return found[1].split()


def rpc(url: str, method: str, *args: Any, **kwargs: Any) -> Any:
    body = json.dumps({"method": method, "args": list(args), "kwargs": kwargs}).encode()
    request = urllib.request.Request(
        f"{url}/_ghsim/rpc", data=body, headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())["result"]


@contextmanager
def ghsim_process(installed: InstalledWheel, state: Path) -> Iterator[str]:
    """The installed wheel's ``ghsim`` console script serving ``octo/widgets``."""
    process = subprocess.Popen(
        [str(installed.bin / "ghsim"), "--port", "0", "--state-dir", str(state), "--repo", REPO],
        cwd=state.parent,
        env={**scrubbed_env(installed, state.parent), "GHSIM_TOKENS": TOKEN},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)
        if process.stdout is not None:
            process.stdout.close()


@dataclass
class Shell:
    """A newcomer's shell: bash in ``home``, with ``env``."""

    home: Path
    env: dict[str, str]

    def script(self, blocks: list[Block]) -> list[str]:
        body = [f"echo '::: {block}' >&2\n{block.text}" for block in blocks]
        return ["bash", "-c", "\n".join([PRELUDE, *body])]

    def run_blocks(self, blocks: list[Block]) -> str:
        done = subprocess.run(
            self.script(blocks), cwd=self.home, env=self.env,
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, f"a README block failed:\n{done.stdout}\n{done.stderr}"
        return done.stdout

    def run(self, argv: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            argv, cwd=self.home, env=self.env, capture_output=True, text=True,
            timeout=120, check=False,
        )  # fmt: skip

    @contextmanager
    def foreground(self, blocks: list[Block]) -> Iterator[Shell]:
        """Run ``blocks``, whose last command is ``li engine run``, as a terminal; yield a
        second shell with its exports; then stop the engine with SIGTERM (the README's way)."""
        log = self.home / ".terminal.log"
        with log.open("w") as out:
            terminal = subprocess.Popen(
                self.script(blocks), cwd=self.home, env=self.env, stdout=out, stderr=out
            )
        try:
            yield Shell(self.home, self.terminal_env(terminal, log))
            assert terminal.poll() is None, f"li engine run ended:\n{log.read_text()}"
            status = self.run(["li", "engine", "status", "--json"])
            (engine,) = [e["pid"] for e in json.loads(status.stdout) if e["state"] == "running"]
            os.kill(int(engine), signal.SIGTERM)
            assert terminal.wait(timeout=60) == 0, log.read_text()
        finally:
            if terminal.poll() is None:
                terminal.kill()
                terminal.wait(timeout=30)

    def terminal_env(self, terminal: subprocess.Popen[bytes], log: Path) -> dict[str, str]:
        """The terminal's environment as it starts the engine (the prelude saves it)."""
        saved = self.home / ".terminal-env"
        deadline = time.monotonic() + 60
        while not saved.exists() or not saved.read_bytes().endswith(b"\0"):
            assert terminal.poll() is None, f"the README's blocks ended:\n{log.read_text()}"
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        pairs = (item.partition("=") for item in saved.read_text().split("\0") if item)
        return {key: value for key, _, value in pairs if key not in ("_", "SHLVL", "PWD")}

    def explain(self, pr: int) -> str:
        """The last line of the README's ``kdev explain --repo octo/widgets --pr N``."""
        argv = [str(pr) if word == "N" else word for word in readme_command("kdev explain ")]
        done = self.run(argv)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout.strip().splitlines()[-1]

    def wait_explained(self, pr: int, fate: str, llm: FakeUpstream, asked: int) -> str:
        """Explain ``pr`` once the reviewer was asked ``asked`` times, until ``fate``."""
        deadline = time.monotonic() + 60
        while len(llm.seen) < asked:  # cheap: no process per look
            if time.monotonic() > deadline:  # say why, in explain's words
                raise AssertionError(f"reviewer asked {len(llm.seen)} times; {self.explain(pr)}")
            time.sleep(0.1)
        while fate not in (line := self.explain(pr)):
            assert time.monotonic() < deadline, f"#{pr}: {line}"
            time.sleep(0.5)
        return line


def open_before_the_schedule(url: str) -> dict[str, Any]:
    """A pull request last changed ten minutes ago (no boundary-second tie with the add)."""
    rpc(url, "set_time", when=(datetime.now(UTC) - timedelta(minutes=10)).isoformat())
    pull = rpc(url, "open_pr", REPO, "early", files={"early.py": "EARLY = 1\n"})
    rpc(url, "use_real_time")
    return dict(pull)


def newcomer_shell(installed: InstalledWheel, home: Path, url: str, llm: FakeUpstream) -> Shell:
    """The home the README presumes: a checkout in ~/src/widgets, the token and the key."""
    home.mkdir()
    origin = rpc(url, "repo_path", REPO)
    subprocess.run(["git", "clone", "-q", origin, str(home / "src" / "widgets")], check=True)
    env = {
        **scrubbed_env(installed, home),
        "GITHUB_TOKEN": TOKEN,
        "GITHUB_API_URL": url,
        "OPENAI_API_KEY": API_KEY,
    }
    llm.answer = chat_completion("Reads well.\n\nVERDICT: APPROVE")
    return Shell(home, env)


def test_a_newcomer_following_the_readme_gets_what_it_promises(
    installed_wheel: InstalledWheel, tmp_path: Path
) -> None:
    with ghsim_process(installed_wheel, tmp_path / "github") as url, fake_upstream() as llm:
        early = open_before_the_schedule(url)
        shell = newcomer_shell(installed_wheel, tmp_path / "newcomer", url, llm)
        install, reviewer = (section_blocks(title) for title in RECIPE)
        shell.run_blocks(install)  # li db upgrade ... kdev init, kdev config validate
        config = shell.home / "pr-review" / "kdev.yaml"
        starter = config.read_text(encoding="utf-8")
        assert starter.count(OPENAI_ENDPOINT) == 1, starter
        config.write_text(starter.replace(OPENAI_ENDPOINT, f"base_url: {llm.url}/v1"))
        (engine_at,) = [n for n, b in enumerate(reviewer) if ENGINE_RUN.search(b.text)]
        poll_now = reviewer[engine_at + 1 :]
        assert poll_now, "the README shows no command that polls while the engine runs"
        with shell.foreground(reviewer[: engine_at + 1]) as other:
            other.run_blocks(poll_now)
            reviewed = f": {promised(REVIEWED)} APPROVE "
            line = other.wait_explained(early["number"], reviewed, llm, asked=1)
            assert line.startswith(f"head {early['head_sha'][:7]}{reviewed}"), line
            after = rpc(url, "open_pr", REPO, "later", files={"later.py": "LATER = 2\n"})
            fork = rpc(
                url, "open_pr", REPO, "fork-work", files={"forked.py": "FORKED = 3\n"},
                from_fork="outsider/widgets", author=["outsider", 9001],
            )  # fmt: skip
            other.run_blocks(poll_now)
            line = other.wait_explained(after["number"], reviewed, llm, asked=2)
            assert line.startswith(f"head {after['head_sha'][:7]}{reviewed}"), line
            refused = other.explain(fork["number"])
            assert refused.startswith(f"head {fork['head_sha'][:7]}: {promised(FORK)}"), refused
            health = other.run(readme_command("li schedule health"))
            assert health.returncode == 0 and "review-prs" in health.stdout, health
    # The reviewer saw the two same-repository diffs, with the key; never the fork's.
    bodies = [json.loads(seen.body)["messages"][0]["content"] for seen in llm.seen]
    assert len(bodies) == 2 and "EARLY = 1" in bodies[0] and "LATER = 2" in bodies[1]
    assert all(seen.headers["authorization"] == f"Bearer {API_KEY}" for seen in llm.seen)
    assert not any("FORKED" in body for body in bodies)
    checkout = shell.home / "src" / "widgets"
    absent = shell.run(["git", "-C", str(checkout), "cat-file", "-e", fork["head_sha"]])
    assert absent.returncode != 0, "the fork's head reached the checkout"
    logged = (shell.home / ".terminal.log").read_text()  # the engine's log lines
    assert "review-prs" in logged and TOKEN not in logged and API_KEY not in logged
