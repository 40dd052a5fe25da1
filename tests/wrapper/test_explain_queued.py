"""`kdev explain` names an event waiting for its next attempt (D58): the verdict line
and the timeline say which attempt comes next and when, instead of "no outcome yet"."""

from __future__ import annotations

from datetime import UTC, datetime

from engine.api import Decision, PollSchedule, PrRun, QueuedAttempt
from wrapper.explain import EngineSide, _decision_line, build_timeline

AT = datetime(2026, 11, 30, 13, 0, tzinfo=UTC)
HEAD = "1a2b3c4" + "0" * 33


def side(queued: tuple[QueuedAttempt, ...]) -> EngineSide:
    decision = Decision("review-prs", 7, HEAD, AT, "fired", None, 17, AT)
    run = PrRun(41, "review-prs", "cancelled", "engine_lost", None, AT, AT, 7)
    return EngineSide(
        (PollSchedule("review-prs", "octo/widgets", None),), (decision,), (run,), queued
    )


def test_a_queued_attempt_is_the_verdict_and_a_timeline_line() -> None:
    wait = datetime(2026, 11, 30, 14, 2, tzinfo=UTC)
    queued = QueuedAttempt("review-prs", 17, 4, HEAD, wait)
    engine = side((queued,))
    kind, line = _decision_line("head 1a2b3c4", engine.decisions[0], engine, "")
    assert kind == "queued"
    assert line == (
        "head 1a2b3c4: fired as run 17; queued for attempt 4 of fire 17 not before "
        "2026-11-30 14:02Z"
    )
    [entry] = [t for t in build_timeline(engine, [], [], AT) if "queued" in t.text]
    assert entry.at == wait


def test_a_queued_attempt_of_another_head_changes_nothing() -> None:
    other = QueuedAttempt("review-prs", 9, 2, "9f8e7d6" + "0" * 33, None)
    engine = side((other,))
    kind, line = _decision_line("head 1a2b3c4", engine.decisions[0], engine, "")
    assert kind == "fired" and line.endswith("kdev recorded no outcome yet")


def test_the_latest_attempt_speaks_for_the_fire() -> None:
    # Fire 17 (its first run) was lost; attempt 3 (run 52) is running now.
    engine = side(())
    engine.runs = (
        PrRun(17, "review-prs", "cancelled", "engine_lost", None, AT, AT, 7),
        PrRun(41, "review-prs", "cancelled", "engine_lost", None, AT, AT, 7, 2, 17),
        PrRun(52, "review-prs", "running", None, None, AT, None, 7, 3, 17),
    )
    kind, line = _decision_line("head 1a2b3c4", engine.decisions[0], engine, "")
    assert (kind, line) == (
        "fired",
        "head 1a2b3c4: fired as run 17 (attempt 3 is run 52, running); "
        "kdev recorded no outcome yet",
    )


def test_a_cancelled_fire_with_nothing_queued_is_named_given_up() -> None:
    # on_engine_lost: drop, or the 20th loss (D58): nothing will fire it again.
    engine = side(())
    engine.runs = (PrRun(17, "review-prs", "cancelled", "engine_lost", None, AT, AT, 7),)
    kind, line = _decision_line("head 1a2b3c4", engine.decisions[0], engine, "")
    assert kind == "given_up"
    assert line.startswith("head 1a2b3c4: fired as run 17 (cancelled, engine_lost); not offered")
