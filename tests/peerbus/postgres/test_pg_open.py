"""Opening a PostgreSQL bus: a clear BusOpenError for every way it can fail, a schema
newer than the code refused, and a password that never shows (location, errors, logs)."""

from __future__ import annotations

import logging
from collections.abc import Callable

import psycopg
import pytest

from peerbus import BusOpenError, BusOptions, SchemaTooNewError, open_bus
from tests.pgcluster import PASSWORD, PgCluster, dbname_of

pytestmark = pytest.mark.anyio


async def test_a_schema_newer_than_the_code_is_refused(
    pg_url: str, options: Callable[..., BusOptions]
) -> None:
    async with open_bus(pg_url, options=options()) as bus:
        await bus.submit("a", "b", {"n": 1})
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE peerbus_meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(SchemaTooNewError) as err:
        async with open_bus(pg_url, options=options()):
            pass
    assert "schema version 99 is newer" in str(err.value) and "upgrade mnemara" in str(err.value)
    assert PASSWORD not in str(err.value)


async def test_opening_twice_migrates_once_and_keeps_the_identity(
    pg_url: str, options: Callable[..., BusOptions]
) -> None:
    async with (
        open_bus(pg_url, options=options()) as one,
        open_bus(pg_url, options=options()) as two,
    ):
        assert one.identity == two.identity and len(one.identity) == 32
        assert (await one.stats()).schema_version == 1


async def test_the_password_never_shows(
    pg_cluster: PgCluster,
    pg_url: str,
    options: Callable[..., BusOptions],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    async with open_bus(pg_url, options=options()) as bus:
        assert bus.location == pg_url.replace(f":{PASSWORD}@", "@")
        await bus.claim("b")
        pg_cluster.terminate_connections(dbname_of(pg_url))  # retries and reconnects log
        await bus.submit("a", "b", {"n": 1})
        assert (await bus.claim("b")).ids
    assert any("retrying" in r.getMessage() for r in caplog.records)
    assert PASSWORD not in caplog.text

    wrong = pg_url.replace(PASSWORD, "not-the-right-one")
    with pytest.raises(BusOpenError) as refused:
        async with open_bus(wrong, options=options()):
            pass
    assert "refused the login" in str(refused.value)
    assert "not-the-right-one" not in str(refused.value) + caplog.text

    missing = pg_cluster.url("no_such_db")
    with pytest.raises(BusOpenError) as absent:
        async with open_bus(missing, options=options()):
            pass
    assert "no such database" in str(absent.value) and PASSWORD not in str(absent.value)


async def test_no_server_at_the_url_is_a_clear_open_error(
    options: Callable[..., BusOptions],
) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"postgresql://me:hunter2@127.0.0.1:{port}/bus"
    with pytest.raises(BusOpenError) as err:
        async with open_bus(url, options=options()):
            pass
    text = str(err.value)
    assert "cannot connect" in text and "check that the server runs" in text
    assert f"postgresql://me@127.0.0.1:{port}/bus" in text and "hunter2" not in text
