"""Lane contracts: the YAML front matter of a role doc, which says what a panel may do.

A role doc may open with front matter between two lines that are exactly `---`:

    ---
    writable: ["src/**", "tests/**"]   # globs, relative to the panel's working directory
    readable: ["**", "/usr/share/doc/**"]
    tools: [Read, Write, Bash, "mcp__mnemara__*"]
    recipients: [reviewer]             # "*" also allows a broadcast
    commands: ['pytest( -q)?', 'git status']  # the only shell commands the panel may run
    max_turn_tool_calls: 40
    ---

A key left out does not restrict that dimension, except `readable`: once a lane is declared,
reads are allowed only under the user's home directory and the panel's working directory
(home-only, as the permission policy's own default) unless `readable` says otherwise. An
empty front matter (`---` then `---`) is a lane with every key left out.
The body after the closing line is the system prompt, so a change to the lane alone leaves
the prompt prefix (and the prompt cache) untouched. The guard enforces the lane
(runtime/guard/lane.py).

The front matter is parsed strictly, because a lane that is misread is a lane silently
widened: PyYAML's safe composer builds the node tree (nothing is constructed), and the walk
here refuses anchors and aliases, tags, duplicate and unknown keys, tab indentation, values
of the wrong type (YAML 1.1 reads `no`, `on` and `yes` as booleans: such an entry must be
quoted), empty strings, more than `MAX_FRONT_MATTER_BYTES` of front matter and lists over
`MAX_LIST_ENTRIES`. Each refusal is a LaneError naming the file, the line and the field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from runtime.errors import LaneError, PolicyError
from runtime.instance.roledoc import read_role_doc
from runtime.policy.patterns import SafePattern, compile_pattern

MAX_FRONT_MATTER_BYTES = 64 * 1024
MAX_LIST_ENTRIES = 1_000
LIST_KEYS = ("writable", "readable", "tools", "recipients", "commands")
KEYS = (*LIST_KEYS, "max_turn_tool_calls")
FENCE = "---"
_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_TYPE_NAMES = {
    "tag:yaml.org,2002:bool": "a boolean (YAML 1.1 reads yes/no/on/off as one)",
    "tag:yaml.org,2002:int": "a number",
    "tag:yaml.org,2002:float": "a number",
    "tag:yaml.org,2002:null": "empty (null)",
    "tag:yaml.org,2002:timestamp": "a date",
}
# How `describe` shows a key left out, where that is not "(not restricted)".
_ABSENT = {
    "readable": "(home and working directory only)",
    "commands": "(not restricted: the policy decides)",
}
_LEADING_TAB = re.compile(r"^[ ]*\t")
_LINES = re.compile(r"[^\n]*\n|[^\n]+")  # lines split at "\n" only, each with its end


@dataclass(frozen=True)
class Lane:
    """What a role doc's front matter allows; None for a key left out (not restricted)."""

    writable: tuple[str, ...] | None = None
    readable: tuple[str, ...] | None = None
    tools: tuple[str, ...] | None = None
    recipients: tuple[str, ...] | None = None
    commands: tuple[str, ...] | None = None
    max_turn_tool_calls: int | None = None
    source: str = ""  # the role doc it came from
    # `commands` compiled with the policy's stored-pattern checks (patterns.py).
    command_patterns: tuple[SafePattern, ...] = field(default=(), compare=False, repr=False)

    def as_dict(self) -> dict[str, Any]:
        """The role doc (`source`), each key's value (None: not restricted) and `describe()`."""
        fields = {key: getattr(self, key) for key in KEYS}
        return {"source": self.source, **fields, "lines": self.describe()}

    def describe(self) -> list[str]:
        """One short line per key, for `mnemara show` and the dashboard."""
        lines = []
        for key in LIST_KEYS:
            value: tuple[str, ...] | None = getattr(self, key)
            if value is None:
                shown = _ABSENT.get(key, "(not restricted)")
            else:
                shown = ", ".join(value) if value else "(none)"
            lines.append(f"{key}: {shown}")
        limit = self.max_turn_tool_calls
        lines.append(f"max_turn_tool_calls: {'(not restricted)' if limit is None else limit}")
        return lines


def read_lane(path: Path) -> Lane | None:
    """The lane the role doc at `path` declares as it is on disk now, the one the panel's next
    turn enforces (None: no front matter). RoleDocError (LaneError) says what is wrong."""
    lane, _ = split_front_matter(read_role_doc(path), str(path))
    return lane


def split_front_matter(text: str, path: str) -> tuple[Lane | None, str]:
    """The lane a role doc declares, and its body (the system prompt).

    `text` is the role doc as read (roledoc.py has already dropped a byte-order mark). With
    no front matter: `(None, text)`. The body is the text after the closing `---` line,
    byte for byte. Raises LaneError when the front matter is present but unusable.
    """
    lines = _LINES.findall(text)
    if not lines or _strip_newline(lines[0]) != FENCE:
        return None, text
    size = 0
    for index, line in enumerate(lines[1:], start=1):
        if _strip_newline(line) == FENCE:
            front = "".join(lines[1:index])
            return parse_lane(front, path), "".join(lines[index + 1 :])
        size += len(line.encode("utf-8"))
        if size > MAX_FRONT_MATTER_BYTES:
            raise LaneError(
                f"is larger than {MAX_FRONT_MATTER_BYTES // 1024} KiB",
                "a lane is a few short lists; shorten it",
                path=path,
                line=index + 1,
            )
    raise LaneError(
        "opens with `---` but has no closing `---` line",
        "end the front matter with a line that is exactly `---`",
        path=path,
        line=1,
    )


def parse_lane(front: str, path: str) -> Lane:
    """The lane in `front` (the text between the fences; its line 1 is the doc's line 2)."""
    for number, text in enumerate(front.split("\n"), start=2):
        if _LEADING_TAB.match(text):
            raise LaneError("indents with a tab", "indent with spaces", path=path, line=number)
    try:
        _refuse_anchors_and_tags(front, path)
        root = yaml.compose(front, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = int(mark.line) + 2 if mark is not None else 1
        problem = exc.problem or exc.context or "is not valid YAML"
        raise LaneError(
            f"is not valid YAML ({problem})", "fix the syntax", path=path, line=where
        ) from None
    except yaml.YAMLError as exc:
        raise LaneError(f"is not valid YAML ({exc})", "fix the syntax", path=path, line=1) from None
    if root is None:
        return Lane(source=path)
    if not isinstance(root, yaml.MappingNode):
        raise LaneError(
            "is not a mapping of keys to values",
            f"write `key: value` lines with the keys {', '.join(KEYS)}",
            path=path,
            line=_line(root),
        )
    values: dict[str, object] = {}
    for key_node, value_node in root.value:
        key = _key(key_node, path)
        if key in values:
            raise LaneError(
                "is given twice", "keep one of them", path=path, line=_line(key_node), field=key
            )
        if key == "max_turn_tool_calls":
            values[key] = _count(value_node, path)
        else:
            values[key] = _strings(key, value_node, path)
    commands = values.get("commands")
    patterns = _compile(commands, root, path) if isinstance(commands, tuple) else ()
    return Lane(**values, source=path, command_patterns=patterns)  # type: ignore[arg-type]


def _refuse_anchors_and_tags(front: str, path: str) -> None:
    """Anchors, aliases and explicit tags make one spelling mean another: refused, before
    any node is built (so an alias bomb is never expanded)."""
    for event in yaml.parse(front, Loader=yaml.SafeLoader):
        mark = event.start_mark
        line = int(mark.line) + 2 if mark is not None else 1
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise LaneError(
                "uses a YAML anchor or alias (& or *)",
                "write each value out in full (quote a glob that starts with *)",
                path=path,
                line=line,
            )
        if getattr(event, "tag", None) is not None:
            raise LaneError(
                f"uses a YAML tag ({event.tag})",  # type: ignore[attr-defined]
                "remove the tag; write plain lists of strings",
                path=path,
                line=line,
            )


def _key(node: yaml.Node, path: str) -> str:
    if not isinstance(node, yaml.ScalarNode) or node.tag != _STR:
        raise LaneError(
            "has a key that is not a plain name",
            f"use one of {', '.join(KEYS)}",
            path=path,
            line=_line(node),
        )
    if node.value not in KEYS:
        raise LaneError(
            "is not a lane key",
            f"the keys are {', '.join(KEYS)}",
            path=path,
            line=_line(node),
            field=node.value,
        )
    return str(node.value)


def _strings(key: str, node: yaml.Node, path: str) -> tuple[str, ...]:
    if not isinstance(node, yaml.SequenceNode):
        raise LaneError(
            f"is {_what(node)}, not a list",
            f'write a list of strings, e.g. {key}: ["..."]',
            path=path,
            line=_line(node),
            field=key,
        )
    if len(node.value) > MAX_LIST_ENTRIES:
        raise LaneError(
            f"has {len(node.value)} entries, more than {MAX_LIST_ENTRIES}",
            "shorten it (a glob covers many paths)",
            path=path,
            line=_line(node),
            field=key,
        )
    found: list[str] = []
    for index, item in enumerate(node.value):
        where = f"{key}[{index}]"
        if not isinstance(item, yaml.ScalarNode) or item.tag != _STR:
            raise LaneError(
                f"is {_what(item)}, not a string",
                "quote it",
                path=path,
                line=_line(item),
                field=where,
            )
        value = str(item.value)
        if not value.strip() or "\x00" in value:
            raise LaneError(
                "is empty", "remove it or write it out", path=path, line=_line(item), field=where
            )
        found.append(value)
    return tuple(found)


def _count(node: yaml.Node, path: str) -> int:
    text = node.value if isinstance(node, yaml.ScalarNode) else None
    if node.tag != _INT or not isinstance(text, str) or not re.fullmatch(r"[0-9]{1,9}", text):
        raise LaneError(
            f"is {_what(node)}, not a whole number of 0 or more",
            "write a number such as 40, or remove the key",
            path=path,
            line=_line(node),
            field="max_turn_tool_calls",
        )
    return int(text)


def _compile(
    commands: tuple[str, ...], root: yaml.MappingNode, path: str
) -> tuple[SafePattern, ...]:
    """Each `commands` entry, checked as the policy checks a stored Bash pattern."""
    items = next(v for k, v in root.value if k.value == "commands").value
    compiled = []
    for index, (source, item) in enumerate(zip(commands, items, strict=True)):
        try:
            compiled.append(compile_pattern(source))
        except PolicyError as exc:
            why = str(exc).removeprefix("policy: ")
            raise LaneError(
                why,
                "fix the pattern (a full-match regex)",
                path=path,
                line=_line(item),
                field=f"commands[{index}]",
            ) from None
    return tuple(compiled)


def _what(node: yaml.Node) -> str:
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    return _TYPE_NAMES.get(node.tag, "a string" if node.tag == _STR else "not a string")


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 2  # the front matter starts on the doc's line 2


def _strip_newline(line: str) -> str:
    return line.removesuffix("\n").removesuffix("\r")
