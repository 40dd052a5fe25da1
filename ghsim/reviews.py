"""Creating a review with its comments, with GitHub's rules (issue 27).

``POST /repos/{owner}/{repo}/pulls/{pull_number}/reviews`` as GitHub's OpenAPI description
(``pulls/create-review``, github/rest-api-description) has it: ``event`` is ``APPROVE``,
``REQUEST_CHANGES`` or ``COMMENT``, and "by leaving this blank, you set the review action
state to PENDING" (not submitted: no ``submitted_at``); ``body`` is "Required when using
REQUEST_CHANGES or COMMENT"; ``commit_id`` "Defaults to the most recent commit in the pull
request", and an older one of the pull is accepted (its comments anchor on that commit's
diff and "may render ... outdated"); success is 200, failure 422.

What the description does not say, from reports (the strings GitHub answers with):
- one bad comment rejects the whole review, nothing is created, and the answer does not
  say which entry failed (QwenLM/qwen-code#6711, streamlit/streamlit#14389,
  parkerbxyz/suggest-changes#28); the thread messages are in :mod:`ghsim.anchors`;
- a ``commit_id`` that is not a commit of the pull: "The commitOID is not part of the pull
  request" (reviewdog/reviewdog#434);
- approving your own pull: "Can not approve your own pull request"
  (juliangruber/approve-pull-request-action#61, #79); requesting changes on it is refused
  too (microsoft/vscode-pull-request-github#888), with a message nobody recorded;
- "User can only have one pending review per pull request" (github/app#3371).
The choices made where no source settles a point are decision D83 (docs/decisions.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ghsim.anchors import Anchored, FileDiff, anchor, sentence
from ghsim.conversation import ConversationSim
from ghsim.core import Author, GhsimError, Unprocessable
from ghsim.model import Comment, Pull, Review, User
from ghsim.pulls import PullSim

REVIEW_DOC = "https://docs.github.com/rest/pulls/reviews#create-a-review-for-a-pull-request"
EVENTS = {"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED", "COMMENT": "COMMENTED"}
UNPROCESSABLE = "Unprocessable Entity"
NOT_IN_PULL = "The commitOID is not part of the pull request"
OWN_APPROVAL = "Can not approve your own pull request"
OWN_CHANGES = "Can not request changes on your own pull request"  # UNCONFIRMED wording
ONE_PENDING = "User can only have one pending review per pull request"
BODY_BLANK = "Body can't be blank"  # UNCONFIRMED wording (the 422 itself is [SPEC])


def _invalid(detail: str) -> Unprocessable:
    """GitHub's answer to a body its schema rejects: "Invalid request." and the reason."""
    return Unprocessable(f"Invalid request.\n\n{detail}", doc=REVIEW_DOC)


def _refused(*messages: str) -> Unprocessable:
    return Unprocessable(UNPROCESSABLE, list(messages), REVIEW_DOC)


def _check_types(event: Any, body: Any, commit_id: Any, comments: Any) -> None:
    if event is not None and event not in EVENTS:
        raise _invalid(f"For 'properties/event', \"{event}\" is not one of {list(EVENTS)}.")
    if body is not None and not isinstance(body, str):
        raise _invalid("For 'properties/body', the value is not a string.")
    if commit_id is not None and not isinstance(commit_id, str):
        raise _invalid("For 'properties/commit_id', the value is not a string.")
    if not isinstance(comments, list | tuple):
        raise _invalid("For 'properties/comments', the value is not an array.")
    for item in comments:
        if not isinstance(item, Mapping):
            raise _invalid("For 'items', the value is not an object.")
        for key in ("path", "body"):
            if not isinstance(item.get(key), str) or not item[key]:
                raise _invalid(f'"{key}" wasn\'t supplied.')
        for key in ("line", "start_line", "position"):
            value = item.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise _invalid(f"For 'properties/{key}', the value is not an integer.")


class ReviewSim(ConversationSim, PullSim):
    """``create_review`` (one of the bases of :class:`ghsim.sim.GitHubSim`)."""

    def create_review(
        self,
        repo: str,
        number: int,
        user: Author = None,
        *,
        event: str | None = None,
        body: str | None = None,
        commit_id: str | None = None,
        comments: Sequence[Mapping[str, Any]] = (),
    ) -> Review:
        """A review by ``user`` (default the repo owner) as ``POST .../reviews`` makes it.

        Raises :class:`~ghsim.core.Unprocessable` with GitHub's 422 answer; then nothing
        is created. A PENDING review's comments are drafts (``Review.drafts``)."""
        with self.lock:
            pr = self.pull(repo, number)
            _check_types(event, body, commit_id, comments)
            author = self._author(user, pr.repo.owner)
            self._notice_pushes(pr.repo, only=pr)
            if event in ("REQUEST_CHANGES", "COMMENT") and not body:
                raise _refused(BODY_BLANK)
            if author.id == pr.user.id and event in ("APPROVE", "REQUEST_CHANGES"):
                raise _refused(OWN_APPROVAL if event == "APPROVE" else OWN_CHANGES)
            if any(
                r.state == "PENDING" and r.user.id == author.id for r in self.reviews(repo, number)
            ):
                raise _refused(ONE_PENDING)
            commit = commit_id or pr.head_sha
            base = self._pull_merge_base(pr)
            if commit not in self.git.commits_between(pr.repo.path, base, pr.head_sha):
                raise _refused(NOT_IN_PULL)
            placed = self._anchor_all(pr, base, commit, comments)
            return self._store_review(pr, author, event, body or "", commit, comments, placed)

    def _pull_merge_base(self, pr: Pull) -> str:
        base_tip = self._base_tip(pr)
        return self.git.merge_base(pr.repo.path, base_tip, pr.head_sha) or base_tip

    def _anchor_all(
        self, pr: Pull, base: str, commit: str, comments: Sequence[Mapping[str, Any]]
    ) -> list[Anchored]:
        """Every comment's place, or the 422 naming each refused thread (none is made)."""
        diffs: dict[str, FileDiff | None] = {}
        placed: list[Anchored] = []
        refusals: list[str] = []
        for item in comments:
            path = str(item["path"])
            if path not in diffs:
                diffs[path] = FileDiff.parse(self.git.file_diff(pr.repo.path, base, commit, path))
            where = anchor(diffs[path], item)
            if isinstance(where, list):
                refusals.append(sentence(where))
            else:
                placed.append(where)
        if refusals:
            raise _refused(*refusals)
        return placed

    def _store_review(
        self,
        pr: Pull,
        author: User,
        event: str | None,
        body: str,
        commit: str,
        comments: Sequence[Mapping[str, Any]],
        placed: list[Anchored],
    ) -> Review:
        now = self.now()
        pending = event is None
        review = Review(
            repo=pr.repo,
            pull_number=pr.number,
            id=next(self._ids["review"]),
            state="PENDING" if pending else EVENTS[event],
            body=body,
            user=author,
            commit_id=commit,
            submitted_at=None if pending else now,
        )
        made = [
            Comment(
                repo=pr.repo,
                pull_number=pr.number,
                id=next(self._ids["comment"]),
                kind="review",
                body=str(item["body"]),
                user=author,
                created_at=now,
                updated_at=now,
                path=str(item["path"]),
                line=where.line,
                commit_id=commit,
                review_id=review.id,
                side=where.side,
                start_line=where.start_line,
                start_side=where.start_side,
                position=where.position,
                diff_hunk=where.diff_hunk,
            )
            for item, where in zip(comments, placed, strict=True)
        ]
        self._reviews.append(review)
        if pending:
            review.drafts.extend(made)
            return review
        self._comments.extend(made)
        pr.updated_at = now
        for created in made:
            self._answer_triggers(created)  # scripted review bots (ghsim/bots.py)
        return review

    def review_comments(self, repo: str, number: int, review_id: int) -> list[Comment]:
        """The comments of review ``review_id`` of the pull (a PENDING one's drafts)."""
        with self.lock:
            for r in self.reviews(repo, number):
                if r.id == review_id:
                    if r.state == "PENDING":
                        return list(r.drafts)
                    return [c for c in self._comments if c.review_id == r.id]
            raise GhsimError(f"no review {review_id} on {repo}#{number}")
