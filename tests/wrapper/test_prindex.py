"""The PR index (prs.index.json) behind list_deferred and kdev verdicts (issue 19).

The index is a cache of the PR directories: these tests check that it is really used when
it is valid, and that it is never believed when any writer (kdev, an older kdev writing
files directly, an operator) changed a PR directory, a marker or an index.json since, or
when its entry is racy, missing or corrupt. Paging and --since are checked against the
full listing.
"""

from __future__ import annotations

import json
import logging
import os
import random
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from wrapper.errors import ConfigError
from wrapper.ledger import prindex
from wrapper.ledger.codec import marker_to_json
from wrapper.ledger.ledger import DeferredMarker, IndexEntry, Ledger
from wrapper.ledger.listing import Query, decode_cursor, encode_cursor

REPO = "acme/widgets"
OTHER = "acme/other"
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
BIN = Path(sys.executable).parent


def sha(n: int, salt: str = "a") -> str:
    return f"{n:08x}" + salt * 32


def marker(head: str, created_at: datetime = T0, count: int = 5) -> DeferredMarker:
    return DeferredMarker(
        budget="daily_legs_per_repo",
        count=count,
        limit=5,
        reopens_at=T0 + timedelta(hours=3),
        head_sha=head,
        pr_url=f"https://github.com/{REPO}/pull/1",
        created_at=created_at,
    )


def age(root: Path, seconds: int = 3600) -> None:
    """Every file and directory under ``root`` gets an mtime ``seconds`` in the past, as if
    written long ago (so the PR index may trust its stamps)."""
    then = time.time() - seconds
    for path in [root, *root.rglob("*")]:
        os.utime(path, (then, then), follow_symlinks=False)


def oracle(ledger: Ledger, repo: str) -> list[tuple[str, int, DeferredMarker]]:
    """list_deferred as it was: every PR directory opened."""
    found = []
    for number, path in prindex.pr_dirs(ledger.repo_dir(repo)):
        found += [(repo, number, m) for m in ledger.markers_of(Path(path))]
    found.sort(key=lambda t: (t[0], t[1], t[2].created_at, t[2].head_sha))
    return found


def index_file(ledger: Ledger, repo: str = REPO) -> Path:
    return ledger.repo_dir(repo) / prindex.PR_INDEX_FILE


def test_a_valid_index_is_used_without_opening_the_pr_directories(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    ledger.write_deferred(REPO, 1, sha(1), marker(sha(1)))
    ledger.record_index(REPO, 2, sha(2), IndexEntry(sha(9), "APPROVE", T0))
    age(tmp_path)
    assert ledger.list_deferred(REPO) == [(REPO, 1, marker(sha(1)))]
    data = json.loads(index_file(ledger).read_text())
    assert data["prs"]["1"]["trusted"] and data["prs"]["2"]["rows"] == 1
    # Forge the cached marker (the stamps untouched): a reader that trusts the index
    # returns the forgery, which shows the directory was not read.
    data["prs"]["1"]["markers"][0]["count"] = 4
    index_file(ledger).write_text(json.dumps(data))
    assert ledger.list_deferred(REPO) == [(REPO, 1, marker(sha(1), count=4))]


def test_a_racy_entry_is_read_again(tmp_path: Path) -> None:
    """Files changed within RACY_NS of the stamp: the entry is not trusted, so even a
    forged entry whose stamps match is not believed."""
    ledger = Ledger(tmp_path)
    ledger.write_deferred(REPO, 1, sha(1), marker(sha(1)))
    assert ledger.list_deferred(REPO) == [(REPO, 1, marker(sha(1)))]
    data = json.loads(index_file(ledger).read_text())
    assert data["prs"]["1"]["trusted"] is False
    data["prs"]["1"]["markers"] = []
    index_file(ledger).write_text(json.dumps(data))
    assert ledger.list_deferred(REPO) == [(REPO, 1, marker(sha(1)))]


@pytest.mark.parametrize("change", ["add", "remove", "edit_in_place", "replace", "new_pr"])
def test_a_change_by_another_writer_is_seen(tmp_path: Path, change: str) -> None:
    """An older kdev or an operator writes files directly, without the index."""
    ledger = Ledger(tmp_path)
    ledger.write_deferred(REPO, 1, sha(1), marker(sha(1)))
    ledger.write_deferred(REPO, 3, sha(3), marker(sha(3)))
    age(tmp_path)
    before = ledger.list_deferred(REPO)
    assert json.loads(index_file(ledger).read_text())["prs"]["1"]["trusted"]
    pr1 = ledger.pr_dir(REPO, 1)
    path = pr1 / f"deferred-{sha(1)}.json"
    if change == "add":
        (pr1 / f"deferred-{sha(2)}.json").write_text(marker_to_json(marker(sha(2))))
    elif change == "remove":
        path.unlink()
    elif change == "edit_in_place":  # same size, same directory: only the file's stamp moves
        with path.open("r+") as handle:
            handle.write(marker_to_json(marker(sha(1), count=7)))
    elif change == "replace":
        tmp = pr1 / "x.tmp"
        tmp.write_text(marker_to_json(marker(sha(1), count=6)))
        os.replace(tmp, path)
    else:
        (ledger.repo_dir(REPO) / "pr-2").mkdir()
        (ledger.repo_dir(REPO) / "pr-2" / f"deferred-{sha(2)}.json").write_text(
            marker_to_json(marker(sha(2)))
        )
    after = ledger.list_deferred(REPO)
    assert after == oracle(ledger, REPO)
    assert after != before


def test_a_removed_pr_directory_leaves_the_index(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    ledger.write_deferred(REPO, 1, sha(1), marker(sha(1)))
    age(tmp_path)
    ledger.list_deferred(REPO)
    for path in ledger.pr_dir(REPO, 1).iterdir():
        path.unlink()
    ledger.pr_dir(REPO, 1).rmdir()
    assert ledger.list_deferred(REPO) == []
    assert json.loads(index_file(ledger).read_text())["prs"] == {}


@pytest.mark.parametrize("damage", ["garbage", "wrong_format", "bad_entry", "deleted"])
def test_a_damaged_or_missing_index_is_rebuilt(
    tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    ledger = Ledger(tmp_path)
    ledger.write_deferred(REPO, 1, sha(1), marker(sha(1)))
    age(tmp_path)
    ledger.list_deferred(REPO)
    path = index_file(ledger)
    if damage == "garbage":
        path.write_text("{not json")
    elif damage == "wrong_format":
        path.write_text(json.dumps({"format": 99, "prs": {}}))
    elif damage == "bad_entry":
        path.write_text(json.dumps({"format": 1, "prs": {"1": {"stamp": "x"}}}))
    else:
        path.unlink()
    with caplog.at_level(logging.WARNING):
        assert ledger.list_deferred(REPO) == [(REPO, 1, marker(sha(1)))]
    assert json.loads(path.read_text())["format"] == prindex.FORMAT
    rebuilt = json.loads(path.read_text())["prs"]["1"]
    assert rebuilt["markers"] == [marker(sha(1)).to_json()]
    warned = any("rebuilding" in r.message for r in caplog.records)
    assert warned == (damage in ("garbage", "wrong_format"))  # a bad entry is just re-read


def test_a_corrupt_marker_is_warned_about_every_time(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ledger = Ledger(tmp_path)
    ledger.write_deferred(REPO, 1, sha(1), marker(sha(1)))
    (ledger.pr_dir(REPO, 1) / f"deferred-{sha(2)}.json").write_text("{}")
    age(tmp_path)
    for _ in range(2):
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            assert ledger.list_deferred(REPO) == [(REPO, 1, marker(sha(1)))]
        assert any("corrupt deferred marker" in r.message for r in caplog.records)


def test_random_writers_never_make_the_index_disagree(tmp_path: Path) -> None:
    """Random writes through the ledger and directly, aged or not between reads: every
    list_deferred equals opening every PR directory."""
    rng = random.Random(19)
    ledger = Ledger(tmp_path)
    for step in range(250):
        pr, head = rng.randint(1, 6), sha(rng.randint(1, 4))
        action = rng.choice(["write", "clear", "direct", "unlink", "age", "list", "verdict"])
        path = ledger.pr_dir(REPO, pr) / f"deferred-{head}.json"
        if action == "write":
            ledger.write_deferred(REPO, pr, head, marker(head, T0 + timedelta(minutes=step)))
        elif action == "clear":
            ledger.clear_deferred(REPO, pr, head)
        elif action == "direct" and path.parent.is_dir():
            path.write_text(marker_to_json(marker(head, count=rng.randint(1, 9))))
        elif action == "unlink":
            path.unlink(missing_ok=True)
        elif action == "age":
            age(tmp_path, rng.choice([0, 3600]))
        elif action == "verdict":
            ledger.record_index(REPO, pr, head, IndexEntry(sha(9), "APPROVE", T0))
        assert ledger.list_deferred(REPO) == oracle(ledger, REPO), step


def _fill(ledger: Ledger) -> None:
    for repo in (REPO, OTHER):
        for pr in range(1, 8):
            for k in range(pr % 4):
                moment = T0 + timedelta(hours=pr * 5 + k)
                ledger.record_index(repo, pr, sha(k, "b"), IndexEntry(sha(k), "APPROVE", moment))
        ledger.write_deferred(repo, 3, sha(7), marker(sha(7), T0 + timedelta(days=2)))
        ledger.write_deferred(repo, 4, sha(8), marker(sha(8), T0 - timedelta(days=2)))


@pytest.mark.parametrize("aged", [False, True])
def test_pages_add_up_to_the_full_listing(tmp_path: Path, aged: bool) -> None:
    ledger = Ledger(tmp_path)
    _fill(ledger)
    if aged:
        age(tmp_path)
    full = ledger.list_ledger()
    assert len(full) > 20 and [r.repo for r in full] == sorted(r.repo for r in full)
    for limit in (1, 3, 7, len(full), len(full) + 1):
        rows, after = [], None
        while True:
            page = ledger.page_ledger(Query(limit=limit, after=after))
            assert len(page.rows) <= limit
            rows += page.rows
            if page.next_cursor is None:
                break
            after = decode_cursor(page.next_cursor)
        assert rows == full, limit


def test_since_keeps_the_rows_from_then_on(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    _fill(ledger)
    age(tmp_path)
    full = ledger.list_ledger()
    since = T0 + timedelta(hours=20)
    expected = [r for r in full if (r.reviewed_at or r.deferred.created_at) >= since]  # type: ignore[union-attr]
    assert 0 < len(expected) < len(full)
    assert ledger.list_ledger(since=since) == expected
    assert ledger.list_ledger(REPO, since=since) == [r for r in expected if r.repo == REPO]
    # a PR whose newest row is older than --since is not opened: its cached summary decides
    assert ledger.list_ledger(pr=4) == [r for r in full if r.pr == 4]


def test_a_bad_cursor_or_limit_is_refused() -> None:
    for token in ("xyz", encode_cursor((REPO, 1, T0, sha(1)))[:-3], "W10"):
        with pytest.raises(ConfigError) as caught:
            decode_cursor(token)
        assert caught.value.reason == "invalid_cursor"
    assert decode_cursor(encode_cursor((REPO, 1, T0, sha(1)))) == (REPO, 1, T0, sha(1))


def test_kdev_verdicts_pages_on_the_command_line(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "reviews")
    _fill(ledger)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}

    def kdev(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [str(BIN / "kdev"), "verdicts", "--reviews-dir", str(tmp_path / "reviews"), *args]
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)

    first = kdev("--limit", "5", "--json")
    assert first.returncode == 0, first.stderr
    assert len(json.loads(first.stdout)) == 5
    cursor = first.stderr.strip().rsplit("--cursor ", 1)[1]
    rest = kdev("--cursor", cursor, "--json")
    assert rest.returncode == 0 and "--cursor" not in rest.stderr
    full = kdev("--json")
    assert json.loads(first.stdout) + json.loads(rest.stdout) == json.loads(full.stdout)
    since = kdev("--since", "2026-03-03T02:00:00Z", "--repo", REPO, "--json")
    assert [r["kind"] for r in json.loads(since.stdout)] == ["deferred"]
    for args, reason in (
        (("--since", "yesterday"), "invalid_since"),
        (("--since", "2026-03-03T00:00:00"), "invalid_since"),
        (("--cursor", "nope"), "invalid_cursor"),
        (("--limit", "0"), "invalid_limit"),
    ):
        bad = kdev(*args)
        assert bad.returncode == 2 and f"[{reason}]" in bad.stderr, (args, bad.stderr)


def test_an_index_json_edited_in_place_is_seen_by_since(tmp_path: Path) -> None:
    """The PR's summary said "nothing newer than T0"; index.json rewritten in place (no
    rename, so the directory's stamp stays) with a recent row: --since must show it."""
    ledger = Ledger(tmp_path)
    ledger.record_index(REPO, 1, sha(1), IndexEntry(sha(9), "APPROVE", T0))
    age(tmp_path)
    since = T0 + timedelta(days=1)
    assert ledger.list_ledger(REPO, since=since) == []
    assert json.loads(index_file(ledger).read_text())["prs"]["1"]["trusted"]
    path = ledger.pr_dir(REPO, 1) / "index.json"
    data = json.loads(path.read_text())
    data[sha(2)] = dict(data[sha(1)], reviewed_at="2026-03-05T00:00:00Z")
    with path.open("r+") as handle:
        handle.write(json.dumps(data))
    assert [r.head_sha for r in ledger.list_ledger(REPO, since=since)] == [sha(2)]
    assert ledger.list_deferred(REPO) == []
