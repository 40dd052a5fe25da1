"""A stateful simulated GitHub (REST + a GraphQL subset) over loopback HTTP, backed by git.

See ``ghsim/README.md``. Stands alone: imports nothing from ``engine`` or ``wrapper``.
"""

from ghsim.gitops import GitError, MergeConflict
from ghsim.model import (
    CheckRun,
    Comment,
    CommitStatus,
    Fault,
    Pull,
    RateBucket,
    Repo,
    RequestRecord,
    Review,
    User,
)
from ghsim.sim import AUTO, GhsimError, GitHubSim

__all__ = [
    "AUTO",
    "CheckRun",
    "Comment",
    "CommitStatus",
    "Fault",
    "GhsimError",
    "GitError",
    "GitHubSim",
    "MergeConflict",
    "Pull",
    "RateBucket",
    "Repo",
    "RequestRecord",
    "Review",
    "User",
]
