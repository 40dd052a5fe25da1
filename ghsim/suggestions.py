"""Applying a suggested change, as the "Commit suggestion" button does (issue 27).

A suggestion is a review comment whose body holds a fenced code block with the info
string ``suggestion``; its content replaces the commented line, or the lines
``start_line``..``line`` of a multi-line comment (beeware/beefore#28; "multi-line code
suggestions": https://github.blog/changelog/2020-02-26-multi-line-code-suggestions-beta/).
"Commit suggestion" makes one commit on the pull's head branch; whoever applies it is the
committer and the suggestion's author a co-author (GitHub docs,
``pull-requests/collaborating-with-pull-requests/reviewing-changes-in-pull-requests/incorporating-feedback-in-your-pull-request.md``).

Refusals carry the strings of GitHub's pull request pages (seen on stored github.com PR
pages, e.g. https://github.com/googleapis/code-suggester/pull/105/files): deleted (LEFT)
lines, outdated suggestions, pending reviews, closed pulls, no change. A suggestion is
outdated here when the head moved and the commented lines no longer read as they did at
the comment's commit (GitHub's own rule is not published; decision D83).
"""

from __future__ import annotations

import re

from ghsim.core import Author, GhsimError
from ghsim.model import Comment, Pull, User
from ghsim.reviews import ReviewSim

DELETED_LINES = "Applying suggestions on deleted lines is not supported."
OUTDATED = "Outdated suggestions cannot be applied."
FROM_PENDING = "Suggestions cannot be applied from pending reviews."
PULL_CLOSED = "Suggestions cannot be applied while the pull request is closed."
NO_CHANGE = "This suggestion is invalid because no changes were made to the code."
COMMIT_MESSAGE = "Apply suggestions from code review"

_BLOCK = re.compile(r"^[ \t]*```suggestion[ \t]*\r?\n(.*?)^[ \t]*```[ \t]*$", re.S | re.M)


class SuggestionRefused(GhsimError):
    """The suggestion cannot be applied; the message is GitHub's UI string for why."""


def suggested_lines(body: str) -> list[str] | None:
    """The replacement lines of the first ```suggestion block of ``body`` (None: none)."""
    found = _BLOCK.search(body)
    if found is None:
        return None
    return found[1].splitlines()


def noreply_email(user: User) -> str:
    """GitHub's commit e-mail of an account: ``<id>+<login>@users.noreply.github.com``."""
    return f"{user.id}+{user.login}@users.noreply.github.com"


class SuggestionSim(ReviewSim):
    """``apply_suggestion`` (one of the bases of :class:`ghsim.sim.GitHubSim`)."""

    def apply_suggestion(self, repo: str, comment_id: int, by: Author = None) -> str:
        """Commit the suggestion of review comment ``comment_id`` on the pull's head
        branch (as ``by``, default the pull's author); returns the new head sha.

        Raises :class:`SuggestionRefused` with GitHub's words (deleted lines, outdated,
        pending review, closed pull, no change) and :class:`GhsimError` for a comment
        without a ```suggestion block."""
        with self.lock:
            comment = self._suggestion_comment(repo, comment_id)
            pr = self.pull(repo, comment.pull_number)
            if pr.state != "open":
                raise SuggestionRefused(PULL_CLOSED)
            if comment.side == "LEFT" or comment.start_side == "LEFT":
                raise SuggestionRefused(DELETED_LINES)
            replacement = suggested_lines(comment.body)
            if replacement is None:
                raise GhsimError(f"comment {comment_id} has no ```suggestion block")
            self._notice_pushes(pr.repo, only=pr)
            if comment.outdated:  # a push changed its lines (ghsim/outdating.py)
                raise SuggestionRefused(OUTDATED)
            lines = self._current_lines(pr, comment)
            first = (comment.start_line or comment.line or 1) - 1
            last = comment.line or 1
            if [text.rstrip("\r\n") for text in lines[first:last]] == replacement:
                raise SuggestionRefused(NO_CHANGE)
            lines[first:last] = [text + "\n" for text in replacement]
            applier = self._author(by, pr.user)
            return self._commit_suggestion(pr, comment, "".join(lines), applier)

    def _suggestion_comment(self, repo: str, comment_id: int) -> Comment:
        for review in self._reviews:
            if review.repo is self.repo(repo) and any(c.id == comment_id for c in review.drafts):
                raise SuggestionRefused(FROM_PENDING)
        comment = self.get_comment(repo, comment_id)
        if comment.kind != "review" or comment.path is None:
            raise GhsimError(f"comment {comment_id} is not a review comment")
        return comment

    def _current_lines(self, pr: Pull, comment: Comment) -> list[str]:
        """The head's lines of the comment's file; outdated when the commented lines moved."""
        path = str(comment.path)
        anchored = comment.placed_on or comment.commit_id or pr.head_sha  # moved: its new place
        now = self.git.file_at(pr.repo.path, pr.head_sha, path)
        if now is None:
            raise SuggestionRefused(OUTDATED)
        lines = now.decode("utf-8", errors="surrogateescape").splitlines(keepends=True)
        if anchored != pr.head_sha:
            then = self.git.file_at(pr.repo.path, anchored, path) or b""
            old = then.decode("utf-8", errors="surrogateescape").splitlines(keepends=True)
            span = slice((comment.start_line or comment.line or 1) - 1, comment.line or 1)
            if old[span] != lines[span]:
                raise SuggestionRefused(OUTDATED)
        return lines

    def _commit_suggestion(self, pr: Pull, comment: Comment, text: str, applier: User) -> str:
        trailer = f"Co-authored-by: {comment.user.login} <{noreply_email(comment.user)}>"
        message = f"{COMMIT_MESSAGE}\n\n{trailer}"
        identity = (applier.login, noreply_email(applier))
        parent = self._head_tip(pr)
        files = {str(comment.path): text.encode("utf-8", errors="surrogateescape")}
        sha = self.git.commit_files(
            pr.head_repo.path, parent, files, message, self.now(), author=identity
        )
        self.git.update_ref(pr.head_repo.path, f"refs/heads/{pr.head_ref}", sha)
        self._synchronize(pr, sha)
        return sha
