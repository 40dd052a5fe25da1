"""Per PR, the findings of the rounds so far and the last reviewed diff (issue 28,
incremental rounds; docs/decisions.md D91).

``pr-N/incremental.json`` holds the last reviewed state (patch-id, head, mode: ``full``
or ``delta``, a delta round's verdict being derived) and every finding kdev recorded on
the PR: its id (``F1``, ``F2`` ... in the order found, never reused), fingerprint
(:mod:`wrapper.review.finding_identity`), place, severity, title, text, the normalised
anchored lines, the round that found it, the posted comment's id and node id (its
thread), its ``state`` (``open``, ``fixed``, ``wrong``, ``withdrawn``) and, once the
reviewer reported it fixed or wrong, the ``close`` steps done (``replied``,
``resolved``). ``pr-N/reviewed.diff`` is the diff the last round read (what part 1 of
the next round's prompt is computed from). Both are written atomically; an unreadable
record is LedgerError ``findings_history_unreadable`` (a round is never run on a guess).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from wrapper.errors import LedgerError
from wrapper.ledger.ledger import Ledger

HISTORY_FILE = "incremental.json"
DIFF_FILE = "reviewed.diff"
HISTORY_VERSION = 1
UNREADABLE = "findings_history_unreadable"
STATES = ("open", "fixed", "wrong", "withdrawn")
DERIVED_WORDS = (
    "derived: a delta round's verdict, the earlier rounds' standing findings plus the "
    "delta's, not a full review"
)


@dataclass(frozen=True)
class Closing:
    """A finding the reviewer reported fixed or wrong, and the steps done on its thread."""

    status: str  # "fixed" | "wrong"
    note: str
    head_sha: str
    replied: bool = False
    resolved: bool = False


@dataclass(frozen=True)
class FindingEntry:
    """One recorded finding (see the module doc)."""

    id: str
    fingerprint: str
    path: str
    line: int
    severity: str
    title: str
    body: str
    round: str  # the patch-id of the round that found it
    anchored: tuple[str, ...] = ()
    start_line: int | None = None
    state: str = "open"
    comment_id: int | None = None
    comment_node: str | None = None
    reintroduces: str | None = None  # the id of the fixed finding it repeats
    closing: Closing | None = None


@dataclass(frozen=True)
class History:
    """The PR's record: the last reviewed state and every finding."""

    patch_id: str | None = None
    head_sha: str | None = None
    mode: str = "full"
    findings: tuple[FindingEntry, ...] = field(default_factory=tuple)
    rounds: dict[str, str] = field(default_factory=dict)  # patch-id -> first, full, delta
    attached: str | None = None  # the round whose comments' ids are recorded

    def next_id(self) -> str:
        return f"F{len(self.findings) + 1}"

    def open_findings(self) -> tuple[FindingEntry, ...]:
        return tuple(f for f in self.findings if f.state == "open")

    def with_entry(self, entry: FindingEntry) -> History:
        kept = tuple(entry if f.id == entry.id else f for f in self.findings)
        if all(f.id != entry.id for f in self.findings):
            kept += (entry,)
        return replace(self, findings=kept)


def history_path(ledger: Ledger, repo: str, pr: int) -> Path:
    return ledger.pr_dir(repo, pr) / HISTORY_FILE


def read_history(ledger: Ledger, repo: str, pr: int) -> History:
    """The PR's record; an empty one when there is none yet."""
    path = history_path(ledger, repo, pr)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return History()
    except OSError as exc:
        raise LedgerError(f"{path}: {exc.strerror}", UNREADABLE) from None
    try:
        data: Any = json.loads(text)
        if data["version"] != HISTORY_VERSION:
            raise ValueError("version")
        return History(
            patch_id=data["patch_id"],
            head_sha=data["head_sha"],
            mode=str(data["mode"]),
            findings=tuple(_entry(item) for item in data["findings"]),
            rounds={str(k): str(v) for k, v in data["rounds"].items()},
            attached=data["attached"],
        )
    except (ValueError, KeyError, TypeError):
        raise LedgerError(f"{path}: not a findings history record", UNREADABLE) from None


def _entry(item: dict[str, Any]) -> FindingEntry:
    closing = item.pop("closing", None)
    entry = FindingEntry(**{**item, "anchored": tuple(item.get("anchored", ()))})
    if entry.state not in STATES or not isinstance(entry.line, int):
        raise ValueError("state")
    return replace(entry, closing=Closing(**closing) if closing is not None else None)


def write_history(ledger: Ledger, repo: str, pr: int, history: History) -> None:
    path = history_path(ledger, repo, pr)
    ledger.ensure_dir(path.parent)
    data = {
        "version": HISTORY_VERSION,
        "patch_id": history.patch_id,
        "head_sha": history.head_sha,
        "mode": history.mode,
        "findings": [asdict(f) for f in history.findings],
        "rounds": history.rounds,
        "attached": history.attached,
    }
    ledger.atomic_write(path, json.dumps(data, indent=1))


def is_derived(ledger: Ledger, repo: str, pr: int, patch_id: str | None) -> bool:
    """Whether the verdict of ``patch_id`` is a delta round's, derived (D92)."""
    if patch_id is None or not history_path(ledger, repo, pr).exists():
        return False
    return read_history(ledger, repo, pr).rounds.get(patch_id) == "delta"


def read_reviewed_diff(ledger: Ledger, repo: str, pr: int) -> str | None:
    """The diff the last round read, or None when no round was recorded."""
    try:
        return (ledger.pr_dir(repo, pr) / DIFF_FILE).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        path = ledger.pr_dir(repo, pr) / DIFF_FILE
        raise LedgerError(f"{path}: unreadable ({type(exc).__name__})", UNREADABLE) from None


def write_reviewed_diff(ledger: Ledger, repo: str, pr: int, diff: str) -> None:
    path = ledger.pr_dir(repo, pr) / DIFF_FILE
    ledger.ensure_dir(path.parent)
    ledger.atomic_write(path, diff)
