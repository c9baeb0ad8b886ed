"""`mnemara bus migrate`: a whole bus copied between backends, receipts included.

The proof that nothing is lost or delivered twice after a move: the identity and the ids
travel, so a consumer's "already consumed" ids still match, acked messages stay acked,
dead letters stay dead, keys still answer, and what was pending is delivered once.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import anyio
from typer.testing import CliRunner

from panels.cli.bus import bus_app
from peerbus import BusBackend, BusDump, Outgoing, open_bus
from tests.peerbus.conftest import make_foreign, raw_insert

runner = CliRunner()


def migrate(source: str, target: str) -> tuple[int, str]:
    result = runner.invoke(bus_app, ["migrate", "--from", source, "--to", target, "--json"])
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return result.exit_code, result.stdout + result.stderr


def on_bus(location: str, work: Any) -> Any:
    async def run() -> Any:
        async with open_bus(location) as bus:
            return await work(bus)

    return anyio.run(run)


async def busy_life(bus: BusBackend) -> dict[str, Any]:
    """A bus with every kind of state: acked, leased, waiting (nacked), dead, keyed, broadcast."""
    await bus.register("eng", senders=["lead"])
    acked = await bus.submit("lead", "eng", {"n": "acked"})
    await bus.ack(await bus.claim("eng"))
    first, second = await bus.submit_many(
        "lead", [Outgoing("eng", {"n": "nacked"}, key="k1"), Outgoing("eng", {"n": "leased"})]
    )
    claim = await bus.claim("eng")
    await bus.nack(claim, only=[first], delay=0)
    broadcast = await bus.submit("lead", None, {"n": "to all"})
    doomed = await bus.submit("lead", "qa", {"n": "dead"})
    await bus.fail(await bus.claim("qa", senders=[]), reason="poison for the test")
    return {"acked": acked, "nacked": first, "leased": second, "all": broadcast, "dead": doomed,
            "identity": bus.identity}  # fmt: skip


def without_watermarks(dump: BusDump) -> BusDump:
    """PostgreSQL keeps no id watermark; everything else must match exactly."""
    return dataclasses.replace(
        dump, recipients=tuple(dataclasses.replace(r, watermark=0) for r in dump.recipients)
    )


def export(location: str) -> BusDump:
    return on_bus(location, lambda bus: bus.export_dump())  # type: ignore[no-any-return]


def test_sqlite_to_postgres_and_back_keeps_every_state(tmp_path: Path, pg_url: str) -> None:
    source = str(tmp_path / "a.sqlite")
    seen = on_bus(source, busy_life)
    code, out = migrate(source, pg_url)
    assert code == 0, out
    assert json.loads(out)["copied"] == "5 message(s), 4 receipt(s), 2 recipient(s), 1 sent key(s)"
    assert "pg-test-secret" not in out  # the URL is printed without its password
    back = str(tmp_path / "b.sqlite")
    assert migrate(pg_url, f"sqlite:///{back}")[0] == 0
    original = without_watermarks(export(source))
    assert without_watermarks(export(pg_url)) == original == without_watermarks(export(back))

    async def after_the_move(bus: BusBackend) -> dict[str, Any]:
        assert bus.identity == seen["identity"]
        again = await bus.submit("lead", "eng", {"n": "again"}, key="k1")  # the key still answers
        leased = await bus.claim("eng", lease=60)  # the old lease (300 s) still holds `leased`
        dead = [d.id for d in await bus.dead_letters()]
        return {"again": again, "claimed": leased.ids, "dead": dead,
                "qa": (await bus.claim("qa", senders=[])).ids}  # fmt: skip

    for location in (pg_url, back):
        now = on_bus(location, after_the_move)
        assert now["again"] == seen["nacked"]
        assert now["claimed"] == (seen["nacked"], seen["all"])  # acked and leased: not again
        assert now["dead"] == [seen["dead"]] and now["qa"] == ()


def test_a_foreign_table_moves_to_postgres(tmp_path: Path, pg_url: str) -> None:
    source = make_foreign(tmp_path / "returns.db")
    ids = on_bus(str(source), lambda bus: bus.submit_many("a", [Outgoing("b", {"n": 1})] * 3))
    assert migrate(str(source), pg_url)[0] == 0
    claim = on_bus(pg_url, lambda bus: bus.claim("b"))
    assert claim.ids == tuple(ids)


def test_the_target_must_be_empty(tmp_path: Path, pg_url: str) -> None:
    source = str(tmp_path / "a.sqlite")
    on_bus(source, lambda bus: bus.submit("a", "b", {"n": 1}))
    on_bus(pg_url, lambda bus: bus.submit("x", "y", {"n": "already here"}))
    code, out = migrate(source, pg_url)
    assert code == 9 and "empty" in out
    assert [r.sender for r in on_bus(pg_url, lambda bus: bus.history())] == ["x"]
    code, out = migrate(source, source)
    assert code == 2 and "the same bus" in out
    code, out = migrate(str(tmp_path / "missing.sqlite"), pg_url)
    assert code == 9 and "no bus at" in out


def test_what_postgresql_cannot_store_stops_the_copy_with_a_message(
    tmp_path: Path, pg_url: str
) -> None:
    source = make_foreign(tmp_path / "returns.db")
    raw_insert(source, "b", '{"text": "a raw NUL: \x00"}')  # a foreign writer's row
    code, out = migrate(str(source), pg_url)
    assert code == 9 and "the server refused the change" in out and "NUL" in out
    assert "Traceback" not in out and "pg-test-secret" not in out
    assert on_bus(pg_url, lambda bus: bus.history()) == []  # nothing half copied
