"""The soak's ring (`--ring N`): N panels pass each operator message once round a ring.

The operator's `op-<n>` goes to ring0, which sends `hop 1 op-<n>` to ring1; ring<i> sends
`hop <i+1> op-<n>` on to the next, and the last one sends `hop <N> op-<n>` back to ring0,
which ends the lap (nothing more is owed). Each hop's text is new: the host refuses a
verbatim forward of a peer's message. One op makes N + 1 bus rows.

This is issue 30's failure case: "an 8-panel ring fed a burst stalled silently with about
650 of 2,400 messages never sent and nothing left pending". A burst at ring0 is more than a
turn may answer, and every panel's inbox fills in turn as the burst goes round.

Faults (`plan_ring_faults`): the panel half way round is chatty (each even op also gets a
`note <i+1> op-<n>` to the next panel, which needs nothing), so its full batches ask for
more sends than a turn may make and follow-up turns are owed; ring0 raises on two ops and
the panel before it on one, once each.
"""

from __future__ import annotations

import re

from soak_driver import FOLLOW_UP, OP_LINE, Faults, follow_up_sends

PREFIX = "ring"
HOP = re.compile(r"\bhop (\d+) op-(\d+)\b")  # in a peer message's JSON fence


def ring_names(size: int) -> tuple[str, ...]:
    return tuple(f"{PREFIX}{i}" for i in range(size))


def ring_size(panels: tuple[str, ...]) -> int:
    """N when `panels` are exactly ring0..ring<N-1>, else 0 (another team)."""
    return len(panels) if panels and panels == ring_names(len(panels)) else 0


def hop_text(hop: int, n: int) -> str:
    return f"hop {hop} op-{n}"


def ring_note(hop: int, n: int) -> str:
    return f"note {hop} op-{n}"


def _index(panel: str) -> int:
    return int(panel.removeprefix(PREFIX))


def _hops_here(panel: str, text: str, size: int) -> list[tuple[int, int]]:
    """(hop number, op) of each message this panel is to pass on, in input order: ring0's
    operator lines (hop 0) and every panel's `hop <i> op-<n>` from the one before it (a lap
    back at ring0 is not passed on)."""
    index = _index(panel)
    found: list[tuple[int, int]] = []
    if index == 0:
        found += [(0, int(n)) for n in OP_LINE.findall(text)]
    found += [(int(h), int(n)) for h, n in HOP.findall(text) if int(h) == index and int(h) < size]
    return list(dict.fromkeys(found))


def ring_sends(
    panel: str, text: str, size: int, chatty: frozenset[int] = frozenset()
) -> list[tuple[str, str]]:
    """(recipient, text) of every send a turn of `panel` makes for its input. Pure."""
    if text.startswith(FOLLOW_UP):
        return follow_up_sends(text)
    after = f"{PREFIX}{(_index(panel) + 1) % size}"
    sends = []
    for hop, n in _hops_here(panel, text, size):
        sends.append((after, hop_text(hop + 1, n)))
        if n in chatty:
            sends.append((after, ring_note(hop + 1, n)))
    return sends


def ring_ops(panel: str, text: str, size: int) -> list[int]:
    """The op numbers a turn of `panel` passes on (what a planned raise looks for)."""
    return list(dict.fromkeys(n for _, n in _hops_here(panel, text, size)))


def ring_owes(sender: str, recipient: str, text: str, size: int) -> tuple[str, str, str] | None:
    """The message a consumed one owes: (sender, recipient, text), or None (a lap's end, a
    note, anything else)."""
    if recipient.startswith(PREFIX) and (m := OP_LINE.fullmatch(text)):
        hop, n = 0, int(m[1])
        owner = f"{PREFIX}0"
    elif (m := HOP.fullmatch(text)) is not None and int(m[1]) < size:
        hop, n = int(m[1]), int(m[2])
        owner = recipient
    else:
        return None
    return owner, f"{PREFIX}{(hop + 1) % size}", hop_text(hop + 1, n)


def plan_ring_faults(size: int, messages: int) -> Faults:
    """The panel half way round answers even ops twice; ring0 raises once on two ops and
    the panel before it (which closes the lap) on one."""
    spread = [messages * k // 4 for k in (1, 2, 3)]
    raises = {f"{PREFIX}0": frozenset(spread[:2]), f"{PREFIX}{size - 1}": frozenset(spread[2:])}
    chatty = frozenset(n for n in range(messages) if n % 2 == 0)
    return Faults(raises, chatty, chatty_panel=f"{PREFIX}{size // 2}")
