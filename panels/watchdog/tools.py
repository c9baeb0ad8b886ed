"""The watchdog panel's tools: halt, pause, resume or nudge another panel, as verbs.

The tools only ask: each call becomes a verb of the catalogue (panels/hostdb/verbs.py) given
by the watchdog panel, which the host's one dispatcher checks (an existing panel, never the
watchdog itself), applies and records with the actor, target and reason. What happened is
what the model reads; a refused verb comes back as an error result, never as an exception.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from panels.hostdb import verbs
from runtime.turn.driver import ToolOutput, ToolSpec


class WatchdogHost(Protocol):
    async def act(self, verb: verbs.Verb, *, by: str) -> tuple[bool, str]:
        """Apply `verb` given by panel `by`; (applied, what came of it)."""
        ...


_NAME = {"type": "string", "description": "The panel's name, as in the digest."}

_TOOLS: dict[str, tuple[str, dict[str, Any], str]] = {
    "halt_panel": (
        "Halt another panel: its turn in flight is stopped, a halt record is kept, its inbox "
        "is left as it is. Only the operator (or resume_panel) lets it go on.",
        {"name": _NAME, "reason": {"type": "string", "description": "Why, with evidence."}},
        "reason",
    ),
    "pause_panel": (
        "Pause another panel after its current turn; it takes no new messages until resumed.",
        {"name": _NAME, "reason": {"type": "string"}},
        "reason",
    ),
    "resume_panel": (
        "Resume a paused or halted panel.",
        {"name": _NAME, "reason": {"type": "string"}},
        "reason",
    ),
    "nudge_panel": (
        "Send another panel a short note (a bus message from you) that it reads next turn.",
        {"name": _NAME, "text": {"type": "string", "description": "The note."}},
        "text",
    ),
}


def watchdog_tools(host: WatchdogHost, actor: str) -> list[ToolSpec]:
    """The four tools, acting as `actor` (the watchdog panel's name)."""
    return [_tool(host, actor, verb, *spec) for verb, spec in _TOOLS.items()]


def _tool(
    host: WatchdogHost, actor: str, verb: str, description: str, props: dict[str, Any], text: str
) -> ToolSpec:
    required = ["name", text] if verb in ("halt_panel", "nudge_panel") else ["name"]
    schema = {"type": "object", "properties": props, "required": required}
    return ToolSpec(verb, description, schema, _handler(host, actor, verb, text))


def _handler(
    host: WatchdogHost, actor: str, verb: str, text_key: str
) -> Callable[[dict[str, Any]], Awaitable[ToolOutput]]:
    async def handle(args: dict[str, Any]) -> ToolOutput:
        target = args.get("name")
        text = args.get(text_key, "")
        if not isinstance(target, str) or not target:
            return ToolOutput("give `name`: the panel to act on", is_error=True)
        if not isinstance(text, str):
            return ToolOutput(f"`{text_key}` must be text", is_error=True)
        if verb in ("halt_panel", "nudge_panel") and not text.strip():
            return ToolOutput(f"give `{text_key}`: it is recorded with the action", is_error=True)
        name = verb.removesuffix("_panel")
        args = {} if name == "resume" else {"text" if name == "nudge" else "reason": text}
        try:
            given = verbs.parse_verb(name, target, args)
        except verbs.VerbError as exc:
            return ToolOutput(f"refused: {exc}", is_error=True)
        ok, outcome = await host.act(given, by=actor)
        return ToolOutput(outcome if ok else f"refused: {outcome}", is_error=not ok)

    return handle
