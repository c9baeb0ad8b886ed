"""Opening a PostgreSQL bus (`open_pg_bus`): the first connection, its errors in words,
the migration.

Errors at open are for an operator: each names the redacted URL and what to do. The
driver's own message is kept (scrubbed of the password, though libpq does not print it)
because it says which host, port and user were tried.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import psycopg

from peerbus.model import BusOptions
from peerbus.postgres.bus import PgBus
from peerbus.postgres.errors import PgOpenError
from peerbus.postgres.feed import ChangeFeed
from peerbus.postgres.pool import Pool, scrub
from peerbus.postgres.schema import id_sequence, migrate

_AUTH = {"28P01", "28000"}
_NO_DATABASE = "3D000"


def connect_first(pool: Pool) -> tuple[int, str, str]:
    """Connect, migrate and keep the connection in the pool; returns (schema version,
    bus_id, id sequence name). Runs in a worker thread."""
    try:
        conn = pool.connect()
    except psycopg.Error as exc:
        raise PgOpenError(_explain(exc, pool.url), url=pool.location) from None
    try:
        version, bus_id = migrate(conn, pool.location)
        sequence = id_sequence(conn)
    except psycopg.Error as exc:
        conn.close()
        detail = scrub(str(exc).strip(), pool.url)
        raise PgOpenError(
            f"cannot set up the bus tables ({detail}); the user needs the right to create "
            "tables in the database's schema",
            url=pool.location,
        ) from None
    except BaseException:
        conn.close()
        raise
    pool.give_back(conn)
    return version, bus_id, sequence


def _explain(exc: psycopg.Error, url: str) -> str:
    text = scrub(" ".join(str(exc).split()), url)
    state = getattr(exc, "sqlstate", None) or ""
    if state in _AUTH or "password authentication failed" in text or "no password" in text:
        return (
            f"the server refused the login ({text}); check the user and password (in the URL, "
            "PGPASSWORD or ~/.pgpass) and pg_hba.conf"
        )
    if state == _NO_DATABASE or ("database" in text and "does not exist" in text):
        return f"no such database ({text}); create it (createdb) or fix the URL's database name"
    return (
        f"cannot connect ({text}); check that the server runs and that the URL's host and "
        "port are right"
    )


@asynccontextmanager
async def open_pg_bus(url: str, options: BusOptions) -> AsyncIterator[PgBus]:
    """Open the PostgreSQL bus at `url` for the block: connect, migrate, listen.

    Raises PgOpenError (a BusOpenError) naming the redacted URL when the server cannot be
    reached, refuses the login, or has no such database; PgSchemaTooNewError when the bus
    was migrated by a newer peerbus."""
    pool = Pool(url, options)
    feed: ChangeFeed | None = None
    try:
        version, bus_id, sequence = await anyio.to_thread.run_sync(
            connect_first, pool, limiter=pool.limiter
        )
        feed = ChangeFeed(pool, options, sequence)
        yield PgBus(pool, feed, bus_id=bus_id, version=version, sequence=sequence)
    finally:
        # Shielded so a cancelled host still closes its connections; closing is quick.
        with anyio.CancelScope(shield=True):
            if feed is not None:
                await feed.close()
            await anyio.to_thread.run_sync(pool.close)
