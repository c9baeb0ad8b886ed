"""A turn's `TurnRequest`, built one way for the turn itself and for its warm spare.

The session builds its turn's request here (`turn_request`), and the host asks for the same
request without a prompt (`spare_request`) to start the next turn's CLI process ahead of it
(runtime/claude/spare.py). Both go through one function, so a spare is used only when the
request the turn makes, from the role doc it reads at its start, is the one it was built
for. `spare_key` adds what shapes the turn beyond the request's own fields: the role doc's
whole text (its front matter is the lane) and the instance's config (model, tools, policy).
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from runtime.errors import LaneError, RoleDocError
from runtime.instance.config import InstanceConfig
from runtime.instance.lane import split_front_matter
from runtime.instance.roledoc import read_role_doc
from runtime.tools.mcp_wire import stdio_servers
from runtime.turn.cache_ttl import CacheTtl, cli_env
from runtime.turn.driver import TurnRequest
from runtime.window.rows import Block

if TYPE_CHECKING:
    from runtime.turn.state import SessionState


def spare_key(role_text: str, config: InstanceConfig) -> str:
    digest = hashlib.sha256(role_text.encode("utf-8"))
    digest.update(b"\0" + config.model_dump_json().encode("utf-8"))
    return digest.hexdigest()


def turn_request(
    session: SessionState,
    *,
    system: str,
    blocks: tuple[Block, ...],
    ttl: CacheTtl,
    role_text: str,
) -> TurnRequest:
    """The request of a turn whose system prompt is `system` (the role doc's body, read from
    `role_text`) and whose prompt is `blocks`."""
    config = session.config
    return TurnRequest(
        system=system,
        blocks=blocks,
        model=config.model,
        approver=session.approver,
        cwd=session.cwd,
        sdk_tools=session.tools,
        mcp_servers=stdio_servers(config.mcp_servers, session.paths.debug_log),
        max_budget_usd=session.guard.budget.sdk_max_budget_usd(),
        bash_timeout_seconds=config.bash_timeout_seconds,
        max_turns=session.guard.budget.sdk_max_turns(),
        env=cli_env(ttl),
        spare_key=spare_key(role_text, config),
    )


def spare_request(session: SessionState) -> TurnRequest | None:
    """The request the session's next turn would make if it began now, without its prompt;
    None when no spare should be built for it: halted, or a role doc that cannot be read
    or whose lane does not parse (the turn then reports it, and starts its process itself;
    with no role doc set, the turn runs on an empty one, and so is the spare built).
    Reads the role doc without touching what the session remembers of it."""
    path = session.role.path
    if session.guard.halted is not None:
        return None
    try:
        text = read_role_doc(path) if path is not None else ""  # none set: the turn's is ""
        _, body = split_front_matter(text, str(path or "role doc"))
    except (RoleDocError, LaneError):
        return None
    ttl = session.cache_ttl.peek(session.config.prompt_cache_ttl)
    return turn_request(session, system=body, blocks=(), ttl=ttl, role_text=text)
