"""Turning what the Claude Code CLI and the SDK report as failure into our `ErrorEvent` kinds.

A failed turn reaches us in one of two shapes: a `result` frame with `is_error` (often after an
assistant message carrying `error` and a synthetic text such as "Not logged in · Please run
/login"), or an SDK exception (the CLI is missing, crashed, or spoke garbage). Both go through
`classify_failure`, a pure function over the text, the HTTP status and the assistant error code,
so the mapping is tested without a CLI.
"""

from __future__ import annotations

import re

from runtime.errors import CREDENTIALS_HELP
from runtime.turn.driver import ErrorEvent

# Assistant `error` codes the bundled CLI (2.1.332) sets for a turn that failed on the API side.
_CREDENTIAL_CODES = frozenset(
    {"authentication_failed", "oauth_org_not_allowed", "cloud_credential_error"}
)
_CREDENTIAL_WORDS = (
    "not logged in",
    "please run /login",
    "invalid api key",
    "invalid auth token",
    "authentication required",
    "could not resolve authentication",
    "authentication_error",
)
# The CLI's own words for an over-size prompt, and the service's (400, or 413 from a proxy).
_TOO_LONG_WORDS = (
    "prompt is too long",
    "input is too long for requested model",
    "exceed context limit",
)
_RATE_WORDS = ("rate limit", "rate_limit", "too many requests")
_OVERLOADED_WORDS = ("overloaded",)
_CONNECTION_WORDS = (
    "connection error",
    "connection refused",
    "econnrefused",
    "econnreset",
    "enotfound",
    "etimedout",
    "fetch failed",
    "unable to connect",
    "socket hang up",
    "network error",
)
_STATUS_IN_TEXT = re.compile(r"api error:?\s*(\d{3})\b", re.IGNORECASE)

CLI_MISSING_HELP = (
    "The Claude Code CLI could not be started. The claude-agent-sdk wheel bundles it "
    "(claude_agent_sdk/_bundled/claude): reinstall with `pip install --force-reinstall "
    "claude-agent-sdk`, or install `claude` on PATH, or pass ClaudeDriver(cli_path=...)."
)


def classify_failure(
    text: str, *, status: int | None = None, assistant_error: str | None = None
) -> ErrorEvent:
    """The error kind for a failed turn, from what the CLI said about it.

    Order matters: the size of the prompt is checked before anything else because the session
    recovers from it by evicting; credentials before throttling because a 401 never clears by
    waiting.
    """
    low = text.lower()
    if status is None and (match := _STATUS_IN_TEXT.search(text)):
        status = int(match.group(1))
    if status == 413 or any(w in low for w in _TOO_LONG_WORDS):
        return ErrorEvent("prompt_too_long", text or "the prompt is too long for the model")
    if (
        status in (401, 403)
        or assistant_error in _CREDENTIAL_CODES
        or any(w in low for w in _CREDENTIAL_WORDS)
    ):
        said = f"\n(Claude Code said: {text})" if text else ""
        return ErrorEvent("credentials", CREDENTIALS_HELP + said)
    if status == 429 or assistant_error == "rate_limit" or any(w in low for w in _RATE_WORDS):
        return ErrorEvent("rate_limited", text or "rate limited (429)", retryable=True)
    if status == 529 or assistant_error == "overloaded" or any(w in low for w in _OVERLOADED_WORDS):
        said = text or "the model service is overloaded (529)"
        return ErrorEvent("overloaded", said, retryable=True)
    if any(w in low for w in _CONNECTION_WORDS):
        return ErrorEvent("connection", text)
    return ErrorEvent("other", text or "the turn failed without a message")


def classify_exception(exc: Exception, stderr_tail: str = "") -> ErrorEvent:
    """The error kind for an exception raised by the SDK while a turn ran.

    The SDK module is imported here, not at the top, so `import runtime.claude` stays cheap.
    """
    from claude_agent_sdk import (
        CLIConnectionError,
        CLINotFoundError,
        ProcessError,
        ResultError,
    )

    if isinstance(exc, CLINotFoundError):
        return ErrorEvent("cli", f"{CLI_MISSING_HELP}\n({exc})")
    if isinstance(exc, ResultError):
        said = "; ".join(exc.errors) or exc.result or str(exc)
        return classify_failure(said, status=exc.api_error_status)
    text = str(exc)
    if isinstance(exc, ProcessError) and stderr_tail:
        # The SDK's own stderr field is a placeholder; what the CLI printed is the real cause.
        text = f"{text}\nCLI stderr: {stderr_tail}"
    event = classify_failure(text)
    if event.kind == "other" and isinstance(exc, CLIConnectionError):
        return ErrorEvent("connection", f"could not talk to the Claude Code CLI: {text}")
    if event.kind == "other":
        return ErrorEvent("other", f"{type(exc).__name__}: {text}")
    return event
