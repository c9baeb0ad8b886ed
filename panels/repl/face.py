"""The solo REPL as the face of a one-panel host: `mnemara run --instance X`.

The instance runs as a team of one under the `Host` (panels/host/solo.py builds the team),
so it behaves as it would in any team, peer_poll included. The face is the line REPL, and it
acts only through the host's verbs (panels/hostdb/verbs.py), as the CLI and the dashboard do:

- a typed line is the `input` verb; its ticket completes when the turn that took it ends,
  and the face follows the panel until then, while lines typed meanwhile are routed by the
  terminal (`/stop`, the at-once commands, or queued for after the turn);
- a slash command is a verb (panels/slash.py) or a read-only view (panels/repl/commands.py);
  verbs that change the window wait, in the host, for the turn in flight to end;
- what the panel does reaches the face as the host's live events (text deltas as they
  stream), shown by `EventView`; an approval request is asked on the terminal and answered
  with the `answer` verb.

A failed turn (no credentials, overloaded) prints its error once; its input stays in the
window marked interrupted and is acked, not delivered again (`redeliver_failed_input`
off), so a restart of the panel never repeats a failure that needs the operator. A panel the
host gives up on (a corrupt file, failures a restart will not fix) ends the face with an
error: `run` then exits non-zero.
"""

from __future__ import annotations

import math
import signal
from collections.abc import Callable
from pathlib import Path

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from panels.host.control.dispatch import Outcome
from panels.host.delivery.feed import operator_route
from panels.host.host import Host
from panels.host.process import release_pid_file, take_pid_file
from panels.host.services import DriverFactory
from panels.host.turns.panel import PanelRunner
from panels.host.turns.restart import RestartPolicy
from panels.hostdb import HostEvent, verbs
from panels.hostdb import catalogue as ev
from panels.repl import commands
from panels.repl.approve import ask_operator
from panels.repl.show import EventView
from panels.repl.terminal import Terminal, safe
from panels.slash import MODELS, Command, SlashError, help_text, parse, verb_for
from panels.team import TeamSpec
from panels.unconfined import warning
from runtime.errors import MnemaraError
from runtime.instance.config import load_config
from runtime.instance.home import InstancePaths

PROMPT = "you> "
# Restarts of a solo panel: quick (the operator is waiting), and a give-up only after a run
# of failures that no restart will fix (the face then says so).
SOLO_RESTARTS = RestartPolicy(base_delay=0.5, max_delay=10.0, max_failures=10, window=600.0)
# Commands that act at once, also while a turn runs; the others wait for the turn's end.
AT_ONCE = frozenset({"stop", "halt", "inbox", "help", "models"})
SESSION_WAIT = 60.0


class SoloFace:
    def __init__(self, team: TeamSpec, terminal: Terminal, *, home: Path | None = None) -> None:
        self.team = team
        self.name = team.panels[0].name
        self.paths = InstancePaths.for_name(team.panels[0].instance, home)
        self.terminal = terminal
        config = load_config(self.paths.config)
        self.config = config
        self.view = EventView(terminal, config.display_name or "assistant", stream=config.stream)
        self._send: MemoryObjectSendStream[HostEvent]
        self._receive: MemoryObjectReceiveStream[HostEvent]
        self._send, self._receive = anyio.create_memory_object_stream[HostEvent](math.inf)
        self._changed = anyio.Event()
        self.lives = 0
        self.ended_lives: dict[int, int] = {}  # turn -> lives when it ended (failed turns)
        self.given_up = False
        self.following = False
        self.leaving = False  # the face is ending on its own (/quit, end of input)
        self.repl_scope = anyio.CancelScope()
        # At-once commands typed while a turn runs, for `serve_pending` to apply.
        self._pending: list[Command] = []
        self._wake_pending = anyio.Event()
        self.host: Host

    # -- events from the host -----------------------------------------------------------------

    def on_event(self, event: HostEvent) -> None:
        """The host's live listener: called in the emitting task, so it only queues."""
        if event.panel == self.name:
            self._send.send_nowait(event)

    async def show_events(self) -> None:
        async for event in self._receive:
            if isinstance(event, ev.ApprovalAsked):
                answer = await ask_operator(self.terminal, event)
                verb = verbs.AnswerRequest(panel=self.name, request=event.request, answer=answer)
                outcome = await self.host.dispatch(verb)
                if not outcome.ok:
                    self.terminal.say("(too late: the question was closed; not run)")
            else:
                self.view.show(event)
            self._track(event)
            self._changed, changed = anyio.Event(), self._changed
            changed.set()

    def _track(self, event: HostEvent) -> None:
        if isinstance(event, ev.PanelStarted):
            self.lives += 1
        elif isinstance(event, ev.TurnEnded) and event.outcome == "failed":
            self.ended_lives[event.turn] = self.lives
        elif isinstance(event, ev.PanelGivenUp):
            self.given_up = True

    async def _until(self, done: Callable[[], bool]) -> None:
        while True:
            changed = self._changed
            if done():
                return
            await changed.wait()

    @property
    def runner(self) -> PanelRunner:
        return self.host.panels[self.name]

    # -- the loop -----------------------------------------------------------------------------

    async def repl(self) -> None:
        with self.repl_scope:
            notice = self.host.services.bus.notice
            if notice:
                self.terminal.write(notice + "\n")
            self.terminal.write(
                f"mnemara: {self.name}  model={self.config.model}  "
                f"role={self.config.role_doc_path or '(none)'}  (a team of one)\n"
                "/help lists commands; /quit leaves.\n"
            )
            said = warning(self.host.sandbox_note, [self.runner.status_row()])
            if said is not None:  # in the banner: the host's own line is not this panel's
                self.terminal.write(f"[warning] {safe(said)}\n")
            while not self.given_up:
                line = await self.terminal.read(PROMPT)
                if line is None:
                    self.terminal.write("\n")
                    return
                if not line.strip():
                    continue
                try:
                    if line.lstrip().startswith("/"):
                        output = await self.command(parse(line))
                        if output is None:
                            return
                        if output:
                            self.terminal.say(output)
                    else:
                        await self.send(line)
                except (MnemaraError, SlashError) as exc:
                    self.terminal.say(f"[error] {safe(str(exc))}")

    async def send(self, line: str) -> None:
        """Operator input: the `input` verb, then follow the panel until its ticket is done."""
        runner = self.runner
        if runner.halt is not None:
            raise SlashError(
                f"{self.name} is halted ({runner.halt.notice()}); "
                "/resume lets it go on. The line was not sent."
            )
        outcome = await self.host.dispatch(verbs.Input(panel=self.name, text=line))
        ticket = self._checked(outcome).ticket
        assert ticket is not None  # an applied input always has one
        self.following = True
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self.terminal.watch, self._stop_soon, self._at_once_line)
                await self._until(
                    lambda: self._followed(ticket.done, ticket.turn) or runner.halt is not None
                )
                tg.cancel_scope.cancel()
        finally:
            self.following = False
        if not ticket.done and runner.halt is not None:
            self.terminal.say("(the panel is halted: the line runs after /resume)")

    def _followed(self, done: bool, turn: int | None) -> bool:
        if self.given_up:
            return True
        if not done or turn is None:
            return done
        # A failed turn ends its panel's life: wait for the next life (or the give-up), so
        # the commands that follow find the panel running again.
        lives = self.ended_lives.get(turn)
        return lives is None or self.lives > lives

    @staticmethod
    def _checked(outcome: Outcome) -> Outcome:
        if not outcome.ok:
            raise SlashError(outcome.text)
        return outcome

    # -- commands -----------------------------------------------------------------------------

    def _at_once_line(self, line: str) -> bool:
        """During a turn: an at-once command runs now; False leaves the line to the queue."""
        if not line.lstrip().startswith("/"):
            return False
        try:
            command = parse(line)
        except SlashError:
            return False
        if command.name not in AT_ONCE:
            return False
        self._at_once_soon(command)
        return True

    def _at_once_soon(self, command: Command) -> None:
        """An at-once command typed while a turn runs, applied from the terminal's reader."""
        name = command.name
        if name == "help":
            self.terminal.say(help_text())
        elif name == "models":
            self.terminal.say(_models())
        else:
            # Verbs are async; the watcher is sync: the host applies them from a task of its
            # own (the turn's stop and halt take effect in the host at once).
            self._pending.append(command)
            self._wake_pending.set()

    def _stop_soon(self) -> None:
        self._at_once_soon(Command("stop", ()))

    async def command(self, command: Command) -> str | None:
        """Run one command while idle; None means quit."""
        name = command.name
        if name == "quit":
            return None
        if name == "help":
            return help_text()
        if name == "models":
            return _models()
        if name == "inbox" and not command.args:
            return await self._inbox()
        shown = await commands.view(command, self.paths)
        if shown is not None:
            return shown
        verb = verb_for(command, self.name, self.paths)
        if verb is None:
            raise SlashError(f"unknown command /{name}; /help lists them")
        in_turn = self.runner.in_turn
        if verb.window and in_turn:
            self.terminal.say("(waiting for the turn in flight to end)")
        outcome = self._checked(await self.host.dispatch(verb))
        # A halt and a stopped turn show themselves (their events); no echo needed.
        if isinstance(verb, verbs.Halt) or (isinstance(verb, verbs.Stop) and in_turn):
            return ""
        return outcome.text

    async def _inbox(self) -> str:
        runner = self.runner
        services = self.host.services
        waiting = await services.bus.inbox(runner.name, senders=runner.spec.listens_to, limit=20)
        # Operator input waits on the host's own bus (the team's, unless that is foreign).
        route = operator_route(runner.name)
        operator = await services.operator_bus.inbox(route, senders=(), limit=20)
        state = "on" if runner.inbox_on else "off (/inbox on delivers what waits)"
        lines = [f"inbox delivery is {state}"]
        for item in [*operator, *waiting]:
            body = " ".join(safe(item.payload_json).split())[:120]
            lines.append(f"  {item.id} from {safe(item.sender)} ({item.state}): {body}")
        if len(lines) == 1:
            lines.append("  (nothing is waiting)")
        return "\n".join(lines)

    async def serve_pending(self) -> None:
        """Apply the at-once verbs typed while a turn runs (see `_at_once_soon`)."""
        while True:
            await self._wake_pending.wait()
            self._wake_pending = anyio.Event()
            while self._pending:
                command = self._pending.pop(0)
                try:
                    output = await self.command(command)
                except (MnemaraError, SlashError) as exc:
                    output = f"[error] {safe(str(exc))}"
                if output:
                    self.terminal.say(output)

    async def end_with_host(self) -> None:
        """The host stopped from outside (`mnemara down`): the face ends too."""
        await self.host.stopped()
        if not self.leaving:
            self.terminal.say("(the host was stopped: leaving)")
            self.repl_scope.cancel()

    async def on_sigint(self) -> None:
        """Ctrl-C stops the turn in flight; with none, it leaves as /quit does."""
        with anyio.open_signal_receiver(signal.SIGINT) as signals:
            async for _ in signals:
                if self.following or self.runner.in_turn:
                    await self.host.dispatch(verbs.Stop(panel=self.name))
                else:
                    self.terminal.write("\n")
                    self.repl_scope.cancel()


def _models() -> str:
    return "\n".join(f"  {i}. {short:<7} {full}" for i, (short, full) in enumerate(MODELS, 1))


async def run_face(
    team: TeamSpec,
    terminal: Terminal,
    *,
    drivers: DriverFactory | None = None,
    home: Path | None = None,
    policy: RestartPolicy = SOLO_RESTARTS,
    sandbox_note: str = "",
) -> bool:
    """Run the one-panel team with the REPL as its face until /quit or end of input.
    Returns False when the host gave up on the panel (the caller exits non-zero).
    `sandbox_note` is what confines the tools of `drivers` the caller built (unconfined.py's
    `told`), so the banner says why they run unconfined; the host's own drivers say it
    themselves."""
    face = SoloFace(team, terminal, home=home)
    face.host = Host(
        team,
        drivers=drivers,
        home=home,
        policy=policy,
        live_listeners=[face.on_event],
        redeliver_failed_input=False,
        holder=f"`mnemara run` of instance {team.panels[0].instance!r}",
    )
    if sandbox_note:
        face.host.sandbox_note = sandbox_note
    with face._send, face._receive, terminal:
        await _run_face(face, terminal)
    return not face.given_up


def _lone(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one error a task group wrapped (the host failed to start), else the group."""
    leaves = [e for e in group.exceptions]
    while len(leaves) == 1 and isinstance(leaves[0], BaseExceptionGroup):
        leaves = list(leaves[0].exceptions)
    return leaves[0] if len(leaves) == 1 else group


async def _run_face(face: SoloFace, terminal: Terminal) -> None:
    try:
        await _serve_face(face, terminal)
    except BaseExceptionGroup as group:
        raise _lone(group) from None


async def _serve_face(face: SoloFace, terminal: Terminal) -> None:
    async with anyio.create_task_group() as tg:
        await tg.start(terminal.serve)
        await tg.start(face.host.serve)
        # The host is findable like any other (`mnemara ps/logs/down -t NAME`) while it runs.
        take_pid_file(face.team, face.host.life)
        tg.start_soon(face.show_events)
        tg.start_soon(face.on_sigint)
        tg.start_soon(face.serve_pending)
        tg.start_soon(face.end_with_host)
        try:
            await face.repl()
        finally:
            face.leaving = True
            release_pid_file(face.team)
            # Stop cleanly: turns end, claims are settled, open questions answered no.
            face.host.request_stop()
            with anyio.CancelScope(shield=True), anyio.move_on_after(90):
                await face.host.stopped()
            tg.cancel_scope.cancel()


async def run_solo(
    team: TeamSpec,
    *,
    drivers: DriverFactory | None = None,
    home: Path | None = None,
    sandbox_note: str = "",
) -> bool:
    """`mnemara run`: the face on stdin and stdout, with the instance's prompt history."""
    history = InstancePaths.for_name(team.panels[0].instance, home).prompt_history
    terminal = Terminal(history=history)
    return await run_face(team, terminal, drivers=drivers, home=home, sandbox_note=sandbox_note)
