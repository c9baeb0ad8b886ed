"""The PostgreSQL bus's change counter: LISTEN/NOTIFY as a hint, a periodic check as floor.

The semantics are the SQLite waiter's (sqlitekit/waiter.py): `generation` goes up on
every change this process makes or hears of; each change concerns some recipients, or
everyone (a broadcast, a change of unknown reach). A waiter for R returns once a change
concerning R or everyone came after its reference point; a waiter for no recipient
returns on any change.

Where changes come from:
- this process's own writes (`bump`, right after the commit);
- NOTIFY: every write notifies its recipients' channels (channels.py) in its transaction,
  so the notification arrives only once the rows are visible. One listener connection
  per bus LISTENs on the channels of the recipients this process claims or waits for,
  the broadcast channel, and (only once someone waits for any change) the ANY channel.
  `watch(recipient)` returns only after its LISTEN is in place, so a claim that starts
  after it cannot miss the notification of a row committed after it read;
- the floor: while someone waits, every tick (`backstop_interval`, doubled on each quiet
  tick up to QUIET_CAP seconds) asks the server for the id sequence's last value and the
  highest id; a move there is a change concerning everyone. It catches rows whose writer
  sent no NOTIFY (a foreign tool writing `returns` directly);
- a lost listener: it is reconnected (backing off) and re-LISTENs, and the reconnect
  counts as a change concerning everyone, since notifications sent meanwhile are gone.
No background task: as in the SQLite waiter, the first parked waiter waits on the
listener's socket and drains it, the others sleep until a bump wakes them, and with no
waiter nothing runs (no polling on an idle host). Notifications that arrive while nobody
waits stay in the socket until the next claim or wait reads them.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable

import anyio
import psycopg

from peerbus.model import BusOptions
from peerbus.postgres.channels import ANY, BROADCAST, channel
from peerbus.postgres.pool import Conn, Pool, scrub

log = logging.getLogger("peerbus")

QUIET_CAP = 30.0
MAX_RECONNECT_DELAY = 5.0


class ChangeFeed:
    """One bus's change counter and listener connection; its methods run on the loop."""

    def __init__(self, pool: Pool, options: BusOptions, sequence: str) -> None:
        self._pool = pool
        self._options = options
        self._sequence = sequence
        self.generation = 0
        self._everyone_at = 0
        self._marks: dict[str, int] = {}
        self._changed = anyio.Event()
        # The listener: its connection, the channels LISTENed on it, the ones wanted.
        self._conn: Conn | None = None
        self._listening: set[str] = set()
        self._wanted: dict[str, str | None] = {BROADCAST: None}  # channel -> recipient
        self._heard: list[str] = []  # channels notified while a command ran
        self._limiter = anyio.CapacityLimiter(1)  # one thread on the connection at a time
        self._lock = anyio.Lock()
        self._held = False  # a parked waiter is waiting on the socket
        self._lost_at: float | None = None
        self._retry_at = 0.0
        self._retry_delay = 0.1
        # The floor: the last signature read, when, and the current tick.
        self._signature: tuple[object, ...] | None = None
        self._tick_at = 0.0
        self._interval = options.backstop_interval

    # The counter, as in the SQLite waiter.

    def bump(self, recipients: Iterable[str | None] | None = None) -> None:
        """A change concerning `recipients` (None, or a None among them: everyone)."""
        self.generation += 1
        who = None if recipients is None else list(recipients)
        if who is None or None in who:
            self._everyone_at = self.generation
        else:
            for recipient in who:
                if recipient is not None:
                    self._marks[recipient] = self.generation
        self._wake()

    def _bump_any(self) -> None:
        """A change concerning someone this process does not listen for."""
        self.generation += 1
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    def mark(self, recipient: str | None) -> int:
        """The generation of the last change a waiter for `recipient` cares about."""
        if recipient is None:
            return self.generation
        return max(self._marks.get(recipient, 0), self._everyone_at)

    # Listening.

    async def watch(self, recipient: str | None) -> int:
        """LISTEN for changes concerning `recipient` (None: any change) from now on, take
        in what was heard so far, and return the generation."""
        name = ANY if recipient is None else channel(recipient)
        self._wanted.setdefault(name, recipient)
        due = anyio.current_time() - self._tick_at >= self._interval
        if name in self._listening and self._conn is not None and not due:
            # Listened to already (the claim path, every time): what waits in the socket
            # came before this call and will be read by the next wait, at worst a
            # spurious wake-up; no thread hop needed.
            return self.generation
        async with self._lock:
            await self._refresh()
        return self.generation

    async def _refresh(self) -> None:
        if self._conn is None:
            await self._reconnect()
        if self._conn is None:
            return
        now = anyio.current_time()
        tick = self._signature is None or now - self._tick_at >= self._interval
        if tick:
            self._tick_at = now
        try:
            heard, signature = await anyio.to_thread.run_sync(
                self._sync_refresh, tick, limiter=self._limiter
            )
        except psycopg.Error as exc:
            await self._lose(exc)
            return
        self._hear(heard)
        if signature is not None:
            self._floor(signature)

    def _sync_refresh(self, tick: bool) -> tuple[list[str], tuple[object, ...] | None]:
        """LISTEN on the wanted channels not yet listened to, drain the socket, and at a
        tick read the floor's signature (in a thread, on the listener connection)."""
        conn = self._conn
        assert conn is not None
        for name in sorted(set(self._wanted) - self._listening):
            conn.execute(f"LISTEN {name}")  # a hex identifier (channels.py)
            self._listening.add(name)
        signature = None
        if tick:
            row = conn.execute(
                """SELECT pg_sequence_last_value(%s::regclass),
                          (SELECT coalesce(max(id), 0) FROM returns)""",
                (self._sequence,),
            ).fetchone()
            signature = tuple(row or ())
        pg = conn.pgconn
        pg.consume_input()
        if pg.status != psycopg.pq.ConnStatus.OK:
            raise psycopg.OperationalError("the listener's connection is closed")
        while (note := pg.notifies()) is not None:
            self._heard.append(note.relname.decode("ascii", "replace"))
        heard, self._heard = self._heard, []
        return heard, signature

    def _hear(self, heard: list[str]) -> None:
        if not heard:
            return
        self._interval = self._options.backstop_interval  # the bus moves: tick briskly
        if BROADCAST in heard:
            self.bump(None)
            return
        recipients = {self._wanted.get(name) for name in heard if name != ANY}
        recipients.discard(None)
        if recipients:
            self.bump(recipients)
        elif ANY in heard:
            self._bump_any()

    async def _reconnect(self) -> None:
        now = anyio.current_time()
        if now < self._retry_at:
            return
        try:
            conn = await anyio.to_thread.run_sync(self._pool.connect, limiter=self._limiter)
        except psycopg.Error as exc:
            self._retry_at = now + self._retry_delay
            self._retry_delay = min(self._retry_delay * 2, MAX_RECONNECT_DELAY)
            if self._lost_at is None:
                self._lost_at = now
            log.debug("%s: listener reconnect failed: %s", self.location, self._why(exc))
            return
        conn.add_notify_handler(lambda note: self._heard.append(note.channel))
        first = self._signature is None and self.generation == 0 and self._lost_at is None
        self._conn, self._listening = conn, set()
        self._retry_delay = 0.1
        if self._lost_at is not None:
            log.warning("%s: change listener reconnected", self.location)
        self._lost_at = None
        if not first:
            # Notifications sent while it was away are lost: everyone looks again.
            self.bump(None)

    async def _lose(self, exc: BaseException) -> None:
        log.warning("%s: change listener lost (%s); reconnecting", self.location, self._why(exc))
        conn, self._conn, self._listening = self._conn, None, set()
        self._lost_at = anyio.current_time()
        self._retry_at = 0.0
        await self._close(conn)
        await self._reconnect()

    # The floor.

    def _floor(self, signature: tuple[object, ...]) -> None:
        """A tick: rows came that nobody announced when the sequence or the highest id
        moved; such a change concerns everyone. A quiet tick doubles the next one, up to
        QUIET_CAP seconds."""
        if self._signature is None:
            pass  # the baseline
        elif signature != self._signature:
            self._interval = self._options.backstop_interval
            self.bump(None)
        else:
            cap = max(QUIET_CAP, self._options.backstop_interval)
            self._interval = min(self._interval * 2, cap)
        self._signature = signature

    # Waiting.

    async def wait_past(self, since: int, recipient: str | None) -> None:
        """Return once a change for `recipient` (None: any) came after generation `since`;
        cancel it to stop waiting."""
        await self.watch(recipient)
        while self.mark(recipient) <= since:
            await self._park()
            async with self._lock:
                await self._refresh()

    async def _park(self) -> None:
        """Sleep until a bump, the listener's socket is readable (for the one waiter that
        holds it), the next tick of the floor, or a reconnect attempt is due."""
        now = anyio.current_time()
        due = self._tick_at + self._interval - now
        if self._conn is None:
            due = min(due, self._retry_at - now)
        changed = self._changed
        fd = None if self._held else _socket(self._conn)
        with anyio.move_on_after(max(due, 0.0)):
            if fd is None:
                await changed.wait()
                return
            self._held = True
            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_cancel_on, changed, tg.cancel_scope)
                    # Closed under us (a lost connection): the refresh that follows reconnects.
                    with contextlib.suppress(anyio.ClosedResourceError):
                        await anyio.wait_readable(fd)
                    tg.cancel_scope.cancel()
            finally:
                self._held = False
                self._wake()  # hand the socket over: another waiter may hold it now

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        await self._close(conn)

    async def _close(self, conn: Conn | None) -> None:
        """Close a listener connection; a waiter parked on its socket is told first (a
        closed descriptor would otherwise never wake it, and its number may be reused)."""
        if conn is None:
            return
        fd = _socket(conn)
        if fd is not None:
            anyio.notify_closing(fd)
        await anyio.to_thread.run_sync(conn.close, limiter=self._limiter)

    @property
    def location(self) -> str:
        return self._pool.location

    def _why(self, exc: BaseException) -> str:
        text = str(exc).strip().splitlines()
        return scrub(text[0], self._pool.url) if text else type(exc).__name__


def _socket(conn: Conn | None) -> int | None:
    """The connection's socket descriptor, or None when there is none (closed, lost)."""
    if conn is None:
        return None
    try:
        fd = conn.pgconn.socket
    except psycopg.Error:
        return None
    return fd if fd >= 0 else None


async def _cancel_on(event: anyio.Event, scope: anyio.CancelScope) -> None:
    await event.wait()
    scope.cancel()
