"""The script format and the choice of reply: pure, no server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from runtime.rehearsal import (
    PanelScript,
    Reply,
    Rule,
    Script,
    ScriptError,
    TextItem,
    ThinkingItem,
    ToolUseItem,
    When,
    load_script,
    parse_script,
)
from runtime.rehearsal.matching import RequestView, ScriptCursor, schema_instance
from runtime.turn.prompt import build_prompt, render_transcript
from runtime.window.rows import Row

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "rehearsal"


def user(content: Any, *, trailing_system: bool = True) -> dict[str, Any]:
    """A request body shaped like the CLI's: the user message, then its system message."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": content}]
    if trailing_system:
        messages.append({"role": "system", "content": [{"type": "text", "text": "env"}]})
    return {"model": "claude-opus-5-5", "messages": messages}


def tool_result(text: str) -> dict[str, Any]:
    return {
        "messages": [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": text}],
            },
        ]
    }


SOLO = """
[panels.eng]
fallback_text = "All done."

[[panels.eng.replies]]
when = { user_text_contains = "hello" }
text = "Hi."

[[panels.eng.replies]]
content = [
  { thinking = "plan", signature = "s1" },
  { text = "ab", repeat = 3 },
  { tool_use = "Bash", input = { command = "ls" } },
]

[[panels.eng.replies]]
when = { tool_result_contains = "" }
text = "Saw the result."
times = "always"
"""


def test_parse_builds_rules_with_items_and_labels() -> None:
    panel = parse_script(SOLO).panels["eng"]
    assert panel.fallback_text == "All done."
    first, second, third = panel.rules
    assert first.when == When(user_text_contains="hello")
    assert first.reply.content == (TextItem("Hi."),)
    assert second.when is None
    assert second.reply.content == (
        ThinkingItem("plan", "s1"),
        TextItem("ababab"),
        ToolUseItem("Bash", {"command": "ls"}),
    )
    assert second.reply.effective_stop_reason == "tool_use"
    assert third.times is None
    assert second.label == "panels.eng.replies[1]"


@pytest.mark.parametrize(
    ("text", "field", "words"),
    [
        ("[panels.a]\n[[panels.a.replies]]\ntxt = 'x'\n", "panels.a.replies[0].txt", "Extra"),
        (
            "[panels.a]\n[[panels.a.replies]]\ncontent = [{ text = 'x', tool_use = 'B' }]\n",
            "panels.a.replies[0].content[0]",
            "exactly one of text, thinking, tool_use",
        ),
        (
            "[panels.a]\n[[panels.a.replies]]\nwhen = {}\ntext = 'x'\n",
            "panels.a.replies[0].when",
            "condition",
        ),
        (
            "[panels.a]\n[[panels.a.replies]]\nerror = 'meltdown'\n",
            "panels.a.replies[0].error",
            "overloaded",
        ),
        (
            "[panels.a]\n[[panels.a.replies]]\ntimes = 0\ntext = 'x'\n",
            "panels.a.replies[0]",
            "times",
        ),
        (
            "[panels.a]\n[[panels.a.replies]]\nstop_reason = 'end_turn'\n",
            "panels.a.replies[0]",
            "needs",
        ),
    ],
)
def test_invalid_script_names_file_and_field(text: str, field: str, words: str) -> None:
    with pytest.raises(ScriptError) as caught:
        parse_script(text, source="bad.toml")
    message = str(caught.value)
    assert message.startswith(f"bad.toml: field '{field}'")
    assert words in message
    assert caught.value.field == field


def test_bad_toml_and_missing_file_are_script_errors(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match="not valid TOML"):
        parse_script("[panels", source="x.toml")
    with pytest.raises(ScriptError, match="cannot read"):
        load_script(tmp_path / "absent.toml")


@pytest.mark.parametrize("name", ["solo.toml", "team.toml", "faults.toml"])
def test_example_scripts_parse(name: str) -> None:
    assert load_script(EXAMPLES / name).panels


def test_conditional_rules_beat_ordered_ones_and_are_used_up() -> None:
    cursor = ScriptCursor(parse_script(SOLO).panels["eng"])
    assert cursor.choose(user("hello there")).source == "panels.eng.replies[0]"
    # "hello" is still in the text, but that rule is used up: the ordered rule answers.
    assert cursor.choose(user("hello again")).source == "panels.eng.replies[1]"
    assert cursor.choose(tool_result("x")).reply.content == (TextItem("Saw the result."),)
    assert cursor.choose(tool_result("y")).source == "panels.eng.replies[2]"  # "always"
    fallback = cursor.choose(user("anything else"))
    assert (fallback.source, fallback.reply) == ("fallback", Reply.text("All done."))


def turn(rows: dict[int, str], input_text: str) -> dict[str, Any]:
    """A turn's first request as a mnemara panel sends it: the window's rows, then the input."""
    stored = [
        Row(row_id, "", "user", ({"type": "text", "text": text},), 1)
        for row_id, text in rows.items()
    ]
    prompt = build_prompt(role_doc="", transcript=render_transcript(stored), input_text=input_text)
    return user(list(prompt.blocks))


WATCH = """
[panels.watch]
fallback_text = "Nothing new."

[[panels.watch.replies]]
when = { user_text_contains = "ALARM" }
text = "Sounding the alarm."

[[panels.watch.replies]]
when = { inbox_from = "producer" }
text = "Heard the producer."
"""


def test_a_script_started_over_does_not_match_rows_from_before_it_began() -> None:
    """A panel brought up again re-sends its earlier life's rows; its script starts over and
    matches only what came since (issue 30)."""
    cursor = ScriptCursor(parse_script(WATCH).panels["watch"])
    earlier = {
        1: "ALARM in the lab",
        2: "Sounding the alarm.",
        3: '<message from="producer">t</message>',
    }
    assert cursor.choose(turn(earlier, "all quiet")).source == "fallback"
    this_run = {**earlier, 4: "all quiet", 5: "Nothing new."}
    assert cursor.choose(turn(this_run, "ALARM again")).source == "panels.watch.replies[0]"
    # Rows written during this run stay in view, as in a first run.
    this_run |= {6: "ALARM again", 7: '<message from="producer">task</message>'}
    assert cursor.choose(turn(this_run, "go on")).source == "panels.watch.replies[1]"


def test_strict_panel_refuses_unscripted_requests() -> None:
    cursor = ScriptCursor(PanelScript(strict=True))
    choice = cursor.choose(user("hi"))
    assert choice.unscripted
    assert choice.reply.error == "invalid_request"


def test_all_conditions_of_a_when_must_hold() -> None:
    when = When(user_text_contains="parse.py", inbox_from="producer")
    assert when.matches(RequestView.of(user('<message from="producer">write parse.py</message>')))
    assert not when.matches(RequestView.of(user('<message from="tester">write parse.py</message>')))
    assert not when.matches(RequestView.of(user('<message from="producer">hi</message>')))


def test_request_view_reads_the_latest_user_message_only() -> None:
    body = tool_result("exit 0")
    view = RequestView.of(body)
    assert view.user_text == ""
    assert view.tool_results == ("exit 0",)
    assert view.answers_tool_call
    blocks = [
        {"type": "text", "text": "From: engineer\ndone"},
        {"type": "text", "text": "x sender='qa'"},
    ]
    assert RequestView.of(user(blocks)).inbox_senders == {"engineer", "qa"}
    listed = {
        "type": "tool_result",
        "tool_use_id": "t",
        "content": [{"type": "text", "text": "ok"}],
    }
    assert RequestView.of(user([listed])).tool_results == ("ok",)


def test_hook_answers_first_and_may_defer_to_the_rules() -> None:
    seen: list[dict[str, Any]] = []

    def hook(body: dict[str, Any]) -> Reply | None:
        seen.append(body)
        return Reply.failure("overloaded") if "fail" in str(body) else None

    rule = Rule(Reply.text("scripted"))
    cursor = ScriptCursor(PanelScript(rules=(rule,), hook=hook))
    assert cursor.choose(user("please fail")).reply.error == "overloaded"
    assert cursor.choose(user("fine")).reply == Reply.text("scripted")
    assert len(seen) == 2
    assert Script.from_hooks({"p": hook}).panels["p"].hook is hook


def test_structured_side_requests_use_up_no_rule() -> None:
    cursor = ScriptCursor(parse_script(SOLO).panels["eng"])
    schema = {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}
    body = {**user("hello"), "output_config": {"format": {"type": "json_schema", "schema": schema}}}
    choice = cursor.choose(body)
    assert (choice.source, choice.reply) == (
        "structured-default",
        Reply.text('{"title": "rehearsal"}'),
    )
    assert cursor.choose(user("hello")).source == "panels.eng.replies[0]"


def test_schema_instance_fills_required_fields() -> None:
    schema = {
        "type": "object",
        "required": ["n", "ok", "tags", "kind"],
        "properties": {
            "n": {"type": "integer"},
            "ok": {"type": "boolean"},
            "tags": {"type": "array"},
            "kind": {"enum": ["a", "b"]},
            "skip": {"type": "string"},
        },
    }
    assert schema_instance(schema) == {"n": 0, "ok": False, "tags": [], "kind": "a"}


def test_reply_helpers() -> None:
    assert Reply.text("x").effective_stop_reason == "end_turn"
    tool = Reply.tool("Bash", {"command": "ls"}, text="running")
    assert tool.effective_stop_reason == "tool_use"
    ids = iter(["toolu_a"])
    assert tool.with_tool_ids(lambda: next(ids)).content[1] == ToolUseItem(
        "Bash", {"command": "ls"}, "toolu_a"
    )
    assert Reply.failure("rate_limited", in_stream=True).faults.error_in_stream
