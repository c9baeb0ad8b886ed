"""`mnemara dash --web`: the real CLI serves the dashboard; headless Chromium loads it.

The browser reads the page the way a person would: xterm.js paints the terminal on a
canvas, so the test reads xterm's own buffer through the Chrome DevTools Protocol (CDP)
and saves a screenshot (its path is printed and recorded as the `screenshot` property).
Chromium is Debian's `chromium` package; .ci/run installs it, so its absence fails the test.
"""

from __future__ import annotations

import asyncio
import base64
import http.client
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import pytest

from panels.hostdb import PanelRow, connect, submit_command
from panels.hostdb.verbs import Input
from tests.panels.host.conftest import reply
from tests.panels.ui.conftest import write_host_db

TOKEN = "k7Qx-test-token-0123456789"
WAIT = 60.0  # seconds a server, a browser or a page may take to come up (a bound, not a pace)

# xterm.js keeps its Terminal in a closure of textual-serve's script. Its public Terminal
# sets `this._core` in its constructor, so a setter on Object.prototype, installed before
# the page's scripts run, sees every object that sets `_core`; the one with a buffer
# API is the terminal. Read-only: the setter stores the value as the object's own property.
HOOK = """
(() => {
  const seen = [];
  window.__mnemaraCores = seen;
  Object.defineProperty(Object.prototype, "_core", {
    configurable: true,
    set(value) {
      seen.push(this);
      Object.defineProperty(this, "_core", {
        value, writable: true, configurable: true, enumerable: true,
      });
    },
  });
})();
"""
SCREEN_TEXT = """
(() => {
  for (const t of window.__mnemaraCores || []) {
    try {
      const buffer = t.buffer && t.buffer.active;
      if (!buffer || typeof buffer.getLine !== "function") continue;
      const lines = [];
      for (let i = 0; i < buffer.length; i++) {
        const line = buffer.getLine(i);
        lines.push(line ? line.translateToString(true) : "");
      }
      return lines.join("\\n");
    } catch (e) { continue; }
  }
  return "";
})()
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def mnemara(*args: str) -> list[str]:
    return [sys.executable, "-m", "panels.cli.main", *args]


def lines_of(stream: Any) -> queue.Queue[str]:
    """A subprocess's output, line by line, read in a thread so the test can wait bounded."""
    found: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        for line in stream:
            found.put(line)

    threading.Thread(target=pump, daemon=True).start()
    return found


@contextmanager
def served(*args: str) -> Iterator[str]:
    """`mnemara dash --web ARGS` on a free loopback port: yields the URL it printed; at the
    end sends SIGINT (Ctrl-C) and checks it stopped cleanly, with no traceback."""
    port = free_port()
    command = mnemara("dash", "--web", "-t", "t", "--port", str(port), *args)
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        try:
            out = lines_of(proc.stdout)
            try:
                first = out.get(timeout=WAIT)
            except queue.Empty:
                first = ""
            assert "open http://127.0.0.1:" in first, (first, proc.poll())
            url = first.split("open ", 1)[1].strip()
            assert url.startswith(f"http://127.0.0.1:{port}/")
            yield url
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                code = proc.wait(WAIT)
            except subprocess.TimeoutExpired:
                proc.kill()
                raise
        err = proc.stderr.read() if proc.stderr else ""
    assert code == 0, err
    assert "Traceback" not in err, err


def get(url: str, path: str, headers: dict[str, str] | None = None) -> http.client.HTTPResponse:
    """One request, redirects not followed (the cookie is part of what is tested)."""
    host, port = url.split("//", 1)[1].split("/", 1)[0].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=WAIT)
    conn.request("GET", path, headers=headers or {})
    response = conn.getresponse()
    response.read()
    conn.close()
    return response


@pytest.fixture
def team_db(mnemara_home: Path) -> Path:
    """Host state for team `t` as a stopped host left it: enough to serve a dashboard."""
    path = mnemara_home / "_teams" / "t" / "host.sqlite"
    path.parent.mkdir(parents=True)
    write_host_db(path, [PanelRow(name="a", kind="worker", state="idle")])
    return path


def test_another_address_needs_a_token() -> None:
    done = subprocess.run(mnemara("dash", "--web", "-t", "t", "--host", "0.0.0.0"),
                          capture_output=True, text=True, timeout=WAIT)  # fmt: skip
    assert done.returncode == 2
    assert "--token" in done.stderr and "0.0.0.0" in done.stderr
    assert "Traceback" not in done.stderr


def test_web_options_need_web() -> None:
    done = subprocess.run(mnemara("dash", "-t", "t", "--port", "9999"),
                          capture_output=True, text=True, timeout=WAIT)  # fmt: skip
    assert done.returncode == 2
    assert "--web" in done.stderr


def test_with_a_token_every_request_must_carry_it(team_db: Path) -> None:
    with served("--token", TOKEN) as url:
        assert url.endswith(f"/?token={TOKEN}")
        for path in ("/", "/ws", "/static/js/textual.js", "/?token=wrong-token-0123456789"):
            refused = get(url, path)
            assert refused.status == 403, path
        given = get(url, f"/?token={TOKEN}")
        assert given.status == 303 and given.getheader("Location") == "/"
        cookie = given.getheader("Set-Cookie") or ""
        assert TOKEN in cookie and "HttpOnly" in cookie
        page = get(url, "/", {"Cookie": cookie.split(";", 1)[0]})
        assert page.status == 200
        script = get(url, "/static/js/textual.js", {"Cookie": cookie.split(";", 1)[0]})
        assert script.status == 200


def test_on_loopback_other_sites_are_refused(team_db: Path) -> None:
    with served() as url:
        netloc = url.split("//", 1)[1].rstrip("/")
        assert get(url, "/").status == 200
        assert get(url, "/", {"Host": netloc.replace("127.0.0.1", "localhost")}).status == 200
        # DNS rebinding: another name that resolves here
        assert get(url, "/", {"Host": "attacker.example"}).status == 403
        # another site's page opening the websocket
        assert get(url, "/ws", {"Origin": "http://attacker.example"}).status == 403
        assert get(url, "/", {"Origin": f"http://{netloc}"}).status == 200


class Cdp:
    """The smallest Chrome DevTools Protocol client: one page, calls matched by id. Every
    address the page asks for (Network.requestWillBeSent, a websocket's
    Network.webSocketCreated) is kept in `requested`, blocked or not."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.next_id = 0
        self.requested: list[str] = []

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        await self.ws.send_json({"id": self.next_id, "method": method, "params": params})
        async for message in self.ws:
            data = json.loads(message.data)
            if data.get("method") == "Network.requestWillBeSent":
                self.requested.append(data["params"]["request"]["url"])
            elif data.get("method") == "Network.webSocketCreated":
                self.requested.append(data["params"]["url"])
            if data.get("id") == self.next_id:
                assert "error" not in data, data
                result: dict[str, Any] = data["result"]
                return result
        raise AssertionError(f"the browser closed the connection during {method}")


@contextmanager
def chromium(profile: Path) -> Iterator[int]:
    """Headless Chromium with an empty profile; yields its DevTools port."""
    exe = shutil.which("chromium")
    if exe is None:
        pytest.fail("chromium is not installed: `apt-get install -y chromium` (.ci/run does)")
    proc = subprocess.Popen(
        [exe, "--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--no-first-run",
         "--remote-debugging-port=0", f"--user-data-dir={profile}", "--window-size=1400,900",
         "about:blank"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its helpers share its process group: stopped together
    )  # fmt: skip
    try:
        active = profile / "DevToolsActivePort"
        deadline = time.monotonic() + WAIT
        while not (active.is_file() and active.read_text().strip()):
            assert proc.poll() is None, "chromium exited at start"
            assert time.monotonic() < deadline, "chromium did not open its DevTools port"
            time.sleep(0.1)
        yield int(active.read_text().split()[0])
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(WAIT)


async def load_and_read(
    devtools: int, url: str, expect: Callable[[str], bool], requested: list[str] | None = None
) -> tuple[str, bytes]:
    """Open `url` in the browser's page, wait until the terminal's text satisfies `expect`,
    and return that text and a screenshot (PNG). Every address the page asked for meanwhile
    is added to `requested`, when given."""
    async with aiohttp.ClientSession() as http:
        async with http.get(f"http://127.0.0.1:{devtools}/json/list") as response:
            targets = await response.json()
        page = next(t for t in targets if t["type"] == "page")
        async with http.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0) as ws:
            cdp = Cdp(ws)
            await cdp.call("Network.enable")
            await cdp.call("Page.enable")
            # No network in tests, even if the page came to ask for a web font again: the
            # request would still be recorded (and fail the test), never sent.
            await cdp.call("Network.setBlockedURLs", urls=["*://fonts.googleapis.com/*",
                                                           "*://fonts.gstatic.com/*"])  # fmt: skip
            await cdp.call("Page.addScriptToEvaluateOnNewDocument", source=HOOK)
            await cdp.call("Page.navigate", url=url)
            deadline = time.monotonic() + WAIT
            text = ""
            while not expect(text):
                if time.monotonic() > deadline:
                    raise AssertionError(f"not in the page within {WAIT}s; it shows:\n{text}")
                await asyncio.sleep(0.2)
                found = await cdp.call("Runtime.evaluate", expression=SCREEN_TEXT)
                text = str(found["result"].get("value") or "")
            image = await cdp.call("Page.captureScreenshot", format="png")
            if requested is not None:
                requested.extend(cdp.requested)
            return text, base64.b64decode(image["data"])


def outside(requested: list[str], page: str) -> list[str]:
    """The addresses among `requested` that are not the page's own server (data: and blob:
    addresses never leave the browser)."""
    own = urlsplit(page).netloc
    local = ("data", "blob")
    return [u for u in requested if urlsplit(u).scheme not in local and urlsplit(u).netloc != own]


@pytest.mark.slow
def test_a_browser_shows_every_panel(
    live_host: Any, tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    names = ("kestrel", "osprey", "heron")
    host = live_host(kestrel=[reply("kestrel hovers over the field")], osprey=[], heron=[])
    shot = tmp_path / "dashboard.png"
    record_property("screenshot", str(shot))
    print(f"screenshot: {shot}")
    # The server stops (Ctrl-C) while the browser is still connected: `served` checks it
    # exits cleanly, and then no app process it started for the tab is left behind.
    with chromium(tmp_path / "chromium") as devtools, served("--token", TOKEN) as url:
        # The panes can be drawn before the header has heard from the host: wait for both.
        def ready(text: str) -> bool:
            return all(n in text for n in names) and "host running" in text

        requested: list[str] = []
        text, _ = asyncio.run(load_and_read(devtools, url, ready, requested))
        assert "host running" in text and all(n in text for n in names)
        assert app_processes(host.hostdb_path)
        conn = connect(host.hostdb_path, create=False)
        submit_command(conn, Input(panel="kestrel", text="look down"))
        conn.close()
        _, image = asyncio.run(
            load_and_read(devtools, url, lambda t: "hovers over" in t, requested)
        )
        shot.write_bytes(image)
    # Chromium's record of the page's requests: all to the dashboard's own server, and
    # among them the app's own files and its websocket (an empty record would prove nothing).
    assert outside(requested, url) == [], requested
    paths = {urlsplit(u).path for u in requested}
    assert {"/", "/static/js/textual.js", "/static/css/xterm.css", "/ws"} <= paths, requested
    assert image.startswith(b"\x89PNG") and len(image) > 10_000
    deadline = time.monotonic() + WAIT
    while app_processes(host.hostdb_path):
        assert time.monotonic() < deadline, "the served app outlived the server"
        time.sleep(0.1)


def app_processes(hostdb: Path) -> list[int]:
    """The pids of the dashboard processes served for this host.sqlite."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue  # not a process, or gone
        if b"panels.ui.web" in argv and str(hostdb.resolve()).encode() in argv:
            found.append(int(proc.name))
    return found
