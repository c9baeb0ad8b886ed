"""config.json: the original's fields and defaults, strict types, clear errors, atomic saves."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from runtime.errors import ConfigError, InvalidInstanceNameError
from runtime.instance.config import (
    DEFAULT_MAX_WINDOW_TURNS,
    InstanceConfig,
    load_config,
    save_config,
)
from runtime.instance.debuglog import DebugLog
from runtime.instance.home import InstancePaths, list_instances, validate_instance_name
from runtime.instance.home import mnemara_home as home_root


def test_defaults_follow_the_original() -> None:
    c = InstanceConfig()
    assert c.max_window_turns == DEFAULT_MAX_WINDOW_TURNS == 100
    assert c.bash_timeout_seconds == 60 and c.file_tool_home_only and c.stream
    assert {p.tool: p.mode for p in c.allowed_tools} == {
        "Bash": "ask",
        "Read": "allow",
        "Write": "ask",
        "Edit": "ask",
        "WriteMemory": "allow",
    }
    assert not c.auto_evict_after_write and c.row_cap_slack_when_token_headroom == 0
    assert c.rag_enabled and c.graph_enabled and c.replay_default_days == 7


def test_an_original_config_round_trips_with_unknown_fields_kept(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    original = {
        "role_doc_path": "/x/role.md",
        "model": "claude-sonnet-4-6",
        "max_window_turns": 20,
        "allowed_tools": [{"tool": "Bash", "mode": "ask", "allowed_patterns": ["git status"]}],
        "peer_poll_silent_types": "ack, pong_ack",
        "some_future_field": {"kept": True},
    }
    path.write_text(json.dumps(original))
    config = load_config(path)
    assert config.peer_poll_silent_types == ("ack", "pong_ack")
    assert config.unknown_fields() == ["some_future_field"]
    save_config(path, config)
    again = json.loads(path.read_text())
    assert again["some_future_field"] == {"kept": True} and again["max_window_turns"] == 20


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"max_window_turns": "lots"}, "max_window_turns"),
        ({"max_window_turns": 1}, "max_window_turns"),
        ({"allowed_tools": [{"tool": "Bash", "mode": "sometimes"}]}, "allowed_tools.0.mode"),
        ({"mcp_servers": [{"name": "../evil", "command": "x"}]}, "mcp_servers.0.name"),
        ({"stream": "perhaps"}, "stream"),
    ],
)
def test_invalid_fields_are_named(tmp_path: Path, data: dict[str, object], field: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert caught.value.field == field and str(path) in str(caught.value)


@pytest.mark.parametrize("raw", [b"{oops", b"[1, 2]", b"\xff\xfe"])
def test_corrupt_files_fail_closed(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "config.json"
    path.write_bytes(raw)
    with pytest.raises(ConfigError, match=r"config\.json"):
        load_config(path)


@pytest.mark.parametrize("name", ["", ".", "..", "../x", "a/b", "_teams", "x" * 65, "a\x00b", "-v"])
def test_unsafe_instance_names(name: str) -> None:
    with pytest.raises(InvalidInstanceNameError):
        validate_instance_name(name)


def test_home_and_listing(mnemara_home: Path) -> None:
    assert home_root() == mnemara_home
    for name in ("b", "a"):
        paths = InstancePaths.for_name(name)
        paths.root.mkdir()
        save_config(paths.config, InstanceConfig())
    (mnemara_home / "_teams").mkdir()
    (mnemara_home / "stray").mkdir()  # no config.json: not an instance
    assert list_instances() == ["a", "b"]


def _log_many(path: str, worker: int) -> None:
    log = DebugLog(Path(path))
    for i in range(300):
        log.write("tool_call", "call", worker=worker, i=i, padding="x" * 300)


def test_debug_log_lines_never_interleave_across_processes(tmp_path: Path) -> None:
    path = tmp_path / "debug.log"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_log_many, args=(str(path), w)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    lines = path.read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]  # every line is whole JSON
    assert len(records) == 1200
    assert {(r["worker"], r["i"]) for r in records} == {
        (w, i) for w in range(4) for i in range(300)
    }
