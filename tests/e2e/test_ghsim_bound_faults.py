"""ghsim's answer-bound faults (issue 24) are what they say: a bomb that inflates to its
size, a body of its size, a drip, a redirect with the query kept."""

from __future__ import annotations

import socket
import time
import zlib
from collections.abc import Iterator

import httpx
import pytest

from ghsim import GhsimError, GitHubSim
from ghsim.faults import gzip_bomb

REPO = "octo/widgets"
MIB = 1 << 20


@pytest.fixture
def sim() -> Iterator[GitHubSim]:
    with GitHubSim(anonymous=True) as made:
        made.create_repo(REPO)
        made.open_pr(REPO, "feature", {"a.txt": "hi\n"})
        yield made


def test_the_bomb_is_a_thousandth_of_what_it_inflates_to() -> None:
    bomb = gzip_bomb(8 * MIB)
    assert len(bomb) < 8 * MIB // 500
    inflated = zlib.decompress(bomb, 16 + zlib.MAX_WBITS)  # checks the CRC and size too
    assert inflated == b" " * (8 * MIB)
    assert gzip_bomb(8 * MIB) is bomb  # built once a size


def test_a_bomb_is_served_gzip_encoded(sim: GitHubSim) -> None:
    sim.inject_body_fault("gzip_bomb", "GET", r"/pulls$", size=2 * MIB)
    response = httpx.get(f"{sim.url}/repos/{REPO}/pulls")
    assert response.headers["content-encoding"] == "gzip"
    assert len(response.content) == 2 * MIB and response.content.strip() == b""


def test_a_huge_body_is_sent_whole_under_its_length(sim: GitHubSim) -> None:
    sim.inject_body_fault("huge", "GET", r"/pulls$", size=3 * MIB + 5)
    response = httpx.get(f"{sim.url}/repos/{REPO}/pulls")
    assert int(response.headers["content-length"]) == len(response.content) == 3 * MIB + 5


def test_a_drip_sends_the_real_answer_a_byte_at_a_time(sim: GitHubSim) -> None:
    real = httpx.get(f"{sim.url}/repos/{REPO}/pulls").content
    sim.inject_body_fault("drip", "GET", r"/pulls$", drip_seconds=0.2)
    with socket.create_connection((sim.host, sim.port), timeout=5) as conn:
        conn.sendall(f"GET /repos/{REPO}/pulls HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += conn.recv(1)
        start = time.monotonic()
        got = b"".join(conn.recv(1) for _ in range(4))
    assert got == real[:4]
    assert time.monotonic() - start >= 0.5  # three gaps of 0.2 s


def test_a_redirect_answers_301_with_the_query_kept(sim: GitHubSim) -> None:
    sim.inject_redirect(f"/repos/{REPO}/pulls", "GET", r"/old/pulls$")
    first = httpx.get(f"{sim.url}/repos/octo/old/pulls", params={"state": "all"})
    assert first.status_code == 301
    assert first.headers["location"] == f"/repos/{REPO}/pulls?state=all"
    assert first.json()["message"] == "Moved Permanently"


def test_bad_fault_arguments_are_refused(sim: GitHubSim) -> None:
    with pytest.raises(GhsimError):
        sim.inject_body_fault("zip_bomb")
    with pytest.raises(GhsimError):
        sim.inject_body_fault("drip", drip_seconds=0)
    with pytest.raises(GhsimError):
        sim.inject_redirect("/x", status=200)
