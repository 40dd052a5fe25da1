"""The review-integrity oracle (issue 10), shared by the model-based test and bench/legs.

Everything is recomputed independently of kdev, from the simulator's bare repository:
the patch-id of a head is ``git diff <base>...<head> | git patch-id --verbatim`` there.
(The base only gains commits, so the merge base of an old head with today's base tip is
the one it had when its event fired.)

- :func:`wrong_index_entries`: index entries ``head -> patch_id`` whose patch-id was not
  computed from that head;
- :func:`unseen_verdicts`: verdict files for a diff no reviewer leg saw (no leg started
  for a head whose diff it is);
- :func:`leg_counts`: reviewer legs per (PR, diff), from ``legs.jsonl``.
"""

from __future__ import annotations

import subprocess
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path

from wrapper.ledger.ledger import Ledger, parse_verdict

EPOCH = datetime(2000, 1, 1, tzinfo=UTC)


@lru_cache(maxsize=4096)
def patch_id_of(bare: Path, base: str, head: str) -> str | None:
    """The whitespace-significant patch-id of ``base...head`` in ``bare``; None if empty."""
    diff = subprocess.run(
        ["git", "diff", "--no-ext-diff", "--no-color", f"{base}...{head}", "--"],
        cwd=bare,
        capture_output=True,
        check=True,
    ).stdout
    if not diff.strip():
        return None
    out = subprocess.run(
        ["git", "patch-id", "--verbatim"], cwd=bare, input=diff, capture_output=True, check=True
    ).stdout.split()
    return out[0].decode() if out else None


def wrong_index_entries(ledger: Ledger, repo: str, prs: Iterable[int], bare: Path) -> list[str]:
    """``pr:head`` of every index entry whose patch-id is not the head's own."""
    wrong = []
    for pr in prs:
        for head, entry in ledger.read_index(repo, pr).items():
            if patch_id_of(bare, "main", head) != entry.patch_id:
                wrong.append(f"{pr}:{head}")
    return wrong


def leg_counts(ledger: Ledger, repo: str, bare: Path) -> Counter[tuple[int, str | None]]:
    """Reviewer legs started per (PR, independently computed diff)."""
    return Counter(
        (leg.pr, patch_id_of(bare, "main", leg.head_sha)) for leg in ledger.legs_since(repo, EPOCH)
    )


def unseen_verdicts(ledger: Ledger, repo: str, prs: Iterable[int], bare: Path) -> list[str]:
    """Verdict files whose diff no started leg of that PR had."""
    legs = leg_counts(ledger, repo, bare)
    unseen = []
    for pr in prs:
        pr_dir = ledger.pr_dir(repo, pr)
        for path in sorted(pr_dir.glob("patch-*.md")) if pr_dir.is_dir() else []:
            record = parse_verdict(path.read_text(encoding="utf-8"))
            own = patch_id_of(bare, "main", record.head_sha)
            if own != record.patch_id or legs[(pr, record.patch_id)] == 0:
                unseen.append(f"{pr}:{path.name}")
    return unseen
