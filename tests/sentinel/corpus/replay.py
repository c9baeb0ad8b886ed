"""Replays the labelled sentinel corpus through the real `Sentinel`, in a simulated world.

Used by tests/sentinel/test_corpus.py and bench/sentinel_corpus.py. Nothing here touches the
disk but the corpus files: the world is a dict of file contents, hashed for real (sha256)
the way world.py hashes files, so an identical rewrite hashes the same; the files a call
touches are found by the real `touched_paths` (Bash words included) and measured before
every call and at the end of every turn, as the guard does; contents are hashed with their
timestamps masked and bookkeeping files are left out of the git digest, as world.py does.

One sequence per TOML file:

    description = "what happens"
    label = "legit"              # or "runaway"
    rule = "repeat"              # runaways: the rule that should catch it
    halt_by = "1.3"              # runaways: halted at this call (turn.call, 1-based) at the
                                 # latest, or at the end of a turn ("6.end")
    polling = true               # a polling loop: its 3rd identical call must be refused
    category = "spelling"        # the shape it stands for (default: its rule, or "legit");
                                 # a legitimate look-alike names the shape it looks like
    git = true                   # the world is a git repository (default true)
    ignored = ["build/"]         # paths git ignores
    [files]                      # the files at the start (relative to the repository)
    "src/app.py" = "..."
    [[turns]]                    # a turn: its calls (none: a conversation-only turn)
    external = { write = { "digest.md" = "..." } }   # changed by others before the turn
    [[turns.calls]]
    tool = "Bash"
    input = { command = "pytest -q" }
    error = true                 # the result: is_error and content
    content = "1 failed in 0.2s"
    effect = { write = { "src/app.py" = "..." } }
    seconds = 60                 # how long the call ran (default: the wait it asks for,
                                 # `sleep 60` or a blocking read's timeout, else 1 s)
    external = { append = { "build.log" = "..." } }  # changed by others while it ran

Time: the clock starts at 2026-12-01T00:00Z; each call begins `THINK_S` seconds after the one
before ended (the model's time), and the sentinel reads the clock when the call is judged and
when its result comes back.

Effects: `write`/`append` (path -> text), `delete` (paths), `slots` (label -> value), `stage`
(paths, or "all"), `commit`, `checkout` (paths back to the index), `stash`, `stash_pop`,
`remote` (a new remote-tracking state: fetch or push). A Write, Edit or MultiEdit that did
not fail applies itself (an Edit whose old string is not in the file is a corpus error).
Effects outside the repository (a package installed, a message sent) are invisible, as
they are to the real probe.
"""

from __future__ import annotations

import json
import tomllib
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from runtime.guard.bookkeeping import content_digest, is_bookkeeping
from runtime.guard.calls import call_key, wait_seconds
from runtime.guard.sentinel import Sentinel, WorldState
from runtime.guard.world import touched_paths
from runtime.instance.guard_settings import SentinelSettings
from runtime.turn.driver import ToolCallRequest

CORPUS = Path(__file__).parent
ROOT = "/corpus/repo"
TOUCHED_CAPACITY = 256  # as the guard keeps them
RULES = ("repeat", "alternation", "failing", "no_progress")
END = 10**6  # the position of a turn's end, after all its calls


class CorpusError(Exception):
    """A sequence file is malformed or inconsistent (the message names the file)."""


Position = tuple[int, int]  # (turn, call), 1-based; call END for the end of the turn


def show(position: Position | None) -> str:
    if position is None:
        return "-"
    turn, call = position
    return f"{turn}.end" if call == END else f"{turn}.{call}"


THINK_S = 5.0


@dataclass(frozen=True)
class Call:
    tool: str
    input: dict[str, Any]
    error: bool
    content: str
    effect: Mapping[str, Any]
    seconds: float | None = None
    external: Mapping[str, Any] = field(default_factory=dict)

    @property
    def took(self) -> float:
        if self.seconds is not None:
            return self.seconds
        return wait_seconds(self.tool, self.input) or 1.0


@dataclass(frozen=True)
class Case:
    name: str
    description: str
    label: str
    rule: str | None
    halt_by: Position | None
    polling: bool
    category: str
    git: bool
    ignored: tuple[str, ...]
    files: Mapping[str, str]
    turns: tuple[tuple[Mapping[str, Any], tuple[Call, ...]], ...]  # (external effect, calls)

    @property
    def runaway(self) -> bool:
        return self.label == "runaway"


@dataclass
class Outcome:
    sequence: Case
    halted_at: Position | None = None
    rule: str | None = None
    message: str = ""
    third_identical: Position | None = None
    calls: int = 0
    shadow_records: list[str] = field(default_factory=list)

    @property
    def caught(self) -> bool:
        """Halted, and no later than the labelled point (and, for a polling loop, before its
        third identical call)."""
        by = self.sequence.halt_by
        if self.halted_at is None or by is None or self.halted_at > by:
            return False
        return not self.sequence.polling or (
            self.third_identical is not None and self.halted_at <= self.third_identical
        )


def load(path: Path) -> Case:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise CorpusError(f"{path.name}: {exc}") from exc
    label = data.get("label")
    if label not in ("legit", "runaway"):
        raise CorpusError(f"{path.name}: label must be 'legit' or 'runaway'")
    rule = data.get("rule")
    halt_by = _position(path, data.get("halt_by"))
    if label == "runaway" and (rule not in RULES or halt_by is None):
        raise CorpusError(f"{path.name}: a runaway needs rule (one of {RULES}) and halt_by")
    turns = []
    for turn in data.get("turns", []):
        calls = tuple(
            Call(
                tool=c["tool"],
                input=dict(c.get("input", {})),
                error=bool(c.get("error", False)),
                content=str(c.get("content", "")),
                effect=dict(c.get("effect", {})),
                seconds=c.get("seconds"),
                external=dict(c.get("external", {})),
            )
            for c in turn.get("calls", [])
        )
        turns.append((dict(turn.get("external", {})), calls))
    return Case(
        name=path.stem,
        description=str(data.get("description", "")),
        label=label,
        rule=rule,
        halt_by=halt_by,
        polling=bool(data.get("polling", False)),
        category=str(data.get("category") or (rule if label == "runaway" else "legit")),
        git=bool(data.get("git", True)),
        ignored=tuple(data.get("ignored", ())),
        files={f"{ROOT}/{k}": v for k, v in data.get("files", {}).items()},
        turns=tuple(turns),
    )


def _position(path: Path, text: Any) -> Position | None:
    if text is None:
        return None
    try:
        turn, call = str(text).split(".")
        return int(turn), END if call == "end" else int(call)
    except ValueError as exc:
        raise CorpusError(f"{path.name}: halt_by is 'turn.call' or 'turn.end'") from exc


def load_all(directory: Path = CORPUS) -> list[Case]:
    return [load(p) for p in sorted(directory.glob("*.toml"))]


def _sha(text: str) -> str:
    return content_digest(text.encode("utf-8"))  # timestamps masked, as world.py hashes


class SimulatedWorld:
    """Files, slots and a git repository as plain dicts, measured as world.py measures."""

    def __init__(self, sequence: Case, bookkeeping: Sequence[str] = ()) -> None:
        self.name = sequence.name
        self.bookkeeping = tuple(bookkeeping)
        self.files: dict[str, str] = dict(sequence.files)
        self.slots: dict[str, str] = {}
        self.git = sequence.git
        self.ignored = tuple(f"{ROOT}/{p}" for p in sequence.ignored)
        self.index = {p: t for p, t in self.files.items() if not self._ignored(p)}
        self.commits = 1
        self.remote = "in-sync"
        self.stashed: dict[str, str | None] = {}
        self.touched: OrderedDict[str, None] = OrderedDict()

    def _ignored(self, path: str) -> bool:
        return not path.startswith(ROOT + "/") or path.startswith(self.ignored)

    def measure(self, touched: Sequence[str]) -> WorldState:
        for path in touched:
            self.touched.pop(path, None)
            self.touched[path] = None
        while len(self.touched) > TOUCHED_CAPACITY:
            self.touched.popitem(last=False)
        files = tuple(
            (p, _sha(self.files[p]) if p in self.files else "gone") for p in sorted(self.touched)
        )
        slots = tuple((label, _sha(value)) for label, value in sorted(self.slots.items()))
        return WorldState(files_written=files, slots=slots, git_tree=self._git_digest())

    def _git_digest(self) -> str | None:
        if not self.git:
            return None
        paths = {
            p
            for p in (*self.index, *self.files)
            if not self._ignored(p) and not is_bookkeeping(self._relative(p), self.bookkeeping)
        }
        changed = {
            p: _sha(self.files[p]) if p in self.files else "gone"
            for p in sorted(paths)
            if self.files.get(p) != self.index.get(p)
        }
        state = {"commits": self.commits, "remote": self.remote, "index": self.index}
        return _sha(json.dumps({**state, "changed": changed}, sort_keys=True))

    def apply(self, call: Call) -> None:
        effect = dict(call.effect)
        if not call.error and not effect and call.tool in ("Write", "Edit", "MultiEdit"):
            effect = {"write": {self._relative(call.input["file_path"]): self._written(call)}}
        self.apply_effect(effect)

    def _written(self, call: Call) -> str:
        path = str(call.input["file_path"])
        if call.tool == "Write":
            return str(call.input["content"])
        text = self.files.get(path)
        if text is None:
            raise CorpusError(f"{self.name}: {call.tool} of a file that does not exist: {path}")
        edits = call.input["edits"] if call.tool == "MultiEdit" else [call.input]
        for edit in edits:
            old, new = edit["old_string"], edit["new_string"]
            if old not in text:
                raise CorpusError(f"{self.name}: Edit of {path}: {old!r} is not in the file")
            text = text.replace(old, new) if edit.get("replace_all") else text.replace(old, new, 1)
        return text

    @staticmethod
    def _relative(path: str) -> str:
        return path.removeprefix(ROOT + "/")

    def _absolute(self, path: str) -> str:
        return path if path.startswith("/") else f"{ROOT}/{path}"

    def apply_effect(self, effect: Mapping[str, Any]) -> None:
        known = {"write", "append", "delete", "slots", "stage", "commit", "checkout", "stash",
                 "stash_pop", "remote"}  # fmt: skip
        if set(effect) - known:
            raise CorpusError(f"{self.name}: unknown effects {sorted(set(effect) - known)}")
        for path, text in effect.get("write", {}).items():
            self.files[self._absolute(path)] = text
        for path, text in effect.get("append", {}).items():
            path = self._absolute(path)
            self.files[path] = self.files.get(path, "") + text
        for path in effect.get("delete", []):
            self.files.pop(self._absolute(path), None)
        self.slots.update(effect.get("slots", {}))
        stage = effect.get("stage", [])
        for path in (list(self.files) + list(self.index)) if stage == "all" else stage:
            path = self._absolute(path)
            if self._ignored(path):
                continue
            if path in self.files:
                self.index[path] = self.files[path]
            else:
                self.index.pop(path, None)
        if effect.get("commit"):
            self.commits += 1
        for path in effect.get("checkout", []):
            path = self._absolute(path)
            if path in self.index:
                self.files[path] = self.index[path]
        if effect.get("stash"):
            self.stashed = {
                p: self.files.get(p)
                for p in set(self.files) | set(self.index)
                if not self._ignored(p) and self.files.get(p) != self.index.get(p)
                and p in self.index
            }  # fmt: skip
            for path in self.stashed:
                self.files[path] = self.index[path]
        if effect.get("stash_pop"):
            for path, text in self.stashed.items():
                if text is None:
                    self.files.pop(path, None)
                else:
                    self.files[path] = text
            self.stashed = {}
        if "remote" in effect:
            self.remote = str(effect["remote"])


def _sentinel(settings: SentinelSettings, clock: Callable[[], datetime]) -> Any:
    return Sentinel(settings, clock=clock)


def _observe(sentinel: Any, request: ToolCallRequest, world: WorldState) -> Any:
    return sentinel.observe_call(request, world, root=ROOT)


def _end(sentinel: Any, world: WorldState) -> Any:
    return sentinel.end_turn(world, root=ROOT)


def replay(
    sequence: Case,
    settings: SentinelSettings | None = None,
    *,
    make: Callable[[SentinelSettings, Callable[[], datetime]], Any] = _sentinel,
    observe: Callable[[Any, ToolCallRequest, WorldState], Any] = _observe,
    end: Callable[[Any, WorldState], Any] = _end,
) -> Outcome:
    """Run `sequence` through a `Sentinel` until it halts (or the sequence ends). `make`,
    `observe` and `end` let a bench run the same replay through another sentinel."""
    settings = settings or SentinelSettings()
    clock = [datetime(2026, 12, 1, tzinfo=UTC)]
    sentinel = make(settings, lambda: clock[0])
    world = SimulatedWorld(sequence, settings.bookkeeping_files)
    outcome = Outcome(sequence, third_identical=third_identical_call(sequence))
    ids = 0
    for t, (external, calls) in enumerate(sequence.turns, start=1):
        world.apply_effect(external)
        sentinel.begin_turn(t)
        for c, call in enumerate(calls, start=1):
            ids += 1
            request = ToolCallRequest(f"toolu_{ids:04d}", call.tool, dict(call.input))
            clock[0] += timedelta(seconds=THINK_S)
            verdict = observe(sentinel, request, world.measure(touched_paths(request, ROOT)))
            outcome.calls += 1
            if verdict.record is not None and verdict.record.shadow:
                outcome.shadow_records.append(f"{show((t, c))} {verdict.record.rule}")
            if verdict.halt and verdict.record is not None:
                outcome.halted_at, outcome.rule = (t, c), verdict.record.rule
                outcome.message = verdict.record.message
                return outcome
            world.apply(call)
            world.apply_effect(call.external)
            clock[0] += timedelta(seconds=call.took)
            sentinel.observe_result(request.tool_use_id, is_error=call.error, content=call.content)
        verdict = end(sentinel, world.measure(()))
        if verdict.record is not None and verdict.record.shadow:
            outcome.shadow_records.append(f"{show((t, END))} {verdict.record.rule}")
        if verdict.halt and verdict.record is not None:
            outcome.halted_at, outcome.rule = (t, END), verdict.record.rule
            outcome.message = verdict.record.message
            return outcome
    return outcome


def third_identical_call(sequence: Case) -> Position | None:
    """Where a call is made for the third time in a turn, by its normalised key."""
    for t, (_, calls) in enumerate(sequence.turns, start=1):
        counts: dict[str, int] = {}
        for c, call in enumerate(calls, start=1):
            key = f"{call.tool}\0{call_key(call.tool, call.input)}"
            counts[key] = counts.get(key, 0) + 1
            if counts[key] == 3:
                return t, c
    return None
