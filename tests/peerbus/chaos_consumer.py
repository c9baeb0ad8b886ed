"""A consumer shaped like the host, for the kill -9 harness (run as a script, not collected).

Usage: chaos_consumer.py BUS STORE SEED    (BUS: a SQLite path or a postgresql:// URL)

Each turn: claim a batch; ack at once the ids its own store already holds (a previous
incarnation committed them and died before acking); "process" the rest, commit their ids
to the store in one transaction, then ack them. Exits 0 when nothing is owed any more.
"""

from __future__ import annotations

import random
import sqlite3
import sys
from pathlib import Path

import anyio

from peerbus import BusOptions, open_bus

RECIPIENT = "worker"


def open_store(path: Path) -> sqlite3.Connection:
    store = sqlite3.connect(path, isolation_level=None)
    store.execute("PRAGMA journal_mode = WAL")
    store.execute("PRAGMA synchronous = FULL")
    store.execute("CREATE TABLE IF NOT EXISTS processed (id INTEGER PRIMARY KEY, turn INTEGER)")
    return store


def stored(store: sqlite3.Connection, ids: tuple[int, ...]) -> set[int]:
    marks = ",".join("?" * len(ids))
    rows = store.execute(f"SELECT id FROM processed WHERE id IN ({marks})", ids)
    return {int(r[0]) for r in rows}


def commit_turn(store: sqlite3.Connection, ids: list[int], turn: int) -> None:
    store.execute("BEGIN IMMEDIATE")
    store.executemany("INSERT INTO processed (id, turn) VALUES (?, ?)", [(i, turn) for i in ids])
    store.execute("COMMIT")


async def main(bus_location: str, store_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    store = open_store(store_path)
    # The default max_attempts: a delivery cut off by kill -9 is not a failed attempt, so
    # however often this consumer dies mid-turn nothing may be dead-lettered (the harness
    # checks that every message ends `done`).
    options = BusOptions(lock_deadline=30)
    async with open_bus(bus_location, options=options) as bus:
        # A restart: new epoch, and the dead incarnation's leases come back at once.
        await bus.register(RECIPIENT)
        print("ready", flush=True)
        turn = 0
        while True:
            claim = await bus.claim(RECIPIENT, max_messages=rng.randint(1, 10), lease=600)
            if not claim.messages:
                if not await bus.inbox(RECIPIENT, limit=1):
                    return
                await bus.wait_for_change(0.2, recipient=RECIPIENT)
                continue
            turn += 1
            seen = stored(store, claim.ids)
            if seen:
                await bus.ack(claim, only=seen)
            fresh = [i for i in claim.ids if i not in seen]
            await anyio.sleep(rng.random() * 0.01)  # the "turn"
            commit_turn(store, fresh, turn)
            await bus.ack(claim, only=fresh)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]))
