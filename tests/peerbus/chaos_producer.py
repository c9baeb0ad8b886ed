"""A producer process for the concurrent-producers test (run as a script, not collected).

Usage: chaos_producer.py BUS NAME COUNT

Submits COUNT messages as sender NAME, one commit each except every tenth step, which sends
a batch of three in one transaction; prints the ids it was given as one JSON line.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from peerbus import BusOptions, Outgoing, close_bus, connect_bus, submit, submit_many


def main(path: Path, name: str, count: int) -> None:
    bus = connect_bus(path, BusOptions(busy_timeout=0.05, lock_deadline=60))
    ids: list[int] = []
    seq = 0
    try:
        while seq < count:
            if seq % 10 == 9 and seq + 3 <= count:
                batch = [Outgoing("sink", {"producer": name, "seq": seq + k}) for k in range(3)]
                ids += submit_many(bus, name, batch)
                seq += 3
            else:
                ids.append(submit(bus, name, "sink", {"producer": name, "seq": seq}))
                seq += 1
    finally:
        close_bus(bus)
    print(json.dumps(ids), flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]))
