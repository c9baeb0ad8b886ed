"""Classifying what the CLI and the SDK report as failure into our error kinds (pure)."""

from __future__ import annotations

import pytest
from claude_agent_sdk import (
    CLIConnectionError,
    CLIJSONDecodeError,
    CLINotFoundError,
    ProcessError,
    ResultError,
)

from runtime.claude.failures import classify_exception, classify_failure
from runtime.errors import CREDENTIALS_HELP

CASES = [
    # (what the CLI said, HTTP status, assistant error code) -> kind
    ("Not logged in · Please run /login", None, "authentication_failed", "credentials"),
    ("Invalid API key · Fix external API key", None, None, "credentials"),
    ("API Error: 401 authentication_error", None, None, "credentials"),
    ("anything", 403, None, "credentials"),
    ("Prompt is too long", 400, "invalid_request", "prompt_too_long"),
    ("input length and `max_tokens` exceed context limit: 190000 + 32000 > 200000", 400, None,
     "prompt_too_long"),
    ("request entity too large", 413, None, "prompt_too_long"),
    ("API Error: 429 rate_limit_error", None, None, "rate_limited"),
    ("slow down", None, "rate_limit", "rate_limited"),
    ('API Error: 529 {"type":"overloaded_error"}', None, None, "overloaded"),
    ("busy", 529, None, "overloaded"),
    ("API Error: Connection error.", None, None, "connection"),
    ("connect ECONNREFUSED 127.0.0.1:9", None, None, "connection"),
    ("error_max_turns", None, None, "other"),
    ("used 1529 tokens", None, None, "other"),  # a number alone is no status
]  # fmt: skip


@pytest.mark.parametrize(("said", "status", "code", "kind"), CASES)
def test_classify_failure(said: str, status: int | None, code: str | None, kind: str) -> None:
    event = classify_failure(said, status=status, assistant_error=code)
    assert event.kind == kind
    assert event.retryable == (kind in ("rate_limited", "overloaded"))


def test_credentials_error_says_how_to_fix_it() -> None:
    event = classify_failure("Not logged in · Please run /login")
    assert event.message.startswith(CREDENTIALS_HELP)
    assert "Not logged in" in event.message


def test_exceptions_map_to_kinds() -> None:
    missing = classify_exception(CLINotFoundError("Claude Code not found", "/x/claude"))
    assert missing.kind == "cli" and "reinstall" in missing.message

    busy = classify_exception(
        ResultError("x", data={"result": "API Error", "api_error_status": 529})
    )
    assert busy.kind == "overloaded" and busy.retryable

    lost = classify_exception(CLIConnectionError("Working directory does not exist: /nope"))
    assert lost.kind == "connection" and "/nope" in lost.message

    crashed = classify_exception(ProcessError("Command failed", exit_code=1), "segfault at 0")
    assert crashed.kind == "other" and "segfault at 0" in crashed.message

    garbage = classify_exception(CLIJSONDecodeError("{oops", ValueError("bad")))
    assert garbage.kind == "other" and "CLIJSONDecodeError" in garbage.message

    timeout = classify_exception(Exception("Control request timeout: initialize"))
    assert timeout.kind == "other"
