"""`ScriptedDriver`: replays scripted turns for tests and examples, gating tools like the live path.

Each `run_turn` replays the next script entry (a list of events, or a function of the request
that returns one) and records the request. Every scripted `ToolCall` is put to the request's
approver once, as `ClaudeDriver` does: a refused call gets an error `ToolResult` carrying the
approver's message (any scripted result for it is dropped, since the tool never ran); an allowed
call to one of the request's in-process tools runs its handler, with the approver's rewritten
input if any, unless the script already gives the result. Like the live driver, nothing follows
an `ErrorEvent`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Sequence

from runtime.turn.driver import (
    Decision,
    DriverEvent,
    ErrorEvent,
    ToolCall,
    ToolCallRequest,
    ToolResult,
    ToolSpec,
    TurnRequest,
    call_tool,
    deny_text,
    model_tool_name,
)

ScriptEntry = Sequence[DriverEvent] | Callable[[TurnRequest], Sequence[DriverEvent]]


class ScriptedDriver:
    """An `AgentDriver` that plays back a script; `.requests` holds every request it got."""

    def __init__(self, turns: Sequence[ScriptEntry]) -> None:
        self._turns = list(turns)
        self.requests: list[TurnRequest] = []

    async def run_turn(self, request: TurnRequest) -> AsyncGenerator[DriverEvent, None]:
        index = len(self.requests)
        self.requests.append(request)
        if index >= len(self._turns):
            yield ErrorEvent(
                "other",
                f"script exhausted: {len(self._turns)} turn(s) scripted, turn {index + 1} asked",
            )
            return
        entry = self._turns[index]
        events = list(entry(request) if callable(entry) else entry)
        scripted_results = {e.tool_use_id for e in events if isinstance(e, ToolResult)}
        decisions: dict[str, Decision] = {}
        for event in events:
            if isinstance(event, ToolResult) and _refused(decisions, event.tool_use_id):
                continue
            yield event
            if isinstance(event, ErrorEvent):
                return
            if isinstance(event, ToolCall):
                result = await _settle(request, event, decisions, event.id in scripted_results)
                if result is not None:
                    yield result


def _refused(decisions: dict[str, Decision], tool_use_id: str) -> bool:
    decision = decisions.get(tool_use_id)
    return decision is not None and not decision.allow


def find_tool(specs: Sequence[ToolSpec], name: str) -> ToolSpec | None:
    """The in-process tool a call names, as `mcp__mnemara__<name>` or bare `<name>`."""
    return next((s for s in specs if name in (model_tool_name(s.name), s.name)), None)


async def _settle(
    request: TurnRequest,
    call: ToolCall,
    decisions: dict[str, Decision],
    has_scripted_result: bool,
) -> ToolResult | None:
    """Ask the approver (once per call id) and produce the result the live path would."""
    decision = decisions.get(call.id)
    if decision is None:
        try:
            decision = await request.approver.decide(
                ToolCallRequest(call.id, call.name, call.input)
            )
        except Exception as exc:  # fail closed, as the live gate does
            decision = Decision(
                allow=False, message=f"Tool call refused: the approver failed ({exc})."
            )
        decisions[call.id] = decision
    if not decision.allow:
        return ToolResult(call.id, deny_text(decision), is_error=True)
    spec = find_tool(request.sdk_tools, call.name)
    if spec is None or has_scripted_result:
        return None
    output = await call_tool(spec, decision.updated_input or call.input)
    return ToolResult(call.id, output.text, output.is_error)
