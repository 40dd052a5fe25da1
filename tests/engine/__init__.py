"""Tests of li, the schedule engine."""
