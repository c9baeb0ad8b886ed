"""Payload and role checks: what submit accepts, and how a stored row is decoded safely.

Pure functions. Decoding never raises: a stored row can come from any writer, so a bad one
yields a `Refusal` with the reason, which the claim turns into a dead letter.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from peerbus.errors import (
    InvalidKeyError,
    InvalidRoleError,
    PayloadEncodingError,
    PayloadNotObjectError,
    PayloadTooLargeError,
)
from sqlitekit.jsonload import JsonLimitError, load_json

_ROLE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,63}")
MAX_KEY = 200


@dataclass(frozen=True)
class Refusal:
    """Why a stored payload cannot be delivered."""

    reason: str


def check_role(role: str, *, field: str) -> str:
    """Return `role` if it is a usable role name, else raise InvalidRoleError."""
    if not isinstance(role, str) or not _ROLE.fullmatch(role):
        raise InvalidRoleError(role=str(role), field=field)
    return role


def check_key(key: object) -> str:
    """Return `key` if it is a usable idempotency key (1-MAX_KEY characters of text), else
    raise InvalidKeyError."""
    if not isinstance(key, str) or not 1 <= len(key) <= MAX_KEY:
        raise InvalidKeyError(key=key, limit=MAX_KEY)
    return key


MAX_TOPIC = 200


def topic_text(topic: object) -> str | None:
    """The topic as stored (`task_id`): text of at most MAX_TOPIC characters, a NUL (which
    PostgreSQL cannot store) shown as U+FFFD, the same on every backend."""
    return None if topic is None else str(topic)[:MAX_TOPIC].replace("\x00", "\ufffd")


def json_kind(value: object) -> str:
    """The JSON name of a decoded value's type, for messages."""
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "null" if value is None else type(value).__name__


def nesting_depth(value: object, *, limit: int) -> int:
    """Depth of nested containers (a flat object is 1), counting no further than limit + 1.

    Iterative, so a deep or self-referencing value cannot exhaust the stack.
    """
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: list[object] = list(node.values())
        elif isinstance(node, list | tuple):
            children = list(node)
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


def encode_payload(payload: object, *, max_bytes: int, max_depth: int) -> str:
    """The stored text of a payload handed to submit; raises a PayloadError if refused."""
    if not isinstance(payload, dict):
        raise PayloadNotObjectError(kind=json_kind(payload))
    if nesting_depth(payload, limit=max_depth) > max_depth:
        raise PayloadEncodingError(f"it nests deeper than {max_depth} levels")
    try:
        text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise PayloadEncodingError(str(exc)) from None
    size = len(text.encode("utf-8"))
    if size > max_bytes:
        raise PayloadTooLargeError(size=size, limit=max_bytes)
    return text


def decode_payload(
    text: str | None, nbytes: int | None, *, max_bytes: int, max_depth: int
) -> dict[str, Any] | Refusal:
    """Decode a stored payload_json. `text` is None when the SQL left an oversized value out."""
    if nbytes is None:
        return Refusal("payload_json is NULL")
    if nbytes > max_bytes:
        return Refusal(f"payload is {nbytes} bytes, over the {max_bytes}-byte cap")
    if text is None:
        return Refusal("payload_json is not text")
    try:
        value = load_json(text, max_depth=max_depth)
    except JsonLimitError:
        return Refusal(f"payload JSON nests too deep (deeper than {max_depth} levels)")
    except ValueError as exc:
        return Refusal(f"payload is not valid JSON ({exc})")
    if not isinstance(value, dict):
        return Refusal(f"payload is a JSON {json_kind(value)}, not an object")
    if nesting_depth(value, limit=max_depth) > max_depth:
        return Refusal(f"payload nests deeper than {max_depth} levels")
    return value
