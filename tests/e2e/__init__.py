"""Tests that run both programs, ghsim and the demo together."""
