"""The review ledger on disk: verdicts, index, locks, deferrals, legs and outcomes."""
