"""The GitHub client against the simulated GitHub over real HTTP on loopback.

A few tests use an ``httpx.MockTransport`` (a plain function from request to response)
for answers ghsim cannot give: a token echoed in an error body, a next link to another
host, items missing fields.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine

from engine.config import Settings
from engine.github import (
    GitHubClient,
    GitHubError,
    MemoryEtagCache,
    RequestPacer,
    SqlEtagCache,
    pacer_for,
    redact,
    token_identity,
)
from ghsim import GitHubSim
from wrapper.gh import get_pull

REPO = "octo/widgets"
TOKEN = "ghp_ClientTestSecretToken0123456789abcdef"
OTHER_TOKEN = "ghp_SecondClientTestToken9876543210fedcba"
T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)

Connect = Callable[..., GitHubClient]


class FakeTime:
    """Wall and monotonic time that only ``sleep``/``advance`` move; sleeps are recorded."""

    def __init__(self, start: datetime = T0) -> None:
        self.wall = start
        self.mono = 1000.0
        self.slept: list[float] = []
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self.wall

    def monotonic(self) -> float:
        with self._lock:
            return self.mono

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.advance(seconds)

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.wall += timedelta(seconds=seconds)
            self.mono += seconds

    def pacer(self, rate_per_minute: float = 600, **kwargs: Any) -> RequestPacer:
        return RequestPacer(
            rate_per_minute,
            clock=self.now,
            monotonic=self.monotonic,
            sleep=self.sleep,
            **kwargs,
        )


@pytest.fixture
def sim() -> Iterator[GitHubSim]:
    with GitHubSim() as sim:
        sim.set_time(T0)
        sim.add_token(TOKEN, ("li-bot", 4242))
        sim.add_token(OTHER_TOKEN, ("other-bot", 4343))
        sim.create_repo(REPO)
        yield sim


@pytest.fixture(scope="module")
def crowded() -> Iterator[GitHubSim]:
    """250 open pulls (read-only: shared by the pagination tests)."""
    with GitHubSim() as sim:
        sim.set_time(T0)
        sim.add_token(TOKEN, ("li-bot", 4242))
        sim.create_repo(REPO)
        sim.commit_to_base(REPO, {"work.txt": "work\n"}, branch="feature")
        for _ in range(250):
            sim.open_pr(REPO, "feature")
        yield sim


@pytest.fixture
def connect() -> Iterator[Connect]:
    """Build clients on a simulator (or a mock transport); each gets a private pacer."""
    made: list[GitHubClient] = []

    def make(
        sim: GitHubSim | None = None, *, token: str | None = TOKEN, **kwargs: Any
    ) -> GitHubClient:
        url = sim.url if sim is not None else "https://api.github.test"
        # A private, fast pacer: the process-wide one would carry deferrals across tests.
        kwargs.setdefault("pacer", RequestPacer(rate_per_minute=600_000))
        client = GitHubClient(Settings(github_api_url=url, github_token=token), **kwargs)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


def mock(handler: Callable[[httpx.Request], httpx.Response]) -> httpx.MockTransport:
    return httpx.MockTransport(handler)


def pulls_requests(sim: GitHubSim) -> list[Any]:
    return sim.requests_to(r"/pulls$", "GET")


# == conditional requests ================================================================


def test_a_second_listing_is_a_free_304_that_hands_back_the_cached_pulls(
    sim: GitHubSim, connect: Connect
) -> None:
    sim.open_pr(REPO, "one")
    sim.open_pr(REPO, "two")
    client = connect(sim, cache=MemoryEtagCache())
    first = client.list_pulls(REPO)
    remaining = sim.bucket(TOKEN).remaining

    second = client.list_pulls(REPO)

    assert not first.unchanged and second.unchanged
    assert [p.number for p in second.pulls] == [p.number for p in first.pulls] == [2, 1]
    assert second.pulls == first.pulls and second.complete
    assert sim.bucket(TOKEN).remaining == remaining
    last = pulls_requests(sim)[-1]
    assert last.status == 304 and not last.counted
    assert last.headers["if-none-match"].startswith('"')


def test_a_changed_listing_is_a_full_answer_with_the_new_head(
    sim: GitHubSim, connect: Connect
) -> None:
    pr = sim.open_pr(REPO, "one")
    client = connect(sim, cache=MemoryEtagCache())
    client.list_pulls(REPO)
    sim.advance(30)
    new_sha = sim.push(REPO, pr.number, {"more.txt": "more\n"})

    listing = client.list_pulls(REPO)

    assert not listing.unchanged
    assert listing.pulls[0].head_sha == new_sha
    assert listing.pulls[0].updated_at == T0 + timedelta(seconds=30)


def test_the_etag_survives_a_new_client_on_the_same_database(
    db: Engine, sim: GitHubSim, connect: Connect
) -> None:
    sim.open_pr(REPO, "one")
    first = connect(sim, cache=SqlEtagCache(db)).list_pulls(REPO)

    again = connect(sim, cache=SqlEtagCache(db)).list_pulls(REPO)

    assert again.unchanged and again.pulls == first.pulls
    assert pulls_requests(sim)[-1].status == 304


def test_a_changed_listing_replaces_the_stored_entry(
    db: Engine, sim: GitHubSim, connect: Connect
) -> None:
    pr = sim.open_pr(REPO, "one")
    cache = SqlEtagCache(db)
    client = connect(sim, cache=cache)
    client.list_pulls(REPO)
    sim.advance(5)
    new_sha = sim.push(REPO, pr.number, {"more.txt": "more\n"})
    client.list_pulls(REPO)

    replayed = connect(sim, cache=SqlEtagCache(db)).list_pulls(REPO)

    assert replayed.unchanged and replayed.pulls[0].head_sha == new_sha
    assert len(cache.keys()) == 1


def test_dropping_the_pulls_etag_forces_a_full_answer_and_spares_other_repos(
    db: Engine, sim: GitHubSim, connect: Connect
) -> None:
    sim.create_repo("octo/gad_gets")  # "_" must not act as a LIKE wildcard
    sim.open_pr(REPO, "one")
    client = connect(sim, cache=SqlEtagCache(db))
    client.list_pulls(REPO)
    client.list_pulls("octo/gad_gets")

    assert client.forget_pulls("octo/gad_gets") == 1
    assert client.forget_pulls(REPO) == 1
    assert client.forget_pulls(REPO) == 0

    listing = client.list_pulls(REPO)
    assert not listing.unchanged and [p.number for p in listing.pulls] == [1]
    assert pulls_requests(sim)[-1].status == 200
    assert "if-none-match" not in pulls_requests(sim)[-1].headers


def test_two_tokens_never_share_a_cache_entry(sim: GitHubSim, connect: Connect) -> None:
    sim.open_pr(REPO, "one")
    cache = MemoryEtagCache()
    connect(sim, cache=cache).list_pulls(REPO)

    other = connect(sim, token=OTHER_TOKEN, cache=cache).list_pulls(REPO)

    assert not other.unchanged
    assert "if-none-match" not in pulls_requests(sim)[-1].headers


def test_an_unconditional_listing_sends_no_etag_but_refreshes_the_cache(
    sim: GitHubSim, connect: Connect
) -> None:
    sim.open_pr(REPO, "one")
    client = connect(sim, cache=MemoryEtagCache())
    client.list_pulls(REPO)

    assert not client.list_pulls(REPO, conditional=False).unchanged
    assert "if-none-match" not in pulls_requests(sim)[-1].headers
    assert client.list_pulls(REPO).unchanged


# == pagination ==========================================================================


def test_link_pagination_reads_250_pulls_in_three_pages(
    crowded: GitHubSim, connect: Connect
) -> None:
    crowded.clear_requests()
    listing = connect(crowded, cache=MemoryEtagCache()).list_pulls(REPO, per_page=100)

    assert listing.complete and not listing.skipped
    assert len(listing.pulls) == 250
    assert sorted(p.number for p in listing.pulls) == list(range(1, 251))
    pages = [r.query.get("page") for r in pulls_requests(crowded)]
    assert pages == [None, "2", "3"]
    assert {r.query["per_page"] for r in pulls_requests(crowded)} == {"100"}
    assert listing.rate is not None and listing.rate.remaining == crowded.bucket(TOKEN).remaining


def test_an_incomplete_listing_stores_no_etag_so_it_is_read_in_full_again(
    crowded: GitHubSim, connect: Connect
) -> None:
    cache = MemoryEtagCache()
    client = connect(crowded, cache=cache)
    listing = client.list_pulls(REPO, per_page=100, max_pages=2)

    assert len(listing.pulls) == 200 and not listing.complete

    again = client.list_pulls(REPO, per_page=100, max_pages=2)
    # No 304 can stand for a listing that was never read to its end.
    assert not again.unchanged and len(again.pulls) == 200 and not again.complete
    complete = client.list_pulls(REPO, per_page=100, max_pages=3)
    assert complete.complete
    cached = client.list_pulls(REPO, per_page=100, max_pages=3)
    assert cached.unchanged and cached.complete


def test_stopping_at_the_cursor_counts_as_complete(crowded: GitHubSim, connect: Connect) -> None:
    client = connect(crowded, cache=MemoryEtagCache())
    newest = client.list_pulls(REPO, per_page=100, max_pages=1).pulls
    cursor = newest[0].updated_at + timedelta(seconds=1)  # everything is older
    listing = client.list_pulls(REPO, per_page=100, max_pages=2, stop_before=cursor)
    assert listing.complete and len(listing.pulls) == 100  # page 1 reached the cursor


class FailingPageTwo(httpx.BaseTransport):
    """Real HTTP, except that the first request for page 2 breaks off."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.failed = False

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.params.get("page") == "2" and not self.failed:
            self.failed = True
            raise httpx.ReadError("connection reset", request=request)
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


def test_a_listing_that_fails_on_a_later_page_is_fetched_in_full_next_time(
    sim: GitHubSim, connect: Connect
) -> None:
    for branch in ("one", "two", "three"):
        sim.open_pr(REPO, branch)
    client = connect(sim, cache=MemoryEtagCache(), transport=FailingPageTwo())

    with pytest.raises(GitHubError) as caught:
        client.list_pulls(REPO, per_page=1)
    assert caught.value.reason == "network_error"

    # No ETag was kept for the half-read listing, so it cannot hide behind a 304.
    listing = client.list_pulls(REPO, per_page=1)
    assert not listing.unchanged and len(listing.pulls) == 3


def test_a_next_link_to_another_host_is_refused_before_the_token_goes_there() -> None:
    asked: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.host)
        link = '<https://elsewhere.example/repos/octo/widgets/pulls?page=2>; rel="next"'
        return httpx.Response(200, json=[], headers={"link": link})

    client = GitHubClient(
        Settings(github_api_url="https://api.github.test", github_token=TOKEN),
        transport=mock(handler),
        pacer=RequestPacer(600_000),
    )
    with client, pytest.raises(GitHubError) as caught:
        client.list_pulls(REPO)
    assert caught.value.reason == "malformed_payload"
    assert asked == ["api.github.test"]


# == parsing =============================================================================


def test_a_ghost_author_is_skipped_with_a_warning_and_the_rest_of_the_page_is_kept(
    sim: GitHubSim, connect: Connect, caplog: pytest.LogCaptureFixture
) -> None:
    for branch in ("one", "two", "three"):
        sim.open_pr(REPO, branch)
    sim.set_pr_user_null(REPO, 2)
    client = connect(sim)

    with caplog.at_level(logging.WARNING, logger="engine.github.client"):
        listing = client.list_pulls(REPO)

    assert [p.number for p in listing.pulls] == [3, 1]
    assert [(s.number, s.reason) for s in listing.skipped] == [(2, "ghost_user")]
    assert "#2" in caplog.text and "ghost_user" in caplog.text
    with pytest.raises(GitHubError) as caught:
        get_pull(client, REPO, 2)
    assert caught.value.reason == "malformed_payload"


def test_a_deleted_fork_is_parsed_with_no_head_repository(sim: GitHubSim, connect: Connect) -> None:
    sim.open_pr(REPO, "fork-work", from_fork="forker/widgets")
    sim.open_pr(REPO, "gone-work", from_fork="leaver/widgets")
    sim.set_head_repo_null(REPO, 2)
    client = connect(sim)

    listing = client.list_pulls(REPO)
    by_number = {p.number: p for p in listing.pulls}

    assert not listing.skipped
    fork, deleted = by_number[1], by_number[2]
    assert fork.head_repo_full_name == "forker/widgets" and fork.head_repo_fork is True
    assert fork.head_repo_id is not None and fork.head_repo_id != fork.base_repo_id
    assert deleted.head_repo_full_name is None
    assert deleted.head_repo_id is None and deleted.head_repo_fork is None
    assert deleted.base_repo_full_name == REPO and deleted.head_ref == "gone-work"
    assert get_pull(client, REPO, 2).head_repo_full_name is None


def test_get_pull_returns_typed_facts_with_aware_utc_timestamps(
    sim: GitHubSim, connect: Connect
) -> None:
    opened = sim.open_pr(REPO, "feature", title="Add a widget", author=("alice", 77))
    sim.advance(60)
    sim.merge(REPO, opened.number)

    pull = get_pull(connect(sim), REPO, opened.number)

    assert (pull.number, pull.title, pull.state, pull.draft) == (1, "Add a widget", "closed", False)
    assert (pull.user_login, pull.user_id, pull.user_type) == ("alice", 77, "User")
    assert pull.created_at == T0 and pull.created_at.tzinfo is not None
    assert pull.updated_at == pull.merged_at == T0 + timedelta(seconds=60)
    assert pull.head_sha == opened.head_sha and pull.head_ref == "feature"
    assert pull.head_repo_full_name == REPO and pull.head_repo_fork is False
    assert pull.base_ref == "main" and pull.base_repo_full_name == REPO
    assert pull.merge_commit_sha == sim.pull(REPO, 1).merge_commit_sha
    assert pull.html_url.endswith("/octo/widgets/pull/1")


def test_items_missing_or_mistyping_a_required_field_are_skipped_as_malformed(
    sim: GitHubSim, connect: Connect
) -> None:
    sim.open_pr(REPO, "good")
    good = httpx.get(
        f"{sim.url}/repos/{REPO}/pulls", headers={"Authorization": f"Bearer {TOKEN}"}
    ).json()[0]
    no_sha = json.loads(json.dumps(good))
    del no_sha["head"]["sha"]
    no_sha["number"] = 2
    bool_id = json.loads(json.dumps(good))
    bool_id["number"], bool_id["user"]["id"] = 3, True
    naive = json.loads(json.dumps(good))
    naive["number"], naive["created_at"] = 4, "2024-05-01T12:00:00"
    page = [good, no_sha, bool_id, naive, "not an object"]

    client = connect(transport=mock(lambda request: httpx.Response(200, json=page)))
    listing = client.list_pulls(REPO)

    assert [p.number for p in listing.pulls] == [1]
    assert [(s.number, s.reason) for s in listing.skipped] == [
        (2, "malformed_payload"),
        (3, "malformed_payload"),
        (4, "malformed_payload"),
        (None, "malformed_payload"),
    ]
    assert "head.sha is missing" in listing.skipped[0].detail


def test_a_listing_that_is_not_a_json_array_is_malformed(connect: Connect) -> None:
    client = connect(transport=mock(lambda r: httpx.Response(200, json={"message": "hi"})))
    with pytest.raises(GitHubError) as caught:
        client.list_pulls(REPO)
    assert caught.value.reason == "malformed_payload"


def test_rate_headers_become_rate_info(sim: GitHubSim, connect: Connect) -> None:
    sim.set_rate_limit(TOKEN, limit=100, remaining=50, reset_at=T0 + timedelta(minutes=30))

    rate = connect(sim).list_pulls(REPO).rate

    assert rate is not None
    assert (rate.limit, rate.remaining, rate.used, rate.resource) == (100, 49, 51, "core")
    assert rate.reset == T0 + timedelta(minutes=30)


# == errors ==============================================================================


def test_a_bad_token_is_an_auth_error_and_the_token_appears_nowhere(
    sim: GitHubSim, connect: Connect, caplog: pytest.LogCaptureFixture
) -> None:
    bad = "ghp_RevokedTokenThatMustNeverLeak000000000"
    caplog.set_level(logging.DEBUG)  # httpx and httpcore too
    client = connect(sim, token=bad)

    with pytest.raises(GitHubError) as caught:
        client.list_pulls(REPO)

    error = caught.value
    assert error.reason == "auth_error" and error.status == 401 and error.exit_code == 1
    assert "Bad credentials" in str(error)
    for text in (str(error), repr(error), error.message, caplog.text, repr(client)):
        assert bad not in text
    good = connect(sim)
    listing = good.list_pulls(REPO)
    for text in (caplog.text, repr(good), repr(listing)):
        assert TOKEN not in text


def test_a_token_echoed_back_in_an_error_body_is_redacted(connect: Connect) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(422, json={"message": f"token {TOKEN} is not allowed here"})

    with pytest.raises(GitHubError) as caught:
        connect(transport=mock(handler)).list_pulls(REPO)

    assert caught.value.reason == "http_error" and caught.value.status == 422
    assert TOKEN not in str(caught.value) and "token *** is not allowed" in str(caught.value)


def test_redact_replaces_every_occurrence_and_ignores_a_missing_token() -> None:
    assert redact("a SECRET b SECRET", "SECRET") == "a *** b ***"
    assert redact("nothing to hide", None) == "nothing to hide"
    assert redact("nothing to hide", "") == "nothing to hide"


def test_the_client_sends_githubs_headers_with_the_token_as_bearer(
    sim: GitHubSim, connect: Connect
) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=[])

    connect(transport=mock(handler)).list_pulls(REPO, base="main")

    headers = seen[0].headers
    assert headers["authorization"] == f"Bearer {TOKEN}"
    assert headers["accept"] == "application/vnd.github+json"
    assert headers["x-github-api-version"] == "2022-11-28"
    assert headers["user-agent"].startswith("li/")
    assert dict(seen[0].url.params) == {
        "state": "open",
        "sort": "updated",
        "direction": "desc",
        "per_page": "100",
        "base": "main",
    }
    connect(sim).list_pulls(REPO)
    assert pulls_requests(sim)[-1].user == "li-bot"


def test_an_unknown_pull_is_not_found(sim: GitHubSim, connect: Connect) -> None:
    with pytest.raises(GitHubError) as caught:
        get_pull(connect(sim), REPO, 99)
    assert caught.value.reason == "not_found" and caught.value.status == 404


def test_an_exhausted_primary_limit_is_rate_limited_and_the_pacer_holds_later_requests(
    sim: GitHubSim, connect: Connect
) -> None:
    time = FakeTime()
    reset = T0 + timedelta(minutes=10)
    sim.set_rate_limit(TOKEN, remaining=0, reset_at=reset)
    client = connect(sim, pacer=time.pacer(), clock=time.now)

    with pytest.raises(GitHubError) as caught:
        client.list_pulls(REPO)
    assert caught.value.reason == "rate_limited" and caught.value.status == 403
    assert caught.value.reset_at == reset
    assert client.pacer.deferred_until == reset

    # Ten minutes away: refused at once, without asking GitHub.
    asked = len(sim.requests)
    with pytest.raises(GitHubError) as refused:
        client.list_pulls(REPO)
    assert refused.value.reason == "rate_limited" and refused.value.reset_at == reset
    assert refused.value.status is None
    assert len(sim.requests) == asked and time.slept == []

    # Three seconds away (under max_wait): the pacer waits, then the request goes.
    time.advance(597)
    sim.set_time(reset)
    listing = client.list_pulls(REPO)
    assert time.slept == [pytest.approx(3.0)]
    assert listing.rate is not None and listing.rate.remaining > 0


@pytest.mark.parametrize(
    ("retry_after", "status", "expected"), [(42, 403, 42.0), (None, 429, 60.0)]
)
def test_a_secondary_limit_is_secondary_rate_limited_with_its_retry_after(
    sim: GitHubSim, connect: Connect, retry_after: int | None, status: int, expected: float
) -> None:
    time = FakeTime()
    sim.inject_secondary_limit(retry_after=retry_after, status=status)
    client = connect(sim, pacer=time.pacer(), clock=time.now)

    with pytest.raises(GitHubError) as caught:
        client.list_pulls(REPO)
    assert caught.value.reason == "secondary_rate_limited"
    assert caught.value.status == status and caught.value.retry_after == expected
    assert client.pacer.deferred_until == T0 + timedelta(seconds=expected)

    with pytest.raises(GitHubError) as refused:
        client.list_pulls(REPO)
    assert refused.value.reason == "secondary_rate_limited"

    time.advance(expected - 2)
    assert not client.list_pulls(REPO).unchanged
    assert time.slept == [pytest.approx(2.0)]


@pytest.mark.parametrize("status", [500, 502])
def test_a_5xx_answer_is_a_server_error(sim: GitHubSim, connect: Connect, status: int) -> None:
    sim.inject_fault("GET", r"/pulls$", status=status)
    with pytest.raises(GitHubError) as caught:
        connect(sim).list_pulls(REPO)
    assert caught.value.reason == "server_error" and caught.value.status == status


def test_an_answer_slower_than_the_read_timeout_is_a_network_error(
    sim: GitHubSim, connect: Connect
) -> None:
    sim.inject_fault("GET", r"/pulls$", delay=1.0)
    client = connect(sim, connect_timeout=0.5, read_timeout=0.2)

    with pytest.raises(GitHubError) as caught:
        client.list_pulls(REPO)

    assert caught.value.reason == "network_error" and caught.value.status is None
    assert "ReadTimeout" in caught.value.message


def test_a_body_cut_off_mid_way_is_a_network_error(sim: GitHubSim, connect: Connect) -> None:
    sim.open_pr(REPO, "feature")
    sim.inject_fault("GET", r"/pulls/1$", truncate=True)
    client = connect(sim)

    # network_error, not malformed_payload: the connection closed before the announced
    # Content-Length arrived (httpx raises RemoteProtocolError while reading), so nothing
    # is wrong with what GitHub meant to send; the transfer broke and a retry will do.
    with pytest.raises(GitHubError) as caught:
        get_pull(client, REPO, 1)

    assert caught.value.reason == "network_error"
    assert "RemoteProtocolError" in caught.value.message
    assert get_pull(client, REPO, 1).number == 1


def test_a_complete_body_that_is_not_json_is_malformed_and_not_cached(
    sim: GitHubSim, connect: Connect
) -> None:
    sim.open_pr(REPO, "feature")
    sim.inject_fault("GET", r"/pulls$", malformed=True)
    client = connect(sim, cache=MemoryEtagCache())

    with pytest.raises(GitHubError) as caught:
        client.list_pulls(REPO)

    assert caught.value.reason == "malformed_payload" and caught.value.status == 200
    assert not client.list_pulls(REPO).unchanged


# == pacing ==============================================================================


def test_the_pacer_spaces_requests_a_tenth_of_a_second_apart_at_600_per_minute() -> None:
    time = FakeTime()
    pacer = time.pacer(600)
    granted = []
    for _ in range(5):
        pacer.acquire()
        granted.append(time.monotonic())

    gaps = [later - earlier for earlier, later in zip(granted, granted[1:], strict=False)]
    assert all(gap >= 0.1 - 1e-9 for gap in gaps)
    assert time.slept[0] == pytest.approx(0.1) and len(time.slept) == 4


def test_concurrent_callers_of_one_pacer_get_distinct_slots() -> None:
    # The fake monotonic clock stands still and sleeps do not move it, so each caller's
    # wait is exactly its reserved slot: twenty threads must get twenty distinct ones.
    waits: list[float] = []
    pacer = RequestPacer(600, monotonic=lambda: 0.0, sleep=lambda seconds: None)
    lock = threading.Lock()

    def take() -> None:
        wait = pacer.acquire()
        with lock:
            waits.append(wait)

    threads = [threading.Thread(target=take) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(round(w, 6) for w in waits) == [round(i * 0.1, 6) for i in range(20)]


def test_the_process_shares_one_pacer_per_token(connect: Connect) -> None:
    token = "ghp_RegistryTestTokenNotUsedOnTheWire0001"
    first = connect(token=token, pacer=None)
    second = connect(token=token, pacer=None)
    assert first.pacer is second.pacer is pacer_for(token_identity(token))
    assert pacer_for(token_identity(OTHER_TOKEN + "x")) is not first.pacer
    assert token not in token_identity(token)


# == settings ============================================================================


def test_the_token_comes_from_github_token_then_gh_token(sim: GitHubSim, connect: Connect) -> None:
    assert Settings.from_env({"GITHUB_TOKEN": "first", "GH_TOKEN": "second"}).github_token == (
        "first"
    )
    assert Settings.from_env({"GH_TOKEN": "second"}).github_token == "second"
    assert Settings.from_env({}).github_token is None

    settings = Settings.from_env({"GH_TOKEN": TOKEN, "GITHUB_API_URL": sim.url + "/"})
    client = GitHubClient(settings, pacer=RequestPacer(600_000))
    with client:
        client.list_pulls(REPO)
    assert pulls_requests(sim)[-1].user == "li-bot"
    assert TOKEN not in repr(settings)
