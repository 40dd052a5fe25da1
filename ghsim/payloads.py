"""Response bodies built from the real GitHub example payloads in ``templates/``.

Every builder deep-copies the fixture object for its location and only *fills* keys the
fixture already has, so the key sets and nesting (``user``, ``head.repo``, ``_links`` ...)
are those of the real payloads. The copies in ``templates/`` are byte-identical to
``tests/fixtures/github/`` (sources and licenses in its ``SOURCES.md``; a test checks this).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ghsim.model import (
    CheckRun,
    Comment,
    CommitStatus,
    Pull,
    RateBucket,
    Repo,
    Review,
    User,
    iso,
    node_id,
)

TEMPLATE_DIR = Path(__file__).with_name("templates")
DOCS = "https://docs.github.com/rest"


def load_template(name: str) -> Any:
    """A fresh parsed copy of ``templates/<name>``."""
    return json.loads((TEMPLATE_DIR / name).read_text(encoding="utf-8"))


PULL_SIMPLE: dict[str, Any] = load_template("pulls-list.json")[0]
PULL_FULL: dict[str, Any] = load_template("pull.json")
ISSUE_COMMENT: dict[str, Any] = load_template("issue-comments-list.json")[0]
REVIEW_COMMENT: dict[str, Any] = load_template("review-comments-list.json")[0]
REVIEW: dict[str, Any] = load_template("pull-reviews-list.json")[0]
CHECK_RUNS: dict[str, Any] = load_template("check-runs-list.json")
COMBINED_STATUS: dict[str, Any] = load_template("combined-status.json")
RATE_LIMIT: dict[str, Any] = load_template("rate-limit.json")
USER: dict[str, Any] = PULL_FULL["user"]
LABEL: dict[str, Any] = PULL_FULL["labels"][0]


def error_body(message: str, doc: str = DOCS, status: int | None = None) -> dict[str, Any]:
    """GitHub's JSON error body."""
    body: dict[str, Any] = {"message": message, "documentation_url": doc}
    if status is not None:
        body["status"] = str(status)
    return body


def _subst(value: Any, pairs: Iterable[tuple[str, str]]) -> Any:
    pairs = list(pairs)
    if isinstance(value, str):
        for old, new in pairs:
            value = value.replace(old, new)
        return value
    if isinstance(value, dict):
        return {k: _subst(v, pairs) for k, v in value.items()}
    if isinstance(value, list):
        return [_subst(v, pairs) for v in value]
    return value


def _fill(obj: dict[str, Any], **values: Any) -> dict[str, Any]:
    """Set only keys the template already has (the shape stays the template's)."""
    for key, value in values.items():
        if key in obj:
            obj[key] = value
    return obj


@dataclass(frozen=True)
class PullFacts:
    """What the full pull payload needs from git, computed by the simulator."""

    base_sha: str
    mergeable: bool | None
    mergeable_state: str
    commits: int
    additions: int
    deletions: int
    changed_files: int
    comments: int
    review_comments: int


class Renderer:
    """Builds payloads with URLs under ``api`` (the base URL the client used)."""

    def __init__(self, api: str) -> None:
        self.api = api.rstrip("/")
        self.html = self.api
        # One renderer serves one request, so equal sub-objects can be built once and shared
        # (payloads are never mutated after they are built).
        self._cache: dict[tuple[Any, ...], dict[str, Any]] = {}

    def repo_api(self, repo: Repo) -> str:
        return f"{self.api}/repos/{repo.full_name}"

    def repo_html(self, repo: Repo) -> str:
        return f"{self.html}/{repo.full_name}"

    # -- shared objects --------------------------------------------------------------------

    def user(self, user: User | None, template: dict[str, Any] = USER) -> dict[str, Any] | None:
        if user is None:
            return None
        key = ("user", id(template), user.id, user.login, user.type)
        if key not in self._cache:
            self._cache[key] = self._user(user, template)
        return self._cache[key]

    def _user(self, user: User, template: dict[str, Any]) -> dict[str, Any]:
        obj = _subst(
            template,  # _subst builds new containers
            [
                (
                    "https://github.com/images/error/octocat_happy.gif",
                    f"https://avatars.githubusercontent.com/u/{user.id}?v=4",
                ),
                ("https://api.github.com/users/octocat", f"{self.api}/users/{user.login}"),
                ("https://github.com/octocat", f"{self.html}/{user.login}"),
            ],
        )
        kind = "Bot" if user.type == "Bot" else "User"
        return _fill(
            obj,
            login=user.login,
            id=user.id,
            node_id=node_id(kind, user.id),
            type=user.type,
            site_admin=False,
            gravatar_id="",
        )

    def repo(
        self, repo: Repo, template: dict[str, Any], open_issues: int = 0, forks: int = 0
    ) -> dict[str, Any]:
        key = ("repo", id(template), repo.id, open_issues, forks, repo.pushed_at)
        if key not in self._cache:
            self._cache[key] = self._repo(repo, template, open_issues, forks)
        return self._cache[key]

    def _repo(
        self, repo: Repo, template: dict[str, Any], open_issues: int, forks: int
    ) -> dict[str, Any]:
        obj = _subst(
            template,  # _subst builds new containers
            [
                ("https://api.github.com", self.api),
                ("https://github.com", self.html),
                ("octocat/Hello-World", repo.full_name),
            ],
        )
        return _fill(
            obj,
            id=repo.id,
            node_id=node_id("Repository", repo.id),
            name=repo.name,
            full_name=repo.full_name,
            owner=self.user(repo.owner, template.get("owner", USER)),
            private=repo.private,
            description=repo.description,
            fork=repo.fork,
            clone_url=repo.path.as_uri(),
            mirror_url=None,
            language=None,
            forks_count=forks,
            forks=forks,
            stargazers_count=0,
            watchers_count=0,
            watchers=0,
            size=0,
            network_count=forks,
            subscribers_count=0,
            default_branch=repo.default_branch,
            open_issues_count=open_issues,
            open_issues=open_issues,
            topics=[],
            is_template=False,
            template_repository=None,
            has_discussions=False,
            archived=False,
            disabled=False,
            visibility="private" if repo.private else "public",
            pushed_at=iso(repo.pushed_at),
            created_at=iso(repo.created_at),
            updated_at=iso(repo.pushed_at),
            temp_clone_token="",
            allow_auto_merge=True,
            delete_branch_on_merge=False,
        )

    def label(self, repo: Repo, name: str, label_id: int) -> dict[str, Any]:
        return _fill(
            copy.deepcopy(LABEL),
            id=label_id,
            node_id=node_id("Label", label_id),
            url=f"{self.repo_api(repo)}/labels/{name}",
            name=name,
            description="",
            color="ededed",
            default=False,
        )

    # -- pull requests ---------------------------------------------------------------------

    def _branch(
        self,
        template: dict[str, Any],
        repo: Repo,
        ref: str,
        sha: str,
        repo_visible: bool,
        open_issues: int,
        forks: int,
    ) -> dict[str, Any]:
        return _fill(
            dict(template),  # every nested value is replaced below
            label=f"{repo.owner.login}:{ref}",
            ref=ref,
            sha=sha,
            user=self.user(repo.owner, template["user"]),
            repo=self.repo(repo, template["repo"], open_issues, forks) if repo_visible else None,
        )

    def auto_merge(self, pr: Pull) -> dict[str, Any] | None:
        if pr.auto_merge is None:
            return None
        return {
            "enabled_by": self.user(pr.auto_merge["enabled_by"]),
            "merge_method": pr.auto_merge["method"],
            "commit_title": f"{pr.title} (#{pr.number})",
            "commit_message": pr.body or "",
        }

    def pull(
        self,
        pr: Pull,
        base_sha: str,
        association: str,
        open_issues: int = 0,
        forks: int = 0,
        facts: PullFacts | None = None,
    ) -> dict[str, Any]:
        """The pull as in the list (``facts=None``) or as ``GET .../pulls/{n}``."""
        template = PULL_SIMPLE if facts is None else PULL_FULL
        obj = dict(template)  # a shallow copy: every nested value is replaced below
        api_repo, html_repo, n = self.repo_api(pr.repo), self.repo_html(pr.repo), pr.number
        links = {
            "self": f"{api_repo}/pulls/{n}",
            "html": f"{html_repo}/pull/{n}",
            "issue": f"{api_repo}/issues/{n}",
            "comments": f"{api_repo}/issues/{n}/comments",
            "review_comments": f"{api_repo}/pulls/{n}/comments",
            "review_comment": f"{api_repo}/pulls/comments{{/number}}",
            "commits": f"{api_repo}/pulls/{n}/commits",
            "statuses": f"{api_repo}/statuses/{pr.head_sha}",
        }
        _fill(
            obj,
            url=links["self"],
            id=pr.id,
            node_id=node_id("PullRequest", pr.id),
            html_url=links["html"],
            diff_url=f"{html_repo}/pull/{n}.diff",
            patch_url=f"{html_repo}/pull/{n}.patch",
            issue_url=links["issue"],
            commits_url=links["commits"],
            review_comments_url=links["review_comments"],
            review_comment_url=links["review_comment"],
            comments_url=links["comments"],
            statuses_url=links["statuses"],
            number=n,
            state=pr.state,
            locked=pr.locked,
            title=pr.title,
            user=None if pr.user_null else self.user(pr.user),
            body=pr.body,
            labels=[self.label(pr.repo, name, pr.repo.labels[name]) for name in pr.labels],
            milestone=None,
            active_lock_reason=None,
            created_at=iso(pr.created_at),
            updated_at=iso(pr.updated_at),
            closed_at=iso(pr.closed_at),
            merged_at=iso(pr.merged_at),
            merge_commit_sha=pr.merge_commit_sha,
            assignee=None,
            assignees=[],
            requested_reviewers=[],
            requested_teams=[],
            head=self._branch(
                template["head"],
                pr.head_repo,
                pr.head_ref,
                pr.head_sha,
                not pr.head_repo_null,
                open_issues if not pr.is_cross_repository else 0,
                0 if pr.is_cross_repository else forks,
            ),
            base=self._branch(
                template["base"], pr.repo, pr.base_ref, base_sha, True, open_issues, forks
            ),
            _links={key: {"href": href} for key, href in links.items()},
            author_association=association,
            auto_merge=self.auto_merge(pr),
            draft=pr.draft,
        )
        if facts is not None:
            _fill(
                obj,
                merged=pr.merged,
                mergeable=facts.mergeable,
                rebaseable=facts.mergeable,
                mergeable_state=facts.mergeable_state,
                merged_by=self.user(pr.merged_by),
                comments=facts.comments,
                review_comments=facts.review_comments,
                maintainer_can_modify=pr.is_cross_repository,
                commits=facts.commits,
                additions=facts.additions,
                deletions=facts.deletions,
                changed_files=facts.changed_files,
            )
        return obj

    # -- comments and reviews --------------------------------------------------------------

    def issue_comment(self, c: Comment, association: str) -> dict[str, Any]:
        api_repo, html_repo = self.repo_api(c.repo), self.repo_html(c.repo)
        return _fill(
            copy.deepcopy(ISSUE_COMMENT),
            id=c.id,
            node_id=node_id("IssueComment", c.id),
            url=f"{api_repo}/issues/comments/{c.id}",
            html_url=f"{html_repo}/pull/{c.pull_number}#issuecomment-{c.id}",
            body=c.body,
            user=None if c.user_null else self.user(c.user),
            created_at=iso(c.created_at),
            updated_at=iso(c.updated_at),
            issue_url=f"{api_repo}/issues/{c.pull_number}",
            author_association=association,
            minimized=None,
        )

    def review_comment(self, c: Comment, association: str) -> dict[str, Any]:
        api_repo, html_repo = self.repo_api(c.repo), self.repo_html(c.repo)
        url = f"{api_repo}/pulls/comments/{c.id}"
        html = f"{html_repo}/pull/{c.pull_number}#discussion_r{c.id}"
        pull_url = f"{api_repo}/pulls/{c.pull_number}"
        line = c.line if c.line is not None else 1
        obj = _fill(
            copy.deepcopy(REVIEW_COMMENT),
            url=url,
            pull_request_review_id=c.review_id,
            id=c.id,
            node_id=node_id("PullRequestReviewComment", c.id),
            diff_hunk=f"@@ -{line},1 +{line},1 @@",
            path=c.path or "README.md",
            position=line,
            original_position=line,
            commit_id=c.commit_id,
            original_commit_id=c.commit_id,
            in_reply_to_id=c.in_reply_to_id,
            user=None if c.user_null else self.user(c.user),
            body=c.body,
            created_at=iso(c.created_at),
            updated_at=iso(c.updated_at),
            html_url=html,
            pull_request_url=pull_url,
            author_association=association,
            _links={
                "self": {"href": url},
                "html": {"href": html},
                "pull_request": {"href": pull_url},
            },
            start_line=None,
            original_start_line=None,
            start_side=None,
            line=line,
            original_line=line,
            side="RIGHT",
        )
        if c.in_reply_to_id is None:
            obj.pop("in_reply_to_id", None)  # GitHub omits the key on thread roots
        return obj

    def review(self, r: Review, association: str) -> dict[str, Any]:
        api_repo, html_repo = self.repo_api(r.repo), self.repo_html(r.repo)
        html = f"{html_repo}/pull/{r.pull_number}#pullrequestreview-{r.id}"
        pull_url = f"{api_repo}/pulls/{r.pull_number}"
        return _fill(
            copy.deepcopy(REVIEW),
            id=r.id,
            node_id=node_id("PullRequestReview", r.id),
            user=self.user(r.user),
            body=r.body,
            state=r.state,
            html_url=html,
            pull_request_url=pull_url,
            _links={"html": {"href": html}, "pull_request": {"href": pull_url}},
            submitted_at=iso(r.submitted_at),
            commit_id=r.commit_id,
            author_association=association,
        )

    # -- checks and statuses ---------------------------------------------------------------

    def _check_pull_ref(self, pr: Pull, base_sha: str) -> dict[str, Any]:
        template = CHECK_RUNS["check_runs"][0]["pull_requests"][0]
        obj = copy.deepcopy(template)

        def side(side_template: dict[str, Any], repo: Repo, ref: str, sha: str) -> dict[str, Any]:
            return _fill(
                copy.deepcopy(side_template),
                ref=ref,
                sha=sha,
                repo=_fill(
                    copy.deepcopy(side_template["repo"]),
                    id=repo.id,
                    url=self.repo_api(repo),
                    name=repo.name,
                ),
            )

        return _fill(
            obj,
            url=f"{self.repo_api(pr.repo)}/pulls/{pr.number}",
            id=pr.id,
            number=pr.number,
            head=side(template["head"], pr.head_repo, pr.head_ref, pr.head_sha),
            base=side(template["base"], pr.repo, pr.base_ref, base_sha),
        )

    def check_run(self, run: CheckRun, pulls: list[tuple[Pull, str]]) -> dict[str, Any]:
        api_repo, html_repo = self.repo_api(run.repo), self.repo_html(run.repo)
        template = CHECK_RUNS["check_runs"][0]
        url = f"{api_repo}/check-runs/{run.id}"
        output = _fill(
            copy.deepcopy(template["output"]),
            title=f"{run.name}: {run.conclusion or run.status}",
            summary=f"{run.name} is {run.status}",
            text="",
            annotations_count=0,
            annotations_url=f"{url}/annotations",
        )
        return _fill(
            copy.deepcopy(template),
            id=run.id,
            head_sha=run.head_sha,
            node_id=node_id("CheckRun", run.id),
            external_id="",
            url=url,
            html_url=f"{html_repo}/runs/{run.id}",
            details_url=f"{html_repo}/runs/{run.id}",
            status=run.status,
            conclusion=run.conclusion,
            started_at=iso(run.started_at),
            completed_at=iso(run.completed_at),
            output=output,
            name=run.name,
            check_suite={"id": run.id},
            pull_requests=[self._check_pull_ref(pr, base_sha) for pr, base_sha in pulls],
        )

    def commit_status(self, s: CommitStatus) -> dict[str, Any]:
        return _fill(
            copy.deepcopy(COMBINED_STATUS["statuses"][0]),
            url=f"{self.repo_api(s.repo)}/statuses/{s.sha}",
            avatar_url="https://avatars.githubusercontent.com/u/9919?v=4",
            id=s.id,
            node_id=node_id("StatusContext", s.id),
            state=s.state,
            description=s.description,
            target_url=s.target_url,
            context=s.context,
            created_at=iso(s.created_at),
            updated_at=iso(s.updated_at),
        )

    def combined_status(self, repo: Repo, sha: str, statuses: list[CommitStatus]) -> dict[str, Any]:
        states = {s.state for s in statuses}
        if states & {"error", "failure"}:
            state = "failure"
        elif not statuses or "pending" in states:
            state = "pending"
        else:
            state = "success"
        api_repo = self.repo_api(repo)
        return _fill(
            copy.deepcopy(COMBINED_STATUS),
            state=state,
            statuses=[self.commit_status(s) for s in statuses],
            sha=sha,
            total_count=len(statuses),
            repository=self.repo(repo, COMBINED_STATUS["repository"]),
            commit_url=f"{api_repo}/commits/{sha}",
            url=f"{api_repo}/commits/{sha}/status",
        )

    # -- rate limit --------------------------------------------------------------------------

    def rate_limit(self, buckets: dict[str, RateBucket], now_epoch: int) -> dict[str, Any]:
        obj = copy.deepcopy(RATE_LIMIT)
        for name, entry in obj["resources"].items():
            bucket = buckets.get(name)
            if bucket is None:
                entry.update(
                    limit=entry["limit"], used=0, remaining=entry["limit"], reset=now_epoch + 3600
                )
            else:
                entry.update(
                    limit=bucket.limit,
                    used=bucket.used,
                    remaining=bucket.remaining,
                    reset=bucket.reset_at,
                )
        obj["rate"] = dict(obj["resources"]["core"])
        return obj
