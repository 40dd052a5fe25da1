"""The wrapper side of mention triggers: neutraliser, self-loop, github-comment, forks on
mention, describe-pr (ghsim + real git + stub reviewer, as tests/wrapper/test_review.py)."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.config import Settings
from engine.github import GitHubClient
from engine.triggers import find_mention, has_raw_html, render
from ghsim import GitHubSim
from tests.wrapper.reviewbench import BIN, REPO, ROOT, Bench
from wrapper.config import load_config
from wrapper.errors import ConfigError, LedgerError, Outcome
from wrapper.ledger.usagelog import read_usage
from wrapper.neutralise import escape_prose, neutralise, prepare_comment
from wrapper.post import PostingContext, post_comment
from wrapper.review.describe import describe_pr
from wrapper.review.review import ReviewContext, ReviewRequest, review_pr

HANDLE = "kdev"
MAINTAINER = ("maintainer", 7001)
STRANGER = ("stranger", 7002)
BOT_ID = 5000  # the token's user in the bench


@pytest.fixture
def bench(tmp_path: Path) -> Iterator[Bench]:
    token = f"tok-{uuid.uuid4().hex}"
    with GitHubSim(tmp_path / "github") as sim:
        sim.add_token(token, ("review-bot", BOT_ID))
        sim.create_repo(REPO, files={"app.py": "print('hi')\n"})
        checkout = tmp_path / "checkout"
        subprocess.run(["git", "clone", "-q", str(sim.repo_path(REPO)), str(checkout)], check=True)
        yield Bench(sim, checkout, tmp_path, token)


def mention_config(b: Bench, **overrides: Any) -> Any:
    data: dict[str, Any] = {"mention_handle": HANDLE, "mention_allowlist": [MAINTAINER[1]]}
    data.update(overrides)
    return b.config(**data)


def run(
    b: Bench,
    pr: int,
    *,
    comment_id: int | None = None,
    config: Any = None,
    environ: dict[str, str] | None = None,
    describe: bool = False,
    head_sha: str | None = None,
) -> Any:
    settings_ = Settings(github_api_url=b.sim.url, github_token=b.token)
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(b.root),
        "PYTHONPATH": str(ROOT),
        "GITHUB_TOKEN": b.token,
        **(environ or {}),
    }
    with GitHubClient(settings_) as client:
        ctx = ReviewContext(
            config=config or mention_config(b), ledger=b.ledger(), github=client, environ=env
        )
        head = head_sha if head_sha is not None else b.sim.pull(REPO, pr).head_sha
        req = ReviewRequest(
            repo=REPO, pr=pr, head_sha=head, checkout=b.checkout, comment_id=comment_id
        )
        return describe_pr(req, ctx) if describe else review_pr(req, ctx)


def posted_by_kdev(b: Bench) -> list[Any]:
    return [c for c in b.sim.comments(REPO) if c.user.id == BOT_ID]


def fetched_refs(b: Bench) -> str:
    return subprocess.run(
        ["git", "for-each-ref", "--format=%(refname)"],
        cwd=b.checkout,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


# --- forks on mention ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["issue", "review"])
def test_an_allowlisted_mention_on_a_fork_pr_is_reviewed_without_a_token(
    bench: Bench, kind: str
) -> None:
    pr = bench.sim.open_pr(REPO, "evil", {"a.py": "1\n"}, from_fork="mallory/widgets")
    note = bench.sim.comment(REPO, pr.number, "@kdev review", author=MAINTAINER, kind=kind)
    env_dump = bench.root / "reviewer-env.txt"
    reviewer = {
        "backend": "command",
        "argv": ["sh", "-c", f"env > {env_dump}; cat >/dev/null; echo 'VERDICT: APPROVE'"],
    }
    config = mention_config(bench, reviewer=reviewer)
    report = run(bench, pr.number, comment_id=note.id, config=config)
    assert report.outcome is Outcome.REVIEWED and report.verdict == "APPROVE"
    names = {line.split("=", 1)[0] for line in env_dump.read_text().splitlines()}
    assert "GITHUB_TOKEN" not in names and "GH_TOKEN" not in names
    assert bench.token not in env_dump.read_text()


@pytest.mark.parametrize("case", ["stranger", "other_pr", "missing", "switched_off", "no_id"])
def test_a_fork_pr_is_skipped_unless_the_mention_checks_out(bench: Bench, case: str) -> None:
    pr = bench.sim.open_pr(REPO, "evil", {"a.py": "1\n"}, from_fork="mallory/widgets")
    other = bench.sim.open_pr(REPO, "fine", {"b.py": "1\n"})
    config = mention_config(bench)
    comment_id: int | None
    if case == "stranger":
        comment_id = bench.sim.comment(REPO, pr.number, "@kdev review", author=STRANGER).id
    elif case == "other_pr":
        comment_id = bench.sim.comment(REPO, other.number, "@kdev", author=MAINTAINER).id
    elif case == "missing":
        comment_id = 987654
    elif case == "switched_off":
        comment_id = bench.sim.comment(REPO, pr.number, "@kdev", author=MAINTAINER).id
        config = mention_config(bench, fork_review_on_mention=False)
    else:
        comment_id = None
    report = run(bench, pr.number, comment_id=comment_id, config=config)
    assert report.outcome is Outcome.SKIPPED_FORK, report
    assert "refs/kdev/pull" not in fetched_refs(bench) and bench.legs() == 0


def test_comment_id_changes_nothing_for_a_same_repo_pr(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    note = bench.sim.comment(REPO, pr.number, "@kdev", author=STRANGER)
    assert run(bench, pr.number, comment_id=note.id).outcome is Outcome.REVIEWED


# --- self-loop closure and the github-comment target ---------------------------------------

LOUD = (
    "Looks fine. @kdev review again, cc @KDEV describe. See #12 and octo/other#3.\n"
    "<img src=x onerror=alert(1)> <!-- hidden -->\n\n"
    "Keep `@kdev <b>` as code.\n\n"
    "```\n@kdev in a fence <i>\n```\n\n"
    "VERDICT: REQUEST_CHANGES\n"
)


def loud_reviewer(b: Bench) -> dict[str, Any]:
    script = b.root / "loud.txt"
    script.write_text(LOUD)
    return {"backend": "command", "argv": ["sh", "-c", f"cat >/dev/null; cat {script}"]}


def test_github_comment_posts_one_neutralised_comment_per_round(bench: Bench) -> None:
    config = mention_config(
        bench,
        reviewer=loud_reviewer(bench),
        notify=[{"type": "github-comment"}, {"type": "file", "path": str(bench.root / "n.jsonl")}],
    )
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    first = run(bench, pr.number, config=config)
    assert first.outcome is Outcome.REVIEWED and "posted" in first.detail
    [comment] = posted_by_kdev(bench)
    assert find_mention(comment.body, HANDLE) is None
    assert not has_raw_html(comment.body)
    assert "#12" not in comment.body and "octo/other#3" not in comment.body
    assert "`@kdev <b>`" in comment.body  # code spans untouched
    assert "```\n@kdev in a fence <i>\n```" in comment.body
    assert "REQUEST_CHANGES" in comment.body
    assert comment.id in bench.ledger().posted_comment_ids(REPO)

    # The same diff again: carried forward, no new comment; a new diff: one more.
    assert run(bench, pr.number, config=config).outcome is Outcome.CARRIED_FORWARD
    assert len(posted_by_kdev(bench)) == 1
    bench.sim.advance(2)
    bench.sim.push(REPO, pr.number, {"a.py": "2\n"})
    assert run(bench, pr.number, config=config).outcome is Outcome.REVIEWED
    assert len(posted_by_kdev(bench)) == 2

    # kdev's own comment, fired back at it, is skipped before anything else.
    again = run(bench, pr.number, comment_id=comment.id, config=config)
    assert again.outcome is Outcome.SKIPPED_SELF_COMMENT
    assert bench.legs() == 2


def test_a_recorded_comment_id_is_skipped_self_comment(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "evil", {"a.py": "1\n"}, from_fork="mallory/widgets")
    bench.ledger().record_posted_comment(REPO, pr.number, 4242, "review")
    report = run(bench, pr.number, comment_id=4242)
    assert report.outcome is Outcome.SKIPPED_SELF_COMMENT
    assert not bench.sim.requests_to(r"/pulls/\d+$")  # decided before any API call


def test_a_verdict_containing_a_secret_is_not_posted(bench: Bench) -> None:
    secret = "sk-canary-0123456789abcdef"
    echo = {"backend": "command", "argv": ["sh", "-c", "cat; echo 'VERDICT: APPROVE'"]}
    config = mention_config(
        bench, reviewer=echo, secret_env=["LEAKY"], notify=[{"type": "github-comment"}]
    )
    pr = bench.sim.open_pr(REPO, "f", {"a.py": f"KEY = '{secret}'\n"})
    with pytest.raises(LedgerError) as caught:
        run(bench, pr.number, config=config, environ={"LEAKY": secret})
    assert caught.value.reason == "secret_in_output"
    assert posted_by_kdev(bench) == []


def test_post_comment_refuses_a_body_with_a_secret(bench: Bench) -> None:
    secret = "sk-canary-fedcba9876543210"
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    config = mention_config(bench, secret_env=["LEAKY"])
    settings_ = Settings(github_api_url=bench.sim.url, github_token=bench.token)
    with GitHubClient(settings_) as client, pytest.raises(LedgerError):
        target = PostingContext(client, bench.ledger(), config, {"LEAKY": secret}, REPO, pr.number)
        post_comment(target, secret, "review")
    assert not bench.sim.requests_to(r"/issues/\d+/comments$", method="POST")


# --- describe-pr ----------------------------------------------------------------------------


def test_describe_posts_a_description_comment_and_counts_a_leg(bench: Bench) -> None:
    config = mention_config(bench, reviewer=loud_reviewer(bench))
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"}, body="original body")
    report = run(bench, pr.number, config=config, describe=True, head_sha="")
    assert report.outcome is Outcome.DESCRIBED, report
    [comment] = posted_by_kdev(bench)
    assert comment.body.startswith("**kdev description**")
    assert find_mention(comment.body, HANDLE) is None and not has_raw_html(comment.body)
    assert comment.id in bench.ledger().posted_comment_ids(REPO)
    assert bench.legs() == 1
    # The description leg's usage is recorded as a review leg's is (D103).
    [usage] = read_usage(bench.ledger(), REPO)
    assert (usage.command, usage.head_sha, usage.usage.source.value) == (
        "describe-pr",
        pr.head_sha,
        "unknown",
    )
    assert bench.sim.pull(REPO, pr.number).body == "original body"  # never edited
    assert bench.ledger().read_index(REPO, pr.number) == {}  # not a review verdict


def test_describe_over_budget_is_deferred(bench: Bench) -> None:
    notes = bench.root / "n.jsonl"
    config = mention_config(
        bench,
        budgets={"daily_legs_per_repo": 0},
        notify=[{"type": "file", "path": str(notes)}],
    )
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    report = run(bench, pr.number, config=config, describe=True)
    assert report.outcome is Outcome.DEFERRED_BUDGET
    assert posted_by_kdev(bench) == [] and bench.legs() == 0
    assert bench.ledger().list_deferred(REPO) == []  # no marker: the sweep retries reviews
    assert "DEFERRED" in notes.read_text()


def test_describe_needs_a_handle(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    with pytest.raises(ConfigError):
        run(bench, pr.number, config=bench.config(), describe=True)


def test_describe_pr_cli(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    env = bench.kdev_env(mention_config(bench))
    result = subprocess.run(
        [str(BIN / "kdev"), "describe-pr", "--repo", REPO, "--pr", str(pr.number),
         "--checkout", str(bench.checkout), "--comment-id", "", "--json"],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1])["outcome"] == "described"


# --- config and CLI -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad", ['["maintainer"]', "[0]", "[-3]", "[true]", "[1.5]", '["--5"]', '["5"]', "7"]
)
def test_a_bad_mention_allowlist_is_one_line_allowlist_config_error(bench: Bench, bad: str) -> None:
    env = bench.kdev_env()
    Path(env["KDEV_CONFIG"]).write_text(f"mention_allowlist: {bad}\n")
    with pytest.raises(ConfigError) as caught:
        load_config(env["KDEV_CONFIG"])
    assert caught.value.reason == "allowlist_config_error"
    if bad == '["--5"]':
        result = subprocess.run(
            [str(BIN / "kdev"), "verdicts"], env=env, capture_output=True, text=True,
            check=False, timeout=60,
        )  # fmt: skip
        assert result.returncode == 2
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].endswith("[allowlist_config_error]")


def test_a_bad_comment_id_is_a_usage_error(bench: Bench) -> None:
    result = subprocess.run(
        [str(BIN / "kdev"), "review-pr", "--repo", REPO, "--pr", "1", "--head-sha", "a" * 40,
         "--comment-id", "12x"],
        env=bench.kdev_env(), capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2 and result.stderr.strip().endswith("[invalid_comment_id]")


# --- the neutraliser ------------------------------------------------------------------------

# (body, counted?) - counted bodies must change; of the others, those GitHub still links
# (LINKED_ONLY: quotes, other logins, emphasis-split) change too, the rest stay as they are.
NEUTRALISE_TABLE: list[tuple[str, bool]] = [
    ("@kdev review", True),
    ("@KDEV describe", True),
    ("hi @kdev.", True),
    ("**@kdev** describe", True),
    ("@*kdev*", False),  # two text nodes, as GitHub sees it
    ("@&#x6b;dev", True),
    ("[@kdev](https://example.com)", False),
    ("<div>\n@kdev\n</div>", True),
    ("\\@kdev x", True),
    ("&#x40;kdev", True),
    ("&commat;kdev", True),
    ("<code>@kdev</code>", False),
    ("- @kdev", True),
    ("# @kdev", True),
    ("@kdev@kdev", True),
    ("a @kdev b @kdev c", True),
    ("`@kdev`", False),
    ("``a ` @kdev``", False),
    ("```\n@kdev\n```", False),
    ("~~~\n@kdev\n", False),
    ("    @kdev", False),
    ("> @kdev", False),
    ("> > @kdev", False),
    ("<!-- @kdev -->", False),
    ("user@kdev.ai", False),
    ("@kdevbot", False),
    ("@kdev-ci", False),
    ("&#64;kdev", True),
    ("@&#8203;kdev", False),
    ("\\@kdev", True),
    ("https://x.test/@kdev", False),
    ("<https://x.test/@kdev>", False),
    ("x@kdev", False),
    ("`@kdev` and @kdev", True),
]


LINKED_ONLY = {"@*kdev*", "> @kdev", "> > @kdev", "@kdevbot", "@kdev-ci"}


@pytest.mark.parametrize(("body", "counted"), NEUTRALISE_TABLE)
def test_neutralise_table(body: str, counted: bool) -> None:
    assert (find_mention(body, HANDLE) is not None) is counted
    out = neutralise(body, HANDLE)
    assert find_mention(out, HANDLE) is None
    assert (out != body) is (counted or body in LINKED_ONLY)
    assert neutralise(out, HANDLE) == out
    if counted:
        assert "@&#8203;" in out


def test_neutralise_rewrites_only_the_linked_at() -> None:
    assert neutralise("`@kdev` and @kdev", HANDLE) == "`@kdev` and @&#8203;kdev"
    # A quote notifies on GitHub, though it summons nobody (D69).
    assert neutralise("> @kdev\n\n@kdev", HANDLE) == "> @&#8203;kdev\n\n@&#8203;kdev"
    assert neutralise("&#64;kdev `&#64;kdev`", HANDLE) == "@&#8203;kdev `&#64;kdev`"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("see #12", "see #12"),  # references are neutralise's (D69: &#35; decodes back)
        ("octo/app#3", "octo/app#3"),
        ("<b>x</b>", "&lt;b>x&lt;/b>"),
        ("`<b> #1`", "`<b> #1`"),
        ("```\n<b> #1\n```\n<i>", "```\n<b> #1\n```\n&lt;i>"),
        ("# heading #x", "# heading #x"),
    ],
)
def test_escape_prose_table(text: str, expected: str) -> None:
    assert escape_prose(text) == expected


def _code(body: str) -> list[str]:
    """The contents of every code element of ``body`` as GitHub renders it."""
    return re.findall(r"<code[^>]*>(.*?)</code>", render(body), flags=re.DOTALL)


PIECES = st.sampled_from(
    ["@kdev", "@KDEV", "kdev", "@", "`", "``", "```", "~~~", "\n", "\n\n", " ", "    ", "> ",
     "*", "_", "<!--", "-->", "<b>", "\\", "&#64;", "&#x40;", "<div>\n", "<code>", "&", "#",
     "[", "](u)", "x", ".", "-",
     "[", "](u)", "x", ".", "-", "#1", ":", "describe", "h", "&#x6b;dev"]
)  # fmt: skip
TEXTS = st.one_of(st.lists(PIECES, max_size=30).map("".join), st.text(max_size=60))


@settings(max_examples=300, deadline=None)
@given(TEXTS)
def test_neutralised_text_has_no_mention_and_keeps_code(text: str) -> None:
    out = neutralise(text, HANDLE)
    assert find_mention(out, HANDLE) is None
    assert _code(out) == _code(text)
    assert neutralise(out, HANDLE) == out


@settings(max_examples=300, deadline=None)
@given(TEXTS)
def test_prepared_comment_has_no_mention_and_no_html(text: str) -> None:
    out = prepare_comment(text, HANDLE)
    assert find_mention(out, HANDLE) is None
    assert not has_raw_html(out)


def test_the_wrapper_uses_only_the_public_api_of_engine_triggers() -> None:
    # engine.triggers exports its detector and parser; a submodule or a private name
    # imported from outside would tie the wrapper to its insides again (issue 16).
    offending = []
    for path in sorted((ROOT / "wrapper").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "engine.triggers"
            ):
                names = [alias.name for alias in node.names]
                if node.module != "engine.triggers" or any(n.startswith("_") for n in names):
                    offending.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            elif isinstance(node, ast.Import) and any(
                alias.name.startswith("engine.triggers.") for alias in node.names
            ):
                offending.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offending == []


def test_as_a_github_app_the_bot_posts_and_its_own_comment_is_still_skipped(
    bench: Bench,
) -> None:
    """Issue 30: the round's comment comes from the App's bot, neutralised as before, its
    id recorded, and the bot's comment fired back at kdev is skipped (the self-loop rule
    needs no login, so nothing changed for it)."""
    from engine.github import github_client
    from tests.appkit import install_app

    app = install_app(bench.sim, bench.root)
    environ = {
        "PATH": os.environ["PATH"],
        "HOME": str(bench.root),
        "PYTHONPATH": str(ROOT),
        "GITHUB_API_URL": bench.sim.url,
        "GITHUB_APP_ID": str(app.app.id),
        "GITHUB_APP_PRIVATE_KEY_FILE": str(app.key_file),
        "GITHUB_APP_REPOSITORY": REPO,
        "GITHUB_APP_TOKEN_CACHE": str(bench.root / "state" / "token.json"),
    }
    config = mention_config(
        bench, reviewer=loud_reviewer(bench), notify=[{"type": "github-comment"}]
    )
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})

    def review(comment_id: int | None = None) -> Any:
        with github_client(Settings.from_env(environ), record_rates=False) as client:
            ctx = ReviewContext(
                config=config, ledger=bench.ledger(), github=client, environ=environ
            )
            head = bench.sim.pull(REPO, pr.number).head_sha
            request = ReviewRequest(
                repo=REPO, pr=pr.number, head_sha=head, checkout=bench.checkout,
                comment_id=comment_id,
            )  # fmt: skip
            return review_pr(request, ctx)

    assert review().outcome is Outcome.REVIEWED
    [comment] = [c for c in bench.sim.comments(REPO) if c.user.login == "kdev-review[bot]"]
    assert comment.user.type == "Bot" and find_mention(comment.body, HANDLE) is None
    assert comment.id in bench.ledger().posted_comment_ids(REPO)
    assert review(comment_id=comment.id).outcome is Outcome.SKIPPED_SELF_COMMENT
    assert posted_by_kdev(bench) == []  # nothing came from the token's user
