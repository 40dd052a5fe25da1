"""github_poll schedules: settings, the pure plan, one pass with its I/O, decisions."""
