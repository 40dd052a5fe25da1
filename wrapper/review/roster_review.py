"""Roster mode of ``kdev review-pr`` (``reviewer.roster: true``).

One round, many legs: the roster (:mod:`wrapper.review.roster`) is read from the BASE
branch's tree (git objects, never the PR's worktree), so a pull request cannot rewrite
the instructions it is reviewed with. Each applicable reviewer gets the standard prompt
with only its changed files' diff blocks, plus its instructions and context sections
before the closing verdict instruction. The legs run through the configured backend on
a thread pool of ``budgets.max_concurrent_legs_per_repo`` workers. Under the size policy
(D95, :mod:`wrapper.review.roster_chunks`, planned before the budget gate) a reviewer over
the limit is one leg per chunk, and the gate records every reviewer leg at once; unsized,
the round's first leg was recorded by the budget gate and every further reviewer leg is
recorded (``Ledger.record_leg_start``) when it starts. Each leg counts against the
budget; the validator's legs are recorded as they start.

The merged verdict is REQUEST_CHANGES when any reviewer's output has a blocking finding
(:func:`wrapper.review.roster.has_blocking_finding`: a P1/P2 line or its own ``VERDICT:
REQUEST_CHANGES``), else APPROVE. With the independent validator, a finding it found
INVALID blocks nothing (an UNCERTAIN one still blocks, fail closed): its line is marked
withdrawn in the body (so it no longer reads as a finding), and a reviewer whose every
P1/P2 finding was INVALID has its own ``VERDICT: REQUEST_CHANGES`` set aside with them
(docs/decisions.md D57). A reviewer that asks for changes without any P1/P2 line still
blocks. The body has one ``##`` section per reviewer and ends with the merged
``VERDICT:`` line. Any failed leg fails the round (the first failure in roster order is
raised, after every leg has finished). The result carries every reviewer's findings
(:mod:`wrapper.review.findings`), which :mod:`wrapper.review.leg` posts once the verdict
is written.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from wrapper.config import CommandReviewer, OpenAIReviewer
from wrapper.errors import ConfigError
from wrapper.git import Git
from wrapper.ledger.ledger import Ledger
from wrapper.review.findings import Finding, parse_findings, standing_output
from wrapper.review.prompt import PromptInput
from wrapper.review.reviewer import ReviewResult, run_reviewer, run_reviewer_text
from wrapper.review.roster import (
    ROSTER_FILE,
    Roster,
    RosterReviewer,
    build_roster,
)
from wrapper.review.roster_chunks import RosterRound, unsized_round
from wrapper.review.roster_diff import has_blocking_finding, split_diff
from wrapper.review.sandbox import Sandbox
from wrapper.review.validator import disposition, validate
from wrapper.usage import UsageMeter


def load_base_roster(git: Git, base_ref: str, diff: str) -> tuple[Roster, dict[str, str]]:
    """The roster of the change: roster files from ``base_ref``'s tree, changed files
    from ``diff``; returns it and the diff split per file."""
    blocks = split_diff(diff)
    roster = build_roster(git.files_named(base_ref, ROSTER_FILE), blocks)
    return roster, blocks


def merge_outputs(
    roster: Roster,
    results: Iterable[tuple[RosterReviewer, str]],
    findings: Sequence[Finding] = (),
) -> ReviewResult:
    """One verdict from the reviewers' outputs and the validator's dispositions of their
    ``findings`` (see the module doc); ``model`` is left empty for the caller to fill."""
    sections: list[str] = [roster.summary]
    verdicts: list[str] = []
    for reviewer, raw in results:
        output = standing_output(raw, [f for f in findings if f.agent == reviewer.name])
        verdict = "REQUEST_CHANGES" if has_blocking_finding(output) else "APPROVE"
        verdicts.append(verdict)
        scope = reviewer.scope or "."
        sections += [
            "",
            f"## {reviewer.name}: {verdict}",
            "",
            f"{reviewer.kind} reviewer, scope {scope}, files: {', '.join(reviewer.changed_files)}",
            "",
            output.strip(),
        ]
    verdict = "REQUEST_CHANGES" if "REQUEST_CHANGES" in verdicts else "APPROVE"
    body = "\n".join([*sections, "", f"VERDICT: {verdict}"])
    return ReviewResult(verdict=verdict, body=body, model="", verdicts=tuple(verdicts))


def run_roster_review(
    *,
    backend: CommandReviewer | OpenAIReviewer,
    roster: Roster,
    blocks: Mapping[str, str],
    data: PromptInput,
    worktree: Path,
    ledger: Ledger,
    max_parallel: int,
    environ: Mapping[str, str],
    extra_env_names: Iterable[str] = (),
    transport: httpx.BaseTransport | None = None,
    template_path: str | None = None,
    sandbox: Sandbox | None = None,
    sized: RosterRound | None = None,
    meter: UsageMeter | None = None,
) -> ReviewResult:
    """Run one leg per roster reviewer (the first leg already recorded by the caller)
    and merge them; with ``sized`` (D95), its legs (a reviewer over the limit one per
    chunk, merged into its one output), every one recorded by the caller. Raises
    ConfigError ``empty_roster`` when no reviewer applies, and whatever a failed leg
    raised."""
    if not roster.reviewers:
        raise ConfigError("roster mode: no reviewer applies to the changed files", "empty_roster")
    planned = sized if sized is not None else unsized_round(roster, blocks)
    keys = planned.leg_keys()
    env_names = list(extra_env_names)

    def leg(index: int) -> str:
        if index > 0 and sized is None:
            ledger.record_leg_start(data.repo, data.pr, data.head_sha)
        result = run_reviewer(
            backend,
            planned.prompt(keys[index], data, template_path),
            worktree,
            environ,
            extra_env_names=env_names,
            transport=transport,
            sandbox=sandbox,
            meter=meter,
        )
        return result.body

    workers = max(1, min(max_parallel, len(keys)))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kdev-roster") as pool:
        futures = [pool.submit(leg, index) for index in range(len(keys))]
        errors = [f.exception() for f in futures]
    for error in errors:
        if error is not None:
            raise error
    raw = [f.result() for f in futures]
    outputs = planned.outputs(raw)
    findings = tuple(
        finding
        for reviewer, output in zip(roster.reviewers, outputs, strict=True)
        for finding in parse_findings(reviewer.name, output, reviewer.changed_files)
    )
    validator = roster.config.independent_validator
    if validator.enabled:

        def validation_leg(prompt: str) -> str:
            ledger.record_leg_start(data.repo, data.pr, data.head_sha)
            return run_reviewer_text(
                backend, prompt, worktree, environ, extra_env_names=env_names,
                transport=transport, sandbox=sandbox, meter=meter,
            )  # fmt: skip

        checked = validate(findings, validator, planned.diff_for(raw), validation_leg)
        findings = tuple(
            dataclasses.replace(f, action=disposition(f, validator.uncertain_action))
            for f in checked
        )
    merged = merge_outputs(roster, zip(roster.reviewers, outputs, strict=True), findings)
    return dataclasses.replace(merged, model=backend.model, findings=findings)
