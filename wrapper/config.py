"""kdev configuration: ``KDEV_CONFIG`` (YAML, validated, unknown keys refused).

Precedence for the reviews directory: ``--reviews-dir`` flag > ``KDEV_REVIEWS_DIR`` >
``reviews_dir`` in the file > ``<user data dir>/kdev/reviews``. This module and
:func:`load_config`'s caller are the only readers of the environment.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    Field,
    StrictInt,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from engine.errors import InvalidInput, field_checked
from engine.github import repo_problem
from wrapper.config_base import Strict as _Strict
from wrapper.config_base import listed_once
from wrapper.config_exclusions import ExclusionSettings
from wrapper.config_gate import MergeGateSettings
from wrapper.config_incremental import IncrementalSettings
from wrapper.config_money import MoneyBudgets
from wrapper.config_notify import CommandTarget as CommandTarget
from wrapper.config_notify import FileTarget as FileTarget
from wrapper.config_notify import GithubCommentTarget as GithubCommentTarget
from wrapper.config_notify import LogTarget as LogTarget
from wrapper.config_notify import NotifyTarget as NotifyTarget
from wrapper.config_notify import WebhookTarget as WebhookTarget
from wrapper.config_notify import default_notify as default_notify
from wrapper.config_prices import ModelPrice, UsageFormat
from wrapper.config_review import ReviewPostSettings
from wrapper.config_sizing import SizePolicy
from wrapper.errors import ConfigError

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
DEFAULT_REVIEWER_TIMEOUT = 1200


LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost")
HEADER_NAME = re.compile(r"^[A-Za-z0-9-]{1,64}$")
# A config error whose pydantic type is one of these keeps it as its reason code.
REASON_ERROR_TYPES = frozenset({"proxy_key_exposed"})


class ApiProxy(_Strict):
    """``reviewer.api_proxy``: kdev forwards the reviewer's LLM calls to ``upstream`` and
    adds the key itself (wrapper.review.proxy); the reviewer never holds the key."""

    upstream: str  # https://host[:port][/prefix]; http only to a loopback host
    key_env: str  # read by kdev from its own environment, never given to the reviewer
    header: str = "x-api-key"  # "authorization": "Authorization: Bearer <key>"
    base_url_env: list[str] = Field(min_length=1)  # each is set to the proxy's base URL
    placeholder_env: dict[str, str] = Field(default_factory=dict)  # dummies CLIs insist on
    max_request_bytes: StrictInt = Field(16 * 1024 * 1024, ge=1024)
    max_response_bytes: StrictInt = Field(64 * 1024 * 1024, ge=1024)
    request_timeout_seconds: float = Field(600.0, gt=0, le=7200)

    @field_validator("upstream")
    @classmethod
    def _upstream(cls, value: str) -> str:
        from urllib.parse import urlsplit

        parts = urlsplit(value)
        if parts.scheme not in ("https", "http") or not parts.hostname:
            raise ValueError(f"upstream {value!r} is not an https:// URL")
        if parts.scheme == "http" and parts.hostname not in LOOPBACK_HOSTS:
            raise ValueError(f"upstream {value!r}: http only to a loopback host; use https")
        if parts.username or parts.password or parts.query or parts.fragment:
            raise ValueError(f"upstream {value!r}: no user, query or fragment")
        try:
            parts.port  # noqa: B018 - raises on a bad port
        except ValueError:
            raise ValueError(f"upstream {value!r} has a bad port") from None
        return value.rstrip("/")

    @field_validator("key_env")
    @classmethod
    def _key_env(cls, value: str) -> str:
        if not ENV_NAME.match(value):
            raise ValueError(f"key_env {value!r} is not an environment variable name")
        return value

    @field_validator("header")
    @classmethod
    def _header(cls, value: str) -> str:
        lowered = value.lower()
        if not HEADER_NAME.match(lowered) or lowered in ("host", "content-length", "connection"):
            raise ValueError(f"header {value!r} cannot carry the key")
        return lowered

    @field_validator("base_url_env")
    @classmethod
    def _names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not ENV_NAME.match(name):
                raise ValueError(f"{name!r} is not an environment variable name")
        return value

    @model_validator(mode="after")
    def _placeholders(self) -> ApiProxy:
        for name in self.placeholder_env:
            if not ENV_NAME.match(name) or name in self.base_url_env:
                raise ValueError(f"placeholder_env: {name!r} is not a free variable name")
        return self


class CommandReviewer(_Strict):
    """A reviewer CLI: ``argv`` runs in the worktree; the prompt goes by stdin or file.

    With ``prompt_via: file`` the argument ``{prompt_file}`` in ``argv`` is replaced by
    the path of the rendered prompt.
    """

    backend: Literal["command"] = "command"
    argv: list[str] = Field(min_length=1)
    prompt_via: Literal["stdin", "file"] = "stdin"
    model: str = "command"
    timeout_seconds: StrictInt = Field(DEFAULT_REVIEWER_TIMEOUT, ge=1)
    env_passthrough: list[str] = Field(default_factory=list)
    # One leg per AGENT-REVIEWERS.md reviewer, merged into one verdict (wrapper.review.roster).
    roster: bool = False
    # The CLI calls its LLM API itself; false: no network inside the sandbox.
    network: bool = True
    # kdev holds the key and forwards the CLI's calls (no network inside the sandbox).
    api_proxy: ApiProxy | None = None
    usage: UsageFormat = "none"  # how its stdout reports usage (wrapper.usage_shapes, D103)

    @model_validator(mode="after")
    def _proxy_holds_the_key(self) -> CommandReviewer:
        proxy = self.api_proxy
        if proxy is None:
            return self
        exposed = {proxy.key_env, *proxy.base_url_env, *proxy.placeholder_env}
        if exposed & set(self.env_passthrough):
            raise PydanticCustomError(
                "proxy_key_exposed",
                "env_passthrough lists {names}, which api_proxy sets or keeps from the reviewer",
                {"names": ", ".join(sorted(exposed & set(self.env_passthrough)))},
            )
        if "network" in self.model_fields_set and self.network:
            raise ValueError("network: true and api_proxy: the proxy is the only way out")
        return self


class OpenAIReviewer(_Strict):
    """Any OpenAI-compatible chat-completions endpoint; the key is read from the
    environment variable *named* ``api_key_env`` (never stored in the config)."""

    backend: Literal["openai"]
    base_url: str
    model: str
    api_key_env: str = "OPENAI_API_KEY"
    timeout_seconds: StrictInt = Field(DEFAULT_REVIEWER_TIMEOUT, ge=1)
    temperature: float = 0.0
    # 429, 5xx and timeouts are tried again (wrapper.retrying): this many tries in all,
    # waiting retry_wait_seconds, doubling, with jitter (or the answer's Retry-After).
    max_attempts: StrictInt = Field(4, ge=1, le=10)
    retry_wait_seconds: float = Field(1.0, ge=0, le=60)
    # One leg per AGENT-REVIEWERS.md reviewer, merged into one verdict (wrapper.review.roster).
    roster: bool = False


Reviewer = Annotated[CommandReviewer | OpenAIReviewer, Field(discriminator="backend")]


class Budgets(_Strict):
    """Spending limits (docs/decisions.md D9).

    Legs are counted when *started*, over a trailing 24 h."""

    daily_legs_per_repo: StrictInt = Field(50, ge=0)
    max_concurrent_legs_per_repo: StrictInt = Field(2, ge=1)
    daily_rounds_per_pr: StrictInt = Field(10, ge=0)


RECIPIENT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def check_recipient_name(value: str) -> str:
    """``value`` if it can name a recipient (letters, digits, ``_.-``, up to 64)."""
    if not isinstance(value, str) or not RECIPIENT_NAME.match(value):
        raise ValueError(f"{value!r} is not a recipient name (letters, digits, '_', '.', '-')")
    return value


def _author_login(login: str) -> str:
    from engine.triggers import validate_handle  # only a config that sets it (D35)

    try:
        return validate_handle(login)
    except InvalidInput as exc:
        raise ValueError(f"author {login!r}: {exc.message}") from None


def _repository_name(repo: str) -> str:
    if repo_problem(repo) is not None:
        raise ValueError(f"{repo!r} is not a repository name OWNER/NAME")
    return repo


class RepositorySettings(_Strict):
    """kdev.yaml ``repositories.<OWNER/NAME>``: what holds for one repository."""

    # The recipient (a key of ``recipients``) every notice about this repository goes to.
    notify_to: str | None = None
    review_post: ReviewPostSettings | None = None  # wins over the top level's (D86)
    incremental: IncrementalSettings | None = None  # wins over the top level's (D92)
    merge_gate: MergeGateSettings | None = None  # replaces the global one here (D85)
    exclusions: ExclusionSettings | None = None  # layered on the top level's (D87)

    @field_validator("notify_to")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        return None if value is None else check_recipient_name(value)


class ReviewBot(_Strict):
    """One review bot: how to ask it, and how it says it is out of quota."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    login: str = Field(min_length=1)  # the account its comments come from
    trigger: str = Field(min_length=1)  # the comment that asks it for a review
    quota_pattern: str | None = None  # a regular expression, case-insensitive

    @field_validator("quota_pattern")
    @classmethod
    def _pattern(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"quota_pattern is not a regular expression: {exc}") from None
        return value


DEFAULT_BOTS: tuple[ReviewBot, ...] = (
    ReviewBot(
        name="gemini",
        login="gemini-code-assist[bot]",
        trigger="/gemini review",
        quota_pattern=r"reached your daily quota limit",
    ),
    ReviewBot(name="cursor", login="cursor[bot]", trigger="@cursor review"),
    ReviewBot(name="claude", login="claude[bot]", trigger="@claude review"),
)


class ReviewBots(_Strict):
    """``review_bots`` of kdev.yaml."""

    bots: list[ReviewBot] = Field(default_factory=lambda: list(DEFAULT_BOTS), min_length=1)
    per_round: int | None = Field(default=None, ge=1)  # None: every bot


class KdevConfig(_Strict):
    """The whole ``KDEV_CONFIG`` file. Every key is optional."""

    reviews_dir: str | None = None
    reviewer: Reviewer | None = None
    budgets: Budgets = Field(default_factory=Budgets)
    notify: list[NotifyTarget] = Field(default_factory=lambda: default_notify())
    prompt_template: str | None = None
    # Names of environment variables whose values must never appear in a verdict.
    secret_env: list[str] = Field(
        default_factory=lambda: ["GITHUB_TOKEN", "GH_TOKEN", "OPENAI_API_KEY"]
    )
    # Names of environment variables the reviewer may see (besides PATH, HOME, LANG).
    reviewer_env: list[str] = Field(default_factory=list)
    # The handle mentions summon (no "@"), neutralised in all kdev posts; needed to post.
    mention_handle: str | None = None
    # Numeric GitHub user ids whose comment (--comment-id) may summon a fork PR review.
    mention_allowlist: list[StrictInt] = Field(default_factory=list)
    # A cross-repository PR is reviewed on an allowlisted mention (never automatically).
    fork_review_on_mention: bool = True
    # A Jinja2 file replacing templates/describe.md.j2 (kdev describe-pr).
    describe_template: str | None = None
    # Where command reviewers run (wrapper.review.sandbox, docs/reviewers.md): bubblewrap, or
    # refuse to review without it (required), or fall back with a warning (preferred).
    sandbox: Literal["required", "preferred", "off"] = "preferred"
    # Absolute paths bound read-only into the sandbox (the reviewer CLI's install).
    sandbox_paths: list[str] = Field(default_factory=list)
    # The bubblewrap executable (a name on PATH or an absolute path).
    sandbox_bwrap: str = "bwrap"
    # Who gets a PR's notices (wrapper.notify.route, docs/wrapper.md "Who is notified"):
    # named target lists; a PR author's login -> a recipient; per repository, the
    # recipient that wins over the author's. ``notify`` is the last fallback.
    recipients: dict[str, list[NotifyTarget]] = Field(default_factory=dict)
    notify_authors: dict[str, str] = Field(default_factory=dict)
    # Who kdev's posts may ping (never mention_handle), and if #123 stays linked (D69).
    mention_allow: list[str] = Field(default_factory=list)
    allow_references: bool = False
    repositories: dict[str, RepositorySettings] = Field(default_factory=dict)
    # The review bots kdev request-reviews asks, in order (docs/author-loop.md).
    review_bots: ReviewBots = Field(default_factory=ReviewBots)
    # kdev triage's optional reviewer leg for the comments its rules leave undecided
    # (docs/author-loop.md): "reviewer" (the reviewer above) or a reviewer of its own.
    triage_reviewer: Literal["reviewer"] | Reviewer | None = None
    review_post: ReviewPostSettings = Field(default_factory=ReviewPostSettings)  # D86
    incremental: IncrementalSettings = Field(default_factory=IncrementalSettings)  # D92
    merge_gate: MergeGateSettings = Field(default_factory=MergeGateSettings)  # D85
    exclusions: ExclusionSettings = Field(default_factory=ExclusionSettings)  # D87
    size_policy: SizePolicy = Field(default_factory=SizePolicy)  # D89
    prices: dict[str, ModelPrice] = Field(default_factory=dict)  # D104
    money_budgets: MoneyBudgets = Field(default_factory=MoneyBudgets)  # D106

    @field_validator("recipients")
    @classmethod
    def _recipients(cls, value: dict[str, list[NotifyTarget]]) -> dict[str, list[NotifyTarget]]:
        for name, targets in value.items():
            check_recipient_name(name)
            if not targets:
                raise ValueError(f"recipient {name!r} has no targets")
            if any(isinstance(target, GithubCommentTarget) for target in targets):
                raise ValueError(
                    f"recipient {name!r}: github-comment belongs in notify, not in a recipient"
                )
        return value

    @field_validator("notify_authors")
    @classmethod
    def _authors(cls, value: dict[str, str]) -> dict[str, str]:
        return listed_once(value, "author", _author_login, check_recipient_name)

    @field_validator("repositories")
    @classmethod
    def _repositories(cls, value: dict[str, RepositorySettings]) -> dict[str, RepositorySettings]:
        return listed_once(value, "repository", _repository_name, lambda settings: settings)

    @model_validator(mode="after")
    def _recipients_exist(self) -> KdevConfig:
        named = [(f"notify_authors.{login}", name) for login, name in self.notify_authors.items()]
        named += [
            (f"repositories.{repo}.notify_to", settings.notify_to)
            for repo, settings in self.repositories.items()
            if settings.notify_to is not None
        ]
        for where, name in named:
            if name not in self.recipients:
                raise ValueError(f"{where}: {name!r} is not a key of recipients")
        return self

    def recipient(self, name: str) -> list[NotifyTarget]:
        """The targets of recipient ``name``; ``ConfigError unknown_recipient`` if none."""
        if name not in self.recipients:
            known = ", ".join(sorted(self.recipients)) or "none configured"
            raise ConfigError(
                f"recipient {name!r} is not in KDEV_CONFIG recipients ({known})",
                "unknown_recipient",
            )
        return list(self.recipients[name])

    def all_notify_targets(self) -> list[NotifyTarget]:
        """``notify`` and every recipient's targets (what leakscan must know)."""
        found: list[NotifyTarget] = list(self.notify)
        for targets in self.recipients.values():
            found += targets
        return found

    @field_validator("sandbox_paths")
    @classmethod
    def _absolute_paths(cls, value: list[str]) -> list[str]:
        for path in value:
            if not os.path.isabs(os.path.expanduser(path)):
                raise ValueError(f"sandbox_paths entry {path!r} is not an absolute path")
        return value

    @field_validator("mention_allowlist", mode="before")
    @classmethod
    def _allowlist(cls, value: Any) -> list[int]:
        from engine.triggers import allowlist_ids  # only a config that sets it (D35)

        return field_checked(allowlist_ids, value)

    @field_validator("mention_handle")
    @classmethod
    def _handle(cls, value: str | None) -> str | None:
        if value is None:
            return None
        from engine.triggers import validate_handle

        return field_checked(validate_handle, value)

    @model_validator(mode="after")
    def _posting_needs_a_handle(self) -> KdevConfig:
        if self.mention_allow:
            from engine.triggers import mention_names_problem  # only a config that sets it

            if problem := mention_names_problem(self.mention_allow, self.mention_handle):
                raise ValueError(f"mention_allow: {problem}")
        if self.mention_handle is None and any(
            isinstance(target, GithubCommentTarget) for target in self.notify
        ):
            raise ValueError("a github-comment notify target needs mention_handle")
        if self.mention_handle is None and self._posts_reviews():
            raise ValueError("review_post needs mention_handle (every body kdev posts is gated)")
        return self

    def _posts_reviews(self) -> bool:
        """True when ``review_post`` is on at the top level or for any repository."""
        own = [r.review_post for r in self.repositories.values() if r.review_post is not None]
        return any(setting.enabled for setting in (self.review_post, *own))

    @property
    def posts_review_comments(self) -> bool:
        """True when a ``github-comment`` notify target is configured."""
        return any(isinstance(target, GithubCommentTarget) for target in self.notify)


def check_repo(repo: str) -> tuple[str, str]:
    """``(owner, name)`` of ``OWNER/NAME``; refuses anything that could escape a path."""
    if repo_problem(repo) is not None:
        raise ConfigError(f"{repo!r} is not a repository name OWNER/NAME", "invalid_repo")
    owner, _, name = repo.partition("/")
    return owner, name


def default_reviews_dir() -> Path:
    """``<user data dir>/kdev/reviews`` (platformdirs)."""
    import platformdirs

    return Path(platformdirs.user_data_dir("kdev", appauthor=False)) / "reviews"


def read_yaml(path: Path, label: str, unreadable: str, invalid: str) -> Any:
    """The YAML at ``path``; ConfigError ``unreadable`` or ``invalid`` (not YAML) if not."""
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read {label} {path}: {exc.strerror}", unreadable) from None
    except yaml.YAMLError as exc:
        message = f"{label} {path} is not valid YAML: {exc}".replace("\n", " ")
        raise ConfigError(message, invalid) from None


def load_config(path: str | None) -> KdevConfig:
    """Read and validate the YAML at ``path`` (None: all defaults)."""
    if not path:
        return KdevConfig()
    data = read_yaml(Path(path), "KDEV_CONFIG", "config_unreadable", "invalid_config")
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"KDEV_CONFIG {path}: the top level must be a mapping", "invalid_config")
    try:
        return KdevConfig.model_validate(data)
    except ValidationError as exc:
        from engine.triggers import ALLOWLIST_CONFIG_ERROR

        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        kind = first["type"]
        reason = kind if kind in REASON_ERROR_TYPES else "invalid_config"
        if first["loc"][:1] == ("mention_allowlist",):
            reason = ALLOWLIST_CONFIG_ERROR
        said = first["msg"].removeprefix("Value error, ")  # no pydantic wording (D74)
        message = "unknown key" if kind == "extra_forbidden" else said
        raise ConfigError(f"KDEV_CONFIG {path}: {where}: {message}", reason) from None


def resolve_reviews_dir(
    config: KdevConfig, flag: str | None = None, environ: Mapping[str, str] | None = None
) -> Path:
    """flag > ``KDEV_REVIEWS_DIR`` > config file > default."""
    env = os.environ if environ is None else environ
    chosen = flag or env.get("KDEV_REVIEWS_DIR") or config.reviews_dir
    return Path(chosen).expanduser() if chosen else default_reviews_dir()
