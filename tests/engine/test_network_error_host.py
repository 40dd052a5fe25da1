"""A GitHub network error names the host and port it tried, never the token (issue 25)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from engine.config import Settings
from engine.github import GitHubClient, GitHubError
from ghsim import GitHubSim


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_refused_connection_names_the_host_and_port_not_the_token() -> None:
    port = closed_port()
    token = "ghp_" + "s3cret" * 6
    client = GitHubClient(Settings(github_api_url=f"http://127.0.0.1:{port}", github_token=token))
    with pytest.raises(GitHubError) as caught:
        client.list_pulls("octo/widgets")
    error = caught.value
    assert error.reason == "network_error" and error.status is None
    assert error.message.startswith(f"cannot reach 127.0.0.1:{port} for GET /repos/octo/widgets/")
    assert "ConnectError" in error.message
    assert token not in error.message and token not in str(error)


def test_a_cut_off_answer_names_the_host_too(tmp_path: Path) -> None:
    token = "tok-cutoff"
    with GitHubSim(tmp_path / "sim") as sim:
        sim.add_token(token, ("li-bot", 900))
        sim.create_repo("octo/widgets")
        sim.open_pr("octo/widgets", "feature")
        sim.inject_fault("GET", r"/pulls$", truncate=True)
        client = GitHubClient(Settings(github_api_url=sim.url, github_token=token))
        host = sim.url.removeprefix("http://")
        with pytest.raises(GitHubError) as caught:
            client.list_pulls("octo/widgets")
    assert caught.value.message.startswith(f"no complete answer from {host} for GET ")
    assert caught.value.reason == "network_error"
