"""engine.github's public surface: the one error table, the generic ``request``, the lazy
package import (issue 16).

Transport failures and odd answers ghsim cannot give come from an ``httpx.MockTransport``
(a plain function from request to response); everything else runs against ghsim.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator

import httpx
import pytest

import engine.github as gh
from engine.config import Settings
from engine.errors import InvalidInput
from engine.github import (
    GitHubAuthError,
    GitHubClient,
    GitHubError,
    GitHubErrorKind,
    GitHubHttpError,
    GitHubMalformedPayload,
    GitHubNetworkError,
    GitHubNotFound,
    GitHubRateLimited,
    GitHubSecondaryRateLimited,
    GitHubServerError,
    RequestPacer,
)
from ghsim import GitHubSim

REPO = "octo/widgets"
TOKEN = "ghp_SurfaceTestSecretToken0123456789abcd"
Handler = Callable[[httpx.Request], httpx.Response]


@pytest.fixture
def sim() -> Iterator[GitHubSim]:
    with GitHubSim() as running:
        running.add_token(TOKEN, ("surface-bot", 5151))
        running.create_repo(REPO, files={"app.py": "print('hi')\n"})
        yield running


def client_for(url: str, transport: httpx.BaseTransport | None = None) -> GitHubClient:
    settings = Settings(github_api_url=url, github_token=TOKEN)
    return GitHubClient(settings, transport=transport, pacer=RequestPacer(600_000))


def mocked(handler: Handler) -> GitHubClient:
    return client_for("https://api.github.test", httpx.MockTransport(handler))


# == the translation table ===============================================================

STATUS_CASES = [
    (401, {}, "Bad credentials", GitHubAuthError),
    (403, {"x-ratelimit-remaining": "0"}, "API rate limit exceeded", GitHubRateLimited),
    (403, {"retry-after": "30"}, "slow down", GitHubSecondaryRateLimited),
    (403, {}, "You have exceeded a secondary rate limit", GitHubSecondaryRateLimited),
    (429, {}, "too many", GitHubSecondaryRateLimited),
    (403, {}, "Resource not accessible by integration", GitHubHttpError),
    (404, {}, "Not Found", GitHubNotFound),
    (422, {}, "Validation Failed", GitHubHttpError),
    (500, {}, "boom", GitHubServerError),
    (503, {}, "unavailable", GitHubServerError),
]


@pytest.mark.parametrize(("status", "headers", "message", "kind"), STATUS_CASES)
def test_every_refusal_status_maps_to_one_error_class(
    status: int, headers: dict[str, str], message: str, kind: type[GitHubErrorKind]
) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, headers=headers, json={"message": message})

    for call in ("GET", "POST"):
        with mocked(answer) as client:
            with pytest.raises(GitHubError) as caught:
                client.request(call, "repos/octo/widgets/things", expect=dict)
        assert type(caught.value) is kind, call
        assert caught.value.reason == kind.REASON and caught.value.status == status
        assert f"GitHub answered {status} for {call} /repos/octo/widgets/things" in str(
            caught.value
        )


@pytest.mark.parametrize(
    ("raised", "kind"),
    [
        (httpx.ConnectError("refused"), GitHubNetworkError),
        (httpx.ReadTimeout("slow"), GitHubNetworkError),
        (httpx.RemoteProtocolError("cut off"), GitHubNetworkError),
        (httpx.DecodingError("bad gzip"), GitHubMalformedPayload),
        (httpx.TooManyRedirects("loop"), GitHubHttpError),
    ],
)
def test_every_transport_error_maps_to_one_error_class_for_get_post_and_graphql(
    raised: httpx.HTTPError, kind: type[GitHubErrorKind]
) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        raise raised

    calls: list[Callable[[GitHubClient], object]] = [
        lambda c: c.request("GET", "repos/octo/widgets", expect=dict),
        lambda c: c.post_rest("repos/octo/widgets/issues/1/comments", {"body": "x"}),
        lambda c: c.graphql("query { viewer { login } }"),
        lambda c: c.list_pulls(REPO),
    ]
    for call in calls:
        with mocked(answer) as client:
            with pytest.raises(GitHubError) as caught:
                call(client)
        # Before the one table, a POST's undecodable body was an http_error.
        assert type(caught.value) is kind and caught.value.reason == kind.REASON
        assert type(raised).__name__ in caught.value.message or "undecodable" in str(caught.value)


def test_graphql_error_types_map_through_the_same_table() -> None:
    def answer_with(kind: str | None) -> Handler:
        def answer(request: httpx.Request) -> httpx.Response:
            return httpx.Response(200, json={"errors": [{"type": kind, "message": "no"}]})

        return answer

    expected = {"NOT_FOUND": GitHubNotFound, "RATE_LIMITED": GitHubRateLimited}
    for kind in ("NOT_FOUND", "RATE_LIMITED", "FORBIDDEN", None):
        with mocked(answer_with(kind)) as client:
            with pytest.raises(GitHubError) as caught:
                client.graphql("query { x }", what="the x of y")
        assert type(caught.value) is expected.get(str(kind), GitHubMalformedPayload)
        assert caught.value.message == "GitHub refused the x of y: no"


def test_every_reason_code_has_exactly_one_class() -> None:
    import engine.github.appauth  # noqa: F401  (its App refusals are kinds too: D101)

    reasons = [kind.REASON for kind in GitHubErrorKind.__subclasses__()]
    # Eight kinds of answer, five App refusals: the same whichever tests ran first.
    assert sorted(reasons) == sorted(set(reasons)) and len(reasons) == 13
    for kind in GitHubErrorKind.__subclasses__():
        made = kind("said", status=418)
        assert isinstance(made, GitHubError) and made.reason == kind.REASON
        assert repr(made) == f"{kind.__name__}('said', {kind.REASON!r}, status=418)"


def test_client_error_redacts_the_token_and_keeps_the_class() -> None:
    with mocked(lambda request: httpx.Response(200, json={})) as client:
        made = client.error(GitHubNotFound, f"no comment for {TOKEN}", 200)
    assert type(made) is GitHubNotFound and TOKEN not in str(made) and "***" in made.message


# == request =============================================================================


def test_request_reads_and_posts_json_against_ghsim(sim: GitHubSim) -> None:
    pr = sim.open_pr(REPO, "feature", {"a.py": "x = 1\n"})
    with client_for(sim.url) as client:
        pull = client.request("GET", f"repos/{REPO}/pulls/{pr.number}", expect=dict)
        assert pull["number"] == pr.number and pull["head"]["sha"] == pr.head_sha
        created = client.request(
            "POST", f"repos/{REPO}/issues/{pr.number}/comments", body={"body": "hello"}, expect=dict
        )
        assert created["body"] == "hello"
        with pytest.raises(GitHubMalformedPayload) as caught:
            client.request("GET", f"repos/{REPO}/pulls/{pr.number}", expect=list)
        assert "GET /repos/octo/widgets/pulls/1: expected a JSON array, got object" in str(
            caught.value
        )


def test_a_post_with_a_body_of_the_wrong_shape_names_the_post() -> None:
    with mocked(lambda request: httpx.Response(201, json=[1])) as client:
        with pytest.raises(GitHubMalformedPayload) as caught:
            client.post_rest("repos/octo/widgets/issues/1/comments", {"body": "x"})
    # The message named GET before the one send path; the request was a POST.
    assert caught.value.message.startswith("POST /repos/octo/widgets/issues/1/comments:")


@pytest.mark.parametrize(
    ("method", "path", "reason"),
    [
        ("DELETE", "repos/octo/widgets", "invalid_method"),
        ("GET", "/repos/octo/widgets", "invalid_path"),
        ("GET", "", "invalid_path"),
        ("GET", "repos/octo/../secrets", "invalid_path"),
        ("POST", "repos/octo/widgets/./x", "invalid_path"),
    ],
)
def test_request_refuses_bad_arguments_before_sending(method: str, path: str, reason: str) -> None:
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json={})

    with mocked(answer) as client:
        with pytest.raises(InvalidInput) as caught:
            client.request(method, path, expect=dict)
    assert caught.value.reason == reason and not sent


def test_a_three_dot_range_is_a_path_segment_not_a_dot_segment() -> None:
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.raw_path.decode())
        return httpx.Response(200, json={"ok": True})

    with mocked(answer) as client:
        assert client.request("GET", "repos/octo/widgets/compare/main...f%23x", expect=dict)
    assert seen == ["/repos/octo/widgets/compare/main...f%23x"]


def test_the_client_refuses_a_repository_name_the_configs_refuse() -> None:
    with mocked(lambda request: pytest.fail("no request may be sent")) as client:
        for bad in ("-octo/widgets", "octo_corp/widgets", "octo/..", "octo", "a" * 40 + "/x"):
            with pytest.raises(InvalidInput) as caught:
                client.list_pulls(bad)
            assert caught.value.reason == "invalid_repo"
            assert caught.value.message == gh.repo_problem(bad)


# == the package import ==================================================================


def _modules_after(code: str) -> list[str]:
    probe = (
        f"import sys\n{code}\n"
        "import json\nprint(json.dumps(sorted(m for m in sys.modules"
        " if m.split('.')[0] in ('httpx', 'sqlalchemy', 'pydantic') or m.startswith('engine.'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    loaded: list[str] = json.loads(out)
    return loaded


def test_importing_the_package_loads_only_the_pure_modules() -> None:
    loaded = _modules_after("import engine.github")
    assert {"engine.github.types", "engine.github.parse", "engine.github.pacing"} <= set(loaded)
    heavy = {"httpx", "sqlalchemy", "pydantic", "engine.github.client", "engine.github.etag"}
    assert not heavy & set(loaded), loaded


def test_the_client_loads_on_first_use_without_sqlalchemy() -> None:
    loaded = _modules_after("from engine.github import GitHubClient")
    assert {"httpx", "engine.github.client", "engine.github.session"} <= set(loaded)
    assert "sqlalchemy" not in loaded and "engine.github.etag" not in loaded
    assert "sqlalchemy" in _modules_after("from engine.github import SqlEtagCache")


def test_the_planning_code_imports_the_types_not_the_client() -> None:
    loaded = _modules_after("import engine.poll.plan")
    assert "engine.github.types" in loaded
    assert not {"httpx", "engine.github.client", "engine.github.session"} & set(loaded), loaded


def test_every_public_name_resolves() -> None:
    for name in gh.__all__:
        assert getattr(gh, name) is not None, name
    with pytest.raises(AttributeError):
        _ = gh.parse_pull  # deleted: it had no callers (issue 16)


def test_a_patch_sends_its_body_and_must_answer_200() -> None:
    seen: list[tuple[str, bytes]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append((request.method, request.content))
        return httpx.Response(200 if len(seen) == 1 else 201, json={"id": 1})

    with mocked(answer) as client:
        path = "repos/octo/widgets/check-runs/1"
        assert client.request("PATCH", path, body={"status": "in_progress"}, expect=dict)
        with pytest.raises(GitHubHttpError):  # a PATCH answers 200, nothing else
            client.request("PATCH", path, body={}, expect=dict)
    assert seen[0] == ("PATCH", b'{"status":"in_progress"}')
