"""``li schedule apply|export``: schedules as a YAML ScheduleSet."""

from __future__ import annotations

from pathlib import Path

import typer

from engine.cli.common import emit_json, guarded, open_store, settings
from engine.clikit import fail
from engine.errors import InvalidInput, LiError
from engine.schedules.argv import check_templates
from engine.schedules.dump import dump_schedule_set
from engine.schedules.plan import PlanAction, plan, plan_has_errors
from engine.schedules.schedulefile import load_schedule_set
from engine.store.store import spec_of
from engine.termsafe import echo


def schedule_apply(
    file: Path = typer.Argument(..., help="A ScheduleSet YAML file."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Plan only; change nothing."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Plan a YAML ScheduleSet against the database and apply it, all or nothing."""

    def work() -> None:
        config = settings()
        desired = load_schedule_set(file)
        for spec in desired.schedules:
            try:
                check_templates(spec.args)
            except LiError as exc:
                raise InvalidInput(
                    f"{file}: schedule {spec.name}: {exc.message}", exc.reason
                ) from None
        store = open_store(config)
        items = plan(store.existing_for_plan(), desired, config.command_allowlist)
        errors = plan_has_errors(items)
        if not dry_run and not errors:
            store.apply_plan(items, desired.owner)
        if as_json:
            emit_json(
                {
                    "owner": desired.owner,
                    "dry_run": dry_run,
                    "applied": not dry_run and not errors,
                    "items": [
                        {
                            "action": str(i.action),
                            "name": i.name,
                            "changes": list(i.changes),
                            "reason": i.reason,
                            "message": i.message,
                        }
                        for i in items
                    ],
                }
            )
        else:
            for item in items:
                detail = f" ({', '.join(item.changes)})" if item.changes else ""
                if item.action is PlanAction.ERROR:
                    detail = f": {item.message} [{item.reason}]"
                echo(f"{str(item.action):9} {item.name}{detail}")
        if errors:
            count = sum(1 for i in items if i.action is PlanAction.ERROR)
            fail(
                InvalidInput(
                    f"{count} schedule(s) in {file} have errors; nothing applied", "plan_has_errors"
                )
            )
        if not as_json:
            echo("dry run: nothing changed" if dry_run else "applied")

    guarded(work)


def schedule_export(
    owner: str | None = typer.Option(
        None, "--owner", help="Only schedules of this set (and name the set)."
    ),
) -> None:
    """Print schedules as a ScheduleSet YAML that `li schedule apply` accepts."""

    def work() -> None:
        rows = open_store(settings()).list_schedules()
        if owner is not None:
            rows = [r for r in rows if r.managed_by == owner]
        typer.echo(dump_schedule_set(owner or "exported", [spec_of(r) for r in rows]), nl=False)

    guarded(work)
