"""Where the bus benchmarks run their PostgreSQL cases: a given URL, or a throwaway server.

`open_pg_target(url, reset)` yields a `PgTarget` whose `fresh()` gives the URL of an empty
bus for each case (one database, one workload):
- with a URL (`--bus`): the bus tables in that database, emptied before each case. The
  bench never touches anything else, and it refuses a database whose bus already holds
  anything (messages, recipients, keys) unless `reset` says it may delete it;
- without one: a server of its own (initdb + pg_ctl in a temp dir on loopback, as the
  tests' tests/pgcluster.py does), with a new database per case, stopped at the end. Unlike
  the tests' server it keeps fsync on: SQLite's submits sync to disk, so PostgreSQL's must
  too for the figures to compare. When no server can be started, `open_pg_target` yields
  None and says why in `PgTarget.skipped`.

`PgTarget.server_cpu()` is the server's CPU time so far (the postmaster and its backends,
the exited ones included), known only for the throwaway server: a PostgreSQL consumer's
work is split between its process and the server's, and the figures show both.
"""

from __future__ import annotations

import argparse
import atexit
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

ROOT = Path(__file__).resolve().parents[1]
TICK = os.sysconf("SC_CLK_TCK")


class Cluster(Protocol):
    """What the bench uses of tests/pgcluster.py's PgCluster."""

    data: Path
    port: int

    def create_database(self) -> str: ...

    def cleanup(self) -> None: ...


class TargetError(Exception):
    """The URL given cannot be used as a bench target; the message says what to do."""


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def _bus_tables(url: str) -> list[str]:
    """Open the bus once (creating its tables if the database has none), then list the
    tables that hold its contents: `returns` and peerbus's, but not `peerbus_meta` (the
    bus's identity and schema version)."""
    import anyio
    import psycopg

    from peerbus import open_bus

    async def opened() -> None:
        async with open_bus(url):
            pass

    anyio.run(opened)
    with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
        rows = conn.execute(
            """SELECT table_name FROM information_schema.tables
                WHERE table_schema = current_schema()
                  AND (table_name = 'returns' OR table_name LIKE 'peerbus\\_%')
                  AND table_name <> 'peerbus_meta'
                ORDER BY table_name"""
        ).fetchall()
    return [str(r[0]) for r in rows]


class PgTarget:
    """The PostgreSQL side of a bench run."""

    def __init__(self, describe: str, cluster: Cluster | None = None, url: str = "") -> None:
        self.describe = describe  # how the figures' server was got, printable
        self._cluster = cluster
        self._url = url
        self._tables: list[str] = []

    def fresh(self) -> str:
        """The URL of an empty bus for the next case."""
        if self._cluster is not None:
            return self._cluster.create_database()
        import psycopg

        names = ", ".join(f'"{t}"' for t in self._tables)
        with psycopg.connect(self._url, autocommit=True, connect_timeout=10) as conn:
            conn.execute(f"TRUNCATE {names} RESTART IDENTITY")
        return self._url

    def check(self, reset: bool) -> None:
        """Refuse a bus that holds anything unless `reset`; remember which tables to empty."""
        import psycopg

        from peerbus import redact

        self._tables = _bus_tables(self._url)
        held: dict[str, int] = {}
        try:
            with psycopg.connect(self._url, autocommit=True, connect_timeout=10) as conn:
                for table in self._tables:
                    row = conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()
                    held[table] = int(row[0]) if row else 0
        except psycopg.Error as exc:
            raise TargetError(f"{redact(self._url)}: cannot read the bus ({_first(exc)})") from None
        busy = {t: n for t, n in held.items() if n}
        if busy and not reset:
            what = ", ".join(f"{n} rows in {t}" for t, n in busy.items())
            raise TargetError(
                f"{redact(self._url)} already holds a bus ({what}); the bench empties the "
                "bus tables for each case, so give it an empty database, or pass --reset "
                "to let it delete that bus's contents"
            )

    def server_cpu(self) -> float | None:
        """CPU seconds the throwaway server has used so far; None for a server not ours."""
        if self._cluster is None:
            return None
        pid_file = self._cluster.data / "postmaster.pid"
        try:
            postmaster = int(pid_file.read_text().split()[0])
            return _tree_cpu(postmaster)
        except (OSError, ValueError, IndexError):
            return None


def _first(exc: BaseException) -> str:
    """The first line of a driver's message (libpq never puts the password in it)."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _stat(pid: int) -> list[str]:
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rindex(")") + 2 :].split()  # fields from the 3rd (state) on


def _tree_cpu(postmaster: int) -> float:
    """The postmaster's CPU with its reaped children's, plus its live children's."""
    fields = _stat(postmaster)
    ticks = sum(int(fields[i]) for i in (11, 12, 13, 14))  # utime stime cutime cstime
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                child = _stat(int(entry))
            except OSError:
                continue  # gone meanwhile: its time is in the postmaster's cutime now
            if int(child[1]) == postmaster:
                ticks += int(child[11]) + int(child[12])
    return ticks / TICK


def _start_server() -> tuple[Cluster | None, str]:
    """A throwaway server with fsync on, or (None, why not)."""
    sys.path.insert(0, str(ROOT))
    try:
        from tests.pgcluster import PgCluster, find_bindir
    except ImportError as exc:
        return None, f"cannot load tests/pgcluster.py ({exc})"

    class BenchCluster(PgCluster):
        def start(self) -> None:
            opts = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.sockets}"
            self._run("pg_ctl", "start", "-w", "-t", "60", "-D", str(self.data),
                      "-l", str(self.log), "-o", opts)  # fmt: skip
            self.running = True

    bindir = find_bindir()
    if bindir is None:
        return None, "no initdb/pg_ctl found (apt-get install postgresql)"
    cluster = BenchCluster(bindir)
    atexit.register(cluster.cleanup)
    try:
        cluster.init()
    except (OSError, RuntimeError, ValueError) as exc:
        cluster.cleanup()
        atexit.unregister(cluster.cleanup)
        first = str(exc).strip().splitlines()
        return None, f"the throwaway server did not start ({first[0] if first else exc})"
    return (
        cluster,
        f"a throwaway server on 127.0.0.1:{cluster.port} (fsync on), a database per case",
    )


@contextmanager
def open_pg_target(url: str | None, reset: bool) -> Iterator[PgTarget | str]:
    """The PostgreSQL target for the run, or a string saying why PostgreSQL is skipped.
    Raises TargetError for a URL that cannot be used (bad scheme, refused, non-empty)."""
    from peerbus import PeerbusError, parse_location, redact

    if url is None:
        cluster, describe = _start_server()
        if cluster is None:
            yield describe
            return
        try:
            yield PgTarget(describe, cluster=cluster)
        finally:
            cluster.cleanup()
            atexit.unregister(cluster.cleanup)
        return
    try:
        where = parse_location(url)
    except PeerbusError as exc:
        raise TargetError(str(exc)) from None
    if where.scheme != "postgresql":
        raise TargetError(
            f"--bus takes a postgresql:// URL, not {redact(url)!r} (the SQLite side always "
            "runs on a temp file)"
        )
    target = PgTarget(f"{redact(url)}, its bus tables emptied before each case", url=url)
    try:
        target.check(reset)
    except PeerbusError as exc:
        raise TargetError(" ".join(str(exc).split())) from None
    yield target


def bus_parser(doc: str | None) -> argparse.ArgumentParser:
    """The argument parser of a bench that measures both backends: its `--bus` and `--reset`."""
    parser = argparse.ArgumentParser(
        description=(doc or "").splitlines()[0],
        epilog="With --bus, the bench creates the bus tables in that database if it has "
        "none, and empties them before each case (TRUNCATE); it refuses a database whose "
        "bus already holds messages, recipients or keys unless --reset is given. Without "
        "--bus it starts a throwaway PostgreSQL server (or runs SQLite alone when it cannot).",
    )
    parser.add_argument(
        "--bus", metavar="URL", help="a postgresql:// URL to measure (default: a throwaway server)"
    )
    parser.add_argument(
        "--reset", action="store_true", help="let the bench delete what the --bus bus holds"
    )
    return parser
