"""A panel's state as the host sees it, and how events move it. Pure.

    starting -> idle <-> thinking <-> tool <-> approval
                 |
                 +-> paused / halted / over_budget (until resumed)
    any -> failed (a life ended with an error; restarting or given up), stopped (shutdown)

Inside a turn the stream drives the state: text and thinking mean `thinking`, a tool call
`tool`, its result `thinking` again, an approval question `approval`. Outside a turn the
runner sets it. A stopped-by-someone state (paused, halted, over_budget, failed) is not left
by stream events, only by `resume` or a restart.
"""

from __future__ import annotations

from enum import StrEnum


class PanelState(StrEnum):
    STARTING = "starting"
    IDLE = "idle"
    THINKING = "thinking"
    TOOL = "tool"
    APPROVAL = "approval"
    PAUSED = "paused"
    HALTED = "halted"
    OVER_BUDGET = "over_budget"
    FAILED = "failed"
    STOPPED = "stopped"


STOPPED_STATES = frozenset(
    {PanelState.PAUSED, PanelState.HALTED, PanelState.OVER_BUDGET, PanelState.FAILED}
)
IN_TURN = frozenset({PanelState.THINKING, PanelState.TOOL, PanelState.APPROVAL})

# What a stream signal means inside a turn.
_SIGNALS: dict[str, PanelState] = {
    "turn_started": PanelState.THINKING,
    "text": PanelState.THINKING,
    "thinking": PanelState.THINKING,
    "tool_call": PanelState.TOOL,
    "tool_result": PanelState.THINKING,
    "approval_request": PanelState.APPROVAL,
    "approval_answer": PanelState.TOOL,
    "turn_ended": PanelState.IDLE,
}


def next_state(state: PanelState, signal: str) -> PanelState:
    """The state after `signal`; unknown signals and stopped states leave it as it is."""
    if state in STOPPED_STATES or state is PanelState.STOPPED:
        return state
    return _SIGNALS.get(signal, state)
