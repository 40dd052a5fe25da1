"""Issue 10 item 10: a request already waiting in the pacer re-checks the hold a
rate-limit answer set meanwhile, before it is sent."""

from __future__ import annotations

from datetime import timedelta

import pytest

from engine.errors import LiError
from engine.github import RequestPacer
from tests.engine.test_github_client import FakeTime


class HoldDuringSleep(FakeTime):
    """The first sleep is interrupted (in effect) by another thread's 403 that holds the
    token for ``hold`` seconds."""

    def __init__(self, hold: float) -> None:
        super().__init__()
        self.hold = hold
        self.pacer_ref: RequestPacer | None = None

    def sleep(self, seconds: float) -> None:
        super().sleep(seconds)
        if len(self.slept) == 1 and self.pacer_ref is not None:
            self.pacer_ref.defer_until(self.now() + timedelta(seconds=self.hold), "rate_limited")


def _waiting_pacer(hold: float) -> tuple[RequestPacer, HoldDuringSleep]:
    time = HoldDuringSleep(hold)
    pacer = time.pacer(60)  # one request a second: the second caller waits
    time.pacer_ref = pacer
    pacer.acquire()  # the first request goes at once
    return pacer, time


def test_a_waiting_request_raises_when_a_long_hold_was_set_while_it_slept() -> None:
    pacer, _ = _waiting_pacer(hold=600)
    with pytest.raises(LiError) as caught:
        pacer.acquire()
    assert caught.value.reason == "rate_limited"


def test_a_waiting_request_waits_out_a_short_hold_set_while_it_slept() -> None:
    pacer, time = _waiting_pacer(hold=3)
    waited = pacer.acquire()
    assert time.slept[0] == pytest.approx(1.0)
    assert waited == pytest.approx(4.0)  # its slot, then the rest of the hold
