"""Warm spares through the real bundled CLI on the rehearsal model (runtime/claude/spare.py).

One session, one sandboxed driver with a limit of one spare, four turns, each after a spare
was built: a turn takes the spare built for it; a role doc edited after the spare was built
makes the next turn carry the new text byte-exact (the spare is discarded); so does a
config change; and a tool call in a turn run on a spare is decided by the policy in force at
that turn, not at the spare's build, and is recorded in that turn's rows; a spare that died
while it waited is discarded and the turn runs on a process of its own.
"""

from __future__ import annotations

import os
import signal
from typing import Any

import pytest

from runtime.claude import ClaudeDriver
from runtime.claude.pool import SparePool
from runtime.sandbox import SandboxSettings
from runtime.turn.driver import Decision, ToolCallRequest, ToolResult
from runtime.turn.events import TurnCommitted
from runtime.turn.session import Session
from tests.e2e.conftest import ROLE_DOC, Rehearse

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

SCRIPT = """
[panels.eng]
fallback_text = "ok"

[[panels.eng.replies]]
when = { user_text_contains = "run it" }
content = [{ tool_use = "Bash", input = { command = "echo spare-turn" } }]

[[panels.eng.replies]]
when = { tool_result_contains = "" }
text = "done"
"""
REFUSAL = "refused by the policy of the turn that ran"


class RefuseAll:
    """The policy in force once the spare is built: refuses every call, and says which."""

    def __init__(self) -> None:
        self.asked: list[ToolCallRequest] = []

    async def decide(self, call: ToolCallRequest) -> Decision:
        self.asked.append(call)
        return Decision(allow=False, message=REFUSAL)


def system_texts(body: dict[str, Any]) -> list[str]:
    return [str(block["text"]) for block in body["system"]]


async def turn(session: Session, text: str) -> list[Any]:
    return [event async for event in session.turn(text)]


async def warm(driver: ClaudeDriver, session: Session) -> None:
    request = session.spare_request()
    assert request is not None
    assert await driver.prepare(request, due=None)
    assert driver.spare is not None and driver.spare.alive()


@pytest.mark.parametrize("anyio_backend", ["trio"])  # the host's backend; one CLI run is enough
async def test_a_spare_serves_only_the_turn_it_was_built_for(
    anyio_backend: str, rehearse: Rehearse
) -> None:
    # Sandboxed, as a default team runs: the spare then waits inside its own sandbox, whose
    # stand-ins (an empty .git) exist while it waits and must not make it look stale.
    async with rehearse(SCRIPT, sandbox=SandboxSettings()) as rig:
        pool: SparePool[ClaudeDriver] = SparePool(1)
        driver = ClaudeDriver(env=rig.env, pool=pool, sandbox=rig.driver.sandbox)
        async with rig.session() as session:
            session.driver = driver
            # 1. The spare is taken: its request carries the role doc as it is on disk.
            await warm(driver, session)
            await turn(session, "hello")
            assert (driver.spares_used, driver.spares_discarded) == (1, 0)
            assert ROLE_DOC in system_texts(rig.requests()[-1])

            # 2. The role doc changes after the spare is built: the spare is discarded and
            # the turn carries the new bytes exactly.
            await warm(driver, session)
            edited = "# Role\nYou are the edited panel.\u00a0Tabs\tand ünïcode stay as written.\n"
            rig.paths.role.write_text(edited, encoding="utf-8")
            await turn(session, "hello again")
            assert (driver.spares_used, driver.spares_discarded) == (1, 1)
            assert edited in system_texts(rig.requests()[-1])
            assert ROLE_DOC not in system_texts(rig.requests()[-1])

            # 3. A config change after the build (a panel's Bash timeout): discarded too.
            await warm(driver, session)
            session.update_config(bash_timeout_seconds=session.config.bash_timeout_seconds + 1)
            await turn(session, "and again")
            assert (driver.spares_used, driver.spares_discarded) == (1, 2)

            # 4. The policy changes after the build; the turn on the spare is decided by it.
            await warm(driver, session)
            refuse = RefuseAll()
            session.guard.policy = refuse
            events = await turn(session, "run it")
            assert (driver.spares_used, driver.spares_discarded) == (2, 2)
            assert [c.name for c in refuse.asked] == ["Bash"]
            (result,) = [e for e in events if isinstance(e, ToolResult)]
            assert result.is_error and REFUSAL in result.content
            (committed,) = [e for e in events if isinstance(e, TurnCommitted)]
            rows = [await session.store.row(i) for i in committed.row_ids]
            stored = " ".join(str(r.blocks) for r in rows if r is not None)
            assert REFUSAL in stored and result.tool_use_id in stored  # this turn's rows
            # 5. A spare that died while it waited is discarded; the turn starts its own.
            await warm(driver, session)
            assert driver.spare is not None
            (pid,) = driver.spare.pids()
            os.kill(pid, signal.SIGKILL)
            events = await turn(session, "after the spare died")
            assert (driver.spares_used, driver.spares_discarded) == (2, 3)
            assert any(isinstance(e, TurnCommitted) for e in events)
            await driver.discard_spare()
            assert len(pool) == 0 and driver.spare is None
