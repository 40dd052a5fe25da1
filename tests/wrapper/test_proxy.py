"""The command reviewer's API proxy (wrapper/review/proxy.py) against a real loopback
upstream, over real sockets; and its configuration (reviewer.api_proxy)."""

from __future__ import annotations

import json
import logging
import os
import socket
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.llmkit import CANNED, FakeUpstream, fake_upstream
from wrapper.config import ApiProxy, CommandReviewer, load_config
from wrapper.errors import ConfigError, ReviewerSpawnError
from wrapper.review.proxy import ApiProxyServer
from wrapper.review.reviewer import run_reviewer_text
from wrapper.review.sandbox import Sandbox

KEY = "sk-ant-proxy-test-" + "5d1e9b7c3a2f4e60"


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    with fake_upstream() as state:
        yield state


def proxy_config(upstream: FakeUpstream, **kw: Any) -> ApiProxy:
    return ApiProxy(
        upstream=kw.pop("url", upstream.url),
        key_env="ANTHROPIC_API_KEY",
        base_url_env=["ANTHROPIC_BASE_URL"],
        **kw,
    )


def exchange(address: str | tuple[str, int], raw: bytes) -> bytes:
    """Send ``raw`` and read the answer until the proxy closes the connection."""
    family = socket.AF_UNIX if isinstance(address, str) else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as conn:
        conn.settimeout(10)
        conn.connect(address)
        conn.sendall(raw)
        received = b""
        while chunk := conn.recv(65536):
            received += chunk
    return received


def request(
    port: int, method: str, target: str, headers: dict[str, str], body: bytes = b""
) -> bytes:
    lines = [f"{method} {target} HTTP/1.1", *(f"{k}: {v}" for k, v in headers.items())]
    if body:
        lines.append(f"Content-Length: {len(body)}")
    lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


def test_a_request_goes_upstream_with_the_key_and_without_the_reviewers_auth(
    upstream: FakeUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    body = json.dumps({"model": "m", "messages": []}).encode()
    with caplog.at_level(logging.INFO, logger="kdev.proxy"):
        with ApiProxyServer(proxy_config(upstream), KEY) as proxy:
            headers = {
                "Host": f"127.0.0.1:{proxy.port}",
                "x-api-key": "kdev-proxy",
                "Authorization": "Bearer stolen",
                "anthropic-version": "2023-06-01",
            }
            answer = exchange(
                ("127.0.0.1", proxy.port),
                request(proxy.port, "POST", "/v1/messages?beta=true", headers, body),
            )
            stats = proxy.stats
    assert status_of(answer) == 200 and answer.endswith(json.dumps(CANNED).encode())
    assert b"X-Upstream: fake" in answer
    [seen] = upstream.seen
    assert (seen.method, seen.path, seen.body) == ("POST", "/v1/messages?beta=true", body)
    assert seen.headers["x-api-key"] == KEY and "authorization" not in seen.headers
    assert seen.headers["anthropic-version"] == "2023-06-01"
    assert seen.headers["accept-encoding"] == "identity"  # never gzip the client did not ask for
    assert seen.headers["host"] == f"127.0.0.1:{upstream.port}"
    assert (stats.requests, stats.refused, stats.bytes_in) == (1, 0, len(body))
    assert stats.bytes_out == len(json.dumps(CANNED))
    logged = [r.getMessage() for r in caplog.records]
    assert (
        f"api proxy POST /v1/messages -> 200 (in {len(body)} B, out {stats.bytes_out} B)" in logged
    )
    assert any("1 requests (0 refused)" in line for line in logged)
    assert KEY not in caplog.text


def test_the_authorization_header_carries_a_bearer_key(upstream: FakeUpstream) -> None:
    with ApiProxyServer(proxy_config(upstream, header="Authorization"), KEY) as proxy:
        headers = {"Host": f"localhost:{proxy.port}", "Authorization": "Bearer dummy"}
        answer = exchange(
            ("127.0.0.1", proxy.port), request(proxy.port, "GET", "/v1/models", headers)
        )
    assert status_of(answer) == 200
    [seen] = upstream.seen
    assert seen.headers["authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize(
    ("method", "target", "host", "reason"),
    [
        ("CONNECT", "evil.example:443", "evil.example:443", "CONNECT is not forwarded"),
        ("GET", "http://evil.example/", "evil.example", "only origin-form"),
        ("GET", "http://127.0.0.1:{port}/v1/messages", "127.0.0.1:{port}", "only origin-form"),
        ("GET", "/v1/messages", "evil.example", "Host header names another origin"),
        ("GET", "/v1/messages", "", "Host header names another origin"),
        ("POST", "/other/path", "127.0.0.1:{port}", "outside the upstream prefix /v1"),
    ],
)
def test_refused_requests_never_reach_the_upstream(
    upstream: FakeUpstream,
    caplog: pytest.LogCaptureFixture,
    method: str,
    target: str,
    host: str,
    reason: str,
) -> None:
    config = proxy_config(upstream, url=upstream.url + "/v1")
    with caplog.at_level(logging.INFO, logger="kdev.proxy"):
        with ApiProxyServer(config, KEY) as proxy:
            headers = {"Host": host.format(port=proxy.port)} if host else {}
            raw = request(proxy.port, method, target.format(port=proxy.port), headers)
            answer = exchange(("127.0.0.1", proxy.port), raw)
            refused = proxy.stats.refused
    assert status_of(answer) == 403 and reason.encode() in answer
    assert upstream.seen == [] and refused == 1
    assert any(reason in r.getMessage() and "HTTP 403" in r.getMessage() for r in caplog.records)
    assert KEY not in caplog.text


def test_an_upgrade_and_an_unknown_method_are_refused(upstream: FakeUpstream) -> None:
    with ApiProxyServer(proxy_config(upstream), KEY) as proxy:
        host = {"Host": f"127.0.0.1:{proxy.port}"}
        upgrade = exchange(
            ("127.0.0.1", proxy.port),
            request(proxy.port, "GET", "/v1/x", {**host, "Upgrade": "websocket"}),
        )
        unknown = exchange(("127.0.0.1", proxy.port), request(proxy.port, "BREW", "/v1/x", host))
    assert status_of(upgrade) == 403 and status_of(unknown) == 501
    assert upstream.seen == []


def test_the_request_body_is_capped(upstream: FakeUpstream) -> None:
    config = proxy_config(upstream, max_request_bytes=2048)
    with ApiProxyServer(config, KEY) as proxy:
        host = {"Host": f"127.0.0.1:{proxy.port}"}
        big = exchange(
            ("127.0.0.1", proxy.port), request(proxy.port, "POST", "/v1/m", host, b"y" * 4096)
        )
        chunked = b"".join(
            [
                f"POST /v1/m HTTP/1.1\r\nHost: 127.0.0.1:{proxy.port}\r\n".encode(),
                b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
                b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
            ]
        )
        small = exchange(("127.0.0.1", proxy.port), chunked)
    assert status_of(big) == 413
    assert status_of(small) == 200
    [seen] = upstream.seen
    assert seen.body == b"hello world"


@pytest.mark.parametrize("chunked", [False, True])
def test_the_answer_is_cut_at_its_byte_cap(
    upstream: FakeUpstream, caplog: pytest.LogCaptureFixture, chunked: bool
) -> None:
    upstream.answer_size, upstream.chunked = 50_000, chunked
    config = proxy_config(upstream, max_response_bytes=10_000)
    with caplog.at_level(logging.INFO, logger="kdev.proxy"):
        with ApiProxyServer(config, KEY) as proxy:
            host = {"Host": f"127.0.0.1:{proxy.port}"}
            answer = exchange(("127.0.0.1", proxy.port), request(proxy.port, "GET", "/v1/m", host))
    if chunked:  # cut while it streams: the client sees a broken answer
        assert status_of(answer) == 200 and not answer.endswith(b"0\r\n\r\n")
        assert 0 < answer.count(b"x") <= 10_000
        assert "answer cut at 10000 bytes" in caplog.text
    else:  # the length says it is too long: refused before anything is relayed
        assert status_of(answer) == 502 and b"xxxx" not in answer
        assert "upstream answered 50000 bytes, over 10000" in caplog.text


def test_a_chunked_answer_is_relayed_whole(upstream: FakeUpstream) -> None:
    upstream.answer_size, upstream.chunked = 5_000, True
    with ApiProxyServer(proxy_config(upstream), KEY) as proxy:
        host = {"Host": f"127.0.0.1:{proxy.port}"}
        answer = exchange(("127.0.0.1", proxy.port), request(proxy.port, "GET", "/v1/m", host))
    assert b"Transfer-Encoding: chunked" in answer and answer.endswith(b"0\r\n\r\n")
    assert answer.count(b"x") == 5_000


def test_an_unreachable_upstream_is_a_502(caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    config = ApiProxy(upstream=f"http://127.0.0.1:{port}", key_env="K", base_url_env=["B"])
    with caplog.at_level(logging.INFO, logger="kdev.proxy"):
        with ApiProxyServer(config, KEY) as proxy:
            host = {"Host": f"127.0.0.1:{proxy.port}"}
            answer = exchange(("127.0.0.1", proxy.port), request(proxy.port, "GET", "/m", host))
    assert status_of(answer) == 502
    assert "upstream unreachable: ConnectError" in caplog.text


def test_the_unix_socket_is_private_to_kdevs_uid(tmp_path: Path, upstream: FakeUpstream) -> None:
    path = tmp_path / "api.sock"
    with ApiProxyServer(proxy_config(upstream), KEY, socket_path=path, own_port=38411) as proxy:
        mode = stat.S_IMODE(path.stat().st_mode)
        answer = exchange(
            str(path), request(38411, "GET", "/v1/models", {"Host": "127.0.0.1:38411"})
        )
        assert proxy.base_url == "http://127.0.0.1:38411"
    assert mode == 0o600 and status_of(answer) == 200
    assert upstream.seen[0].headers["x-api-key"] == KEY


REVIEWER = r"""
import json, os, sys, urllib.request
request = urllib.request.Request(
    os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages",
    data=b"{}",
    headers={"x-api-key": os.environ.get("ANTHROPIC_API_KEY", "none")},
)
answer = json.load(urllib.request.urlopen(request, timeout=10))
print(json.dumps(dict(os.environ)))
print(answer["content"][0]["text"])
"""


def test_without_a_sandbox_the_reviewer_calls_through_and_holds_no_key(
    tmp_path: Path, upstream: FakeUpstream
) -> None:
    # Even listed in reviewer_env (extra_env_names), key_env never reaches the reviewer.
    reviewer = CommandReviewer(
        argv=[sys.executable, "-c", REVIEWER], api_proxy=proxy_config(upstream)
    )
    environ = {"PATH": "/usr/bin:/bin", "ANTHROPIC_API_KEY": KEY}
    output = run_reviewer_text(
        reviewer,
        "p",
        tmp_path,
        environ,
        extra_env_names=["ANTHROPIC_API_KEY"],
        sandbox=Sandbox("off"),
    )
    env = json.loads(output.splitlines()[0])
    assert "ANTHROPIC_API_KEY" not in env and KEY not in output
    assert env["ANTHROPIC_BASE_URL"].startswith("http://127.0.0.1:")
    assert output.rstrip().endswith("VERDICT: APPROVE")
    assert [s.headers["x-api-key"] for s in upstream.seen] == [KEY]


def test_a_missing_key_fails_the_leg_before_the_reviewer_starts(
    tmp_path: Path, upstream: FakeUpstream
) -> None:
    marker = tmp_path / "ran"
    reviewer = CommandReviewer(
        argv=["/usr/bin/touch", str(marker)], api_proxy=proxy_config(upstream)
    )
    with pytest.raises(ReviewerSpawnError) as caught:
        run_reviewer_text(reviewer, "p", tmp_path, {"PATH": "/usr/bin"}, sandbox=Sandbox("off"))
    assert caught.value.reason == "reviewer_key_missing" and not marker.exists()


def config_file(tmp_path: Path, proxy: dict[str, Any], **reviewer: Any) -> str:
    path = tmp_path / "kdev.yaml"
    data = {
        "reviewer": {"backend": "command", "argv": ["claude", "-p"], "api_proxy": proxy, **reviewer}
    }
    path.write_text(json.dumps(data))
    return str(path)


GOOD = {
    "upstream": "https://api.anthropic.com",
    "key_env": "ANTHROPIC_API_KEY",
    "base_url_env": ["ANTHROPIC_BASE_URL"],
}


def test_a_good_proxy_config_loads(tmp_path: Path) -> None:
    config = load_config(config_file(tmp_path, {**GOOD, "header": "Authorization"}))
    assert isinstance(config.reviewer, CommandReviewer) and config.reviewer.api_proxy is not None
    assert config.reviewer.api_proxy.header == "authorization"
    assert load_config(config_file(tmp_path, {**GOOD, "upstream": "http://127.0.0.1:8080/v1/"}))


@pytest.mark.parametrize(
    ("proxy", "reviewer", "reason", "says"),
    [
        (
            {**GOOD, "upstream": "http://api.anthropic.com"},
            {},
            "invalid_config",
            "http only to a loopback",
        ),
        ({**GOOD, "upstream": "ftp://x"}, {}, "invalid_config", "not an https:// URL"),
        ({**GOOD, "upstream": "https://u:p@x"}, {}, "invalid_config", "no user, query"),
        ({**GOOD, "upsteam": "https://x"}, {}, "invalid_config", "upsteam"),
        ({**GOOD, "header": "host"}, {}, "invalid_config", "cannot carry the key"),
        ({**GOOD, "key_env": "A-B"}, {}, "invalid_config", "not an environment variable"),
        ({**GOOD, "base_url_env": []}, {}, "invalid_config", "base_url_env"),
        (
            GOOD,
            {"env_passthrough": ["ANTHROPIC_API_KEY"]},
            "proxy_key_exposed",
            "env_passthrough lists ANTHROPIC_API_KEY",
        ),
        (GOOD, {"network": True}, "invalid_config", "the proxy is the only way out"),
    ],
)
def test_a_bad_proxy_config_is_refused_with_its_reason(
    tmp_path: Path, proxy: dict[str, Any], reviewer: dict[str, Any], reason: str, says: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(config_file(tmp_path, proxy, **reviewer))
    assert caught.value.reason == reason and says in caught.value.message
    assert "\n" not in caught.value.message


def test_config_validate_names_the_exposed_key(tmp_path: Path) -> None:
    import subprocess

    path = config_file(tmp_path, GOOD, env_passthrough=["ANTHROPIC_API_KEY"])
    kdev = Path(sys.executable).parent / "kdev"
    result = subprocess.run(
        [str(kdev), "config", "validate"],
        env={**os.environ, "KDEV_CONFIG": path},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert "env_passthrough lists ANTHROPIC_API_KEY" in result.stdout + result.stderr


def test_a_slow_upstream_is_a_504(upstream: FakeUpstream, caplog: pytest.LogCaptureFixture) -> None:
    upstream.delay = 2.0
    with caplog.at_level(logging.INFO, logger="kdev.proxy"):
        with ApiProxyServer(proxy_config(upstream, request_timeout_seconds=0.5), KEY) as proxy:
            headers = {"Host": f"127.0.0.1:{proxy.port}", "Expect": "100-continue"}
            answer = exchange(
                ("127.0.0.1", proxy.port), request(proxy.port, "POST", "/v1/m", headers, b"{}")
            )
    interim, final = answer.split(b"\r\n\r\n", 1)  # http.server's 100 Continue, then ours
    assert status_of(interim) == 100 and status_of(final) == 504
    assert "upstream timed out" in caplog.text
    assert "expect" not in upstream.seen[0].headers  # answered here, not passed on


def test_a_client_that_cannot_be_built_answers_502(
    tmp_path: Path,
    upstream: FakeUpstream,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    garbage = tmp_path / "ca.pem"
    garbage.write_text("not a certificate\n")
    monkeypatch.setenv("SSL_CERT_FILE", str(garbage))  # httpx reads it when it builds the client
    with caplog.at_level(logging.INFO, logger="kdev.proxy"):
        with ApiProxyServer(proxy_config(upstream), KEY) as proxy:
            host = {"Host": f"127.0.0.1:{proxy.port}"}
            answer = exchange(("127.0.0.1", proxy.port), request(proxy.port, "GET", "/v1/m", host))
    assert status_of(answer) == 502 and upstream.seen == []
    assert "cannot build its HTTP client (SSLError)" in caplog.text
