"""The one dispatcher: every verb (panels/hostdb/verbs.py), from anyone, is applied here.

The CLI's verbs come through the control table (reader.py), the REPL's and the watchdog's
in-process; all of them end in `Dispatcher.apply`, which checks the verb against the team
(the panel exists; a panel giving a verb acts only on others), carries it out, writes one
`VerbApplied` event with who gave it and what came of it, and returns the `Outcome`. A verb
that cannot be applied is a failed outcome with the reason, never an exception: an unknown
panel, an answer to a question nobody asks, a window verb on a panel with no session.

Verbs that change a panel's window (`Verb.window`) wait until no turn runs on the panel
(`rewind` until no turn runs on any panel: they share the working directory); the others
act at once (a halt cancels the turn in flight).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from panels.errors import PanelsError
from panels.host.delivery.feed import OPERATOR, operator_route
from panels.host.delivery.outbox import NotQueuedError
from panels.host.delivery.tickets import Ticket, Tickets
from panels.host.services import HostServices
from panels.host.turns.checkpoints import rewind_panel
from panels.host.turns.panel import PanelRunner
from panels.host.turns.window import apply_window
from panels.hostdb import verbs
from panels.hostdb.catalogue import VerbApplied, WindowTokensChanged
from panels.hostdb.control import CommandAnswer
from peerbus import PeerbusError
from runtime.errors import MnemaraError
from runtime.guard.records import HaltRecord
from runtime.turn.session import Session


@dataclass(frozen=True)
class Outcome:
    ok: bool
    text: str
    ticket: Ticket | None = None  # for input: completes when the turn that took it ends
    message: int | None = None  # the bus message an input or a nudge became
    bus: str = ""  # the identity of the bus it is on


class VerbRefusedError(PanelsError):
    """Raised inside the dispatcher for a verb that cannot apply now (an unknown panel, a
    question nobody asks); `apply` turns it into a failed outcome, so it never leaves here."""


def question_to_answer(open_ids: list[int], panel: str | None) -> int | Outcome:
    """The question an answer that names none is for: the only one open. With none open
    there is nothing to do, which is not a failure (ok, said plainly); with several the
    answer must name one. Pure."""
    if len(open_ids) == 1:
        return open_ids[0]
    where = f" of {panel}" if panel else ""
    if not open_ids:
        return Outcome(True, f"nothing to answer: no question{where} is waiting")
    listed = ", ".join(str(i) for i in open_ids)
    raise VerbRefusedError(
        f"{len(open_ids)} questions{where} are waiting ({listed}); name one with --request"
    )


def halt_record(reason: str, by: str) -> HaltRecord:
    """The record of a halt an operator or a watchdog asked for."""
    who = "operator" if by == OPERATOR else "watchdog"
    return HaltRecord(
        source="sentinel",
        rule=f"{who}_halt",
        message=reason or f"halted by the {who}",
        turn=0,
        at=datetime.now(UTC),
    )


class Dispatcher:
    def __init__(
        self,
        services: HostServices,
        panels: Mapping[str, PanelRunner],
        tickets: Tickets,
        request_stop: Callable[[], None],
    ) -> None:
        self.services = services
        self.panels = panels
        self.tickets = tickets
        self.request_stop = request_stop

    async def apply(
        self, verb: verbs.Verb, *, by: str = OPERATOR, command_id: int | None = None
    ) -> Outcome:
        try:
            outcome = await self._apply(verb, by)
        except (MnemaraError, PeerbusError, OSError) as exc:  # a refusal is a MnemaraError too
            outcome = Outcome(False, str(exc) or type(exc).__name__)
        text = verb.text if isinstance(verb, verbs.Input | verbs.Nudge) else ""
        applied = VerbApplied(panel=verb.panel, id=command_id, verb=verb.name, by=by,
                              summary=verb.summary(), text=text, message=outcome.message,
                              bus=outcome.bus, ok=outcome.ok, outcome=outcome.text)  # fmt: skip
        # A verb is done when its record is on disk (a halt survives the host's death); a
        # command from the control table is answered in the same transaction as its record.
        answer = None if command_id is None else CommandAnswer(command_id, outcome.ok, outcome.text)
        await self.services.log.commit(applied, answer=answer)
        return outcome

    async def _apply(self, verb: verbs.Verb, by: str) -> Outcome:
        if isinstance(verb, verbs.Shutdown):
            if by != OPERATOR:
                raise VerbRefusedError("only the operator stops the host")
            self.request_stop()
            return Outcome(True, "stopping")
        if isinstance(verb, verbs.AnswerRequest):
            return self._answer(verb)
        if isinstance(verb, verbs.Retry):
            return await self._retry(verb, by)
        runner = self._runner(verb, by)
        if isinstance(verb, verbs.Rewind):
            return await self._rewind(runner, verb, by)
        if verb.window:
            async with runner.between_turns() as session:
                if session is None:
                    raise VerbRefusedError(f"{runner.name} has no session now (see `ps`)")
                text = await apply_window(session, verb)
                await runner.count_window()
                return Outcome(True, text)
        return await self._at_once(runner, verb, by)

    def _runner(self, verb: verbs.Verb, by: str) -> PanelRunner:
        runner = self.panels.get(verb.panel or "")
        if runner is None:
            names = ", ".join(self.panels) or "none"
            raise VerbRefusedError(f"no panel {verb.panel!r} in this team (panels: {names})")
        if by == runner.name:
            raise VerbRefusedError("a panel does not give verbs to itself")
        return runner

    async def _at_once(self, runner: PanelRunner, verb: verbs.Verb, by: str) -> Outcome:
        if isinstance(verb, verbs.Input):
            # On the operator's bus: the host's own, never a foreign table others read.
            ident = await self.services.operator_bus.submit(
                OPERATOR, operator_route(runner.name), {"type": "input", "text": verb.text}
            )
            ticket = self.tickets.open(runner.name, ident)
            bus = self.services.operator_bus.identity
            return Outcome(True, f"queued as message {ident}", ticket, ident, bus)
        if isinstance(verb, verbs.Nudge):
            payload = {"type": "nudge", "text": verb.text}
            giver = self.panels.get(by)
            if giver is not None and giver.outbox is not None:
                # A watchdog's nudge is a send of its turn: it goes out with the turn.
                try:
                    label = giver.outbox.queue(runner.name, payload)
                except NotQueuedError as exc:
                    raise VerbRefusedError(str(exc)) from None
                return Outcome(True, f"nudge for {runner.name} queued as outbox entry {label}; "
                                     "it is sent when this turn ends")  # fmt: skip
            ident = await self.services.bus.submit(by, runner.name, payload)
            return Outcome(True, f"nudge sent to {runner.name} as message {ident}", message=ident,
                           bus=self.services.bus.identity)  # fmt: skip
        if isinstance(verb, verbs.Pause):
            runner.pause(verb.reason)
            return Outcome(True, f"{runner.name} is paused (after the turn in flight, if any)")
        if isinstance(verb, verbs.Resume):
            lifted = await runner.resume(by=by)
            if lifted is None:
                return Outcome(True, f"{runner.name} is running (it was not halted)")
            return Outcome(True, f"{runner.name} is resumed: the sentinel and budget counters "
                                 "start again from here")  # fmt: skip
        if isinstance(verb, verbs.Halt):
            if runner.halt is not None:
                return Outcome(True, f"{runner.name} was already halted ({runner.halt.rule})")
            runner.halt_now(halt_record(verb.reason, by), by=by)
            if runner.session is not None:
                await runner.session.save_halt()
            return Outcome(True, f"{runner.name} is halted; its inbox is kept")
        if isinstance(verb, verbs.Stop):
            stopped = runner.stop_turn()
            return Outcome(True, "the turn in flight is stopping" if stopped else "no turn runs")
        if isinstance(verb, verbs.SetModel):
            if verb.save:
                self._session(runner).update_config(model=verb.model)
            runner.set_model(verb.model)
            saved = " (saved to its config)" if verb.save else ""
            return Outcome(True, f"model is {verb.model} from the next turn{saved}")
        if isinstance(verb, verbs.SetTokens):
            session = self._session(runner)
            if verb.save:
                session.update_config(max_window_tokens=verb.max_window_tokens)
            else:
                session.config = session.config.model_copy(
                    update={"max_window_tokens": verb.max_window_tokens}
                )
            tokens = verb.max_window_tokens
            self.services.log.emit(WindowTokensChanged(panel=runner.name, max_window_tokens=tokens))
            return Outcome(True, f"max_window_tokens is {verb.max_window_tokens}")
        if isinstance(verb, verbs.SetName):
            label = verb.label.strip()
            self._session(runner).update_config(display_name=label)
            shown = f"its replies show as {label!r}" if label else "its label is cleared"
            return Outcome(True, f"{shown} (saved to its config)")
        if isinstance(verb, verbs.SetInbox):
            runner.set_inbox(verb.on)
            return Outcome(True, f"inbox delivery is {'on' if verb.on else 'off'}")
        raise VerbRefusedError(f"{verb.name} cannot be applied here")

    async def _rewind(self, runner: PanelRunner, verb: verbs.Rewind, by: str) -> Outcome:
        """The panel's files back to a checkpoint (checkpoints.py): the operator's only, since
        it undoes every panel's work in the shared working directory."""
        if by != OPERATOR:
            raise VerbRefusedError("only the operator rewinds a panel's files")
        report = await rewind_panel(runner, self.panels, verb.turn)
        return Outcome(report.ok, "\n".join([report.summary(), *report.details()]))

    def _session(self, runner: PanelRunner) -> Session:
        if runner.session is None:
            raise VerbRefusedError(f"{runner.name} has no session now (see `ps`)")
        return runner.session

    async def _retry(self, verb: verbs.Retry, by: str) -> Outcome:
        """A dead letter back in the queue (the bus pane's `r`, like `mnemara bus retry`)."""
        if by != OPERATOR:
            raise VerbRefusedError("only the operator retries dead letters")
        moved = await self.services.bus.retry(ids=[verb.id])
        if not moved:
            raise VerbRefusedError(
                f"message {verb.id} is not a dead letter (retried already, or never given up)"
            )
        # The panels wake on the bus change; their dead-letter counts follow (inboxes.py).
        return Outcome(True, f"message {verb.id} is back in the queue ({moved} recipient(s))")

    def _answer(self, verb: verbs.AnswerRequest) -> Outcome:
        approvals = self.services.approvals
        request = verb.request
        if request is None:
            chosen = question_to_answer(approvals.pending(verb.panel), verb.panel)
            if isinstance(chosen, Outcome):
                return chosen
            request = chosen
        answer = verb.answer
        if not approvals.answer(request, answer, panel=verb.panel):
            raise VerbRefusedError(
                f"no open question {request}"
                + (f" of {verb.panel}" if verb.panel else "")
                + " (answered, timed out or never asked)"
            )
        return Outcome(True, f"request {request}: {answer.value}")
