"""``kdev init``: the starter files of a new install, with this host's paths (D75)."""

from __future__ import annotations

import shlex
from pathlib import Path

import typer

from engine.termsafe import echo
from wrapper.cli.common import guarded


def init_cmd(
    directory: Path = typer.Option(
        Path("."), "--dir", help="Write the files here (created if missing)."
    ),
    repo: str | None = typer.Option(
        None, "--repo", help="OWNER/NAME the schedules and the repos config name."
    ),
    user: str | None = typer.Option(
        None, "--user", help="The units' User= (default: the one running kdev init)."
    ),
    force: bool = typer.Option(False, "--force", help="Overwrite files that exist."),
) -> None:
    """Write a starter kdev.yaml, schedules.yaml, repos.yaml and systemd units (with this
    install's li and kdev, the user and the directory) into --dir. An existing file is
    refused, and then nothing is written, unless --force. The files come from the
    installed package (wrapper/starter/README.md describes them)."""
    from wrapper.starterfiles import this_host, write_starter

    def work() -> None:
        host = this_host(directory.absolute(), user=user, repo=repo)
        for path in write_starter(host, force=force):
            echo(f"wrote {path}")
        here = host.directory
        if any(here.is_relative_to(tmp) for tmp in (Path("/tmp"), Path("/var/tmp"))):
            echo(f"warning: {here} is under a temporary directory, which the units'")
            echo("  PrivateTmp=yes hides from the service: use another --dir for a service")
        q = shlex.quote
        echo("next:")
        echo(f"  KDEV_CONFIG={q(str(here / 'kdev.yaml'))} kdev config validate")
        echo(f"  kdev config validate --repos-config {q(str(here / 'repos.yaml'))}")
        echo("  li db upgrade")
        echo(f"  li schedule apply {q(str(here / 'schedules.yaml'))} --dry-run")
        echo(f"  sudo cp {q(str(here / 'systemd'))}/* /etc/systemd/system/")
        echo("  sudo systemctl daemon-reload && sudo systemctl enable --now li-engine.service")

    guarded(work)
