"""A throwaway PostgreSQL server for the tests: initdb + pg_ctl in a temp dir, on loopback.

`pg_cluster` (session) starts one server for the whole run and stops it at the end, even
after failures (and at interpreter exit, after a Ctrl-C). `pg_url` gives each test a fresh
empty database on it. The server listens on 127.0.0.1 on a free port, with its unix socket
in its own directory, fsync off (the data dies with the run anyway), and password logins
(scram) for TCP, so the tests exercise a URL that carries a password.

PostgreSQL refuses to run as root, and CI runs as root: then the server runs as the
`postgres` user (runuser), in a temp dir it owns. Without the binaries the suite is
skipped with a loud reason; with CI=true that is a failure instead.
"""

from __future__ import annotations

import atexit
import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

PASSWORD = "pg-test-secret-7f3a"
USER = "postgres"
MISSING = (
    "PostgreSQL not installed: the PostgreSQL bus suite was SKIPPED (apt-get install postgresql)"
)


def find_bindir() -> Path | None:
    """Where initdb and pg_ctl are: on PATH, else the newest /usr/lib/postgresql/*/bin."""
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if initdb and pg_ctl:
        return Path(os.path.realpath(initdb)).parent
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"),
        key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0,
    )
    return Path(found[-1]).parent if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PgCluster:
    """One server: `url(dbname)`, `create_database()`, `restart()`,
    `terminate_connections(dbname)`, `stop()`."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="mnemara-pg-"))
        self.data = self.root / "data"
        self.sockets = self.root / "sock"
        self.log = self.root / "server.log"
        self.port = _free_port()
        self._as_root = os.geteuid() == 0
        self._count = 0
        self.running = False

    def _run(self, *args: str, timeout: float = 120) -> None:
        cmd = [str(self.bindir / args[0]), *args[1:]]
        if self._as_root:
            cmd = ["runuser", "-u", USER, "--", *cmd]
        done = subprocess.run(
            cmd, cwd=self.root, capture_output=True, text=True, timeout=timeout, check=False
        )
        if done.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(f"{' '.join(args[:2])} failed: {done.stderr}{done.stdout}\n{log}")

    def init(self) -> None:
        self.sockets.mkdir()
        pwfile = self.root / "pw"
        pwfile.write_text(PASSWORD + "\n")
        if self._as_root:
            shutil.chown(self.root, USER)
            for path in (self.sockets, pwfile):
                shutil.chown(path, USER)
        self._run(
            "initdb", "-D", str(self.data), "-U", USER, f"--pwfile={pwfile}",
            "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--no-sync",
        )  # fmt: skip
        pwfile.unlink()
        self.start()

    def start(self) -> None:
        opts = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.sockets} -c fsync=off "
            "-c full_page_writes=off -c max_connections=300"
        )
        self._run("pg_ctl", "start", "-w", "-t", "60", "-D", str(self.data), "-l", str(self.log),
                  "-o", opts)  # fmt: skip
        self.running = True

    def stop(self, mode: str = "fast") -> None:
        """Stop the server; "fast" disconnects clients cleanly, "immediate" just kills it
        (committed data survives both: only fsync is off, and the OS keeps the files)."""
        if self.running:
            self.running = False
            self._run("pg_ctl", "stop", "-D", str(self.data), "-m", mode, "-w", "-t", "60")

    def restart(self) -> None:
        """Stop the server at once (clients see their connections drop) and start it."""
        self.stop("fast")
        self.start()

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://{USER}:{PASSWORD}@127.0.0.1:{self.port}/{dbname}"

    def _admin(self, sql: str, params: tuple[object, ...] = ()) -> None:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(sql, params)

    def create_database(self) -> str:
        """A fresh empty database; returns its URL."""
        self._count += 1
        name = f"bus_{os.getpid()}_{self._count}"
        self._admin(f"CREATE DATABASE {name}")
        return self.url(name)

    def terminate_connections(self, dbname: str) -> int:
        """Kill every backend connected to `dbname` (pg_terminate_backend); returns how many."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            row = conn.execute(
                """SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                    WHERE datname = %s AND pid <> pg_backend_pid()""",
                (dbname,),
            ).fetchone()
        return int(row[0]) if row else 0

    def cleanup(self) -> None:
        try:
            self.stop("immediate")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def dbname_of(url: str) -> str:
    return url.rsplit("/", 1)[1].split("?", 1)[0]


def raw_insert(url: str, recipient: str | None, payload_text: str, sender: str = "a") -> int:
    """A row as a foreign writer would put it: any payload text, no checks, no NOTIFY."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            """INSERT INTO returns (agent_role, recipient_role, task_id, payload_json, status,
                   submitted_at)
               VALUES (%s, %s, NULL, %s, 'pending', '2026-01-01T00:00:00') RETURNING id""",
            (sender, recipient, payload_text),
        ).fetchone()
    assert row is not None
    return int(row[0])


def _stop_on_sigterm(cluster: PgCluster) -> Any:
    """A SIGTERM (a CI timeout, `timeout`) ends pytest without teardown or atexit: stop the
    server first, then die of the signal as before. Returns the previous handler."""
    if threading.current_thread() is not threading.main_thread():
        return None  # signal handlers are set from the main thread only
    previous = signal.getsignal(signal.SIGTERM)

    def stop_then_die(signum: int, frame: object) -> None:
        cluster.cleanup()
        signal.signal(signal.SIGTERM, previous if callable(previous) else signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop_then_die)
    return previous


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PgCluster]:
    bindir = find_bindir()
    if bindir is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(MISSING.replace("SKIPPED", "MISSING in CI"), pytrace=False)
        pytest.skip(MISSING)
    cluster = PgCluster(bindir)
    atexit.register(cluster.cleanup)  # a Ctrl-C that skips the teardown still stops it
    previous = _stop_on_sigterm(cluster)
    try:
        cluster.init()
        yield cluster
    finally:
        cluster.cleanup()
        atexit.unregister(cluster.cleanup)
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


@pytest.fixture
def pg_url(pg_cluster: PgCluster) -> str:
    """The URL of a fresh empty database (password included) on the test server."""
    return pg_cluster.create_database()
