"""Conversation payloads: issue comments, review comments and reviews."""

from __future__ import annotations

import copy
from typing import Any

from ghsim.model import Comment, Reaction, Review, iso, node_id
from ghsim.payload_templates import ISSUE_COMMENT, REVIEW, REVIEW_COMMENT, fill
from ghsim.render_shared import SharedRenderer


class ConversationRenderer(SharedRenderer):
    """Comment and review payloads (one of the bases of :class:`ghsim.payloads.Renderer`)."""

    def issue_comment(self, c: Comment, association: str) -> dict[str, Any]:
        api_repo, html_repo = self.repo_api(c.repo), self.repo_html(c.repo)
        return fill(
            copy.deepcopy(ISSUE_COMMENT),
            id=c.id,
            node_id=node_id("IssueComment", c.id),
            url=f"{api_repo}/issues/comments/{c.id}",
            # A pull request's conversation comment has a /pull/N page, a plain issue's
            # an /issues/N page (issue 29, docs/decisions.md D98).
            html_url=f"{html_repo}/{'issues' if c.on_issue else 'pull'}/{c.pull_number}"
            f"#issuecomment-{c.id}",
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
        position = c.position if c.position is not None else line
        first = c.original_line if c.original_line is not None else line
        start = c.original_start_line if c.original_line is not None else c.start_line
        obj = fill(
            copy.deepcopy(REVIEW_COMMENT),
            url=url,
            pull_request_review_id=c.review_id,
            id=c.id,
            node_id=node_id("PullRequestReviewComment", c.id),
            diff_hunk=c.diff_hunk or f"@@ -{line},1 +{line},1 @@",
            path=c.path or "README.md",
            position=position,
            original_position=position if c.original_position is None else c.original_position,
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
            start_line=c.start_line,
            original_start_line=start,
            start_side=c.start_side,
            line=line,
            original_line=first,
            side=c.side,
        )
        if c.outdated:  # GitHub nulls them (observed); its description types them integer
            obj.pop("line", None)
            obj.pop("position", None)
        if c.in_reply_to_id is None:
            obj.pop("in_reply_to_id", None)  # GitHub omits the key on thread roots
        return obj

    def review(self, r: Review, association: str) -> dict[str, Any]:
        """A review; a PENDING one has no ``submitted_at`` (it is not submitted)."""
        api_repo, html_repo = self.repo_api(r.repo), self.repo_html(r.repo)
        html = f"{html_repo}/pull/{r.pull_number}#pullrequestreview-{r.id}"
        pull_url = f"{api_repo}/pulls/{r.pull_number}"
        obj = fill(
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
        if r.submitted_at is None:
            obj.pop("submitted_at", None)
        return obj

    def reaction(self, r: Reaction) -> dict[str, Any]:
        """A reaction (``#/components/schemas/reaction``: id, node_id, user, content,
        created_at; the shape of the description's ``reaction`` example)."""
        return {
            "id": r.id,
            "node_id": node_id("Reaction", r.id),
            "user": self.user(r.user),
            "content": r.content,
            "created_at": iso(r.created_at),
        }
