"""Alerts from a real host to a webhook receiver on loopback (panels/host/alerts/).

The receiver is a real HTTP server in a thread of the test; the host posts to it with httpx
from its own task. One approval wait and one halt give one accepted POST each (the first
survives two refusals of the receiver); a webhook that never answers holds back no turn.
"""

from __future__ import annotations

import json
import os
import queue
import re
import select
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from panels.host.alerts.service import AlertService, Sink
from panels.host.control.eventlog import EventLog
from panels.hostdb import HostDb, Logged
from panels.hostdb.catalogue import AlertRaised
from panels.hostdb.verbs import AnswerRequest, Halt, Input
from runtime.policy.asking import Answer
from runtime.turn.driver import Done, ToolCall, Usage
from tests.panels.host.conftest import make_team, panels, reply

pytestmark = pytest.mark.anyio

ASK_BASH = '[[panels.policy]]\ntool = "Bash"\nmode = "ask"\n'


@pytest.fixture
def anyio_backend() -> str:
    return "trio"  # the host runs on trio (the other backend adds time, not coverage here)


class Receiver:
    """A webhook receiver: refuses the first `failures` posts with 500, takes the rest."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.attempts: list[dict[str, Any]] = []
        self.taken: queue.Queue[dict[str, Any]] = queue.Queue()
        self.lock = threading.Lock()

    def handle(self, body: dict[str, Any]) -> int:
        with self.lock:
            self.attempts.append(body)
            if len(self.attempts) <= self.failures:
                return 500
        self.taken.put(body)
        return 204

    async def next(self) -> dict[str, Any]:
        """The next accepted post (waits in a worker thread on the receiver's queue)."""
        return await anyio.to_thread.run_sync(lambda: self.taken.get(timeout=20))


@contextmanager
def serve_receiver(receiver: Receiver) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            size = int(self.headers.get("Content-Length", "0"))
            status = receiver.handle(json.loads(self.rfile.read(size)))
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def alerts_section(url: str, *, desktop: bool = False, **more: Any) -> str:
    lines = [f'webhook = "{url}"', f"desktop = {str(desktop).lower()}", "min_interval_seconds = 0"]
    lines += [f"{k} = {v}" for k, v in more.items()]
    return "[team.alerts]\n" + "\n".join(lines) + "\n"


def quiet_turns(events: Any) -> int:
    """The turns the quiet alerts so far counted ("the team is quiet after N turn(s)")."""
    found = [re.search(r"after (\d+) turn", e.text) for e in events.of("alert")]
    return sum(int(m[1]) for m in found if m is not None)


class Desktop:
    """A notify-send on PATH, with a desktop session, that writes its arguments to a FIFO."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        fifo, bin_dir = tmp_path / "notified", tmp_path / "bin"
        os.mkfifo(fifo)
        bin_dir.mkdir()
        script = bin_dir / "notify-send"
        script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" > "{fifo}"\n')
        script.chmod(0o755)
        monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
        monkeypatch.setenv("DISPLAY", ":99")
        self.fd = os.open(fifo, os.O_RDWR)  # a writer of our own: reads wait, never end
        self.lines: list[str] = []

    def wait(self, count: int, within: float = 20.0) -> list[str]:
        """The first `count` notifications (in a worker thread: select waits on the FIFO)."""
        buffer = ""
        while len(self.lines) < count:
            ready, _, _ = select.select([self.fd], [], [], within)
            assert ready, f"{count} notification(s) not shown within {within}s: {self.lines}"
            buffer += os.read(self.fd, 65536).decode()
            *done, buffer = buffer.split("\n")
            self.lines += done
        return self.lines[:count]

    def close(self) -> None:
        os.close(self.fd)


def ask(call: str) -> list[Any]:
    return [ToolCall(call, "Bash", {"command": "make deploy"}), Usage(10, 1), Done()]


async def test_one_post_per_approval_wait_and_per_halt_through_two_refusals(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    receiver = Receiver(failures=2)
    with serve_receiver(receiver) as url:
        team = make_team(tmp_path, panels("a", "b") + ASK_BASH, extra=alerts_section(url))
        async with start_host(team, {"a": [ask("t1")], "b": []}) as (host, events, _):
            await host.dispatch(Input(panel="a", text="deploy"))
            (asked,) = await events.wait("approval_request", "a")
            first = await receiver.next()  # refused twice, then taken
            await host.dispatch(AnswerRequest(request=asked.request, answer=Answer.YES))
            await events.wait("turn_ended", "a")
            await host.dispatch(Halt(panel="a", reason="by hand"))  # the operator's: no alert
            await host.dispatch(Halt(panel="b", reason="runaway"), by="dog")
            second = await receiver.next()
            await events.wait("alert", count=2)
    assert (first["panel"], first["kind"], first["team"]) == ("a", "approval", "t")
    assert first["cause"] > 0 and "make deploy" in first["text"]
    assert (second["panel"], second["kind"]) == ("b", "halted") and "dog" in second["text"]
    assert [a["event"] for a in receiver.attempts] == [first["event"]] * 3 + [second["event"]]
    assert receiver.taken.empty()  # exactly one accepted post each, nothing for a's halt
    assert [(e.panel, e.alert) for e in events.of("alert")] == [("a", "approval"), ("b", "halted")]
    assert not [w for w in events.of("warning") if "webhook" in w.message]


async def test_a_webhook_that_never_answers_holds_back_no_turn_nor_the_desktop(
    anyio_backend: str, tmp_path: Path, start_host: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    desktop = Desktop(tmp_path, monkeypatch)
    # A listening socket nobody accepts from: the connection opens, no answer ever comes.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/hook"
        extra = alerts_section(url, desktop=True, quiet_seconds=0.2)
        team = make_team(tmp_path, panels("a") + ASK_BASH, extra=extra)
        turns = [ask("t1"), reply("one"), reply("two")]
        async with start_host(team, {"a": turns}) as (host, events, _):
            await host.dispatch(Input(panel="a", text="deploy"))
            (asked,) = await events.wait("approval_request", "a")
            await events.wait("alert")  # raised; its post hangs in the deliverer
            with anyio.fail_after(10):
                await host.dispatch(AnswerRequest(request=asked.request, answer=Answer.YES))
                for n, text in enumerate(["again", "more"], start=2):
                    await host.dispatch(Input(panel="a", text=text))
                    await events.wait("turn_ended", "a", count=n)
                # Quiet with 3 turns done (a busy machine may also see a quiet between two).
                await events.wait("alert", where=lambda e: quiet_turns(events) == 3)
            kinds = {(e.panel, e.alert) for e in events.of("alert")}
            assert kinds == {("a", "approval"), (None, "quiet")}
            shown = await anyio.to_thread.run_sync(desktop.wait, len(events.of("alert")))
            assert shown[0].startswith("--app-name=mnemara -- mnemara t: approval a waits")
            assert "mnemara t: quiet the team is quiet" in shown[-1]
            with anyio.fail_after(10):  # the hanging post does not hold the stop either
                host.request_stop()
                await host.stopped()
    desktop.close()


async def test_a_sink_that_raises_is_said_once_as_a_warning_and_the_service_goes_on(
    anyio_backend: str, tmp_path: Path
) -> None:
    log = EventLog(cast(HostDb, None))  # emit only: nothing here is written
    warned: list[Any] = []
    log.listen_live(warned.append)

    async def quiet() -> bool:
        return True

    service = AlertService(make_team(tmp_path, panels("a")), log, quiet)
    tries: list[int] = []
    both = anyio.Event()

    async def broken(logged: Logged) -> str | None:
        tries.append(logged.id)
        if len(tries) == 2:
            both.set()
        raise ValueError("a bug")

    sink = Sink("webhook", broken)
    service.sinks.append(sink)
    for n in (1, 2):
        service.see(Logged(n, 0.0, AlertRaised(alert="quiet", text="q")))
    async with anyio.create_task_group() as tg:
        tg.start_soon(service._deliver, sink)
        with anyio.fail_after(10):
            await both.wait()
        tg.cancel_scope.cancel()
    assert tries == [1, 2]
    assert [w.message for w in warned] == [
        "the webhook failed on an alert (ValueError: a bug); said once, until it works again"
    ]
