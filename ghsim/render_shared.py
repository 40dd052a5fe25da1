"""The sub-objects every payload shares: users, repositories, labels, and the base URLs."""

from __future__ import annotations

import copy
from typing import Any

from ghsim.model import Repo, User, iso, node_id
from ghsim.payload_templates import LABEL, USER, fill, subst


class SharedRenderer:
    """Builds the shared sub-objects with URLs under ``api`` (the base URL the client used)."""

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
        obj = subst(
            template,  # subst builds new containers
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
        return fill(
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
        obj = subst(
            template,  # subst builds new containers
            [
                ("https://api.github.com", self.api),
                ("https://github.com", self.html),
                ("octocat/Hello-World", repo.full_name),
            ],
        )
        return fill(
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
        return fill(
            copy.deepcopy(LABEL),
            id=label_id,
            node_id=node_id("Label", label_id),
            url=f"{self.repo_api(repo)}/labels/{name}",
            name=name,
            description="",
            color="ededed",
            default=False,
        )
