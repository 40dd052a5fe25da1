"""Issue 27 over HTTP: ghsim creates reviews with line comments, statuses and applied
suggestions with GitHub's rules and GitHub's 422 words, and kdev's client
(``wrapper/gh_reviews.py``) drives them.

The pull of every test changes lines 3 and 20 of a 30-line file, so its diff has two
hunks (GitHub's three lines of context): lines 1-6 and 17-23 on either side.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, cast

import httpx
import pytest

from engine.config import Settings
from engine.errors import InvalidInput
from engine.github import GitHubClient, GitHubHttpError, GitHubMalformedPayload
from ghsim import GhsimError, GitHubSim
from ghsim.anchors import (
    HUNK_BLANK,
    LINE_NOT_IN_DIFF,
    PATH_INVALID,
    START_NOT_BEFORE,
    START_NOT_IN_HUNK,
)
from ghsim.checks import MAX_STATUSES, TOO_LONG, TOO_MANY
from ghsim.model import CommitStatus
from ghsim.reviews import BODY_BLANK, NOT_IN_PULL, ONE_PENDING, OWN_APPROVAL, OWN_CHANGES
from ghsim.suggestions import (
    DELETED_LINES,
    FROM_PENDING,
    NO_CHANGE,
    OUTDATED,
    PULL_CLOSED,
    SuggestionRefused,
)
from tests.e2e.test_ghsim import fixture, shape_differences
from wrapper.gh_reviews import (
    LineComment,
    combined_status,
    create_review,
    create_status,
    list_review_comments,
)

REPO = "octo/widgets"
TOKEN = "ghp_ReviewRoutesToken0123456789abcd"
AUTHOR_TOKEN = "ghp_PullAuthorToken0123456789abcdef"
T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
BASE = "".join(f"l{i}\n" for i in range(1, 31))
HEAD = BASE.replace("l3\n", "L3\n").replace("l20\n", "L20\n")
SUGGEST = "```suggestion\n{}\n```"


@pytest.fixture
def sim() -> Iterator[GitHubSim]:
    with GitHubSim() as made:
        made.set_time(T0)
        made.add_token(TOKEN, ("reviewer", 4242))
        made.add_token(AUTHOR_TOKEN, ("author", 77))
        made.create_repo(REPO, files={"a.py": BASE, "b.py": "b\n"})
        made.open_pr(REPO, "feature", {"a.py": HEAD}, author=("author", 77))
        yield made


def http(sim: GitHubSim, token: str = TOKEN) -> httpx.Client:
    return httpx.Client(base_url=sim.url, headers={"Authorization": f"Bearer {token}"})


@pytest.fixture
def client(sim: GitHubSim) -> Iterator[GitHubClient]:
    with GitHubClient(Settings(github_api_url=sim.url, github_token=TOKEN)) as made:
        yield made


def post_review(sim: GitHubSim, body: dict[str, Any], token: str = TOKEN) -> httpx.Response:
    with http(sim, token) as c:
        return c.post(f"/repos/{REPO}/pulls/1/reviews", json=body)


def refusal(sim: GitHubSim, *comments: dict[str, Any]) -> list[str]:
    """The ``errors`` of a 422 for a COMMENT review with ``comments``; asserts nothing
    was made (one bad comment rejects the whole review)."""
    before = (len(sim.reviews(REPO, 1)), len(sim.comments(REPO)))
    answer = post_review(sim, {"event": "COMMENT", "body": "b", "comments": list(comments)})
    assert answer.status_code == 422, answer.text
    assert answer.json()["message"] == "Unprocessable Entity"
    assert (len(sim.reviews(REPO, 1)), len(sim.comments(REPO))) == before
    errors: list[str] = answer.json()["errors"]
    return errors


def at(line: int, body: str = "note", **more: Any) -> dict[str, Any]:
    return {"path": "a.py", "line": line, "body": body, **more}


# == creating a review =========================================================================


def test_a_review_with_comments_is_200_and_each_comment_names_its_review(sim: GitHubSim) -> None:
    comments = [at(3), at(5, start_line=2), at(3, side="LEFT"), at(20, start_line=17)]
    answer = post_review(sim, {"event": "COMMENT", "body": "see inline", "comments": comments})
    assert answer.status_code == 200  # not 201
    review = answer.json()
    assert review["state"] == "COMMENTED" and review["submitted_at"] == "2024-05-01T12:00:00Z"
    assert review["commit_id"] == sim.pull(REPO, 1).head_sha
    with http(sim) as c:
        listed = c.get(f"/repos/{REPO}/pulls/1/reviews/{review['id']}/comments").json()
        feed = c.get(f"/repos/{REPO}/pulls/1/comments").json()
        assert c.get(f"/repos/{REPO}/pulls/1/reviews/{review['id']}").json()["id"] == review["id"]
    assert [c["id"] for c in listed] == [c["id"] for c in feed]
    assert {c["pull_request_review_id"] for c in listed} == {review["id"]}
    places = [(c["line"], c["side"], c["start_line"], c["start_side"]) for c in listed]
    assert places == [(3, "RIGHT", None, None), (5, "RIGHT", 2, "RIGHT"), (3, "LEFT", None, None),
                      (20, "RIGHT", 17, "RIGHT")]  # fmt: skip
    assert listed[0]["diff_hunk"] == "@@ -1,6 +1,6 @@\n l1\n l2\n-l3\n+L3"
    assert listed[2]["diff_hunk"].endswith("-l3") and listed[0]["position"] == 4


def test_position_anchors_a_comment_counting_down_from_the_first_hunk_header(
    sim: GitHubSim,
) -> None:
    # 1 " l1", 2 " l2", 3 "-l3", 4 "+L3", 5 " l4" .. 7 " l6"; the second header is 8
    answer = post_review(
        sim,
        {
            "event": "COMMENT",
            "body": "b",
            "comments": [
                {"path": "a.py", "position": 5, "body": "p"},
                {"path": "a.py", "position": 3, "body": "q"},
                {"path": "a.py", "position": 9, "body": "r"},
            ],
        },  # fmt: skip
    )
    assert answer.status_code == 200, answer.text
    made = sim.comments(REPO, "review")
    assert [(c.line, c.side, c.position) for c in made] == [
        (4, "RIGHT", 5), (3, "LEFT", 3), (17, "RIGHT", 9)
    ]  # fmt: skip
    assert refusal(sim, {"path": "a.py", "position": 8, "body": "header"}) == [HUNK_BLANK]
    assert refusal(sim, {"path": "a.py", "position": 99, "body": "past"}) == [HUNK_BLANK]


def test_a_line_outside_the_diff_rejects_the_whole_review(sim: GitHubSim) -> None:
    errors = refusal(sim, at(3, "a good one"), at(12))
    assert errors == [f"{LINE_NOT_IN_DIFF} and {HUNK_BLANK}"]  # pr-agent#592's words
    assert refusal(sim, at(4, side="LEFT", start_line=3), at(12, side="LEFT")) == [
        f"{LINE_NOT_IN_DIFF} and {HUNK_BLANK}"
    ]
    assert refusal(sim, at(12), at(25)) == [f"{LINE_NOT_IN_DIFF} and {HUNK_BLANK}"] * 2
    assert refusal(sim, at(3, side="MIDDLE")) == [f"{LINE_NOT_IN_DIFF} and {HUNK_BLANK}"]


def test_a_range_across_hunks_and_a_start_not_before_the_line_are_refused(
    sim: GitHubSim,
) -> None:
    assert refusal(sim, at(20, start_line=3)) == [START_NOT_IN_HUNK]
    assert refusal(sim, at(12, start_line=3)) == [
        f"{LINE_NOT_IN_DIFF}, {START_NOT_IN_HUNK}, and {HUNK_BLANK}"  # suggest-changes#28
    ]
    assert refusal(sim, at(3, start_line=3)) == [START_NOT_BEFORE]
    assert refusal(sim, at(3, start_line=5)) == [START_NOT_BEFORE]
    # across sides the diff order decides: LEFT 3 ("-l3") comes before RIGHT 3 ("+L3")
    assert post_review(sim, {"event": "COMMENT", "body": "b", "comments": [
        at(3, start_line=3, start_side="LEFT")]}).status_code == 200  # fmt: skip
    assert refusal(sim, at(3, side="LEFT", start_line=3, start_side="RIGHT")) == [START_NOT_BEFORE]


def test_a_path_the_pull_does_not_change_is_invalid(sim: GitHubSim) -> None:
    assert refusal(sim, {"path": "b.py", "line": 1, "body": "x"}) == [PATH_INVALID]
    assert refusal(sim, {"path": "nope.py", "line": 1, "body": "x"}) == [PATH_INVALID]


def test_a_commit_of_the_pull_is_accepted_and_any_other_is_refused(sim: GitHubSim) -> None:
    old = sim.pull(REPO, 1).head_sha
    sim.push(REPO, 1, {"a.py": HEAD.replace("l10\n", "L10\n")})
    base = sim.branch_sha(REPO, "main")
    for stranger in ("0" * 40, base):
        answer = post_review(sim, {"event": "COMMENT", "body": "b", "commit_id": stranger})
        assert answer.status_code == 422 and answer.json()["errors"] == [NOT_IN_PULL]
    # line 10 is in the head's diff, not in the older commit's: the comment anchors there
    on_old = post_review(sim, {"event": "COMMENT", "body": "b", "commit_id": old,
                               "comments": [at(10)]})  # fmt: skip
    assert on_old.status_code == 422
    answer = post_review(sim, {"event": "COMMENT", "body": "b", "commit_id": old,
                               "comments": [at(3)]})  # fmt: skip
    assert answer.status_code == 200 and answer.json()["commit_id"] == old
    assert sim.comments(REPO, "review")[-1].commit_id == old
    assert (
        post_review(sim, {"event": "COMMENT", "body": "b", "comments": [at(10)]}).status_code == 200
    )


def test_the_author_cannot_approve_or_request_changes_but_can_comment(sim: GitHubSim) -> None:
    own = [("APPROVE", OWN_APPROVAL), ("REQUEST_CHANGES", OWN_CHANGES)]
    for event, message in own:
        answer = post_review(sim, {"event": event, "body": "mine"}, AUTHOR_TOKEN)
        assert answer.status_code == 422 and answer.json()["errors"] == [message]
    assert post_review(sim, {"event": "COMMENT", "body": "mine"}, AUTHOR_TOKEN).status_code == 200
    assert post_review(sim, {"event": "APPROVE"}).json()["state"] == "APPROVED"  # no body needed


def test_request_changes_and_comment_need_a_body_and_the_event_is_checked(
    sim: GitHubSim,
) -> None:
    for event in ("REQUEST_CHANGES", "COMMENT"):
        answer = post_review(sim, {"event": event, "body": ""})
        assert answer.status_code == 422 and answer.json()["errors"] == [BODY_BLANK]
    bad = post_review(sim, {"event": "APPROVED"})
    assert bad.status_code == 422 and bad.json()["message"].startswith("Invalid request.")
    missing = post_review(sim, {"event": "COMMENT", "body": "b", "comments": [{"line": 3}]})
    assert missing.status_code == 422 and '"path"' in missing.json()["message"]
    assert sim.reviews(REPO, 1) == []


def test_without_an_event_the_review_is_pending_and_only_its_author_sees_it(
    sim: GitHubSim,
) -> None:
    answer = post_review(sim, {"body": "draft", "comments": [at(3, SUGGEST.format("X3"))]})
    assert answer.status_code == 200
    pending = answer.json()
    assert pending["state"] == "PENDING" and "submitted_at" not in pending
    again = post_review(sim, {"event": "COMMENT", "body": "b"})
    assert again.status_code == 422 and again.json()["errors"] == [ONE_PENDING]
    path = f"/repos/{REPO}/pulls/1/reviews/{pending['id']}"
    with http(sim) as mine, http(sim, AUTHOR_TOKEN) as other:
        assert [r["id"] for r in mine.get(f"/repos/{REPO}/pulls/1/reviews").json()] == [
            pending["id"]
        ]
        assert other.get(f"/repos/{REPO}/pulls/1/reviews").json() == []
        assert other.get(path).status_code == 404
        assert other.get(f"{path}/comments").status_code == 404
        drafts = mine.get(f"{path}/comments").json()
        assert [d["pull_request_review_id"] for d in drafts] == [pending["id"]]
        assert mine.get(f"/repos/{REPO}/pulls/1/comments").json() == []  # drafts: no feed
    with pytest.raises(SuggestionRefused, match=FROM_PENDING):
        sim.apply_suggestion(REPO, drafts[0]["id"])


# == statuses ================================================================================


def post_status(sim: GitHubSim, sha: str, body: dict[str, Any]) -> httpx.Response:
    with http(sim) as c:
        return c.post(f"/repos/{REPO}/statuses/{sha}", json=body)


def test_a_status_is_201_with_location_and_the_list_is_newest_first(sim: GitHubSim) -> None:
    sha = sim.pull(REPO, 1).head_sha
    first = post_status(sim, sha, {"state": "pending"})
    assert first.status_code == 201
    assert first.headers["location"] == f"{sim.url}/repos/{REPO}/statuses/{sha}"
    assert first.json()["context"] == "default" and first.json()["creator"]["login"] == "reviewer"
    post_status(sim, sha, {"state": "success", "context": "CI", "description": "d" * 140})
    post_status(sim, sha, {"state": "failure", "context": "ci", "target_url": "https://ci/1"})
    with http(sim) as c:
        listed = c.get(f"/repos/{REPO}/commits/{sha}/statuses").json()
        combined = c.get(f"/repos/{REPO}/commits/feature/status").json()
    assert [(s["context"], s["state"]) for s in listed] == [
        ("ci", "failure"), ("CI", "success"), ("default", "pending")
    ]  # fmt: skip
    # the context is case-insensitive: "ci" replaced "CI", and a failure wins
    assert combined["state"] == "failure" and combined["total_count"] == 2


def test_a_bad_status_is_a_422_validation_error(sim: GitHubSim) -> None:
    sha = sim.pull(REPO, 1).head_sha
    long = post_status(sim, sha, {"state": "success", "description": "d" * 141})
    assert long.status_code == 422
    assert long.json()["errors"] == [
        {"resource": "Status", "code": "custom", "field": "description", "message": TOO_LONG}
    ]
    assert post_status(sim, sha, {"state": "done"}).status_code == 422
    unknown = post_status(sim, "f" * 40, {"state": "success"})
    assert unknown.status_code == 422 and unknown.json()["message"].startswith("No commit found")
    assert sim.statuses_for(sim.repo(REPO), sha) == []


def test_the_thousandth_status_of_a_sha_and_context_is_the_last(sim: GitHubSim) -> None:
    sha = sim.pull(REPO, 1).head_sha
    repo = sim.repo(REPO)
    sim._statuses.extend(  # the state of 1000 earlier posts, without 1000 requests
        CommitStatus(repo, 6_500_000 + i, sha, "Build", "pending", None, None, T0, T0)
        for i in range(MAX_STATUSES)
    )
    full = post_status(sim, sha, {"state": "success", "context": "build"})
    assert full.status_code == 422 and full.json()["errors"][0]["message"] == TOO_MANY
    assert post_status(sim, sha, {"state": "success", "context": "lint"}).status_code == 201


# == applying a suggestion ===================================================================


def suggestion(sim: GitHubSim, *comments: dict[str, Any]) -> list[int]:
    answer = post_review(sim, {"event": "COMMENT", "body": "s", "comments": list(comments)})
    assert answer.status_code == 200, answer.text
    return [c.id for c in sim.comments(REPO, "review")[-len(comments) :]]


def head_file(sim: GitHubSim, path: str = "a.py") -> list[str]:
    data = sim.git.file_at(sim.repo_path(REPO), sim.pull(REPO, 1).head_sha, path)
    assert data is not None
    return data.decode().splitlines()


def test_commit_suggestion_replaces_the_lines_in_one_commit_on_the_head(sim: GitHubSim) -> None:
    one, many = suggestion(sim, at(3, SUGGEST.format("X3")), at(21, SUGGEST.format("A\nB"),
                           start_line=19))  # fmt: skip
    before = sim.pull(REPO, 1).head_sha
    sha = sim.apply_suggestion(REPO, one, by=("author", 77))
    assert sim.pull(REPO, 1).head_sha == sha == sim.branch_sha(REPO, "feature")
    assert head_file(sim)[:4] == ["l1", "l2", "X3", "l4"]
    [entry] = sim.git.log(sim.repo_path(REPO), f"{before}..{sha}")
    assert entry["parents"] == before and entry["an"] == "author"
    assert entry["ae"] == "77+author@users.noreply.github.com"
    assert "Co-authored-by: reviewer <4242+reviewer@users.noreply.github.com>" in entry["message"]
    # the other suggestion's lines did not move: it still applies, 19..21 become A, B
    sim.apply_suggestion(REPO, many)
    assert head_file(sim)[17:22] == ["l18", "A", "B", "l22", "l23"]
    assert len(head_file(sim)) == 29


def test_an_outdated_suggestion_is_refused_and_an_untouched_one_is_not(sim: GitHubSim) -> None:
    moved, kept = suggestion(sim, at(3, SUGGEST.format("X3")), at(20, SUGGEST.format("X20")))
    sim.push(REPO, 1, {"a.py": HEAD.replace("L3\n", "M3\n")})
    with pytest.raises(SuggestionRefused, match=OUTDATED):
        sim.apply_suggestion(REPO, moved)
    sim.apply_suggestion(REPO, kept)
    assert head_file(sim)[19] == "X20" and head_file(sim)[2] == "M3"
    [gone] = suggestion(sim, at(3, SUGGEST.format("Y3")))
    sim.push(REPO, 1, {"a.py": None})
    with pytest.raises(SuggestionRefused, match=OUTDATED):
        sim.apply_suggestion(REPO, gone)


def test_suggestions_are_refused_on_deleted_lines_closed_pulls_and_without_a_change(
    sim: GitHubSim,
) -> None:
    left, same, plain = suggestion(
        sim, at(3, SUGGEST.format("l3"), side="LEFT"), at(3, SUGGEST.format("L3")), at(4, "nit")
    )
    head = sim.pull(REPO, 1).head_sha
    with pytest.raises(SuggestionRefused, match=DELETED_LINES):
        sim.apply_suggestion(REPO, left)
    with pytest.raises(SuggestionRefused, match=NO_CHANGE):
        sim.apply_suggestion(REPO, same)
    with pytest.raises(GhsimError, match="no ```suggestion block"):
        sim.apply_suggestion(REPO, plain)
    sim.close(REPO, 1)
    with pytest.raises(SuggestionRefused, match=PULL_CLOSED):
        sim.apply_suggestion(REPO, same)
    assert sim.pull(REPO, 1).head_sha == head  # nothing was committed


def test_apply_suggestion_is_an_rpc_method(sim: GitHubSim) -> None:
    [one] = suggestion(sim, at(20, SUGGEST.format("X20")))
    with httpx.Client(base_url=sim.url) as c:
        answer = c.post("/_ghsim/rpc", json={"method": "apply_suggestion", "args": [REPO, one]})
        assert answer.status_code == 200
        assert answer.json()["result"] == sim.pull(REPO, 1).head_sha
        again = c.post("/_ghsim/rpc", json={"method": "apply_suggestion", "args": [REPO, one]})
    # the head moved and line 20 now reads X20: the suggestion is outdated
    assert again.status_code == 400 and OUTDATED in again.json()["error"]


# == kdev's client ===========================================================================


def test_the_client_creates_a_review_and_lists_its_comments(
    sim: GitHubSim, client: GitHubClient
) -> None:
    comments = [LineComment("a.py", "one", 3), LineComment("a.py", "range", 21, start_line=19)]
    review = create_review(client, REPO, 1, event="REQUEST_CHANGES", body="fix", comments=comments)
    assert review["state"] == "CHANGES_REQUESTED"
    listed = list_review_comments(client, REPO, 1, review["id"])
    assert [(c["line"], c["start_line"], c["start_side"]) for c in listed] == [
        (3, None, None), (21, 19, "RIGHT")
    ]  # fmt: skip
    pending = create_review(client, REPO, 1, event=None, comments=[LineComment("a.py", "d", 4)])
    assert pending["state"] == "PENDING"


def test_the_client_surfaces_a_422_and_sends_nothing_github_would_refuse(
    sim: GitHubSim, client: GitHubClient
) -> None:
    with pytest.raises(GitHubHttpError) as caught:
        create_review(client, REPO, 1, event="COMMENT", body="b",
                      comments=[LineComment("a.py", "x", 12)])  # fmt: skip
    assert caught.value.status == 422 and sim.reviews(REPO, 1) == []
    sim.clear_requests()
    refused: list[dict[str, Any]] = [
        {"event": "COMMENT", "body": ""},
        {"event": "APPROVED"},
        {"event": None, "comments": [LineComment("a.py", "x", 3, start_line=3)]},
        {"event": None, "comments": [LineComment("a.py", "x", 3, side="left")]},
        {"event": None, "comments": [LineComment("", "x", 3)]},
        {"event": None, "commit_id": "abc"},
    ]
    for kwargs in refused:
        with pytest.raises(InvalidInput):
            create_review(client, REPO, 1, **kwargs)
    with pytest.raises(InvalidInput):
        create_status(client, REPO, "a" * 40, "success", description="d" * 141)
    with pytest.raises(InvalidInput):
        create_status(client, REPO, "a" * 40, "done")
    with pytest.raises(InvalidInput):
        create_status(client, REPO, "main", "success")
    assert sim.requests == []


def test_the_client_posts_statuses_and_reads_the_combined_status(
    sim: GitHubSim, client: GitHubClient
) -> None:
    sha = sim.pull(REPO, 1).head_sha
    assert combined_status(client, REPO, sha).state == "pending"  # no statuses yet
    made = create_status(client, REPO, sha, "success", context="kdev", description="clean")
    assert made["state"] == "success" and made["context"] == "kdev"
    create_status(client, REPO, sha, "error", context="other", target_url="https://ci/2")
    view = combined_status(client, REPO, "feature")
    assert view.state == "failure" and view.sha == sha and view.total_count == 2
    assert view.contexts == (("other", "error"), ("kdev", "success"))
    with pytest.raises(GitHubHttpError) as caught:
        create_status(client, REPO, "f" * 40, "success")
    assert caught.value.status == 422


# == the smaller refusals ====================================================================


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"event": "COMMENT", "body": 5}, "'properties/body'"),
        ({"event": "COMMENT", "body": "b", "commit_id": 7}, "'properties/commit_id'"),
        ({"event": "COMMENT", "body": "b", "comments": {"path": "a.py"}}, "'properties/comments'"),
        ({"event": "COMMENT", "body": "b", "comments": ["a.py:3"]}, "'items'"),
        ({"event": "COMMENT", "body": "b", "comments": [{"path": "a.py"}]}, '"body"'),
        ({"event": "COMMENT", "body": "b", "comments": [at(True)]}, "'properties/line'"),
        ({"event": "COMMENT", "body": "b", "comments": [at(3, start_line="1")]}, "start_line"),
    ],
)
def test_a_body_the_schema_rejects_is_an_invalid_request(
    sim: GitHubSim, body: dict[str, Any], reason: str
) -> None:
    answer = post_review(sim, body)
    assert answer.status_code == 422
    message = answer.json()["message"]
    assert message.startswith("Invalid request.\n\n") and reason in message
    assert sim.reviews(REPO, 1) == []


def test_reviews_need_a_token_and_unknown_reviews_are_refused(sim: GitHubSim) -> None:
    with httpx.Client(base_url=sim.url) as anonymous:
        answer = anonymous.post(f"/repos/{REPO}/pulls/1/reviews", json={"event": "APPROVE"})
        assert answer.status_code == 401
        status = anonymous.post(f"/repos/{REPO}/statuses/{'a' * 40}", json={"state": "success"})
        assert status.status_code == 401
    with pytest.raises(GhsimError, match="no review 99"):
        sim.review_comments(REPO, 1, 99)
    issue = sim.comment(REPO, 1, SUGGEST.format("x"))
    with pytest.raises(GhsimError, match="not a review comment"):
        sim.apply_suggestion(REPO, issue.id)


@pytest.mark.parametrize("field", ["context", "description", "target_url"])
def test_a_status_field_that_is_not_a_string_is_invalid(sim: GitHubSim, field: str) -> None:
    answer = post_status(sim, sim.pull(REPO, 1).head_sha, {"state": "success", field: 3})
    assert answer.status_code == 422
    assert answer.json()["errors"] == [{"resource": "Status", "code": "invalid", "field": field}]


def test_the_client_refuses_answers_of_the_wrong_shape(
    sim: GitHubSim, client: GitHubClient
) -> None:
    sim.inject_fault("POST", "/reviews$", status=200, body={"state": "COMMENTED"})
    with pytest.raises(GitHubMalformedPayload, match="no id or state"):
        create_review(client, REPO, 1, event="APPROVE")
    sim.inject_fault("GET", "/status$", status=200, body={"state": "success", "statuses": [1]})
    with pytest.raises(GitHubMalformedPayload, match=r"statuses\[0\] is not an object"):
        combined_status(client, REPO, "feature")
    sim.inject_fault("GET", "/comments$", status=200, body=cast(Any, [{"id": 1}, "x"]))
    with pytest.raises(GitHubMalformedPayload, match="an item is not an object"):
        list_review_comments(client, REPO, 1, 5)
    for bad in ("", "a..b", "has space"):
        with pytest.raises(InvalidInput):
            combined_status(client, REPO, bad)
    with pytest.raises(InvalidInput):
        list_review_comments(client, REPO, 1, 0)


def test_the_client_refuses_a_listing_longer_than_it_reads(
    sim: GitHubSim, client: GitHubClient
) -> None:
    many = [at(3, f"c{i}") for i in range(1001)]  # 11 pages of 100; the client reads 10
    review = sim.create_review(REPO, 1, ("reviewer", 4242), event="COMMENT", body="b",
                               comments=many)  # fmt: skip
    with pytest.raises(GitHubMalformedPayload, match="more pages than read"):
        list_review_comments(client, REPO, 1, review.id)


def test_the_new_answers_have_the_keys_and_types_of_githubs_examples(sim: GitHubSim) -> None:
    review = post_review(sim, {"event": "COMMENT", "body": "b", "comments": [at(3)]}).json()
    assert shape_differences(review, fixture("pull-reviews-list.json")[0]) == []
    with http(sim) as c:
        listed = c.get(f"/repos/{REPO}/pulls/1/reviews/{review['id']}/comments").json()
    assert shape_differences(listed[0], fixture("review-comments-list.json")[0]) == []
    status = post_status(sim, sim.pull(REPO, 1).head_sha, {"state": "success"}).json()
    assert shape_differences(status, fixture("status.json")) == []
