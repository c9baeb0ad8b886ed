"""The dashboard in a browser: a textual-serve server with a guard, and the command it runs.

textual-serve starts one process per browser tab and relays its terminal over a websocket
to xterm.js. That process is this module run as a script (`python -m panels.ui.web HOSTDB
[--read-only]`), which builds the same app as `mnemara attach` (`make_app`): a browser tab
is one more viewer of host.sqlite, and closing it leaves the team running.

Whoever reaches the server can type into the panels, so every request passes `refusal`
first (a pure function over what the request carries):

- served on loopback, the Host header must name loopback too: a web page whose domain is
  made to resolve to 127.0.0.1 (DNS rebinding) is refused;
- an Origin header, when sent, must be this server: another site's page cannot open the
  websocket that drives the app;
- with a token, the request carries it, in `?token=` once (answered with a cookie and a
  redirect that drops it from the address bar) and in that cookie after.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import shlex
import sys
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp_jinja2
from aiohttp import WSCloseCode, web
from aiohttp.typedefs import Handler, Middleware
from textual_serve.app_service import AppService
from textual_serve.server import Server, to_int

from panels.access import request_refusal

STOP_WAIT = 5.0  # seconds a tab's app process has to end once asked to quit
PAGE_DIR = Path(__file__).with_name("page")  # our page: it loads nothing from outside
log = logging.getLogger("mnemara.dash")


@dataclass(frozen=True)
class Guard:
    """Who may use the server: `token` (None: anyone who passes the other checks) and
    `loopback`, whether it is served on a loopback address only."""

    token: str | None
    loopback: bool
    port: int

    @property
    def cookie(self) -> str:
        # Cookies are kept per host name, not per port: one name per port keeps two
        # dashboards on one machine from overwriting each other's token.
        return f"mnemara-dash-{self.port}"


def refusal(
    guard: Guard,
    *,
    host: str,
    origin: str | None,
    token: str | None,
) -> str | None:
    """Why a request must be refused (403), or None to let it through. `host` is its Host
    header, `origin` its Origin header, `token` the one it carries (query or cookie). The
    rules are panels/access.py's, shared with `mnemara mcp --http`."""
    return request_refusal(
        loopback=guard.loopback,
        token=guard.token,
        host=host,
        origin=origin,
        given=token,
        needs_token="this dashboard needs its token: open the address `mnemara dash` printed",
    )


def guard_middleware(guard: Guard) -> Middleware:
    """The aiohttp middleware that applies `refusal` to every route, websocket included."""

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        given = request.query.get("token")
        why = refusal(
            guard,
            host=request.host,
            origin=request.headers.get("Origin"),
            token=given if given is not None else request.cookies.get(guard.cookie),
        )
        if why is not None:
            return web.Response(status=403, text=f"mnemara: {why}\n")
        if given is not None and guard.token is not None and request.path == "/":
            # The token moves into a cookie, out of the address bar and the history.
            query = request.url.query.copy()
            del query["token"]
            found = web.HTTPSeeOther(location=str(request.rel_url.with_query(query)))
            found.set_cookie(guard.cookie, guard.token, httponly=True, samesite="Strict")
            return found
        return await handler(request)

    return check


class GuardedServer(Server):
    """textual-serve's Server with the guard in front, our own page (page/dash.html: its
    script and stylesheet from this server's /static/, local fonts, where textual-serve's
    page asks a font service on the internet), and page URLs taken from the request (the
    Host the browser used), so the websocket goes where the page came from."""

    def __init__(self, command: str, *, guard: Guard, title: str) -> None:
        super().__init__(command, host="127.0.0.1", port=guard.port, title=title,
                         templates_path=PAGE_DIR)  # fmt: skip
        self.guard = guard
        self.sockets: weakref.WeakSet[web.WebSocketResponse] = weakref.WeakSet()

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.append(guard_middleware(self.guard))
        app.on_response_prepare.append(self._track)
        app.on_shutdown.append(self._close_sockets)
        return app

    async def _track(self, request: web.Request, response: web.StreamResponse) -> None:
        if isinstance(response, web.WebSocketResponse):
            self.sockets.add(response)

    async def _close_sockets(self, app: web.Application) -> None:
        # On Ctrl-C aiohttp waits for open handlers, and a browser tab's websocket stays
        # open: closing it ends textual-serve's handler, which asks its app process to quit.
        for socket in list(self.sockets):
            await socket.close(code=WSCloseCode.GOING_AWAY, message=b"server stopped")

    async def on_startup(self, app: web.Application) -> None:
        """Quiet: the CLI says where to look once the port is bound."""

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """One browser tab: its own app process, driven over this websocket until either
        side closes. textual-serve's own handler never reaps the process it started, so a
        server stopped with a tab open left it to the garbage collector after the event loop
        had closed, which printed a traceback; `ServedApp.stop` reaps it."""
        websocket = web.WebSocketResponse(heartbeat=15)
        width = to_int(request.query.get("width", "80"), 80)
        height = to_int(request.query.get("height", "24"), 24)
        await websocket.prepare(request)

        async def close() -> None:
            await websocket.close()

        served = ServedApp(self.command, write_bytes=websocket.send_bytes,
                           write_str=websocket.send_str, close=close,
                           download_manager=self.download_manager, debug=self.debug)  # fmt: skip
        try:
            await served.start(width, height)
            await self._process_messages(websocket, served)
        except asyncio.CancelledError:
            await websocket.close()
        except Exception:  # a tab that broke: logged, the server goes on
            log.exception("the browser tab's app failed")
        finally:
            await served.stop()
        return websocket

    @aiohttp_jinja2.template("dash.html")
    async def handle_index(self, request: web.Request) -> dict[str, Any]:
        base = f"{request.scheme}://{request.host}"
        socket = "wss" if request.scheme == "https" else "ws"
        return {
            "font_size": to_int(request.query.get("fontsize", "16"), 16),
            "app_websocket_url": f"{socket}://{request.host}/ws",
            "config": {"static": {"url": f"{base}/static/"}},
            "application": {"name": self.title},
        }


class ServedApp(AppService):
    """textual-serve's app process for one tab, stopped for good: asked to quit, then its
    stdin closed and the process waited for (bounded), killed if it will not go."""

    async def stop(self) -> None:
        await super().stop()
        process = self._process
        if process is None:
            return
        self._process = None
        if process.stdin is not None:
            process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), STOP_WAIT)
        except TimeoutError:
            process.kill()
            await process.wait()


def app_command(hostdb_path: Path, *, read_only: bool) -> str:
    """The shell command textual-serve runs for each browser tab (it runs it with a shell)."""
    args = [sys.executable, "-m", "panels.ui.web", str(hostdb_path.resolve())]
    return shlex.join([*args, "--read-only"] if read_only else args)


def serve(
    hostdb_path: Path,
    *,
    host: str,
    port: int,
    token: str | None,
    loopback: bool,
    read_only: bool,
    title: str,
    on_ready: Callable[[], None],
) -> None:
    """Serve the dashboard until SIGINT or SIGTERM; `on_ready` runs once the port is bound.

    An address that cannot be bound raises OSError."""
    guard = Guard(token=token, loopback=loopback, port=port)
    server = GuardedServer(app_command(hostdb_path, read_only=read_only), guard=guard, title=title)
    web.run_app(
        server._make_app(),  # the seam textual-serve leaves: its own serve() sets up logging
        host=host,
        port=port,
        access_log=None,
        print=lambda *_: on_ready(),  # called once every socket is listening
        handle_signals=True,  # SIGINT/SIGTERM end the server cleanly, without a traceback
        shutdown_timeout=5.0,
    )


def main(argv: Sequence[str] | None = None) -> None:
    """The served app: one dashboard on a host.sqlite, driven through textual's web driver
    (textual-serve sets TEXTUAL_DRIVER in this process's environment)."""
    parser = argparse.ArgumentParser(prog="python -m panels.ui.web")
    parser.add_argument("hostdb", type=Path, help="the host's host.sqlite")
    parser.add_argument("--read-only", action="store_true", help="watch only")
    args = parser.parse_args(argv)
    from panels.ui import make_app

    make_app(args.hostdb, read_only=args.read_only).run()


if __name__ == "__main__":
    main()
