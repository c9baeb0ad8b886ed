"""Typed tool parameters: one declaration gives the JSON schema the model sees and the checks.

The model is told real types (integer, boolean, array, object) and held to them: a string
"5" where an integer is declared is refused with a message that says what was expected, so
the model can resend the call. Python's `bool` is an `int`; the checks keep them apart.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from runtime.errors import MnemaraError
from runtime.turn.driver import ToolOutput, ToolSpec

Kind = Literal["string", "integer", "number", "boolean", "array", "object"]
Args = dict[str, Any]


@dataclass(frozen=True)
class Param:
    """One parameter. `items` types an array's elements; `minimum` bounds integers (and
    array lengths' elements); `choices` restricts a string."""

    name: str
    kind: Kind
    description: str
    required: bool = False
    items: Kind | None = None
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[str, ...] = ()
    default: Any = None

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.kind, "description": self.description}
        if self.items is not None:
            out["items"] = {"type": self.items}
        if self.minimum is not None:
            key = "minimum" if self.kind != "array" else "minItems"
            out[key] = self.minimum
        if self.maximum is not None and self.kind != "array":
            out["maximum"] = self.maximum
        if self.choices:
            out["enum"] = list(self.choices)
        if self.default is not None:
            out["default"] = self.default
        return out


def input_schema(params: Sequence[Param]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {p.name: p.schema() for p in params},
        "required": [p.name for p in params if p.required],
        "additionalProperties": False,
    }


def _is(kind: Kind, value: Any) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "array":
        return isinstance(value, list)
    return isinstance(value, dict)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_args(params: Sequence[Param], args: Mapping[str, Any]) -> Args | str:
    """The arguments with defaults filled in, or a message saying what is wrong."""
    known = {p.name: p for p in params}
    unknown = sorted(set(args) - set(known))
    if unknown:
        return f"unknown parameter(s) {', '.join(unknown)}; this tool takes: {', '.join(known)}"
    out: Args = {}
    for p in params:
        if p.name not in args or args[p.name] is None:
            if p.required:
                return f"missing required parameter {p.name!r} ({p.kind}): {p.description}"
            out[p.name] = p.default
            continue
        value = args[p.name]
        if not _is(p.kind, value):
            return f"{p.name} must be a JSON {p.kind}, got {type(value).__name__} {_shown(value)}"
        if p.kind == "array" and p.items is not None:
            bad = [v for v in value if not _is(p.items, v)]
            if bad:
                return f"{p.name} must be a list of {p.items}s; {_shown(bad[0])} is not one"
            if p.minimum is not None and len(value) < p.minimum:
                return f"{p.name} needs at least {p.minimum} item(s)"
        if p.kind in ("integer", "number"):
            if p.minimum is not None and value < p.minimum:
                return f"{p.name} must be at least {p.minimum}, got {value}"
            if p.maximum is not None and value > p.maximum:
                return f"{p.name} must be at most {p.maximum}, got {value}"
        if p.choices and value not in p.choices:
            return f"{p.name} must be one of {', '.join(p.choices)}; got {_shown(value)}"
        out[p.name] = value
    return out


Run = Callable[[Args], Awaitable[ToolOutput]]


def define(name: str, description: str, params: Sequence[Param], run: Run) -> ToolSpec:
    """A ToolSpec whose handler checks the arguments before `run` sees them.

    Our own errors (a missing marker, a row that is gone) come back as error results the model
    can read; anything else is left to `call_tool`, which reports it the same way.
    """

    async def handler(args: dict[str, Any]) -> ToolOutput:
        checked = check_args(params, args)
        if isinstance(checked, str):
            return ToolOutput(f"{name}: {checked}", is_error=True)
        try:
            return await run(checked)
        except MnemaraError as exc:
            return ToolOutput(f"{name}: {exc}", is_error=True)

    return ToolSpec(name, description, input_schema(params), handler)


def ok(text: str) -> ToolOutput:
    return ToolOutput(text)


def refuse(text: str) -> ToolOutput:
    return ToolOutput(text, is_error=True)
