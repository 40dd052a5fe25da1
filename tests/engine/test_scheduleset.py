"""ScheduleSet files: strict loading with file:line errors, planning, dumping, poll config."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from engine.errors import InvalidInput
from engine.poll.config import (
    GithubPollConfig,
    parse_filter,
    parse_repo,
    validate_poll_config,
)
from engine.schedules.dump import dump_schedule_set
from engine.schedules.plan import (
    ExistingSchedule,
    PlanAction,
    PlanItem,
    ScheduleSet,
    plan,
    plan_has_errors,
)
from engine.schedules.schedulefile import load_schedule_set
from engine.schedules.spec import ScheduleSpec
from engine.store.models import OverlapPolicy, TriggerType

REPO_ROOT = Path(__file__).resolve().parents[2]
ALLOW = frozenset({"report", "kdev"})


def write(tmp_path: Path, text: str, name: str = "schedules.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def load_error(tmp_path: Path, text: str) -> tuple[int, str]:
    """The (line, message after FILE:LINE:) of a file that must not load."""
    path = write(tmp_path, text)
    with pytest.raises(InvalidInput) as caught:
        load_schedule_set(path)
    error = caught.value
    assert error.reason == "invalid_schedule_file"
    assert "\n" not in error.message
    prefix = f"{path}:"
    assert error.message.startswith(prefix), error.message
    line, _, rest = error.message[len(prefix) :].partition(": ")
    return int(line), rest


def cron_spec(name: str = "nightly-report", **changes: Any) -> ScheduleSpec:
    fields: dict[str, Any] = {
        "name": name,
        "trigger_type": TriggerType.CRON,
        "cron": "0 3 * * *",
        "command": "report",
    }
    fields.update(changes)
    return ScheduleSpec(**fields)


# -- loading: the happy path ------------------------------------------------------------


def test_a_documented_file_loads_into_schedule_specs(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    path = write(
        tmp_path,
        """
        version: 1
        owner: team-pipeline
        schedules:
          - name: nightly-report
            cron: "0 3 * * *"
            timezone: Europe/Paris
            command: report
            args: ["--since", "{{fired_at}}"]
            cwd: work
            timeout: 1h30m
            max_runs: 3
            env_passthrough: [GITHUB_TOKEN]
          - name: every-quarter-hour
            enabled: false
            every: 15m
            command: report
            overlap: allow
          - name: watch-prs
            github:
              repo: octo/widgets
              poll_interval: 2m
              filters: {base: main, draft: false}
              page_limit: 20
            command: kdev
        """,
    )
    loaded = load_schedule_set(path)
    assert loaded.owner == "team-pipeline"
    nightly, quarter, watch = loaded.schedules
    assert nightly == ScheduleSpec(
        name="nightly-report",
        trigger_type=TriggerType.CRON,
        cron="0 3 * * *",
        timezone="Europe/Paris",
        command="report",
        args=["--since", "{{fired_at}}"],
        cwd=str(tmp_path / "work"),
        timeout_seconds=5400,
        max_runs=3,
        env_passthrough=["GITHUB_TOKEN"],
    )
    assert quarter.trigger_type is TriggerType.INTERVAL
    assert quarter.interval_seconds == 900
    assert quarter.enabled is False
    assert quarter.overlap is OverlapPolicy.ALLOW
    assert quarter.timeout_seconds == 3600
    assert quarter.cwd is None
    assert watch.trigger_type is TriggerType.GITHUB_POLL
    assert watch.interval_seconds is None
    assert watch.trigger_config == {
        "repo": "octo/widgets",
        "poll_interval_seconds": 120,
        "filters": {"state": "open", "base": "main", "draft": False, "same_repo_only": True},
        "event": "pr_updated",
        "max_fires_per_poll": 10,
        "backfill": False,
        "page_limit": 20,
    }


def test_a_relative_cwd_resolves_against_the_files_folder_not_the_process_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "sets"
    folder.mkdir()
    path = write(
        folder,
        """
        version: 1
        owner: o
        schedules:
          - {name: a, every: 5m, command: report, cwd: ../checkout/./sub}
        """,
    )
    monkeypatch.chdir(REPO_ROOT)
    (spec,) = load_schedule_set(path).schedules
    assert spec.cwd == str(tmp_path / "checkout" / "sub")


def test_an_empty_schedule_list_is_a_valid_set_that_lists_nothing(tmp_path: Path) -> None:
    path = write(tmp_path, "version: 1\nowner: o\nschedules: []\n")
    assert load_schedule_set(path) == ScheduleSet(owner="o", schedules=[])


def test_yaml_merge_keys_share_settings_without_counting_as_duplicate_keys(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path,
        """
        version: 1
        owner: o
        schedules:
          - &common
            name: first
            every: 5m
            command: report
            timeout: 10m
          - <<: *common
            name: second
            timeout: 20m
        """,
    )
    first, second = load_schedule_set(path).schedules
    assert (first.name, first.timeout_seconds) == ("first", 600)
    assert (second.name, second.interval_seconds, second.timeout_seconds) == ("second", 300, 1200)


# -- loading: every refusal names the file and the line ----------------------------------


def test_an_unknown_key_is_refused_at_its_line_and_named(tmp_path: Path) -> None:
    line, message = load_error(
        tmp_path,
        """
        version: 1
        owner: o
        schedules:
          - name: a
            every: 5m
            colour: blue
            command: report
        """,
    )
    assert line == 6
    assert message == "schedule 'a': unknown key 'colour'"


def test_an_unknown_top_level_key_is_refused_at_its_line(tmp_path: Path) -> None:
    line, message = load_error(tmp_path, "version: 1\nowner: o\nschedule: []\n")
    assert (line, message) == (3, "unknown key 'schedule'")


def test_an_unknown_key_inside_github_filters_is_refused_at_its_line(tmp_path: Path) -> None:
    line, message = load_error(
        tmp_path,
        """
        version: 1
        owner: o
        schedules:
          - name: a
            github:
              repo: octo/widgets
              filters:
                base: main
                drafts: false
            command: kdev
        """,
    )
    assert line == 9
    assert message == "schedule 'a': github.filters: unknown key 'drafts'"


def test_a_quoted_yes_is_not_a_boolean(tmp_path: Path) -> None:
    line, message = load_error(
        tmp_path,
        """
        version: 1
        owner: o
        schedules:
          - name: a
            enabled: "yes"
            every: 5m
            command: report
        """,
    )
    assert line == 5
    assert message == "schedule 'a': enabled: input should be a valid boolean, got 'yes'"


def test_a_quoted_number_is_not_an_integer(tmp_path: Path) -> None:
    line, message = load_error(
        tmp_path,
        """
        version: 1
        owner: o
        schedules:
          - name: a
            every: 5m
            command: report
            max_runs: "3"
        """,
    )
    assert line == 7
    assert message.startswith("schedule 'a': max_runs: input should be a valid integer")


def test_a_boolean_is_not_an_integer_either(tmp_path: Path) -> None:
    line, message = load_error(
        tmp_path,
        "version: 1\nowner: o\nschedules:\n  - {name: a, every: 5m, command: x, max_runs: true}\n",
    )
    assert line == 4
    assert message == "schedule 'a': max_runs: input should be a valid integer, got true"


def test_max_runs_below_one_is_refused(tmp_path: Path) -> None:
    line, message = load_error(
        tmp_path,
        "version: 1\nowner: o\nschedules:\n  - name: a\n    every: 5m\n"
        "    command: x\n    max_runs: 0\n",
    )
    assert line == 7
    assert "greater than or equal to 1" in message


def test_a_number_among_the_args_is_refused_at_its_own_line(tmp_path: Path) -> None:
    line, message = load_error(
        tmp_path,
        """
        version: 1
        owner: o
        schedules:
          - name: a
            every: 5m
            command: report
            args:
              - --count
              - 5
        """,
    )
    assert line == 9
    assert message == "schedule 'a': args[1]: input should be a valid string, got 5"


def test_a_second_schedule_with_the_same_name_is_refused_at_the_second(tmp_path: Path) -> None:
    line, message = load_error(
        tmp_path,
        """
        version: 1
        owner: o
        schedules:
          - name: a
            every: 5m
            command: report
          - name: b
            every: 5m
            command: report
          - name: a
            cron: "0 * * * *"
            command: report
        """,
    )
    assert line == 10
    assert message == "schedule 'a' is defined twice (first at line 4)"


def test_a_repeated_key_in_one_schedule_is_refused_instead_of_silently_keeping_the_last(
    tmp_path: Path,
) -> None:
    line, message = load_error(
        tmp_path,
        """
        version: 1
        owner: o
        schedules:
          - name: a
            every: 5m
            command: report
            timeout: 10m
            command: rm
        """,
    )
    assert line == 8
    assert message == "duplicate key 'command' (first at line 6)"


def test_a_repeated_top_level_key_is_refused(tmp_path: Path) -> None:
    line, message = load_error(tmp_path, "version: 1\nowner: a\nschedules: []\nowner: b\n")
    assert (line, message) == (4, "duplicate key 'owner' (first at line 2)")


@pytest.mark.parametrize("duration", ["0s", "-5m", "5x", "''", "5"])
@pytest.mark.parametrize("key", ["every", "timeout"])
def test_a_bad_duration_is_refused_at_its_line(tmp_path: Path, key: str, duration: str) -> None:
    trigger = "" if key == "every" else "    cron: '0 * * * *'\n"
    line, message = load_error(
        tmp_path,
        f"version: 1\nowner: o\nschedules:\n  - name: a\n{trigger}"
        f"    command: report\n    {key}: {duration}\n",
    )
    assert line == (7 if key == "timeout" else 6)
    assert message.startswith(f"schedule 'a': {key}")


@pytest.mark.parametrize(
    ("duration", "problem"),
    [
        ("5x", "is not a duration"),
        ("0s", "longer than zero"),
        ("5s", "at least 10s"),
        ("120", "must be a duration"),
    ],
)
def test_a_bad_poll_interval_is_refused_at_its_line(
    tmp_path: Path, duration: str, problem: str
) -> None:
    line, message = load_error(
        tmp_path,
        f"""
        version: 1
        owner: o
        schedules:
          - name: a
            command: kdev
            github:
              repo: octo/widgets
              poll_interval: {duration}
        """,
    )
    assert line == 8
    assert message.startswith("schedule 'a': github.poll_interval")
    assert problem in message


def test_an_invalid_cron_expression_is_refused_at_its_line(tmp_path: Path) -> None:
    line, message = load_error(
        tmp_path,
        """
        version: 1
        owner: o
        schedules:
          - name: a
            command: report
            cron: "61 * * * *"
        """,
    )
    assert line == 6
    assert message.startswith("schedule 'a': invalid cron expression '61 * * * *'")


def test_an_unknown_timezone_is_refused_at_its_line(tmp_path: Path) -> None:
    line, message = load_error(
        tmp_path,
        """
        version: 1
        owner: o
        schedules:
          - name: a
            cron: "0 3 * * *"
            timezone: Europe/Atlantis
            command: report
        """,
    )
    assert line == 6
    assert message.startswith("schedule 'a': unknown timezone 'Europe/Atlantis'")


def test_a_timezone_on_a_github_schedule_is_refused(tmp_path: Path) -> None:
    line, message = load_error(
        tmp_path,
        """
        version: 1
        owner: o
        schedules:
          - name: a
            github: {repo: octo/widgets}
            timezone: UTC
            command: kdev
        """,
    )
    assert line == 6
    assert "timezone applies to cron and every only" in message


def test_a_missing_command_is_refused_at_the_schedules_first_line(tmp_path: Path) -> None:
    line, message = load_error(
        tmp_path,
        """
        version: 1
        owner: o
        schedules:
          - name: a
            every: 5m
            command: report
          - name: b
            every: 5m
        """,
    )
    assert line == 7
    assert message == "schedule 'b': missing required key 'command'"


def test_a_schedule_without_a_trigger_is_refused_at_its_first_line(tmp_path: Path) -> None:
    line, message = load_error(
        tmp_path,
        """
        version: 1
        owner: o
        schedules:
          - name: a
            command: report
        """,
    )
    assert line == 4
    assert message == "schedule 'a': give exactly one of cron, every or github (found none)"


def test_a_schedule_with_two_triggers_is_refused_at_the_second(tmp_path: Path) -> None:
    line, message = load_error(
        tmp_path,
        """
        version: 1
        owner: o
        schedules:
          - name: a
            every: 5m
            command: report
            cron: "0 * * * *"
        """,
    )
    assert line == 7
    assert message == (
        "schedule 'a': give exactly one of cron, every or github (found cron and every)"
    )


def test_an_invalid_schedule_name_is_refused_at_its_line(tmp_path: Path) -> None:
    line, message = load_error(
        tmp_path,
        "version: 1\nowner: o\nschedules:\n  - every: 5m\n    command: x\n    name: -a\n",
    )
    assert line == 6
    assert message.startswith("schedule name '-a' must be")


def test_an_env_passthrough_that_is_not_a_variable_name_is_refused_at_its_item(
    tmp_path: Path,
) -> None:
    line, message = load_error(
        tmp_path,
        """
        version: 1
        owner: o
        schedules:
          - name: a
            every: 5m
            command: report
            env_passthrough:
              - HOME
              - NOT-A-NAME
        """,
    )
    assert line == 9
    assert message == "schedule 'a': env_passthrough 'NOT-A-NAME' is not a variable name"


def test_a_string_where_github_wants_a_boolean_is_refused_at_its_line(tmp_path: Path) -> None:
    line, message = load_error(
        tmp_path,
        """
        version: 1
        owner: o
        schedules:
          - name: a
            command: kdev
            github:
              repo: octo/widgets
              filters:
                draft: "false"
        """,
    )
    assert line == 9
    assert message == (
        "schedule 'a': github.filters.draft: input should be a valid boolean, got 'false'"
    )


def test_a_bad_repo_in_the_file_is_refused_at_its_line(tmp_path: Path) -> None:
    line, message = load_error(
        tmp_path,
        "version: 1\nowner: o\nschedules:\n  - name: a\n    command: kdev\n"
        "    github:\n      repo: -octo/widgets\n",
    )
    assert line == 7
    assert message.startswith("schedule 'a': github.repo: repo owner '-octo' must be")


def test_a_github_schedule_without_a_repo_is_refused_at_the_github_key(tmp_path: Path) -> None:
    line, message = load_error(
        tmp_path,
        "version: 1\nowner: o\nschedules:\n  - name: a\n    command: kdev\n"
        "    github:\n      event: pr_merged\n",
    )
    assert line == 6
    assert message == "schedule 'a': github: missing required key 'repo'"


def test_a_version_other_than_one_is_refused(tmp_path: Path) -> None:
    line, message = load_error(tmp_path, "owner: o\nversion: 2\nschedules: []\n")
    assert line == 2
    assert message == "version: input should be 1, got 2"


def test_a_missing_owner_is_refused(tmp_path: Path) -> None:
    line, message = load_error(tmp_path, "version: 1\nschedules: []\n")
    assert (line, message) == (1, "missing required key 'owner'")


def test_an_owner_that_is_not_a_plain_name_is_refused(tmp_path: Path) -> None:
    line, message = load_error(tmp_path, "version: 1\n\nowner: 'team pipeline'\nschedules: []\n")
    assert line == 3
    assert message.startswith("owner 'team pipeline' must be")


def test_a_yaml_syntax_error_is_refused_at_the_line_the_parser_points_at(tmp_path: Path) -> None:
    line, message = load_error(
        tmp_path,
        """
        version: 1
        owner: o
        schedules:
          - name: a
            command: report: now
            every: 5m
        """,
    )
    assert line == 5
    assert message == "YAML syntax error: mapping values are not allowed here"


def test_two_yaml_documents_in_one_file_are_refused(tmp_path: Path) -> None:
    line, message = load_error(tmp_path, "version: 1\nowner: o\nschedules: []\n---\nx: 1\n")
    assert line == 4
    assert message == (
        "YAML syntax error: expected a single document in the stream, but found another document"
    )


def test_a_python_object_tag_is_refused_by_the_safe_loader(tmp_path: Path) -> None:
    line, message = load_error(
        tmp_path, "version: 1\nowner: !!python/object:os.system x\nschedules: []\n"
    )
    assert line == 2
    assert message.startswith("YAML syntax error: could not determine a constructor")


def test_a_schedule_that_is_not_a_mapping_is_refused_at_its_item(tmp_path: Path) -> None:
    line, message = load_error(
        tmp_path, "version: 1\nowner: o\nschedules:\n  - {name: a, every: 5m, command: x}\n  - b\n"
    )
    assert (line, message) == (5, "schedules[1]: input should be a mapping, got 'b'")


def test_a_control_character_is_refused_at_its_line(tmp_path: Path) -> None:
    line, message = load_error(tmp_path, "version: 1\nowner: o\nschedules:\n  - name: a\x01\n")
    assert line == 4
    assert message.startswith("YAML syntax error: unacceptable character #x0001")


def test_a_top_level_list_is_refused(tmp_path: Path) -> None:
    line, message = load_error(tmp_path, "# a comment\n- name: a\n  every: 5m\n")
    assert line == 2
    assert message == (
        "the top level must be a mapping with version, owner and schedules, not a list"
    )


def test_an_empty_file_is_refused(tmp_path: Path) -> None:
    line, message = load_error(tmp_path, "# nothing here\n")
    assert line == 1
    assert message.startswith("the file is empty")


def test_a_missing_file_is_refused_without_a_line(tmp_path: Path) -> None:
    path = tmp_path / "absent.yaml"
    with pytest.raises(InvalidInput) as caught:
        load_schedule_set(path)
    assert caught.value.reason == "invalid_schedule_file"
    assert caught.value.message == (
        f"{path}: cannot read the schedule file: No such file or directory"
    )


def test_a_folder_given_as_the_file_is_refused_without_a_line(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as caught:
        load_schedule_set(tmp_path)
    assert caught.value.reason == "invalid_schedule_file"
    assert caught.value.message.startswith(f"{tmp_path}: cannot read the schedule file")


def test_a_file_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes("owner: équipe\n".encode("latin-1"))
    with pytest.raises(InvalidInput) as caught:
        load_schedule_set(path)
    assert caught.value.reason == "invalid_schedule_file"
    assert caught.value.message == f"{path}: the schedule file is not UTF-8 text"


# -- planning ----------------------------------------------------------------------------


def desired(*specs: ScheduleSpec, owner: str = "team") -> ScheduleSet:
    return ScheduleSet(owner=owner, schedules=list(specs))


def test_a_name_that_does_not_exist_is_created() -> None:
    spec = cron_spec()
    assert plan([], desired(spec), ALLOW) == [PlanItem(PlanAction.CREATE, spec.name, spec)]


def test_a_changed_schedule_is_updated_with_the_fields_that_differ() -> None:
    current = cron_spec()
    wanted = cron_spec(args=["--all"], timeout_seconds=60)
    (item,) = plan([ExistingSchedule(current, "team")], desired(wanted), ALLOW)
    assert item.action is PlanAction.UPDATE
    assert item.spec == wanted
    assert item.changes == ("args", "timeout_seconds")


def test_an_equal_schedule_of_the_same_owner_is_unchanged() -> None:
    spec = cron_spec()
    (item,) = plan([ExistingSchedule(cron_spec(), "team")], desired(spec), ALLOW)
    assert item == PlanItem(PlanAction.UNCHANGED, spec.name, spec)


def test_only_the_owners_own_unlisted_schedules_are_removed_after_the_file_order() -> None:
    existing = [
        ExistingSchedule(cron_spec("zeta"), "team"),
        ExistingSchedule(cron_spec("alpha"), "team"),
        ExistingSchedule(cron_spec("theirs"), "other-team"),
        ExistingSchedule(cron_spec("by-hand"), None),
        ExistingSchedule(cron_spec("kept"), "team"),
    ]
    items = plan(existing, desired(cron_spec("new"), cron_spec("kept")), ALLOW)
    assert [(item.action, item.name) for item in items] == [
        (PlanAction.CREATE, "new"),
        (PlanAction.UNCHANGED, "kept"),
        (PlanAction.REMOVE, "alpha"),
        (PlanAction.REMOVE, "zeta"),
    ]
    assert items[2].spec is None
    assert not plan_has_errors(items)


def test_an_unmanaged_schedule_of_the_same_name_is_adopted() -> None:
    spec = cron_spec()
    (item,) = plan([ExistingSchedule(cron_spec(), None)], desired(spec), ALLOW)
    assert item.action is PlanAction.UPDATE
    assert item.changes == ("managed_by",)
    (item,) = plan([ExistingSchedule(cron_spec(enabled=False), None)], desired(spec), ALLOW)
    assert item.changes == ("managed_by", "enabled")


def test_a_name_managed_by_another_set_is_an_error_and_not_touched() -> None:
    spec = cron_spec()
    items = plan([ExistingSchedule(cron_spec(), "other-team")], desired(spec), ALLOW)
    (item,) = items
    assert item.action is PlanAction.ERROR
    assert item.reason == "owned_by_other_set"
    assert item.message == "schedule 'nightly-report' is managed by set 'other-team', not 'team'"
    assert plan_has_errors(items)


def test_a_command_outside_the_allowlist_is_an_error_item() -> None:
    items = plan([], desired(cron_spec(command="rm"), cron_spec("fine")), ALLOW)
    assert [item.action for item in items] == [PlanAction.ERROR, PlanAction.CREATE]
    assert items[0].reason == "command_not_allowlisted"
    assert items[0].message is not None and "'rm'" in items[0].message
    assert plan_has_errors(items)


def test_a_missing_working_directory_is_an_error_unless_the_check_is_skipped(
    tmp_path: Path,
) -> None:
    spec = cron_spec(cwd=str(tmp_path / "nowhere"))
    (item,) = plan([], desired(spec), ALLOW)
    assert (item.action, item.reason) == (PlanAction.ERROR, "cwd_missing")
    (item,) = plan([], desired(spec), ALLOW, check_cwd=False)
    assert item.action is PlanAction.CREATE


def test_a_name_listed_twice_in_a_built_set_is_an_error() -> None:
    items = plan([], desired(cron_spec("a"), cron_spec("a", timeout_seconds=5)), ALLOW)
    assert [item.action for item in items] == [PlanAction.CREATE, PlanAction.ERROR]
    assert items[1].reason == "duplicate_name"


def test_the_example_file_plans_cleanly_as_all_creates() -> None:
    loaded = load_schedule_set(REPO_ROOT / "schedules.example.yaml")
    items = plan([], loaded, frozenset({"kdev"}))
    assert [(item.action, item.name) for item in items] == [
        (PlanAction.CREATE, "review-prs"),
        (PlanAction.CREATE, "pr-sweep"),
    ]
    review = loaded.schedules[0]
    assert review.trigger_config["repo"] == "octo/widgets"
    assert review.trigger_config["filters"]["draft"] is False
    assert review.args[:3] == ["review-pr", "--repo", "{{repo}}"]
    assert review.cwd == str(REPO_ROOT)


# -- dumping -----------------------------------------------------------------------------


ROUND_TRIP_SPECS = [
    cron_spec(timezone="Europe/Paris", args=["--since", "{{fired_at}}"], cwd="/srv/reports"),
    ScheduleSpec(
        name="quarterly",
        enabled=False,
        trigger_type=TriggerType.INTERVAL,
        interval_seconds=5400,
        command="report",
        timeout_seconds=90,
        max_runs=7,
        env_passthrough=["GITHUB_TOKEN", "HOME"],
        overlap=OverlapPolicy.ALLOW,
    ),
    ScheduleSpec(
        name="watch",
        trigger_type=TriggerType.GITHUB_POLL,
        trigger_config=GithubPollConfig.model_validate(
            {
                "repo": "octo/widgets",
                "poll_interval_seconds": 45,
                "filters": {"base": "main", "draft": True, "same_repo_only": False},
                "event": "pr_merged",
                "max_fires_per_poll": 3,
                "backfill": True,
                "page_limit": 5,
            }
        ).model_dump(mode="json"),
        command="kdev",
        args=["yes", "null", "1", "- a", "# not a comment", "{{repo}}", ""],
    ),
    ScheduleSpec(
        name="defaults",
        trigger_type=TriggerType.GITHUB_POLL,
        trigger_config=GithubPollConfig(repo="o/r").model_dump(mode="json"),
        command="kdev",
    ),
]


def test_a_dumped_set_loads_back_to_equal_specs(tmp_path: Path) -> None:
    text = dump_schedule_set("team", ROUND_TRIP_SPECS)
    loaded = load_schedule_set(write(tmp_path, text))
    assert loaded == ScheduleSet(owner="team", schedules=ROUND_TRIP_SPECS)


def test_a_dump_omits_defaults_and_writes_readable_durations() -> None:
    text = dump_schedule_set("team", ROUND_TRIP_SPECS[1:2] + ROUND_TRIP_SPECS[3:])
    assert "every: 1h30m" in text
    assert "timeout: 1m30s" in text
    assert "repo: o/r" in text
    for default in ("poll_interval", "filters", "event", "backfill", "overlap: skip"):
        assert default not in text


@settings(max_examples=50, deadline=None)
@example(args=["\x85", "a\u2028b", "yes", "é", "\ufeffx", "a: b"], name="a")
@given(
    args=st.lists(st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=20)),
    name=st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9._-]{0,20}\Z"),
)
def test_any_args_and_name_survive_a_dump_and_load(
    tmp_path_factory: pytest.TempPathFactory, args: list[str], name: str
) -> None:
    spec = cron_spec(name, args=args)
    path = tmp_path_factory.mktemp("dump") / "set.yaml"
    path.write_text(dump_schedule_set("team", [spec]), encoding="utf-8")
    assert load_schedule_set(path).schedules == [spec]


# -- github poll config ------------------------------------------------------------------


def test_a_poll_config_with_only_a_repo_takes_the_defaults() -> None:
    config = validate_poll_config({"repo": "octo/widgets"})
    assert config.model_dump(mode="json") == {
        "repo": "octo/widgets",
        "poll_interval_seconds": 120,
        "filters": {"state": "open", "base": None, "draft": None, "same_repo_only": True},
        "event": "pr_updated",
        "max_fires_per_poll": 10,
        "backfill": False,
        "page_limit": None,
    }


@pytest.mark.parametrize(
    "repo",
    [
        "-octo/x",
        "octo-/x",
        "oc--to/x",
        "a" * 40 + "/x",
        "octo/..",
        "octo/.",
        "octo",
        "octo/",
        "/x",
        "octo/x/y",
        "octo/wid gets",
        "octo/" + "x" * 101,
        "oc_to/x",
    ],
)
def test_a_repo_that_github_could_not_have_is_refused(repo: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_repo(repo)
    assert caught.value.reason == "invalid_repo"
    with pytest.raises(InvalidInput) as caught:
        validate_poll_config({"repo": repo})
    assert caught.value.reason == "invalid_trigger_config"
    assert caught.value.message.startswith("trigger_config.repo: repo ")


@pytest.mark.parametrize(
    "repo", ["a" * 39 + "/x", "octo-cat/wid.gets_1-2", "o/r", "octo/.github", "o/" + "x" * 100]
)
def test_a_real_looking_repo_is_accepted_unchanged(repo: str) -> None:
    assert parse_repo(repo) == repo
    assert validate_poll_config({"repo": repo}).repo == repo


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"filters": {"draft": "false"}}, "trigger_config.filters.draft"),
        ({"filters": {"same_repo_only": 1}}, "trigger_config.filters.same_repo_only"),
        ({"filters": {"state": "closed"}}, "trigger_config.filters.state"),
        ({"filters": {"base": ""}}, "trigger_config.filters.base"),
        ({"page_limit": True}, "trigger_config.page_limit"),
        ({"page_limit": 4}, "trigger_config.page_limit"),
        ({"page_limit": 101}, "trigger_config.page_limit"),
        ({"poll_interval_seconds": 9}, "trigger_config.poll_interval_seconds"),
        ({"poll_interval_seconds": "120"}, "trigger_config.poll_interval_seconds"),
        ({"max_fires_per_poll": 0}, "trigger_config.max_fires_per_poll"),
        ({"max_fires_per_poll": 1001}, "trigger_config.max_fires_per_poll"),
        ({"backfill": "no"}, "trigger_config.backfill"),
        ({"event": "pr_closed"}, "trigger_config.event"),
        ({"colour": "blue"}, "trigger_config"),
    ],
)
def test_a_poll_config_with_a_wrong_type_or_range_is_refused_naming_the_field(
    change: dict[str, Any], field: str
) -> None:
    with pytest.raises(InvalidInput) as caught:
        validate_poll_config({"repo": "octo/widgets", **change})
    assert caught.value.reason == "invalid_trigger_config"
    assert caught.value.message.startswith(f"{field}: ")
    assert "\n" not in caught.value.message


def test_a_poll_config_that_is_not_a_mapping_is_refused() -> None:
    with pytest.raises(InvalidInput) as caught:
        validate_poll_config(["octo/widgets"])
    assert caught.value.reason == "invalid_trigger_config"
    assert caught.value.message.startswith("trigger_config: ")


def test_a_poll_config_without_a_repo_names_the_missing_key() -> None:
    with pytest.raises(InvalidInput) as caught:
        validate_poll_config({})
    assert caught.value.message == "trigger_config: missing required key 'repo'"


def test_page_limit_accepts_its_bounds() -> None:
    assert validate_poll_config({"repo": "o/r", "page_limit": 5}).page_limit == 5
    assert validate_poll_config({"repo": "o/r", "page_limit": 100}).page_limit == 100


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("draft=false", ("draft", False)),
        ("draft=true", ("draft", True)),
        ("same_repo_only=FALSE", ("same_repo_only", False)),
        ("base=main", ("base", "main")),
        ("base=release/1.x", ("base", "release/1.x")),
        ("state=open", ("state", "open")),
    ],
)
def test_a_cli_filter_is_parsed_to_its_typed_value(
    text: str, expected: tuple[str, str | bool]
) -> None:
    assert parse_filter(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "drafts=false",
        "draft=no",
        "draft=",
        "same_repo_only=1",
        "base",
        "base=",
        "state=closed",
        "=main",
    ],
)
def test_a_cli_filter_with_an_unknown_key_or_bad_value_is_refused(text: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_filter(text)
    assert caught.value.reason == "invalid_filter"
