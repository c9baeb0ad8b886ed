"""Connections to the server, and running a transaction on one until it goes through.

psycopg's AsyncConnection speaks asyncio only, so the bus uses sync connections in worker
threads (`anyio.to_thread.run_sync`, as the SQLite backend does), which works on trio and
asyncio alike. A CapacityLimiter bounds the threads, and each thread takes a connection of
its own from a free list, so a host's panels run their transactions side by side.

Cancellation: a transaction runs whole in its thread (`to_thread` does not abandon it), so
a cancel takes effect only once it has committed or rolled back. The back-off between
attempts is an ordinary async sleep: a cancel there leaves nothing half done.

Connection loss (a server restart, `pg_terminate_backend`, a network cut): the connection
is dropped (so is any connection whose transaction raised) and the whole transaction runs
again on a fresh one, backing off, until `options.lock_deadline` has passed; then
`PgBusyError` (a `BusBusyError`). So is a serialization failure or a deadlock. A loss
during COMMIT leaves its outcome unknown, so every write is written to be run twice safely
(see `PgBus` for how each one is).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

import anyio
import psycopg

from peerbus.location import redact
from peerbus.model import BusOptions
from peerbus.postgres.errors import PgBusyError, PgRefusedError

T = TypeVar("T")
Conn = psycopg.Connection[tuple[Any, ...]]
log = logging.getLogger("peerbus")

# Worker threads (and so connections) per bus: enough for a host's panels to claim,
# ack and submit side by side without holding a server backend each.
POOL_SIZE = 4
MAX_BACKOFF = 2.0


def scrub(text: str, url: str) -> str:
    """`text` (a driver's message) with the URL's password, if it appears, cut out."""
    try:
        password = urlsplit(url).password
    except ValueError:
        password = None
    for secret in {password, unquote(password or "")} - {None, ""}:
        text = text.replace(str(secret), "***")
    return text


def transient(exc: BaseException) -> bool:
    """Worth running the transaction again: the connection dropped, the server is
    restarting, or it chose this transaction as a serialization or deadlock victim."""
    return isinstance(exc, psycopg.OperationalError)


class Pool:
    """The bus's connections. `run` executes `work(conn)` in one transaction, retried."""

    def __init__(self, url: str, options: BusOptions, size: int = POOL_SIZE) -> None:
        self.url = url
        self.location = redact(url)
        self.options = options
        self.limiter = anyio.CapacityLimiter(size)
        self._free: list[Conn] = []
        self._lock = threading.Lock()
        self._closed = False

    def connect(self) -> Conn:
        timeout = max(1, round(self.options.busy_timeout))
        conn = psycopg.connect(self.url, autocommit=True, connect_timeout=timeout)
        # Commits do not wait for the WAL flush unless a transaction asks (see `run`).
        conn.execute("SET synchronous_commit = off")
        return conn

    def _take(self) -> Conn:
        with self._lock:
            if self._free:
                return self._free.pop()
        return self.connect()

    def give_back(self, conn: Conn) -> None:
        if conn.closed or conn.broken:
            conn.close()
            return
        with self._lock:
            if not self._closed:
                self._free.append(conn)
                return
        conn.close()

    def _attempt(self, work: Callable[[Conn], T], durable: bool) -> T:
        conn = self._take()
        try:
            with conn.transaction():
                if durable:
                    conn.execute("SET LOCAL synchronous_commit = on")
                result = work(conn)
        except BaseException:
            # Never reused: psycopg does not always mark a connection the server cut off as
            # broken (its rollback can fail and leave "another command is already in
            # progress"), and a retry on it fails again until the lock deadline.
            with contextlib.suppress(Exception):
                conn.close()
            raise
        self.give_back(conn)
        return result

    async def run(self, work: Callable[[Conn], T], *, durable: bool = False) -> T:
        """`work(conn)` in one transaction, run again on a fresh connection after a
        transient failure until the lock deadline; `work` must be safe to run twice.

        `durable`: the commit waits for the server's WAL flush. Without it (claims, acks,
        reads) a server crash can forget the last fraction of a second of commits, never
        corrupt them: at worst a message is delivered again, which at-least-once allows.
        That is the SQLite backend's synchronous=NORMAL for claims and acks; submits
        (and registers, retries, imports) pass `options.durable`."""
        started: float | None = None
        attempts = 0
        delay = 0.05
        while True:
            try:
                return await anyio.to_thread.run_sync(
                    self._attempt, work, durable, limiter=self.limiter
                )
            except psycopg.Error as exc:
                if not transient(exc):
                    # The server refused the statement itself (bad data, a constraint):
                    # running it again cannot help. Callers see a bus error, not the driver's.
                    raise PgRefusedError(url=self.location, cause=self._why(exc)) from None
                attempts += 1
                now = time.monotonic()
                started = now if started is None else started
                cause = self._why(exc)
                if now - started >= self.options.lock_deadline:
                    raise PgBusyError(
                        url=self.location, waited=now - started, attempts=attempts, cause=cause
                    ) from None
                if attempts == 1:
                    log.warning("%s: %s; retrying", self.location, cause or type(exc).__name__)
            await anyio.sleep(delay)
            delay = min(delay * 2, MAX_BACKOFF)

    def _why(self, exc: BaseException) -> str:
        """The driver's first line about `exc`, without the password."""
        text = str(exc).strip()
        return scrub(text.splitlines()[0] if text else type(exc).__name__, self.url)

    def close(self) -> None:
        """Close every idle connection (those in use close when they come back)."""
        with self._lock:
            self._closed = True
            idle, self._free = self._free, []
        for conn in idle:
            conn.close()
