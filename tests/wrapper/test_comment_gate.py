"""Issue 10 item 6: one gate for every comment kdev posts; the self-loop is decided by
the posted-id set alone, never by the account."""

from __future__ import annotations

import ast
import inspect
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.config import Settings
from engine.github import GitHubClient
from engine.triggers import find_mention, has_raw_html
from tests.wrapper.reviewbench import BIN, REPO, Bench
from tests.wrapper.test_mention_wrapper import (  # noqa: F401
    BOT_ID,
    HANDLE,
    LOUD,
    bench,
    mention_config,
    run,
)
from tests.wrapper.test_ping_containment import ALLOW, HOSTILE, linked, not_allowed
from wrapper.authorloop.threads import reply
from wrapper.config import KdevConfig
from wrapper.errors import ConfigError, KdevError, LedgerError, Outcome
from wrapper.ledger.ledger import Ledger
from wrapper.post import PostingContext, post_gated

_ = bench  # the shared fixture


@pytest.fixture
def client(bench: Bench) -> Iterator[GitHubClient]:  # noqa: F811
    with GitHubClient(Settings(github_api_url=bench.sim.url, github_token=bench.token)) as made:
        yield made


@pytest.mark.parametrize("kind", ["issue", "review"])
def test_every_reply_is_gated_and_its_id_recorded(
    bench: Bench,  # noqa: F811
    client: GitHubClient,
    kind: str,
) -> None:
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    extra: dict[str, Any] = {"path": "a.py", "line": 1} if kind == "review" else {}
    asked = bench.sim.comment(REPO, pr.number, "why?", ("alice", 9), kind=kind, **extra)
    config = mention_config(bench)
    ctx = PostingContext(client, bench.ledger(), config, {}, REPO, pr.number)
    result = reply(ctx, asked.id, f"@{HANDLE} review")
    posted = bench.sim.get_comment(REPO, result.id)
    assert find_mention(posted.body, HANDLE) is None  # neutralised
    assert result.id in bench.ledger().posted_comment_ids(REPO)
    # kdev's own reply, fired back at it, never summons it.
    again = run(bench, pr.number, comment_id=result.id, config=config)
    assert again.outcome is Outcome.SKIPPED_SELF_COMMENT


def test_a_reply_cannot_be_posted_without_a_ledger(
    bench: Bench,  # noqa: F811
    client: GitHubClient,
) -> None:
    assert inspect.signature(PostingContext).parameters["ledger"].default is inspect.Parameter.empty
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    with pytest.raises(TypeError):
        PostingContext(client, config=mention_config(bench), environ={}, repo=REPO, pr=pr.number)  # type: ignore[call-arg]
    assert not bench.sim.requests_to("/comments", "POST")


def test_the_gate_records_only_an_answer_with_an_id(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    config = KdevConfig(mention_handle=HANDLE)
    sent: list[str] = []

    def send(body: str) -> dict[str, Any]:
        sent.append(body)
        return {"id": 41, "html_url": "u"}

    post_gated(ledger, config, {}, REPO, 3, f"cc @{HANDLE}", "review", send)
    assert ledger.posted_comment_ids(REPO) == frozenset({41})
    assert sent and find_mention(sent[0], HANDLE) is None
    with pytest.raises(KdevError) as caught:
        post_gated(ledger, config, {}, REPO, 3, "x", "review", lambda body: {"id": None})
    assert caught.value.reason == "comment_post_failed"
    assert ledger.posted_comment_ids(REPO) == frozenset({41})


def test_the_agents_own_account_can_still_summon_a_review(
    bench: Bench,  # noqa: F811
) -> None:
    """On a single-maintainer repository kdev posts from the maintainer's account: a
    comment by that account that kdev did not post is a real request."""
    config = mention_config(bench, mention_allowlist=[BOT_ID])
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    asked = bench.sim.comment(REPO, pr.number, f"@{HANDLE} review", ("review-bot", BOT_ID))
    report = run(bench, pr.number, comment_id=asked.id, config=config)
    assert report.outcome is Outcome.REVIEWED


# --- every posting path passes wrapper/post.py (issue 16) -----------------------------------

PATHS = ("review", "describe", "reply-inline", "reply-issue")
SECRET = "sk-canary-5a5a5a5a5a5a5a5a"


def _post_on(
    bench: Bench,  # noqa: F811
    path: str,
    hostile: str,
    environ: dict[str, str],
    **extra: Any,
) -> None:
    """Makes kdev post ``hostile`` (as reviewer output, or as reply text) on one path."""
    script = bench.root / "hostile.txt"
    script.write_text(hostile + "\nVERDICT: REQUEST_CHANGES\n")
    reviewer = {"backend": "command", "argv": ["sh", "-c", f"cat >/dev/null; cat {script}"]}
    config = mention_config(
        bench,
        reviewer=reviewer,
        notify=[{"type": "github-comment"}],
        secret_env=["LEAKY"],
        **extra,
    )
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    if path in ("review", "describe"):
        run(bench, pr.number, config=config, environ=environ, describe=path == "describe")
        return
    kind = "review" if path == "reply-inline" else "issue"
    extra: dict[str, Any] = {"path": "a.py", "line": 1} if kind == "review" else {}
    asked = bench.sim.comment(REPO, pr.number, "why?", ("alice", 9), kind=kind, **extra)
    settings_ = Settings(github_api_url=bench.sim.url, github_token=bench.token)
    with GitHubClient(settings_) as made:
        reply(
            PostingContext(made, bench.ledger(), config, environ, REPO, pr.number),
            asked.id,
            hostile,
        )


@pytest.mark.parametrize("path", PATHS)
def test_a_hostile_body_is_neutralised_on_every_posting_path(
    bench: Bench,  # noqa: F811
    path: str,
) -> None:
    _post_on(bench, path, LOUD, {})
    posts = bench.sim.requests_to(r"/comments(/\d+/replies)?$", "POST")
    assert len(posts) == 1
    [mine] = [c for c in bench.sim.comments(REPO) if c.user.id == BOT_ID]
    assert find_mention(mine.body, HANDLE) is None
    assert not has_raw_html(mine.body)
    assert "#12" not in mine.body and "octo/other#3" not in mine.body
    assert "```\n@kdev in a fence <i>\n```" in mine.body  # code is left as it is
    assert mine.id in bench.ledger().posted_comment_ids(REPO)


@pytest.mark.parametrize("path", PATHS)
def test_a_body_pings_only_the_configured_recipients_on_every_posting_path(
    bench: Bench,  # noqa: F811
    path: str,
) -> None:
    """Issue 24: the reviewer's (or the reply's) mentions and references, hidden or not,
    are posted neutral; the names of mention_allow stay live."""
    _post_on(bench, path, HOSTILE, {}, mention_allow=list(ALLOW))
    [mine] = [c for c in bench.sim.comments(REPO) if c.user.id == BOT_ID]
    assert not_allowed(linked(mine.body)) == []
    assert {"@alice", "@octo/reviewers"} <= {name.lower() for name in linked(mine.body)}
    assert "@&#8203;victim" in mine.body and "GH-&#8203;34" in mine.body


def test_an_operator_reply_pings_whom_it_names(
    bench: Bench,  # noqa: F811
    client: GitHubClient,
) -> None:
    """``kdev reply --mention carol``: the operator's chosen recipient is pinged, every
    other name of the text is not; kdev's own handle or a bad name is refused."""
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    asked = bench.sim.comment(REPO, pr.number, "why?", ("alice", 9))
    config = mention_config(bench)
    text = "@carol please look; the reviewer said @dave and #3"
    ctx = PostingContext(client, bench.ledger(), config, {}, REPO, pr.number)
    result = reply(ctx, asked.id, text, mention=["carol"])
    body = bench.sim.get_comment(REPO, result.id).body
    assert "@carol please" in body and "@&#8203;dave" in body and "#&#8203;3" in body
    for bad in (HANDLE, "@carol", "a/b/c"):
        with pytest.raises(ConfigError) as caught:
            reply(ctx, asked.id, "x", [bad])
        assert caught.value.reason == "invalid_mention_name"
    assert len(bench.sim.requests_to(r"/comments$", "POST")) == 1


def test_kdev_reply_mention_on_the_command_line(bench: Bench) -> None:  # noqa: F811
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    asked = bench.sim.comment(REPO, pr.number, "why?", ("alice", 9))
    env = bench.kdev_env(mention_config(bench))
    argv = [str(BIN / "kdev"), "reply", "--repo", REPO, "--pr", str(pr.number),
            "--comment-id", str(asked.id), "@carol and @dave, see"]  # fmt: skip
    done = subprocess.run(
        [*argv, "--mention", "carol"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    [mine] = [c for c in bench.sim.comments(REPO) if c.id != asked.id]
    assert "@carol and @&#8203;dave" in mine.body
    refused = subprocess.run(
        [*argv, "--mention", HANDLE], env=env, capture_output=True, text=True, timeout=60
    )
    assert refused.returncode == 2 and refused.stderr.strip().endswith("[invalid_mention_name]")


@pytest.mark.parametrize("path", PATHS)
def test_a_body_with_a_secret_is_posted_on_no_path(
    bench: Bench,  # noqa: F811
    path: str,
) -> None:
    with pytest.raises(LedgerError) as caught:
        _post_on(bench, path, f"{LOUD}\nthe key is {SECRET}\n", {"LEAKY": SECRET})
    assert caught.value.reason == "secret_in_output"
    assert not bench.sim.requests_to(r"/comments(/\d+/replies)?$", "POST")
    assert bench.ledger().posted_comment_ids(REPO) == frozenset()


_WRITES = {
    "post_issue_comment", "post_line_comment", "post_rest", "create_review", "create_status",
    "create_reaction", "create_check_run", "update_check_run",
}  # fmt: skip
# Where a write is defined rather than used: the generic POST of kdev's own GitHub calls
# (gh_reviews.py: reviews with line comments and statuses, issue 27; gh_checks.py: check
# runs, issue 30).
_DEFINES_WRITES = {"gh.py", "gh_reviews.py", "gh_checks.py"}
# The two writes that carry several bodies or none, each called in one module only: a
# round's review, whose every body round_post prepares with wrapper.post.PostingContext.prepare
# (the gate's steps 1-2) before the one POST, and whose ids it records after
# (tests/wrapper/test_round_post.py: a secret in a finding posts nothing); and the merge
# gate's commit status, fixed text of ours checked by the secret canary
# (tests/wrapper/test_merge_gate.py); and the check-run gate's writes, whose title,
# summary and annotation messages it prepares with wrapper.post.BodyGate (the gate's steps
# 1-2; tests/wrapper/test_check_gate.py: a secret sends nothing). Any other caller fails.
_GATED_IN = {
    "create_review": "review/round_post.py",
    "create_status": "review/merge_gate.py",
    "create_check_run": "review/check_gate.py",
    "update_check_run": "review/check_gate.py",
}


def _write_name(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _write_call(node: ast.AST) -> bool:
    """A call of a GitHub write: ``x.post_rest(...)``, ``post_issue_comment(...)``, or a
    generic ``x.request("POST", ...)``."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if name in _WRITES:
        return True
    first = node.args[0] if node.args else None
    return name == "request" and isinstance(first, ast.Constant) and first.value != "GET"


def _is_gate(func: ast.expr) -> bool:
    if isinstance(func, ast.Attribute):
        return func.attr == "gated"
    return getattr(func, "id", "") == "post_gated"


def _gated_sends(tree: ast.AST) -> set[ast.AST]:
    """The nested functions handed by name to ``post_gated`` (or to a
    :class:`wrapper.post.PostingContext`'s ``gated``) in the function around them."""
    found: set[ast.AST] = set()
    for outer in ast.walk(tree):
        if not isinstance(outer, ast.FunctionDef):
            continue
        inner = {n.name: n for n in outer.body if isinstance(n, ast.FunctionDef)}
        for call in ast.walk(outer):
            if isinstance(call, ast.Call) and _is_gate(call.func):
                names = [a.id for a in call.args if isinstance(a, ast.Name)]
                found.update(inner[name] for name in names if name in inner)
    return found


def test_nothing_in_the_wrapper_posts_a_body_around_the_gate() -> None:
    """A GitHub write (``post_issue_comment``, ``post_rest``, a non-GET ``request``) is
    called only in wrapper/post.py, in a ``send`` function handed to
    :func:`wrapper.post.post_gated`, or where wrapper/gh.py defines the write itself."""
    root = Path(__file__).resolve().parents[2] / "wrapper"
    outside: list[str] = []
    calls = 0
    for source in sorted(root.rglob("*.py")):
        tree = ast.parse(source.read_text(), str(source))
        sends = _gated_sends(tree)
        allowed = {node for send in sends for node in ast.walk(send)}
        where = str(source.relative_to(root))
        for node in ast.walk(tree):
            if _write_call(node):
                calls += 1
                assert isinstance(node, ast.Call)
                if _GATED_IN.get(_write_name(node)) == where:
                    continue
                if source.name not in {"post.py", *_DEFINES_WRITES} and node not in allowed:
                    outside.append(f"{where}:{node.lineno}")
    assert calls >= 2  # the scan sees the gate's own writes
    assert outside == []
