"""`read_skeleton`: a Python file's classes, signatures and docstrings, without the bodies.

Parsed with `ast`, never imported or run (runtime/window/skeleton.py, which the faces' `/skeleton`
uses too). The path goes through the same permission check as the native Read tool (the
session asks its policy about a synthetic Read call), so a file the agent may not Read cannot
be skeletonised either. Each definition carries its line number, so a targeted Read can
follow. The file is read by `runtime.instance.regular_file`: a FIFO, device, socket
or directory is refused without blocking, at most 5 MiB are read, and a cancelled turn stops
the read at the next chunk (#24).
"""

from __future__ import annotations

from pathlib import Path

import anyio.from_thread
import anyio.to_thread

from runtime.instance.regular_file import read_regular_file
from runtime.tools.context import ToolContext
from runtime.tools.params import Args, Param, define, ok, refuse
from runtime.turn.driver import ToolOutput, ToolSpec
from runtime.window.skeleton import skeleton_of

MAX_SOURCE_BYTES = 5 * 1024 * 1024
PYTHON_SUFFIXES = (".py", ".pyi")


def _read_source(path: Path) -> str:
    """Runs in a worker thread: `check_cancelled` ends it soon after the turn is cancelled."""
    raw = read_regular_file(
        path, MAX_SOURCE_BYTES, check_cancelled=anyio.from_thread.check_cancelled
    )
    return raw.decode("utf-8", errors="replace")


def skeleton_tools(ctx: ToolContext) -> list[ToolSpec]:
    async def read_skeleton(a: Args) -> ToolOutput:
        raw = a["path"]
        refusal = await ctx.check_read(raw)
        if refusal is not None:
            return refuse(f"read_skeleton: {refusal}")
        home = raw == "~" or raw.startswith("~/")
        path = Path(ctx.cwd, str(Path.home()) + raw[1:] if home else raw)
        if path.suffix not in PYTHON_SUFFIXES:
            return refuse(f"read_skeleton: {raw} is not a Python file (.py or .pyi); use Read")
        try:
            source = await anyio.to_thread.run_sync(_read_source, path)
        except OSError as exc:
            return refuse(f"read_skeleton: cannot read {raw}: {exc.strerror or exc}")
        try:
            return ok(skeleton_of(source, str(path)))
        except SyntaxError as exc:
            return refuse(f"read_skeleton: {raw} does not parse (line {exc.lineno}: {exc.msg})")

    return [
        define(
            "read_skeleton",
            "Read a Python file's classes, function signatures and docstrings only (bodies "
            "left out, line numbers given): far smaller than a full Read.",
            [Param("path", "string", "The file, absolute or relative to the cwd.", required=True)],
            read_skeleton,
        )
    ]
