"""One panel's session: config, store, window, prompt, drivers, tools, policy and memory.

The public names load lazily, so importing a submodule (as the CLI does) stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runtime.session import Session
    from runtime.session_open import open_session

__all__ = ["Session", "open_session"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from runtime import session

        return getattr(session, name)
    raise AttributeError(name)
