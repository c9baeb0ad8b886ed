"""Loading a labelled corpus's replayer, which lives beside its data files (not in a package)
so that a bench can load it as well as the tests (tests/sentinel, tests/loops)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def load_replay(path: Path, name: str) -> ModuleType:
    """The module at `path`, registered as `name` (its dataclasses need a module to live in)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
