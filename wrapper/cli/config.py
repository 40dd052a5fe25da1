"""``kdev config validate`` and ``kdev config show``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
import yaml

from engine.termsafe import echo
from wrapper.cli.common import config_path, guarded
from wrapper.config import load_config
from wrapper.errors import ConfigError


def config_validate(
    repos_config: Path | None = typer.Option(
        None, "--repos-config", help="Also check this repos config (YAML)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Check kdev.yaml (--config / KDEV_CONFIG) and a repos config: every problem at once,
    each as FILE:LINE: problem [reason], and that the reviewer's executable and the
    variables the config names are there; exit 2 when there is any."""
    from wrapper.configcheck import check_configs
    from wrapper.credentials import kdev_environ

    def work() -> None:
        kdev_path = config_path()
        if not kdev_path and repos_config is None:
            raise ConfigError(
                "nothing to check: give --config, KDEV_CONFIG or --repos-config", "usage_error"
            )
        kdev_file = Path(kdev_path) if kdev_path else None
        problems = check_configs(kdev_file, repos_config, kdev_environ())
        if as_json:
            shown = {"ok": not problems, "problems": [p.to_json() for p in problems]}
            typer.echo(json.dumps(shown))
        else:
            for problem in problems:
                echo(str(problem))
        if problems:
            raise ConfigError(f"{len(problems)} problem(s) in the configuration", "invalid_config")
        if not as_json:
            echo("configuration ok")

    guarded(work)


def _withheld(value: Any, secrets: list[str]) -> Any:
    """``value`` with every known secret (a webhook URL's secret path, say) replaced."""
    if isinstance(value, str):
        for secret in sorted(secrets, key=len, reverse=True):
            value = value.replace(secret, "<withheld>")
        return value
    if isinstance(value, list):
        return [_withheld(item, secrets) for item in value]
    if isinstance(value, dict):
        return {key: _withheld(item, secrets) for key, item in value.items()}
    return value


def config_show(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Print the effective kdev configuration, defaults included. It holds no secrets:
    the names of the variables that hold them, and webhook URLs with their secret path
    withheld."""
    from wrapper.credentials import kdev_environ
    from wrapper.leakscan import known_secrets

    def work() -> None:
        config = load_config(config_path())
        data = _withheld(config.model_dump(mode="json"), known_secrets(config, kdev_environ()))
        if as_json:
            typer.echo(json.dumps(data))
        else:
            typer.echo(yaml.safe_dump(data, sort_keys=False), nl=False)

    guarded(work)


config_app = typer.Typer(
    name="config", help="Check and print the configuration.", no_args_is_help=True
)
config_app.command("validate")(config_validate)
config_app.command("show")(config_show)
