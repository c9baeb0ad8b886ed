"""The cassette file: one recorded session's model requests and responses, in order.

JSON lines, so a recording can be appended to as each exchange completes and a crash keeps
everything before it:

    {"cassette": 1, "instance": "coder", "upstream": "https://api.anthropic.com",
     "mode": "prompts"}                                 # or "repl": inputs typed in the REPL
    {"input": "review README.md"}                       # an operator input, as typed
    {"exchange": 0, "request": {...}, "response": {...}}
    ...
    {"end": true, "requests": 3, "scrubbed": {"headers": [...], "patterns": {...},
                                              "paths": [...]}}

A request is `{method, path, headers, body}` (credential headers dropped, everything
scrubbed, scrub.py). A response is `{status, body}` for a plain JSON answer, or
`{status, stream: true, message}` for a streamed one, the SSE events folded into the final
message (content, stop_reason, usage), plus `error` when the stream carried an error event.
That is enough to serve the answer again (cassette_script.py). The `end` line says what was
scrubbed: header names, pattern names with counts, JSON paths; never a value.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from runtime.rehearsal.errors import RehearsalError
from sqlitekit.jsonload import load_json

VERSION = 1
M = TypeVar("M", bound=BaseModel)


class CassetteError(RehearsalError):
    """Raised when a cassette cannot be read or is invalid. Names the file, line and field."""

    def __init__(self, message: str, *, path: Path | str, line: int | None = None) -> None:
        where = f"{path}: line {line}" if line is not None else str(path)
        super().__init__(f"{where}: {message}")
        self.path = path
        self.line = line


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RequestModel(_Model):
    method: str
    path: str
    headers: dict[str, str] = Field(default_factory=dict)
    body: Any = None


class ResponseModel(_Model):
    status: int = Field(ge=100, le=599)
    stream: bool = False
    body: Any = None
    message: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class HeadLine(_Model):
    cassette: Literal[1]
    instance: str = ""
    upstream: str = ""
    # How the inputs were given: as --prompt turns, or typed into the REPL (a hosted panel,
    # whose CLI is offered the host's tools too); a replay runs them the same way.
    mode: Literal["prompts", "repl"] = "prompts"


class InputLine(_Model):
    input: str


class ExchangeLine(_Model):
    exchange: int = Field(ge=0)
    request: RequestModel
    response: ResponseModel


class EndLine(_Model):
    end: Literal[True]
    requests: int = Field(ge=0)
    scrubbed: dict[str, Any]


@dataclass(frozen=True)
class Exchange:
    index: int
    request: RequestModel
    response: ResponseModel

    @property
    def is_message(self) -> bool:
        """A `POST /v1/messages` turn (not count_tokens or anything else)."""
        path = self.request.path.split("?", 1)[0]
        return self.request.method == "POST" and path.endswith("/v1/messages")


@dataclass(frozen=True)
class Cassette:
    path: Path
    instance: str
    upstream: str
    mode: Literal["prompts", "repl"]
    inputs: tuple[str, ...]
    exchanges: tuple[Exchange, ...]
    scrubbed: dict[str, Any] | None  # None: the recording did not finish (no end line)

    @property
    def messages(self) -> tuple[Exchange, ...]:
        return tuple(e for e in self.exchanges if e.is_message)


def load_cassette(path: Path | str) -> Cassette:
    """Read and validate a cassette; CassetteError names the file, line and field."""
    source = Path(path)
    if source.is_dir():
        raise CassetteError("is a directory; give the cassette file", path=source)
    try:
        raw = source.read_bytes()
    except OSError as exc:
        raise CassetteError(f"cannot read: {exc.strerror}", path=source) from exc
    lines = raw.decode("utf-8", errors="replace").splitlines()
    if not lines or not lines[0].strip():
        raise CassetteError('empty; a cassette starts with a {"cassette": 1} line', path=source)
    head = _parse(HeadLine, lines[0], source, 1)
    inputs: list[str] = []
    exchanges: list[Exchange] = []
    scrubbed: dict[str, Any] | None = None
    for number, text in enumerate(lines[1:], start=2):
        if not text.strip():
            continue
        if scrubbed is not None:
            raise CassetteError("a line after the end line", path=source, line=number)
        data = _json(text, source, number)
        if "input" in data:
            inputs.append(_parse(InputLine, data, source, number).input)
        elif "exchange" in data:
            line = _parse(ExchangeLine, data, source, number)
            if line.exchange != len(exchanges):
                raise CassetteError(
                    f"field 'exchange': {line.exchange} out of order, expected {len(exchanges)}",
                    path=source,
                    line=number,
                )
            exchanges.append(Exchange(line.exchange, line.request, line.response))
        elif "end" in data:
            end = _parse(EndLine, data, source, number)
            if end.requests != len(exchanges):
                raise CassetteError(
                    f"field 'requests': says {end.requests} but {len(exchanges)} are recorded",
                    path=source,
                    line=number,
                )
            scrubbed = end.scrubbed
        else:
            raise CassetteError(
                "not an input, exchange or end line (no 'input', 'exchange' or 'end' field)",
                path=source,
                line=number,
            )
    return Cassette(
        source, head.instance, head.upstream, head.mode, tuple(inputs), tuple(exchanges), scrubbed
    )


def _json(text: str, source: Path, number: int) -> dict[str, Any]:
    try:
        data = load_json(text)
    except ValueError as exc:
        raise CassetteError(
            f"not valid JSON ({exc}); if the recording was cut short, delete this line to keep "
            "the rest",
            path=source,
            line=number,
        ) from exc
    if not isinstance(data, dict):
        raise CassetteError("not a JSON object", path=source, line=number)
    return data


def _parse(model: type[M], data: Any, source: Path, number: int) -> M:
    if isinstance(data, str):
        data = _json(data, source, number)
        if model is HeadLine and "cassette" in data and data["cassette"] != VERSION:
            raise CassetteError(
                f"cassette version {data['cassette']!r} is not supported; this mnemara reads "
                f"version {VERSION} (record it again)",
                path=source,
                line=number,
            )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        message = str(first["msg"]).removeprefix("Value error, ")
        raise CassetteError(f"field '{where}': {message}", path=source, line=number) from exc


class CassetteWriter:
    """Writes a cassette durably as a session runs.

    The file appears whole (head line written to a temporary file, fsynced, renamed), then
    each input and exchange is appended and fsynced as it completes, so a crash loses at
    most the exchange in flight. The writes are small and local, so they are made in place,
    without a thread hop, which also keeps the lines in completion order."""

    def __init__(
        self,
        path: Path,
        *,
        instance: str,
        upstream: str,
        mode: Literal["prompts", "repl"] = "prompts",
    ) -> None:
        self.path = path
        self.count = 0
        head = {"cassette": VERSION, "instance": instance, "upstream": upstream, "mode": mode}
        fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(_line(head))
                out.flush()
                os.fsync(out.fileno())
            os.replace(temp, path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
        _fsync_dir(path.parent)
        self._out: BinaryIO = path.open("ab")

    def add_input(self, text: str) -> None:
        self._append({"input": text})

    def add_exchange(self, request: dict[str, Any], response: dict[str, Any]) -> None:
        self._append({"exchange": self.count, "request": request, "response": response})
        self.count += 1

    def finish(self, scrubbed: dict[str, Any]) -> None:
        self._append({"end": True, "requests": self.count, "scrubbed": scrubbed})
        self._out.close()

    def close(self) -> None:
        self._out.close()

    def _append(self, entry: dict[str, Any]) -> None:
        self._out.write(_line(entry))
        self._out.flush()
        os.fsync(self._out.fileno())


def _line(entry: dict[str, Any]) -> bytes:
    # ensure_ascii: every byte of the file is ASCII, so a secret cannot hide in an encoding
    # the scrubber did not look at, and a test can search the bytes for it.
    return (json.dumps(entry, ensure_ascii=True, separators=(",", ":")) + "\n").encode()


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return  # some systems cannot open a directory: the rename is still atomic
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fold_stream(events: Sequence[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The final message of a streamed answer, and its error event if one came (pure).

    Content blocks are built from `content_block_start` and their deltas; usage is the last
    seen (the service repeats the input figures in `message_delta`)."""
    message: dict[str, Any] = {"content": []}
    partial: dict[int, str] = {}
    error: dict[str, Any] | None = None
    for event in events:
        kind = event.get("type")
        if kind == "message_start" and isinstance(event.get("message"), dict):
            start = dict(event["message"])
            start["content"] = []
            message = start
        elif kind == "content_block_start":
            message["content"].append(dict(event.get("content_block") or {}))
        elif kind == "content_block_delta" and message["content"]:
            _apply_delta(message["content"][-1], event.get("delta") or {}, partial)
        elif kind == "message_delta":
            message.update(event.get("delta") or {})
            message["usage"] = {**message.get("usage", {}), **(event.get("usage") or {})}
        elif kind == "error":
            error = dict(event.get("error") or {})
    for block in message["content"]:
        key = id(block)
        if key in partial:
            try:
                block["input"] = json.loads(partial[key]) if partial[key] else {}
            except ValueError:
                block["input_json"] = partial[key]  # kept as sent: the replay cannot fix it
    return message, error


def _apply_delta(block: dict[str, Any], delta: dict[str, Any], partial: dict[int, str]) -> None:
    kind = delta.get("type")
    if kind == "text_delta":
        block["text"] = block.get("text", "") + str(delta.get("text", ""))
    elif kind == "thinking_delta":
        block["thinking"] = block.get("thinking", "") + str(delta.get("thinking", ""))
    elif kind == "signature_delta":
        block["signature"] = str(delta.get("signature", ""))
    elif kind == "input_json_delta":
        partial[id(block)] = partial.get(id(block), "") + str(delta.get("partial_json", ""))
