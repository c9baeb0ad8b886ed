"""Where the next request's input tokens go: role doc, tools and framing, pinned rows, slots,
the rest of the window, and what the service reported for the last turn. Pure.

Shown by the dashboard's context viewer (panels/ui/context.py) and the REPL's `/context`
(panels/repl/commands.py), which read the store each their own way and share these parts
and lines. Each count says how it is known: reported by the model service, estimated, or
unknown and why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from runtime.window.inspect import WindowSummary
from runtime.window.rows import Row, Slot, estimate_tokens


@dataclass(frozen=True)
class Part:
    """One part of a request's input: its name, tokens (None: unknown) and how they are known."""

    name: str
    tokens: int | None
    how: str  # "reported", "estimated", "partly estimated" or why it is unknown


def input_budget(
    rows: Sequence[Row], slots: Sequence[Slot], summary: WindowSummary, role_text: str | None
) -> list[Part]:
    """The parts of the next request's input; `role_text` None: the role doc cannot be read."""
    role = estimate_tokens(role_text) if role_text else 0
    unpinned = [r for r in rows if not r.pinned]
    pinned = [r for r in rows if r.pinned]
    parts = [
        _role(role_text, role),
        _tools(summary, role),
        Part("pinned rows", summary.pinned_tokens, _how(pinned)),
        Part("slots", summary.slot_tokens, "estimated" if slots else "none"),
        Part("window (rolling rows)", summary.tokens - summary.pinned_tokens, _how(unpinned)),
    ]  # fmt: skip
    reported = _reported_input(summary)
    parts.append(Part("last turn's input", reported, "reported" if reported is not None
                      else "unknown: no turn has reported its usage yet"))  # fmt: skip
    return parts


def budget_lines(parts: Sequence[Part], cap: int, rows: int) -> list[str]:
    """The parts as lines (name, tokens, how), then the window's cap and its row count."""
    lines = []
    for part in parts:
        shown = "?" if part.tokens is None else f"{part.tokens:,}"
        lines.append(f"{part.name:<22} {shown:>9}  {part.how}")
    lines.append(f"{'window cap':<22} {cap:>9,}  ({rows} rows)")
    return lines


def _role(text: str | None, tokens: int) -> Part:
    if text is None:
        return Part("role doc", None, "unknown: the role doc cannot be read")
    return Part("role doc", tokens, "estimated" if text else "none (empty or no role doc)")


def _how(rows: list[Row]) -> str:
    exact = sum(1 for r in rows if r.tokens_exact)
    if not rows:
        return "none"
    if exact == len(rows):
        return "reported"
    return "estimated" if exact == 0 else "partly estimated"


def _reported_input(summary: WindowSummary) -> int | None:
    usage = summary.last_usage
    if not usage:
        return None
    keys = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    return sum(int(usage.get(k) or 0) for k in keys)


def _tools(summary: WindowSummary, role: int) -> Part:
    """Tool definitions and the prompt's framing are not stored; what the last turn reported
    beyond the role doc, rows and slots is the best figure there is."""
    reported = _reported_input(summary)
    if reported is None:
        return Part("tools and framing", None, "unknown until a turn reports its usage")
    rest = reported - role - summary.tokens - summary.slot_tokens
    if rest < 0:
        return Part("tools and framing", None, "unknown: the last turn reported less than the rest")
    return Part("tools and framing", rest, "estimated (last reported input minus the rest)")
