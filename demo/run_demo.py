"""`make demo`: the whole pipeline end to end on embedded defaults.

A simulated GitHub (ghsim) on loopback with real bare git repositories, a local
checkout, SQLite, the `li` engine and `kdev review-pr` with a deterministic stub
reviewer. Everything it makes (li.db, the ledger under reviews/, kdev.yaml, the
notifications, the simulated GitHub's repositories) is kept in ``$DEMO_DIR`` when set,
else in a new temporary directory; its path is printed first and last.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ghsim import GitHubSim

REPO = "demo/widgets"
TOKEN = "demo-token-not-a-secret"
BIN = Path(sys.executable).parent


REVIEW_ARGS = [
    "review-pr",
    "--repo",
    "{{ repo }}",
    "--pr",
    "{{ pr_number }}",
    "--head-sha",
    "{{ head_sha }}",
    "--pr-url",
    "{{ pr_url }}",
    "--author",
    "{{ pr_author }}",
]


def setup_pipeline(
    sim: GitHubSim, repo: str, root: Path, token: str
) -> tuple[Path, dict[str, str]]:
    """A checkout of ``repo``, a kdev.yaml with the stub reviewer (notifications to
    ``root/notifications.jsonl``) and the environment ``li`` and ``kdev`` run with."""
    checkout = root / "checkout"
    subprocess.run(["git", "clone", "-q", str(sim.repo_path(repo)), str(checkout)], check=True)
    config = root / "kdev.yaml"
    source = Path(__file__).resolve().parent.parent
    config.write_text(
        "reviewer:\n"
        "  backend: command\n"
        f"  argv: [{sys.executable}, -P, -m, wrapper.stub_reviewer]\n"
        "  model: stub-reviewer\n"
        "  timeout_seconds: 60\n"
        # The stub runs in the sandbox: it needs this Python and the wrapper package.
        f"sandbox_paths: [{sys.prefix}, {sys.base_prefix}, {source}]\n"
        "budgets:\n  daily_legs_per_repo: 20\n  daily_rounds_per_pr: 5\n"
        f"notify:\n  - type: file\n    path: {root / 'notifications.jsonl'}\n",
        encoding="utf-8",
    )
    env = {
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(root),
        "LANG": "C.UTF-8",
        "LI_DATABASE_URL": f"sqlite:///{root / 'li.db'}",
        "LI_COMMAND_ALLOWLIST": "kdev",
        "LI_ENV_PASSTHROUGH": "GITHUB_API_URL,GITHUB_TOKEN,KDEV_CONFIG,KDEV_REVIEWS_DIR",
        "GITHUB_API_URL": sim.url,
        "GITHUB_TOKEN": token,
        "KDEV_CONFIG": str(config),
        "KDEV_REVIEWS_DIR": str(root / "reviews"),
    }
    return checkout, env


def run(*argv: str, env: dict[str, str], check: bool = True) -> str:
    result = subprocess.run(list(argv), env=env, capture_output=True, text=True, check=False)
    if check and result.returncode != 0:
        sys.stderr.write(result.stdout + result.stderr)
        raise SystemExit(f"demo: {' '.join(argv[:3])} failed with {result.returncode}")
    return result.stdout


def step(title: str) -> None:
    print(f"\n== {title}", flush=True)


def main() -> int:
    started = time.monotonic()
    root = Path(os.environ.get("DEMO_DIR") or tempfile.mkdtemp(prefix="li-demo-")).absolute()
    root.mkdir(parents=True, exist_ok=True)
    print(f"demo files in {root}", flush=True)
    sim = GitHubSim(root / "github")
    sim.start()
    try:
        sim.add_token(TOKEN, ("review-bot", 5000))
        sim.create_repo(REPO, files={"README.md": "# widgets\n", "app.py": "print('hi')\n"})
        checkout, env = setup_pipeline(sim, REPO, root, TOKEN)
        env["HOME"] = os.environ.get("HOME", str(root))

        step("three pull requests: a clean change, one with a TODO, one from a fork")
        clean = sim.open_pr(
            REPO,
            "feature/clean",
            {"app.py": "print('hello')\n"},
            title="Say hello",
            author=("alice", 101),
        )
        todo = sim.open_pr(
            REPO,
            "feature/todo",
            {"util.py": "def f():\n    pass  # TODO\n"},
            title="Add util",
            author=("bob", 102),
        )
        fork = sim.open_pr(
            REPO,
            "evil",
            {"app.py": "import os\n"},
            title="Fork change",
            from_fork="mallory/widgets",
            author=("mallory", 666),
        )
        for pr in (clean, todo, fork):
            print(f"  #{pr.number} {pr.title}")

        step("li schedule add: poll the repository, fire kdev review-pr per event")
        print(
            run(
                "li",
                "schedule",
                "add",
                "review-prs",
                "--github",
                REPO,
                "--poll-interval",
                "1m",
                "--backfill",
                "--filter",
                "same_repo_only=true",
                "--cwd",
                str(checkout),
                "--timeout",
                "5m",
                "--command",
                "kdev",
                "--",
                *REVIEW_ARGS,
                env=env,
            ).strip()
        )

        def engine_pass(title: str) -> None:
            step(title)
            run("li", "schedule", "trigger", "review-prs", env=env)
            print(run("li", "engine", "run", "--once", env=env).strip())

        engine_pass("engine pass 1: the two same-repo PRs are reviewed; the fork never is")

        step("the author fixes the TODO; the clean PR gets its base merged in")
        sim.advance(2)
        sim.push(REPO, todo.number, {"util.py": "def f():\n    return 1\n"})
        sim.commit_to_base(REPO, {"README.md": "# widgets\n\nNow with docs.\n"})
        sim.merge_base_into_head(REPO, clean.number)
        engine_pass(
            "engine pass 2: the fix is a new diff (reviewed); the merge is not (carried forward)"
        )

        step("li schedule runs")
        print(run("li", "schedule", "runs", env=env).rstrip())
        step("kdev verdicts")
        print(run("kdev", "verdicts", env=env).rstrip())
        step("li schedule health")
        # Not checked: health exits non-zero for an unhealthy state (docs/health.md), and
        # the demo shows that state rather than stopping at it.
        print(run("li", "schedule", "health", env=env, check=False).rstrip())
        for pr, why in ((fork.number, "the fork PR"), (clean.number, "the carried-forward PR")):
            step(f"kdev explain --repo {REPO} --pr {pr}  ({why})")
            print(run("kdev", "explain", "--repo", REPO, "--pr", str(pr), env=env).rstrip())
        print(
            f"\ndemo finished in {time.monotonic() - started:.1f} s; its files are kept in"
            f" {root} (li.db, reviews/, notifications.jsonl); remove them with: rm -rf {root}"
        )
        return 0
    finally:
        sim.stop()


if __name__ == "__main__":
    sys.exit(main())
