"""``kdev pr-sweep``: the periodic pass across repositories."""
