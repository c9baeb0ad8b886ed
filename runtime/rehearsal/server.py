"""The rehearsal server: HTTP/1.1 on loopback (h11 over anyio sockets), speaking the Messages API.

Routes, per panel (a panel's base URL is `http://127.0.0.1:PORT/p/<panel>`; a request without
the `/p/<panel>` prefix belongs to the panel named `default`):

- `POST /v1/messages` (any query string, e.g. the CLI's `?beta=true`): the scripted answer,
  streamed as SSE when the body says `"stream": true`, else one JSON message.
- `POST /v1/messages/count_tokens`: `{"input_tokens": N}` from the same token counter.
- anything else: logged in `other_requests` and refused with a 404 `not_found_error`, the
  way the service refuses an unknown path, so a client never waits on it.

Fault knobs on a reply (`replies.Faults`) are applied here, where the bytes go out: delays
use real time (`anyio.sleep`); cache TTLs use the injected `clock`.
"""

from __future__ import annotations

import ipaddress
import json
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import anyio
import anyio.abc
import h11

from runtime.rehearsal.cache import CacheRules, PromptCache
from runtime.rehearsal.errors import NotLoopbackError, RehearsalError
from runtime.rehearsal.layout import TokenCounter
from runtime.rehearsal.model import Answer, RehearsalModel, Scripts
from runtime.rehearsal.records import OtherRequest, RequestRecord, Totals, summarize
from runtime.rehearsal.sse import encode_event

MAX_BODY_BYTES = 64 * 1024 * 1024
# Given the record of a request just answered, the usage to report instead of the computed
# one (a cassette replays the recorded figures, which the CLI's context accounting reads).
UsageHook = Callable[[RequestRecord], Mapping[str, Any] | None]
# Told (stage, panel) when a request's head arrives ("arrived") and when its answer's last
# byte is sent ("answered"); benchmarks time the path around the model with it.
ExchangeHook = Callable[[str, str], None]
CLOSED = (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError)


def loopback_host(host: str) -> str:
    """`host` if it is a loopback address ("localhost" becomes 127.0.0.1); else raise."""
    if host == "localhost":
        return "127.0.0.1"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise NotLoopbackError(host) from None
    if not address.is_loopback:
        raise NotLoopbackError(host)
    return host


class RehearsalServer:
    """A loopback Messages API serving scripted panels; run it with `serve()`.

    `scripts`: a `Script` (from `load_script`) or a mapping of panel name to `PanelScript`
    or hook. `host` must be loopback; `port=0` picks a free one. `clock` drives cache TTLs.
    `counter` and `rules` set token counting and cache rules (cache.py). `chunk_chars` is the
    largest delta streamed. `log_path`: append one JSON line per `/v1/messages` request.
    `usage_hook`: report other usage figures than the computed ones (see `UsageHook`).
    """

    def __init__(
        self,
        scripts: Scripts,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        clock: Callable[[], float] = time.monotonic,
        counter: TokenCounter | None = None,
        rules: CacheRules | None = None,
        chunk_chars: int = 64,
        log_path: Path | None = None,
        usage_hook: UsageHook | None = None,
    ) -> None:
        self.host = loopback_host(host)
        self.log_path = log_path
        self.usage_hook = usage_hook
        self._port = port  # asked for; 0 lets the system pick
        self._bound_port: int | None = None
        self.on_exchange: ExchangeHook | None = None
        self.model = RehearsalModel(
            scripts,
            clock=clock,
            cache=PromptCache(rules, counter),
            chunk_chars=chunk_chars,
            on_record=self._log if log_path else None,
        )

    @property
    def base_url(self) -> str:
        if self._bound_port is None:
            raise RehearsalError("the rehearsal server is not listening yet; start serve() first")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self._bound_port}"

    def base_url_for(self, panel: str) -> str:
        """The ANTHROPIC_BASE_URL for one panel."""
        if panel not in self.model.panels:
            raise RehearsalError(f"no panel {panel!r} in the rehearsal script")
        return f"{self.base_url}/p/{panel}"

    def requests(self, panel: str) -> tuple[RequestRecord, ...]:
        return self.model.requests(panel)

    def totals(self, panel: str | None = None) -> Totals:
        """Usage and cost summed over one panel's requests, or every panel's."""
        panels = [panel] if panel is not None else list(self.model.panels)
        return summarize(r for p in panels for r in self.model.requests(p))

    def _log(self, record: RequestRecord) -> None:
        # One short line per request to a local file: a plain blocking append is cheaper
        # than a thread hop, and keeps the lines in request order.
        if self.log_path is not None:
            with self.log_path.open("a", encoding="utf-8") as out:
                out.write(json.dumps(record.to_json()) + "\n")

    @property
    def other_requests(self) -> tuple[OtherRequest, ...]:
        return tuple(self.model.other_requests)

    @property
    def failures(self) -> tuple[str, ...]:
        return tuple(self.model.failures)

    async def serve(
        self, *, task_status: anyio.abc.TaskStatus[str] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Listen until cancelled; reports the base URL once the socket is bound."""
        listener = await anyio.create_tcp_listener(local_host=self.host, local_port=self._port)
        async with listener:
            self._bound_port = int(listener.extra(anyio.abc.SocketAttribute.local_port))
            task_status.started(self.base_url)
            try:
                await listener.serve(self._connection)
            finally:
                self._bound_port = None

    async def _connection(self, stream: anyio.abc.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        try:
            async with stream:
                while await self._one_exchange(conn, stream):
                    conn.start_next_cycle()
        except (*CLOSED, h11.ProtocolError):
            return  # the client went away or spoke nonsense: nothing to answer
        except Exception as exc:  # never let one connection take the listener down
            self.model.failures.append(f"connection failed: {exc!r}")

    async def _one_exchange(self, conn: h11.Connection, stream: anyio.abc.SocketStream) -> bool:
        """Read one request and answer it; False when the connection should close."""
        event = await next_event(conn, stream)
        if not isinstance(event, h11.Request):
            return False
        panel = _panel_of(event.target.decode())
        if self.on_exchange is not None:
            self.on_exchange("arrived", panel)
        body = bytearray()
        while not isinstance(part := await next_event(conn, stream), h11.EndOfMessage):
            if not isinstance(part, h11.Data):
                return False
            body += part.data
            if len(body) > MAX_BODY_BYTES:
                too_big = {
                    "type": "error",
                    "error": {
                        "type": "request_too_large",
                        "message": "Request exceeds the maximum allowed size",
                    },
                }
                await self._send(conn, stream, Answer(413, too_big))
                return False
        method = event.method.decode()
        answer = self._route(method, event.target.decode(), bytes(body))
        finished = await self._send(conn, stream, answer, head=method == "HEAD")
        if self.on_exchange is not None:
            self.on_exchange("answered", panel)
        return finished and conn.our_state is h11.DONE and conn.their_state is h11.DONE

    def _route(self, method: str, target: str, body: bytes) -> Answer:
        path = unquote(urlsplit(target).path)
        panel: str | None = "default"
        if path.startswith("/p/"):
            panel, _, rest = path[3:].partition("/")
            path = "/" + rest
        known = panel in self.model.panels
        if method == "POST" and path == "/v1/messages" and known and panel:
            seen = len(self.model.requests(panel))
            answer = self.model.messages(panel, body)
            records = self.model.requests(panel)
            if self.usage_hook is None or len(records) == seen or answer.status != 200:
                return answer
            usage = self.usage_hook(records[-1])
            return answer if usage is None else with_usage(answer, usage)
        if method == "POST" and path == "/v1/messages/count_tokens" and known and panel:
            return self.model.count_tokens(panel, body, target)
        reason = "Not Found" if known else f"no panel {panel!r} in the rehearsal script"
        return self.model.refuse(method, target, panel if known else None, reason)

    async def _send(
        self,
        conn: h11.Connection,
        stream: anyio.abc.SocketStream,
        answer: Answer,
        *,
        head: bool = False,
    ) -> bool:
        """Send an answer; False when a fault cut it short (the connection must close)."""
        faults = answer.faults
        headers = [("request-id", "req_rehearsal"), *answer.headers]
        if answer.body is not None:
            payload = json.dumps(answer.body).encode()
            chunks = [payload]
            headers += [("content-type", "application/json"), ("content-length", str(len(payload)))]
        else:
            chunks = [encode_event(e) for e in answer.events]
            headers += [
                ("content-type", "text/event-stream; charset=utf-8"),
                ("cache-control", "no-cache"),
            ]
        await stream.send(conn.send(h11.Response(status_code=answer.status, headers=headers)))
        if head:  # a HEAD answer has headers only; h11 refuses body bytes for it
            chunks = []
        if faults.delay_first_token:
            await anyio.sleep(faults.delay_first_token)
        budget = faults.cut_after_bytes
        for i, chunk in enumerate(chunks):
            if i and faults.delay_between_chunks:
                await anyio.sleep(faults.delay_between_chunks)
            if budget is not None and len(chunk) > budget:
                if budget:
                    await stream.send(conn.send(h11.Data(data=chunk[:budget])))
                return False  # closing now leaves the body unfinished, mid-block
            await stream.send(conn.send(h11.Data(data=chunk)))
            if budget is not None:
                budget -= len(chunk)
        await stream.send(conn.send(h11.EndOfMessage()))
        return True


def _panel_of(target: str) -> str:
    path = unquote(urlsplit(target).path)
    return path[3:].partition("/")[0] if path.startswith("/p/") else "default"


def with_usage(answer: Answer, usage: Mapping[str, Any]) -> Answer:
    """The answer with `usage` in place of its own figures (JSON body or stream events)."""
    if answer.body is not None:
        return replace(answer, body={**answer.body, "usage": dict(usage)})
    events = []
    for event in answer.events:
        if event.get("type") == "message_start":
            event = {**event, "message": {**event["message"], "usage": dict(usage)}}
        elif event.get("type") == "message_delta":
            event = {**event, "usage": dict(usage)}
        events.append(event)
    return replace(answer, events=tuple(events))


async def next_event(conn: h11.Connection, stream: anyio.abc.SocketStream) -> Any:
    """The next h11 event of `conn`, reading `stream` as needed (a closed stream is its end)."""
    while (event := conn.next_event()) is h11.NEED_DATA:
        try:
            data = await stream.receive(65536)
        except CLOSED:
            data = b""
        conn.receive_data(data)
    return event


@asynccontextmanager
async def open_rehearsal_server(
    scripts: Scripts,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    clock: Callable[[], float] = time.monotonic,
    counter: TokenCounter | None = None,
    rules: CacheRules | None = None,
    chunk_chars: int = 64,
    log_path: Path | None = None,
    usage_hook: UsageHook | None = None,
) -> AsyncIterator[RehearsalServer]:
    """Run a rehearsal server for the duration of the block (arguments as `RehearsalServer`)."""
    server = RehearsalServer(
        scripts,
        host=host,
        port=port,
        clock=clock,
        counter=counter,
        rules=rules,
        chunk_chars=chunk_chars,
        log_path=log_path,
        usage_hook=usage_hook,
    )
    async with anyio.create_task_group() as tg:
        await tg.start(server.serve)
        try:
            yield server
        finally:
            tg.cancel_scope.cancel()
