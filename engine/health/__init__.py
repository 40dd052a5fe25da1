"""Schedule health: pure assessment, the facts it reads, and losses in a window."""
