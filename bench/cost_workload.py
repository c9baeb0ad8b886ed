"""The scripted coding session of the cost benchmark: a workspace, the tasks, the model's moves.

Deterministic: the same task number always gets the same tool calls and the same words, so
both prompt layouts see the same conversation. Each task is one turn:

- read:  the model reads a module (Read), then sums it up;
- edit:  reads a module, appends a function to it (Edit), then reports;
- test:  runs the test script (Bash), then reports what it printed;
- talk:  answers in text only.

The model here is the rehearsal model's hook (`Workload.reply`), so every tool really runs in
the CLI and every result really comes back in the next request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtime.rehearsal import Reply

MODULES = 12
TASK = re.compile(r"\[task (\d+)\]")
KINDS = ("talk", "read", "edit", "test", "read", "edit", "test", "read", "edit", "test")
END_MARK = "# end of module"
TEST_SCRIPT = """#!/bin/sh
# A stand-in test run: a report the size of a small pytest run, without the wait.
n=$(grep -c '^def ' src/*.py | awk -F: '{s += $2} END {print s}')
echo "============================= test session starts =============================="
for f in src/*.py; do
  echo "tests/test_$(basename "$f" .py).py ........................................ [  8%]"
done
echo "FAILED tests/test_mod_03.py::test_parse_empty - AssertionError: expected [] got None"
echo "    def test_parse_empty():"
echo ">       assert parse_block('') == []"
echo "E       AssertionError: expected [] got None"
echo "=================== 1 failed, $n passed in 0.42s ==================="
"""


def module_text(k: int) -> str:
    """A Python module of 3-6 KB, distinct per k."""
    lines = [f'"""Module {k}: parsing and formatting helpers for record family {k}."""', ""]
    for j in range(6 + k % 5):
        lines += [
            f"def helper_{k}_{j}(records, limit={j + 3}):",
            f'    """Return the first {j + 3} records of family {k} that pass check {j}."""',
            "    kept = []",
            "    for record in records:",
            f"        if record.get('family') == {k} and record.get('score', 0) > {j * 7}:",
            "            kept.append({'id': record['id'], 'score': record['score']})",
            "        if len(kept) >= limit:",
            "            break",
            "    return kept",
            "",
        ]
    return "\n".join([*lines, END_MARK, ""])


def make_workspace(root: Path) -> Path:
    """Create the project the session works on; returns its directory."""
    (root / "src").mkdir(parents=True)
    for k in range(MODULES):
        (root / "src" / f"mod_{k:02d}.py").write_text(module_text(k), encoding="utf-8")
    script = root / "run_tests"
    script.write_text(TEST_SCRIPT, encoding="utf-8")
    script.chmod(0o755)
    return root


def task_kind(n: int) -> str:
    return KINDS[n % len(KINDS)]


def module_of(n: int) -> str:
    return f"src/mod_{(n * 5) % MODULES:02d}.py"


def task_input(n: int) -> str:
    """What the operator types for task n."""
    kind, module = task_kind(n), module_of(n)
    ask = {
        "talk": "Summarise where we are and what you would do next, in a few lines.",
        "read": f"Read {module} and tell me which helpers could share code.",
        "edit": f"Add a small helper for task {n} at the end of {module}.",
        "test": "Run the tests and tell me what fails.",
    }[kind]
    return f"[task {n}] {ask}"


@dataclass
class Workload:
    """The model's side of the session, answering from the request it is sent."""

    workspace: Path
    replies: int = field(default=0)

    def reply(self, body: dict[str, Any]) -> Reply:
        self.replies += 1
        messages = body.get("messages", [])
        found = TASK.findall(_all_text(messages[0]) if messages else "")
        n = int(found[-1]) if found else 0
        step = sum(1 for m in messages if m.get("role") == "assistant")
        return self.move(n, step)

    def move(self, n: int, step: int) -> Reply:
        """The reply to step `step` (0 = the task itself, then one per tool result)."""
        kind, module = task_kind(n), module_of(n)
        path = str(self.workspace / module)
        if kind == "read" and step == 0:
            return Reply.tool("Read", {"file_path": path}, text=f"Reading {module} first.")
        if kind == "edit" and step == 0:
            return Reply.tool("Read", {"file_path": path}, text=f"Opening {module} to edit it.")
        if kind == "edit" and step == 1:
            new = f"def added_for_task_{n}(records):\n    return len(records) + {n}\n\n{END_MARK}"
            edit = {"file_path": path, "old_string": END_MARK, "new_string": new}
            return Reply.tool("Edit", edit, text="Appending the helper.")
        if kind == "test" and step == 0:
            return Reply.tool("Bash", {"command": "./run_tests"}, text="Running the test script.")
        return Reply.text(_report(n, kind, module))


def _report(n: int, kind: str, module: str) -> str:
    said = {
        "talk": "The parser work is on track: the helpers are read, two were extended, and "
        "the one failure left is test_parse_empty. Next I would fix parse_block for empty "
        "input and run the whole suite again.",
        "read": f"{module} repeats the same filter loop in every helper; they differ only in "
        "the limit and the score threshold, so one parametrised function could replace them.",
        "edit": f"Added added_for_task_{n} at the end of {module}. Nothing else changed; the "
        "existing helpers are untouched.",
        "test": "The suite ran: everything passes except tests/test_mod_03.py::test_parse_empty, "
        "which expects [] for empty input and gets None.",
    }[kind]
    return f"Task {n}: {said}"


def _all_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(str(b.get("text", "")) for b in content or [] if isinstance(b, dict))
