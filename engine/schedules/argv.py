"""Render a schedule's argv from an event, with injection guards. Pure: no I/O.

Why it is built this way: docs/decisions.md D2.

A schedule stores a command (a bare, allow-listed executable name) and a list of args.
An arg without template syntax (``{{``, ``{%``, ``{#``) is *literal* and passes through
unchanged; a *templated* arg is rendered by one sandboxed Jinja2 environment with
``StrictUndefined`` and no autoescaping. The event supplies the values, so every
rendered value is treated as hostile: it becomes exactly one argv element (there is no
shell) and it is refused when it could still change the command's meaning.

Reason codes (``InvalidInput`` at schedule-add time, ``Refused`` at render time):

- ``template_syntax``: a templated arg does not parse (or names an unknown filter/test)
- ``template_undefined``: a templated arg uses a variable or attribute the event lacks
- ``template_unsafe``: the sandbox refused an operation (e.g. ``x.__class__``)
- ``template_error``: rendering failed for any other reason (``1/0``, a type error, ...)
- ``empty_argument``: a templated arg rendered to the empty string
- ``flag_injection``: a templated arg rendered to something starting with ``-`` while
  the template's own literal text before the first ``{{``/``{%``/``{#`` does not
- ``unsafe_characters``: an arg (literal or rendered) contains a character of Unicode
  category Cc, Cf, Zl, Zp or Cs (newline, NUL, bidi overrides, zero-width characters)
- ``command_not_allowlisted``: from :func:`engine.schedules.spec.check_executable`

Messages are one line; they name the arg by its index in the schedule's ``args`` list
and never contain a rendered value except through ``repr`` (which escapes control and
format characters).
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jinja2 import StrictUndefined, Template, TemplateSyntaxError, UndefinedError, meta
from jinja2.exceptions import SecurityError
from jinja2.sandbox import SandboxedEnvironment

from engine.errors import InvalidInput, Refused
from engine.schedules.spec import check_executable

TEMPLATE_MARKERS = ("{{", "{%", "{#")
UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
_SHOWN_VALUE_CHARS = 60


def _finalize(value: Any) -> Any:
    # An optional event field (e.g. a missing body) renders as "" rather than "None".
    return "" if value is None else value


# keep_trailing_newline: render exactly what the author wrote, so the unsafe-character
# check sees a trailing newline instead of Jinja silently dropping it.
_ENVIRONMENT = SandboxedEnvironment(
    undefined=StrictUndefined,
    autoescape=False,
    finalize=_finalize,
    keep_trailing_newline=True,
)


@dataclass(frozen=True)
class _CompiledArg:
    template: Template
    variables: tuple[str, ...]  # the free variables, for messages
    author_dash: bool  # the literal text before the first marker starts with "-"


def has_template(arg: str) -> bool:
    """True when ``arg`` contains ``{{``, ``{%`` or ``{#`` (so it is rendered, not literal)."""
    return any(marker in arg for marker in TEMPLATE_MARKERS)


def _literal_prefix(source: str) -> str:
    positions = [source.find(marker) for marker in TEMPLATE_MARKERS]
    first = min((p for p in positions if p >= 0), default=len(source))
    return source[:first]


@functools.lru_cache(maxsize=512)
def _compile(source: str) -> _CompiledArg:
    """Compile ``source`` once per distinct string; TemplateSyntaxError propagates."""
    template = _ENVIRONMENT.from_string(source)
    variables = tuple(sorted(meta.find_undeclared_variables(_ENVIRONMENT.parse(source))))
    return _CompiledArg(template, variables, _literal_prefix(source).startswith("-"))


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _shown(value: str) -> str:
    shown = value if len(value) <= _SHOWN_VALUE_CHARS else value[:_SHOWN_VALUE_CHARS] + "..."
    return repr(shown)


def _describe(index: int, source: str, compiled: _CompiledArg | None = None) -> str:
    where = f"args[{index}] {source!r}"
    if compiled is not None and compiled.variables:
        where += f" (uses {', '.join(compiled.variables)})"
    return where


def _first_unsafe_character(value: str) -> tuple[int, str, str] | None:
    for position, char in enumerate(value):
        category = unicodedata.category(char)
        if category in UNSAFE_CATEGORIES:
            return position, char, category
    return None


def _check_characters(index: int, where: str, value: str) -> None:
    found = _first_unsafe_character(value)
    if found is not None:
        position, char, category = found
        name = unicodedata.name(char, "unnamed")
        raise Refused(
            f"{where}: the value contains U+{ord(char):04X} ({name}, category {category}) "
            f"at position {position}; newlines, control, format and separator characters "
            "are not allowed in arguments",
            "unsafe_characters",
        )


def check_templates(args: list[str]) -> None:
    """Compile every templated arg so syntax errors surface when a schedule is added.

    Literal args are not inspected. Raises :class:`InvalidInput` with reason
    ``template_syntax`` naming the first failing arg's index, its source and Jinja's
    message (unknown filters and tests count as syntax errors). Returns None otherwise.
    """
    for index, arg in enumerate(args):
        if not has_template(arg):
            continue
        try:
            _compile(arg)
        except TemplateSyntaxError as exc:
            raise InvalidInput(
                f"args[{index}] {arg!r} is not a valid template: {_one_line(str(exc.message))}",
                "template_syntax",
            ) from None


def _render_one(index: int, arg: str, context: Mapping[str, Any]) -> str:
    try:
        compiled = _compile(arg)
    except TemplateSyntaxError as exc:
        raise Refused(
            f"args[{index}] {arg!r} is not a valid template: {_one_line(str(exc.message))}",
            "template_syntax",
        ) from None
    where = _describe(index, arg, compiled)
    # The order matters: SecurityError and UndefinedError are both TemplateRuntimeErrors,
    # and anything else an expression can raise (1/0, "a" + 1) must not escape as a crash.
    try:
        value = compiled.template.render(dict(context))
    except SecurityError as exc:
        raise Refused(
            f"{where}: the sandbox refused it: {_one_line(str(exc))}", "template_unsafe"
        ) from None
    except UndefinedError as exc:
        raise Refused(
            f"{where}: {_one_line(str(exc))} in the event context", "template_undefined"
        ) from None
    except Exception as exc:
        raise Refused(
            f"{where}: rendering failed: {type(exc).__name__}: {_one_line(str(exc))}",
            "template_error",
        ) from None
    if value == "":
        raise Refused(f"{where} rendered to an empty argument", "empty_argument")
    _check_characters(index, where, value)
    if value.startswith("-") and not compiled.author_dash:
        raise Refused(
            f"{where} rendered to {_shown(value)}, which starts with '-' and would be read "
            "as a flag; put the flag in the template itself (e.g. --pr={{ n }})",
            "flag_injection",
        )
    return value


def render_argv(
    command: str,
    args: list[str],
    context: Mapping[str, Any],
    allowlist: frozenset[str],
) -> list[str]:
    """``[command, *rendered_args]``: the argv to spawn (without a shell) for one event.

    ``command`` must be a bare name in ``allowlist`` (``command_not_allowlisted``).
    Literal args pass unchanged unless they contain unsafe characters. Templated args
    are rendered against ``context`` in the sandbox (``None`` renders as ``""``) and
    refused as described in the module docstring. Every refusal is a
    :class:`engine.errors.Refused`; the first failing arg stops the build. Pure: the same
    inputs give the same argv or the same refusal.
    """
    check_executable(command, allowlist)
    argv = [command]
    for index, arg in enumerate(args):
        if has_template(arg):
            argv.append(_render_one(index, arg, context))
        else:
            _check_characters(index, f"args[{index}] (literal)", arg)
            argv.append(arg)
    return argv
