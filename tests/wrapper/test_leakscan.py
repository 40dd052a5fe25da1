"""Leak detection survives encoding: every dress of a secret is found, ordinary text is not."""

from __future__ import annotations

import base64
import codecs
import json
import random
import string
import subprocess
import urllib.parse
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wrapper.config import KdevConfig
from wrapper.errors import LedgerError
from wrapper.leakscan import find_leak, known_secrets, refuse_leak, webhook_secrets

SECRET_CHARS = string.ascii_letters + string.digits + "_-"
ROOT = Path(__file__).resolve().parents[2]
RNG = random.Random(24)  # unrelated data, the same in every run


def caesar(text: str, shift: int) -> str:
    low, up = string.ascii_lowercase, string.ascii_uppercase
    table = str.maketrans(low + up, low[shift:] + low[:shift] + up[shift:] + up[:shift])
    return text.translate(table)


def b32(value: str, prefix: str) -> str:
    return base64.b32encode((prefix + value).encode()).decode()


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
    "rot13": lambda v, p: codecs.encode(p + v, "rot13"),
    "caesar-3": lambda v, p: caesar(p + v, 3),
    "caesar-25-spaced": lambda v, p: " ".join(caesar(p + v, 25)),
    "base32": b32,
    "base32-lower-unpadded": lambda v, p: b32(v, p).lower().rstrip("="),
    "base32-wrapped": lambda v, p: "\n".join(b32(v, p)[i : i + 20] for i in range(0, 200, 20)),
    "decimal-spaced": lambda v, p: " ".join(str(b) for b in (p + v).encode()),
    "decimal-commas": lambda v, p: ", ".join(str(b) for b in (p + v).encode()),
    "octal-escaped": lambda v, p: "".join(f"\\{b:03o}" for b in (p + v).encode()),
    "html-decimal": lambda v, p: "".join(f"&#{b};" for b in (p + v).encode()),
    "html-hex": lambda v, p: "".join(f"&#x{b:X};" for b in (p + v).encode()),
    "unicode-escaped": lambda v, p: "".join(f"\\u{ord(c):04x}" for c in p + v),
    "unicode-braces": lambda v, p: "".join(f"\\u{{{ord(c):x}}}" for c in p + v),
    "base64-of-reversed": lambda v, p: b64(v[::-1], p),
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


long_secrets = st.text(alphabet=SECRET_CHARS, min_size=20, max_size=64).filter(
    lambda s: sum(c.isalnum() for c in s) >= 18
)


@settings(max_examples=200, deadline=None)
@given(secret=long_secrets, cut=st.integers(0, 100), between=noise, swap=st.booleans())
def test_a_secret_split_in_two_pieces_is_found(
    secret: str, cut: int, between: str, swap: bool
) -> None:
    alnum = [i for i, c in enumerate(secret) if c.isalnum()]
    # a cut leaving at least 8 letters and digits on each side
    at = alnum[8 + cut % (len(alnum) - 15)]
    first, rest = secret[:at], secret[at:]
    text = f"{rest} ... {between} ... {first}" if swap else f"{first} {between} !! {rest}"
    assert find_leak(text, [secret]) is not None


def test_the_new_forms_are_named() -> None:
    secret = "ghp_S3cretValue0123456789"
    named = {
        "rot13": codecs.encode(secret, "rot13"),
        "caesar": caesar(secret, 5),
        "base32": b32(secret, "xy"),
        "decimal": "&#" + ";&#".join(str(b) for b in secret.encode()) + ";",
        "octal": "".join(f"\\{b:03o}" for b in secret.encode()),
        "hex": "".join(f"\\u{{{ord(c):x}}}" for c in secret),
        "base64": b64(secret[::-1], ""),
        "split": f"first {secret[:12]} and, later, {secret[12:]}",
    }
    assert {form: find_leak(f"see: {text}.", [secret]) for form, text in named.items()} == {
        form: form for form in named
    }


# Secrets as kdev meets them: tokens, an API key, a webhook URL and its path.
REAL_SECRETS = [
    "ghp_" + "Zq8vT1pLm3Kx9Rb2Wc7Yd4Hf6Jg0Ns5Ua1E",
    "github_pat_11ABCDEFG0" + "q1W2e3R4t5Y6u7I8o9P0aSdFgHjKl",
    "sk-proj-" + "T3BlbkFJx8Qm2Vn7Lp4Rs9Kd1Wz6Yc5Hb0Ga",
    "https://hooks.slack.com/services/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",
    "/services/T0A1B2C3D/B4E5F6G7H/q9W8e7R6t5Y4u3I2o1P0a9S8",
]


def real_diff(tmp_path: Path) -> str:
    """A real ``git diff`` between two versions of this module's source."""
    old, new = tmp_path / "old.py", tmp_path / "new.py"
    source = (ROOT / "wrapper" / "leakscan.py").read_text(encoding="utf-8")
    old.write_text(source, encoding="utf-8")
    new.write_text(source.replace("needle", "probe").replace("secret", "value"), encoding="utf-8")
    done = subprocess.run(
        ["git", "diff", "--no-index", "--no-color", str(old), str(new)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1 and done.stdout.count("\n+") > 20
    return done.stdout


def lockfile() -> str:
    """A package-lock.json of 300 packages: versions, URLs, sha512 integrity (base64 of
    unrelated bytes)."""
    packages = {
        f"node_modules/pkg-{n}": {
            "version": f"{n % 7}.{n % 13}.{n % 5}",
            "resolved": f"https://registry.npmjs.org/pkg-{n}/-/pkg-{n}-1.0.{n}.tgz",
            "integrity": "sha512-" + base64.b64encode(RNG.randbytes(64)).decode(),
        }
        for n in range(300)
    }
    return json.dumps({"name": "app", "lockfileVersion": 3, "packages": packages}, indent=2)


def test_ordinary_texts_without_the_secrets_are_clean(tmp_path: Path) -> None:
    docs = "\n".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md")))
    texts = {
        "a real diff": real_diff(tmp_path),
        "prose (docs/)": docs,
        "a lockfile": lockfile(),
        "base64 of random bytes": base64.b64encode(RNG.randbytes(200_000)).decode(),
        "base32 of random bytes": base64.b32encode(RNG.randbytes(100_000)).decode(),
        "hex and decimal dumps": RNG.randbytes(50_000).hex()
        + " ".join(map(str, RNG.randbytes(50_000))),
        "a slack webhook of another workspace": "https://hooks.slack.com/services/T9/B8/abcdefgh",
    }
    assert {name: find_leak(text, REAL_SECRETS) for name, text in texts.items()} == dict.fromkeys(
        texts
    )


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=2_000))
def test_random_text_without_the_secrets_is_clean(text: str) -> None:
    assert find_leak(text, REAL_SECRETS) is None


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


def test_the_proxy_key_is_a_known_secret_whatever_its_name() -> None:
    # The reviewer never holds it (D65), but kdev does: nothing kdev writes may carry it.
    config = KdevConfig.model_validate(
        {
            "reviewer": {
                "backend": "command",
                "argv": ["claude"],
                "network": False,
                "api_proxy": {
                    "upstream": "https://api.anthropic.com",
                    "key_env": "UPSTREAM_PASS",
                    "header": "x-api-key",
                    "base_url_env": ["ANTHROPIC_BASE_URL"],
                },
            },
        }
    )
    found = known_secrets(config, {"UPSTREAM_PASS": "pass-for-the-upstream-1234"})
    assert "pass-for-the-upstream-1234" in found


def test_github_token_and_private_key_shapes_are_refused_whoever_owns_them() -> None:
    """Issue 30: a ``ghs_`` installation token or a PEM private key nobody told kdev of."""
    assert find_leak("see ghs_" + "A1b2C3d4" * 5, []) == "shape"
    assert find_leak("github_pat_" + "x1" * 20, ["unrelated-secret"]) == "shape"
    assert find_leak("-----BEGIN RSA PRIVATE KEY-----\nMIIE...", []) == "shape"
    assert find_leak("-----BEGIN PRIVATE KEY-----", []) == "shape"
    assert find_leak("-----BEGIN PUBLIC KEY-----\nMIIB", []) is None
    assert find_leak("the ghs_ prefix marks installation tokens; ghs_short", []) is None
    with pytest.raises(LedgerError) as caught:
        refuse_leak("token: ghs_" + "Z9" * 18, [], "the review comment")
    assert caught.value.reason == "secret_leak" and "ghs_" not in str(caught.value)


def test_an_app_token_and_its_private_key_lines_are_known_secrets(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from engine.github.tokencache import CachedToken, TokenCache
    from tests.appkit import key_pair

    cache = TokenCache(tmp_path / "state" / "token.json")
    token = "ghs_" + "Q7" * 18
    cache.write(CachedToken(token, datetime(2030, 1, 1, tzinfo=UTC), 5))
    key = tmp_path / "app.pem"
    key.write_text(key_pair().private, encoding="ascii")
    environ = {
        "GITHUB_APP_TOKEN_CACHE": str(cache.path),
        "GITHUB_APP_PRIVATE_KEY_FILE": str(key),
    }
    secrets = known_secrets(KdevConfig.model_validate({}), environ)
    assert token in secrets
    line = key_pair().private.splitlines()[3]
    assert find_leak(f"a line of it: {line[::-1]}", secrets) == "reversed"
    first = key_pair().private.splitlines()[1]
    assert find_leak(b64(first, "q"), secrets) == "base64"
    assert known_secrets(KdevConfig.model_validate({}), {"GITHUB_APP_TOKEN_CACHE": "/nope"}) == []
