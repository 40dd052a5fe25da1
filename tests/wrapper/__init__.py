"""Tests of kdev, the review wrapper."""
