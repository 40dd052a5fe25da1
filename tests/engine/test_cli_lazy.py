"""``li`` imports a verb's module (and SQLAlchemy, the store, httpx, ...) only when that
verb runs or shows its own help (issue 25): ``li --version``, ``li -h``, a group's
``-h`` and a TAB import none of them, and what they list is what the verbs say."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import typer.main

from engine.cli.app import DB_VERBS, ENGINE_VERBS, SCHEDULE_VERBS, app
from engine.clikit import source_docstring

BIN = Path(sys.executable).parent
HEAVY = {"sqlalchemy", "alembic", "apscheduler", "httpx", "pydantic", "pydantic_settings", "rich"}
VERB_MODULES = {
    target.partition(":")[0]
    for table in (SCHEDULE_VERBS, DB_VERBS, ENGINE_VERBS)
    for target in table.values()
}

# Runs the real console script file in this interpreter, then writes the names of every
# module the process imported (sys.modules at exit, however each was imported) to argv[1].
DRIVER = (
    "import atexit, json, runpy, sys; out = sys.argv.pop(1); "
    "atexit.register(lambda: open(out, 'w').write(json.dumps(sorted(sys.modules)))); "
    "sys.argv[0] = sys.argv.pop(1); runpy.run_path(sys.argv[0], run_name='__main__')"
)


def run_li(
    tmp_path: Path, *args: str, extra_env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """``li ARGS`` on a SQLite database in ``tmp_path``: its result and its modules."""
    listing = tmp_path / "modules.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LI_", "_LI_", "COMP_"))}
    env.update(NO_COLOR="1", LI_DATABASE_URL=f"sqlite:///{tmp_path / 'li.db'}")
    env.update(extra_env or {})
    result = subprocess.run(
        [sys.executable, "-c", DRIVER, str(listing), str(BIN / "li"), *args],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    return result, set(json.loads(listing.read_text()))


def heavy(modules: set[str]) -> set[str]:
    return {name for name in modules if name.partition(".")[0] in HEAVY} | {
        name for name in modules if name.startswith("engine.store") or name in VERB_MODULES
    }


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (["--version"], "li 0.1.0"),
        (["--help"], "Add, inspect and fire schedules."),
        (["-h"], "Run the engine."),
        (["schedule", "--help"], "List every schedule."),
        (["db", "-h"], "Migrate the database to the newest schema."),
        (["engine", "-h"], "Run the engine until SIGTERM/SIGINT (or one pass with"),
        (["--log-format", "json", "--log-level", "debug", "schedule", "-h"], "show "),
    ],
)
def test_version_and_group_help_import_no_verb(tmp_path: Path, args: list[str], shown: str) -> None:
    result, modules = run_li(tmp_path, *args)
    assert result.returncode == 0, result.stderr
    assert shown in result.stdout
    assert heavy(modules) == set(), sorted(heavy(modules))


@pytest.mark.parametrize(
    ("words", "cword", "expected"),
    [
        ("li sch", "1", ["schedule"]),
        ("li schedule p", "2", ["pause", "preview"]),
        ("li --log-level debug e", "3", ["engine"]),
    ],
)
def test_tab_completion_imports_no_verb(
    tmp_path: Path, words: str, cword: str, expected: list[str]
) -> None:
    protocol = {"_LI_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": cword}
    result, modules = run_li(tmp_path, extra_env=protocol)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == expected
    assert heavy(modules) == set(), sorted(heavy(modules))


def test_a_verb_imports_its_own_module_and_not_the_others(tmp_path: Path) -> None:
    result, modules = run_li(tmp_path, "schedule", "list")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[:2] == ["NAME", "ENABLED"]
    assert {"sqlalchemy", "engine.store.store", "engine.cli.schedule_list"} <= modules
    assert modules & VERB_MODULES == {"engine.cli.schedule_list"}
    assert "httpx" not in modules  # only the verbs that talk to GitHub import the client
    shown, modules = run_li(tmp_path, "schedule", "add", "--help")
    assert shown.returncode == 0 and "--max-runs" in shown.stdout, shown.stderr
    assert modules & VERB_MODULES == {"engine.cli.schedule_add"}


# What `li schedule list` on a SQLite database at head does without (issue 25): the
# schema is checked with no alembic, read with no SQLAlchemy, the settings with no pydantic.
LIST_NEVER = {"alembic", "sqlalchemy", "pydantic", "pydantic_settings", "apscheduler", "httpx"}


def test_listing_an_empty_sqlite_database_imports_no_alembic_sqlalchemy_or_pydantic(
    tmp_path: Path,
) -> None:
    first, modules = run_li(tmp_path, "schedule", "list")  # creates and migrates the file
    assert first.returncode == 0, first.stderr
    assert "alembic" in modules  # the migration needs it, and only the migration
    for args in (["schedule", "list"], ["schedule", "list", "--json"]):
        result, modules = run_li(tmp_path, *args)
        assert result.returncode == 0, result.stderr
        assert {name.partition(".")[0] for name in modules} & LIST_NEVER == set()
        assert "engine.store.store" not in modules and "engine.config" not in modules
    assert result.stdout.strip() == "[]"
    table, _ = run_li(tmp_path, "schedule", "list")
    assert table.stdout.split() == "NAME ENABLED TRIGGER COMMAND NEXT FIRE LAST FIRE RUNS".split()


def test_a_database_behind_head_is_still_migrated_by_list(tmp_path: Path) -> None:
    from engine.store import db as dbmod

    url = f"sqlite:///{tmp_path / 'li.db'}"
    engine = dbmod.make_engine(url, create_parent=True)
    dbmod.upgrade(engine, "0010")
    result, modules = run_li(tmp_path, "schedule", "list")
    assert result.returncode == 0, result.stderr
    assert "alembic" in modules
    assert dbmod.current_revision(engine) == dbmod.HEAD_REVISION
    engine.dispose()


def test_a_malformed_setting_still_fails_list_in_one_line(tmp_path: Path) -> None:
    run_li(tmp_path, "schedule", "list")
    result, _ = run_li(tmp_path, "schedule", "list", extra_env={"LI_POLL_THREADS": "0"})
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "error: LI_POLL_THREADS must be a whole number from 1 to 100, got '0' [invalid_setting]"
    )


def test_an_invalid_root_option_keeps_typers_error(tmp_path: Path) -> None:
    """A value the plain coercion does not know goes to typer's (pydantic's): same error,
    same exit code, and still no verb imported."""
    result, modules = run_li(tmp_path, "--log-level", "loud", "schedule", "-h")
    assert result.returncode == 2
    assert "pydantic" in modules and modules & VERB_MODULES == set()
    assert result.stderr.strip() == (
        "error: Invalid value for '--log-level': Value error, 'loud' is not one of "
        "'debug', 'info', 'warning', 'error'. (li) [usage_error]"
    )


def test_listed_help_is_the_verbs_own() -> None:
    """What a group's help page and a TAB list without importing a verb (its docstring,
    read from the source) is what the built command says, at every width."""
    root = typer.main.get_command(app)
    for group, table in (("schedule", SCHEDULE_VERBS), ("db", DB_VERBS), ("engine", ENGINE_VERBS)):
        commands = root.commands[group].commands  # type: ignore[attr-defined]
        assert list(commands) == list(table)
        for name, target in table.items():
            found, doc = source_docstring(target)
            built = commands[name]
            assert found and doc == built.help, name
            stand_in = typer.core.TyperCommand(name, help=doc)
            for limit in (20, 45, 60, 74):
                assert stand_in.get_short_help_str(limit) == built.get_short_help_str(limit)


def test_a_verb_whose_help_is_not_a_plain_docstring_is_imported_to_list_it(
    tmp_path: Path,
) -> None:
    """A decorated function, or a name that is not a top-level ``def``, is not read from
    the source: listing it imports its module, so its help is never guessed."""
    (tmp_path / "verbs_plain.py").write_text('def hello() -> None:\n    """Say hello."""\n')
    (tmp_path / "verbs_decorated.py").write_text(
        textwrap.dedent(
            '''
            import functools

            def shout(f):
                @functools.wraps(f)
                def inner():
                    return f()
                inner.__doc__ = "Shout it."
                return inner

            @shout
            def hi() -> None:
                """Say hi."""

            def _bye() -> None:
                """Say bye."""

            bye = _bye
            '''
        )
    )
    probe = textwrap.dedent(
        """
        import json, sys, typer, typer.main
        from engine.clikit import OneLineErrorsTyper, lazy_group
        app = OneLineErrorsTyper(name="t", rich_markup_mode=None)
        verbs = {"hello": "verbs_plain:hello", "hi": "verbs_decorated:hi",
                 "bye": "verbs_decorated:bye"}
        app.info.cls = lazy_group(verbs, app)
        app.callback()(lambda: None)
        group = typer.main.get_command(app)
        ctx = group.make_context("t", ["-h"], resilient_parsing=True)
        page = group.get_help(ctx)
        print(json.dumps([page, sorted(m for m in sys.modules if m.startswith("verbs_"))]))
        """
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    page, imported = json.loads(result.stdout)
    assert imported == ["verbs_decorated"]  # verbs_plain was listed from its source
    assert "Say hello." in page and "Shout it." in page and "Say bye." in page
    assert "Say hi." not in page


def test_an_invalid_verb_option_keeps_typers_error(tmp_path: Path) -> None:
    """A verb's enum option coerced without pydantic (engine.clikit.PlainCommand) still
    gives typer's error word for word for a value it does not know."""
    result, modules = run_li(
        tmp_path, "schedule", "add", "x", "--every", "60", "--overlap", "bogus", "sh"
    )
    assert result.returncode == 2
    assert "pydantic" in modules
    assert result.stderr.strip() == (
        "error: Invalid value for '--overlap': Value error, 'bogus' is not one of "
        "'skip', 'allow'. (li schedule add) [usage_error]"
    )
