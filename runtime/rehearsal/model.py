"""The rehearsal model's service logic: route a request to its panel, answer, account, log.

No sockets here: `RehearsalModel` takes a request's bytes and returns an `Answer` (status,
JSON body or SSE events, fault knobs) for the HTTP layer (`server.py`) to send. Every
`/v1/messages` call is logged as a `RequestRecord` (records.py) with its computed usage, cost
and, when its prompt stopped matching the previous request of its panel, where.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from runtime.rehearsal.cache import PromptCache
from runtime.rehearsal.errors import CacheRuleError, RehearsalError
from runtime.rehearsal.layout import Layout, visible_text
from runtime.rehearsal.matching import Choice, PanelScript, ReplyHook, Script, ScriptCursor
from runtime.rehearsal.pricing import cost_usd
from runtime.rehearsal.records import OtherRequest, RequestRecord
from runtime.rehearsal.replies import ErrorKind, Faults, Reply, TextItem, ThinkingItem
from runtime.rehearsal.sse import Event, error_body, message_body, message_events
from sqlitekit.jsonload import load_json

PanelSource = PanelScript | ReplyHook
Scripts = Script | Mapping[str, PanelSource]


@dataclass(frozen=True)
class Answer:
    status: int
    body: Event | None = None  # JSON answer; None when `events` are streamed
    events: tuple[Event, ...] = ()
    faults: Faults = field(default_factory=Faults)
    headers: tuple[tuple[str, str], ...] = ()


def error_answer(kind: ErrorKind, message: str = "", faults: Faults | None = None) -> Answer:
    status, body = error_body(kind, message)
    # The SDK honours retry-after; 0 keeps a retried rehearsal fast.
    headers = (("retry-after", "0"),) if status in (429, 529) else ()
    return Answer(status, body, faults=faults or Faults(), headers=headers)


def _panel_script(source: PanelSource) -> PanelScript:
    return source if isinstance(source, PanelScript) else PanelScript(hook=source)


class RehearsalModel:
    def __init__(
        self,
        scripts: Scripts,
        *,
        clock: Callable[[], float],
        cache: PromptCache | None = None,
        chunk_chars: int = 64,
        on_record: Callable[[RequestRecord], None] | None = None,
    ) -> None:
        panels = scripts.panels if isinstance(scripts, Script) else scripts
        self._cursors = {name: ScriptCursor(_panel_script(src)) for name, src in panels.items()}
        self.clock = clock
        self.cache = cache or PromptCache()
        self.chunk_chars = chunk_chars
        self.on_record = on_record
        self._records: dict[str, list[RequestRecord]] = {name: [] for name in panels}
        self._last_layout: dict[str, Layout] = {}
        self.other_requests: list[OtherRequest] = []
        self.failures: list[str] = []  # hook exceptions and server faults, for tests to check
        self._message_ids = itertools.count(1)
        self._tool_ids = itertools.count(1)

    @property
    def panels(self) -> tuple[str, ...]:
        return tuple(self._cursors)

    def requests(self, panel: str) -> tuple[RequestRecord, ...]:
        if panel not in self._records:
            raise RehearsalError(f"no panel {panel!r} in the rehearsal script")
        return tuple(self._records[panel])

    def refuse(self, method: str, path: str, panel: str | None, message: str) -> Answer:
        self.other_requests.append(OtherRequest(method, path, panel, 404))
        return Answer(
            404, {"type": "error", "error": {"type": "not_found_error", "message": message}}
        )

    def count_tokens(self, panel: str, raw: bytes, path: str) -> Answer:
        self.other_requests.append(OtherRequest("POST", path, panel, 200))
        try:
            body = load_json(raw)
            if not isinstance(body, dict):
                raise ValueError
        except ValueError:
            return error_answer("invalid_request", "request body is not a JSON object")
        return Answer(200, {"input_tokens": self.cache.layout(body).total_tokens})

    def messages(self, panel: str, raw: bytes) -> Answer:
        """Answer one `POST /v1/messages` for `panel` (which must exist)."""
        now = self.clock()
        try:
            body = load_json(raw)
            if not isinstance(body, dict):
                raise ValueError
        except ValueError:
            return error_answer("invalid_request", "request body is not a JSON object")
        stream = bool(body.get("stream"))
        log = self._records[panel]

        def record(status: int, source: str, **more: Any) -> None:
            log.append(RequestRecord(panel, len(log), now, body, stream, status, source, **more))
            if self.on_record is not None:
                self.on_record(log[-1])

        layout = self.cache.layout(body)
        try:
            self.cache.check(layout)
        except CacheRuleError as exc:
            record(400, "cache-rule")
            return error_answer("invalid_request", str(exc))
        try:
            choice = self._cursors[panel].choose(body)
        except Exception as exc:  # a test's hook: report it, do not take the server down
            self.failures.append(f"{panel}: hook raised {exc!r}")
            record(400, "hook-error")
            return error_answer("invalid_request", f"rehearsal hook raised {exc!r}")
        reply = choice.reply.with_tool_ids(lambda: f"toolu_rehearsal_{next(self._tool_ids):06d}")
        # An in-stream error needs a stream; a non-streaming request (the CLI falls back to one
        # after a failed stream) gets the same error as an HTTP status instead.
        if reply.error is not None and not (stream and reply.faults.error_in_stream):
            answer = error_answer(reply.error, reply.error_message, reply.faults)
            record(answer.status, choice.source, reply=reply)
            return answer
        return self._answer(panel, body, layout, choice, reply, now, record)

    def _answer(
        self,
        panel: str,
        body: Mapping[str, Any],
        layout: Layout,
        choice: Choice,
        reply: Reply,
        now: float,
        record: Callable[..., None],
    ) -> Answer:
        previous = self._last_layout.get(panel)
        account = self.cache.account_layout(layout, now=now, previous=previous)
        if choice.source != "structured-default":
            # Side requests (session titles) are not the panel's conversation: a divergence
            # is always reported against the panel's previous conversational request.
            self._last_layout[panel] = layout
        output = self._output_tokens(reply)
        model = str(body.get("model", "rehearsal"))
        cost = cost_usd(model, account.usage, output)
        record(
            200, choice.source, reply=reply, account=account, output_tokens=output, cost_usd=cost
        )
        message_id = f"msg_rehearsal_{next(self._message_ids):06d}"
        usage = account.usage.as_api()
        if not body.get("stream"):
            return Answer(
                200,
                message_body(
                    reply, message_id=message_id, model=model, usage=usage, output_tokens=output
                ),
                faults=reply.faults,
            )
        events = message_events(
            reply,
            message_id=message_id,
            model=model,
            usage=usage,
            output_tokens=output,
            chunk_chars=self.chunk_chars,
        )
        return Answer(200, None, tuple(events), reply.faults)

    def _output_tokens(self, reply: Reply) -> int:
        # Counted like prompt blocks, on what the model "wrote"; never 0, as the service.
        count = self.cache.counter.count
        total = 0
        for item in reply.content:
            if isinstance(item, TextItem):
                total += count(item.text)
            elif isinstance(item, ThinkingItem):
                total += count(item.thinking)
            else:
                block = {"type": "tool_use", "name": item.name, "input": dict(item.input)}
                total += count(visible_text(block))
        return max(total, 1)
