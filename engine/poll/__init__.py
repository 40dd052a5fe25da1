"""github_poll schedules: settings (config), the pure plan (plan), one pass with its I/O
(steps shared by both modes; pollpass for pull-request events, mentions for triggers),
decisions."""
