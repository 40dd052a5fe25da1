"""Conversation helpers of :class:`ghsim.sim.GitHubSim`: issue and review comments, reviews.

A new comment is offered to the scripted review bots of its repository (``ghsim/bots.py``).
"""

from __future__ import annotations

from ghsim.bots import BotSim
from ghsim.core import REVIEW_STATES, Author, GhsimError
from ghsim.model import Comment, Reaction, Review

# The reaction types GitHub takes (the ``content`` enum of reactions/create-for-issue-comment
# in GitHub's REST description; docs.github.com, "About reactions").
REACTION_CONTENTS = frozenset(
    {"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"}
)


class ConversationSim(BotSim):
    """Comments and reviews (one of the bases of :class:`ghsim.sim.GitHubSim`)."""

    def open_issue(self, repo: str) -> int:
        """A plain issue (no pull request) on ``repo``: its number, taken from the
        numbering pulls share (on GitHub every pull request is an issue)."""
        with self.lock:
            target = self.repo(repo)
            number = next(self._numbers[target.key])
            self._issues.setdefault(target.key, set()).add(number)
            return number

    def comment(
        self,
        repo: str,
        number: int,
        body: str,
        author: Author = None,
        kind: str = "issue",
        path: str | None = None,
        line: int | None = None,
        in_reply_to: int | None = None,
    ) -> Comment:
        """An issue comment, or a review comment (``kind="review"``) on ``path``/``line``.

        A review comment comes with a COMMENTED review, as on GitHub.
        """
        with self.lock:
            if kind not in ("issue", "review"):
                raise GhsimError("kind is 'issue' or 'review'")
            if kind == "issue" and number in self._issues.get(repo.lower(), set()):
                return self._issue_comment(repo, number, body, author)
            pr = self.pull(repo, number)
            user = self._author(author, pr.repo.owner)
            now = self.now()
            review_id = None
            if kind == "review":
                review_id = self.review(repo, number, "COMMENTED", author=user, body="").id
            created = Comment(
                repo=pr.repo,
                pull_number=number,
                id=next(self._ids["comment"]),
                kind=kind,
                body=body,
                user=user,
                created_at=now,
                updated_at=now,
                path=(path or "README.md") if kind == "review" else None,
                line=(line or 1) if kind == "review" else None,
                commit_id=pr.head_sha if kind == "review" else None,
                review_id=review_id,
                in_reply_to_id=in_reply_to,
            )
            self._comments.append(created)
            pr.updated_at = now
            self._answer_triggers(created)  # scripted review bots (ghsim/bots.py)
            return created

    def _issue_comment(self, repo: str, number: int, body: str, author: Author) -> Comment:
        target = self.repo(repo)
        now = self.now()
        created = Comment(
            repo=target,
            pull_number=number,
            id=next(self._ids["comment"]),
            kind="issue",
            body=body,
            user=self._author(author, target.owner),
            created_at=now,
            updated_at=now,
            on_issue=True,
        )
        self._comments.append(created)
        return created

    def react(
        self, repo: str, comment_id: int, content: str, author: Author = None
    ) -> tuple[Reaction, bool]:
        """``author``'s ``content`` reaction to a comment, and whether it is new. GitHub
        keeps one reaction per user and content: the same one again is the existing one
        ("Reaction exists", 200), never a second (reactions/create-for-issue-comment)."""
        with self.lock:
            if content not in REACTION_CONTENTS:
                raise GhsimError(f"content is one of {sorted(REACTION_CONTENTS)}")
            target = self.get_comment(repo, comment_id)
            user = self._author(author, target.repo.owner)
            for known in self._reactions:
                if (known.comment_id, known.user.id, known.content) == (
                    comment_id,
                    user.id,
                    content,
                ):
                    return known, False
            made = Reaction(
                repo=target.repo,
                comment_id=comment_id,
                kind=target.kind,
                id=next(self._ids["reaction"]),
                user=user,
                content=content,
                created_at=self.now(),
            )
            self._reactions.append(made)
            return made, True

    def reactions(self, repo: str, comment_id: int) -> list[Reaction]:
        """The reactions to a comment, oldest first."""
        with self.lock:
            target = self.get_comment(repo, comment_id)
            return [r for r in self._reactions if r.comment_id == target.id]

    def edit_comment(self, repo: str, comment_id: int, body: str) -> Comment:
        """Change a comment's body; its ``updated_at`` moves (the PR's does not)."""
        with self.lock:
            c = self.get_comment(repo, comment_id)
            c.body = body
            c.updated_at = self.now()
            return c

    def review(
        self,
        repo: str,
        number: int,
        state: str,
        author: Author = None,
        body: str = "",
        commit_id: str | None = None,
    ) -> Review:
        """Submit a review (APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED)."""
        with self.lock:
            state = state.upper()
            if state not in REVIEW_STATES:
                raise GhsimError(f"review state must be one of {sorted(REVIEW_STATES)}")
            pr = self.pull(repo, number)
            now = self.now()
            created = Review(
                repo=pr.repo,
                pull_number=number,
                id=next(self._ids["review"]),
                state=state,
                body=body,
                user=self._author(author, pr.repo.owner),
                commit_id=commit_id or pr.head_sha,
                submitted_at=now,
            )
            self._reviews.append(created)
            pr.updated_at = now
            return created
