"""The ledger on a real file system, with real child processes for locks and crashes."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from wrapper.errors import ConfigError, LedgerError
from wrapper.ledger.ledger import (
    DeferredMarker,
    IndexEntry,
    Ledger,
    LedgerRow,
    LegRecord,
    VerdictRecord,
    parse_verdict,
    render_verdict,
)

REPO = "acme/widgets"
PR = 7
HEAD_A = "a" * 40
HEAD_B = "b" * 40
HEAD_C = "c" * 40
PATCH_1 = "1" * 40
PATCH_2 = "2" * 40
T0 = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)
CHILD_TIMEOUT = 20.0


def record(
    *,
    verdict: str = "REQUEST_CHANGES",
    head_sha: str = HEAD_A,
    patch_id: str = PATCH_1,
    body: str = "Please handle the empty list.\n\n- app.py:3 crashes on []",
) -> VerdictRecord:
    return VerdictRecord(
        verdict=verdict,
        pr_url=f"https://github.com/{REPO}/pull/{PR}",
        head_sha=head_sha,
        patch_id=patch_id,
        base="main",
        reviewed_at=T0,
        model="stub-model-1",
        body=body,
        pr=PR,
    )


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    return Ledger(tmp_path / "reviews", clock=lambda: T0)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def visible_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if not p.name.startswith("."))


# --- child processes ---------------------------------------------------------------------

CHILD_PRELUDE = """
import sys, time
from datetime import UTC, datetime
from pathlib import Path
from wrapper.ledger.ledger import IndexEntry, Ledger, VerdictRecord
reviews = Path(sys.argv[1])
"""

HOLD_PR_LOCK = (
    CHILD_PRELUDE
    + """
ledger = Ledger(reviews)
with ledger.pr_lock("acme/widgets", 7):
    print("locked", flush=True)
    time.sleep(120)
"""
)

TAKE_PR_LOCK_ONCE = (
    CHILD_PRELUDE
    + """
ledger = Ledger(reviews)
with ledger.pr_lock("acme/widgets", 7):
    print("acquired", flush=True)
"""
)

HOLD_SLOT = (
    CHILD_PRELUDE
    + """
ledger = Ledger(reviews)
with ledger.concurrency_slot("acme/widgets", 1) as slot:
    print(f"slot {slot}", flush=True)
    time.sleep(120)
"""
)

# Holds the PR lock and stops for good between the fsync'd temp file and the rename.
WRITE_AND_STALL = (
    CHILD_PRELUDE
    + """
def stall(temp):
    print(f"stalled {temp.name}", flush=True)
    time.sleep(120)

ledger = Ledger(reviews, before_replace=stall)
record = VerdictRecord("APPROVE", "https://github.com/acme/widgets/pull/7", "a" * 40, "1" * 40,
                       "main", datetime(2025, 3, 1, tzinfo=UTC), "stub", "LGTM " * 2000)
with ledger.pr_lock("acme/widgets", 7):
    ledger.write_verdict("acme/widgets", 7, record)
"""
)

# Rewrites verdicts and the index as fast as it can, with bodies of varying size.
WRITE_IN_A_LOOP = (
    CHILD_PRELUDE
    + """
ledger = Ledger(reviews)
n = 0
while True:
    patch = "%040x" % (n % 5 + 1)
    head = "%040x" % (n + 100)
    when = datetime(2025, 3, 1, tzinfo=UTC)
    body = ("round %d\\n" % n) * (1 + (n * 7919) % 20000)
    ledger.write_verdict("acme/widgets", 7, VerdictRecord(
        "APPROVE", "u", head, patch, "main", when, "stub", body))
    ledger.record_index("acme/widgets", 7, head, IndexEntry(patch, "APPROVE", when, None))
    if n == 3:
        print("running", flush=True)
    n += 1
"""
)


Spawn = Callable[[str], "subprocess.Popen[str]"]


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Spawn]:
    """Starts child Python processes on the ledger at tmp_path/reviews; kills leftovers."""
    children: list[subprocess.Popen[str]] = []

    def start(script: str) -> subprocess.Popen[str]:
        child = subprocess.Popen(
            [sys.executable, "-c", script, str(tmp_path / "reviews")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        children.append(child)
        return child

    yield start
    for child in children:
        if child.poll() is None:
            child.kill()
        child.communicate(timeout=CHILD_TIMEOUT)


def first_line(child: subprocess.Popen[str]) -> str:
    assert child.stdout is not None
    line = child.stdout.readline().strip()
    if not line:
        assert child.stderr is not None
        pytest.fail(f"child said nothing; stderr: {child.stderr.read()}")
    return line


def kill_hard(child: subprocess.Popen[str]) -> None:
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=CHILD_TIMEOUT)
    assert child.returncode == -signal.SIGKILL


def a_new_process_takes_the_pr_lock(tmp_path: Path) -> bool:
    result = subprocess.run(
        [sys.executable, "-c", TAKE_PR_LOCK_ONCE, str(tmp_path / "reviews")],
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT,
    )
    return result.stdout.strip() == "acquired"


# --- verdict files ---------------------------------------------------------------------------


def test_a_verdict_file_has_the_exact_grammar_and_round_trips(ledger: Ledger) -> None:
    path = ledger.write_verdict(REPO, PR, record())
    assert path == ledger.reviews_dir / "acme__widgets" / "pr-7" / f"patch-{PATCH_1}.md"
    assert path.read_text() == (
        "VERDICT: REQUEST_CHANGES\n"
        "PR: 7\n"
        "PR_URL: https://github.com/acme/widgets/pull/7\n"
        f"HEAD_SHA: {HEAD_A}\n"
        f"PATCH_ID: {PATCH_1}\n"
        "BASE: main\n"
        "REVIEWED_AT: 2025-03-01T12:00:00Z\n"
        "REVIEWER_MODEL: stub-model-1\n"
        "---\n"
        "Please handle the empty list.\n\n- app.py:3 crashes on []\n"
    )
    assert ledger.find_verdict(REPO, PR, PATCH_1) == record()
    assert ledger.find_verdict(REPO, PR, PATCH_2) is None


OLD_HEADER_FILE = (
    "VERDICT: APPROVE\n"
    "PR: https://github.com/acme/widgets/pull/7\n"
    f"HEAD_SHA: {HEAD_A}\n"
    f"PATCH_ID: {PATCH_1}\n"
    "BASE: main\n"
    "REVIEWED_AT: 2025-03-01T12:00:00Z\n"
    "REVIEWER_MODEL: stub-model-1\n"
    "---\n"
    "Fine.\n"
)


def test_a_verdict_file_with_the_old_url_header_still_parses(ledger: Ledger) -> None:
    parsed = parse_verdict(OLD_HEADER_FILE)
    assert (parsed.pr, parsed.pr_url) == (None, "https://github.com/acme/widgets/pull/7")
    assert (parsed.verdict, parsed.head_sha, parsed.body) == ("APPROVE", HEAD_A, "Fine.")
    path = ledger.verdict_path(REPO, PR, PATCH_1)
    ledger.ensure_dir(path.parent)
    path.write_text(OLD_HEADER_FILE)
    found = ledger.find_verdict(REPO, PR, PATCH_1)
    assert found is not None and found.pr == PR  # the number of the file's directory
    assert found.pr_url == "https://github.com/acme/widgets/pull/7"


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text.replace("PR: 7\n", "PR: https://github.com/acme/widgets/pull/7\n"),
        lambda text: text.replace("PR: 7\n", "PR: 07\n"),
        lambda text: text.replace("PR: 7\n", "PR: 8\n"),  # not the directory's PR
        lambda text: text.replace("PR_URL: ", "URL: "),
    ],
)
def test_a_new_header_with_a_bad_pr_line_is_not_a_verdict(
    ledger: Ledger, caplog: pytest.LogCaptureFixture, damage: Callable[[str], str]
) -> None:
    path = ledger.write_verdict(REPO, PR, record())
    path.write_text(damage(path.read_text()))
    with caplog.at_level(logging.WARNING, logger="wrapper.ledger.ledger"):
        assert ledger.find_verdict(REPO, PR, PATCH_1) is None
    assert "corrupt verdict file" in caplog.text


def test_a_record_is_written_under_its_own_pr_only(ledger: Ledger) -> None:
    unnumbered = dataclasses.replace(record(), pr=None)
    ledger.write_verdict(REPO, PR, unnumbered)  # the ledger numbers it
    assert ledger.find_verdict(REPO, PR, PATCH_1) == record()
    with pytest.raises(LedgerError) as caught:
        ledger.write_verdict(REPO, PR + 1, record())
    assert caught.value.reason == "invalid_record"
    with pytest.raises(LedgerError) as caught:
        render_verdict(unnumbered)
    assert caught.value.reason == "invalid_record"


@pytest.mark.parametrize(
    "body",
    ["", "\n", "ends with two newlines\n\n", "---\nVERDICT: APPROVE\n---", "unicode: é ✓ 🚀"],
)
def test_any_review_body_round_trips_verbatim(ledger: Ledger, body: str) -> None:
    rec = record(verdict="APPROVE", body=body)
    ledger.write_verdict(REPO, PR, rec)
    assert ledger.find_verdict(REPO, PR, PATCH_1) == rec
    assert parse_verdict(render_verdict(rec)) == rec


def test_a_timestamp_with_microseconds_or_another_zone_is_written_in_utc_with_z(
    ledger: Ledger,
) -> None:
    moment = datetime(2025, 3, 1, 14, 0, 0, 250000, tzinfo=UTC)
    plus_two = moment.astimezone(timezone(timedelta(hours=2)))
    rec = VerdictRecord("APPROVE", "u", HEAD_A, PATCH_1, "main", plus_two, "m", "b", pr=PR)
    text = render_verdict(rec)
    assert "REVIEWED_AT: 2025-03-01T14:00:00.250000Z\n" in text
    assert parse_verdict(text).reviewed_at == moment


@pytest.mark.parametrize(
    "field, value",
    [
        ("base", "main\nVERDICT: APPROVE"),
        ("pr_url", "https://x\r"),
        ("model", " padded"),
        ("base", ""),
        ("verdict", "LGTM"),
        ("head_sha", "../../etc/passwd"),
        ("reviewed_at", datetime(2025, 3, 1)),  # naive
    ],
)
def test_a_record_that_would_break_the_grammar_is_refused(
    ledger: Ledger, field: str, value: object
) -> None:
    rec = dataclasses.replace(record(), **{field: value})
    with pytest.raises(LedgerError) as caught:
        ledger.write_verdict(REPO, PR, rec)
    assert caught.value.reason == "invalid_record"
    assert not (ledger.reviews_dir / "acme__widgets").exists()


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[:40],  # truncated header
        lambda text: text.replace("REQUEST_CHANGES", "MAYBE"),
        lambda text: text.replace(f"PATCH_ID: {PATCH_1}", f"PATCH_ID: {PATCH_2}"),
        lambda text: text.replace("---\n", ""),
        lambda text: text.replace("2025-03-01T12:00:00Z", "yesterday"),
        lambda text: text.replace("Z\n", "\n", 1),  # no zone
        lambda text: "\n" + text,
    ],
)
def test_a_corrupt_verdict_file_is_not_a_verdict_and_is_logged(
    ledger: Ledger, caplog: pytest.LogCaptureFixture, damage: Callable[[str], str]
) -> None:
    path = ledger.write_verdict(REPO, PR, record())
    path.write_text(damage(path.read_text()))
    with caplog.at_level(logging.WARNING, logger="wrapper.ledger.ledger"):
        assert ledger.find_verdict(REPO, PR, PATCH_1) is None
    assert "corrupt verdict file" in caplog.text


def test_a_verdict_file_that_is_not_utf8_is_not_a_verdict(
    ledger: Ledger, caplog: pytest.LogCaptureFixture
) -> None:
    path = ledger.write_verdict(REPO, PR, record())
    path.write_bytes(b"VERDICT: APPROVE\xff\n")
    with caplog.at_level(logging.WARNING, logger="wrapper.ledger.ledger"):
        assert ledger.find_verdict(REPO, PR, PATCH_1) is None
    assert "corrupt verdict file" in caplog.text


def test_the_secret_canary_refuses_a_verdict_containing_a_secret_and_writes_nothing(
    ledger: Ledger,
) -> None:
    secret = "ghp_CanaryToken0123456789"
    rec = record(body=f"I found this in the environment: {secret}")
    with pytest.raises(LedgerError) as caught:
        ledger.write_verdict(REPO, PR, rec, secrets=["", "short", secret])
    assert caught.value.reason == "secret_in_output"
    assert secret not in str(caught.value)
    pr_dir = ledger.pr_dir(REPO, PR)
    assert not pr_dir.exists() or list(pr_dir.iterdir()) == []


def test_the_secret_canary_checks_header_fields_too(ledger: Ledger) -> None:
    secret = "sk-test-canary-999"
    rec = VerdictRecord("APPROVE", f"https://x/{secret}", HEAD_A, PATCH_1, "main", T0, "m", "ok")
    with pytest.raises(LedgerError):
        ledger.write_verdict(REPO, PR, rec, secrets=[secret])


def test_secrets_shorter_than_eight_characters_or_empty_do_not_block_a_verdict(
    ledger: Ledger,
) -> None:
    rec = record(body="the value main appears, and so does 1234567")
    ledger.write_verdict(REPO, PR, rec, secrets=["", "main", "1234567"])
    assert ledger.find_verdict(REPO, PR, PATCH_1) == rec


def test_directories_are_created_0700_and_ledger_files_0600(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "deep" / "reviews", clock=lambda: T0)
    path = ledger.write_verdict(REPO, PR, record())
    ledger.record_index(REPO, PR, HEAD_A, IndexEntry(PATCH_1, "APPROVE", T0))
    ledger.record_leg_start(REPO, PR, HEAD_A)
    for directory in (tmp_path / "deep", ledger.reviews_dir, path.parent.parent, path.parent):
        assert mode(directory) == 0o700, directory
    for file in (path, path.parent / "index.json", path.parent.parent / "legs.jsonl"):
        assert mode(file) == 0o600, file


# --- names that become paths ----------------------------------------------------------------

ESCAPING_REPOS = ["../x", "a/../../b", "owner/..", "owner/.", "..", "", "/x", "a/b/c", "a__b/c"]


@pytest.mark.parametrize("repo", ESCAPING_REPOS)
def test_a_repo_name_that_could_escape_the_reviews_dir_is_refused(
    tmp_path: Path, repo: str
) -> None:
    ledger = Ledger(tmp_path / "reviews")
    calls = [
        lambda: ledger.pr_dir(repo, PR),
        lambda: ledger.write_verdict(repo, PR, record()),
        lambda: ledger.record_index(repo, PR, HEAD_A, IndexEntry(PATCH_1, "APPROVE", T0)),
        lambda: ledger.record_leg_start(repo, PR, HEAD_A),
        lambda: ledger.list_deferred(repo),
        lambda: ledger.list_ledger(repo),
    ]
    for call in calls:
        with pytest.raises(ConfigError) as caught:
            call()
        assert caught.value.reason == "invalid_repo"
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize("pr", [0, -3, True])
def test_a_pr_number_must_be_a_positive_integer(ledger: Ledger, pr: int) -> None:
    with pytest.raises(ConfigError) as caught:
        ledger.pr_dir(REPO, pr)
    assert caught.value.reason == "invalid_pr"


@pytest.mark.parametrize("sha", ["../../../etc/passwd", "A" * 40, "a" * 39, "g" * 40, ""])
def test_shas_that_become_file_names_must_be_lowercase_hex_object_names(
    ledger: Ledger, sha: str
) -> None:
    marker = DeferredMarker("daily_legs_per_repo", 3, 3, T0, sha, "u", T0)
    for call in (
        lambda: ledger.verdict_path(REPO, PR, sha),
        lambda: ledger.write_deferred(REPO, PR, sha, marker),
        lambda: ledger.clear_deferred(REPO, PR, sha),
        lambda: ledger.record_index(REPO, PR, sha, IndexEntry(PATCH_1, "APPROVE", T0)),
    ):
        with pytest.raises(ConfigError) as caught:
            call()
        assert caught.value.reason == "invalid_sha"


def test_sha256_object_names_are_accepted(ledger: Ledger) -> None:
    long_patch = "d" * 64
    ledger.write_verdict(REPO, PR, record(patch_id=long_patch))
    assert ledger.find_verdict(REPO, PR, long_patch) is not None


# --- index.json ------------------------------------------------------------------------------


def test_the_index_maps_each_head_to_its_verdict_reviewed_or_carried(ledger: Ledger) -> None:
    reviewed = IndexEntry(PATCH_1, "REQUEST_CHANGES", T0, None)
    carried = IndexEntry(PATCH_1, "REQUEST_CHANGES", T0, HEAD_A)
    ledger.record_index(REPO, PR, HEAD_A, reviewed)
    ledger.record_index(REPO, PR, HEAD_B, carried)
    assert ledger.read_index(REPO, PR) == {HEAD_A: reviewed, HEAD_B: carried}
    assert (reviewed.kind, carried.kind) == ("reviewed", "carried")
    raw = json.loads((ledger.pr_dir(REPO, PR) / "index.json").read_text())
    assert raw == {
        HEAD_A: {
            "patch_id": PATCH_1,
            "verdict": "REQUEST_CHANGES",
            "reviewed_at": "2025-03-01T12:00:00Z",
            "carried_from": None,
        },
        HEAD_B: {
            "patch_id": PATCH_1,
            "verdict": "REQUEST_CHANGES",
            "reviewed_at": "2025-03-01T12:00:00Z",
            "carried_from": HEAD_A,
        },
    }


def test_an_index_update_replaces_the_whole_file_and_leaves_no_temp_file(
    ledger: Ledger,
) -> None:
    ledger.record_index(REPO, PR, HEAD_A, IndexEntry(PATCH_1, "APPROVE", T0))
    path = ledger.pr_dir(REPO, PR) / "index.json"
    with path.open() as reader_of_the_old_version:
        ledger.record_index(REPO, PR, HEAD_B, IndexEntry(PATCH_2, "APPROVE", T0))
        # The old file was replaced, never rewritten in place: a reader sees one version.
        assert list(json.loads(reader_of_the_old_version.read())) == [HEAD_A]
    assert list(json.loads(path.read_text())) == [HEAD_A, HEAD_B]
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_the_index_is_absent_until_written_and_a_corrupt_one_is_an_error(
    ledger: Ledger,
) -> None:
    assert ledger.read_index(REPO, PR) == {}
    ledger.record_index(REPO, PR, HEAD_A, IndexEntry(PATCH_1, "APPROVE", T0))
    (ledger.pr_dir(REPO, PR) / "index.json").write_text('{"' + HEAD_A + '": {"patch_id": 1}}')
    with pytest.raises(LedgerError) as caught:
        ledger.read_index(REPO, PR)
    assert caught.value.reason == "index_corrupt"
    with pytest.raises(LedgerError):
        ledger.record_index(REPO, PR, HEAD_B, IndexEntry(PATCH_1, "APPROVE", T0))


def test_concurrent_index_updates_from_several_processes_lose_no_entry(
    tmp_path: Path,
) -> None:
    script = (
        CHILD_PRELUDE
        + """
ledger = Ledger(reviews)
worker = int(sys.argv[2])
for i in range(15):
    head = "%040x" % (worker * 1000 + i + 1)
    ledger.record_index("acme/widgets", 7, head,
                        IndexEntry("1" * 40, "APPROVE", datetime(2025, 3, 1, tzinfo=UTC)))
"""
    )
    workers = [
        subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "reviews"), str(n)])
        for n in range(4)
    ]
    for worker in workers:
        assert worker.wait(timeout=CHILD_TIMEOUT) == 0
    assert len(Ledger(tmp_path / "reviews").read_index(REPO, PR)) == 60


def test_force_removal_deletes_the_verdict_and_every_index_entry_of_that_patch_id(
    ledger: Ledger,
) -> None:
    ledger.write_verdict(REPO, PR, record(patch_id=PATCH_1))
    ledger.write_verdict(REPO, PR, record(patch_id=PATCH_2, head_sha=HEAD_C))
    ledger.record_index(REPO, PR, HEAD_A, IndexEntry(PATCH_1, "REQUEST_CHANGES", T0))
    ledger.record_index(REPO, PR, HEAD_B, IndexEntry(PATCH_1, "REQUEST_CHANGES", T0, HEAD_A))
    ledger.record_index(REPO, PR, HEAD_C, IndexEntry(PATCH_2, "APPROVE", T0))

    assert ledger.remove_patch(REPO, PR, PATCH_1) == 2
    assert ledger.find_verdict(REPO, PR, PATCH_1) is None
    assert not ledger.verdict_path(REPO, PR, PATCH_1).exists()
    assert list(ledger.read_index(REPO, PR)) == [HEAD_C]
    assert ledger.find_verdict(REPO, PR, PATCH_2) is not None
    assert ledger.remove_patch(REPO, PR, PATCH_1) == 0
    assert ledger.remove_patch(REPO, 8, PATCH_1) == 0  # a PR never seen


# --- the PR lock --------------------------------------------------------------------------------


def test_the_pr_lock_is_exclusive_across_processes_and_freed_when_the_holder_is_sigkilled(
    ledger: Ledger, spawn: Spawn
) -> None:
    holder = spawn(HOLD_PR_LOCK)
    assert first_line(holder) == "locked"
    acquired = threading.Event()

    def wait_for_the_lock() -> None:
        with ledger.pr_lock(REPO, PR):
            acquired.set()

    waiter = threading.Thread(target=wait_for_the_lock, daemon=True)
    waiter.start()
    assert not acquired.wait(0.5), "the lock was taken while another process held it"
    kill_hard(holder)
    assert acquired.wait(CHILD_TIMEOUT), "the lock of a SIGKILLed holder was never released"
    waiter.join(CHILD_TIMEOUT)


def test_the_pr_lock_of_one_pr_does_not_block_another_pr(ledger: Ledger, spawn: Spawn) -> None:
    holder = spawn(HOLD_PR_LOCK)
    assert first_line(holder) == "locked"
    with ledger.pr_lock(REPO, PR + 1), ledger.pr_lock("acme/other", PR):
        pass


# --- crash safety -------------------------------------------------------------------------------


def test_a_new_version_is_complete_in_a_hidden_temp_file_before_it_replaces_the_old(
    tmp_path: Path,
) -> None:
    seen: list[tuple[Path, str, str, str | None]] = []
    final = Ledger(tmp_path / "reviews").verdict_path(REPO, PR, PATCH_1)

    def before_replace(temp: Path) -> None:
        old = final.read_text() if final.exists() else None
        seen.append((temp.parent, temp.name, temp.read_text(), old))

    ledger = Ledger(tmp_path / "reviews", before_replace=before_replace)
    first, second = record(body="first"), record(body="second")
    ledger.write_verdict(REPO, PR, first)
    ledger.write_verdict(REPO, PR, second)
    ledger.record_index(REPO, PR, HEAD_A, IndexEntry(PATCH_1, "APPROVE", T0))
    assert [(d, name.startswith(".patch-")) for d, name, _, _ in seen[:2]] == [
        (final.parent, True),
        (final.parent, True),
    ]
    assert seen[0][2:] == (render_verdict(first), None)
    assert seen[1][2:] == (render_verdict(second), render_verdict(first))
    assert seen[2][1].startswith(".index.json.")
    assert final.read_text() == render_verdict(second)


def test_sigkill_between_temp_write_and_rename_leaves_no_verdict_and_no_stuck_lock(
    tmp_path: Path, ledger: Ledger, spawn: Spawn
) -> None:
    writer = spawn(WRITE_AND_STALL)
    assert first_line(writer).startswith("stalled .patch-")
    kill_hard(writer)
    pr_dir = ledger.pr_dir(REPO, PR)
    assert list(pr_dir.glob("patch-*.md")) == []
    assert ledger.find_verdict(REPO, PR, PATCH_1) is None
    assert len(list(pr_dir.glob(".patch-*.tmp"))) == 1  # hidden, ignored by every reader
    assert a_new_process_takes_the_pr_lock(tmp_path)
    ledger.write_verdict(REPO, PR, record())  # the next run writes normally
    assert ledger.find_verdict(REPO, PR, PATCH_1) == record()


def test_sigkill_during_a_write_loop_leaves_only_complete_verdicts_and_a_valid_index(
    tmp_path: Path, ledger: Ledger, spawn: Spawn
) -> None:
    for delay in (0.02, 0.05, 0.08, 0.11, 0.13, 0.17, 0.21, 0.29):
        writer = spawn(WRITE_IN_A_LOOP)
        assert first_line(writer) == "running"
        time.sleep(delay)
        kill_hard(writer)
        pr_dir = ledger.pr_dir(REPO, PR)
        verdicts = sorted(pr_dir.glob("patch-*.md"))
        assert verdicts
        for path in verdicts:
            patch = path.name.removeprefix("patch-").removesuffix(".md")
            found = ledger.find_verdict(REPO, PR, patch)
            assert found is not None, f"{path.name} is partial"
            assert found.body.startswith("round ")
        index = ledger.read_index(REPO, PR)  # raises if partial
        assert index
    assert a_new_process_takes_the_pr_lock(tmp_path)


# --- deferred markers ---------------------------------------------------------------------------


def marker(head_sha: str = HEAD_A, created_at: datetime = T0) -> DeferredMarker:
    return DeferredMarker(
        budget="daily_legs_per_repo",
        count=50,
        limit=50,
        reopens_at=T0 + timedelta(hours=3),
        head_sha=head_sha,
        pr_url=f"https://github.com/{REPO}/pull/{PR}",
        created_at=created_at,
    )


def test_a_deferred_marker_is_written_listed_and_cleared(ledger: Ledger) -> None:
    path = ledger.write_deferred(REPO, PR, HEAD_A, marker())
    assert path.name == f"deferred-{HEAD_A}.json"
    assert json.loads(path.read_text()) == {
        "state": "deferred:budget",
        "budget": "daily_legs_per_repo",
        "count": 50,
        "limit": 50,
        "reopens_at": "2025-03-01T15:00:00Z",
        "head_sha": HEAD_A,
        "pr_url": "https://github.com/acme/widgets/pull/7",
        "created_at": "2025-03-01T12:00:00Z",
    }
    never = DeferredMarker("daily_rounds_per_pr", 0, 0, None, HEAD_B, "u", T0)
    ledger.write_deferred("acme/other", 2, HEAD_B, never)
    assert ledger.list_deferred() == [
        ("acme/other", 2, never),
        (REPO, PR, marker()),
    ]
    assert ledger.list_deferred(REPO) == [(REPO, PR, marker())]
    assert ledger.clear_deferred(REPO, PR, HEAD_A) is True
    assert ledger.clear_deferred(REPO, PR, HEAD_A) is False
    assert ledger.list_deferred(REPO) == []


def test_a_marker_for_another_head_than_its_file_name_is_refused(ledger: Ledger) -> None:
    with pytest.raises(LedgerError) as caught:
        ledger.write_deferred(REPO, PR, HEAD_B, marker(HEAD_A))
    assert caught.value.reason == "invalid_record"


def test_a_corrupt_deferred_marker_is_skipped_with_a_warning(
    ledger: Ledger, caplog: pytest.LogCaptureFixture
) -> None:
    ledger.write_deferred(REPO, PR, HEAD_A, marker())
    ledger.write_deferred(REPO, PR, HEAD_B, marker(HEAD_B))
    (ledger.pr_dir(REPO, PR) / f"deferred-{HEAD_B}.json").write_text('{"state": "deferred:budg')
    with caplog.at_level(logging.WARNING, logger="wrapper.ledger.ledger"):
        assert ledger.list_deferred() == [(REPO, PR, marker())]
    assert "corrupt deferred marker" in caplog.text


def test_listing_an_empty_or_missing_reviews_dir_finds_nothing(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "nowhere")
    assert ledger.list_deferred() == []
    assert ledger.list_ledger() == []
    assert ledger.legs_since(REPO, T0) == []
    assert not (tmp_path / "nowhere").exists()


# --- the leg log ------------------------------------------------------------------------------


class StepClock:
    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now


def test_leg_starts_are_appended_one_line_each_and_read_back_since_a_time(
    tmp_path: Path,
) -> None:
    clock = StepClock(T0)
    ledger = Ledger(tmp_path / "reviews", clock=clock)
    for hours, pr, head in ((0, 7, HEAD_A), (5, 8, HEAD_B), (30, 7, HEAD_C)):
        clock.now = T0 + timedelta(hours=hours)
        ledger.record_leg_start(REPO, pr, head)
    lines = (ledger.repo_dir(REPO) / "legs.jsonl").read_text().splitlines()
    assert json.loads(lines[0]) == {
        "pr": 7,
        "head_sha": HEAD_A,
        "started_at": "2025-03-01T12:00:00Z",
    }
    assert ledger.legs_since(REPO, T0 + timedelta(hours=5)) == [
        LegRecord(8, HEAD_B, T0 + timedelta(hours=5)),
        LegRecord(7, HEAD_C, T0 + timedelta(hours=30)),
    ]
    assert len(ledger.legs_since(REPO, T0)) == 3
    assert ledger.legs_since("acme/other", T0) == []


def test_a_torn_leg_line_is_skipped_and_the_next_leg_starts_on_a_fresh_line(
    ledger: Ledger, caplog: pytest.LogCaptureFixture
) -> None:
    ledger.record_leg_start(REPO, PR, HEAD_A)
    with (ledger.repo_dir(REPO) / "legs.jsonl").open("a") as log_file:
        log_file.write('{"pr": 7, "head_sha": "')  # a writer killed mid-append
    ledger.record_leg_start(REPO, PR, HEAD_B)
    with caplog.at_level(logging.WARNING, logger="wrapper.ledger.ledger"):
        legs = ledger.legs_since(REPO, T0 - timedelta(days=1))
    assert [leg.head_sha for leg in legs] == [HEAD_A, HEAD_B]
    assert "ignoring line 2" in caplog.text


def test_the_leg_log_lock_is_reentrant_so_decide_and_record_are_one_step(
    ledger: Ledger,
) -> None:
    with ledger.legs_lock(REPO):
        assert ledger.legs_since(REPO, T0) == []
        ledger.record_leg_start(REPO, PR, HEAD_A)
        with ledger.legs_lock(REPO):
            ledger.record_leg_start(REPO, PR, HEAD_B)
    assert len(ledger.legs_since(REPO, T0)) == 2


# --- concurrency slots ---------------------------------------------------------------------------


def test_with_a_cap_of_one_a_second_holder_gets_no_slot(ledger: Ledger) -> None:
    with ledger.concurrency_slot(REPO, 1) as first:
        with ledger.concurrency_slot(REPO, 1) as second:
            assert (first, second) == (0, None)
        with ledger.concurrency_slot("acme/other", 1) as elsewhere:
            assert elsewhere == 0  # slots are per repository
    with ledger.concurrency_slot(REPO, 1) as again:
        assert again == 0  # released on leaving the block


def test_with_a_cap_of_two_slots_are_handed_out_in_order_until_busy(ledger: Ledger) -> None:
    with (
        ledger.concurrency_slot(REPO, 2) as a,
        ledger.concurrency_slot(REPO, 2) as b,
        ledger.concurrency_slot(REPO, 2) as c,
    ):
        assert (a, b, c) == (0, 1, None)
    assert sorted(p.name for p in (ledger.repo_dir(REPO) / ".slots").iterdir()) == [
        "slot-0.lock",
        "slot-1.lock",
    ]


def test_a_slot_held_by_another_process_is_busy_until_that_process_is_killed(
    ledger: Ledger, spawn: Spawn
) -> None:
    holder = spawn(HOLD_SLOT)
    assert first_line(holder) == "slot 0"
    with ledger.concurrency_slot(REPO, 1) as slot:
        assert slot is None
    kill_hard(holder)
    with ledger.concurrency_slot(REPO, 1) as slot:
        assert slot == 0


@pytest.mark.parametrize("cap", [0, -1, True])
def test_a_concurrency_cap_must_be_a_positive_integer(ledger: Ledger, cap: int) -> None:
    with pytest.raises(ConfigError) as caught, ledger.concurrency_slot(REPO, cap):
        pass
    assert caught.value.reason == "invalid_cap"


# --- kdev verdicts ----------------------------------------------------------------------------


def test_the_ledger_lists_reviewed_carried_and_deferred_heads(ledger: Ledger) -> None:
    later = T0 + timedelta(hours=1)
    ledger.record_index(REPO, PR, HEAD_A, IndexEntry(PATCH_1, "REQUEST_CHANGES", T0))
    ledger.record_index(REPO, PR, HEAD_B, IndexEntry(PATCH_1, "REQUEST_CHANGES", T0, HEAD_A))
    ledger.record_index(REPO, 9, HEAD_A, IndexEntry(PATCH_2, "APPROVE", later))
    ledger.write_deferred(REPO, PR, HEAD_C, marker(HEAD_C, created_at=later))
    ledger.record_index("acme/other", 1, HEAD_C, IndexEntry(PATCH_2, "APPROVE", T0))

    rows = ledger.list_ledger(REPO)
    assert [(r.pr, r.head_sha, r.kind) for r in rows] == [
        (7, HEAD_A, "reviewed"),
        (7, HEAD_B, "carried"),
        (7, HEAD_C, "deferred"),
        (9, HEAD_A, "reviewed"),
    ]
    assert rows[1] == LedgerRow(
        repo=REPO,
        pr=7,
        head_sha=HEAD_B,
        patch_id=PATCH_1,
        verdict="REQUEST_CHANGES",
        reviewed_at=T0,
        kind="carried",
        carried_from=HEAD_A,
    )
    assert rows[2].deferred == marker(HEAD_C, created_at=later)
    assert rows[2].to_json()["deferred"]["budget"] == "daily_legs_per_repo"
    assert rows[0].to_json() == {
        "repo": REPO,
        "pr": 7,
        "head_sha": HEAD_A,
        "patch_id": PATCH_1,
        "verdict": "REQUEST_CHANGES",
        "reviewed_at": "2025-03-01T12:00:00Z",
        "kind": "reviewed",
        "carried_from": None,
        "carried_at": None,
        "deferred": None,
    }
    assert [r.repo for r in ledger.list_ledger()] == ["acme/other"] + [REPO] * 4
    assert [(r.pr, r.kind) for r in ledger.list_ledger(REPO, 9)] == [(9, "reviewed")]
    assert [r.repo for r in ledger.list_ledger(pr=1)] == ["acme/other"]


def test_the_listing_skips_a_pr_with_a_corrupt_index_and_says_so(
    ledger: Ledger, caplog: pytest.LogCaptureFixture
) -> None:
    ledger.record_index(REPO, PR, HEAD_A, IndexEntry(PATCH_1, "APPROVE", T0))
    ledger.record_index(REPO, 9, HEAD_A, IndexEntry(PATCH_1, "APPROVE", T0))
    (ledger.pr_dir(REPO, 9) / "index.json").write_text("[]")
    with caplog.at_level(logging.WARNING, logger="wrapper.ledger.ledger"):
        rows = ledger.list_ledger()
    assert [r.pr for r in rows] == [7]
    assert "index_corrupt" in caplog.text


def test_the_one_jsonl_append_refuses_a_line_that_spans_lines(tmp_path: Path) -> None:
    from wrapper.ledger import jsonl

    path = tmp_path / "log.jsonl"
    jsonl.append_line(path, '{"n": 1}')
    with pytest.raises(LedgerError) as caught:
        jsonl.append_line(path, '{"n": 2}\n{"n": 3}')
    assert caught.value.reason == "invalid_record"
    lines, stat = jsonl.read_lines(path)
    assert lines == [(1, '{"n": 1}')] and stat is not None and stat.st_mode & 0o777 == 0o600


def test_a_new_ledger_directory_is_never_seen_without_its_format_marker(
    tmp_path: Path,
) -> None:
    """A kdev that starts while another is creating the ledger must not take the new
    directory for an old ledger (no marker) and move the other's fresh index aside: the
    directory appears with its marker inside (CI once lost 1 of 60 concurrent entries).
    A watcher lists the parent while a child creates 300 ledgers one after another."""
    base = tmp_path / "base"
    base.mkdir()
    creator = (
        CHILD_PRELUDE
        + """
for n in range(300):
    Ledger(reviews / f"reviews-{n}").record_index(
        "acme/widgets", 7, "a" * 40,
        IndexEntry("1" * 40, "APPROVE", datetime(2025, 3, 1, tzinfo=UTC)))
"""
    )
    child = subprocess.Popen([sys.executable, "-c", creator, str(base)])
    unmarked: set[str] = set()
    seen: set[str] = set()
    while child.poll() is None:
        for name in os.listdir(base):
            if name.startswith("."):
                continue
            seen.add(name)
            if not (base / name / "ledger-format").exists() and (base / name).is_dir():
                unmarked.add(name)
    assert child.wait(timeout=CHILD_TIMEOUT) == 0
    assert len(seen) > 50 and unmarked == set()
    assert [p for p in base.iterdir() if p.name.startswith(".")] == []
