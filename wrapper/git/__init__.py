"""The only package that runs git: :class:`Git`, bound to one repository directory.

The process, its flags and environment: :mod:`wrapper.git.process`; reads, exports and
worktrees: :mod:`wrapper.git.repo`; the review tree written from git's objects:
:mod:`wrapper.git.export`; merge and push: :mod:`wrapper.git.publish`; what the
exclusions read (diff entries, blob starts, a tree's gitattributes, one file of a
tree): :mod:`wrapper.git.facts`.

Why it is built this way: docs/decisions.md D15.

:class:`Git` is bound to one repository directory. Every call runs ``git`` from an argv
list (never a shell) with hooks and the file-system monitor disabled, no pager and no
editor, no submodule recursion and file-protocol remotes allowed (``-c
core.hooksPath=/dev/null -c core.fsmonitor=false -c core.pager=cat -c core.editor=true
-c sequence.editor=true -c submodule.recurse=false -c protocol.file.allow=always -c
advice.detachedHead=false``): a program named in the repository's own config never runs
in kdev. The environment has ``GIT_TERMINAL_PROMPT=0`` (git never waits for a
password), ``GIT_CONFIG_NOSYSTEM=1`` and ``GIT_ATTR_NOSYSTEM=1`` (no system-wide config
or attributes), ``GIT_PAGER``/``PAGER``
``cat``, ``GIT_EDITOR``/``EDITOR``/``VISUAL`` ``true`` and ``LC_ALL=C`` (stable
messages), without the variables that would point git at another repository
(``GIT_DIR``, ``GIT_WORK_TREE`` ...) or inject config past these flags
(``GIT_CONFIG``, ``GIT_CONFIG_PARAMETERS``, ``GIT_CONFIG_COUNT``) or read attributes
from elsewhere (``GIT_ATTR_SOURCE``). Each call runs in its
own process group, which is killed when the call passes ``timeout``.

No token ever goes into an argv: git authenticates through its own credential setup,
and a remote given as a URL with credentials is refused. Failures never escape as
``CalledProcessError``: each becomes a :class:`~wrapper.errors.KdevError` subclass with a
one-line message (git's last stderr line, credentials redacted):

- ``FetchError`` ``fetch_failed``: :meth:`Git.fetch` failed or timed out
- ``WorktreeError`` ``worktree_failed``: :meth:`Git.export_tree` or
  :meth:`Git.worktree_add` failed, or
  :meth:`Git.worktree_remove` could not make the directory go away
- ``ConfigError`` ``invalid_ref``: a ref or remote name that git would read as an option
- ``ConfigError`` ``credentials_in_argv``: a remote given as a URL with credentials
- ``ConfigError`` ``remote_missing``: :meth:`Git.remote_url` of an unknown remote
- ``KdevError`` ``push_failed``: :meth:`Git.push_commit` failed for another reason than
  a rejection (a rejected push is a :class:`PushResult`, not an error)
- ``KdevError`` ``not_a_file``: :meth:`Git.file_at` found a directory or a link there
- ``KdevError`` ``git_failed`` / ``git_timed_out`` / ``git_not_found``: anything else
"""

from __future__ import annotations

from wrapper.git.process import redact_credentials
from wrapper.git.publish import MergeResult, PushResult
from wrapper.git.repo import Git

__all__ = ["Git", "MergeResult", "PushResult", "redact_credentials"]
