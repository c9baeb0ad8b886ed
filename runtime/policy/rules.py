"""`permissions.json`: the persisted "always allow" rules, loaded fail-closed, saved under a lock.

The file maps a tool name to its allow-patterns, as the original mnemara wrote it:

    {"Bash": ["git\\\\ status"], "Write": ["/home/me/notes/todo\\\\.md"]}

Loading refuses the whole file (PolicyError naming it and the field) when it is not JSON,
not that shape, or holds a pattern RE2 cannot run (patterns.py): a policy that
cannot be read completely is not used at all. Saving takes an exclusive lock on a sibling
`.lock` file, re-reads the file under it, merges and writes atomically, so two processes
answering "always" at the same moment both keep their rule. The lock is a separate file
because the atomic rename replaces the data file's inode, and a lock on a replaced inode
protects nothing.
"""

from __future__ import annotations

import fcntl
import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from runtime.errors import PolicyError
from runtime.instance.config import write_json_atomic
from runtime.policy.patterns import SafePattern, compile_pattern, exact_pattern
from sqlitekit.jsonload import load_json


@dataclass(frozen=True)
class RuleSet:
    """Allow-patterns per tool, all compiled and checked."""

    by_tool: Mapping[str, tuple[SafePattern, ...]] = field(default_factory=dict)

    def patterns_for(self, tool: str) -> tuple[SafePattern, ...]:
        return self.by_tool.get(tool, ())

    def sources(self) -> dict[str, list[str]]:
        return {tool: [p.source for p in pats] for tool, pats in sorted(self.by_tool.items())}

    def with_patterns(self, tool: str, patterns: Sequence[SafePattern]) -> RuleSet:
        known = self.patterns_for(tool)
        seen = {p.source for p in known}
        added = tuple(p for p in patterns if p.source not in seen)
        return RuleSet({**self.by_tool, tool: known + added})


def parse_rules(data: object, *, path: Path | None = None) -> RuleSet:
    """Validate the decoded JSON of a permissions file; any problem raises PolicyError."""
    if not isinstance(data, dict):
        raise PolicyError("must be a JSON object mapping tool names to lists", path=path)
    by_tool: dict[str, tuple[SafePattern, ...]] = {}
    for tool, patterns in data.items():
        if not tool:
            raise PolicyError("empty tool name", path=path)
        if not isinstance(patterns, list):
            raise PolicyError("must be a list of patterns", path=path, field=tool)
        compiled: list[SafePattern] = []
        for i, source in enumerate(patterns):
            where = f"{tool}[{i}]"
            if not isinstance(source, str):
                raise PolicyError(f"must be a string (got {source!r})", path=path, field=where)
            compiled.append(compile_pattern(source, path=path, field=where))
        by_tool[tool] = tuple(compiled)
    return RuleSet(by_tool)


def load_rules(path: Path) -> RuleSet:
    """Read `path`; a missing file is an empty rule set, a damaged one a PolicyError."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return RuleSet()
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(f"cannot read ({exc}); fix or remove the file", path=path) from exc
    try:
        data = load_json(raw)
    except json.JSONDecodeError as exc:
        raise PolicyError(
            f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            "fix the file, or remove it to start with no remembered rules",
            path=path,
        ) from exc
    return parse_rules(data, path=path)


def remember_targets(path: Path, tool: str, targets: Sequence[str]) -> RuleSet:
    """Add an exact-match rule for each target, keeping every rule already on disk.

    Returns the rule set as saved. Blocking (file lock and fsync): call it from a thread.
    """
    patterns = [compile_pattern(exact_pattern(t), path=path, field=tool) for t in targets]
    with _locked(path):
        current = load_rules(path)
        updated = current.with_patterns(tool, patterns)
        if updated != current:
            write_json_atomic(path, updated.sources())
    return updated


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    lock_path = path.with_name(path.name + ".lock")
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a", encoding="utf-8") as handle:
        # flock is released by the kernel if the holder dies, so a crash never wedges saves.
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
