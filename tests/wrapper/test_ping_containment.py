"""Issue 24, containment round two (D69): text kdev posts pings nobody the operator did
not list, however the mention or reference is hidden.

The oracle here is independent of the code under test: it renders with cmarkgfm's own
GitHub-flavoured entry point, walks the HTML with its own minimal parser, and applies
GitHub's mention patterns (html-pipeline's ``MentionPattern`` and team pattern, and the
issue's pattern) and the reference forms of GitHub's "Autolinked references and URLs".
"""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser
from pathlib import Path

import cmarkgfm
import pytest
from cmarkgfm.cmark import Options
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import InvalidInput
from engine.triggers import find_mention, pings, validate_mention_name
from wrapper.config import load_config
from wrapper.errors import ConfigError, KdevError
from wrapper.neutralise import (
    LIVE_PING,
    escape_prose,
    mentions_in,
    neutralise,
    prepare_comment,
    refuse_live_pings,
)

HANDLE = "kdev"
ALLOW = ("alice", "octo/reviewers")
ZWSP = "\u200b"

# html-pipeline's MentionPattern (Ruby: ^ and $ are line anchors, \W is ASCII).
GITHUB_MENTION = re.compile(
    r"(?:^|(?<=\W))@(?P<name>(?>[a-z0-9][a-z0-9-]*))(?!/)"
    r"(?=\.+[ \t\W]|\.+$|[^0-9a-zA-Z_.]|$)",
    re.ASCII | re.IGNORECASE | re.MULTILINE,
)
GITHUB_TEAM = re.compile(
    r"(?:^|(?<=\W))@(?P<name>[a-z0-9][a-z0-9-]*/[a-z0-9][a-z0-9_-]*)",
    re.ASCII | re.IGNORECASE | re.MULTILINE,
)
# The issue's pattern (a zero-width space after the "@" breaks it).
ISSUE_MENTION = re.compile(
    r"(?<![\w/`])@(?P<name>[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}(?:/[\w.-]+)?)"
)
# Decision D69: the fullwidth and small commercial at (which GitHub does not link) are
# neutralised too, read as an "@" would be.
WIDE_MENTION = re.compile(r"(?<![A-Za-z0-9_])[\uff20\ufe6b](?P<name>[A-Za-z0-9][A-Za-z0-9-]*)")
REFERENCES = (
    re.compile(r"[#\uff03]\d+"),
    re.compile(r"\bGH-\d+", re.IGNORECASE),
    re.compile(r"[\w.-]+@[0-9a-fA-F]{7,40}\b"),
)
# Invisible characters a later normaliser might drop; U+200B itself is what neutralises.
INVISIBLE = re.compile("[\u00ad\u034f\u180e\u200c-\u200f\u202a-\u202e\u2060-\u2064\ufeff]")


class _Text(HTMLParser):
    """Text nodes outside ``a``, ``code`` and ``pre``, alone and joined per block."""

    INLINE = frozenset({"em", "strong", "del", "b", "i", "s", "span"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.nodes: list[str] = []
        self.blocks: list[str] = [""]
        self.skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.skip += tag in ("a", "code", "pre")
        if tag not in self.INLINE:
            self.blocks.append("")

    def handle_endtag(self, tag: str) -> None:
        self.skip -= tag in ("a", "code", "pre")
        if tag not in self.INLINE:
            self.blocks.append("")

    def handle_data(self, data: str) -> None:
        if self.skip:
            self.blocks.append("")
        else:
            self.nodes.append(data)
            self.blocks[-1] += data


def github_html(body: str) -> str:
    rendered: str = cmarkgfm.github_flavored_markdown_to_html(
        body, options=Options.CMARK_OPT_UNSAFE
    )
    return rendered


def linked(body: str) -> list[str]:
    """Everything GitHub would ping or cross-link in ``body``, by the oracle."""
    parser = _Text()
    parser.feed(github_html(body))
    texts = [*parser.nodes, *parser.blocks]
    texts += [INVISIBLE.sub("", text) for text in texts]
    found: list[str] = []
    for text in texts:
        for pattern in (GITHUB_MENTION, GITHUB_TEAM, ISSUE_MENTION, WIDE_MENTION):
            # a sentence's full stop ends a team slug (GitHub's slug has no ".")
            found += [f"@{m.group('name').rstrip('.')}" for m in pattern.finditer(text)]
        for pattern in REFERENCES:
            found += [m.group() for m in pattern.finditer(text)]
    return found


def not_allowed(found: list[str]) -> list[str]:
    allowed = {f"@{name}" for name in ALLOW}
    return [name for name in found if name.lower() not in allowed]


def meaning(body: str) -> str:
    return html.unescape(github_html(body)).replace(ZWSP, "")


def code(body: str) -> list[str]:
    return re.findall(r"<code[^>]*>(.*?)</code>", github_html(body), flags=re.DOTALL)


HOSTILE = (
    "Hi @victim and @evil-org/security-team, please look.\n"
    "<!-- @hidden-in-comment #1 -->\n"
    "&#64;entity1 &commat;entity2 &#x40;entity3 &#X0040;entity4 &#0064;entity5\n"
    "@zw\u200bsplit \u200b@before-zwsp \u2060@joiner \ufeff@bom \u00ad@shy @sh\u00adhy\n"
    "@\u200cnonjoiner @\u2060wj2 \\@escaped \\\\@after-backslash\n"
    "@*emph* and **@strong** and _@under_ x*@mid*\n"
    "\uff20fullwidth \ufe6bsmall &#65312;wide-entity\n\n"
    "> quoted @quoted-user and #21\n\n"
    "- list @listed\n\n"
    "| table | @in-table |\n|---|---|\n| x | @cell GH-22 |\n\n"
    "# Heading @heading #23\n\n"
    "See #12, GH-34, gh-5, G**H**-6, octo/app#56, jlord@a5c3785, octo/app@a5c3785ed8,\n"
    "&#35;78, &num;9, &#x23;10, \uff0311, GH&#45;12, #&#49;3.\n\n"
    '<div>@in-div</div> <a href="x">@in-raw-link</a> <b>@bold-html</b>\n\n'
    "[@in-md-link](https://example.com) https://example.com/@in-url mail a@b.co\n\n"
    "Keep `@in-code #13` as code.\n\n"
    "```\n@in-fence #14 GH-15\n```\n\n"
    "    @indented #16\n\n"
    "allowed: @alice, @octo/reviewers and @ALICE; not @alicebot nor @octo/others\n"
    "own: @kdev review @KDEV\n"
)


def test_the_oracle_sees_every_hidden_ping_of_the_hostile_body() -> None:
    before = not_allowed(linked(escape_prose(HOSTILE)))  # what escaping alone would post
    for name in ("@victim", "@evil-org/security-team", "@hidden-in-comment", "@entity1",
                 "@entity2", "@entity3", "@zw", "@before-zwsp", "@quoted-user", "@in-div",
                 "@in-raw-link", "@kdev", "@KDEV", "@alicebot", "#12", "GH-34", "#78",
                 "@fullwidth"):  # fmt: skip
        assert name in before
    assert "@in-code" not in before and "@in-fence" not in before and "@in-md-link" not in before


def test_the_hostile_body_pings_only_the_configured_recipients() -> None:
    out = prepare_comment(HOSTILE, HANDLE, allow=ALLOW)
    assert not_allowed(linked(out)) == []
    assert find_mention(out, HANDLE) is None
    still = {name.lower() for name in linked(out)}
    assert {"@alice", "@octo/reviewers"} <= still  # configured recipients are pinged
    assert meaning(out) == meaning(escape_prose(HOSTILE))  # the words are kept
    assert code(out) == code(HOSTILE)  # code is byte-for-byte
    assert "[@in-md-link](https://example.com) https://example.com/@in-url mail a@b.co" in out
    assert neutralise(out, HANDLE, allow=ALLOW) == out  # idempotent


def test_references_stay_linked_only_when_configured() -> None:
    out = prepare_comment("See #12, GH-3 and o/r@a5c3785 @bob", HANDLE, references=True)
    assert "#12" in out and "GH-3" in out and "o/r@a5c3785" in out
    assert set(not_allowed(linked(out))) == {"#12", "GH-3", "r@a5c3785"}
    closed = prepare_comment("See #12, GH-3 and o/r@a5c3785", HANDLE)
    assert closed == "See #&#8203;12, GH-&#8203;3 and o/r@&#8203;a5c3785"


def test_kdevs_own_handle_is_never_exempt() -> None:
    out = prepare_comment("@kdev and @Kdev/team", HANDLE, allow=["kdev", "KDEV"])
    assert out == "@&#8203;kdev and @&#8203;Kdev/team"


def test_a_live_ping_in_the_final_text_is_refused() -> None:
    for body, allow in (("hi @bob", ()), ("#3", ()), ("@kdev", ("kdev",))):
        with pytest.raises(KdevError) as caught:
            refuse_live_pings(body, HANDLE, allow=allow)
        assert caught.value.reason == LIVE_PING
    refuse_live_pings("hi @bob", HANDLE, allow=["bob"])  # allowed: no error
    refuse_live_pings("#3", HANDLE, references=True)


def test_mention_names_are_validated() -> None:
    assert validate_mention_name("octo/reviewers") == "octo/reviewers"
    for bad in ("@alice", "-x", "a--b/", "a/", "a/b/c", "", 3):
        with pytest.raises(InvalidInput):
            validate_mention_name(bad)
    assert mentions_in("@cursor review, cc @octo/bots") == ["cursor", "octo/bots"]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("mention_handle: kdev\nmention_allow: [alice, KDEV]\n", "own handle"),
        ("mention_allow: ['@alice']\n", "neither a GitHub login"),
        ("mention_allow: [a/b/c]\n", "neither a GitHub login"),
    ],
)
def test_a_bad_mention_allow_is_a_config_error(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "kdev.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(str(path))
    assert caught.value.reason == "invalid_config" and problem in caught.value.message


def test_a_good_mention_allow_loads(tmp_path: Path) -> None:
    path = tmp_path / "kdev.yaml"
    path.write_text("mention_allow: [alice, octo/reviewers]\nallow_references: true\n")
    config = load_config(str(path))
    assert config.mention_allow == ["alice", "octo/reviewers"] and config.allow_references


# --- the property: random mixes of everything that can hide a ping --------------------------

NAMES = ["@alice", "@octo/reviewers", "@kdev", "@bob", "@b-o", "@octo/x", "@ALICE", "@a1"]
PIECES = st.sampled_from(
    NAMES + ["@", "&#64;", "&commat;", "&#x40;", "\uff20", "#", "&#35;", "&num;", "#1", "12",
             "GH-", "gh-7", "GH&#45;", "a5c3785", "u@", "o/r", "`", "``", "```", "```\n",
             "~~~\n", "\n", "\n\n", " ", "    ", "> ", "- ", "*", "**", "_", "\\", "<!--",
             "-->", "<!-- @eve -->", "<div>", "</div>", "<a href=x>", "</a>", "[", "](u)",
             "<", ">", "&", ";", "x", ".", "-", "/", ":", "a@b.co", "https://x.test/",
             "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "| a |", "|---|"]
)  # fmt: skip
TEXTS = st.one_of(st.lists(PIECES, max_size=40).map("".join), st.text(max_size=60))


@settings(max_examples=400, deadline=None)
@given(TEXTS)
def test_no_prepared_text_pings_anyone_not_configured(text: str) -> None:
    out = prepare_comment(text, HANDLE, allow=ALLOW)
    assert not_allowed(linked(out)) == []
    assert find_mention(out, HANDLE) is None
    assert [p for p in pings(out) if p.name.lower() not in ALLOW] == []
    assert meaning(out) == meaning(escape_prose(text))
    assert code(out) == code(escape_prose(text))
    assert neutralise(out, HANDLE, allow=ALLOW) == out


def test_the_slower_passes_finish_what_the_marked_rendering_cannot() -> None:
    # The body uses one private-use plane: the markers come from the other.
    body = "\U000f0001 @bob `@code` [@x](u) a@b.co #1"
    out = neutralise(body, HANDLE)
    assert out == "\U000f0001 @&#8203;bob `@code` [@x](u) a@b.co #&#8203;1"
    # It uses both: every sign is tried, in groups; code and the email stay as they are
    # (a sign in link text may get its harmless zero-width space).
    body = "\U000f0001\U00100001 " + body
    out = neutralise(body, HANDLE)
    assert not_allowed(linked(out)) == [] and meaning(out) == meaning(body)
    assert code(out) == code(body) and "a@b.co" in out
    # "\&#35;12" shows "&#35;12", whose "#35" links: only the "#" inside is rewritten,
    # one sign at a time, and the text still reads the same.
    out = neutralise("\\&#35;12", HANDLE)
    assert out == "\\&#&#8203;35;12" and not_allowed(linked(out)) == []
    assert meaning(out) == meaning("\\&#35;12")
