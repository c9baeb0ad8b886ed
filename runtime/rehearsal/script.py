"""The rehearsal script file: a TOML document saying, per panel, what the model answers.

    # examples/rehearsal/solo.toml
    [panels.engineer]                 # one table per panel (the URL path /p/engineer)
    strict = false                    # true: an unscripted request gets a 400, not the fallback
    fallback_text = "Done."           # the answer when no rule applies

    [[panels.engineer.replies]]       # rules, tried as `matching.py` describes
    when = { user_text_contains = "make the file" }
    content = [
      { thinking = "Bash can do it.", signature = "sig-1" },
      { text = "Creating it." },
      { tool_use = "Bash", input = { command = "touch out.txt" } },
    ]                                 # stop_reason defaults to tool_use here

    [[panels.engineer.replies]]
    when = { tool_result_contains = "" }   # any tool result
    text = "The file is there."            # shorthand for content = [{ text = ... }]

    [[panels.engineer.replies]]       # no `when`: taken in order
    error = "overloaded"              # overloaded | rate_limited | api_error |
    times = 2                         #   prompt_too_long | authentication | invalid_request

Reply keys: `when` (user_text_contains, tool_result_contains, inbox_from), `text`, `content`
(items: `{text, repeat}`, `{thinking, signature}`, `{tool_use, input, id}`), `stop_reason`,
`times` (a count, or "always"), `error`, `error_message`, and the fault knobs
`delay_first_token`, `delay_between_chunks` (seconds), `cut_after_bytes`,
`malformed_tool_json`, `error_in_stream`. `repeat = N` on a text item repeats its text N
times, for very long replies. Unknown keys are errors, reported with file and field.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from runtime.rehearsal.errors import ScriptError
from runtime.rehearsal.matching import PanelScript, Rule, Script, When
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
from sqlitekit.jsonload import load_toml


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class WhenModel(_Model):
    user_text_contains: str | None = None
    tool_result_contains: str | None = None
    inbox_from: str | None = None

    @model_validator(mode="after")
    def _some_condition(self) -> WhenModel:
        if (
            self.user_text_contains is None
            and self.tool_result_contains is None
            and (self.inbox_from is None)
        ):
            raise ValueError("give at least one condition, or leave `when` out")
        return self


class ItemModel(_Model):
    text: str | None = None
    repeat: int = Field(default=1, ge=1)
    thinking: str | None = None
    signature: str = "rehearsal-signature"
    tool_use: str | None = None
    input: dict[str, Any] = Field(default_factory=dict)
    id: str = ""

    @model_validator(mode="after")
    def _one_kind(self) -> ItemModel:
        kinds = [k for k in ("text", "thinking", "tool_use") if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValueError("give exactly one of text, thinking, tool_use")
        return self

    def to_item(self) -> ContentItem:
        if self.text is not None:
            return TextItem(self.text * self.repeat)
        if self.thinking is not None:
            return ThinkingItem(self.thinking, self.signature)
        return ToolUseItem(str(self.tool_use), self.input, self.id)


class ReplyModel(_Model):
    when: WhenModel | None = None
    text: str | None = None
    content: list[ItemModel] = Field(default_factory=list)
    stop_reason: StopReason | None = None
    times: int | Literal["always"] = Field(default=1)
    error: ErrorKind | None = None
    error_message: str = ""
    delay_first_token: float = Field(default=0.0, ge=0)
    delay_between_chunks: float = Field(default=0.0, ge=0)
    cut_after_bytes: int | None = Field(default=None, ge=0)
    malformed_tool_json: bool = False
    error_in_stream: bool = False

    @model_validator(mode="after")
    def _consistent(self) -> ReplyModel:
        if isinstance(self.times, int) and self.times < 1:
            raise ValueError('`times` is a count of at least 1, or "always"')
        if self.text is not None and self.content:
            raise ValueError("give `text` or `content`, not both")
        if self.error is None and self.text is None and not self.content:
            raise ValueError("a reply needs `text`, `content` or `error`")
        if self.error_in_stream and self.error is None:
            raise ValueError("`error_in_stream` needs an `error`")
        return self

    def to_rule(self, label: str) -> Rule:
        items: list[ContentItem] = [TextItem(self.text)] if self.text is not None else []
        items += [item.to_item() for item in self.content]
        faults = Faults(
            delay_first_token=self.delay_first_token,
            delay_between_chunks=self.delay_between_chunks,
            cut_after_bytes=self.cut_after_bytes,
            malformed_tool_json=self.malformed_tool_json,
            error_in_stream=self.error_in_stream,
        )
        reply = Reply(tuple(items), self.stop_reason, self.error, self.error_message, faults)
        when = When(**self.when.model_dump()) if self.when is not None else None
        times = None if self.times == "always" else self.times
        return Rule(reply, when, times, label)


class PanelModel(_Model):
    strict: bool = False
    fallback_text: str = "Done."
    replies: list[ReplyModel] = Field(default_factory=list)

    def to_panel(self, name: str) -> PanelScript:
        rules = tuple(r.to_rule(f"panels.{name}.replies[{i}]") for i, r in enumerate(self.replies))
        return PanelScript(rules=rules, strict=self.strict, fallback_text=self.fallback_text)


class ScriptModel(_Model):
    panels: dict[str, PanelModel] = Field(default_factory=dict)


def parse_script(text: str, *, source: Path | str = "<script>") -> Script:
    """Parse a script from TOML text; `source` names the file in errors."""
    try:
        data = load_toml(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScriptError(f"not valid TOML: {exc}", path=source) from exc
    try:
        model = ScriptModel.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        first = errors[0]
        message = str(first["msg"]).removeprefix("Value error, ")
        if len(errors) > 1:
            message += f" (and {len(errors) - 1} more problem(s))"
        raise ScriptError(message, path=source, field=_dotted(first["loc"])) from exc
    return Script({name: panel.to_panel(name) for name, panel in model.panels.items()})


def load_script(path: Path | str) -> Script:
    """Read and parse a script file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ScriptError(f"cannot read: {exc.strerror}", path=path) from exc
    return parse_script(text, source=path)


def _dotted(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out
