"""What every face says while a panel's tools run outside the sandbox. Pure.

Unconfined (the sandbox turned off, or bubblewrap missing under `auto`) the permission
policy keeps its strict rules, and a command they allow runs with the operator's full
rights. So `up` (detached too), `run`, `ps`, every pane of the dashboard and its web page say
it, in the words of `warning`. The host records what they need in host.sqlite, where a face in
another process reads it: each panel's state in its status row (`PanelRow.sandbox`, from
`tools_state` of its driver) and the host's note, why and what to do (`told`), in the meta
value `META_KEY`.
"""

from __future__ import annotations

from collections.abc import Sequence

from panels.hostdb.status import TOOLS_SANDBOXED, TOOLS_UNCONFINED, PanelRow
from panels.team import TeamSpec

UNCONFINED = "tools run unconfined"  # how the host's note begins (panels/host/turns/confine.py)
META_KEY = "sandbox"  # host.sqlite meta: the host's note (told), "" when it built no drivers
# Said when no note says more: a driver given to the host by its caller, without a sandbox.
PLAIN = f"{UNCONFINED} (with your full rights): the panel's driver has no sandbox"


def tools_state(driver: object) -> str:
    """A panel's `PanelRow.sandbox` for its driver. A driver that starts the Claude Code CLI
    carries its `sandbox` (None: unconfined; runtime/claude); any other (a scripted one)
    starts no tools of its own, so there is nothing to say: ""."""
    if not hasattr(driver, "sandbox"):
        return ""
    return TOOLS_UNCONFINED if driver.sandbox is None else TOOLS_SANDBOXED


def told(note: str, team: TeamSpec) -> str:
    """The host's sandbox note (confine.team_sandbox's) with what to do about it, when it
    says the tools run unconfined; any other note as it is."""
    if not note.startswith(UNCONFINED):
        return note
    where = f" in {team.source}" if team.source is not None else ""
    if team.sandbox.mode == "off":
        fix = (
            f'set sandbox = "auto" under [team]{where} to confine them'
            if team.source is not None
            else "leave out --sandbox off to confine them"
        )
        fix = f"what the permission rules allow runs with your full rights; {fix}"
    else:
        fix = (
            f'or set sandbox = "required" under [team]{where} to refuse to start without it'
            if team.source is not None
            else "or give --sandbox required to refuse to start without it"
        )
    return f"{note}; {fix}"


def unconfined_panels(rows: Sequence[PanelRow]) -> list[str]:
    """The panels whose status rows say their tools run unconfined."""
    return [r.name for r in rows if r.sandbox == TOOLS_UNCONFINED]


def warning(note: str, rows: Sequence[PanelRow]) -> str | None:
    """The line a face shows while tools run unconfined, or None. `note` is the host's (its
    meta value), `rows` the panels' status. A panel's row decides; before any row says, the
    note does (a host whose panels have not started yet)."""
    known = [r for r in rows if r.sandbox]
    if known:
        names = unconfined_panels(known)
        if not names:
            return None
        said = note if note.startswith(UNCONFINED) else PLAIN
        if len(names) < len(known):  # some confined, some not: say which
            said = f"{', '.join(names)}: {said}"
        return said
    return note if note.startswith(UNCONFINED) else None


def badge(row: PanelRow | None) -> str:
    """A pane's mark: UNCONFINED, sandboxed, or "" when it is not known."""
    if row is None or not row.sandbox:
        return ""
    return "UNCONFINED" if row.sandbox == TOOLS_UNCONFINED else TOOLS_SANDBOXED
