"""`read_skeleton`: a Python file's classes, signatures and docstrings, without the bodies.

Parsed with `ast`, never imported or run. The path goes through the same permission check as
the native Read tool (the session asks its policy about a synthetic Read call), so a file the
agent may not Read cannot be skeletonised either. Each definition carries its line number, so
a targeted Read can follow. The file is read by `runtime.regular_file`: a FIFO, device, socket
or directory is refused without blocking, at most 5 MiB are read, and a cancelled turn stops
the read at the next chunk (#24).
"""

from __future__ import annotations

import ast
from pathlib import Path

import anyio.from_thread
import anyio.to_thread

from runtime.driver import ToolOutput, ToolSpec
from runtime.regular_file import read_regular_file
from runtime.tools.context import ToolContext
from runtime.tools.params import Args, Param, define, ok, refuse

MAX_SOURCE_BYTES = 5 * 1024 * 1024
PYTHON_SUFFIXES = (".py", ".pyi")
Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def _docstring(node: ast.AST, indent: str) -> list[str]:
    if not isinstance(node, Definition | ast.Module):
        return []
    doc = ast.get_docstring(node, clean=True)
    if not doc:
        return []
    body = doc.replace('"""', '\\"\\"\\"').splitlines()
    if len(body) == 1:
        return [f'{indent}"""{body[0]}"""']
    return [
        f'{indent}"""{body[0]}',
        *(f"{indent}{line}" if line else "" for line in body[1:]),
        f'{indent}"""',
    ]


def _signature(node: Definition) -> str:
    if isinstance(node, ast.ClassDef):
        bases = [ast.unparse(b) for b in node.bases] + [ast.unparse(k) for k in node.keywords]
        return f"class {node.name}({', '.join(bases)}):" if bases else f"class {node.name}:"
    prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
    returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
    return f"{prefix} {node.name}({ast.unparse(node.args)}){returns}:"


def _render(nodes: list[ast.stmt], depth: int, out: list[str]) -> None:
    indent = "    " * depth
    for node in nodes:
        if not isinstance(node, Definition):
            continue
        out.extend(f"{indent}@{ast.unparse(d)}" for d in node.decorator_list)
        out.append(f"{indent}{_signature(node)}  # line {node.lineno}")
        doc = _docstring(node, indent + "    ")
        out.extend(doc)
        if isinstance(node, ast.ClassDef):
            before = len(out)
            _render(node.body, depth + 1, out)
            if len(out) == before and not doc:
                out.append(f"{indent}    ...")
        elif not doc:
            out.append(f"{indent}    ...")


def skeleton_of(source: str, filename: str = "<source>") -> str:
    """The skeleton of Python source; SyntaxError propagates for the caller to report."""
    tree = ast.parse(source, filename=filename)
    out = [f"# skeleton of {filename}: signatures and docstrings only"]
    out.extend(_docstring(tree, ""))
    _render(tree.body, 0, out)
    return "\n".join(out) + "\n"


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
