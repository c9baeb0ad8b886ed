"""The driver tests import `fake_cli` from this directory.

It goes on sys.path here: tests are collected with --import-mode=importlib, which adds
nothing to sys.path itself. The fixtures they use are in tests/runtime/conftest.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
