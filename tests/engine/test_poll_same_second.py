"""Issue 10 item 2: the occurrence key of a pull request event includes its head SHA.

GitHub stamps ``updated_at`` to the second, so the key ``(pr, updated_at)`` alone lost a
push landing in the same second as an earlier event of the same pull request.
"""

from __future__ import annotations

from engine.run.daemon import Engine
from engine.store.models import ScheduleRun
from tests.engine.test_poll_engine import REPO, World, world  # noqa: F401


def _passes(w: World, steps: list[object]) -> list[ScheduleRun]:
    """Run one engine pass after each callable in ``steps`` (GitHub's clock frozen)."""
    engine = Engine(w.settings(), w.store)
    engine.start()
    runs: list[ScheduleRun] = []
    try:
        for step in steps:
            if callable(step):
                step()
            w.clock.advance(61)
            runs.extend(engine.run_once())
    finally:
        engine.close()
    return runs


def _fired(runs: list[ScheduleRun]) -> list[tuple[str, str]]:
    return [(r.trigger_context["updated_at"], r.trigger_context["head_sha"]) for r in runs]


def test_a_push_in_the_same_second_as_the_opening_fires_for_the_new_head(world: World) -> None:  # noqa: F811
    world.add()
    world.clock.advance(61)
    world.sim.set_time(world.clock())
    pr = world.sim.open_pr(REPO, "feature", {"a.py": "1\n"})
    opened = pr.head_sha
    heads: list[str] = []
    runs = _passes(
        world, [None, lambda: heads.append(world.sim.push(REPO, pr.number, {"a.py": "2\n"})), None]
    )
    [(at_1, sha_1), (at_2, sha_2)] = _fired(runs)
    assert at_1 == at_2  # the same second
    assert (sha_1, sha_2) == (opened, heads[0])


def test_a_label_then_a_push_in_one_second_fire_both(world: World) -> None:  # noqa: F811
    world.add()
    world.clock.advance(1)
    pr = world.sim.open_pr(REPO, "feature", {"a.py": "1\n"})
    opened = pr.head_sha
    heads: list[str] = []

    def freeze() -> None:
        world.sim.set_time(world.clock())
        world.sim.label(REPO, pr.number, "ready")

    runs = _passes(
        world,
        [None, freeze, lambda: heads.append(world.sim.push(REPO, pr.number, {"a.py": "2\n"}))],
    )
    fired = _fired(runs)
    assert len(fired) == 3
    # The label is a new updated_at with the same head: it fires (documented choice).
    assert fired[1][1] == opened and fired[0][0] != fired[1][0]
    assert fired[2] == (fired[1][0], heads[0])


def test_a_push_then_a_label_in_one_second_fire_the_push_once(world: World) -> None:  # noqa: F811
    world.add()
    world.clock.advance(1)
    pr = world.sim.open_pr(REPO, "feature", {"a.py": "1\n"})
    opened = pr.head_sha
    heads: list[str] = []

    def freeze_and_push() -> None:
        world.sim.set_time(world.clock())
        heads.append(world.sim.push(REPO, pr.number, {"a.py": "2\n"}))

    runs = _passes(
        world, [None, freeze_and_push, lambda: world.sim.label(REPO, pr.number, "ready"), None]
    )
    fired = _fired(runs)
    # The label in the push's second changes neither updated_at nor the head: the same
    # event, already fired; nothing new to review.
    assert [sha for _, sha in fired] == [opened, heads[0]]
