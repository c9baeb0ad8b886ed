"""The PostgreSQL bus backend: `open_pg_bus(url, options)` -> `PgBus` (a `BusBackend`).

For teams whose panels run on several hosts: the same contract columns, receipts, leases,
epochs and dead letters as the SQLite backend, on a server they share. psycopg 3 is
imported here and below only, so `import peerbus` never needs it.
"""

from peerbus.postgres.bus import PgBus
from peerbus.postgres.opening import open_pg_bus

__all__ = ["PgBus", "open_pg_bus"]
