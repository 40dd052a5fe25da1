"""argv rendering: literal args pass, templated args are rendered and guarded."""

from __future__ import annotations

import unicodedata
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import InvalidInput, Refused
from engine.schedules.argv import check_templates, has_template, render_argv

ALLOW = frozenset({"kdev"})


def render(args: list[str], **context: Any) -> list[str]:
    return render_argv("kdev", args, context, ALLOW)


def refusal(args: list[str], **context: Any) -> Refused:
    with pytest.raises(Refused) as caught:
        render(args, **context)
    return caught.value


def test_template_syntax_is_recognised_by_its_three_markers() -> None:
    assert has_template("{{ n }}")
    assert has_template("{% if x %}y{% endif %}")
    assert has_template("{# note #}")
    assert not has_template("--repo")
    assert not has_template("a}}b{c")


def test_literal_args_pass_unchanged_even_when_they_are_flags() -> None:
    argv = render(["review-pr", "--repo", "owner/name", "--", "-x", "100%"])
    assert argv == ["kdev", "review-pr", "--repo", "owner/name", "--", "-x", "100%"]


def test_a_templated_arg_becomes_exactly_one_argument() -> None:
    argv = render(["--repo", "{{ repo }}", "{{ pr.number }}"], repo="owner/name", pr={"number": 42})
    assert argv == ["kdev", "--repo", "owner/name", "42"]


def test_a_flag_written_by_the_schedule_author_is_allowed() -> None:
    assert render(["--pr={{ n }}"], n=7) == ["kdev", "--pr=7"]
    assert render(["-p{{ n }}"], n=7) == ["kdev", "-p7"]


def test_an_author_dash_does_not_excuse_unsafe_characters_in_the_value() -> None:
    assert refusal(["--title={{ t }}"], t="a\nb").reason == "unsafe_characters"


def test_an_undefined_variable_is_refused_and_never_passed_through() -> None:
    error = refusal(["--repo", "{{ missing }}"])
    assert error.reason == "template_undefined"
    assert "args[1]" in error.message and "missing" in error.message


def test_a_missing_attribute_of_a_defined_variable_is_refused() -> None:
    assert refusal(["{{ pr.nope }}"], pr={"number": 1}).reason == "template_undefined"


def test_a_value_starting_with_a_dash_is_refused_as_flag_injection() -> None:
    error = refusal(["review-pr", "{{ branch }}"], branch="--upload-pack=evil")
    assert error.reason == "flag_injection"
    assert "args[1]" in error.message and "branch" in error.message


def test_a_dash_produced_by_a_block_is_not_the_authors_dash() -> None:
    assert refusal(["{% if x %}{{ x }}{% endif %}"], x="-rf").reason == "flag_injection"


@pytest.mark.parametrize(
    "value",
    [
        "line\nbreak",
        "nul\x00byte",
        "bidi\u202eoverride",
        "zero\u200bwidth",
        "para\u2029sep",
        "tab\there",
        "bom\ufeff",
        "surrogate\ud800",
    ],
)
def test_control_format_and_separator_characters_are_refused(value: str) -> None:
    error = refusal(["{{ v }}"], v=value)
    assert error.reason == "unsafe_characters"
    assert "args[0]" in error.message
    assert "\n" not in error.message and "\x00" not in error.message
    assert "\u202e" not in error.message and "\u200b" not in error.message


def test_a_literal_arg_with_a_newline_is_refused_too() -> None:
    assert refusal(["ok", "bad\nliteral"]).reason == "unsafe_characters"


def test_an_empty_rendered_value_is_refused() -> None:
    assert refusal(["{{ v }}"], v="").reason == "empty_argument"


def test_none_renders_as_the_empty_string() -> None:
    assert refusal(["{{ v }}"], v=None).reason == "empty_argument"
    assert render(["--body={{ v }}"], v=None) == ["kdev", "--body="]


def test_bot_logins_quotes_spaces_and_non_ascii_letters_pass() -> None:
    title = "Ünïcødé \"quoted\" 'title' $(rm -rf /) `x` ; | &"
    argv = render(["{{ login }}", "{{ title }}"], login="dependabot[bot]", title=title)
    assert argv == ["kdev", "dependabot[bot]", title]


def test_the_sandbox_refuses_dunder_access() -> None:
    assert refusal(["{{ v.__class__.__mro__ }}"], v="x").reason == "template_unsafe"


def test_an_expression_that_fails_is_refused_rather_than_crashing() -> None:
    assert refusal(["{{ 1 // n }}"], n=0).reason == "template_error"


def test_a_flag_injection_message_shows_the_value_only_through_repr() -> None:
    error = refusal(["{{ v }}"], v="-x" + "y" * 500)
    assert error.reason == "flag_injection"
    assert len(error.message) < 300
    assert "'-xyyy" in error.message


def test_a_path_as_the_executable_is_refused() -> None:
    with pytest.raises(Refused) as caught:
        render_argv("/usr/bin/kdev", [], {}, frozenset({"/usr/bin/kdev"}))
    assert caught.value.reason == "command_not_allowlisted"


def test_an_executable_outside_the_allowlist_is_refused() -> None:
    with pytest.raises(Refused) as caught:
        render_argv("rm", ["-rf", "/"], {}, ALLOW)
    assert caught.value.reason == "command_not_allowlisted"


def test_check_templates_accepts_literals_and_valid_templates() -> None:
    check_templates(["--repo", "{{ repo }}", "--pr={{ n }}", "{# c #}x", "a}}b"])


@pytest.mark.parametrize("bad", ["{{ n", "{% if x %}", "{{ n | no_such_filter }}"])
def test_check_templates_rejects_a_syntax_error_naming_the_arg(bad: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        check_templates(["--pr", bad])
    assert caught.value.reason == "template_syntax"
    assert "args[1]" in caught.value.message
    assert "\n" not in caught.value.message


def test_a_broken_template_met_at_render_time_is_a_refusal() -> None:
    assert refusal(["{{ n"], n=1).reason == "template_syntax"


UNSAFE = {"Cc", "Cf", "Zl", "Zp", "Cs"}


@settings(deadline=None, max_examples=300)
@given(value=st.text())
def test_any_text_value_is_either_refused_or_safe(value: str) -> None:
    try:
        argv = render(["{{ v }}"], v=value)
    except Refused as error:
        assert error.reason in {"flag_injection", "unsafe_characters", "empty_argument"}
        assert "\n" not in error.message
        return
    rendered = argv[1]
    assert rendered == value
    assert not rendered.startswith("-")
    assert not any(unicodedata.category(c) in UNSAFE for c in rendered)
