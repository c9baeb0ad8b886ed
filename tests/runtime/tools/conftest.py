"""The agent's tools tests use the shared `instance`, `configure` and `approver` fixtures.

This directory goes on sys.path so the tests can import `tool_turns` (the turn helpers);
tests are collected with --import-mode=importlib, which adds nothing to sys.path itself.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
