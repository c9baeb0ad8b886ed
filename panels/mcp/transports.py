"""How the MCP server is reached: over stdio (a client starts `mnemara mcp` as its child) or
over streamable HTTP (`--http`), served by uvicorn on one socket.

Over HTTP, every request passes `guarded` first, with the rules `dash --web` keeps
(panels/access.py): on loopback the Host header must name loopback and an Origin must be the
server itself; with a token, the request carries it as `Authorization: Bearer TOKEN`. The
SDK's own Host/Origin check is switched off, since ours covers any address. The server
listens until interrupted; clients come and go, each with a session of its own over the one
participant.
"""

from __future__ import annotations

import os
import signal
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, MutableMapping
from contextlib import contextmanager
from typing import Any, cast

import anyio
from mcp.server.lowlevel import Server
from mcp.server.transport_security import TransportSecuritySettings

from panels.access import request_refusal

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]
PATH = "/mcp"
GRACE = 3  # seconds open HTTP connections get once the server is asked to stop
NEEDS_TOKEN = "this MCP server needs its token: send `Authorization: Bearer TOKEN`"


async def serve_stdio(server: Server[Any]) -> None:
    """Serve one client on this process's stdin and stdout until it closes them, or until
    SIGINT or SIGTERM (how a client may stop its server), which end the serving cleanly."""
    from mcp.server.stdio import stdio_server

    async with anyio.create_task_group() as tg:
        tg.start_soon(_on_signal, tg.cancel_scope.cancel)
        # stdin is read in the event loop (`StdinLines`), so that cancel ends the read at once;
        # the SDK's own reader waits in a worker thread, which no cancel reaches. While it
        # serves, fd 1 points at stderr (the SDK's doing): nothing stray reaches the wire.
        lines = cast("anyio.AsyncFile[str]", StdinLines())
        blocking = os.get_blocking(0)
        try:
            async with stdio_server(stdin=lines) as (read, write):
                await server.run(read, write, server.create_initialization_options())
        finally:
            os.set_blocking(0, blocking)  # a terminal's stdin is the shell's too
        tg.cancel_scope.cancel()


class StdinLines:
    """This process's stdin as lines of text, read without a worker thread: each read waits
    for the descriptor in the event loop. (A stdin that cannot be waited on, a regular file,
    is read in a worker thread instead.)"""

    def __init__(self, fd: int = 0, chunk: int = 65536) -> None:
        self.fd = fd
        self.chunk = chunk

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        pending = b""
        while data := await self._read():
            *whole, pending = (pending + data).split(b"\n")
            for line in whole:
                yield line.decode("utf-8", "replace")
        if pending:
            yield pending.decode("utf-8", "replace")

    async def _read(self) -> bytes:
        try:
            os.set_blocking(self.fd, False)
            await anyio.wait_readable(self.fd)
        except (OSError, ValueError):  # not pollable (a regular file): block in a thread
            os.set_blocking(self.fd, True)
            return await anyio.to_thread.run_sync(os.read, self.fd, self.chunk)
        try:
            return os.read(self.fd, self.chunk)
        except BlockingIOError:  # woken for nothing: wait again
            return await self._read()


async def _on_signal(stop: Callable[[], None]) -> None:
    """Call `stop` at the first SIGINT or SIGTERM: the caller's cleanup (the participant gives
    back what it holds) runs, where the default handlers would end the process first."""
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            stop()
            return


def guarded(app: App, *, loopback: bool, token: str | None) -> App:
    """`app` behind the request checks of panels/access.py (403 with the reason)."""

    async def check(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)  # lifespan: the session manager's start and stop
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        auth = headers.get("authorization", "")
        given = auth[7:].strip() if auth[:7].lower() == "bearer " else None
        why = request_refusal(
            loopback=loopback,
            token=token,
            host=headers.get("host", ""),
            origin=headers.get("origin"),
            given=given,
            needs_token=NEEDS_TOKEN,
        )
        if why is None:
            await app(scope, receive, send)
            return
        body = f"mnemara: {why}\n".encode()
        await send(
            {
                "type": "http.response.start",
                "status": 403,
                "headers": [(b"content-type", b"text/plain; charset=utf-8")],
            }
        )
        await send({"type": "http.response.body", "body": body})

    return check


def listen(address: str, port: int) -> socket.socket:
    """A listening socket on `address` (port 0: any free one); OSError says why not."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((address.strip("[]"), port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{PATH}"


async def serve_http(
    server: Server[Any],
    sock: socket.socket,
    *,
    loopback: bool,
    token: str | None,
) -> None:
    """Serve streamable HTTP on `sock` until cancelled, or stopped by SIGINT or SIGTERM."""
    import uvicorn

    class Web(uvicorn.Server):
        @contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield  # `_on_signal` below stops it, and the exit stays ours (nothing re-raised)

    app = server.streamable_http_app(
        streamable_http_path=PATH,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    config = uvicorn.Config(
        guarded(app, loopback=loopback, token=token),
        log_level="warning",
        lifespan="on",
        access_log=False,
        timeout_graceful_shutdown=GRACE,  # a client's open event stream must not hold the exit
    )
    web = Web(config)

    def stop() -> None:
        web.should_exit = True

    async with anyio.create_task_group() as tg:
        tg.start_soon(_on_signal, stop)
        await web.serve(sockets=[sock])
        tg.cancel_scope.cancel()
