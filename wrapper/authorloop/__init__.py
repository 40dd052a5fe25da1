"""The author's loop: watch, comments, triage, threads and PR status."""
