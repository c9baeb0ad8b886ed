"""`HostThread`: a host's work run by trio in a thread of its own, for a face on the main thread.

The dashboard runs on asyncio in the main thread, as Textual wants; the host runs on trio.
`mnemara run`, `up` and `demo` put the host's work (`serve_host`, or the demo's `run_demo`)
in a `HostThread`, then open the dashboard in front. The two loops meet only through
host.sqlite, which the dashboard reads and writes as any other viewer does, and through the
thread's three calls:

- `start()` returns once the work says it is ready (`task_status.started(stop)`), or raises
  the error that ended it before then;
- `stop()` calls the work's `stop` inside trio (with the trio token) and waits for the thread
  to end, returning the work's result or raising its error; before the work is ready it
  cancels the start instead;
- `when_done(callback)` runs `callback` in the host's thread once the work has ended (at
  once if it has), so a face can close when the host stops from outside (`mnemara down`).

trio runs outside the main thread without signal handlers: Ctrl-C reaches the main thread,
whose face decides what it means.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import Generic, Protocol, TypeVar

import anyio
import anyio.abc
import trio

from panels.host.host import Host
from panels.host.process import release_pid_file, take_pid_file

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
StopFn = Callable[[], None]


class Work(Protocol[T_co]):
    """A host's work: calls `task_status.started(stop)` once ready, where `stop()` (called in
    trio) makes it end soon; returns its result when it ends."""

    def __call__(self, *, task_status: anyio.abc.TaskStatus[StopFn]) -> Awaitable[T_co]: ...


class HostThread(Generic[T]):
    """Runs `work(task_status=...)` under `trio.run` in a daemon thread (see the module doc)."""

    def __init__(self, work: Work[T], *, name: str = "mnemara-host") -> None:
        self._work = work
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._lock = threading.Lock()  # guards _done and _callbacks against when_done
        self._has_token = threading.Event()
        self._ready = threading.Event()
        self._done = False
        self._callbacks: list[Callable[[], None]] = []
        self._token: trio.lowlevel.TrioToken | None = None
        self._scope: anyio.CancelScope | None = None
        self._stop: StopFn | None = None
        self._result: list[T] = []
        self._error: BaseException | None = None

    @property
    def done(self) -> bool:
        with self._lock:
            return self._done

    def start(self) -> None:
        """Start the thread and wait until the work is ready; raise its error if it ended first."""
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            self._thread.join()
            raise self._error
        if self._stop is None:
            self._thread.join()
            raise RuntimeError("the host's work ended before it was ready")

    def stop(self) -> T:
        """Ask the work to stop, wait for the thread, and return the work's result."""
        if self._thread.is_alive():
            self._has_token.wait()
            if self._token is not None:
                with suppress(trio.RunFinishedError):  # it ended on its own meanwhile
                    trio.from_thread.run_sync(self._request_stop, trio_token=self._token)
        self._thread.join()
        if self._error is not None:
            raise self._error
        if not self._result:
            raise RuntimeError("the host's work was stopped before it was ready")
        return self._result[0]

    def when_done(self, callback: Callable[[], None]) -> None:
        """Run `callback` (in the host's thread) when the work has ended; now if it has."""
        with self._lock:
            if not self._done:
                self._callbacks.append(callback)
                return
        callback()

    # -- in the host's thread -------------------------------------------------------------------

    def _request_stop(self) -> None:
        if self._stop is not None:
            self._stop()
        elif self._scope is not None:
            self._scope.cancel()  # still starting: give up the start

    def _main(self) -> None:
        try:
            trio.run(self._run)
        except BaseException as exc:  # raised again by start() or stop() in the caller's thread
            self._error = _lone(exc)
        finally:
            self._has_token.set()
            self._ready.set()
            with self._lock:
                self._done = True
                callbacks, self._callbacks = self._callbacks, []
            for callback in callbacks:
                callback()

    async def _run(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        with anyio.CancelScope() as scope:
            self._scope = scope
            self._has_token.set()
            async with anyio.create_task_group() as tg:
                self._stop = await tg.start(self._serve)
                self._ready.set()

    async def _serve(self, *, task_status: anyio.abc.TaskStatus[StopFn]) -> None:
        self._result.append(await self._work(task_status=task_status))


def _lone(exc: BaseException) -> BaseException:
    """The one error that task groups wrapped (a host that failed to start), else `exc`."""
    inner = exc
    while isinstance(inner, BaseExceptionGroup) and len(inner.exceptions) == 1:
        inner = inner.exceptions[0]
    return exc if isinstance(inner, BaseExceptionGroup) else inner


async def serve_host(
    host: Host,
    *,
    pid_file: bool = False,
    task_status: anyio.abc.TaskStatus[StopFn] = anyio.TASK_STATUS_IGNORED,
) -> Host:
    """Run `host` until its stop is asked for (or it stops itself); ready once it serves.

    With `pid_file` the host takes the team's pid file while it runs, so `mnemara ps`,
    `logs` and `down -t NAME` find it as they find a detached host.
    """
    async with anyio.create_task_group() as tg:
        await tg.start(host.serve)
        if pid_file:
            take_pid_file(host.team, host.life)
        try:
            task_status.started(host.request_stop)
            await host.stopped()
        finally:
            if pid_file:
                release_pid_file(host.team)
    return host
