"""The soak's figures as text: what was done, how long it took, and each invariant's count.

The result is the dict `bench/soak.py --json` prints; this module only words it, and says
whether the run failed (an invariant count not 0, a limit of the host hit, the deadline
hit, or a last life that did not stop cleanly).
"""

from __future__ import annotations

from typing import Any


def failed(result: dict[str, Any]) -> bool:
    counts = [v["count"] for v in result["invariants"].values()]
    hit = [v["count"] for v in result["limits_hit"].values() if v.get("fails", True)]
    return (
        any(counts) or any(hit) or result["deadline_hit"] or not result["final_life"].get("clean")
    )


def report(result: dict[str, Any]) -> None:
    r = result
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(r["kills_by_kind"].items()))
    in_vain = ", ".join(f"{k} {n}" for k, n in sorted(r["aimed_kills_timed_out"].items()))
    print(
        f"soak ({r['mode']} drivers, seed {r['seed']}): R={r['kills_requested']} kills, "
        f"N={r['messages']} operator messages"
    )
    print(f"kills: {r['kills']} ({kinds}); aimed kills whose moment never came: {in_vain or 0}")
    for line in r["exited_by_themselves"]:
        print(f"  not killed: {line}")
    print(
        f"lives: {r['lives']}; bus messages: {r['bus_messages']}; committed turns: "
        f"{r['turns']}; wall time: {r['wall_seconds']} s"
    )
    faults = r.get("faults")
    if faults:
        raises = "; ".join(
            f"{p} on op {', '.join(map(str, ns))}" for p, ns in faults["raise"].items() if ns
        )
        print(
            f"faults: bursts of {r['burst']} ops (first life, last); drivers raise once: {raises}; "
            f"chatty tasks (two sends each): {len(faults['chatty'])}"
            + (f" at {faults['chatty_panel']}" if faults.get("chatty_panel") else "")
        )
    else:
        print("faults: none")
    ring = r.get("ring")
    if ring:
        print(
            f"ring of {ring['panels']}: {ring['hop_messages']} hop messages through the ring, "
            f"{ring['ops_round']} of {r['messages']} ops all the way round"
        )
    print(f"follow-up turns run (sends a turn could not make, owed): {r['follow_up_turns']}")
    made = r.get("recreations") or {}
    if made.get("requested"):
        print(
            f"table made again under load: {made['done']} of {made['requested']} "
            f"({made['missed']} missed: the bus had not followed the last one); "
            f"{made['rows_gone_with_tables']} rows were in the dropped tables; bus: {made['bus']}"
        )
    load = ", ".join(f"{x:.2f}" for x in r["load_average"])
    print(f"load average: {load} (cores: {r['cores']})")
    final = r["final_life"]
    print(
        f"last life: drained: {final.get('drained')} after {final.get('drain_seconds')} s; "
        f"stopped with SIGTERM: {final.get('stop')}"
    )
    if r["deadline_hit"]:
        print(f"DEADLINE HIT: the run took longer than {r['deadline_seconds']:.0f} s")
    print("limits of the host hit (those marked 'must be 0' fail the run):")
    for name, hit in r["limits_hit"].items():
        must = "must be 0" if hit.get("fails", True) else "expected"
        print(f"  {name}: {hit['count']} ({must}: {hit.get('why', '')})")
        for example in hit["examples"]:
            print(f"      e.g. {example}")
    print("invariants (each count must be 0):")
    for name, inv in r["invariants"].items():
        parts = ", ".join(f"{k} {v}" for k, v in inv["parts"].items() if v)
        print(f"  {name}: {inv['count']}" + (f"  ({parts})" if parts else ""))
        for note in inv["notes"]:
            print(f"      note: {note}")
        for example in inv["examples"]:
            print(f"      e.g. {example}")
    print(f"result: {'FAIL' if failed(r) else 'ok'}")
