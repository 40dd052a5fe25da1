"""CI payloads: check runs (with their pull request references) and commit statuses."""

from __future__ import annotations

import copy
from typing import Any

from ghsim.apps import App, app_json
from ghsim.model import CheckRun, CommitStatus, Pull, Repo, iso, node_id
from ghsim.payload_templates import CHECK_RUNS, COMBINED_STATUS, STATUS, fill
from ghsim.render_shared import SharedRenderer


class CheckRenderer(SharedRenderer):
    """Check run and status payloads (one of the bases of :class:`ghsim.payloads.Renderer`)."""

    def _check_pull_ref(self, pr: Pull, base_sha: str) -> dict[str, Any]:
        template = CHECK_RUNS["check_runs"][0]["pull_requests"][0]
        obj = copy.deepcopy(template)

        def side(side_template: dict[str, Any], repo: Repo, ref: str, sha: str) -> dict[str, Any]:
            return fill(
                copy.deepcopy(side_template),
                ref=ref,
                sha=sha,
                repo=fill(
                    copy.deepcopy(side_template["repo"]),
                    id=repo.id,
                    url=self.repo_api(repo),
                    name=repo.name,
                ),
            )

        return fill(
            obj,
            url=f"{self.repo_api(pr.repo)}/pulls/{pr.number}",
            id=pr.id,
            number=pr.number,
            head=side(template["head"], pr.head_repo, pr.head_ref, pr.head_sha),
            base=side(template["base"], pr.repo, pr.base_ref, base_sha),
        )

    def check_run(
        self, run: CheckRun, pulls: list[tuple[Pull, str]], app: App | None = None
    ) -> dict[str, Any]:
        """A check run; ``app`` the App that made it through the Checks API (None: the
        template's App, for a run a test set)."""
        api_repo, html_repo = self.repo_api(run.repo), self.repo_html(run.repo)
        template = CHECK_RUNS["check_runs"][0]
        url = f"{api_repo}/check-runs/{run.id}"
        output = fill(
            copy.deepcopy(template["output"]),
            title=run.output.get("title", f"{run.name}: {run.conclusion or run.status}"),
            summary=run.output.get("summary", f"{run.name} is {run.status}"),
            text=run.output.get("text", ""),
            annotations_count=len(run.annotations),
            annotations_url=f"{url}/annotations",
        )
        made = fill(
            copy.deepcopy(template),
            id=run.id,
            head_sha=run.head_sha,
            node_id=node_id("CheckRun", run.id),
            external_id=run.external_id,
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
        if app is not None:
            made["app"] = app_json(self, app)
        return made

    def commit_status(self, s: CommitStatus) -> dict[str, Any]:
        return fill(
            copy.deepcopy(COMBINED_STATUS["statuses"][0]),
            avatar_url="https://avatars.githubusercontent.com/u/9919?v=4",
            **self._status_fields(s),
        )

    def status(self, s: CommitStatus) -> dict[str, Any]:
        """One status with its ``creator`` (create and list; the combined view has none)."""
        creator = self.user(s.creator, STATUS["creator"])
        return fill(
            copy.deepcopy(STATUS),
            avatar_url=None if creator is None else creator["avatar_url"],
            creator=creator,
            **self._status_fields(s),
        )

    def _status_fields(self, s: CommitStatus) -> dict[str, Any]:
        """What a status shows in both forms, the combined view's entry and the full one."""
        return {
            "url": f"{self.repo_api(s.repo)}/statuses/{s.sha}",
            "id": s.id,
            "node_id": node_id("StatusContext", s.id),
            "state": s.state,
            "description": s.description,
            "target_url": s.target_url,
            "context": s.context,
            "created_at": iso(s.created_at),
            "updated_at": iso(s.updated_at),
        }

    def combined_status(self, repo: Repo, sha: str, statuses: list[CommitStatus]) -> dict[str, Any]:
        states = {s.state for s in statuses}
        if states & {"error", "failure"}:
            state = "failure"
        elif not statuses or "pending" in states:
            state = "pending"
        else:
            state = "success"
        api_repo = self.repo_api(repo)
        return fill(
            copy.deepcopy(COMBINED_STATUS),
            state=state,
            statuses=[self.commit_status(s) for s in statuses],
            sha=sha,
            total_count=len(statuses),
            repository=self.repo(repo, COMBINED_STATUS["repository"]),
            commit_url=f"{api_repo}/commits/{sha}",
            url=f"{api_repo}/commits/{sha}/status",
        )
