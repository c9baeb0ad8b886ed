"""A Python file's skeleton as text: its classes, signatures and docstrings, without the bodies.

Parsed with `ast`, never imported or run. Pure: the agent's `read_skeleton` tool
(runtime/tools/skeleton.py) and the faces' `/skeleton` command read the file and hand the
source here, so a viewer renders one without loading the tools.
"""

from __future__ import annotations

import ast

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
