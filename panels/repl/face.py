"""The solo REPL as the face of a one-panel host: `mnemara run --instance X`.

The instance runs as a team of one under the `Host` (panels/host/solo.py builds the team),
so it behaves as it would in any team, peer_poll included. The face is the line REPL:

- a typed line is operator input, submitted on the panel's operator route; the face then
  follows the panel until the turn that took the line has ended, while lines typed meanwhile
  are routed by the terminal (`/stop`, the at-once commands, or queued for after the turn);
- what the panel does reaches the face as the host's live events (text deltas as they
  stream) and is shown by `EventView`; an approval request is asked on the terminal and
  answered through the host's approvals;
- slash commands act on the panel's live session while no turn runs (holding the team's
  turn slot, so no turn starts under them); `/swap`, `/tokens`, `/halt`, `/resume` and
  `/inbox` go through the runner's control verbs, as the dashboard's commands do.

A failed turn (no credentials, overloaded) prints its error once; its input stays in the
window marked interrupted and is acked, not delivered again (`redeliver_failed_input`
off), so a restart of the panel never repeats a failure that needs the operator.
"""

from __future__ import annotations

import math
import signal
from pathlib import Path
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from panels.host.control import operator_halt
from panels.host.delivery import OPERATOR, operator_route
from panels.host.host import Host
from panels.host.panel import PanelRunner
from panels.host.restart import RestartPolicy
from panels.host.services import DriverFactory
from panels.repl import commands
from panels.repl.approve import ask_operator
from panels.repl.show import EventView, halt_notice
from panels.repl.slash import (
    MODELS,
    Command,
    SlashError,
    help_text,
    parse,
    parse_token_count,
    resolve_model,
)
from panels.repl.terminal import Terminal
from panels.team import TeamSpec
from runtime.config import load_config
from runtime.errors import MnemaraError
from runtime.home import InstancePaths
from runtime.session import Session

PROMPT = "you> "
# Restarts of a solo panel: quick (the operator is waiting), and a give-up only after a run
# of failures that no restart will fix (the face then says so).
SOLO_RESTARTS = RestartPolicy(base_delay=0.5, max_delay=10.0, max_failures=10, window=600.0)
# Commands that act at once, also while a turn runs; the others wait for the turn's end.
AT_ONCE = frozenset({"stop", "halt", "inbox", "help", "models"})
SESSION_WAIT = 60.0

_Event = tuple[str, str | None, dict[str, Any]]


class SoloFace:
    def __init__(self, team: TeamSpec, terminal: Terminal, *, home: Path | None = None) -> None:
        self.team = team
        self.name = team.panels[0].name
        self.terminal = terminal
        config = load_config(InstancePaths.for_name(team.panels[0].instance, home).config)
        self.config = config
        self.view = EventView(terminal, config.display_name or "assistant", stream=config.stream)
        self._send: MemoryObjectSendStream[_Event]
        self._receive: MemoryObjectReceiveStream[_Event]
        self._send, self._receive = anyio.create_memory_object_stream[_Event](math.inf)
        self._changed = anyio.Event()
        self.delivered: dict[int, int] = {}  # operator message id -> turn number
        self.ended: dict[int, tuple[str, int]] = {}  # turn -> (outcome, lives at its end)
        self.lives = 0
        self.given_up = False
        self.following = False
        self.repl_scope = anyio.CancelScope()
        self.host: Host

    # -- events from the host -----------------------------------------------------------------

    def on_event(self, kind: str, panel: str | None, data: dict[str, Any]) -> None:
        """The host's live listener: called in the emitting task, so it only queues."""
        if panel == self.name:
            self._send.send_nowait((kind, panel, data))

    async def show_events(self) -> None:
        async for kind, _, data in self._receive:
            if kind == "approval_request":
                answer = await ask_operator(self.terminal, data)
                if not self.host.services.approvals.answer(int(data["request"]), answer):
                    self.terminal.say("(too late: the question was closed; not run)")
            else:
                self.view.show(kind, data)
            self._track(kind, data)
            self._changed, changed = anyio.Event(), self._changed
            changed.set()

    def _track(self, kind: str, data: dict[str, Any]) -> None:
        if kind == "delivery":
            for ident in data.get("ids") or ():
                self.delivered[int(ident)] = int(data["turn"])
        elif kind == "turn_ended":
            self.ended[int(data["turn"])] = (str(data.get("outcome")), self.lives)
        elif kind == "panel_started":
            self.lives += 1
        elif kind == "panel_given_up":
            self.given_up = True

    async def _until(self, done: Any) -> None:
        while True:
            changed = self._changed
            if done():
                return
            await changed.wait()

    @property
    def runner(self) -> PanelRunner:
        return self.host.services.panels[self.name]

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
            while True:
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
                    self.terminal.say(f"[error] {exc}")

    async def send(self, line: str) -> None:
        """Operator input: submit it, then follow the panel until its turn has ended."""
        runner = self.runner
        if self.given_up:
            raise SlashError("the panel was given up (see above); fix the cause, then run again")
        if runner.halt is not None:
            raise SlashError(
                f"{self.name} is halted ({halt_notice(runner.halt.as_dict())}); "
                "/resume lets it go on. The line was not sent."
            )
        ident = await self.host.services.bus.submit(
            OPERATOR, operator_route(self.name), {"type": "input", "text": line}
        )
        self.following = True
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self.terminal.watch, self.runner.stop_turn, self._at_once_line)
                await self._until(lambda: self._followed(ident))
                tg.cancel_scope.cancel()
        finally:
            self.following = False
        if ident not in self.delivered and self.runner.halt is not None:
            self.terminal.say("(the panel is halted: the line runs after /resume)")

    def _followed(self, ident: int) -> bool:
        turn = self.delivered.get(ident)
        if turn is None:
            return self.given_up or self.runner.halt is not None
        if turn not in self.ended:
            return False
        outcome, lives = self.ended[turn]
        # A failed turn ends its panel's life: wait for the next life (or the give-up), so
        # the commands that follow find the live session.
        return outcome != "failed" or self.lives > lives or self.given_up

    # -- commands -----------------------------------------------------------------------------

    def _at_once_line(self, line: str) -> bool:
        """During a turn: run an at-once command now; False leaves the line to the queue."""
        if not line.lstrip().startswith("/"):
            return False
        try:
            command = parse(line)
        except SlashError:
            return False
        if command.name not in AT_ONCE:
            return False
        self._write_output(self._at_once(command))
        return True

    def _write_output(self, output: str) -> None:
        if output:
            self.terminal.say(output)

    def _at_once(self, command: Command) -> str:
        runner, name, args = self.runner, command.name, command.args
        if name == "stop":
            if not runner.in_turn:
                return "no turn is running"
            runner.stop_turn()
            return ""
        if name == "halt":
            reason = " ".join(args) or "halted by the operator"
            runner.halt_now(operator_halt(reason, "operator"), by="operator")
            return ""  # the halt event shows the notice
        if name == "inbox":
            if args not in (("on",), ("off",)):
                raise SlashError("usage: /inbox on|off")
            runner.set_inbox(args[0] == "on")
            return f"inbox {args[0]}"
        if name == "help":
            return help_text()
        return "\n".join(f"  {i}. {short:<7} {full}" for i, (short, full) in enumerate(MODELS, 1))

    async def command(self, command: Command) -> str | None:
        """Run one command while idle; None means quit."""
        name, args = command.name, command.args
        if name == "quit":
            return None
        if name in AT_ONCE:
            return self._at_once(command)
        if name == "resume":
            if self.runner.halt is None:
                return "the panel is not halted"
            self.runner.resume()
            return "resumed: the sentinel and the budget counters start again from here"
        session = await self._session()
        if self.runner.in_turn:
            self.terminal.say("(waiting for the turn in flight to end)")
        async with self.host.services.slots:  # no turn starts while the command runs
            if name == "swap":
                if not args:
                    raise SlashError("usage: /swap MODEL|N")
                session.update_config(model=resolve_model(args[0]))  # saved for next time
                self.runner.set_model(session.config.model)  # the host's `model` verb
                return f"model: {session.config.model}"
            if name == "tokens":
                if args:
                    session.update_config(max_window_tokens=parse_token_count(args[0]))
                    self.host.services.log.emit(
                        "tokens", self.name, max_window_tokens=session.config.max_window_tokens
                    )
                return f"max_window_tokens = {session.config.max_window_tokens}"
            return await commands.dispatch(session, command)

    async def _session(self) -> Session:
        """The panel's live session; after a failure, once the panel has started again."""
        with anyio.move_on_after(SESSION_WAIT):
            await self._until(lambda: self.given_up or self.runner.session is not None)
        session = self.runner.session
        if session is None:
            raise SlashError("the panel is not running (see the errors above); /quit leaves")
        return session

    async def on_sigint(self) -> None:
        """Ctrl-C stops the turn in flight; with none, it leaves as /quit does."""
        with anyio.open_signal_receiver(signal.SIGINT) as signals:
            async for _ in signals:
                if self.following or self.runner.in_turn:
                    self.runner.stop_turn()
                else:
                    self.terminal.write("\n")
                    self.repl_scope.cancel()


async def run_face(
    team: TeamSpec,
    terminal: Terminal,
    *,
    drivers: DriverFactory | None = None,
    home: Path | None = None,
    policy: RestartPolicy = SOLO_RESTARTS,
) -> None:
    """Run the one-panel team with the REPL as its face until /quit or end of input."""
    face = SoloFace(team, terminal, home=home)
    face.host = Host(
        team,
        drivers=drivers,
        home=home,
        policy=policy,
        live_listeners=[face.on_event],
        redeliver_failed_input=False,
    )
    with face._send, face._receive, terminal:
        await _run_face(face, terminal)


async def _run_face(face: SoloFace, terminal: Terminal) -> None:
    async with anyio.create_task_group() as tg:
        await tg.start(terminal.serve)
        await tg.start(face.host.serve)
        tg.start_soon(face.show_events)
        tg.start_soon(face.on_sigint)
        try:
            await face.repl()
        finally:
            # Stop cleanly: turns end, claims are settled, open questions answered no.
            face.host.request_stop()
            with anyio.CancelScope(shield=True), anyio.move_on_after(90):
                await face.host.stopped()
            tg.cancel_scope.cancel()


async def run_solo(
    team: TeamSpec, *, drivers: DriverFactory | None = None, home: Path | None = None
) -> None:
    """`mnemara run`: the face on stdin and stdout, with the instance's prompt history."""
    history = InstancePaths.for_name(team.panels[0].instance, home).prompt_history
    await run_face(team, Terminal(history=history), drivers=drivers, home=home)
