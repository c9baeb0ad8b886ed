"""Checklist rows #26 and #27: wiki page names that try to leave the wiki, or to hide.

Through the agent's real wiki tools in a real session turn (scripted model), and through
`mnemara memory wiki show`. After every attempt, nothing may exist outside the wiki root that
was not there before, and the wiki may hold only pages with canonical names.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from panels.cli.main import app
from runtime.instance.home import InstancePaths
from runtime.turn.driver import Done, DriverEvent, TextDelta, ToolCall, ToolResult, Usage
from runtime.turn.open import open_session
from runtime.turn.scripted import ScriptedDriver

ESCAPES_26 = [
    "../../.ssh/authorized_keys",
    "a/../../x",
    "/etc/passwd",
    "a//b",
    "./a",
    ".git/config",
    "..",
    "wiki/../../x",
    "a/b/c/d/e",  # deeper than the wiki allows
]
DISGUISED_27 = [
    "%2e%2e/x",
    "%252e%252e/x",  # a second round of decoding would give ../x
    "..\\x",
    "a\\..\\..\\x",
    "a\x00b",
    "\uff0e\uff0e\uff0fx",  # full-width ../x; NFKC folds it to ../x
    "a.",
    "a/b.",
    "a /b",
    "x" * 300,
    "a/" + "y" * 300,
    "\u0430dmin",  # Cyrillic a
]


def tool_turn(*calls: tuple[str, dict[str, Any]]) -> list[DriverEvent]:
    events: list[DriverEvent] = [
        ToolCall(f"c{i}", f"mcp__mnemara__{name}", args) for i, (name, args) in enumerate(calls)
    ]
    return [*events, TextDelta("done"), Usage(10, 5), Done()]


async def wiki_turn(approver: Any, *calls: tuple[str, dict[str, Any]]) -> list[ToolResult]:
    driver = ScriptedDriver([tool_turn(*calls)])
    async with open_session("t1", driver=driver, approver=approver) as session:
        events = [e async for e in session.turn("go")]
    found = {e.tool_use_id: e for e in events if isinstance(e, ToolResult)}
    return [found[f"c{i}"] for i in range(len(calls))]


def files_under(root: Path) -> set[Path]:
    return {Path(d, f) for d, _, names in os.walk(root) for f in names}


@pytest.fixture
def quiet_memory(configure: Callable[..., Any]) -> None:
    """The wiki alone: no search index or graph to embed into (they are not under test)."""
    configure(rag_enabled=False, graph_enabled=False)


@pytest.mark.anyio
@pytest.mark.parametrize("slug", ESCAPES_26 + DISGUISED_27)
async def test_26_27_bad_page_names_are_refused_by_the_wiki_tools(
    instance: InstancePaths, quiet_memory: None, approver: Any, tmp_path: Path, slug: str
) -> None:
    """#26 path escapes and #27 encoded, NUL, backslash, full-width and over-long names."""
    before = files_under(tmp_path)
    (tmp_path / ".ssh").mkdir(exist_ok=True)
    results = await wiki_turn(
        approver,
        ("wiki_write", {"page": slug, "text": "ssh-ed25519 AAAA attacker"}),
        ("wiki_write", {"page": slug, "text": "x", "mode": "replace"}),
        ("wiki_read", {"page": slug}),
    )
    for result in results:
        assert result.is_error, (slug, result.content)
        assert "wiki page" in result.content, result.content
    created = files_under(tmp_path) - before
    # Only the session's own files may appear (its store, logs); nothing from the attempt.
    assert not any("attacker" in p.read_text(errors="replace") for p in created if p.is_file())
    assert not instance.wiki.exists() or files_under(instance.wiki) == set()


@pytest.mark.anyio
async def test_26_a_symlink_inside_the_wiki_is_not_followed_out(
    instance: InstancePaths, quiet_memory: None, approver: Any, tmp_path: Path
) -> None:
    """#26: containment is checked on the resolved path, and a symlinked part is refused."""
    outside = tmp_path / "outside"
    outside.mkdir()
    instance.wiki.mkdir(parents=True, exist_ok=True)
    (instance.wiki / "deploy").symlink_to(outside)
    results = await wiki_turn(
        approver,
        ("wiki_write", {"page": "deploy/notes", "text": "planted"}),
        ("wiki_read", {"page": "deploy/notes"}),
    )
    assert all(r.is_error and "symbolic link" in r.content for r in results), results
    assert list(outside.iterdir()) == []


@pytest.mark.anyio
async def test_27_names_that_fold_to_a_canonical_one_land_inside_the_wiki(
    instance: InstancePaths, quiet_memory: None, approver: Any
) -> None:
    """#27: NFKC and case folding give one canonical page; nothing else is written."""
    results = await wiki_turn(
        approver,
        ("wiki_write", {"page": "\uff24eploy/Checklist", "text": "one"}),  # full-width D
        ("wiki_write", {"page": " deploy/checklist ", "text": "two"}),  # trailing space
        ("wiki_read", {"page": "deploy/checklist"}),
    )
    assert not any(r.is_error for r in results), results
    assert files_under(instance.wiki) == {instance.wiki / "deploy" / "checklist.md"}
    assert "one" in results[2].content and "two" in results[2].content


runner = CliRunner()


@pytest.mark.parametrize("slug", ["../../etc/passwd", "%2e%2e/x", "\uff0e\uff0e\uff0fx", "a\\b"])
def test_26_27_the_cli_refuses_bad_page_names_cleanly(
    instance: InstancePaths, quiet_memory: None, slug: str
) -> None:
    """#26/#27 through `mnemara memory wiki show`: a clean refusal, not a page or a traceback."""
    result = runner.invoke(app, ["memory", "wiki", "show", "--instance", "t1", slug])
    assert result.exit_code != 0 and result.exit_code != 70, result.stderr
    assert "lower-case letters" in result.stderr and "Traceback" not in result.stderr
    assert "root:" not in result.stdout
