"""Planning a ScheduleSet: desired schedules vs existing ones -> one plan item per name.

Pure (apart from the working-directory check in ``check_spec``): no YAML, no database.
It compares the desired set with the schedules that exist and says, per name, CREATE,
UPDATE, UNCHANGED, REMOVE or ERROR. Apply (engine.store.store.Store.apply_plan) runs
only when no item is an ERROR, so a set is all or nothing. The file that declares a set
is read by engine.schedules.schedulefile.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from engine.errors import LiError
from engine.schedules.spec import ScheduleSpec, check_spec


@dataclass(frozen=True)
class ScheduleSet:
    """The schedules one owner declares; ``owner`` is stored as ``managed_by``."""

    owner: str
    schedules: list[ScheduleSpec]


@dataclass(frozen=True)
class ExistingSchedule:
    """A schedule in the database as planning sees it: its spec and who manages it."""

    spec: ScheduleSpec
    managed_by: str | None


class PlanAction(enum.StrEnum):
    """What applying a set does to one schedule name."""

    CREATE = "CREATE"  # the name does not exist; apply creates it, managed by the owner
    UPDATE = "UPDATE"  # it exists and differs (or is unmanaged and gets adopted)
    UNCHANGED = "UNCHANGED"  # it exists, equal, managed by this owner; apply leaves it
    REMOVE = "REMOVE"  # managed by this owner but no longer in the file; apply deletes it
    ERROR = "ERROR"  # refused (reason + message); apply changes nothing at all


@dataclass(frozen=True)
class PlanItem:
    """One line of a plan. ``spec`` is the desired spec (None for REMOVE)."""

    action: PlanAction
    name: str
    spec: ScheduleSpec | None
    changes: tuple[str, ...] = ()  # field names that differ, for UPDATE
    reason: str | None = None  # for ERROR
    message: str | None = None  # for ERROR


def _changed_fields(current: ScheduleSpec, desired: ScheduleSpec) -> tuple[str, ...]:
    return tuple(
        field
        for field in ScheduleSpec.model_fields
        if getattr(current, field) != getattr(desired, field)
    )


def _plan_one(
    spec: ScheduleSpec,
    current: ExistingSchedule | None,
    owner: str,
    allowlist: frozenset[str],
    check_cwd: bool,
) -> PlanItem:
    try:
        check_spec(spec, allowlist, check_cwd=check_cwd)
    except LiError as exc:
        return PlanItem(PlanAction.ERROR, spec.name, spec, reason=exc.reason, message=exc.message)
    if current is None:
        return PlanItem(PlanAction.CREATE, spec.name, spec)
    if current.managed_by is not None and current.managed_by != owner:
        return PlanItem(
            PlanAction.ERROR,
            spec.name,
            spec,
            reason="owned_by_other_set",
            message=f"schedule {spec.name!r} is managed by set {current.managed_by!r}, "
            f"not {owner!r}",
        )
    changes = _changed_fields(current.spec, spec)
    if current.managed_by is None:
        # An unmanaged schedule of that name is adopted, so the file becomes its source.
        return PlanItem(PlanAction.UPDATE, spec.name, spec, changes=("managed_by", *changes))
    if changes:
        return PlanItem(PlanAction.UPDATE, spec.name, spec, changes=changes)
    return PlanItem(PlanAction.UNCHANGED, spec.name, spec)


def plan(
    existing: Sequence[ExistingSchedule],
    desired: ScheduleSet,
    allowlist: frozenset[str],
    *,
    check_cwd: bool = True,
) -> list[PlanItem]:
    """What applying ``desired`` over ``existing`` does, one item per name.

    Items come in file order, then REMOVE items sorted by name. Only schedules whose
    ``managed_by`` is ``desired.owner`` are ever removed; a name managed by another
    owner is an ERROR (``owned_by_other_set``), an unmanaged one is adopted (UPDATE
    with change ``managed_by``). A spec that fails ``check_spec`` is an ERROR with that
    check's reason; a name listed twice is an ERROR ``duplicate_name``.
    """
    by_name = {item.spec.name: item for item in existing}
    items: list[PlanItem] = []
    listed: set[str] = set()
    for spec in desired.schedules:
        if spec.name in listed:
            items.append(
                PlanItem(
                    PlanAction.ERROR,
                    spec.name,
                    spec,
                    reason="duplicate_name",
                    message=f"schedule {spec.name!r} is listed twice",
                )
            )
            continue
        listed.add(spec.name)
        items.append(_plan_one(spec, by_name.get(spec.name), desired.owner, allowlist, check_cwd))
    removed = sorted(
        name
        for name, item in by_name.items()
        if item.managed_by == desired.owner and name not in listed
    )
    items.extend(PlanItem(PlanAction.REMOVE, name, None) for name in removed)
    return items


def plan_has_errors(items: Iterable[PlanItem]) -> bool:
    """True when any item is an ERROR, in which case apply must change nothing."""
    return any(item.action is PlanAction.ERROR for item in items)
