"""PolicyApprover: the runtime.turn.driver.Approver that applies the policy and asks when it must.

`allow` and `deny` verdicts are answered at once. An `ask` verdict goes to an Asker: the solo
REPL prompts the operator, the dashboard will answer through the host, and HeadlessAsker says
no. Answers: yes (this call), no, always (store the exact targets in permissions.json), or
session (allow the tool until the session ends; hazards still ask).

Asks are taken one at a time, and each call is decided again once it is its turn: an earlier
"always" or "session" answer may already cover it, and the operator is not asked twice.
The live path's two questions about one call (the PreToolUse hook and `can_use_tool`) are
answered from one decision by the driver's gate (runtime/claude/approval.py), the one cache of
decisions per call: the approver decides every call it is given.

The decision itself runs in a worker thread: it resolves paths on disk and parses commands
up to the caps in limits.py, and every panel of the host shares one event loop.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import anyio

from runtime.errors import PolicyError
from runtime.instance.debuglog import DebugLog
from runtime.policy.asking import Answer, Asker, HeadlessAsker
from runtime.policy.context import PolicyContext, real
from runtime.policy.display import escape_command_for_display, escape_for_display
from runtime.policy.patterns import SafePattern, compile_pattern, exact_pattern
from runtime.policy.policy import PolicyState, Verdict, decide
from runtime.turn.driver import Decision, ToolCallRequest

__all__ = ["Answer", "Asker", "HeadlessAsker", "PolicyApprover", "denial_message", "prompt_text"]
from runtime.policy.rules import remember_targets


def prompt_text(verdict: Verdict, *, max_chars: int = 2_000) -> str:
    """The question an interactive asker shows, in printable ASCII: hidden characters and
    look-alike letters (`ɡit` for `git`) escaped in the command and in the reason that
    quotes it."""
    lines = [
        f"{verdict.tool} wants to run:",
        f"  {escape_command_for_display(verdict.target, max_chars=max_chars)}",
        f"why asked: {escape_command_for_display(verdict.reason, max_chars=max_chars)}",
    ]
    choices = "[y]es once / [n]o / [s]ession"
    if verdict.remember:
        lines.append("always would allow exactly:")
        lines.extend(
            f"  {escape_command_for_display(t, max_chars=max_chars)}" for t in verdict.remember
        )
        choices += " / [a]lways"
    lines.append(choices)
    return "\n".join(lines)


def denial_message(verdict: Verdict, *, asked: bool) -> str:
    """What the model reads when a call is refused: why, and what to do instead."""
    if not asked:
        return (
            f"Permission denied for {verdict.tool}: {verdict.reason}. This is a fixed rule; "
            "do not retry the call. Choose another way or ask the operator."
        )
    return (
        f"{verdict.tool} call not run: it needs the operator's approval ({verdict.reason}) "
        "and was not approved. Do not retry it unchanged; choose another way or ask the "
        "operator to allow it."
    )


class PolicyApprover:
    """Decides every tool call with the policy; session grants and remembered rules live here.

    `context` may be replaced by the owner between turns (a new working directory).
    """

    def __init__(
        self,
        state: PolicyState,
        context: PolicyContext,
        asker: Asker,
        *,
        rules_path: Path | None = None,
        log: DebugLog | None = None,
    ) -> None:
        self.context = context
        self._state = state
        self._asker = asker
        self._rules_path = rules_path
        self._log = log
        self._ask_lock = anyio.Lock()

    @property
    def state(self) -> PolicyState:
        return self._state

    def guard_role_doc(self, path: Path) -> None:
        """`path` is a role doc the panel reads from now on (switched to mid-run): no tool
        may write it, as none may write the one it was opened with (kept guarded too)."""
        docs = (*self.context.role_docs, real(path))
        self.context = replace(self.context, role_docs=tuple(dict.fromkeys(docs)))

    async def decide(self, call: ToolCallRequest, *, outside_sandbox: bool = False) -> Decision:
        """Decide `call`, asking when the verdict is `ask`. `outside_sandbox`: the call is
        carried out by the host itself (our own tools read files there), so the sandbox does
        not contain it and the strict rules decide."""
        context = replace(self.context, containment=None) if outside_sandbox else self.context
        verdict = await self._decide(call, context)
        if verdict.action != "ask":
            return self._finish(call, verdict, allow=verdict.action == "allow", asked=False)
        async with self._ask_lock:
            verdict = await self._decide(call, context)
            if verdict.action != "ask":
                return self._finish(call, verdict, allow=verdict.action == "allow", asked=False)
            answer = await self._asker.ask(call, verdict)
            if answer is Answer.SESSION:
                self._state = self._state.with_session_tool(call.name)
            elif answer is Answer.ALWAYS and verdict.remember:
                await self._remember(call.name, verdict.remember)
        allowed = answer is not Answer.NO
        return self._finish(call, verdict, allow=allowed, asked=True, answer=answer)

    async def _decide(self, call: ToolCallRequest, context: PolicyContext) -> Verdict:
        """The pure decision, off the event loop.

        Not abandoned when cancelled: the caps in limits.py bound how long it takes, and a
        thread left running would go on resolving paths after its caller had gone.
        """
        return await anyio.to_thread.run_sync(decide, self._state, call.name, call.input, context)

    async def _remember(self, tool: str, targets: tuple[str, ...]) -> None:
        if self._rules_path is None:
            self._state = self._state.with_remembered(
                self._state.remembered.with_patterns(tool, _exact(tool, targets))
            )
            return
        try:
            saved = await anyio.to_thread.run_sync(
                remember_targets, self._rules_path, tool, targets
            )
        except (PolicyError, OSError) as exc:
            # The operator said yes, so this call runs; the rule is not kept. A damaged file
            # will also stop the next session from starting until it is fixed.
            if self._log is not None:
                self._log.write("error", "permissions_save_failed", tool=tool, error=str(exc))
            return
        self._state = self._state.with_remembered(saved)

    def _finish(
        self,
        call: ToolCallRequest,
        verdict: Verdict,
        *,
        allow: bool,
        asked: bool,
        answer: Answer | None = None,
    ) -> Decision:
        if self._log is not None:
            self._log.write(
                "tool_call",
                "permission",
                tool=call.name,
                tool_use_id=call.tool_use_id,
                action=verdict.action,
                answer=answer.value if answer else None,
                allowed=allow,
                # Escaped: the reason quotes model input, which may hold lone surrogates.
                reason=escape_for_display(verdict.reason),
            )
        if allow:
            return Decision(allow=True)
        return Decision(allow=False, message=denial_message(verdict, asked=asked))


def _exact(tool: str, targets: tuple[str, ...]) -> list[SafePattern]:
    return [compile_pattern(exact_pattern(t), field=tool) for t in targets]
