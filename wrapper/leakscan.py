"""Leak detection that survives encoding: is a known secret in this text, in any dress?

:func:`find_leak` looks for each secret (values of at least
:data:`~wrapper.ledger.ledger.MIN_SECRET_LENGTH` characters) in these forms:

- ``raw``: the value itself;
- ``interleaved``: the value with whitespace or punctuation between its characters, or
  in another letter case (``g h p _ a b c``, ``G-H-P-A-B-C``): both sides reduced to
  their lowercase letters and digits;
- ``reversed``: the value backwards (also interleaved);
- ``base64``: standard and URL-safe alphabet, each of the three byte alignments (the
  whole 3-byte groups of the value, which encode the same wherever the value sits),
  line-wrapped or not;
- ``hex``: either case, with or without separators (``67:68``, ``\\x67\\x68``);
- ``url``: percent-encoded, partly (``ghp%5Fabc``) or wholly (``%67%68``).

A text is searched as it is, percent-decoded, and with ``\\x``/``0x``/``%`` escape
prefixes dropped; each of those also reduced to lowercase letters and digits. Values
whose reduced form is shorter than the minimum are matched raw only.

:func:`known_secrets` lists what counts as a secret for kdev: the values of the
``secret_env`` variables, the GitHub token, each webhook URL of ``notify`` (and its
path with query), and the values of reviewer variables whose name says they are a
credential (``*KEY*``, ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ``*AUTH*``,
``*CREDENTIAL*``), including the openai backend's ``api_key_env``.
"""

from __future__ import annotations

import base64
import re
import urllib.parse
from collections.abc import Iterable, Mapping
from functools import lru_cache

from wrapper.config import CommandReviewer, KdevConfig, OpenAIReviewer, WebhookTarget
from wrapper.errors import KdevError, LedgerError

MIN_SECRET_LENGTH = 8  # as the ledger's canary: shorter values match ordinary text
_NOT_ALNUM = re.compile(r"[^0-9a-z]+")
_ESCAPE_PREFIXES = re.compile(r"\\x|0x|%|\\u00", re.IGNORECASE)
_CREDENTIAL_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|AUTH|CREDENTIAL", re.IGNORECASE)
SECRET_LEAK = "secret_leak"
_MIN_PATH_SECRET = 16


def _reduce(text: str) -> str:
    return _NOT_ALNUM.sub("", text.lower())


def _base64_needles(value: bytes) -> list[str]:
    needles = []
    for start in range(3):
        chunk = value[start:]
        whole = chunk[: len(chunk) // 3 * 3]
        if whole:
            needles.append(base64.b64encode(whole).decode("ascii"))
            needles.append(base64.urlsafe_b64encode(whole).decode("ascii"))
    return needles


@lru_cache(maxsize=256)
def _needles(secret: str) -> tuple[tuple[str, str], ...]:
    """(form, needle) pairs; every needle is compared in reduced (lowercase alnum) text."""
    value = secret.encode("utf-8")
    pairs = [
        ("interleaved", _reduce(secret)),
        ("reversed", _reduce(secret[::-1])),
        ("hex", value.hex()),
        ("hex", value[::-1].hex()),
    ]
    pairs += [("base64", _reduce(n)) for n in _base64_needles(value)]
    pairs += [("url", _reduce(urllib.parse.quote(secret, safe="")))]
    return tuple((form, needle) for form, needle in pairs if len(needle) >= MIN_SECRET_LENGTH)


def _views(text: str) -> list[str]:
    decoded = urllib.parse.unquote(text)
    return [text, decoded, _ESCAPE_PREFIXES.sub("", text)]


def find_leak(texts: str | Iterable[str], secrets: Iterable[str]) -> str | None:
    """The form (``raw``, ``interleaved``, ``reversed``, ``base64``, ``hex``, ``url``) in
    which some secret appears in ``texts``, or None. Never returns the secret."""
    values = [s for s in dict.fromkeys(secrets) if s and len(s) >= MIN_SECRET_LENGTH]
    if not values:
        return None
    for text in [texts] if isinstance(texts, str) else list(texts):
        views = _views(text)
        reduced = [_reduce(view) for view in views]
        for secret in values:
            if secret in text:
                return "raw"
            if secret in views[1]:
                return "url"
            for form, needle in _needles(secret):
                if any(needle in view for view in reduced):
                    return form
    return None


def refuse_leak(texts: str | Iterable[str], secrets: Iterable[str], what: str) -> None:
    """Raise LedgerError ``secret_in_output`` (raw) or ``secret_leak`` (encoded) when a
    secret is in ``texts``; the message names ``what`` and the form, never the value."""
    form = find_leak(texts, secrets)
    if form is None:
        return
    reason = "secret_in_output" if form == "raw" else SECRET_LEAK
    raise LedgerError(f"{what} contains a known secret ({form} form); withheld", reason)


def _credential_names(config: KdevConfig) -> list[str]:
    names = [n for n in config.reviewer_env if _CREDENTIAL_NAME.search(n)]
    reviewer = config.reviewer
    if isinstance(reviewer, CommandReviewer):
        names += [n for n in reviewer.env_passthrough if _CREDENTIAL_NAME.search(n)]
    elif isinstance(reviewer, OpenAIReviewer):
        names.append(reviewer.api_key_env)
    return names


def webhook_secrets(url: str) -> list[str]:
    """A webhook URL as a secret: the URL as written, as httpx prints it, and its path
    with query (where the secret part of such URLs lives)."""
    found = [url]
    try:
        parsed = urllib.parse.urlsplit(url)
    except ValueError:
        return found
    path = parsed.path + (f"?{parsed.query}" if parsed.query else "")
    if len(path) >= _MIN_PATH_SECRET:  # a short path ("/hook") is no secret
        found.append(path)
    return found


def known_secrets(config: KdevConfig, environ: Mapping[str, str]) -> list[str]:
    """Every value kdev must never write, post, send or log (see the module doc)."""
    names = [*config.secret_env, "GITHUB_TOKEN", "GH_TOKEN", *_credential_names(config)]
    found = [environ.get(name, "") for name in dict.fromkeys(names)]
    for target in config.all_notify_targets():
        if isinstance(target, WebhookTarget):
            found += webhook_secrets(target.url)
    return [value for value in dict.fromkeys(found) if len(value) >= MIN_SECRET_LENGTH]


def withhold_leak(error: KdevError, secrets: Iterable[str]) -> KdevError:
    """``error``, or LedgerError ``secret_leak`` in its place when its message holds a
    secret (a reviewer's stderr line, say), so that neither the FAILURE notice nor the
    one-line error of the run carries it."""
    form = find_leak(error.message, secrets)
    if form is None:
        return error
    return LedgerError(
        f"the {error.reason} error message contained a known secret ({form} form); withheld",
        SECRET_LEAK,
    )
