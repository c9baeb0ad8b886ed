"""The catalogue of host events: one frozen dataclass per kind, the only shape events have.

Every writer builds one of these; every reader (`mnemara logs`, `ps`, the REPL face, the demo,
the dashboard) gets them back from `decode`. A row of the event log is `(kind, panel, data)`:
`to_row()` writes the fields as a JSON object with the schema version under `"v"`, and
`decode()` reads it back, checking every field's type. A row this version cannot read (a
kind it does not know, a newer version, a field of the wrong type) comes back as an
`UnknownEvent` that readers show as such, never as a crash and never as a dict repr.

Text from models, peers and tools in these events is untrusted: readers escape it.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar, Union

EVENT_SCHEMA = 1

E = TypeVar("E", bound="HostEvent")


@dataclass(frozen=True, kw_only=True)
class HostEvent:
    """One thing that happened in a host. `panel` is None for the host itself."""

    kind: ClassVar[str] = ""
    registry: ClassVar[dict[str, type[HostEvent]]] = {}
    panel: str | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.kind:
            if cls.kind in HostEvent.registry:
                raise TypeError(f"two event classes for kind {cls.kind!r}")
            HostEvent.registry[cls.kind] = cls

    def to_row(self) -> tuple[str, str | None, dict[str, Any]]:
        data: dict[str, Any] = {"v": EVENT_SCHEMA}
        for f in dataclasses.fields(self):
            if f.name != "panel":
                data[f.name] = _plain(getattr(self, f.name))
        return self.kind, self.panel, data


@dataclass(frozen=True, kw_only=True)
class UnknownEvent(HostEvent):
    """A row this version of mnemara cannot read as a typed event."""

    stored_kind: str
    why: str


# -- the host -----------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class HostStarted(HostEvent):
    kind = "host_started"
    team: str
    bus: str
    pid: int
    life: str = ""  # this life's id, written with the pid (`up` waits for this life's ready)


@dataclass(frozen=True, kw_only=True)
class HostReady(HostEvent):
    kind = "host_ready"
    panels: tuple[str, ...]
    life: str = ""


@dataclass(frozen=True, kw_only=True)
class OrphansSwept(HostEvent):
    """Processes an earlier life of this host left behind (CLI turns and their children),
    killed as this life started."""

    kind = "orphans_swept"
    pids: tuple[int, ...]
    commands: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class HostStopping(HostEvent):
    kind = "host_stopping"
    grace: float


@dataclass(frozen=True, kw_only=True)
class HostStopped(HostEvent):
    kind = "host_stopped"


@dataclass(frozen=True, kw_only=True)
class LeaseTakenOver(HostEvent):
    """The host leased an instance whose previous owner had died without releasing it."""

    kind = "lease_taken_over"
    instance: str
    previous: str


# -- a panel's life -----------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class PanelStarted(HostEvent):
    kind = "panel_started"
    epoch: int
    instance: str
    model: str
    created: bool


@dataclass(frozen=True, kw_only=True)
class PanelFailed(HostEvent):
    kind = "panel_failed"
    error: str
    ran_for: float
    failures: int
    permanent: bool = False  # a restart would not help (a corrupt file): the panel stops


@dataclass(frozen=True, kw_only=True)
class PanelRestarting(HostEvent):
    kind = "panel_restarting"
    delay: float
    streak: int


@dataclass(frozen=True, kw_only=True)
class PanelGivenUp(HostEvent):
    kind = "panel_given_up"
    reason: str


@dataclass(frozen=True, kw_only=True)
class StateChanged(HostEvent):
    kind = "state"
    state: str
    detail: str


# -- a turn -------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Delivered(HostEvent):
    """A turn took these messages (operator input and peer messages)."""

    kind = "delivery"
    turn: int
    ids: tuple[int, ...]
    senders: tuple[str, ...]
    stale_ids: tuple[int, ...] = ()
    bus: str = ""  # the identity of the bus the ids are on ("": written before it was kept)


@dataclass(frozen=True, kw_only=True)
class RedeliverySkipped(HostEvent):
    """Messages delivered again although a committed turn had consumed them: acked, not run."""

    kind = "redelivery_skipped"
    ids: tuple[int, ...]
    turns: tuple[int, ...] = ()  # the input rows of the turns that consumed them


@dataclass(frozen=True, kw_only=True)
class TurnStarted(HostEvent):
    kind = "turn_started"
    turn: int
    input: str


@dataclass(frozen=True, kw_only=True)
class TextDelta(HostEvent):
    """A piece of streamed text: given to live listeners only, never stored."""

    kind = "text_delta"
    text: str


@dataclass(frozen=True, kw_only=True)
class Said(HostEvent):
    """Streamed text, coalesced into one stored event."""

    kind = "text"
    text: str


@dataclass(frozen=True, kw_only=True)
class ToolCalled(HostEvent):
    kind = "tool_call"
    id: str
    tool: str
    input: str


@dataclass(frozen=True, kw_only=True)
class ToolAnswered(HostEvent):
    kind = "tool_result"
    id: str
    error: bool
    content: str


@dataclass(frozen=True, kw_only=True)
class Warned(HostEvent):
    kind = "warning"
    message: str


@dataclass(frozen=True, kw_only=True)
class WindowTrimmed(HostEvent):
    kind = "trimmed"
    evicted: tuple[int, ...]
    forced: tuple[int, ...]


@dataclass(frozen=True, kw_only=True)
class TurnStored(HostEvent):
    kind = "turn_committed"
    user_row: int
    rows: tuple[int, ...]


@dataclass(frozen=True, kw_only=True)
class Settled(HostEvent):
    kind = "settled"
    acked: tuple[int, ...]
    released: tuple[int, ...]


@dataclass(frozen=True, kw_only=True)
class TurnEnded(HostEvent):
    kind = "turn_ended"
    turn: int
    outcome: str  # done, failed, stopped, refused
    error: str | None
    tool_calls: int
    input_tokens: int
    output_tokens: int
    usd: float


# -- the bus --------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class MessageQueued(HostEvent):
    """A turn's send, written to the panel's outbox; it goes out once the turn is stored."""

    kind = "send_queued"
    to: str
    outbox: str  # the outbox id the model was given
    topic: str | None
    terminal: bool
    text: str


@dataclass(frozen=True, kw_only=True)
class MessageSent(HostEvent):
    """A message on the bus: a turn's outbox entry published, or a host's own send."""

    kind = "send"
    to: str
    id: int
    topic: str | None
    terminal: bool
    text: str
    outbox: str = ""  # the outbox id it was queued as, if it came from a turn


@dataclass(frozen=True, kw_only=True)
class SendFailed(HostEvent):
    """An outbox entry the bus refused for good (it will not be tried again)."""

    kind = "send_failed"
    to: str
    outbox: str
    reason: str


@dataclass(frozen=True, kw_only=True)
class DeadLettered(HostEvent):
    """A message given up for a panel: `mnemara bus dead` lists it, `bus retry` revives it."""

    kind = "dead_letter"
    id: int
    reason: str
    sender: str = ""  # unknown for a row the bus refused as it claimed (bad payload)


@dataclass(frozen=True, kw_only=True)
class AckSent(HostEvent):
    kind = "ack_sent"
    to: str
    ack_of: int
    id: int


@dataclass(frozen=True, kw_only=True)
class DigestSent(HostEvent):
    kind = "digest"
    id: int
    alerts: tuple[str, ...]


# -- halts, the guard, approvals -----------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Halted(HostEvent):
    """A panel was halted: by the guard (`by` is its source) or by an operator or watchdog."""

    kind = "halt"
    by: str
    source: str
    rule: str
    message: str
    turn: int


@dataclass(frozen=True, kw_only=True)
class LoopFlagged(HostEvent):
    """A team-level loop rule flagged an edge without halting anything (panels/host/loops/graph.py):
    `edge` as "a -> b", `ids` the messages that are the evidence."""

    kind = "loop_flag"
    rule: str
    edge: str
    ids: tuple[int, ...]
    message: str


@dataclass(frozen=True, kw_only=True)
class ShadowHalt(HostEvent):
    """What the sentinel would have halted, in shadow mode; nothing was stopped."""

    kind = "sentinel"
    rule: str
    message: str
    turn: int


@dataclass(frozen=True, kw_only=True)
class Resumed(HostEvent):
    kind = "resumed"
    by: str
    rule: str | None  # the halt that was lifted, if any


@dataclass(frozen=True, kw_only=True)
class ApprovalAsked(HostEvent):
    kind = "approval_request"
    request: int
    tool: str
    target: str
    reason: str
    always_offered: bool
    remember: tuple[str, ...]
    timeout: float


@dataclass(frozen=True, kw_only=True)
class ApprovalAnswered(HostEvent):
    kind = "approval_answer"
    request: int
    answer: str  # yes, no, session, always, or "timed out (denied)"


@dataclass(frozen=True, kw_only=True)
class AlertRaised(HostEvent):
    """The operator is called back (panels/host/alerts/): a panel waits for an approval
    ("approval"), was halted ("halted"), failed for good ("failed"), or the team went quiet
    with work done ("quiet", `panel` None: the team's). `text` is one line saying what to do.
    `cause` is the id of the event it answers (0 for "quiet"); `bell` and `desktop` are the
    team's `[team.alerts]` settings, so a dashboard rings as the team file says."""

    kind = "alert"
    alert: str  # approval, halted, failed, quiet
    text: str
    cause: int = 0
    bell: bool = True
    desktop: bool = True


# -- the operator's and the watchdog's verbs ------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class InboxSwitched(HostEvent):
    kind = "inbox"
    on: bool


@dataclass(frozen=True, kw_only=True)
class ModelChanged(HostEvent):
    kind = "model"
    model: str


@dataclass(frozen=True, kw_only=True)
class WindowTokensChanged(HostEvent):
    kind = "tokens"
    max_window_tokens: int


@dataclass(frozen=True, kw_only=True)
class CheckpointTaken(HostEvent):
    """The panel's writable areas were checkpointed before its turn (runtime/checkpoint/):
    `number` is what `mnemara rewind --turn` takes to go back to before that turn."""

    kind = "checkpoint"
    number: int
    turn: int
    changed: int  # files added, changed or removed since the checkpoint before
    ms: float
    dropped: int = 0  # older checkpoints pruned after it


@dataclass(frozen=True, kw_only=True)
class VerbApplied(HostEvent):
    """A verb (from the control table, the REPL or a watchdog) and what came of it."""

    kind = "command"
    id: int | None  # the control table's id; None for a verb given in-process
    verb: str
    by: str
    summary: str  # the verb's arguments, in one line
    text: str = ""  # the words of an input or a nudge, whole
    message: int | None = None  # the bus message an input or a nudge became
    bus: str = ""  # the identity of the bus `message` is on
    ok: bool
    outcome: str


# -- reading ---------------------------------------------------------------------------------------


def decode(kind: str, panel: str | None, data: Mapping[str, Any]) -> HostEvent:
    """The typed event for a stored row; an `UnknownEvent` for what this version cannot read."""
    cls = HostEvent.registry.get(kind)
    if cls is None:
        return UnknownEvent(panel=panel, stored_kind=kind, why="a kind this version does not know")
    version = data.get("v", EVENT_SCHEMA)
    if not isinstance(version, int) or version > EVENT_SCHEMA:
        return UnknownEvent(panel=panel, stored_kind=kind, why=f"schema version {version!r}")
    values: dict[str, Any] = {}
    hints = _hints(cls)
    for f in dataclasses.fields(cls):
        if f.name == "panel":
            continue
        if f.name not in data:
            if f.default is dataclasses.MISSING:
                return UnknownEvent(panel=panel, stored_kind=kind, why=f"no field {f.name!r}")
            continue
        ok, value = _coerce(data[f.name], hints[f.name])
        if not ok:
            return UnknownEvent(panel=panel, stored_kind=kind, why=f"field {f.name!r} is malformed")
        values[f.name] = value
    return cls(panel=panel, **values)


_HINTS: dict[type[HostEvent], dict[str, Any]] = {}


def _hints(cls: type[HostEvent]) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _coerce(value: Any, hint: Any) -> tuple[bool, Any]:
    """(True, value as `hint`) when `value` (from JSON) fits the type, else (False, None)."""
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        for option in typing.get_args(hint):
            ok, out = _coerce(value, option)
            if ok:
                return True, out
        return False, None
    if hint is type(None):
        return value is None, None
    if origin is tuple:
        (item,) = typing.get_args(hint)[:1]
        if not isinstance(value, list | tuple):
            return False, None
        items = [_coerce(v, item) for v in value]
        return all(ok for ok, _ in items), tuple(v for _, v in items)
    if hint is bool:
        return isinstance(value, bool), value
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool), value
    if hint is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return ok, float(value) if ok else None
    if hint is str:
        return isinstance(value, str), value
    return False, None


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def kinds() -> dict[str, type[HostEvent]]:
    """Every kind this version writes, with its class."""
    return dict(HostEvent.registry)


def of_kind(events: list[HostEvent], cls: type[E]) -> list[E]:
    return [e for e in events if isinstance(e, cls)]
