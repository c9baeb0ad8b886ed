"""The recording relay: a loopback HTTP endpoint that forwards the CLI's model requests
upstream and hands each finished exchange, scrubbed, to a callback (a cassette writer).

The CLI is given the relay's URL and a dummy key; the relay swaps in the real credential on
the way out, so the real key never reaches the CLI's process, its requests, or the file.
Each response is passed back to the CLI chunk by chunk as it arrives (a streamed answer is
not held until it ends), while a copy is kept to be folded into the cassette entry once it
is complete. The upstream is asked for an unencoded body (`accept-encoding: identity`) so
the copy is readable as is.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
import h11
import httpx

from runtime.cassette.file import fold_stream
from runtime.cassette.scrub import Scrubber, Tally, is_credential_header
from runtime.rehearsal.server import CLOSED, MAX_BODY_BYTES, loopback_host, next_event
from runtime.rehearsal.sse import parse_sse
from sqlitekit.jsonload import load_json

DEFAULT_UPSTREAM = "https://api.anthropic.com"
# Not forwarded either way: they describe one hop, not the message.
HOP_HEADERS = frozenset(
    {
        "host",
        "connection",
        "keep-alive",
        "content-length",
        "transfer-encoding",
        "accept-encoding",
        "content-encoding",
        "te",
        "trailer",
        "upgrade",
        "proxy-connection",
    }
)

OnExchange = Callable[[dict[str, Any], dict[str, Any]], None]


@dataclass(frozen=True)
class Credential:
    """How the upstream is authenticated: an API key (`x-api-key`) or a bearer token."""

    value: str
    bearer: bool = False

    def header(self) -> tuple[str, str]:
        return (
            ("authorization", f"Bearer {self.value}") if self.bearer else ("x-api-key", self.value)
        )


@dataclass
class Relay:
    """Forwards to `upstream` (a base URL, possibly with a path), records through `on_exchange`."""

    upstream: str
    credential: Credential
    on_exchange: OnExchange
    scrubber: Scrubber = field(default_factory=Scrubber)
    tally: Tally = field(default_factory=Tally)
    failures: list[str] = field(default_factory=list)
    host: str = "127.0.0.1"
    base_url: str = ""
    recorded: int = 0  # exchanges handed on so far

    async def serve(
        self,
        client: httpx.AsyncClient,
        *,
        task_status: anyio.abc.TaskStatus[str] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Listen on loopback until cancelled; reports the base URL once bound."""
        listener = await anyio.create_tcp_listener(local_host=loopback_host(self.host))
        async with listener:
            port = int(listener.extra(anyio.abc.SocketAttribute.local_port))
            self.base_url = f"http://{self.host}:{port}"
            task_status.started(self.base_url)
            await listener.serve(lambda stream: self._connection(stream, client))

    async def _connection(self, stream: anyio.abc.SocketStream, client: httpx.AsyncClient) -> None:
        conn = h11.Connection(h11.SERVER)
        try:
            async with stream:
                while await self._one_exchange(conn, stream, client):
                    conn.start_next_cycle()
        except (*CLOSED, h11.ProtocolError):
            return
        except Exception as exc:  # one bad connection must not take the relay down
            self.failures.append(f"relay connection failed: {exc!r}")

    async def _one_exchange(
        self, conn: h11.Connection, stream: anyio.abc.SocketStream, client: httpx.AsyncClient
    ) -> bool:
        event = await next_event(conn, stream)
        if not isinstance(event, h11.Request):
            return False
        body = bytearray()
        while not isinstance(part := await next_event(conn, stream), h11.EndOfMessage):
            if not isinstance(part, h11.Data) or len(body) + len(part.data) > MAX_BODY_BYTES:
                return False
            body += part.data
        method, target = event.method.decode(), event.target.decode()
        headers = {k.decode().lower(): v.decode() for k, v in event.headers}
        out_headers = {k: v for k, v in headers.items() if k not in HOP_HEADERS}
        out_headers = {k: v for k, v in out_headers.items() if not is_credential_header(k)}
        name, value = self.credential.header()
        out_headers[name] = value
        out_headers["accept-encoding"] = "identity"
        url = self.upstream.rstrip("/") + target
        request = client.build_request(method, url, headers=out_headers, content=bytes(body))
        try:
            upstream = await client.send(request, stream=True)
        except httpx.HTTPError as exc:
            self.failures.append(f"{method} {target}: upstream {self.upstream} failed: {exc!r}")
            await _send_error(
                conn, stream, f"the recording relay could not reach the upstream: {exc}"
            )
            return False
        seen = bytearray()
        try:
            reply = [(k, v) for k, v in upstream.headers.items() if k.lower() not in HOP_HEADERS]
            await stream.send(
                conn.send(h11.Response(status_code=upstream.status_code, headers=reply))
            )
            async for chunk in upstream.aiter_raw():
                seen += chunk
                await stream.send(conn.send(h11.Data(data=chunk)))  # passed on as it arrives
            await stream.send(conn.send(h11.EndOfMessage()))
        finally:
            await upstream.aclose()
        streamed = "text/event-stream" in upstream.headers.get("content-type", "")
        self._record(
            method, target, headers, bytes(body), upstream.status_code, bytes(seen), streamed
        )
        return conn.our_state is h11.DONE and conn.their_state is h11.DONE

    def _record(
        self,
        method: str,
        target: str,
        headers: dict[str, str],
        body: bytes,
        status: int,
        answer: bytes,
        streamed: bool,
    ) -> None:
        """Scrub one complete exchange and pass it on (the tally keeps what was scrubbed)."""
        index = f"exchange[{self.recorded}]"
        self.recorded += 1
        scrub, tally = self.scrubber, self.tally
        request = {
            "method": method,
            "path": scrub.text(target, tally, f"{index}.request.path"),
            "headers": scrub.headers(headers, tally, f"{index}.request.headers"),
            "body": scrub.json(_decoded(body), tally, f"{index}.request.body"),
        }
        response: dict[str, Any] = {"status": status}
        if streamed:
            text = answer.replace(b"\r\n", b"\n")
            message, error = fold_stream(parse_sse(text))
            response["stream"] = True
            response["message"] = scrub.json(message, tally, f"{index}.response.message")
            if error is not None:
                response["error"] = scrub.json(error, tally, f"{index}.response.error")
        else:
            response["body"] = scrub.json(_decoded(answer), tally, f"{index}.response.body")
        self.on_exchange(request, response)


def _decoded(raw: bytes) -> Any:
    """A body as JSON when it is JSON, else as text (still scrubbed), None when empty."""
    if not raw:
        return None
    try:
        return load_json(raw)
    except ValueError:
        return raw.decode("utf-8", errors="replace")


async def _send_error(conn: h11.Connection, stream: anyio.abc.SocketStream, message: str) -> None:
    payload = json.dumps({"type": "error", "error": {"type": "api_error", "message": message}})
    data = payload.encode()
    headers = [("content-type", "application/json"), ("content-length", str(len(data)))]
    await stream.send(conn.send(h11.Response(status_code=502, headers=headers)))
    await stream.send(conn.send(h11.Data(data=data)))
    await stream.send(conn.send(h11.EndOfMessage()))


@asynccontextmanager
async def open_relay(
    upstream: str,
    credential: Credential,
    on_exchange: OnExchange,
    *,
    scrubber: Scrubber | None = None,
) -> AsyncIterator[Relay]:
    """A relay listening on loopback for the duration of the block."""
    relay = Relay(upstream, credential, on_exchange, scrubber or Scrubber())
    # Model answers can take minutes to stream; only connecting is bounded tightly.
    timeout = httpx.Timeout(connect=30.0, read=600.0, write=60.0, pool=30.0)
    async with httpx.AsyncClient(timeout=timeout) as client, anyio.create_task_group() as tg:
        await tg.start(relay.serve, client)
        try:
            yield relay
        finally:
            tg.cancel_scope.cancel()
