"""A failed metadata read is one line that says each reason once (review-pr, describe-pr)."""

from __future__ import annotations

from engine.github.appauth import AppKeyRejected
from engine.github.types import GitHubNotFound
from wrapper.review.github_gate import metadata_failure


def test_an_apps_refusal_keeps_its_reason_and_says_it_once() -> None:
    failed = metadata_failure("octo/widgets", 7, AppKeyRejected("the key was revoked", status=401))
    assert failed.reason == "app_key_rejected"
    assert str(failed) == (
        "cannot read the metadata of octo/widgets #7: the key was revoked [app_key_rejected]"
    )


def test_another_failure_names_the_engines_reason_beside_the_wrappers() -> None:
    failed = metadata_failure("octo/widgets", 7, GitHubNotFound("Not Found", status=404))
    assert failed.reason == "github_auth"
    assert str(failed) == (
        "cannot read the metadata of octo/widgets #7: Not Found [not_found] [github_auth]"
    )
