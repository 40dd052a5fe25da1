"""Leak detection survives encoding: every dress of a secret is found, ordinary text is not."""

from __future__ import annotations

import base64
import string
import urllib.parse
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wrapper.config import KdevConfig
from wrapper.errors import LedgerError
from wrapper.leakscan import find_leak, known_secrets, refuse_leak, webhook_secrets

SECRET_CHARS = string.ascii_letters + string.digits + "_-"


def b64(value: str, prefix: str) -> str:
    # The prefix shifts the secret's byte alignment inside the encoded run.
    return base64.b64encode((prefix + value).encode()).decode()


def wrapped_b64(value: str, prefix: str) -> str:
    text = b64(value, prefix)
    return "\n".join(text[i : i + 16] for i in range(0, len(text), 16))


ENCODINGS: dict[str, Callable[[str, str], str]] = {
    "raw": lambda v, p: p + v,
    "base64": b64,
    "base64-wrapped": wrapped_b64,
    "base64-urlsafe": lambda v, p: base64.urlsafe_b64encode((p + v).encode()).decode(),
    "hex-lower": lambda v, p: (p + v).encode().hex(),
    "hex-upper": lambda v, p: (p + v).encode().hex().upper(),
    "hex-escaped": lambda v, p: "".join(f"\\x{b:02x}" for b in (p + v).encode()),
    "hex-colons": lambda v, p: ":".join(f"{b:02X}" for b in (p + v).encode()),
    "url-partial": lambda v, p: urllib.parse.quote(p + v, safe=""),
    "url-full": lambda v, p: "".join(f"%{b:02X}" for b in (p + v).encode()),
    "reversed": lambda v, p: (p + v)[::-1],
    "letter-spaced": lambda v, p: " ".join(p + v),
    "dotted": lambda v, p: ".".join(p + v),
    "upper-dashed": lambda v, p: "-".join((p + v).upper()),
    "reversed-spaced": lambda v, p: " ".join((p + v)[::-1]),
}

secrets_ = st.text(alphabet=SECRET_CHARS, min_size=16, max_size=64).filter(
    lambda s: sum(c.isalnum() for c in s) >= 12
)
prefixes = st.sampled_from(["", "a", "ab", "token="])
noise = st.text(alphabet=string.printable, max_size=40)


@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
@settings(max_examples=60, deadline=None)
@given(secret=secrets_, prefix=prefixes, before=noise, after=noise)
def test_every_encoding_of_a_secret_is_found(
    encoding: str, secret: str, prefix: str, before: str, after: str
) -> None:
    text = f"{before} {ENCODINGS[encoding](secret, prefix)} {after}"
    assert find_leak(text, [secret]) is not None


@settings(max_examples=200, deadline=None)
@given(secret=secrets_, text=st.text(alphabet=string.ascii_lowercase + " .,\n", max_size=400))
def test_prose_without_the_secret_is_clean(secret: str, text: str) -> None:
    # Lowercase prose cannot hold a mixed-alphabet secret of 12+ letters and digits by
    # chance; a hit here would be a false positive of the reduction rules.
    if any(c.isdigit() for c in secret):
        assert find_leak(text, [secret]) is None


def test_a_real_review_and_short_values_are_clean() -> None:
    review = (
        "The change to `app.py` looks fine; commit 3f9a8b1c2d4e5f60718293a4b5c6d7e8f9a0b1c2\n"
        "has no tests. VERDICT: REQUEST_CHANGES\n"
    )
    assert find_leak(review, ["ghp_0123456789abcdefABCDEF0123456789abcd"]) is None
    assert find_leak("short 1234567", ["1234567"]) is None  # below the minimum: ignored
    assert find_leak(review, []) is None


def test_the_form_is_named_and_the_refusal_carries_no_secret() -> None:
    secret = "ghp_S3cretValue0123456789"
    assert find_leak(f"x {secret} y", [secret]) == "raw"
    assert find_leak(b64(secret, "a"), [secret]) == "base64"
    with pytest.raises(LedgerError) as caught:
        refuse_leak(["fine", " ".join(secret)], [secret], "the review comment")
    assert caught.value.reason == "secret_leak"
    assert secret not in str(caught.value) and " ".join(secret) not in str(caught.value)
    with pytest.raises(LedgerError) as raw:
        refuse_leak(secret, [secret], "the verdict")
    assert raw.value.reason == "secret_in_output"


def test_known_secrets_are_token_secret_env_webhooks_and_api_keys() -> None:
    hook = "https://hooks.example/services/T000/B000/XXXXXXXXXXXXXXXX"
    config = KdevConfig.model_validate(
        {
            "reviewer": {
                "backend": "command",
                "argv": ["claude"],
                "env_passthrough": ["ANTHROPIC_API_KEY", "REVIEWER_MODEL_DIR"],
            },
            "reviewer_env": ["PYTHONPATH", "EXTRA_TOKEN"],
            "notify": [{"type": "webhook", "url": hook}],
        }
    )
    environ = {
        "GITHUB_TOKEN": "ghs_tokentokentoken",
        "OPENAI_API_KEY": "sk-openai-123456",
        "ANTHROPIC_API_KEY": "sk-ant-abcdefgh",
        "EXTRA_TOKEN": "extra-token-value",
        "REVIEWER_MODEL_DIR": "/models/big-model-dir",
        "PYTHONPATH": "/opt/some/path",
    }
    found = known_secrets(config, environ)
    assert set(found) == {
        "ghs_tokentokentoken",
        "sk-openai-123456",
        "sk-ant-abcdefgh",
        "extra-token-value",
        *webhook_secrets(hook),
    }
    assert "/services/T000/B000/XXXXXXXXXXXXXXXX" in found
