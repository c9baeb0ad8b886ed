"""A cassette as a rehearsal script: the recorded answers served again, in order.

Each recorded `POST /v1/messages` answer becomes one `Rule` without a `when`, used once, in
recording order, on a `strict` panel: the replay gets exactly the answers the recording got,
and a request past the end gets a 400 instead of an invented answer. Tool calls keep their
recorded ids, so the replay's tool results can be matched to the recording's.

Side requests (a JSON-schema `output_config`, such as the CLI naming the session) are left
out: the rehearsal model answers them itself without using a rule (matching.py).

`script_toml` writes the same script as TOML that `load_script` reads back to an equal
`Script` (the tests check it), so a recorded session can be kept as an ordinary test.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, get_args

from runtime.cassette.file import Cassette, CassetteError, Exchange
from runtime.rehearsal.matching import PanelScript, Rule, Script
from runtime.rehearsal.records import RequestRecord
from runtime.rehearsal.replies import (
    ContentItem,
    ErrorKind,
    Faults,
    Reply,
    StopReason,
    TextItem,
    ThinkingItem,
    ToolUseItem,
)
from runtime.rehearsal.server import UsageHook

# The service's error types, as the rehearsal model's error kinds (sse.ERRORS the other way).
ERROR_KINDS: dict[str, ErrorKind] = {
    "overloaded_error": "overloaded",
    "rate_limit_error": "rate_limited",
    "api_error": "api_error",
    "authentication_error": "authentication",
    "invalid_request_error": "invalid_request",
}
BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def is_side_request(body: Any) -> bool:
    """A request the CLI makes for itself (a JSON-schema output), not a conversation turn."""
    config = body.get("output_config") if isinstance(body, dict) else None
    fmt = config.get("format") if isinstance(config, dict) else None
    return isinstance(fmt, dict) and fmt.get("type") == "json_schema"


def turns(cassette: Cassette) -> tuple[Exchange, ...]:
    """The recorded conversation requests, in order (what a replay is compared against)."""
    return tuple(e for e in cassette.messages if not is_side_request(e.request.body))


def cassette_script(cassette: Cassette, panel: str) -> Script:
    """The script that serves the recorded answers to `panel`, in order."""
    rules = tuple(
        Rule(reply_of(cassette, e), None, 1, f"panels.{panel}.replies[{i}]")
        for i, e in enumerate(turns(cassette))
    )
    return Script({panel: PanelScript(rules=rules, strict=True)})


def recorded_usage(cassette: Cassette, panel: str) -> UsageHook:
    """The server hook that reports each answer's recorded usage: the CLI reads it (the
    tokens left in its context appear in later requests), so a replay must see the same."""
    usages = [_usage(e) for e in turns(cassette)]
    label = re.compile(rf"^panels\.{re.escape(panel)}\.replies\[(\d+)\]$")

    def hook(record: RequestRecord) -> Mapping[str, Any] | None:
        found = label.match(record.source)
        return usages[int(found.group(1))] if found else None

    return hook


def _usage(exchange: Exchange) -> dict[str, Any] | None:
    response = exchange.response
    message = response.message if response.stream else response.body
    usage = message.get("usage") if isinstance(message, dict) else None
    return usage if isinstance(usage, dict) else None


def reply_of(cassette: Cassette, exchange: Exchange) -> Reply:
    """The `Reply` that gives the recorded answer again; CassetteError when it cannot."""
    response = exchange.response

    def bad(message: str) -> CassetteError:
        return CassetteError(f"exchange {exchange.index}: {message}", path=cassette.path)

    if response.status != 200:
        error = response.body.get("error") if isinstance(response.body, dict) else None
        return _error_reply(error if isinstance(error, dict) else {}, response.status)
    message = response.message if response.stream else response.body
    if not isinstance(message, dict):
        raise bad("the response has no message to serve again")
    items = tuple(_item(block, bad) for block in message.get("content") or [])
    stop = message.get("stop_reason")
    stop_reason: StopReason | None = stop if stop in get_args(StopReason) else None
    if response.error is not None:
        reply = _error_reply(response.error, 500)
        return Reply(
            items, stop_reason, reply.error, reply.error_message, Faults(error_in_stream=True)
        )
    return Reply(items, stop_reason)


def _error_reply(error: dict[str, Any], status: int) -> Reply:
    kind = ERROR_KINDS.get(str(error.get("type", "")))
    text = str(error.get("message", ""))
    if kind == "invalid_request" and "prompt is too long" in text:
        kind = "prompt_too_long"
    if kind is None:  # a type the rehearsal model has no name for: keep its class of status
        kind = "api_error" if status >= 500 else "invalid_request"
    return Reply(error=kind, error_message=text)


def _item(block: Any, bad: Any) -> ContentItem:
    kind = block.get("type") if isinstance(block, dict) else None
    if kind == "text":
        return TextItem(str(block.get("text", "")))
    if kind == "thinking":
        return ThinkingItem(str(block.get("thinking", "")), str(block.get("signature", "")))
    if kind == "tool_use" and isinstance(block.get("input"), dict):
        return ToolUseItem(str(block.get("name", "")), block["input"], str(block.get("id", "")))
    if kind == "tool_use":
        raise bad("a tool call whose input was not valid JSON cannot be served again")
    raise bad(f"a content block of type {kind!r} cannot be served by the rehearsal model")


def script_toml(cassette: Cassette, panel: str) -> str:
    """The script of `cassette_script` as TOML text for `load_script`."""
    script = cassette_script(cassette, panel)
    name = _key(panel)
    lines = [
        f"# Recorded by `mnemara record` ({cassette.path.name}), converted by",
        "# `mnemara rehearse --to-script`: the recorded answers, served in order.",
        f"[panels.{name}]",
        "strict = true",
    ]
    for i, rule in enumerate(script.panels[panel].rules):
        lines += ["", f"[[panels.{name}.replies]]  # recorded request {i}"]
        reply = rule.reply
        if reply.content:
            lines.append("content = [")
            lines += [f"  {_toml_item(item)}," for item in reply.content]
            lines.append("]")
        elif reply.error is None:
            lines.append('text = ""')
        if reply.stop_reason is not None:
            lines.append(f"stop_reason = {_value(reply.stop_reason)}")
        if reply.error is not None:
            lines.append(f"error = {_value(reply.error)}")
            if reply.error_message:
                lines.append(f"error_message = {_value(reply.error_message)}")
            if reply.faults.error_in_stream:
                lines.append("error_in_stream = true")
    return "\n".join(lines) + "\n"


def _toml_item(item: ContentItem) -> str:
    if isinstance(item, TextItem):
        return f"{{ text = {_value(item.text)} }}"
    if isinstance(item, ThinkingItem):
        return f"{{ thinking = {_value(item.thinking)}, signature = {_value(item.signature)} }}"
    fields = f"tool_use = {_value(item.name)}, input = {_value(dict(item.input))}"
    return f"{{ {fields}, id = {_value(item.id)} }}"


def _key(key: str) -> str:
    return key if BARE_KEY.fullmatch(key) else _value(key)


def _value(value: Any) -> str:
    """One TOML value on one line (inline tables and arrays); JSON null has no TOML form."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        # JSON string escapes are TOML basic-string escapes; DEL must be escaped in TOML too.
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(str(k))} = {_value(v)}" for k, v in value.items()) + " }"
    raise CassetteError(
        f"a tool input holds {value!r}, which TOML cannot write; edit the cassette or keep "
        "replaying it with --cassette",
        path="<script>",
    )
