"""li: a generic schedule engine (cron, interval and github_poll schedules firing commands)."""

__version__ = "0.1.0"
