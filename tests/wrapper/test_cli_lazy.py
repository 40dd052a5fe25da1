"""kdev's verbs are imported when they are looked up, not when the command line is built
(wrapper/cli/lazy.py, issue 19), and the lazy app is the eager one: same verbs, same
order, same commands."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys

import typer.main

from wrapper.cli.app import VERBS, app

VERB_MODULES = sorted({target.partition(":")[0] for target in VERBS.values()})

# In a fresh interpreter: build the root group, list it, then look one verb up.
PROBE = """
import json, sys, typer.main
from wrapper.cli.app import app
group = typer.main.get_command(app)
names = list(group.commands)
loaded_before = sorted(m for m in sys.modules if m.startswith("wrapper.cli."))
group.commands["watch"]
loaded_after = sorted(m for m in sys.modules if m.startswith("wrapper.cli."))
print(json.dumps([names, loaded_before, loaded_after]))
"""


def test_building_and_listing_the_command_line_imports_no_verb() -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=120
    )
    names, before, after = json.loads(result.stdout)
    assert names == list(VERBS)
    assert not set(VERB_MODULES) & set(before), before
    # The verb's module, and the options the verbs share (wrapper/cli/options.py).
    assert set(after) - set(before) == {"wrapper.cli.authorloop", "wrapper.cli.options"}


def test_every_verb_builds_the_command_it_names() -> None:
    group = typer.main.get_command(app)
    commands = group.commands  # type: ignore[attr-defined]
    for name, target in VERBS.items():
        command = commands[name]
        assert command.name == name
        module, _, attribute = target.partition(":")
        obj = getattr(sys.modules[module], attribute)
        if isinstance(obj, typer.Typer):
            assert set(command.commands) == {info.name for info in obj.registered_commands}, name
        else:
            assert command.callback is not None and command.help == inspect.getdoc(obj), name
