"""Pull request payloads: the pull as listed and as ``GET .../pulls/{n}``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ghsim.model import Pull, Repo, iso, node_id
from ghsim.payload_templates import PULL_FULL, PULL_SIMPLE, fill
from ghsim.render_shared import SharedRenderer


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


class PullRenderer(SharedRenderer):
    """Pull request payloads (one of the bases of :class:`ghsim.payloads.Renderer`)."""

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
        return fill(
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
        html_repo, n = self.repo_html(pr.repo), pr.number
        links = self._pull_links(pr)
        fill(
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
            self._fill_facts(obj, pr, facts)
        return obj

    def _pull_links(self, pr: Pull) -> dict[str, str]:
        """The pull's API and HTML links, by their ``_links`` names."""
        api_repo, html_repo, n = self.repo_api(pr.repo), self.repo_html(pr.repo), pr.number
        return {
            "self": f"{api_repo}/pulls/{n}",
            "html": f"{html_repo}/pull/{n}",
            "issue": f"{api_repo}/issues/{n}",
            "comments": f"{api_repo}/issues/{n}/comments",
            "review_comments": f"{api_repo}/pulls/{n}/comments",
            "review_comment": f"{api_repo}/pulls/comments{{/number}}",
            "commits": f"{api_repo}/pulls/{n}/commits",
            "statuses": f"{api_repo}/statuses/{pr.head_sha}",
        }

    def _fill_facts(self, obj: dict[str, Any], pr: Pull, facts: PullFacts) -> None:
        """The fields only ``GET .../pulls/{n}`` has."""
        fill(
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
