"""read_skeleton: signatures and docstrings only, behind the same path rules as Read."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tool_turns import results, run, tool_turn

from runtime.instance.home import InstancePaths
from runtime.turn.open import open_session
from runtime.turn.scripted import ScriptedDriver
from runtime.window.skeleton import skeleton_of

SOURCE = '''"""A module that does things."""

import os

LIMIT = 3


@dataclass(frozen=True)
class Box(Base, metaclass=Meta):
    """Holds one thing.

    In detail.
    """

    size: int = 0

    def open(self, force: bool = False, *args: str, **kw: int) -> "Box":
        """Open the box."""
        secret = os.environ["X"]
        return self

    async def close(self) -> None:
        return None


def helper(a, b=2):
    return a + b
'''


def test_skeleton_keeps_signatures_and_docstrings_only() -> None:
    out = skeleton_of(SOURCE, "box.py")
    assert out.splitlines() == [
        "# skeleton of box.py: signatures and docstrings only",
        '"""A module that does things."""',
        "@dataclass(frozen=True)",
        "class Box(Base, metaclass=Meta):  # line 9",
        '    """Holds one thing.',
        "",
        "    In detail.",
        '    """',
        "    def open(self, force: bool=False, *args: str, **kw: int) -> 'Box':  # line 17",
        '        """Open the box."""',
        "    async def close(self) -> None:  # line 22",
        "        ...",
        "def helper(a, b=2):  # line 26",
        "    ...",
    ]
    assert "secret" not in out and "LIMIT" not in out and "import os" not in out


def test_syntax_errors_propagate() -> None:
    with pytest.raises(SyntaxError):
        skeleton_of("def broken(:\n")


@pytest.mark.anyio
async def test_read_skeleton_in_a_turn(
    instance: InstancePaths, approver: Any, configure: Callable[..., Any], tmp_path: Path
) -> None:
    configure(read_skeleton_enabled=True)
    (tmp_path / "box.py").write_text(SOURCE, encoding="utf-8")
    (tmp_path / "notes.txt").write_text("x", encoding="utf-8")
    (tmp_path / "bad.py").write_text("def broken(:\n", encoding="utf-8")
    driver = ScriptedDriver(
        [
            tool_turn(
                ("read_skeleton", {"path": "box.py"}),
                ("read_skeleton", {"path": "notes.txt"}),
                ("read_skeleton", {"path": "bad.py"}),
                ("read_skeleton", {"path": "missing.py"}),
            )
        ]
    )
    async with open_session("t1", driver=driver, approver=approver, cwd=tmp_path) as s:
        assert any(t.name == "read_skeleton" for t in s.tools)
        out = results(await run(s, "skim box.py"))
    assert "class Box(Base, metaclass=Meta):  # line 9" in out["c0"].content
    assert not out["c0"].is_error
    assert "not a Python file" in out["c1"].content
    assert "does not parse (line 1" in out["c2"].content
    assert "cannot read missing.py" in out["c3"].content
    # The policy was asked about a Read of each path, the same way the Read tool is.
    reads = [c for c in approver.asked if c.name == "Read"]
    assert [c.input["file_path"] for c in reads] == ["box.py", "notes.txt", "bad.py", "missing.py"]


@pytest.mark.anyio
async def test_read_skeleton_follows_the_read_policy(
    instance: InstancePaths,
    configure: Callable[..., Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    configure(read_skeleton_enabled=True)  # file_tool_home_only stays on
    home = tmp_path / "home"
    (home / "pkg").mkdir(parents=True)
    (home / "pkg" / "box.py").write_text(SOURCE, encoding="utf-8")
    outside = tmp_path / "elsewhere" / "box.py"
    outside.parent.mkdir()
    outside.write_text(SOURCE, encoding="utf-8")
    monkeypatch.setenv("HOME", str(home))
    driver = ScriptedDriver(
        [
            tool_turn(
                ("read_skeleton", {"path": str(home / "pkg" / "box.py")}),
                ("read_skeleton", {"path": str(outside)}),
            )
        ]
    )
    async with open_session("t1", driver=driver, cwd=home) as s:  # the real policy, headless
        out = results(await run(s, "skim"))
    assert not out["c0"].is_error and "class Box" in out["c0"].content
    assert out["c1"].is_error and "outside the allowed directories" in out["c1"].content
