"""Which scripted reply answers a request: the request's view, rules, and the per-panel cursor.

Pure over plain data. A panel's rules are tried like this, on every request:

1. a Python hook, if the panel has one, may answer (returning `None` lets the script answer);
2. else the first rule *with* a `when` that matches and has uses left (file order);
3. else the next rule *without* a `when` that has uses left (taken in order);
4. else the fallback: a short text and `end_turn`, so a session always finishes
   (or, for a `strict` panel, an `invalid_request` error: a 400, which the CLI does not retry).

A request whose `output_config.format` is a JSON schema is a side request of the CLI's own,
such as naming the session (the SDK's structured output goes through a `StructuredOutput`
tool instead, so those turns are scripted as usual). Unless the hook answers it, it gets a
minimal JSON instance of the schema and no rule is used up.

A `when` looks at the latest `user` message of the request (a trailing `system` message is
skipped): `user_text_contains` searches its text blocks, `tool_result_contains` its
tool_result blocks ("" = any tool result), `inbox_from` the senders named in it. All given
conditions must hold. Because a runtime re-sends its whole transcript in that message, a rule
fires `times` times (default once) and is then used up, so old text does not re-trigger it.

A run of the script (one server's life) matches only what arrived since it began. A panel's
window outlives its host: brought up again, the panel's first request re-sends the rows of its
earlier life, while the script starts over with every rule unused. So the cursor notes which
transcript rows (`runtime/turn/prompt.py` renders each as one text block, `[row N · role]`; row
ids are never reused) the panel's first conversation request of this run re-sends, and leaves
those rows out of every view from then on: old text neither fires a rule nor names a sender,
and the script plays as it did the first time. Rows written during this run stay in view,
as before; slots, the manifest, the inbox and the input are always in view. A hook sees the
whole request.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from runtime.rehearsal.replies import Reply
from runtime.turn.prompt import rendered_row_id

# How a sender is named in an inbox message: `from="producer"` (or sender=, single quotes)
# inside a wrapper tag, or a `From: producer` line. The prompt layer wraps peer messages;
# whichever of these forms it uses, `inbox_from` finds the sender.
INBOX_SENDER = re.compile(
    r"""\b(?:from|sender)\s*=\s*["']([^"']+)["']|^\s*from:\s*(\S+)""",
    re.IGNORECASE | re.MULTILINE,
)

# A stored row in the transcript, one text block each, as `runtime.turn.prompt.render_row`
# writes it.

ReplyHook = Callable[[dict[str, Any]], Reply | None]


@dataclass(frozen=True)
class RequestView:
    """What the rules can see of one request."""

    user_text: str = ""
    tool_results: tuple[str, ...] = ()
    inbox_senders: frozenset[str] = frozenset()

    @property
    def answers_tool_call(self) -> bool:
        return bool(self.tool_results)

    @classmethod
    def of(
        cls, body: Mapping[str, Any], *, hidden_rows: frozenset[int] = frozenset()
    ) -> RequestView:
        """The view of `body`'s latest user message, without the transcript rows whose ids
        are in `hidden_rows`."""
        blocks = latest_user_blocks(body)
        texts = [
            str(b.get("text", ""))
            for b in blocks
            if isinstance(b, dict)
            and b.get("type") == "text"
            and row_id(str(b.get("text", ""))) not in hidden_rows
        ]
        results = [
            result_text(b.get("content"))
            for b in blocks
            if isinstance(b, dict) and b.get("type") == "tool_result"
        ]
        user_text = "\n".join(texts)
        senders = {a or b for a, b in INBOX_SENDER.findall(user_text)}
        return cls(user_text, tuple(results), frozenset(senders))


def latest_user_blocks(body: Mapping[str, Any]) -> list[Any]:
    """The content blocks of the request's latest `user` message (a string is one text block)."""
    messages = body.get("messages")
    latest: Any = None
    if isinstance(messages, list):
        users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
        latest = users[-1].get("content") if users else None
    if isinstance(latest, str):
        return [{"type": "text", "text": latest}]
    return latest if isinstance(latest, list) else []


def row_id(text: str) -> int | None:
    """The id of the transcript row a text block renders, or None for any other text."""
    return rendered_row_id(text)


def transcript_rows(body: Mapping[str, Any]) -> frozenset[int]:
    """The ids of the transcript rows the request's latest user message re-sends."""
    ids = (
        row_id(str(b.get("text", "")))
        for b in latest_user_blocks(body)
        if isinstance(b, dict) and b.get("type") == "text"
    )
    return frozenset(i for i in ids if i is not None)


def result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(c.get("text", "")) for c in content if isinstance(c, dict) and "text" in c
        )
    return ""


@dataclass(frozen=True)
class When:
    user_text_contains: str | None = None
    tool_result_contains: str | None = None
    inbox_from: str | None = None

    def matches(self, view: RequestView) -> bool:
        if self.user_text_contains is not None and self.user_text_contains not in view.user_text:
            return False
        if self.tool_result_contains is not None and not any(
            self.tool_result_contains in r for r in view.tool_results
        ):
            return False
        return self.inbox_from is None or self.inbox_from in view.inbox_senders


@dataclass(frozen=True)
class Rule:
    reply: Reply
    when: When | None = None
    # How many requests this rule may answer; None means any number.
    times: int | None = 1
    label: str = ""


@dataclass(frozen=True)
class PanelScript:
    rules: tuple[Rule, ...] = ()
    hook: ReplyHook | None = None
    strict: bool = False
    fallback_text: str = "Done."


@dataclass(frozen=True)
class Script:
    panels: Mapping[str, PanelScript] = field(default_factory=dict)

    @classmethod
    def from_hooks(cls, hooks: Mapping[str, ReplyHook]) -> Script:
        return cls({name: PanelScript(hook=hook) for name, hook in hooks.items()})


@dataclass(frozen=True)
class Choice:
    """The answer picked for a request, and where it came from (for the request log)."""

    reply: Reply
    source: str
    unscripted: bool = False


class ScriptCursor:
    """One panel's progress through its script: how often each rule has answered, and which
    transcript rows were there before this run of the script began."""

    def __init__(self, panel: PanelScript) -> None:
        self.panel = panel
        self._used = [0] * len(panel.rules)
        # Set by the panel's first conversation request: the rows it re-sends were written in
        # an earlier life of the panel, before these rules started over, so no rule sees them.
        self.earlier_rows: frozenset[int] | None = None

    def _left(self, index: int) -> bool:
        times = self.panel.rules[index].times
        return times is None or self._used[index] < times

    def choose(self, body: Mapping[str, Any]) -> Choice:
        schema = _output_schema(body)
        if self.earlier_rows is None and schema is None:
            self.earlier_rows = transcript_rows(body)
        if self.panel.hook is not None:
            hooked = self.panel.hook(dict(body))
            if hooked is not None:
                return Choice(hooked, "hook")
        if schema is not None:
            return Choice(Reply.text(json.dumps(schema_instance(schema))), "structured-default")
        view = RequestView.of(body, hidden_rows=self.earlier_rows or frozenset())
        rules = self.panel.rules
        conditional = (i for i, r in enumerate(rules) if r.when is not None)
        ordered = (i for i, r in enumerate(rules) if r.when is None)
        for i in conditional:
            when = rules[i].when
            if when is not None and self._left(i) and when.matches(view):
                return self._take(i)
        for i in ordered:
            if self._left(i):
                return self._take(i)
        if self.panel.strict:
            # 400, not 5xx: the CLI retries server errors but gives up on a bad request.
            refusal = Reply(
                error="invalid_request",
                error_message="rehearsal: the script has no reply for this request",
            )
            return Choice(refusal, "unscripted", unscripted=True)
        return Choice(Reply.text(self.panel.fallback_text), "fallback")

    def _take(self, index: int) -> Choice:
        self._used[index] += 1
        rule = self.panel.rules[index]
        return Choice(rule.reply, rule.label or f"replies[{index}]")


def _output_schema(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """The JSON schema of a side request, or None for a conversation turn."""
    config = body.get("output_config")
    fmt = config.get("format") if isinstance(config, dict) else None
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        schema = fmt.get("schema")
        return schema if isinstance(schema, dict) else {}
    return None


def schema_instance(schema: Mapping[str, Any]) -> Any:
    """The smallest value that satisfies a simple JSON schema (required properties only)."""
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        return {k: schema_instance(props.get(k, {})) for k in schema.get("required", [])}
    defaults = {"string": "rehearsal", "integer": 0, "number": 0, "boolean": False, "array": []}
    return defaults.get(kind if isinstance(kind, str) else "")
