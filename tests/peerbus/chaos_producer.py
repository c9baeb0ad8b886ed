"""A producer process for the concurrent-producers test (run as a script, not collected).

Usage: chaos_producer.py BUS NAME COUNT    (BUS: a SQLite path or a postgresql:// URL)

Submits COUNT messages as sender NAME, one commit each except every tenth step, which sends
a batch of three in one transaction; prints the ids it was given as one JSON line.
"""

from __future__ import annotations

import json
import sys

import anyio

from peerbus import BusOptions, Outgoing, open_bus


async def main(location: str, name: str, count: int) -> None:
    ids: list[int] = []
    seq = 0
    async with open_bus(location, options=BusOptions(busy_timeout=0.05, lock_deadline=60)) as bus:
        while seq < count:
            if seq % 10 == 9 and seq + 3 <= count:
                batch = [Outgoing("sink", {"producer": name, "seq": seq + k}) for k in range(3)]
                ids += await bus.submit_many(name, batch)
                seq += 3
            else:
                ids.append(await bus.submit(name, "sink", {"producer": name, "seq": seq}))
                seq += 1
    print(json.dumps(ids), flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], int(sys.argv[3]))
