"""Prompt tokens and their cost per PR lifecycle, four policies side by side (issues 28, 31; D94).

``python -m bench --only lifecycle`` replays the merged PRs of
``bench/data/lifecycle_trace.json.gz`` (webpack/webpack, every PR of 2023 merged with a
merge commit; source and method in bench/data/README.md) push by push. For each push it
builds the prompt kdev would build and counts it with kdev's documented estimate
(:func:`wrapper.review.sizing.estimate_tokens`):

- **(a)** a full review at every push: :func:`wrapper.review.prompt.render_prompt` over
  the whole diff (PR-Agent's and claude-code-action's default);
- **(b)** patch-id dedup (D3): ``Git.patch_id`` of the diff, as
  :func:`wrapper.review.patch_id.compute_patch_id` computes it without exclusions; a
  patch-id the PR already has a verdict for costs nothing;
- **(c)** dedup plus exclusions (D87) with their defaults: kdev's
  :func:`~wrapper.review.exclusions.decide_all`, the patch-id of
  :func:`~wrapper.review.exclusion_diff.exclusion_patch_id` and the prompt of
  :func:`~wrapper.review.exclusion_diff.reviewed_diff` listing the excluded paths; a push
  with nothing reviewed is ``skipped_all_excluded`` (no leg);
- **(d)** (c) plus incremental rounds, full and delta modes: the first reviewed round as
  (c), each later new patch-id through :func:`_incremental_prompt` (kdev's
  ``build_incremental_prompt``: what changed since the reviewed diff, the earlier
  findings, and the whole diff or, in delta mode, only the changed files). Where this
  kdev has no such builder, (d) is reported "not available"; no number is made up.

A prompt over the reviewer's limit is planned into chunks as
:func:`wrapper.review.chunked_leg.size_round` plans them (one leg per chunk, each counted);
more than ``size_policy.max_chunks`` chunks is the ``diff_too_large`` deferral (no leg).
The cost is the prompt tokens at :data:`PRICE_PER_MTOK` (input only: no reviewer runs
here, so there are no output tokens to price).
"""

from __future__ import annotations

import importlib
import statistics
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from bench.lifecycle_data import Lifecycle, Push, load
from wrapper.config_sizing import SizePolicy
from wrapper.git import Git
from wrapper.review.chunking import ChunkRefusal, plan_chunks
from wrapper.review.exclusion_diff import exclusion_patch_id, reviewed_diff
from wrapper.review.exclusions import Decision, decide_all
from wrapper.review.prompt import (
    PART_NOTE,
    VERDICT_INSTRUCTION,
    PromptInput,
    part_note,
    render_prompt,
)
from wrapper.review.sizing import estimate_tokens

REPO = "webpack/webpack"
BASE = "main"
# The one documented price (issue 31): Claude Sonnet 5.5, input, per million tokens, from
# Anthropic's model page (platform.claude.com/docs/en/models/sonnet-5-5/overview: $2 / MTok
# input, $10 / MTok output). Its limit is the claude family's default (D89).
MODEL = "claude-sonnet-5-5"
PRICE_PER_MTOK = 2.00
GOAL_DELTA_SHARE = 0.30
POLICIES = ("a", "b", "c", "d-full", "d-delta")
LABELS = {
    "a": "(a) full review every push",
    "b": "(b) patch-id dedup (D3)",
    "c": "(c) dedup + exclusions (D87)",
    "d-full": "(d) + incremental, full mode",
    "d-delta": "(d) + incremental, delta mode",
}


class IncrementalUnavailable(Exception):
    """kdev has no incremental prompt builder here: (d) is not measured."""


BUILDER = "wrapper.review.incremental_prompt"  # issue 28's builder (D91, D92)
EARLIER = "wrapper.review.findings_earlier"


def _incremental_prompt(
    data: PromptInput, previous: PromptInput, mode: str
) -> tuple[PromptInput, str]:
    """The prompt input and closing of an incremental round in ``mode`` (``full`` or
    ``delta``) after the round that reviewed ``previous``: kdev's own
    ``build_incremental_prompt`` (parts 1 and 2 before the closing, with the reviewer's
    instruction on earlier findings; in delta mode only the changed files' diff), with no
    earlier findings (no reviewer runs here, so part 2 is empty). Raises
    :class:`IncrementalUnavailable` when this kdev has no such builder: the report then
    says (d) is not available, never a number."""
    try:
        builder = importlib.import_module(BUILDER)
        earlier = importlib.import_module(EARLIER)
    except ImportError:
        raise IncrementalUnavailable(
            f"kdev has no incremental prompt builder yet ({BUILDER}, {mode} mode of issue 28)"
        ) from None
    built = builder.build_incremental_prompt(previous.diff, data.diff, (), mode)
    closing = f"{built.section}{earlier.EARLIER_INSTRUCTION}\n\n{VERDICT_INSTRUCTION}"
    return replace(data, diff=built.diff), closing


@dataclass
class Tally:
    """One policy's count over one lifecycle (or all of them)."""

    tokens: int = 0
    legs: int = 0
    rounds: int = 0
    # The whole prompts of rounds kdev refused or deferred (no leg, not in ``tokens``).
    uncounted: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    unavailable: str | None = None

    def note(self, outcome: str) -> None:
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1

    def add(self, other: Tally) -> None:
        self.tokens += other.tokens
        self.legs += other.legs
        self.rounds += other.rounds
        self.uncounted += other.uncounted
        for key, value in other.outcomes.items():
            self.outcomes[key] = self.outcomes.get(key, 0) + value
        self.unavailable = self.unavailable or other.unavailable


def prompt_cost(
    data: PromptInput, policy: SizePolicy, closing: str = VERDICT_INSTRUCTION
) -> tuple[int, int, str]:
    """(tokens, legs, outcome) of the round kdev runs on ``data``: one prompt, or one per
    chunk as :func:`~wrapper.review.chunked_leg.size_round` plans it; a refused plan or a
    deferral runs no leg (0 legs, and the whole prompt's tokens, which no leg is sent)."""
    limit = policy.limit(MODEL)
    whole = estimate_tokens(render_prompt(data, None, closing))
    bare = render_prompt(replace(data, diff=""), None, closing)
    overhead = estimate_tokens(bare) + estimate_tokens(PART_NOTE) + 16
    plan = plan_chunks(data.diff, limit.tokens - overhead)
    if isinstance(plan, ChunkRefusal):
        return whole, 0, f"refused {plan.reason}"
    if len(plan.chunks) <= 1:
        return whole, 1, "reviewed"
    if len(plan.chunks) > policy.max_chunks:
        return whole, 0, "deferred diff_too_large"
    tokens = 0
    for chunk in plan.chunks:
        part = replace(data, diff=chunk.render(data.diff))
        note = part_note(chunk.index, len(plan.chunks), chunk.other_paths) + closing
        tokens += estimate_tokens(render_prompt(part, None, note))
    return tokens, len(plan.chunks), "chunked"


def _input(life: Lifecycle, push: Push, diff: str, excluded: tuple[Decision, ...]) -> PromptInput:
    return PromptInput(
        repo=REPO,
        pr=life.number,
        title=life.title,
        body="",
        author=life.author,
        base=BASE,
        head_sha=push.head,
        diff=diff,
        pr_url=f"https://github.com/{REPO}/pull/{life.number}",
        excluded=excluded,
    )


@dataclass
class Replay:
    """One lifecycle replayed under every policy, and the dedup check against the real
    patch-ids (``agree``/``pushes``)."""

    number: int
    pushes: int
    tallies: dict[str, Tally]
    agree: int = 0


def _charge(
    tally: Tally, data: PromptInput, size: SizePolicy, closing: str = VERDICT_INSTRUCTION
) -> bool:
    tokens, legs, outcome = prompt_cost(data, size, closing)
    if not legs:  # refused or deferred: no leg, the whole prompt's size kept apart
        tally.uncounted += tokens
        tokens = 0
    tally.tokens += tokens
    tally.legs += legs
    tally.rounds += 1 if legs else 0
    tally.note(outcome)
    return legs > 0


def _first(patch_id: str | None, met: set[str]) -> bool | None:
    """Whether ``patch_id`` is met for the first time (and records it); None for none."""
    if patch_id is None:
        return None
    new = patch_id not in met
    met.add(patch_id)
    return new


def replay(life: Lifecycle, git: Git, size: SizePolicy) -> Replay:
    tallies = {name: Tally() for name in POLICIES}
    seen_b: set[str] = set()
    seen_c: set[str] = set()
    # Every patch-id met so far, rebuilt and real, charged or not: the agreement check.
    rebuilt_b: set[str] = set()
    rebuilt_c: set[str] = set()
    real_b: set[str] = set()
    real_c: set[str] = set()
    agree = 0
    previous: PromptInput | None = None
    for push in life.pushes:
        text = push.diff.decode("utf-8", "replace")
        pid = git.patch_id(push.diff)
        decisions = decide_all(push.facts)
        pid_c = exclusion_patch_id(push.diff, decisions, git.patch_id) if push.diff else None
        new_b, new_c = (
            pid is not None and pid not in seen_b,
            pid_c is not None and pid_c not in seen_c,
        )
        agree += int(
            _first(pid, rebuilt_b) == _first(push.real_patch_id, real_b)
            and _first(pid_c, rebuilt_c) == _first(push.real_patch_id_excl, real_c)
        )
        if pid is None:
            for tally in tallies.values():
                tally.note("skipped_empty_diff")
            continue
        _charge(tallies["a"], _input(life, push, text, ()), size)
        if new_b:
            if _charge(tallies["b"], _input(life, push, text, ()), size):
                seen_b.add(pid)
        else:
            tallies["b"].note("carried_forward")
        previous = _policy_c_d(life, push, decisions, pid_c, new_c, seen_c, tallies, size, previous)
    return Replay(life.number, len(life.pushes), tallies, agree)


def _policy_c_d(
    life: Lifecycle,
    push: Push,
    decisions: tuple[Decision, ...],
    pid_c: str | None,
    new_c: bool,
    seen_c: set[str],
    tallies: dict[str, Tally],
    size: SizePolicy,
    previous: PromptInput | None,
) -> PromptInput | None:
    """(c), then (d) on the same decision: a new reviewed round is (c)'s prompt the first
    time and an incremental prompt after a reviewed round."""
    names = ("c", "d-full", "d-delta")
    if pid_c is None or not new_c:
        outcome = "skipped_all_excluded" if pid_c is None else "carried_forward"
        for name in names:
            tallies[name].note(outcome)
        return previous
    reviewed = reviewed_diff(push.diff, decisions)
    if not reviewed:
        for name in names:
            tallies[name].note("skipped_all_excluded")
        return previous
    excluded = tuple(d for d in decisions if not d.reviewed)
    data = _input(life, push, reviewed.decode("utf-8", "replace"), excluded)
    if not _charge(tallies["c"], data, size):
        return previous  # refused or deferred: nothing was reviewed
    seen_c.add(pid_c)
    for name, mode in (("d-full", "full"), ("d-delta", "delta")):
        if previous is None:
            _charge(tallies[name], data, size)
            continue
        try:
            sent, closing = _incremental_prompt(data, previous, mode)
        except IncrementalUnavailable as exc:
            tallies[name].unavailable = str(exc)
            continue
        _charge(tallies[name], sent, size, closing)
    return data


def measure(limit: int | None, workdir: Path) -> tuple[dict[str, object], list[Replay], float]:
    """Every lifecycle of the trace (the first ``limit``) replayed under every policy."""
    began = time.perf_counter()
    meta, lifecycles = load(limit=limit)
    repo_dir = Path(tempfile.mkdtemp(prefix="lifecycle-", dir=workdir))
    size = SizePolicy()
    git = Git(repo_dir)
    return meta, [replay(life, git, size) for life in lifecycles], time.perf_counter() - began


def _cost(tokens: int) -> str:
    return f"${tokens * PRICE_PER_MTOK / 1_000_000:,.2f}"


def _row(name: str, tally: Tally, base: Tally) -> str:
    if tally.unavailable:
        return f"  {LABELS[name]:<32} not available: {tally.unavailable}"
    ratio = tally.tokens / base.tokens if base.tokens else 0.0
    return (
        f"  {LABELS[name]:<32} {tally.legs:>5} {tally.tokens:>12,} {ratio:>7.3f} "
        f"{_cost(tally.tokens):>10}"
    )


def report(meta: dict[str, object], replays: list[Replay], seconds: float) -> list[str]:
    total = {name: Tally() for name in POLICIES}
    for item in replays:
        for name in POLICIES:
            total[name].add(item.tallies[name])
    pushes = sum(r.pushes for r in replays)
    agree = sum(r.agree for r in replays)
    size = SizePolicy()
    lines = [
        f"prompt tokens per PR lifecycle ({REPO}, {len(replays)} merged PRs "
        f"{meta.get('since')}..{meta.get('until')}, {pushes} pushes; {seconds:.1f} s)",
        f"  reviewer {MODEL}: limit {size.limit(MODEL).tokens:,} tokens, max_chunks "
        f"{size.max_chunks}; price ${PRICE_PER_MTOK:.2f} per million input tokens",
        f"  rebuilt diffs dedup as the real ones (D3 and D87 patch-ids): {agree}/{pushes} pushes",
        f"  {'policy':<32} {'legs':>5} {'tokens':>12} {'vs (a)':>7} {'cost':>10}",
    ]
    lines += [_row(name, total[name], total["a"]) for name in POLICIES]
    lines += _outcomes(total)
    delta = total["d-delta"]
    if delta.unavailable:
        lines.append("  goal (d) delta <= 30% of (a): not measured, (d) is not available")
    else:
        share = delta.tokens / total["a"].tokens if total["a"].tokens else 0.0
        met = "met" if share <= GOAL_DELTA_SHARE else "not met"
        lines.append(f"  goal (d) delta <= 30% of (a): {share:.1%}, {met}")
    lines += _per_lifecycle(replays)
    return lines


def _outcomes(total: dict[str, Tally]) -> list[str]:
    lines = ["  rounds by outcome:"]
    for name in POLICIES:
        if total[name].unavailable:
            continue
        parts = ", ".join(f"{k} {v}" for k, v in sorted(total[name].outcomes.items()))
        lines.append(f"    {name}: {parts}")
        if total[name].uncounted:
            lines.append(
                f"       (no leg for the refused or deferred rounds: their whole prompts, "
                f"{total[name].uncounted:,} tokens, are not counted above)"
            )
    return lines


def _per_lifecycle(replays: list[Replay]) -> list[str]:
    multi = [r for r in replays if r.pushes > 1]

    def values(name: str) -> list[int]:
        return [r.tallies[name].tokens for r in replays]

    lines = [
        "  per lifecycle, tokens: median (a) "
        f"{statistics.median(values('a')):,.0f}, (b) {statistics.median(values('b')):,.0f}, "
        f"(c) {statistics.median(values('c')):,.0f}",
        f"  lifecycles of 2+ pushes ({len(multi)}):",
        f"    {'PR':>6} {'pushes':>6} {'(a)':>9} {'(b)':>9} {'(c)':>9} {'(d)full':>9} "
        f"{'(d)delta':>9} {'(c)/(a)':>7} {'delta/(a)':>9}",
    ]
    for item in multi:
        a, b, c, full, delta = (item.tallies[n].tokens for n in POLICIES)
        shown = [f"{x:>9,}" for x in (a, b, c)]
        for name, value in (("d-full", full), ("d-delta", delta)):
            shown.append(f"{'n/a':>9}" if item.tallies[name].unavailable else f"{value:>9,}")
        share = f"{c / a:>7.3f}" if a else f"{'-':>7}"
        shared = "n/a" if item.tallies["d-delta"].unavailable or not a else f"{delta / a:.3f}"
        lines.append(f"    {item.number:>6} {item.pushes:>6} {' '.join(shown)} {share} {shared:>9}")
    return lines
