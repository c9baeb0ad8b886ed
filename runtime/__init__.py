"""One panel's session: config, store, window, prompt, drivers, tools, policy and memory.

The public names load lazily, so importing a submodule (as the CLI does) stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runtime.turn.open import open_session
    from runtime.turn.session import Session

__all__ = ["Session", "open_session"]


_HOMES = {"Session": "runtime.turn.session", "open_session": "runtime.turn.open"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(name)
    return getattr(import_module(home), name)
