"""The catalogue of verbs: every operator (and watchdog) action on a host, as a typed command.

The CLI writes verbs into the control table, the REPL and the watchdog's tools give them to
the host in-process, the dashboard will write them too; the host applies them all with one
dispatcher (panels/host/control/dispatch.py). A verb crosses a process boundary, so it is a strict
pydantic model: `parse_verb` refuses an unknown verb, an unknown or missing argument, a value
of the wrong type or out of range, with a `VerbError` that says what is wrong. Nothing is
ever defaulted from a bad value: an answer that is not yes, no, session or always is refused.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from panels.errors import VerbError as VerbError  # defined there, re-exported here
from runtime.policy.asking import Answer

EvictWhat = Literal["tools", "thinking", "writes", "user", "assistant", "oldest", "newest", "rows"]
MAX_TEXT = 256 * 1024


class Verb(BaseModel):
    """One command. `panel` names the panel it acts on (None for the host's own verbs)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    name: ClassVar[str] = ""
    registry: ClassVar[dict[str, type[Verb]]] = {}
    # Verbs that change a panel's window or files wait until no turn runs on the panel.
    window: ClassVar[bool] = False
    panel: str | None = None

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        if cls.name:
            Verb.registry[cls.name] = cls

    def args(self) -> dict[str, Any]:
        """The arguments as the control table stores them."""
        return self.model_dump(mode="json", exclude={"panel"})

    def summary(self) -> str:
        """The verb's arguments on one line (long texts shortened; unset ones left out)."""
        parts = []
        for key, value in self.args().items():
            if value is None or value is False or value == "":
                continue
            shown = value if not isinstance(value, str) else _short(value)
            parts.append(f"{key}={shown}")
        return " ".join(str(p) for p in parts)


def _short(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[: limit - 1] + "…")


class PanelVerb(Verb):
    panel: str | None = Field(default=None, min_length=1)


# -- talking to a panel ----------------------------------------------------------------------


class Input(PanelVerb):
    """Operator input: a turn's words. Applied, it is a message on the panel's operator route;
    its ticket completes when the turn that took it ends."""

    name = "input"
    text: str = Field(min_length=1, max_length=MAX_TEXT)


class AnswerRequest(Verb):
    """The operator's answer to a tool call a panel is waiting on (`mnemara approve/deny`).
    Without `request`, the panel's only open question (refused when there are several)."""

    name = "answer"
    request: int | None = Field(default=None, ge=1)
    # The policy's own type; not strict, so the stored value ("yes") reads back as the answer.
    answer: Answer = Field(strict=False)


class Nudge(PanelVerb):
    """A short note to a panel, as a bus message from whoever gives the verb (a watchdog)."""

    name = "nudge"
    text: str = Field(min_length=1, max_length=MAX_TEXT)


# -- a panel's run ------------------------------------------------------------------------------


class Pause(PanelVerb):
    name = "pause"
    reason: str = Field(default="", max_length=4_000)


class Resume(PanelVerb):
    name = "resume"


class Halt(PanelVerb):
    name = "halt"
    reason: str = Field(default="", max_length=4_000)


class Stop(PanelVerb):
    """Stop the turn in flight (its rows are kept, marked); the panel goes on."""

    name = "stop"


class Shutdown(Verb):
    name = "shutdown"


class SetModel(PanelVerb):
    name = "model"
    model: str = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9._:@/-]+$")
    save: bool = False  # also write it into the instance's config.json


class SetTokens(PanelVerb):
    name = "tokens"
    max_window_tokens: int = Field(ge=1_000, le=10_000_000)
    save: bool = False


class SetInbox(PanelVerb):
    """Switch the delivery of peer messages on or off (the original's inbox toggle)."""

    name = "inbox"
    on: bool


# -- the bus ------------------------------------------------------------------------------------


class SetName(PanelVerb):
    """The label shown for the panel's replies (the config's `display_name`; the original's
    `/name`); an empty label clears it. Saved to the instance's config.json."""

    name = "name"
    label: str = Field(default="", max_length=40, pattern=r"^[^\x00-\x1f\x7f]*$")


class Retry(Verb):
    """Put a dead letter (message `id`, for every recipient that gave it up) back in the
    queue with a fresh attempt count, as `mnemara bus retry ID` does. Team-wide: no panel."""

    name = "retry"
    id: int = Field(ge=1)


# -- a panel's window and files (applied between turns) -----------------------------------------


class WindowVerb(PanelVerb):
    window = True


class Evict(WindowVerb):
    """Strip or drop rows: tool bodies, thinking, write pairs, every user or assistant row,
    the `count` oldest / newest rows, or the rows `row_ids` names (what="rows"). Pinned rows
    are never touched."""

    name = "evict"
    what: EvictWhat
    count: int | None = Field(default=None, ge=1)
    row_ids: list[Annotated[int, Field(ge=1)]] | None = Field(
        default=None, min_length=1, max_length=10_000
    )


class Pin(WindowVerb):
    name = "pin"
    row_id: int = Field(ge=1)


class Unpin(WindowVerb):
    name = "unpin"
    row_id: int = Field(ge=1)


class Compress(WindowVerb):
    """Shrink the window to `target_tokens` (default: a quarter of now), or with `reads`,
    stub older reads of a file that was read again."""

    name = "compress"
    target_tokens: int | None = Field(default=None, ge=1_000)
    reads: bool = False


class Clear(WindowVerb):
    name = "clear"
    all: bool = False  # also pinned rows and slots


class SetSlot(WindowVerb):
    """Set a slot's value (created when missing); `content` None removes it."""

    name = "slot"
    label: str = Field(min_length=1, max_length=200)
    content: str | None = Field(default=None, max_length=MAX_TEXT)


class Export(WindowVerb):
    name = "export"
    path: str = Field(min_length=1, max_length=4_096)


class Import(WindowVerb):
    name = "import"
    path: str = Field(min_length=1, max_length=4_096)
    replace: bool = False


class SetRole(WindowVerb):
    """Point the panel at another role doc (`path`), or rewrite its role doc (`text`)."""

    name = "role"
    path: str | None = Field(default=None, min_length=1, max_length=4_096)
    text: str | None = Field(default=None, max_length=1024 * 1024)
    save: bool = False


class Note(WindowVerb):
    name = "note"
    text: str = Field(min_length=1, max_length=MAX_TEXT)
    category: str = Field(default="note", min_length=1, max_length=100)


class Rewind(WindowVerb):
    """Bring the panel's writable areas back to checkpoint `turn` (the number `mnemara rewind
    --list` shows; each is taken before a turn), or to the latest turn's when None. Applied
    while no panel of the team runs a turn; the operator's only."""

    name = "rewind"
    turn: int | None = Field(default=None, ge=1)


# -- reading ---------------------------------------------------------------------------------


def parse_verb(name: str, panel: str | None, args: Any) -> Verb:
    """The verb a control-table row (or any other caller) names; `VerbError` when it is not
    one, with the reason."""
    cls = Verb.registry.get(name)
    if cls is None:
        known = ", ".join(sorted(Verb.registry))
        raise VerbError(f"unknown verb {name!r}; one of {known}")
    if not isinstance(args, dict):
        raise VerbError(f"{name}: the arguments must be an object")
    if isinstance(cls, type) and issubclass(cls, PanelVerb) and not panel:
        raise VerbError(f"{name}: name the panel")
    try:
        verb = cls.model_validate({"panel": panel, **args})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "arguments"
        raise VerbError(f"{name}: {where}: {first['msg']}") from None
    if isinstance(verb, SetRole) and (verb.path is None) == (verb.text is None):
        raise VerbError("role: give either path or text")
    return verb


def verbs() -> dict[str, type[Verb]]:
    return dict(Verb.registry)
