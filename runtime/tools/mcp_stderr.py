"""Runs one stdio MCP server for the Claude Code CLI and logs its failures to debug.log.

    python -I mcp_stderr.py --log DEBUG_LOG --server NAME -- COMMAND [ARGS...]

Standard library only, and run by path (never imported by the runtime), so it starts fast and
needs nothing from the environment. The server inherits our stdin and stdout, so the MCP
stream passes through untouched; its stderr is copied through to ours line by line and the
last lines are kept. A server that cannot be started, or that exits non-zero without having
been told to stop, gets one JSON line in the debug log, shaped like runtime.instance.debuglog's.
A SIGTERM or SIGINT from the CLI is passed on to the server and is not a failure.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import deque
from datetime import UTC, datetime
from types import FrameType

TAIL_LINES = 40


def log_failure(log: str, server: str, command: list[str], reason: str, stderr: list[str]) -> None:
    record = {
        "ts": datetime.now(UTC).isoformat(timespec="milliseconds"),
        "kind": "error",
        "event": "mcp_server_failed",
        "server": server,
        "command": command,
        "reason": reason,
        "stderr": "\n".join(stderr),
    }
    line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
    try:
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)  # one write on O_APPEND: never interleaved with other writers
        finally:
            os.close(fd)
    except OSError as exc:
        sys.stderr.write(f"mnemara: cannot write {log}: {exc}\n")


def parse(argv: list[str]) -> tuple[str, str, list[str]]:
    if len(argv) < 6 or argv[0] != "--log" or argv[2] != "--server" or argv[4] != "--":
        raise SystemExit("usage: mcp_stderr.py --log PATH --server NAME -- COMMAND [ARGS...]")
    return argv[1], argv[3], argv[5:]


def main(argv: list[str]) -> int:
    log, server, command = parse(argv)
    try:
        child = subprocess.Popen(command, stderr=subprocess.PIPE)
    except OSError as exc:
        reason = f"could not be started: {exc}"
        log_failure(log, server, command, reason, [])
        sys.stderr.write(f"MCP server {server}: {reason}\n")
        return 127
    stopping = False

    def pass_on(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True
        child.send_signal(signum)

    signal.signal(signal.SIGTERM, pass_on)
    signal.signal(signal.SIGINT, pass_on)
    tail: deque[str] = deque(maxlen=TAIL_LINES)
    assert child.stderr is not None
    for raw in child.stderr:
        sys.stderr.buffer.write(raw)
        sys.stderr.buffer.flush()
        tail.append(raw.decode("utf-8", errors="replace").rstrip("\n"))
    code = child.wait()
    if code != 0 and not stopping:
        how = f"exit status {code}" if code > 0 else f"signal {-code}"
        log_failure(log, server, command, f"stopped with {how}", list(tail))
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
