"""How a replay compares with its recording: the first differing request, and tool decisions.

Pure over request bodies. Requests are compared as the cache simulator compares consecutive
requests (layout.py): the prompt in cache order, canonical JSON, the billing header left out,
so the report is the first byte where the model would have been shown something different.
The replay's bodies are scrubbed like the recording's first (a role doc holding a secret is
recorded with a marker in its place), so only real differences count. The date the CLI
states in a reminder is not compared (`VOLATILE`): a cassette is meant to be replayed on
later days.

A tool decision is read from the requests alone, as the model sees it: the tool_result that
answers a recorded tool_use id in a later request. `is_error` with its text is a refusal (or
a failed run); a result without it is allowed; no result at all means the session never got
that far. Only a refusal's text is compared: an allowed call's output may vary run to run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from runtime.cassette.scrub import Scrubber, Tally
from runtime.rehearsal.layout import ApproxTokenCounter, Divergence, first_divergence, layout_of
from runtime.rehearsal.matching import result_text

Body = Mapping[str, Any]
# Text the CLI writes that changes with the day, not with the session: not compared, so a
# cassette recorded yesterday still replays. Each is replaced on both sides before comparing.
VOLATILE = ((re.compile(r"Today's date is \d{4}-\d{2}-\d{2}\."), "Today's date is (any)."),)


def steady(value: Any) -> Any:
    """A copy of a JSON value with the `VOLATILE` text replaced (pure)."""
    if isinstance(value, str):
        for pattern, fixed in VOLATILE:
            value = pattern.sub(fixed, value)
        return value
    if isinstance(value, list):
        return [steady(v) for v in value]
    if isinstance(value, dict):
        return {k: steady(v) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class RequestDiff:
    """The first replayed request that is not the recorded one."""

    index: int
    divergence: Divergence | None  # None when one side has no request at this index
    recorded: int  # how many requests each side has
    replayed: int

    def describe(self) -> str:
        if self.divergence is None:
            if self.replayed < self.recorded:
                return (
                    f"the replay made {self.replayed} request(s), the recording "
                    f"{self.recorded}: request {self.index} never came"
                )
            return f"request {self.index} was not in the recording ({self.recorded} recorded)"
        d = self.divergence
        return (
            f"request {self.index} differs from the recording at byte {d.offset} "
            f"(in {d.unit}): recorded {d.previous!r}, replayed {d.current!r}"
        )


@dataclass(frozen=True)
class Decision:
    tool: str
    tool_use_id: str
    outcome: str  # "allowed", "refused" or "no result"
    text: str = ""  # the refusal text; empty otherwise

    def describe(self) -> str:
        return f"{self.outcome}: {self.text[:160]!r}" if self.text else self.outcome


@dataclass(frozen=True)
class ReplayReport:
    requests: int  # recorded conversation requests
    diff: RequestDiff | None
    recorded: tuple[Decision, ...]
    replayed: tuple[Decision, ...]

    @property
    def decision_diffs(self) -> list[str]:
        return decision_diffs(self.recorded, self.replayed)

    @property
    def identical(self) -> bool:
        return self.diff is None and not self.decision_diffs

    def lines(self) -> list[str]:
        """The report as the operator reads it."""
        out = [
            f"requests: all {self.requests} match the recording"
            if self.diff is None
            else f"requests: {self.diff.describe()}"
        ]
        diffs, total = self.decision_diffs, len(self.recorded)
        out.append(f"tool decisions: {total - len(diffs)}/{total} the same")
        out += [f"  {line}" for line in diffs]
        return out


def compare_replay(
    recorded: Sequence[Body],
    answers: Sequence[Body],
    replayed: Sequence[Body],
    scrubber: Scrubber,
) -> ReplayReport:
    """Compare a replay's conversation requests with the recorded ones; `answers` are the
    recorded final messages (whose tool calls are judged). The replay is scrubbed first."""
    clean = [scrubber.json(dict(body), Tally(), "replay") for body in replayed]
    calls = tool_calls(answers)
    return ReplayReport(
        len(recorded),
        first_request_diff([steady(b) for b in recorded], [steady(b) for b in clean]),
        tuple(decisions(calls, recorded)),
        tuple(decisions(calls, clean)),
    )


def first_request_diff(recorded: Sequence[Body], replayed: Sequence[Body]) -> RequestDiff | None:
    """The first replayed request that differs from the recorded one, or None if all match."""
    counter = ApproxTokenCounter()
    for i in range(max(len(recorded), len(replayed))):
        if i >= len(recorded) or i >= len(replayed):
            return RequestDiff(i, None, len(recorded), len(replayed))
        old, new = layout_of(recorded[i], counter), layout_of(replayed[i], counter)
        divergence = first_divergence(old, new)
        if divergence is not None:
            return RequestDiff(i, divergence, len(recorded), len(replayed))
    return None


def tool_calls(answers: Sequence[Body]) -> list[tuple[str, str]]:
    """(id, name) of every tool call in some answers (recorded final messages), in order."""
    return [
        (str(block.get("id", "")), str(block.get("name", "")))
        for answer in answers
        for block in answer.get("content") or []
        if isinstance(block, dict) and block.get("type") == "tool_use"
    ]


def decisions(calls: Sequence[tuple[str, str]], requests: Sequence[Body]) -> list[Decision]:
    """What became of each call, read from the tool_results of `requests`."""
    results: dict[str, tuple[bool, str]] = {}
    for body in requests:
        for message in body.get("messages") or []:
            content = message.get("content") if isinstance(message, dict) else None
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    text = result_text(block.get("content"))
                    results[str(block.get("tool_use_id", ""))] = (bool(block.get("is_error")), text)
    out = []
    for call_id, name in calls:
        if call_id not in results:
            out.append(Decision(name, call_id, "no result"))
            continue
        refused, text = results[call_id]
        out.append(
            Decision(name, call_id, "refused" if refused else "allowed", text if refused else "")
        )
    return out


def decision_diffs(recorded: Sequence[Decision], replayed: Sequence[Decision]) -> list[str]:
    """One line per tool call decided differently in the replay."""
    lines = []
    for i, (old, new) in enumerate(zip(recorded, replayed, strict=True)):
        if (old.outcome, old.text) != (new.outcome, new.text):
            lines.append(
                f"tool call {i} ({old.tool} {old.tool_use_id}): recorded {old.describe()}; "
                f"replayed {new.describe()}"
            )
    return lines
