"""`li engine run --metrics-addr`: scraped over HTTP after a ghsim scenario; kdev's
textfile counters under concurrent writers."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from demo.run_demo import REVIEW_ARGS, setup_pipeline
from engine.github import token_identity
from ghsim import GitHubSim
from wrapper.metrics import read_counts

BIN = Path(sys.executable).parent
REPO = "octo/widgets"
ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def value(
    found: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str
) -> float | None:
    return found.get((name, frozenset(labels.items())))


def test_metrics_after_a_review_scenario(tmp_path: Path) -> None:
    token = f"tok-{uuid.uuid4().hex}"
    with GitHubSim(tmp_path / "github") as sim:
        sim.add_token(token, ("review-bot", 5000))
        sim.create_repo(REPO, files={"app.py": "print('hi')\n"})
        checkout, env = setup_pipeline(sim, REPO, tmp_path, token)
        textfile = tmp_path / "metrics" / "kdev.prom"
        env["KDEV_METRICS_FILE"] = str(textfile)
        env["LI_ENV_PASSTHROUGH"] += ",KDEV_METRICS_FILE"
        env["LI_SYNC_INTERVAL"] = "0.3"

        def li(*args: str) -> None:
            done = subprocess.run([str(BIN / "li"), *args], env=env, capture_output=True,
                                  text=True, timeout=120)  # fmt: skip
            assert done.returncode == 0, done.stderr

        li("schedule", "add", "review", "--github", REPO, "--poll-interval", "1m",
           "--cwd", str(checkout), "--command", "kdev", "--", *REVIEW_ARGS, "--json")  # fmt: skip
        sim.advance(2)
        sim.open_pr(REPO, "feature", {"util.py": "x = 1  # TODO\n"})
        sim.advance(2)
        port = free_port()
        engine = subprocess.Popen(
            [str(BIN / "li"), "engine", "run", "--metrics-addr", f"127.0.0.1:{port}",
             "--metrics-textfile", str(textfile)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            url = f"http://127.0.0.1:{port}/metrics"
            deadline = time.monotonic() + 60
            triggered = 0.0
            found: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
            while time.monotonic() < deadline:
                try:
                    found = samples(httpx.get(url, timeout=5).text)
                except httpx.TransportError:
                    found = {}
                fired = value(found, "li_fires_total", schedule="review", outcome="succeeded")
                if not fired and time.monotonic() - triggered > 2:
                    # Poll again now (an event in the pass's boundary second waits a pass).
                    li("schedule", "trigger", "review")
                    triggered = time.monotonic()
                if value(found, "kdev_outcomes_total", outcome="reviewed") and value(
                    found, "li_fires_total", schedule="review", outcome="succeeded"
                ):
                    break
                time.sleep(0.3)
            body = httpx.get(url, timeout=5).text
        finally:
            engine.send_signal(signal.SIGTERM)
            _, stderr = engine.communicate(timeout=60)
        assert engine.returncode == 0, stderr
    found = samples(body)
    assert value(found, "li_fires_total", schedule="review", outcome="succeeded") == 1, body
    assert value(found, "li_run_duration_seconds_count", schedule="review") == 1
    assert value(found, "li_run_duration_seconds_bucket", schedule="review", le="+Inf") == 1
    assert (value(found, "li_poll_results_total", schedule="review", result="200") or 0) >= 1
    polls = [k for k in found if k[0] == "li_poll_results_total"]
    assert {dict(labels)["result"] for _, labels in polls} <= {"200", "304"}
    identity = token_identity(token)
    remaining = value(found, "li_github_rate_limit_remaining", identity=identity)
    assert remaining is not None and 0 < remaining < 5000
    assert value(found, "li_github_rate_limit_reset_timestamp_seconds", identity=identity)
    assert token not in body
    assert value(found, "li_schedule_health", schedule="review", state="healthy") == 1
    assert value(found, "li_schedule_health", schedule="review", state="blind") == 0
    assert value(found, "li_held_batch_size", schedule="review") == 0
    ages = [v for (name, _), v in found.items() if name == "li_engine_heartbeat_age_seconds"]
    assert len(ages) == 1 and 0 <= ages[0] < 30
    assert value(found, "kdev_outcomes_total", outcome="reviewed") == 1


def test_kdev_counts_survive_concurrent_writers(tmp_path: Path) -> None:
    path = tmp_path / "kdev.prom"
    script = (
        "import sys; from wrapper.metrics import count_outcome\n"
        "for _ in range(25): count_outcome(sys.argv[1], {'KDEV_METRICS_FILE': sys.argv[2]})\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    writers = [
        subprocess.Popen([sys.executable, "-c", script, outcome, str(path)], env=env)
        for outcome in ("reviewed", "reviewed", "failed", "carried_forward")
    ]
    for writer in writers:
        assert writer.wait(timeout=120) == 0
    assert read_counts(path) == {"reviewed": 50.0, "failed": 25.0, "carried_forward": 25.0}
    # Written by rename: no temporary file is left behind.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kdev.prom", "kdev.prom.lock"]
