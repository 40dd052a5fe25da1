"""The openai backend under a hostile endpoint (issue 24): it runs no process, so there is
nothing to contain but its answer. An endpoint that echoes the key it was sent, in any of
the leak scan's forms, gets nothing posted, recorded or notified with the key in it; a
clean answer from the same endpoint is reviewed. The structural guarantee is that the
model never holds the key (kdev sends it in a header); this is the backstop."""

from __future__ import annotations

import base64
import codecs
import json
import uuid
from collections.abc import Callable

import httpx
import pytest

from tests.wrapper.reviewbench import REPO, Bench, openai_reviewer
from wrapper.errors import LedgerError
from wrapper.leakscan import find_leak

ENCODINGS: dict[str, Callable[[str], str]] = {
    "raw": lambda key: key,
    "base32": lambda key: base64.b32encode(key.encode()).decode(),
    "rot13": lambda key: codecs.encode(key, "rot13"),
    "decimal": lambda key: " ".join(str(b) for b in key.encode()),
    "halves": lambda key: f"{key[: len(key) // 2]} and later {key[len(key) // 2 :]}",
    "reversed-base64": lambda key: base64.b64encode(key[::-1].encode()).decode(),
}


def _endpoint(form: str | None, seen: list[str]) -> httpx.MockTransport:
    def answer(request: httpx.Request) -> httpx.Response:
        key = request.headers["authorization"].removeprefix("Bearer ")
        seen.append(key)
        leak = "" if form is None else f"Here is what I found: {ENCODINGS[form](key)}\n"
        content = f"{leak}Looks fine.\nVERDICT: APPROVE\n"
        return httpx.Response(200, json={"choices": [{"message": {"content": content}}]})

    return httpx.MockTransport(answer)


def _review(bench: Bench, form: str | None, key: str, seen: list[str]) -> object:
    pr = bench.sim.open_pr(REPO, f"f-{uuid.uuid4().hex[:6]}", {"a.py": "x = 1\n"})
    return bench.review(
        pr.number,
        config=bench.config(reviewer=openai_reviewer("https://llm.example/v1")),
        environ={"REVIEWER_KEY": key},
        reviewer_transport=_endpoint(form, seen),
    )


def _everything(bench: Bench) -> list[str]:
    texts = [p.read_text() for p in (bench.root / "reviews").rglob("*") if p.is_file()]
    texts += [json.dumps(note) for note in bench.notes()]
    return texts + [c.body for c in bench.sim.comments(REPO)]


@pytest.mark.parametrize("form", sorted(ENCODINGS))
def test_an_endpoint_that_echoes_the_key_gets_nothing_published(bench: Bench, form: str) -> None:
    key = f"sk-proj-{uuid.uuid4().hex}"
    seen: list[str] = []
    with pytest.raises(LedgerError) as raised:
        _review(bench, form, key, seen)
    assert seen == [key]  # the endpoint did get the key, in its header
    assert raised.value.reason in ("secret_in_output", "secret_leak")
    assert find_leak(_everything(bench), [key, bench.token]) is None
    [note] = bench.notes()
    assert note["subject"].endswith("FAILURE")


def test_a_clean_answer_from_the_same_endpoint_is_reviewed(bench: Bench) -> None:
    key = f"sk-proj-{uuid.uuid4().hex}"
    report = _review(bench, None, key, [])
    assert getattr(report, "outcome", None) is not None
    assert find_leak(_everything(bench), [key, bench.token]) is None
    assert any(p.name.startswith("patch-") for p in (bench.root / "reviews").rglob("*.md"))
