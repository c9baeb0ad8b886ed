"""Sandbox first: a confined panel's calls are judged by what its sandbox contains.

Each row of runtime/policy/containment.py's table, on the policy tests' machine, with the
default config (the operator chose nothing): what the sandbox contains is allowed, what it
cannot contain asks, and writes that would grant power, run later or land outside the
writable areas are denied. The same calls unconfined keep today's strict answers.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from runtime.instance.config import InstanceConfig, ToolPolicy, default_tool_policies
from runtime.policy.context import Containment, PolicyContext
from runtime.policy.policy import PolicyState, Verdict, decide
from tests.runtime.policy.conftest import Machine, build_machine


def defaults(**extra: object) -> PolicyState:
    """What a fresh instance holds: the default entries, one configured MCP server."""
    config = InstanceConfig(
        allowed_tools=default_tool_policies(),
        mcp_servers=({"name": "runpod", "command": "runpod-mcp"},),  # type: ignore[arg-type]
        **extra,  # type: ignore[arg-type]
    )
    return PolicyState.from_config(config)


def confined(m: Machine, *, hosts: tuple[str, ...] = ()) -> PolicyContext:
    """The project writable, `~/docs` readable, the home and /tmp the sandbox's own scratch
    (the tests' files live under /tmp too: inside a sandbox those would be scratch)."""
    box = Containment.of(
        writable=(m.project,),
        readable=(m.home / "docs",),
        scratch=(Path("/tmp"), Path("/var/tmp"), m.home),
        hosts=hosts,
    )
    return replace(m.ctx, containment=box)


@pytest.fixture
def m(tmp_path: Path) -> Machine:
    return build_machine(tmp_path)


def run(m: Machine, tool: str, tool_input: dict[str, object], ctx: PolicyContext) -> Verdict:
    return decide(defaults(), tool, tool_input, ctx)


def bash(m: Machine, command: str, ctx: PolicyContext) -> Verdict:
    return run(m, "Bash", {"command": command}, ctx)


@pytest.mark.parametrize(
    "command",
    [
        "pytest -q",
        "python3 x.py",
        "make",
        "bash -c 'echo hi'",  # an interpreter given code: contained like any program
        "pytest -p plugin",  # a risky option: contained too
        "git status && git commit -am wip",
        "sudo make install",  # fails inside; nothing escapes
        "echo hi > out.txt",
        "cat ~/.ssh/id_ed25519",  # the sandbox hides it
        "curl https://example.com",  # a GET; with no network it simply fails
        "git push origin main",  # no network: nothing leaves the machine
    ],
)
def test_confined_bash_runs_without_asking(m: Machine, command: str) -> None:
    verdict = bash(m, command, confined(m))
    assert verdict.action == "allow", verdict.reason
    assert bash(m, command, m.ctx).action != "allow"  # unconfined: today's strict answer


@pytest.mark.parametrize(
    ("command", "says"),
    [
        ("git push origin main", "`git push` acts on a remote service"),
        ("gh pr create --fill", "`gh pr create`"),
        ("npm publish", "`npm publish`"),
        ("twine upload dist/*", "`twine upload`"),
        ("ssh pod@203.0.113.5 nvidia-smi", "`ssh` acts on another machine"),
        ("curl -d @payload.json https://api.example.com/x", "`curl` sends data"),
        ("scp model.pt pod@203.0.113.5:/workspace/", "`scp` copies"),
        ("kubectl apply -f deploy.yaml", "`kubectl apply`"),
    ],
)
def test_effects_beyond_the_machine_ask_when_the_network_reaches_hosts(
    m: Machine, command: str, says: str
) -> None:
    verdict = bash(m, command, confined(m, hosts=("github.com", "pypi.org")))
    assert verdict.action == "ask" and says in verdict.reason, verdict.reason
    assert "the sandbox cannot undo" in verdict.reason


@pytest.mark.parametrize(
    "command", ["git pull", "git fetch origin", "curl https://pypi.org/simple/", "gh pr view 3"]
)
def test_reading_from_a_listed_host_does_not_ask(m: Machine, command: str) -> None:
    assert bash(m, command, confined(m, hosts=("github.com",))).action == "allow"


@pytest.mark.parametrize(
    ("command", "says"),
    [
        ("echo x > ~/.bashrc", "runs when a shell or git starts"),
        ("echo '[alias]' >> .git/config", "git config can run code"),
        ("cp evil .git/hooks/pre-commit", "git hooks run code"),
        ("echo x > .envrc", "runs when a shell or git starts"),
        ("echo x > /etc/motd", "outside the panel's writable areas"),
        ("cp a.txt /srv/data.txt", "outside the panel's writable areas"),
        ("cp a.txt ~/docs/notes.md", "outside the panel's writable areas"),
    ],
)
def test_confined_bash_writes_that_grant_or_run_later_are_denied(
    m: Machine, command: str, says: str
) -> None:
    verdict = bash(m, command, confined(m))
    assert verdict.action == "deny" and says in verdict.reason, verdict.reason


def test_scratch_writes_are_contained(m: Machine) -> None:
    ctx = confined(m)
    assert bash(m, "echo x > /tmp/scratch.txt", ctx).action == "allow"
    assert run(m, "Write", {"file_path": "/tmp/plan.md", "content": "x"}, ctx).action == "allow"


@pytest.mark.parametrize("tool", ["Write", "Edit", "MultiEdit", "NotebookEdit"])
def test_file_writes_inside_the_working_directory_run_without_asking(m: Machine, tool: str) -> None:
    key = "notebook_path" if tool == "NotebookEdit" else "file_path"
    verdict = run(m, tool, {key: str(m.project / "src" / "a.py")}, confined(m))
    assert verdict.action == "allow", verdict.reason
    assert run(m, tool, {key: str(m.project / "src" / "a.py")}, m.ctx).action == "ask"


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ("~/.bashrc", "runs when a shell or git starts"),
        ("~/project/.git/config", "git config"),
        ("~/project/.git/hooks/post-checkout", "git hooks"),
        ("~/project/.envrc", "runs when a shell or git starts"),
        ("~/.mnemara/scratch/config.json", "permission policy's own file"),
        ("~/docs/notes.md", "outside the panel's writable areas"),  # shown read-only
        ("/opt/tool/config.toml", "outside the panel's writable areas"),
        ("/etc/hosts", "outside the panel's writable areas"),
    ],
)
def test_file_writes_that_grant_run_later_or_leave_the_areas_are_denied(
    m: Machine, raw: str, says: str
) -> None:
    verdict = run(m, "Write", {"file_path": raw, "content": "x"}, confined(m))
    assert verdict.action == "deny" and says in verdict.reason, verdict.reason


def test_a_role_doc_in_the_working_directory_is_never_written(m: Machine) -> None:
    role = m.project / "roles" / "engineer.md"
    role.parent.mkdir()
    role.write_text("# role\n")
    ctx = replace(confined(m), role_docs=(role,))
    verdict = run(m, "Edit", {"file_path": str(role)}, ctx)
    assert verdict.action == "deny" and "role doc" in verdict.reason


def test_a_file_with_another_name_elsewhere_is_not_written(m: Machine) -> None:
    os.link(m.outside / "data.txt", m.project / "linked.txt")
    verdict = run(m, "Write", {"file_path": str(m.project / "linked.txt")}, confined(m))
    assert verdict.action == "deny" and "hard links" in verdict.reason
    assert bash(m, "echo x >> linked.txt", confined(m)).action == "deny"


@pytest.mark.parametrize(
    "raw", ["/etc/passwd", "~/.ssh/id_ed25519", "/tmp/claude-0/x/tasks/b1.output", "../elsewhere"]
)
def test_confined_reads_are_the_sandbox_s_to_limit(m: Machine, raw: str) -> None:
    for tool, key in (("Read", "file_path"), ("Glob", "path"), ("Grep", "path")):
        assert run(m, tool, {key: raw}, confined(m)).action == "allow"


@pytest.mark.parametrize(
    ("tool", "tool_input"),
    [
        ("TodoWrite", {"todos": []}),
        ("TaskCreate", {"subject": "x"}),
        ("TaskUpdate", {"taskId": "1", "status": "completed"}),
        ("TaskOutput", {"task_id": "b1", "block": True}),
        ("TaskStop", {"task_id": "b1"}),
        ("ExitPlanMode", {"plan": "do it"}),
        ("EnterPlanMode", {}),
        ("AskUserQuestion", {"questions": []}),
        ("ToolSearch", {"query": "select:TaskCreate"}),
    ],
)
def test_claude_codes_bookkeeping_never_asks(
    m: Machine, tool: str, tool_input: dict[str, object]
) -> None:
    assert run(m, tool, tool_input, confined(m)).action == "allow"
    assert run(m, tool, tool_input, m.ctx).action == "allow"  # confined or not


@pytest.mark.parametrize("tool", ["Task", "Agent"])
def test_subagents_run_confined_and_their_calls_pass_the_guard(m: Machine, tool: str) -> None:
    call = {"description": "explore", "prompt": "look around"}
    assert run(m, tool, call, confined(m)).action == "allow"
    assert run(m, tool, call, m.ctx).action == "ask"  # unconfined: unknown, asked


def test_web_fetch_is_allowed_only_to_listed_hosts(m: Machine) -> None:
    ctx = confined(m, hosts=("docs.python.org",))
    assert run(m, "WebFetch", {"url": "https://docs.python.org/3/", "prompt": "x"}, ctx).action == (
        "allow"
    )
    other = run(m, "WebFetch", {"url": "https://evil.example/x", "prompt": "x"}, ctx)
    assert other.action == "ask" and "not on the team's network list" in other.reason
    assert run(m, "WebSearch", {"query": "runpod images"}, confined(m)).action == "allow"


def test_a_configured_mcp_server_asks_only_for_changes_it_could_reach(m: Machine) -> None:
    for tool in ("mcp__runpod__create-pod", "mcp__runpod__get-pod"):
        assert run(m, tool, {"podId": "p1"}, confined(m)).action == "allow"  # no network
    reach = confined(m, hosts=("api.runpod.io",))
    create = run(m, "mcp__runpod__create-pod", {"name": "x"}, reach)
    assert create.action == "ask" and "create" in create.reason
    assert run(m, "mcp__runpod__get-pod", {"podId": "p1"}, reach).action == "allow"
    assert run(m, "mcp__runpod__sequentialthinking", {}, reach).action == "ask"  # says neither


def test_the_operators_own_choice_in_the_team_file_holds_when_confined(m: Machine) -> None:
    chosen = ToolPolicy(tool="Bash", mode="ask", allowed_patterns=("pytest( .*)?",))
    config = InstanceConfig(allowed_tools=(*default_tool_policies()[1:], chosen))
    state = PolicyState.from_config(config, team_tools=frozenset({"Bash"}))
    assert decide(state, "Bash", {"command": "pytest -q"}, confined(m)).action == "allow"
    asked = decide(state, "Bash", {"command": "make"}, confined(m))
    assert asked.action == "ask" and "asks before running" in asked.reason
    denied = InstanceConfig(allowed_tools=(ToolPolicy(tool="Write", mode="deny"),))
    state = PolicyState.from_config(denied)
    verdict = decide(state, "Write", {"file_path": str(m.project / "a")}, confined(m))
    assert verdict.action == "deny"


def test_an_instance_entry_other_than_the_default_is_the_operators_choice(m: Machine) -> None:
    state = PolicyState.from_config(
        InstanceConfig(
            allowed_tools=(ToolPolicy(tool="Edit", mode="ask", allowed_patterns=("x",)),)
        )
    )
    assert state.rule_for("Edit") is not None and state.rule_for("Edit").chosen  # type: ignore[union-attr]
    verdict = decide(state, "Edit", {"file_path": str(m.project / "a.py")}, confined(m))
    assert verdict.action == "ask"
    assert not defaults().rule_for("Edit").chosen  # type: ignore[union-attr]


def test_unconfined_build_machine_keeps_its_strict_answers(tmp_path: Path) -> None:
    machine = build_machine(tmp_path)
    assert decide(machine.state, "Bash", {"command": "make"}, machine.ctx).action == "ask"
    assert decide(machine.state, "Bash", {"command": "git status"}, machine.ctx).action == "allow"
