"""The starter files ``kdev init`` writes, rendered from the package data in ``starter/``.

``wrapper/starter/`` is the one copy of the example schedule set, the repos config, the
starter kdev.yaml, the systemd units and the Containerfile: the repository root's
``schedules.example.yaml``, ``repos.example.yaml`` and ``contrib/`` link to it, and the
wheel ships it, so an install without a checkout has them (docs/decisions.md D75).

The units there are written for the layout of docs/operations.md (a venv at
``/opt/pr-review``, the state in ``/var/lib/pr-review``, the user ``pr-review``);
:func:`render_unit` gives them the paths of a :class:`Host` instead. Every failure is a
:class:`~wrapper.errors.ConfigError` (exit 2) with an ``init_*`` reason code.
"""

from __future__ import annotations

import grp
import os
import pwd
import re
import sys
import sysconfig
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from wrapper.config import check_repo
from wrapper.errors import ConfigError

INSTALLED_BIN = "/opt/pr-review/bin/"
STATE_DIR = "/var/lib/pr-review"
EXAMPLE_REPO = "octo/widgets"
UNITS = ("li-engine.service", "kdev-pr-sweep.service", "kdev-pr-sweep.timer")
# Target name -> the starter file it is rendered from.
SOURCES = {
    "kdev.yaml": "kdev.yaml",
    "schedules.yaml": "schedules.example.yaml",
    "repos.yaml": "repos.example.yaml",
    **{f"systemd/{name}": f"systemd/{name}" for name in UNITS},
}
# ProtectHome=yes hides these; an install or a directory under one needs a bind mount.
HOMES = (Path("/home"), Path("/root"), Path("/run/user"))
# Characters a path in a unit would need quoting or escaping for (systemd's % specifiers).
UNSAFE = re.compile(r"[\s%$\"'\\;]")


def starter_dir() -> Path:
    """The installed ``wrapper/starter/`` directory (plain files in a wheel install)."""
    return Path(str(files("wrapper").joinpath("starter")))


@dataclass(frozen=True)
class Host:
    """What the units name: where ``li`` and ``kdev`` are, who runs them, and where."""

    scripts: Path
    user: str
    group: str
    directory: Path
    install: tuple[Path, ...]
    repo: str = EXAMPLE_REPO


def _safe(path: Path, what: str) -> Path:
    if UNSAFE.search(str(path)):
        raise ConfigError(
            f"{what} {str(path)!r} holds a space, quote, '%', '$', ';' or backslash, "
            "which a systemd unit line cannot carry as it is",
            "init_unsafe_path",
        )
    return path


def this_host(
    directory: Path,
    *,
    user: str | None = None,
    repo: str | None = None,
    scripts: Path | None = None,
) -> Host:
    """The :class:`Host` of this install: the running interpreter's scripts directory
    (unless ``scripts``), ``user`` (default: the one running this) and ``directory``."""
    scripts = Path(scripts or sysconfig.get_path("scripts")).absolute()
    missing = [name for name in ("li", "kdev") if not (scripts / name).is_file()]
    if missing:
        raise ConfigError(
            f"{', '.join(missing)} not found in {scripts}: run the kdev of the install "
            "the units should start",
            "init_no_executables",
        )
    try:
        entry = pwd.getpwnam(user) if user else pwd.getpwuid(os.getuid())
        group = grp.getgrgid(entry.pw_gid).gr_name
    except KeyError:
        raise ConfigError(f"no such user: {user!r}", "init_unknown_user") from None
    if repo is not None:
        check_repo(repo)  # ConfigError invalid_repo
    install = tuple(dict.fromkeys(Path(p).absolute() for p in (sys.prefix, sys.base_prefix)))
    for path in (scripts, directory, *install):
        _safe(path, "the path")
    return Host(scripts, entry.pw_name, group, directory, install, repo or EXAMPLE_REPO)


def _under_home(path: Path) -> bool:
    return any(path.is_relative_to(home) for home in HOMES)


def set_key(lines: list[str], key: str, value: str | None, after: str | None = None) -> None:
    """Set ``key=value`` in a unit's lines (drop it when ``value`` is None); a key the
    unit lacks goes after the ``after=`` line. A template without it is a bug (ValueError)."""
    found = [i for i, line in enumerate(lines) if line.startswith(f"{key}=")]
    if found:
        if value is None:
            del lines[found[0]]
        else:
            lines[found[0]] = f"{key}={value}"
        return
    if value is None:
        return
    anchors = [i for i, line in enumerate(lines) if after and line.startswith(f"{after}=")]
    if not anchors:
        raise ValueError(f"the unit has no {key}= and no {after}= to put it after")
    lines.insert(anchors[0] + 1, f"{key}={value}")


def render_unit(text: str, host: Host) -> str:
    """A starter unit with ``host``'s paths, user and directory."""
    lines = text.splitlines()
    if any(line.startswith("[Service]") for line in lines):
        _render_service(lines, host)
    readme = starter_dir() / "README.md"
    set_key(lines, "Documentation", f"file://{readme}", after="Description")
    return "\n".join(lines) + "\n"


def _render_service(lines: list[str], host: Host) -> None:
    (start,) = [line for line in lines if line.startswith("ExecStart=")]
    program = start.removeprefix("ExecStart=")
    if not program.startswith(INSTALLED_BIN):
        raise ValueError(f"ExecStart does not start with {INSTALLED_BIN}")
    command = f"{host.scripts}/{program.removeprefix(INSTALLED_BIN)}"
    command = command.replace("/etc/pr-review/repos.yaml", str(host.directory / "repos.yaml"))
    set_key(lines, "ExecStart", command)
    set_key(lines, "User", host.user)
    set_key(lines, "Group", host.group)
    set_key(lines, "WorkingDirectory", str(host.directory))
    set_key(lines, "ReadWritePaths", str(host.directory))
    if host.directory != Path(STATE_DIR):
        set_key(lines, "StateDirectory", None)
    hidden = [path for path in (host.scripts, *host.install) if _under_home(path)]
    if hidden or _under_home(host.directory):
        set_key(lines, "ProtectHome", "tmpfs")
        binds = " ".join(str(path) for path in dict.fromkeys(hidden)) or None
        set_key(lines, "BindReadOnlyPaths", binds, after="ReadWritePaths")
        if _under_home(host.directory):
            set_key(lines, "BindPaths", str(host.directory), after="ReadWritePaths")


def render_all(host: Host) -> dict[str, str]:
    """Target name (relative to the directory) -> its text."""
    rendered = {}
    for target, source in SOURCES.items():
        text = (starter_dir() / source).read_text(encoding="utf-8")
        if target.startswith("systemd/"):
            text = render_unit(text, host)
        else:
            text = text.replace(EXAMPLE_REPO, host.repo)
        rendered[target] = text
    return rendered


def write_starter(host: Host, *, force: bool = False) -> list[Path]:
    """Write every starter file into ``host.directory``; the paths written, in order.

    Without ``force`` an existing target is refused before anything is written."""
    rendered = render_all(host)
    targets = {host.directory / name: text for name, text in rendered.items()}
    existing = [path for path in targets if path.exists() or path.is_symlink()]
    if existing and not force:
        names = ", ".join(str(path) for path in existing)
        raise ConfigError(
            f"refusing to overwrite {names}; nothing written (--force overwrites)",
            "init_target_exists",
        )
    try:
        for path, text in targets.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("w" if force else "x", encoding="utf-8") as handle:
                handle.write(text)
    except OSError as exc:
        message = f"cannot write {exc.filename}: {exc.strerror}"
        raise ConfigError(message, "init_write_failed") from exc
    return list(targets)
