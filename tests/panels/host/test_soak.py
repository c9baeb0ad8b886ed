"""The crash soak (bench/soak.py): a real host killed with SIGKILL 12 times, then checked.

The soak runs as its own process, as a user would run it, and reports one JSON object;
every invariant count in it must be 0. Kills and lives are checked too, so a soak that
never killed anything cannot pass. The second test plants one defect of each kind in a
made-up end state, so the checks themselves are known to see what they look for.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
# 12 kills keep the suite within its time (the 20 of before took 60-80 s); `bench/soak.py`
# runs the hundreds.
KILLS = 12
MESSAGES = 40


def failures(result: dict[str, Any]) -> str:
    lines = []
    for name, inv in result["invariants"].items():
        if inv["count"]:
            lines.append(f"{name}: {inv['count']} {inv['parts']} e.g. {inv['examples']}")
    return "\n".join(lines) or "none"


@pytest.mark.slow
def test_a_host_killed_twelve_times_delivers_each_message_exactly_once() -> None:
    # No --deadline: the soak's own scales with the kills and messages (192 s here), so a
    # machine with both cores busy is slow, not failed.
    command = [sys.executable, "bench/soak.py", "--kills", str(KILLS), "--messages",
               str(MESSAGES), "--seed", "1", "--json"]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)  # fmt: skip
    assert done.stdout.strip(), done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["kills"] == KILLS, result["exited_by_themselves"]
    assert result["lives"] >= KILLS + 1
    assert not result["deadline_hit"]
    # A send refused and never sent, or a panel halted by the host's limits: the harness left
    # them. (Sends refused and then sent by a follow-up turn, and the drivers' raises, are the
    # soak's injected faults: expected, and explained in the report.)
    hit = result["limits_hit"]
    assert all(not h["count"] for h in hit.values() if h["fails"]), hit
    # Every op was forwarded and answered: the checks ran over a full run, not an empty one.
    assert result["bus_messages"] >= 3 * MESSAGES and result["turns"] > 0
    counts = {name: inv["count"] for name, inv in result["invariants"].items()}
    assert counts == dict.fromkeys(counts, 0), failures(result)
    assert result["final_life"]["clean"], result["final_life"]
    assert done.returncode == 0, done.stderr[-3000:]


def test_the_soak_checks_count_planted_defects(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    from soak_checks import check_all
    from soak_state import BusRow, Event, OutboxEntry, PanelStore, TeamState

    def store(panel: str, rows: dict[int, tuple[int, ...]], keys: dict[str, int]) -> PanelStore:
        delivered = tuple((i, row) for row, ids in rows.items() for i in ids)
        outbox = tuple(OutboxEntry(k, True, False, m) for k, m in keys.items())
        return PanelStore(panel, rows, dict.fromkeys(rows, 1.0), 0, delivered, 0, outbox)

    def event(ident: int, kind: str, panel: str | None = None, **data: Any) -> Event:
        return Event(ident, 1.0, panel, kind, data)

    op, fwd, rep = "producer@operator", ("producer", "eng1"), ("eng1", "producer")
    clean = TeamState(
        rows=(BusRow(1, "operator", op, "op-0"), BusRow(2, *fwd, "task op-0"),
              BusRow(3, *rep, "done op-0")),
        receipts={(1, op): "done", (2, "eng1"): "done", (3, "producer"): "done"},
        sent={"k1": (2,), "k2": (3,)},
        stores={"producer": store("producer", {10: (1,), 12: (3,)}, {"k1": 2}),
                "eng1": store("eng1", {20: (2,)}, {"k2": 3}), "eng2": store("eng2", {}, {})},
        events=(event(1, "host_started", life="a"), event(2, "host_ready", life="a"),
                event(3, "turn_committed", "producer", user_row=10),
                event(4, "turn_committed", "producer", user_row=12),
                event(5, "turn_committed", "eng1", user_row=20)),
        integrity={"bus.sqlite": "ok", "host.sqlite": "ok"},
    )  # fmt: skip
    assert {i.name: i.count for i in check_all(clean, derived=True)} == {
        "lost": 0, "applied twice": 0, "published twice": 0, "claimed or pending": 0,
        "interrupted copies": 0, "integrity": 0, "event log gaps": 0,
    }  # fmt: skip

    planted = TeamState(
        # 4: the forward again (published twice); 5: dead-lettered op; 6: op never claimed.
        rows=(*clean.rows, BusRow(4, *fwd, "task op-0"), BusRow(5, "operator", op, "op-1"),
              BusRow(6, "operator", op, "op-2")),
        receipts={**clean.receipts, (4, "eng1"): "done", (5, op): "failed"},
        sent=clean.sent,
        # Row 11 consumes op 1 again (applied twice); row 13 is in no event (a gap).
        stores={**clean.stores,
                "producer": store("producer", {10: (1,), 11: (1,), 12: (3,), 13: ()},
                                  {"k1": 2}),
                "eng1": store("eng1", {20: (2,), 21: (4,)}, {"k2": 3}),
                # An input left marked interrupted (a copy of a killed or failed try).
                "eng2": replace(store("eng2", {}, {}), interrupted=1)},
        events=(*clean.events, event(6, "turn_committed", "producer", user_row=11),
                event(7, "turn_committed", "eng1", user_row=21),
                event(8, "host_ready", life="b")),  # no host_started of life b: a gap
        integrity={**clean.integrity, "bus.sqlite": "database disk image is malformed"},
    )  # fmt: skip
    assert {i.name: i.count for i in check_all(planted, derived=True)} == {
        "lost": 2, "applied twice": 1, "published twice": 1, "claimed or pending": 1,
        "interrupted copies": 1, "integrity": 1, "event log gaps": 2,
    }  # fmt: skip
