"""Command-line plumbing shared by ``li`` and the wrapper: usage errors as one line, and
verbs imported only when they run (:func:`lazy_group`, issues 19 and 25)."""

from __future__ import annotations

import ast
import enum
import json
import logging
import sys
from collections.abc import Callable, Iterator, MutableMapping
from datetime import UTC, datetime
from importlib import import_module
from importlib.util import find_spec
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import typer
from typer.core import TyperCommand, TyperGroup, TyperOption
from typer.main import get_command_from_info, get_group_from_info
from typer.models import CommandInfo, TyperInfo

from engine.errors import LiError
from engine.termsafe import echo, terminal_safe

T = TypeVar("T")


def version_option(line: str) -> Any:
    """The root ``--version`` flag of a program: prints ``line`` (its name and version)
    and exits, before any other option is read."""

    def show(value: bool) -> None:
        if value:
            echo(line)
            raise typer.Exit()

    return typer.Option(
        False,
        "--version",
        callback=show,
        is_eager=True,
        metavar="",  # a flag takes no value; typer would show <bool>
        help="Print the version and exit.",
    )


def fail(exc: LiError, exit_code: int | None = None) -> NoReturn:
    """Print the one-line error and exit with its code (or ``exit_code``)."""
    echo(f"error: {exc.message} [{exc.reason}]", err=True)
    raise typer.Exit(exc.exit_code if exit_code is None else exit_code)


def guarded(
    work: Callable[[], T],
    *,
    exit_code: Callable[[LiError], int] = lambda exc: exc.exit_code,
    cleanup: Callable[[], None] | None = None,
) -> T:
    """Run a command body: an LiError becomes one line and ``exit_code(error)``; anything
    unexpected one line and exit 1, never a traceback. ``cleanup`` runs in every case."""
    try:
        return work()
    except LiError as exc:
        fail(exc, exit_code(exc))
    except (typer.Exit, typer.Abort, KeyboardInterrupt):
        raise
    except Exception as exc:  # a bug: still one line, never a traceback for the user
        echo(f"error: internal error: {type(exc).__name__}: {exc} [internal_error]", err=True)
        raise typer.Exit(1) from None
    finally:
        if cleanup is not None:
            cleanup()


HELP_OPTIONS = {"help_option_names": ["-h", "--help"]}


class OneLineErrorsTyper(typer.Typer):
    """A Typer app whose usage errors are one line with a reason code, like every error.

    ``-h`` works as ``--help`` on every command. Usage errors are caught through the
    public :class:`typer.TyperException` (the base of Typer's click exceptions), never
    through a private module of Typer."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("context_settings", HELP_OPTIONS)
        kwargs.setdefault("cls", PlainGroup)
        super().__init__(*args, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        command = typer.main.get_command(self)
        kwargs["standalone_mode"] = False
        try:
            result = command.main(*args, **kwargs)
        except typer.TyperException as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":  # bare group: help, exit 2
                getattr(exc, "show", lambda: None)()
                sys.exit(2)
            ctx = getattr(exc, "ctx", None)
            where = f" ({ctx.command_path})" if ctx is not None else ""
            message = " ".join(exc.format_message().split())
            echo(f"error: {message}{where} [usage_error]", err=True)
            sys.exit(2)
        except (typer.Abort, KeyboardInterrupt):
            typer.echo("error: aborted [aborted]", err=True)
            sys.exit(1)
        except typer.Exit as exc:
            sys.exit(exc.exit_code)
        # Outside standalone mode click returns an Exit's code instead of raising it (with
        # click 8.5 and typer 0.29 a command's typer.Exit arrives so): exit with it, or
        # every error of the console scripts would exit 0.
        if isinstance(result, int) and not isinstance(result, bool) and result != 0:
            sys.exit(result)
        return result


class _PlainValue:
    """Coerces the value of a root option: ``None`` stays ``None``, a bool is a bool for a
    bool flag, and an enum member, or exactly a member's value, is the member. Anything
    else goes to typer's own coercion (pydantic's), so every error and every looser form
    is typer's."""

    def __init__(self, option: PlainOption) -> None:
        self._option = option
        self._type = option.type_descriptor.annotation

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        if value is None or (self._type is bool and isinstance(value, bool)):
            return value
        if isinstance(self._type, type) and issubclass(self._type, enum.Enum):
            if isinstance(value, self._type):
                return value
            for member in self._type:
                if isinstance(value, str) and value == member.value:
                    return member
        return TyperOption.get_runtime_param(self._option).coerce(value, param=param, ctx=ctx)


class PlainOption(TyperOption):
    """A root option (a bool flag or an enum) whose usual values need no pydantic (issue
    25): typer 0.29 builds a pydantic TypeAdapter (about 150 ms of imports) to coerce
    any option's value but a flag's True/False, even a ``None`` default, and the root's
    options are coerced for every command, ``li schedule -h`` and each TAB included."""

    def get_runtime_param(self) -> Any:
        return _PlainValue(self)


def plain_options(params: list[Any]) -> None:
    """Make the single-valued bool and enum options of ``params`` :class:`PlainOption`.

    typer builds the option objects itself (no class can be passed to ``typer.Option``),
    so their class is switched in place; it changes only how a value is coerced. A flag
    (``-h``, ``--json``) also gets an empty metavar: it takes no value, and typer's rich
    help would show ``<bool>`` beside it."""
    for param in params:
        if getattr(param, "is_flag", False) and getattr(param, "metavar", None) is None:
            param.metavar = ""
        annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
        if (
            type(param) is TyperOption
            and isinstance(annotation, type)
            and (annotation is bool or issubclass(annotation, enum.Enum))
            and not param.multiple
            and param.nargs == 1
        ):
            param.__class__ = PlainOption


class PlainGroup(TyperGroup):
    """A group whose bool and enum options, ``-h`` and the completion options included,
    are :class:`PlainOption` when it parses: parsing a group's options (on the way to
    any verb) imports no pydantic. Its subcommands are made plain too (a sub-app's own
    commands and groups are typer's plain classes until then)."""

    def get_params(self, ctx: Any) -> list[Any]:
        params: list[Any] = super().get_params(ctx)
        plain_options(params)
        return params

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if type(command) is TyperCommand:
            command.__class__ = PlainCommand
        elif type(command) is TyperGroup:
            command.__class__ = PlainGroup
        return command


class PlainCommand(TyperCommand):
    """A verb whose bool and enum options (``-h`` and ``--json`` among them) are
    :class:`PlainOption` when it parses: a verb that needs no pydantic imports none."""

    def get_params(self, ctx: Any) -> list[Any]:
        params: list[Any] = super().get_params(ctx)
        plain_options(params)
        return params


# -- verbs imported when they run ------------------------------------------------------


def load(target: str) -> Any:
    """The object ``"module:attribute"`` names, its module imported now."""
    module, _, attribute = target.partition(":")
    return getattr(import_module(module), attribute)


_docstrings: dict[str, dict[str, str | None]] = {}


def source_docstring(target: str) -> tuple[bool, str | None]:
    """``(found, docstring)`` of the function ``"module:attribute"`` names, read from its
    module's source without importing the module. Found only for a top-level ``def``
    without decorators, whose help is its docstring as :func:`inspect.getdoc` cleans it."""
    module, _, attribute = target.partition(":")
    if module not in _docstrings:
        spec = find_spec(module)
        origin = spec.origin if spec is not None else None
        found: dict[str, str | None] = {}
        if origin is not None and origin.endswith(".py"):
            tree = ast.parse(Path(origin).read_text(encoding="utf-8"))
            for node in tree.body:
                if isinstance(node, ast.FunctionDef) and not node.decorator_list:
                    found[node.name] = ast.get_docstring(node)
        _docstrings[module] = found
    docs = _docstrings[module]
    return attribute in docs, docs.get(attribute)


class LazyCommands(MutableMapping[str, Any]):
    """Name -> click command, built on first access; iteration and ``len`` build nothing.

    While :attr:`listing` is set, a verb not built yet is answered by a stand-in that
    carries only its name and help (read from the source, :func:`source_docstring`), so a
    help page or a completion that lists the verbs imports none of them."""

    def __init__(self, verbs: dict[str, str], build: Any) -> None:
        self._verbs = dict(verbs)
        self._build = build
        self._built: dict[str, Any] = {}
        self.listing = False

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            if name not in self._verbs:
                raise KeyError(name)
            if self.listing:
                found, doc = source_docstring(self._verbs[name])
                if found:
                    return TyperCommand(name, help=doc)
            self._built[name] = self._build(name, load(self._verbs[name]))
        return self._built[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self._verbs.setdefault(name, "")
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        del self._verbs[name]
        self._built.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._verbs)

    def __len__(self) -> int:
        return len(self._verbs)

    def __contains__(self, name: object) -> bool:
        return name in self._verbs


def lazy_group(verbs: dict[str, str], owner: typer.Typer) -> type[TyperGroup]:
    """A TyperGroup class (for ``typer.Typer(cls=...)``) whose commands are ``verbs``:
    name -> ``"module:attribute"``, a command function (as ``app.command(name)`` would
    register it) or a :class:`typer.Typer` (a group, as ``app.add_typer``).

    A verb's module is imported when the verb is looked up to run or to show its own
    help. The group's plain help page and shell completion list the verbs from their
    source (:class:`LazyCommands`). ``owner`` is the Typer the group belongs to: its
    exception and markup settings are the ones typer would pass when building every
    command eagerly, so help, parsing and errors are those of an eagerly built app.
    """

    def build(name: str, target: Any) -> Any:
        if isinstance(target, typer.Typer):
            group = get_group_from_info(
                TyperInfo(target, name=name),
                pretty_exceptions_short=owner.pretty_exceptions_short,
                rich_markup_mode=owner.rich_markup_mode,
                suggest_commands=owner.suggest_commands,
            )
            if type(group) is TyperGroup:
                group.__class__ = PlainGroup
            return group
        return get_command_from_info(
            CommandInfo(name=name, callback=target, cls=PlainCommand),
            pretty_exceptions_short=owner.pretty_exceptions_short,
            rich_markup_mode=owner.rich_markup_mode,
        )

    class LazyGroup(PlainGroup):
        def __init__(self, **attrs: Any) -> None:
            super().__init__(**attrs)
            eager = dict(self.commands)
            self.lazy = LazyCommands(verbs, build)
            self.lazy.update(eager)
            self.commands = self.lazy

        def list_commands(self, ctx: Any) -> list[str]:
            return list(self.lazy)  # typer's own walks items(), which builds them all

        def format_commands(self, ctx: Any, formatter: Any) -> None:
            self.lazy.listing = True
            try:
                super().format_commands(ctx, formatter)
            finally:
                self.lazy.listing = False

        def shell_complete(self, ctx: Any, incomplete: str) -> list[Any]:
            self.lazy.listing = True  # this group's verbs and options, never one's own
            try:
                return super().shell_complete(ctx, incomplete)
            finally:
                self.lazy.listing = False

    return LazyGroup


# Attributes every LogRecord has; anything else on a record came from ``extra=`` and is
# written as a field of its own.
_RECORD_ATTRIBUTES = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
}


def iso_time(record: logging.LogRecord) -> str:
    """The record's time in UTC, ISO 8601 with milliseconds and the ``+00:00`` offset."""
    return datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")


class TextFormatter(logging.Formatter):
    """``TIME LEVEL LOGGER: message`` with an ISO 8601 UTC time (offset included), made
    terminal-safe (a message may quote a PR title or a command's output)."""

    def format(self, record: logging.LogRecord) -> str:
        return terminal_safe(super().format(record))

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802
        return iso_time(record)


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time, level, logger, message and every ``extra`` field,
    so ``jq -r 'select(.reason) | [.pr, .reason] | @tsv'`` works on the engine's log."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "time": iso_time(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _RECORD_ATTRIBUTES and not key.startswith("_"):
                data[key] = value
        if record.exc_info:
            data["exception"] = self.formatException(record.exc_info).splitlines()[-1]
        return json.dumps(data, default=str)


class LogFormat(enum.StrEnum):
    TEXT = "text"
    JSON = "json"


class LogLevel(enum.StrEnum):
    DEBUG = "debug"
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


QUIET_LOGGERS = ("alembic", "apscheduler")
URL_LOGGERS = ("httpx", "httpcore")


def configure_logging(level: str, log_format: str) -> None:
    """Log to stderr at ``level`` (debug/info/warning/error) as ``text`` or ``json``."""
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(TextFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # alembic narrates every migration context at INFO, APScheduler every job it runs
    # ("Running job", "executed successfully"): only debug logging wants that. An idle
    # engine logs nothing at INFO.
    chatty = logging.DEBUG if level.lower() == "debug" else logging.WARNING
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(chatty)
    # httpx logs whole URLs (a webhook URL carries its secret): never, at any level. The
    # GitHub client logs its own requests at DEBUG (engine.github.client).
    for name in URL_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
