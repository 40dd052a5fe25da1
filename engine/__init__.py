"""li: a generic schedule engine (cron, interval and github_poll schedules firing commands)."""

__version__ = "0.1.0"  # the one place the version is set (pyproject reads it)
