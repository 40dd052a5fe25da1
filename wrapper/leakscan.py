"""Leak detection that survives encoding: is a known secret in this text, in any dress?

This is a backstop, not the guarantee. The guarantee is structural: the reviewer is
given no secret to leak (its environment, sandbox and prompt hold none). The scan
catches what slips through anyway - a secret echoed by a command, or a reviewer talked
into writing one in a cheap disguise - before any text leaves kdev. A determined
encoder (encryption, a custom alphabet, a secret spread over several comments) beats
any scan.

:func:`find_leak` looks for each secret (values of at least
:data:`~wrapper.ledger.ledger.MIN_SECRET_LENGTH` characters) in these forms:

- ``raw``: the value itself;
- ``interleaved``: the value with whitespace or punctuation between its characters, or
  in another letter case (``g h p _ a b c``, ``G-H-P-A-B-C``): both sides reduced to
  their lowercase letters and digits;
- ``reversed``: the value backwards (also interleaved);
- ``base64``: standard and URL-safe alphabet, each of the three byte alignments (the
  whole 3-byte groups of the value, which encode the same wherever the value sits),
  line-wrapped or not; of the value and of the value reversed;
- ``base32``: each of the five byte alignments, either case, padded or not;
- ``hex``: either case, with or without separators (``67:68``, ``\\x67\\x68``), and as
  escapes and references of code points (``\\u0067``, ``\\u{67}``, ``&#x67;``);
- ``decimal``: the byte values in decimal, however separated (``103 104``,
  ``103,104``), which also covers HTML/XML decimal references (``&#103;&#104;``);
- ``octal``: three-digit octal escapes (``\\147\\150``);
- ``url``: percent-encoded, partly (``ghp%5Fabc``) or wholly (``%67%68``);
- ``rot13`` and ``caesar``: the letters shifted by 13, or by any other of the 25
  shifts (digits unchanged), in the reduced form;
- ``split``: the value cut in two pieces with other text between or around them, in
  either order: a piece of at least 8 reduced characters that starts the value,
  followed (not directly) somewhere in the same text by the rest, of at least 8 (so
  values of 16 reduced characters or more). Two pieces of a random value that long do
  not occur in ordinary text by chance.

A text is searched as it is, percent-decoded, and with ``\\x``/``0x``/``%``/``\\u00``/
``\\u{``/``&#x`` escape prefixes dropped; each of those also reduced to lowercase
letters and digits. Values whose reduced form is shorter than the minimum are matched
raw only. The needles of a secret are computed once (cached); the cost of a scan is
dominated by the three reductions of the text, not by the number of forms
(bench/leakscan.py, bench/README.md).

:func:`known_secrets` lists what counts as a secret for kdev: the values of the
``secret_env`` variables, the GitHub token, each webhook URL of ``notify`` (and its
path with query), and the values of reviewer variables whose name says they are a
credential (``*KEY*``, ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ``*AUTH*``,
``*CREDENTIAL*``), including the openai backend's ``api_key_env`` and the proxy's
``api_proxy.key_env`` (D65). With a GitHub App (issue 30) they include the installation
token in the shared cache file (``GITHUB_APP_TOKEN_CACHE``) and the private key
(``GITHUB_APP_PRIVATE_KEY_FILE``): the whole PEM, its body as one line, and each of its
lines.

Beside the values, two **shapes** are refused whoever's they are (``shape`` form): a
GitHub token (``ghp_``, ``gho_``, ``ghu_``, ``ghs_``, ``ghr_`` followed by at least 30
token characters, or ``github_pat_``; GitHub's documented prefixes) and a PEM private key
(``-----BEGIN ... PRIVATE KEY-----``). kdev never has a reason to write either.
"""

from __future__ import annotations

import base64
import re
import string
import urllib.parse
from collections.abc import Iterable, Mapping
from functools import lru_cache

from wrapper.config import CommandReviewer, KdevConfig, OpenAIReviewer, WebhookTarget
from wrapper.errors import KdevError, LedgerError

MIN_SECRET_LENGTH = 8  # as the ledger's canary: shorter values match ordinary text
_NOT_ALNUM = re.compile(r"[^0-9a-z]+")
_ESCAPE_PREFIXES = re.compile(r"\\x|0x|%|\\u00|\\u\{0*|&#x0*", re.IGNORECASE)
_CREDENTIAL_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|AUTH|CREDENTIAL", re.IGNORECASE)
SECRET_LEAK = "secret_leak"
_SHAPES = re.compile(
    r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"
    r"|-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"
)
_MIN_PATH_SECRET = 16
_MIN_PIECE = 8  # each piece of a ``split`` value, in reduced characters
_LETTERS = string.ascii_lowercase


_NOT_ALNUM_BYTES = bytes(b for b in range(128) if not chr(b).isdigit() and not chr(b).islower())


def _reduce(text: str) -> str:
    lowered = text.lower()
    if lowered.isascii():  # the common case, about 50 times faster than the regex
        return lowered.encode("ascii").translate(None, _NOT_ALNUM_BYTES).decode("ascii")
    return _NOT_ALNUM.sub("", lowered)


def _aligned(value: bytes, group: int) -> list[bytes]:
    """The whole ``group``-byte runs of ``value`` from each start offset: what encodes
    the same in base64 (3) or base32 (5) wherever the value sits in the input."""
    runs = []
    for start in range(group):
        chunk = value[start:]
        whole = chunk[: len(chunk) // group * group]
        if whole:
            runs.append(whole)
    return runs


def _base64_needles(value: bytes) -> list[str]:
    needles = []
    for whole in _aligned(value, 3):
        needles.append(base64.b64encode(whole).decode("ascii"))
        needles.append(base64.urlsafe_b64encode(whole).decode("ascii"))
    return needles


def _shifted(reduced: str) -> list[tuple[str, str]]:
    """The reduced value with its letters shifted by each of 1..25 (``rot13`` at 13)."""
    pairs = []
    for shift in range(1, 26):
        moved = _LETTERS[shift:] + _LETTERS[:shift]
        form = "rot13" if shift == 13 else "caesar"
        pairs.append((form, reduced.translate(str.maketrans(_LETTERS, moved))))
    return pairs


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
    pairs += [("base64", _reduce(n)) for n in _base64_needles(value[::-1])]
    pairs += [("url", _reduce(urllib.parse.quote(secret, safe="")))]
    pairs += [("base32", _reduce(base64.b32encode(w).decode())) for w in _aligned(value, 5)]
    pairs += [("decimal", "".join(str(b) for b in value))]
    pairs += [("octal", "".join(f"{b:03o}" for b in value))]
    pairs += _shifted(_reduce(secret))
    seen: set[str] = set()
    kept = []
    for form, needle in pairs:
        if len(needle) >= MIN_SECRET_LENGTH and needle not in seen:
            seen.add(needle)
            kept.append((form, needle))
    return tuple(kept)


def _split(reduced: str, view: str) -> bool:
    """Is ``reduced`` in ``view`` as two pieces: a start of at least :data:`_MIN_PIECE`
    characters, and the rest (at least as long) anywhere else in ``view``?

    Each place the value's first :data:`_MIN_PIECE` characters occur is followed as far
    as it matches the value; the rest (or, when fewer than ``_MIN_PIECE`` characters are
    left, the value's last ``_MIN_PIECE``) must occur in the view as well. Any cut of
    the value into two long enough pieces is found that way."""
    size = len(reduced)
    if size < 2 * _MIN_PIECE:
        return False
    seed = reduced[:_MIN_PIECE]
    at = view.find(seed)
    while at != -1:
        matched = _MIN_PIECE
        while matched < size and at + matched < len(view):
            if view[at + matched] != reduced[matched]:
                break
            matched += 1
        if reduced[min(matched, size - _MIN_PIECE) :] in view:
            return True
        at = view.find(seed, at + 1)
    return False


def _views(text: str) -> list[str]:
    decoded = urllib.parse.unquote(text)
    return [text, decoded, _ESCAPE_PREFIXES.sub("", text)]


def find_leak(
    texts: str | Iterable[str], secrets: Iterable[str], *, shapes: bool = True
) -> str | None:
    """The form (``raw``, ``interleaved``, ``reversed``, ``base64``, ``base32``, ``hex``,
    ``decimal``, ``octal``, ``url``, ``rot13``, ``caesar``, ``split``) in which some
    secret appears in ``texts``, or ``shape`` for a token or private key of any owner
    (module doc), or None. Never returns the secret. ``shapes=False`` looks for the given
    secrets only: for text that may rightly hold token-shaped examples, as what a test's
    hostile reviewer read of this project's own files does."""
    values = [s for s in dict.fromkeys(secrets) if s and len(s) >= MIN_SECRET_LENGTH]
    for text in [texts] if isinstance(texts, str) else list(texts):
        if shapes and _SHAPES.search(text):
            return "shape"
        if not values:
            continue
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
            if any(_split(_reduce(secret), view) for view in reduced):
                return "split"
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
        if reviewer.api_proxy is not None:  # the key kdev's proxy adds (D65)
            names.append(reviewer.api_proxy.key_env)
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
    found += app_secrets(environ)
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


def app_secrets(environ: Mapping[str, str]) -> list[str]:
    """A GitHub App's secrets (module doc): the shared installation token and the
    private key, as whole text, body and lines; what cannot be read is skipped (the
    App's own code reports that)."""
    from pathlib import Path

    from engine.github.tokencache import TokenCache

    found: list[str] = []
    cache = environ.get("GITHUB_APP_TOKEN_CACHE")
    cached = TokenCache(Path(cache)).read() if cache else None
    if cached is not None:
        found.append(cached.token)
    key_file = environ.get("GITHUB_APP_PRIVATE_KEY_FILE")
    try:
        pem = Path(key_file).read_text(encoding="ascii") if key_file else ""
    except (OSError, UnicodeDecodeError):
        pem = ""
    lines = [line.strip() for line in pem.splitlines() if line.strip()]
    body = [line for line in lines if not line.startswith("-----")]
    if body:
        found += [pem.strip(), "".join(body), *body]
    return found
