"""Fixtures shared by the wrapper tests."""

from __future__ import annotations

from tests.wrapper.reviewbench import bench

__all__ = ["bench"]
