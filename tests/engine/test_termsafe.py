"""engine/termsafe.py and the rich tables: text from others reaches a terminal with its
controls escaped visibly (issue 24); li's own outputs that carry such text (a run's
output tails, error lines, log lines) go through it."""

from __future__ import annotations

import ast
import io
import logging
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.clikit import TextFormatter
from engine.tables import print_table
from engine.termsafe import terminal_safe
from tests.termsafe_kit import HOSTILE, forbidden

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\x1b[2J", "^[[2J"),
        ("\x1b]52;c;ZXZpbA==\x07", "^[]52;c;ZXZpbA==^G"),
        ("\x1b]8;;http://evil\x1b\\x\x1b]8;;\x1b\\", "^[]8;;http://evil^[\\x^[]8;;^[\\"),
        ("\x00\x7f", "^@^?"),
        ("a\rb", "a^Mb"),
        ("a\r\nb", "a\nb"),
        ("\x9b2J\x9d", "\\u009b2J\\u009d"),
        ("\u202eevil\u202c", "\\u202eevil\\u202c"),
        (
            "\u2066\u2067\u2068\u2069\u200e\u200f\u061c",
            "\\u2066\\u2067\\u2068\\u2069\\u200e\\u200f\\u061c",
        ),  # fmt: skip
        ("\u2028\u2029\u200b\ufeff", "\\u2028\\u2029\\u200b\\ufeff"),
        ("tag\U000e0041", "tag\\U000e0041"),
        ("\ud800", "\\ud800"),
    ],
)
def test_controls_are_escaped_visibly(raw: str, shown: str) -> None:
    assert terminal_safe(raw) == shown


def test_ordinary_text_is_unchanged() -> None:
    text = "def f():\n\treturn 'héllo wörld' # 日本語 ✓ 👨\u200d👩\u200d👧 مى\u200cخواهم"
    assert terminal_safe(text) == text


@given(st.text())
def test_no_forbidden_character_survives(text: str) -> None:
    safe = terminal_safe(text)
    assert forbidden(safe) == []
    if not forbidden(text) and "\r" not in text:
        assert safe == text  # nothing to escape: nothing changed


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("stream", [io.StringIO, _Tty])
def test_table_cells_are_text_escaped_and_never_markup(stream: type[io.StringIO]) -> None:
    out = stream()
    print_table(["title", "check"], [[HOSTILE, "[link=http://evil]x[/link]"], ["[/]", None]], out)
    printed = out.getvalue()
    if stream is _Tty:  # rich's own bold header is the only escape sequence
        printed = printed.replace("\x1b[1m", "").replace("\x1b[0m", "")
    assert forbidden(printed) == []
    assert "[link=http://evil]x[/link]" in printed and "[/]" in printed  # shown, not obeyed
    assert "^[]52;c;ZXZpbA==^G" in printed and "\\u202eevil" in printed


def test_text_log_lines_are_terminal_safe() -> None:
    record = logging.LogRecord("li", logging.INFO, __file__, 1, "title %s", (HOSTILE,), None)
    line = TextFormatter("%(message)s").format(record)
    assert forbidden(line) == [] and line.startswith("title fix^[[2Jthis")


def _echo_calls(path: Path) -> list[ast.Call]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "echo"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in {"typer", "click"}
    ]


def test_cli_modules_print_raw_only_json_or_yaml() -> None:
    """Every human-readable line of li and kdev goes through engine.termsafe.echo; a bare
    ``typer.echo`` is kept only for ``--json`` output and YAML dumps, which escape every
    control themselves."""
    raw = []
    for path in sorted([*ROOT.glob("engine/cli/*.py"), *ROOT.glob("wrapper/cli/*.py")]):
        for call in _echo_calls(path):
            text = ast.unparse(call.args[0]) if call.args else ""
            if not any(word in text for word in ("json.dumps", "to_json()", "yaml", "dump_")):
                raw.append(f"{path.relative_to(ROOT)}:{call.lineno}: {text}")
    assert raw == []
