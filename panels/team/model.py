"""The team file's shape: pydantic models for the team, its bus, budgets and panels.

A boundary model (STYLE.md 6): the TOML is validated here once, then the host works with the
frozen `TeamSpec` that `load.py` builds from it. Unknown keys are errors, so a typo in a
budget name cannot silently leave a panel without its limit. A panel's `[panels.budget]` and
`[panels.sentinel]` are partial: each key is checked like the instance setting it overrides,
and only the keys given are kept, to be merged with the instance's own (`limits.py`).
What needs the whole file or the disk (unknown senders, missing role docs) is in `checks.py`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from copy import copy
from typing import TYPE_CHECKING, Annotated, Any, Literal, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    create_model,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from peerbus.errors import BusLocationError
from peerbus.location import parse_location
from runtime.instance.config import ToolPolicy
from runtime.instance.guard_settings import BudgetSettings, SentinelSettings

# A panel name is both a bus role and an instance name: the intersection of the two rules.
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
SENDER_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,63}"
# Senders the host itself writes as; a panel cannot take their names.
RESERVED_NAMES = frozenset({"operator", "host"})
KNOWN_KINDS = ("worker", "watchdog", "producer")
# An allow-list entry of `[team] network`: a host name with an optional port.
NETWORK_HOST_PATTERN = r"^[A-Za-z0-9]([A-Za-z0-9.-]{0,252})(:[0-9]{1,5})?$"
NetworkHost = Annotated[str, Field(pattern=NETWORK_HOST_PATTERN)]
# The error type of `TeamModel`'s own uniqueness check; load.py reports duplicates itself,
# with the line of the second use, and skips this one.
DUPLICATE_ERROR = "duplicate_panel"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Overrides(_Model):
    """Some fields of a settings model, each validated alone; `given()` has those set."""

    def given(self) -> dict[str, Any]:
        return self.model_dump(include=set(self.model_fields_set))


def overrides_of(settings: type[BaseModel], name: str) -> type[Overrides]:
    """A model with the fields (types, bounds, defaults) of `settings` but not its model
    validators: a rule across fields can only be checked once merged with the instance."""
    fields: dict[str, Any] = {
        key: (info.annotation, copy(info)) for key, info in settings.model_fields.items()
    }
    doc = f"Overrides of `{settings.__name__}` fields; only the keys given are applied."
    return create_model(name, __base__=Overrides, __doc__=doc, **fields)


if TYPE_CHECKING:
    # Built at runtime from the settings models (one representation of each field); to the
    # type checker they are plain `Overrides`.
    SentinelOverrides = Overrides
    BudgetOverrides = Overrides
else:
    SentinelOverrides = overrides_of(SentinelSettings, "SentinelOverrides")
    BudgetOverrides = overrides_of(BudgetSettings, "BudgetOverrides")


def _sender(value: str) -> str:
    if not re.fullmatch(SENDER_PATTERN, value):
        raise ValueError(f"{value!r} is not a sender name (letters, digits, . _ : @ -)")
    return value


class TeamBudget(_Model):
    """Limits across all panels of the team; None means no limit."""

    max_tokens: int | None = Field(default=None, ge=1)
    max_usd: float | None = Field(default=None, gt=0)


class TeamLoops(Overrides):
    """`[team.loops]`: the team-level loop rules' thresholds (panels/host/loops/rules.py, whose
    `LoopSettings` holds the defaults and says what each bounds); only the keys given apply,
    so a key left out keeps the rule's default."""

    enabled: bool | None = None
    ping_pong_exchanges: int | None = Field(default=None, ge=2, le=1000)
    ping_pong_window: float | None = Field(default=None, gt=0, le=86_400)
    substantive_chars: int | None = Field(default=None, ge=1, le=100_000)  # ignored
    novelty: float | None = Field(default=None, ge=0.0, le=1.0)
    novel_units: int | None = Field(default=None, ge=1, le=1000)
    ack_chain: int | None = Field(default=None, ge=2, le=1000)
    ack_window: float | None = Field(default=None, gt=0, le=86_400)
    ack_max_chars: int | None = Field(default=None, ge=1, le=10_000)
    cascade_generations: int | None = Field(default=None, ge=2, le=1000)
    cascade_window: float | None = Field(default=None, gt=0, le=86_400)
    rate_messages: int | None = Field(default=None, ge=1, le=100_000)
    rate_halt_ratio: float | None = Field(default=None, gt=1.0, le=100.0)
    rate_window: float | None = Field(default=None, gt=0, le=86_400)


class TeamCheckpoints(Overrides):
    """`[team.checkpoints]`: how each panel's files are checkpointed before its turns
    (runtime/checkpoint/model.py, whose `CheckpointSettings` holds the defaults and says what
    each key means); only the keys given apply."""

    enabled: bool | None = None
    keep: int | None = Field(default=None, ge=1, le=10_000)
    max_age_days: float | None = Field(default=None, gt=0, le=3_650)
    max_file_mb: float | None = Field(default=None, gt=0, le=1_000_000)
    max_files: int | None = Field(default=None, ge=1, le=100_000_000)
    required: bool | None = None


class SendLimits(_Model):
    """`[team.sends]`: what one panel may send (panels/host/delivery/sendlimit.py checks every send
    against these): `per_turn` sends in one turn and `per_window` in any `window` seconds,
    acks included, and one text at most `max_copies` times in `window` seconds. A turn takes
    no more messages than `per_turn` (each may need its reply), so `per_turn` also bounds
    every panel's batch."""

    per_turn: int = Field(default=10, ge=1, le=500)
    per_window: int = Field(default=60, ge=1)
    window: float = Field(default=300.0, gt=0, le=86_400)
    max_copies: int = Field(default=2, ge=1)

    @model_validator(mode="after")
    def _workable(self) -> Self:
        if self.per_turn > self.per_window:
            raise ValueError(
                f"per_turn = {self.per_turn} is more than per_window = {self.per_window}: a turn "
                "could never send what it may; lower per_turn or raise per_window"
            )
        return self


class ExternalAgent(_Model):
    """One `[team.external.<name>]` table: an agent outside the team (an MCP client, through
    `mnemara mcp --as <name>`) that may message the panels named in `writes_to` ("*": every
    panel) and read its own inbox. It is a bus participant like a panel, never the operator:
    it cannot write on an operator route or answer an approval."""

    writes_to: list[str] = Field(min_length=1)  # panel names, checked against the file
    # The largest message it may send, in characters (the bus's own payload cap still holds).
    max_chars: int = Field(default=16_000, ge=1, le=1_000_000)


class TeamAlerts(_Model):
    """`[team.alerts]`: how the operator is called back when a panel waits for an approval,
    halts or fails for good, or the team goes quiet with work done (panels/host alerts)."""

    enabled: bool = True
    bell: bool = True  # the dashboard rings the terminal bell
    desktop: bool = True  # OSC 9/777 notifications in the dashboard; notify-send with a desktop
    webhook: str | None = None  # an http(s) URL: a JSON POST per alert
    # The team counts as quiet after this many seconds with no turn running and nothing pending.
    quiet_seconds: float = Field(default=60.0, gt=0, le=86_400)
    # At most one alert of a kind for a panel in this many seconds (each event alerts once).
    min_interval_seconds: float = Field(default=30.0, ge=0, le=86_400)

    @field_validator("webhook")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"https?://[^\s/]+\S*", value):
            raise ValueError(f"{value!r} is not an http:// or https:// URL")
        return value


class BatchSettings(_Model):
    """How a panel's pending messages are taken: one batch per turn, within these limits.
    A turn takes at most `[team.sends] per_turn` messages, operator input included, whatever
    `max_messages` says; a `max_messages` above it is refused (checks.py)."""

    enabled: bool = True  # false: one message per turn (the original's peer_poll_batch)
    max_messages: int = Field(default=10, ge=1, le=500)
    max_tokens: int = Field(default=8_000, ge=100, le=200_000)


class PanelModel(_Model):
    """One `[[panels]]` table."""

    name: str = Field(pattern=NAME_PATTERN)
    instance: str | None = Field(default=None, pattern=NAME_PATTERN)
    role: str | None = None
    model: str | None = None
    kind: str = "worker"
    listens_to: list[Annotated[str, AfterValidator(_sender)]] | None = None
    paused: bool = False
    batch: BatchSettings = Field(default_factory=BatchSettings)
    runtime_sentinel: bool | None = None  # None: the instance's own switch
    budget: BudgetOverrides | None = None
    sentinel: SentinelOverrides | None = None
    policy: list[ToolPolicy] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        if value in RESERVED_NAMES:
            raise ValueError(f"{value!r} is reserved for the host's own messages")
        return value

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, value: str) -> str:
        if value not in KNOWN_KINDS:
            raise ValueError(f"unknown kind {value!r}; use one of {', '.join(KNOWN_KINDS)}")
        return value


class TeamSection(_Model):
    """The `[team]` table."""

    name: str = Field(pattern=NAME_PATTERN)
    # None: <home>/_teams/<name>/bus.sqlite; else a path (a foreign file is fine), a
    # sqlite:/// URL or a postgresql:// URL (peerbus.location).
    bus: str | None = None
    workdir: str | None = None  # panels' working directory; None: the team file's directory
    rehearsal: str | None = None  # a rehearsal script: run offline against the rehearsal model
    max_concurrent_turns: int = Field(default=2, ge=1, le=64)
    # Warm spares: CLIs started ahead of a panel's next turn (runtime/claude/spare.py), at most
    # this many per host, for the panels that ran most recently; 0 turns them off.
    warm_spares: int = Field(default=2, ge=0, le=16)
    digest_interval_seconds: float = Field(default=30.0, gt=0)
    approval_timeout_seconds: float = Field(default=300.0, gt=0)
    # The digest calls a turn with this many tool calls a runaway (an alert for the watchdog).
    runaway_tool_calls: int = Field(default=8, ge=2)
    budget: TeamBudget = Field(default_factory=TeamBudget)
    loops: TeamLoops = Field(default_factory=TeamLoops)
    checkpoints: TeamCheckpoints = Field(default_factory=TeamCheckpoints)
    sends: SendLimits = Field(default_factory=SendLimits)
    # "shared": the panels also get a team wiki, graph and search index, kept under
    # <home>/_teams/<name>/memory, where a halted turn's writes are quarantined.
    memory: Literal["own", "shared"] = "own"
    # The OS sandbox around every panel's tools (runtime/sandbox/): "auto" uses it when
    # bubblewrap works here, "required" refuses to start without it, "off" never uses it.
    sandbox: Literal["auto", "required", "off"] = "auto"
    # What commands inside it may reach: "off" (nothing), "model" (the model endpoint), or
    # a list of HTTPS hosts ("host" or "host:port") on top of the model endpoint.
    network: Literal["off", "model"] | list[NetworkHost] = "off"
    # Directories the panels may read, or write, beyond their working directory.
    readable: list[str] = Field(default_factory=list)
    writable: list[str] = Field(default_factory=list)
    # Agents outside the team that may message it over MCP, by name (`mnemara mcp --as NAME`).
    external: dict[Annotated[str, Field(pattern=NAME_PATTERN)], ExternalAgent] = Field(
        default_factory=dict
    )
    alerts: TeamAlerts = Field(default_factory=TeamAlerts)

    @field_validator("bus")
    @classmethod
    def _known_bus(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                parse_location(value)
            except BusLocationError as exc:
                raise ValueError(str(exc)) from None
        return value


def find_duplicates(panels: Sequence[tuple[str, str]]) -> list[tuple[int, str, str, int]]:
    """(index, "name" or "instance", value, index of the first use) for each panel that reuses
    an earlier panel's name or instance; `panels` is (name, instance) in file order. Pure."""
    found: list[tuple[int, str, str, int]] = []
    first: dict[tuple[str, str], int] = {}
    for index, (name, instance) in enumerate(panels):
        for key, value in (("name", name), ("instance", instance)):
            earlier = first.setdefault((key, value), index)
            if earlier != index:
                found.append((index, key, value, earlier))
    return found


class TeamModel(_Model):
    """The whole file."""

    team: TeamSection
    panels: list[PanelModel] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> Self:
        found = find_duplicates([(p.name, p.instance or p.name) for p in self.panels])
        if found:
            index, key, value, earlier = found[0]
            message = f"panels[{index}]: {key} {value!r} is already used by panels[{earlier}]"
            raise PydanticCustomError(DUPLICATE_ERROR, "{message}", {"message": message})
        return self
