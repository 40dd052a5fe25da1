"""The review bench shared by the wrapper tests: ghsim with one repository, a clone of
it, and the stub reviewer (``bench`` is registered for tests/wrapper by its conftest)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from engine.config import Settings
from engine.github.client import GitHubClient, github_client
from ghsim import GitHubSim
from wrapper.config import KdevConfig
from wrapper.ledger.ledger import Ledger
from wrapper.review.review import ReviewContext, ReviewRequest, review_pr

REPO = "octo/widgets"
BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[2]
STUB = [sys.executable, "-P", "-m", "wrapper.stub_reviewer"]


def openai_reviewer(base_url: str) -> dict[str, Any]:
    """An openai reviewer block whose key is ``REVIEWER_KEY``, tried once."""
    return {
        "backend": "openai",
        "base_url": base_url,
        "model": "m",
        "api_key_env": "REVIEWER_KEY",
        "max_attempts": 1,
    }


@dataclass
class Bench:
    sim: GitHubSim
    checkout: Path
    root: Path
    token: str
    # A GitHub App's variables (tests/appkit.py): kdev reviews as the App, not the token.
    app_env: dict[str, str] | None = None

    def config(self, **overrides: Any) -> KdevConfig:
        data: dict[str, Any] = {
            "reviewer": {
                "backend": "command",
                "argv": STUB,
                "model": "stub",
                "timeout_seconds": 30,
            },
            "notify": [{"type": "file", "path": str(self.root / "notes.jsonl")}],
            "reviewer_env": ["PYTHONPATH", "KDEV_STUB_SLEEP", "KDEV_STUB_EXIT"],
            # These tests watch the stub's processes and files from outside; containment
            # has its own tests (test_sandbox.py, test_containment_e2e.py).
            "sandbox": "off",
        }
        data.update(overrides)
        return KdevConfig.model_validate(data)

    def review(
        self,
        pr: int,
        head_sha: str | None = None,
        *,
        force: bool = False,
        config: KdevConfig | None = None,
        environ: dict[str, str] | None = None,
        notify_to: str | None = None,
        reviewer_transport: httpx.BaseTransport | None = None,
    ) -> Any:
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(self.root),
            "PYTHONPATH": str(ROOT),
            **({"GITHUB_TOKEN": self.token} if self.app_env is None else self.app_env),
            **(environ or {}),
        }
        if self.app_env is None:
            made = GitHubClient(Settings(github_api_url=self.sim.url, github_token=self.token))
        else:  # the App's installation token, as kdev's own client gets it
            settings = Settings.from_env({**env, "GITHUB_API_URL": self.sim.url})
            made = github_client(settings, record_rates=False)
        with made as client:
            ctx = ReviewContext(
                config=config or self.config(),
                ledger=self.ledger(),
                github=client,
                environ=env,
                reviewer_transport=reviewer_transport,
            )
            head = head_sha or self.sim.pull(REPO, pr).head_sha
            return review_pr(
                ReviewRequest(
                    repo=REPO,
                    pr=pr,
                    head_sha=head,
                    checkout=self.checkout,
                    force=force,
                    notify_to=notify_to,
                ),
                ctx,
            )

    def ledger(self) -> Ledger:
        return Ledger(self.root / "reviews")

    def legs(self) -> int:
        return len(self.ledger().legs_since(REPO, datetime.now(UTC) - timedelta(days=1)))

    def notes(self) -> list[dict[str, Any]]:
        path = self.root / "notes.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]

    def kdev_env(self, config: KdevConfig | None = None) -> dict[str, str]:
        path = self.root / f"kdev-{uuid.uuid4().hex[:6]}.yaml"
        path.write_text(json.dumps((config or self.config()).model_dump(mode="json")))
        return {
            "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
            "HOME": str(self.root),
            "PYTHONPATH": str(ROOT),
            "GITHUB_API_URL": self.sim.url,
            "GITHUB_TOKEN": self.token,
            "KDEV_CONFIG": str(path),
            "KDEV_REVIEWS_DIR": str(self.root / "reviews"),
        }


def stub_reviewers(home: Path) -> list[int]:
    """Live stub reviewer processes started for this test (their HOME is ``home``)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().split(") ", 1)[1][:1]
        except OSError:
            continue
        if (
            b"wrapper.stub_reviewer" in cmdline
            and f"HOME={home}".encode() in environ.split(b"\0")
            and state != "Z"
        ):
            found.append(int(entry.name))
    return found


@contextmanager
def open_bench(tmp_path: Path, files: Mapping[str, str] | None = None) -> Iterator[Bench]:
    """ghsim with :data:`REPO` (``files``, default one ``app.py``) and a clone of it."""
    token = f"tok-{uuid.uuid4().hex}"
    with GitHubSim(tmp_path / "github") as sim:
        sim.add_token(token, ("review-bot", 5000))
        sim.create_repo(REPO, files=dict(files or {"app.py": "print('hi')\n"}))
        checkout = tmp_path / "checkout"
        subprocess.run(["git", "clone", "-q", str(sim.repo_path(REPO)), str(checkout)], check=True)
        yield Bench(sim, checkout, tmp_path, token)


@pytest.fixture
def bench(tmp_path: Path) -> Iterator[Bench]:
    with open_bench(tmp_path) as made:
        yield made
