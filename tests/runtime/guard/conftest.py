"""Fixtures for the guard tests (with the shared `instance` and `configure`): approvers.

This directory goes on sys.path so the tests can import `guard_kit` (the helpers); tests are
collected with --import-mode=importlib, which adds nothing to sys.path itself.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from guard_kit import RecordingPolicy


@pytest.fixture
def policy() -> RecordingPolicy:
    return RecordingPolicy()
