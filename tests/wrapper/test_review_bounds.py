"""kdev against an answer past the GitHub client's bounds (issue 24): ``kdev review-pr``
fails the run with one line, the bound's reason and exit 17, never a traceback and never
a decision taken on that answer."""

from __future__ import annotations

import subprocess

import pytest

from ghsim import GitHubSim
from tests.wrapper.reviewbench import BIN, REPO, Bench
from wrapper.errors import GitHubFailed


def _review(bench: Bench, number: int, head: str, **env: str) -> subprocess.CompletedProcess[str]:
    argv = [str(BIN / "kdev"), "review-pr", "--repo", REPO, "--pr", str(number)]
    argv += ["--head-sha", head, "--checkout", str(bench.checkout), "--json"]
    environ = {**bench.kdev_env(), **env}
    return subprocess.run(argv, env=environ, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    ("kind", "env", "bound", "reason"),
    [
        ("gzip_bomb", {}, "body_too_large", "github_malformed"),
        ("huge", {}, "body_too_large", "github_malformed"),
        ("drip", {"LI_GITHUB_DEADLINE": "1"}, "request_deadline", "github_unavailable"),
    ],
)
def test_review_pr_against_an_unbounded_answer_fails_in_one_line(
    bench: Bench, kind: str, env: dict[str, str], bound: str, reason: str
) -> None:
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "x = 1\n"})
    bench.sim.inject_body_fault(kind, "GET", rf"/pulls/{pr.number}$", times=None, drip_seconds=0.3)
    result = _review(bench, pr.number, pr.head_sha, **env)
    assert result.returncode == GitHubFailed.exit_code == 17, result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: ") and line.endswith(f"[{bound}] [{reason}]"), line
    assert "Traceback" not in result.stderr and "skipped_fork" not in result.stdout
    assert bench.ledger().read_index(REPO, pr.number) == {} and bench.legs() == 0


def test_review_pr_never_takes_the_fork_check_from_another_origin(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "x = 1\n"})
    with GitHubSim(host="127.0.0.2", anonymous=True) as other:
        other.create_repo(REPO)
        other.open_pr(REPO, "f", {"a.py": "x = 1\n"}, from_fork="mallory/widgets")
        location = f"{other.url}/repos/{REPO}/pulls/{pr.number}"
        bench.sim.inject_redirect(location, "GET", rf"/pulls/{pr.number}$", times=None)
        result = _review(bench, pr.number, pr.head_sha)
        assert other.requests == []
    assert result.returncode == 17, result.stderr
    assert result.stderr.strip().endswith("[redirect_refused] [github_malformed]")
    assert "Traceback" not in result.stderr and "skipped_fork" not in result.stdout
