"""The runtime sentinel: loops stop before the looping call runs; honest repeats never do."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from itertools import count
from typing import Any

import pytest
from pydantic import ValidationError

from runtime.guard.calls import call_key, effect_of, normalise_output, outcome_digest
from runtime.guard.sentinel import Sentinel, SentinelVerdict, WorldState, canonical_arguments
from runtime.instance.guard_settings import DEFAULT_BOOKKEEPING_TOOLS, SentinelSettings
from runtime.turn.driver import ToolCallRequest

NOON = datetime(2026, 1, 1, 12, tzinfo=UTC)
_ids = count()


def call(name: str, **args: Any) -> ToolCallRequest:
    return ToolCallRequest(tool_use_id=f"toolu_{next(_ids)}", name=name, input=args)


def bash(command: str) -> ToolCallRequest:
    return call("Bash", command=command)


def poll() -> ToolCallRequest:
    return bash("curl -s localhost:8000/status")


def run(
    sentinel: Sentinel,
    request: ToolCallRequest,
    *,
    error: bool = False,
    out: str = "",
    world: WorldState | None = None,
) -> SentinelVerdict:
    """Observe a call and, unless halted, its result, as the driver would."""
    verdict = sentinel.observe_call(request, world)
    if not verdict.halt:
        sentinel.observe_result(request.tool_use_id, is_error=error, content=out)
    return verdict


def make(**settings: Any) -> Sentinel:
    return Sentinel(SentinelSettings(**settings), clock=lambda: NOON)


class Files:
    """A measured world: files by content, as the guard's probe would hash them."""

    def __init__(self, **files: str) -> None:
        self.files = {f"/w/{k}": v for k, v in files.items()}
        self.git: str | None = None

    def write(self, name: str, text: str) -> None:
        self.files[f"/w/{name}"] = text

    def state(self) -> WorldState:
        hashed = tuple(
            (path, hashlib.sha256(text.encode()).hexdigest())
            for path, text in sorted(self.files.items())
        )
        return WorldState(files_written=hashed, git_tree=self.git)


def test_a_polling_loop_stops_before_its_third_call_and_resets_after() -> None:
    sentinel = make()
    sentinel.begin_turn(7)
    first, second = poll(), poll()
    assert not run(sentinel, first).halt
    assert not run(sentinel, second).halt
    third = poll()
    verdict = sentinel.observe_call(third)
    assert verdict.halt
    record = verdict.record
    assert record is not None
    assert (record.source, record.rule, record.turn, record.at) == ("sentinel", "repeat", 7, NOON)
    assert [c.tool_use_id for c in record.calls] == [
        first.tool_use_id,
        second.tool_use_id,
        third.tool_use_id,
    ]
    assert record.notice().startswith("[SENTINEL HALT] repeat:")
    assert sentinel.end_turn().halt is False
    assert not run(sentinel, poll()).halt  # a new turn starts clean
    assert not run(sentinel, poll()).halt
    sentinel.reset()  # the operator resumed
    assert not run(sentinel, poll()).halt


@pytest.mark.parametrize(
    "commands",
    [
        ["sleep 5 && curl -s ci/x", "sleep 10 && curl -s ci/x", "sleep 1m && curl  -s 'ci/x'"],
        [f"git log --since=2026-12-01T10:00:0{i} --oneline" for i in range(3)],
        [f"curl 'ci/events?since=2026-12-01T10:0{i}:00Z'" for i in range(3)],
        [f"kubectl rollout status deploy/api --timeout={t}s" for t in (30, 60, 120)],
        [f"timeout {t} gh run watch 42 --interval {t}" for t in (5, 10, 20)],
    ],
)
def test_polling_that_differs_only_in_waits_and_times_stops_at_the_third_call(
    commands: list[str],
) -> None:
    sentinel = make()
    assert not run(sentinel, bash(commands[0]), out="running (12:00:01)").halt
    assert not run(sentinel, bash(commands[1]), out="running (12:00:09)").halt
    verdict = sentinel.observe_call(bash(commands[2]))
    assert verdict.halt and verdict.record is not None and verdict.record.rule == "repeat"


def test_wait_inputs_of_other_tools_are_normalised() -> None:
    sentinel = make()
    for seconds in (30, 60):
        assert not run(sentinel, call("mcp__ci__wait_for_job", job=42, timeout=seconds)).halt
    assert sentinel.observe_call(call("mcp__ci__wait_for_job", timeout=90, job=42)).halt
    # the Bash tool's own `timeout` and `description` inputs do not make calls differ
    assert call_key("Bash", {"command": "ls", "timeout": 1000, "description": "List"}) == (
        call_key("Bash", {"command": "ls", "timeout": 5000, "description": "List again"})
    )


def test_notes_between_polls_do_not_hide_the_loop() -> None:
    sentinel = make()
    inbox = {"limit": 10}
    for n in (1, 2):
        assert not run(sentinel, call("mcp__mnemara__list_inbox", **inbox), out="empty").halt
        note = call("mcp__mnemara__upsert_slot", label="status", content=f"waiting ({n})")
        assert not run(sentinel, note).halt
    verdict = sentinel.observe_call(call("mcp__mnemara__list_inbox", **inbox))
    assert verdict.halt and verdict.record is not None and verdict.record.rule == "repeat"


def test_git_status_after_each_edit_never_halts() -> None:
    sentinel = make()
    world = Files(**{"a.py": "v0"})
    for i in range(6):
        edit = call("Edit", file_path="/w/a.py", old_string=f"v{i}", new_string=f"v{i + 1}")
        assert not run(sentinel, edit, world=world.state()).halt
        world.write("a.py", f"v{i + 1}")
        assert not run(sentinel, bash("git status"), world=world.state()).halt


def test_without_a_measured_world_a_mutating_tool_counts_as_a_change() -> None:
    sentinel = make()
    for i in range(6):
        assert not run(sentinel, call("Edit", file_path="a.py", old=f"v{i}", new=f"{i}")).halt
        assert not run(sentinel, bash("git status")).halt


def test_an_identical_rewrite_is_not_progress() -> None:
    sentinel = make()
    world = Files(**{"conf.json": '{"a": 1}\n'})
    write = {"file_path": "/w/conf.json", "content": '{"a": 1}\n'}
    assert not run(sentinel, call("Write", **write), world=world.state()).halt
    assert not run(sentinel, bash("cat conf.json"), world=world.state()).halt
    assert not run(sentinel, call("Write", **write), world=world.state()).halt
    verdict = sentinel.observe_call(bash("cat conf.json"), world.state())
    assert verdict.halt and verdict.record is not None
    assert verdict.record.rule == "alternation"
    # Alone, the third identical rewrite is a repeat.
    sentinel = make()
    for _ in range(2):
        assert not run(sentinel, call("Write", **write), world=world.state()).halt
    assert sentinel.observe_call(call("Write", **write), world.state()).halt


def test_a_change_made_through_bash_is_progress_for_the_next_attempt() -> None:
    sentinel = make()
    world = Files(**{"util.py": "old_name()"})
    failure = "E   NameError: name 'new_name' is not defined\n1 failed in 0.12s"
    for fix in ("sed -i s/old_name/new_name/ util.py", "sed -i s/new/newer/ util.py"):
        assert not run(
            sentinel, bash("pytest -q"), error=True, out=failure, world=world.state()
        ).halt
        assert not run(sentinel, bash(fix), world=world.state()).halt
        world.write("util.py", world.files["/w/util.py"] + "!")  # what sed did on disk
    assert not run(sentinel, bash("pytest -q"), error=True, out=failure, world=world.state()).halt


def test_an_opaque_command_counts_once_as_a_change() -> None:
    sentinel = make()
    world = Files()
    missing = "ModuleNotFoundError: No module named 'requests'"
    for _ in range(2):
        run(sentinel, bash("python -m pytest -x"), error=True, out=missing, world=world.state())
        assert not run(sentinel, bash("pip install requests"), world=world.state()).halt
    # The same install a third time changes nothing for itself: a repeat, however often
    # other calls ran in between.
    verdict = sentinel.observe_call(bash("pip install requests"), world.state())
    assert verdict.halt and verdict.record is not None


def test_a_calls_own_changes_do_not_excuse_its_repeats() -> None:
    sentinel = make()
    world = Files(**{"ticks.txt": ""})
    tick = "echo tick >> ticks.txt"
    for n in (1, 2):
        assert not run(sentinel, bash(tick), world=world.state()).halt
        world.write("ticks.txt", "tick\n" * n)
    verdict = sentinel.observe_call(bash(tick), world.state())
    assert verdict.halt and verdict.record is not None and verdict.record.rule == "repeat"


def test_a_different_failure_output_rearms_the_failing_rule() -> None:
    sentinel = make(window=2, repeat_threshold=2, alternation_cycles=0)
    first, second = "FAILED test_a - assert 1 == 2", "FAILED test_b - KeyError: 'x'"
    filler = iter(range(100))
    for out in (first, second, first):
        assert not run(sentinel, bash("pytest -q"), error=True, out=out).halt
        run(sentinel, call("Read", file_path=f"f{next(filler)}.py"))
    verdict = sentinel.observe_call(bash("pytest -q"))
    assert not verdict.halt  # the last two failures differ


def test_failed_edits_are_not_progress() -> None:
    sentinel = make()
    edit = {"file_path": "a.py", "old_string": "x", "new_string": "y"}
    assert not run(sentinel, call("Edit", **edit), error=True).halt
    assert not run(sentinel, bash("git status")).halt
    assert not run(sentinel, call("Edit", **edit), error=True).halt
    verdict = run(sentinel, bash("git status"))
    assert verdict.halt and verdict.record is not None
    assert verdict.record.rule == "alternation"


def test_edit_retries_with_corrected_indentation_are_different_calls() -> None:
    sentinel = make()
    not_found = "String to replace not found in file."
    for indent in ("  ", "\t", "   "):
        edit = call("Edit", file_path="a.py", old_string=f"def f():\n{indent}return 1",
                    new_string=f"def f():\n{indent}return 2")  # fmt: skip
        assert not run(sentinel, edit, error=True, out=not_found).halt
    again = call("Edit", file_path="a.py", old_string="def f():\n   return 1",
                 new_string="def f():\n   return 2")  # fmt: skip
    assert not run(sentinel, again, error=True, out=not_found).halt
    # ... but the same payload a third time is stopped.
    verdict = sentinel.observe_call(call("Edit", **again.input))
    assert verdict.halt and verdict.record is not None


def test_arguments_are_canonicalised_before_comparing() -> None:
    sentinel = make()
    run(sentinel, call("Grep", pattern="TODO", path="src"))
    run(sentinel, call("Grep", path="src", pattern="TODO"))
    assert sentinel.observe_call(call("Grep", path="src", pattern="TODO")).halt
    # Only key order is canonical: whitespace inside values counts.
    assert canonical_arguments({"b": "x  y", "a": [" z "]}) == '{"a":[" z "],"b":"x  y"}'
    assert call_key("Grep", {"pattern": "TODO "}) != call_key("Grep", {"pattern": "TODO"})
    # A Bash command is parsed: spacing and quoting are not part of the command.
    assert call_key("Bash", {"command": "ls  -la   'src'"}) == call_key(
        "Bash", {"command": "ls -la src"}
    )


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("pytest -x -q", "pytest -q -x", True),
        ("pytest -x -q tests/a.py", "pytest -q -x tests/a.py", True),
        ("python -m pytest -x -q", "python -m pytest -q -x", True),
        ("git commit -a -m wip", "git commit -m -a wip", True),  # only option words move
        ("pytest tests/a.py tests/b.py", "pytest tests/b.py tests/a.py", False),
        ("git diff a -- b", "git diff b -- a", False),
        ("sed -e s/a/b/ -e s/b/c/ f", "sed -e s/b/c/ -e s/a/b/ f", False),
        ("find . -print -delete", "find . -delete -print", False),
        ("pytest -x -- -q", "pytest -q -- -x", False),
    ],
)
def test_option_order_is_canonical_where_it_is_safe(a: str, b: str, same: bool) -> None:
    assert (call_key("Bash", {"command": a}) == call_key("Bash", {"command": b})) is same


def test_the_same_failing_command_with_flags_reordered_is_caught() -> None:
    sentinel = make()
    failure = "FAILED tests/test_api.py::test_get - assert 404 == 200\n1 failed in {}s"
    for i, flags in enumerate(("-x -q", "-q -x")):
        out = failure.format(0.31 + i)
        assert not run(sentinel, bash(f"pytest {flags} tests/"), error=True, out=out).halt
        for j in range(4):
            run(sentinel, call("Read", file_path=f"src/m{i}{j}.py"))
    verdict = sentinel.observe_call(bash("pytest -x -q tests/"))
    assert verdict.halt and verdict.record is not None
    assert verdict.record.rule == "failing"


def test_same_failing_call_three_times_even_far_apart() -> None:
    sentinel = make(window=3)
    flaky = {"command": "npm run build"}
    for i in range(2):
        assert not run(sentinel, call("Bash", **flaky), error=True).halt
        for j in range(3):
            assert not run(sentinel, call("Read", file_path=f"f{i}{j}")).halt
    verdict = sentinel.observe_call(call("Bash", **flaky))
    assert verdict.halt and verdict.record is not None
    assert verdict.record.rule == "failing"
    assert [c.failed for c in verdict.record.calls] == [True, True, None]


@pytest.mark.parametrize("length", [2, 3, 4, 6])
def test_cycles_of_two_to_six_calls_are_caught_on_their_second_round(length: int) -> None:
    sentinel = make()
    cycle = [call("Read", file_path=f"src/f{i}.py") for i in range(length)]
    for request in cycle + cycle[:-1]:
        assert not run(sentinel, call("Read", **request.input)).halt
    verdict = sentinel.observe_call(call("Read", **cycle[-1].input))
    assert verdict.halt and verdict.record is not None
    assert verdict.record.rule == "alternation" and len(verdict.record.calls) == 2 * length


def test_an_edit_and_its_undo_are_caught_though_the_world_changes() -> None:
    sentinel = make()
    world = Files(**{"a.py": "x = 1\n"})
    do = {"file_path": "/w/a.py", "old_string": "x = 1", "new_string": "x = 2"}
    undo = {"file_path": "/w/a.py", "old_string": "x = 2", "new_string": "x = 1"}
    verdicts = []
    for edit, after in [(do, "x = 2\n"), (undo, "x = 1\n")] * 3:
        verdicts.append(run(sentinel, call("Edit", **edit), world=world.state()))
        if verdicts[-1].halt:
            break
        world.write("a.py", after)
        verdicts.append(run(sentinel, bash("pytest -q"), error=True, world=world.state()))
        if verdicts[-1].halt:
            break
    assert verdicts[-1].halt and len(verdicts) <= 8
    assert verdicts[-1].record is not None and verdicts[-1].record.rule == "alternation"


def test_a_measured_change_of_the_world_between_calls_is_progress() -> None:
    sentinel = make()
    world = Files(**{"src/app.py": "v0"})
    for n in range(4):
        assert not run(sentinel, bash("make"), world=world.state()).halt
        edit = call("Edit", file_path="/w/src/app.py", old_string=f"v{n}", new_string=f"v{n + 1}")
        assert not run(sentinel, edit, world=world.state()).halt
        world.write("src/app.py", f"v{n + 1}")


def test_shadow_mode_records_without_halting() -> None:
    sentinel = make(shadow=True)
    run(sentinel, poll())
    run(sentinel, poll())
    verdict = run(sentinel, poll())
    assert not verdict.halt
    assert verdict.record is not None and verdict.record.shadow


def test_thresholds_are_configurable() -> None:
    sentinel = make(window=6, repeat_threshold=5, alternation_cycles=0, failure_threshold=0)
    for _ in range(4):
        assert not run(sentinel, poll()).halt
    assert sentinel.observe_call(poll()).halt


@pytest.mark.parametrize(
    "settings",
    [
        {"repeat_threshold": 9},
        {"alternation_cycles": 1},
        {"failure_threshold": 1},
        {"window": 1},
        {"max_cycle_length": 1},
    ],
)
def test_nonsense_settings_are_refused(settings: dict[str, int]) -> None:
    with pytest.raises(ValidationError):
        SentinelSettings(**settings)


def turn_of(sentinel: Sentinel, turn: int, calls: list[tuple[ToolCallRequest, str]]) -> None:
    sentinel.begin_turn(turn)
    for request, out in calls:
        run(sentinel, request, out=out)


def test_no_progress_for_n_turns_judged_on_world_state() -> None:
    sentinel = make(no_progress_turns=3)
    same = WorldState(git_tree="abc", slots=(("status", "h1"),))
    results = []
    for turn in range(1, 7):
        turn_of(sentinel, turn, [(call("Read", file_path="notes.md"), "nothing new")])
        results.append(sentinel.end_turn(same))
        if results[-1].halt:
            sentinel.reset()  # the operator looked and resumed the panel
    # Turn 1 sets the baseline; turns 2-4 change and learn nothing; after the resume, anew.
    assert [r.halt for r in results] == [False, False, False, True, False, False]
    record = results[3].record
    assert record is not None and record.rule == "no_progress" and record.turn == 4


def test_turns_that_only_rewrite_notes_are_no_progress() -> None:
    sentinel = make(no_progress_turns=3)
    verdicts = []
    for turn in range(1, 5):
        note = call("mcp__mnemara__upsert_slot", label="status", content=f"still waiting ({turn})")
        turn_of(sentinel, turn, [(note, "slot updated")])
        slots = (("status", f"hash-{turn}"),)  # the slot did change: notes are no progress
        verdicts.append(sentinel.end_turn(WorldState(git_tree="t", slots=slots)).halt)
    assert verdicts == [False, False, False, True]


def test_turns_that_learn_something_are_progress_even_if_nothing_changes() -> None:
    sentinel = make(no_progress_turns=2)
    world = WorldState(git_tree="t")
    for turn in range(1, 8):  # questions answered by reading, or a digest that moves
        turn_of(sentinel, turn, [(call("Read", file_path="digest.md"), f"digest {turn}")])
        assert not sentinel.end_turn(world).halt


def test_a_world_change_or_a_quiet_turn_does_not_count_as_stalling() -> None:
    sentinel = make(no_progress_turns=2)
    world = WorldState(git_tree="a")
    verdicts = []
    for turn, (calls, state) in enumerate(
        [
            (1, world),
            (1, world),
            (0, world),
            (1, WorldState(git_tree="b")),
            (1, WorldState(git_tree="b")),
        ]
    ):
        turn_of(sentinel, turn, [(bash("ls"), "a b")] * calls)
        verdicts.append(sentinel.end_turn(state).halt)
    assert verdicts == [False, False, False, False, False]


def test_results_are_normalised_before_they_are_compared() -> None:
    template = "FAILED t.py::test_x - <Obj at {}> /tmp/pytest-of-u/pytest-{}/a\n1 failed in {}s"
    one = template.format("0x7f3a2b1c9d00", 3, 0.52)
    two = template.format("0x7f00aa11bb22", 4, 1.1)
    assert normalise_output(one) == normalise_output(two)
    assert outcome_digest(True, one) == outcome_digest(True, two)
    assert outcome_digest(True, one) != outcome_digest(False, one)
    stamped = "2026-12-01T10:00:01Z build 3f2a1c0e-1b2c-4d5e-8f90-123456789abc took 1m3s"
    assert normalise_output(stamped) == "<time> build <uuid> took <dur>"


@pytest.mark.parametrize(
    ("name", "arguments", "effect"),
    [
        ("Bash", {"command": "pytest -q"}, "test"),
        ("Bash", {"command": "uv run python -m pytest"}, "test"),
        ("Bash", {"command": "cd web && npm test"}, "test"),
        ("Bash", {"command": "make test"}, "test"),
        ("Bash", {"command": "cargo test"}, "test"),
        ("Bash", {"command": "go test ./..."}, "test"),
        ("Bash", {"command": "tox -e py311"}, "test"),
        ("Bash", {"command": "git status && git diff"}, "read"),
        ("Bash", {"command": "sleep 30 && gh run view 42"}, "read"),
        ("Bash", {"command": "pip install requests"}, "change"),
        ("Bash", {"command": "sed -i s/a/b/ x.py"}, "change"),
        ("Bash", {"command": "git add -A"}, "change"),
        ("Bash", {"command": "python script.py"}, "change"),
        ("Bash", {"command": "curl -X POST localhost/x"}, "change"),
        ("Read", {"file_path": "a"}, "read"),
        ("Write", {"file_path": "a", "content": ""}, "files"),
        ("mcp__mnemara__write_memory", {"text": "x"}, "notes"),
        ("TodoWrite", {"todos": []}, "notes"),
        ("mcp__mnemara__list_inbox", {}, "read"),
        ("mcp__mnemara__send_message", {"to": "a", "text": "b"}, "change"),
    ],
)
def test_what_a_call_may_change(name: str, arguments: dict[str, Any], effect: str) -> None:
    assert effect_of(name, arguments, DEFAULT_BOOKKEEPING_TOOLS) == effect


def test_halt_records_take_row_ids_and_serialise() -> None:
    sentinel = make()
    first, second, third = poll(), poll(), poll()
    run(sentinel, first)
    run(sentinel, second)
    record = sentinel.observe_call(third).record
    assert record is not None
    stored = record.with_row_ids({first.tool_use_id: 11, second.tool_use_id: 12})
    data = stored.as_dict()
    assert [c["row_id"] for c in data["calls"]] == [11, 12, None]
    assert data["at"] == NOON.isoformat() and data["rule"] == "repeat"
