"""The lane front matter of a role doc: what parses, what is refused, and the body kept exact.

Every refusal must name the file, the line within the role doc and (where one field is at
fault) the field, so the operator can fix it; the role docs are real files under tmp_path.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runtime.errors import LaneError, RoleDocError
from runtime.instance.lane import MAX_FRONT_MATTER_BYTES, Lane, split_front_matter
from runtime.instance.roledoc import read_role_doc


def doc(tmp_path: Path, text: str) -> tuple[str, str]:
    """Write a role doc and read it back as the session does: (text, path)."""
    path = tmp_path / "role.md"
    path.write_bytes(text.encode("utf-8"))
    return read_role_doc(path), str(path)


def refused(tmp_path: Path, text: str) -> LaneError:
    read, path = doc(tmp_path, text)
    with pytest.raises(LaneError) as caught:
        split_front_matter(read, path)
    return caught.value


def test_no_front_matter_is_no_lane_and_the_text_unchanged(tmp_path: Path) -> None:
    text, path = doc(tmp_path, "# Role\n---\nwritable: [x]\n---\n")
    assert split_front_matter(text, path) == (None, text)


def test_a_full_lane_parses_and_the_body_is_byte_exact(tmp_path: Path) -> None:
    body = "# Role\r\n\n  Indented — with ünïcode.\n---\ntrailing fence kept\n\n"
    text, path = doc(
        tmp_path,
        "---\n"
        'writable: ["src/**", tests/**]\n'
        "readable:\n  - '**'\n  - /usr/share/doc/**\n"
        "tools: [Read, Write, Bash, 'mcp__mnemara__*']\n"
        "recipients: [reviewer, '*']\n"
        "commands: ['pytest( -q)?', 'git status']\n"
        "max_turn_tool_calls: 40\n"
        "---\n" + body,
    )
    lane, rest = split_front_matter(text, path)
    assert rest == body
    assert lane == Lane(
        writable=("src/**", "tests/**"),
        readable=("**", "/usr/share/doc/**"),
        tools=("Read", "Write", "Bash", "mcp__mnemara__*"),
        recipients=("reviewer", "*"),
        commands=("pytest( -q)?", "git status"),
        max_turn_tool_calls=40,
        source=path,
    )
    assert [p.source for p in lane.command_patterns] == ["pytest( -q)?", "git status"]
    assert lane.describe()[0] == "writable: src/**, tests/**"


def test_a_byte_order_mark_and_crlf_fences_are_accepted(tmp_path: Path) -> None:
    text, path = doc(tmp_path, "\ufeff---\r\ntools: [Read]\r\n---\r\nbody\r\n")
    lane, rest = split_front_matter(text, path)
    assert lane is not None and lane.tools == ("Read",)
    assert rest == "body\r\n"


def test_an_empty_front_matter_is_a_lane_with_every_key_absent(tmp_path: Path) -> None:
    text, path = doc(tmp_path, "---\n---\nbody")
    lane, rest = split_front_matter(text, path)
    assert lane == Lane(source=path) and rest == "body"
    assert lane.describe() == [
        "writable: (not restricted)",
        "readable: (home and working directory only)",
        "tools: (not restricted)",
        "recipients: (not restricted)",
        "commands: (not restricted: the policy decides)",
        "max_turn_tool_calls: (not restricted)",
    ]


def test_an_empty_list_restricts_everything(tmp_path: Path) -> None:
    text, path = doc(tmp_path, "---\nwritable: []\n---\n")
    lane, _ = split_front_matter(text, path)
    assert lane is not None and lane.writable == ()
    assert "writable: (none)" in lane.describe()


def test_the_lane_as_show_json_prints_it(tmp_path: Path) -> None:
    text, path = doc(tmp_path, "---\nrecipients: [a]\n---\n")
    lane, _ = split_front_matter(text, path)
    assert lane is not None
    shown = json.loads(json.dumps(lane.as_dict()))
    assert shown["recipients"] == ["a"] and shown["writable"] is None
    assert shown["source"] == path and "recipients: a" in shown["lines"]


@pytest.mark.parametrize(
    ("text", "line", "field", "words"),
    [
        # Tabs used for indentation.
        ("---\nwritable:\n\t- src/**\n---\n", 3, None, "tab"),
        ("---\nwritable:\n  \t- src/**\n---\n", 3, None, "tab"),
        # Anchors and aliases, tags.
        ("---\nwritable: &w [src/**]\nreadable: *w\n---\n", 2, None, "anchor"),
        ("---\nwritable: [a]\nreadable: [*w]\n---\n", 3, None, "alias"),
        ("---\nwritable: !!python/object:os.system [a]\n---\n", 2, None, "tag"),
        ("---\ntools: [!!str Read]\n---\n", 2, None, "tag"),
        # Unknown and duplicate keys.
        ("---\ntools: [Read]\nwriteable: [src]\n---\n", 3, "writeable", "max_turn_tool_calls"),
        ("---\ntools: [Read]\ntools: [Bash]\n---\n", 3, "tools", "twice"),
        # YAML 1.1 booleans and other non-strings in a list.
        ("---\ntools: [Read, no]\n---\n", 2, "tools[1]", "boolean"),
        ("---\nrecipients:\n  - alice\n  - on\n---\n", 4, "recipients[1]", "boolean"),
        ("---\nwritable: [12]\n---\n", 2, "writable[0]", "number"),
        ("---\nwritable: [~]\n---\n", 2, "writable[0]", "null"),
        ("---\nwritable: [[a]]\n---\n", 2, "writable[0]", "a list"),
        # Wrong types.
        ("---\nwritable: src/**\n---\n", 2, "writable", "not a list"),
        ("---\nwritable:\n---\n", 2, "writable", "not a list"),
        ("---\nmax_turn_tool_calls: -1\n---\n", 2, "max_turn_tool_calls", "whole number"),
        ("---\nmax_turn_tool_calls: 1.5\n---\n", 2, "max_turn_tool_calls", "whole number"),
        ("---\nmax_turn_tool_calls: '40'\n---\n", 2, "max_turn_tool_calls", "whole number"),
        ("---\nmax_turn_tool_calls: 0x10\n---\n", 2, "max_turn_tool_calls", "whole number"),
        ("---\n- writable\n---\n", 2, None, "mapping"),
        ("---\njust text\n---\n", 2, None, "mapping"),
        # Empty strings.
        ("---\ntools: [Read, '']\n---\n", 2, "tools[1]", "empty"),
        ("---\nwritable: ['  ']\n---\n", 2, "writable[0]", "empty"),
        # A commands pattern the policy would refuse.
        ("---\ncommands: ['git status', '(a)\\1']\n---\n", 2, "commands[1]", "RE2"),
        ("---\ncommands:\n  - 'ok'\n  - '(unclosed'\n---\n", 4, "commands[1]", "regex"),
        # Broken YAML.
        ("---\ntools: [Read\n---\n", 3, None, "not valid YAML"),
        ("---\ntools: [Read]\n...\nmore: 1\n---\n", 4, None, "not valid YAML"),
        # Unclosed.
        ("---\ntools: [Read]\n# no closing fence\n", 1, None, "closing"),
    ],
)
def test_bad_front_matter_names_file_line_and_field(
    tmp_path: Path, text: str, line: int, field: str | None, words: str
) -> None:
    error = refused(tmp_path, text)
    message = str(error)
    where = f"lane field '{field}'" if field else "lane front matter"
    assert message.startswith(f"{tmp_path / 'role.md'}:{line}: {where}: "), message
    assert words in message
    assert "; " in message  # and then what to do
    assert error.line == line and error.field == field
    assert isinstance(error, RoleDocError)


def test_a_huge_front_matter_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    entries = "".join(f"  - src/{i:06d}/**\n" for i in range(MAX_FRONT_MATTER_BYTES // 10))
    error = refused(tmp_path, "---\nwritable:\n" + entries + "---\n")
    assert "KiB" in str(error) and error.line < MAX_FRONT_MATTER_BYTES // 10


def test_a_list_over_a_thousand_entries_is_refused(tmp_path: Path) -> None:
    entries = ", ".join(f"a{i}" for i in range(1_001))
    error = refused(tmp_path, f"---\nrecipients: [{entries}]\n---\n")
    assert error.field == "recipients" and "1001 entries" in str(error)


def test_an_alias_bomb_is_refused_without_being_expanded(tmp_path: Path) -> None:
    lines = ["---", "a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]" for i in range(1, 30)]
    error = refused(tmp_path, "\n".join([*lines, "---", ""]))
    assert "anchor" in str(error) and error.line == 2


def test_the_body_may_contain_fences_and_yaml(tmp_path: Path) -> None:
    body = "---\ntools: [Bash]\n---\n"
    text, path = doc(tmp_path, "---\ntools: [Read]\n---\n" + body)
    lane, rest = split_front_matter(text, path)
    assert lane is not None and lane.tools == ("Read",) and rest == body
