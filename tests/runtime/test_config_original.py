"""An original mnemara config.json, as its `init` writes it, loads; `migrate` rewrites its forms.

The literal below is what the original's `init` saves (its Config dataclass with its defaults,
`json.dump(..., indent=2)`, no newline at the end); its inbox toggle saves the same shape.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from runtime.errors import ConfigError
from runtime.instance.config import DEFAULT_SILENT_TYPES, InstanceConfig, load_config
from runtime.instance.config_compat import apply_config_rewrite, plan_config_rewrite

ORIGINAL_INIT_CONFIG = """{
  "role_doc_path": "",
  "model": "claude-opus-4-7",
  "max_window_turns": 100,
  "max_window_tokens": 500000,
  "allowed_tools": [
    {
      "tool": "Bash",
      "mode": "ask",
      "allowed_patterns": []
    },
    {
      "tool": "Read",
      "mode": "allow",
      "allowed_patterns": []
    },
    {
      "tool": "Write",
      "mode": "ask",
      "allowed_patterns": []
    },
    {
      "tool": "Edit",
      "mode": "ask",
      "allowed_patterns": []
    },
    {
      "tool": "WriteMemory",
      "mode": "allow",
      "allowed_patterns": []
    },
    {
      "tool": "InspectContext",
      "mode": "allow",
      "allowed_patterns": []
    },
    {
      "tool": "ProposeRoleAmendment",
      "mode": "allow",
      "allowed_patterns": []
    },
    {
      "tool": "LogChoice",
      "mode": "allow",
      "allowed_patterns": []
    },
    {
      "tool": "WikiRead",
      "mode": "allow",
      "allowed_patterns": []
    },
    {
      "tool": "WikiWrite",
      "mode": "allow",
      "allowed_patterns": []
    },
    {
      "tool": "WikiList",
      "mode": "allow",
      "allowed_patterns": []
    },
    {
      "tool": "RagIndex",
      "mode": "allow",
      "allowed_patterns": []
    },
    {
      "tool": "RagQuery",
      "mode": "allow",
      "allowed_patterns": []
    },
    {
      "tool": "GraphAddNode",
      "mode": "allow",
      "allowed_patterns": []
    },
    {
      "tool": "GraphAddEdge",
      "mode": "allow",
      "allowed_patterns": []
    },
    {
      "tool": "GraphQuery",
      "mode": "allow",
      "allowed_patterns": []
    },
    {
      "tool": "GraphNeighbors",
      "mode": "allow",
      "allowed_patterns": []
    },
    {
      "tool": "GraphMatch",
      "mode": "allow",
      "allowed_patterns": []
    },
    {
      "tool": "GraphShortestPath",
      "mode": "allow",
      "allowed_patterns": []
    },
    {
      "tool": "TuneWindow",
      "mode": "allow",
      "allowed_patterns": []
    },
    {
      "tool": "EvictLast",
      "mode": "allow",
      "allowed_patterns": []
    },
    {
      "tool": "EvictIds",
      "mode": "allow",
      "allowed_patterns": []
    },
    {
      "tool": "MarkSegment",
      "mode": "allow",
      "allowed_patterns": []
    },
    {
      "tool": "EvictSince",
      "mode": "allow",
      "allowed_patterns": []
    },
    {
      "tool": "EvictThinkingBlocks",
      "mode": "allow",
      "allowed_patterns": []
    },
    {
      "tool": "EvictToolUseBlocks",
      "mode": "allow",
      "allowed_patterns": []
    },
    {
      "tool": "EvictOlderThan",
      "mode": "allow",
      "allowed_patterns": []
    },
    {
      "tool": "EvictWritePairs",
      "mode": "allow",
      "allowed_patterns": []
    },
    {
      "tool": "PinRow",
      "mode": "allow",
      "allowed_patterns": []
    },
    {
      "tool": "UnpinRow",
      "mode": "allow",
      "allowed_patterns": []
    },
    {
      "tool": "ListPinned",
      "mode": "allow",
      "allowed_patterns": []
    },
    {
      "tool": "ListWindow",
      "mode": "allow",
      "allowed_patterns": []
    }
  ],
  "mcp_servers": [],
  "stream": true,
  "bash_timeout_seconds": 60,
  "file_tool_home_only": true,
  "rag_enabled": true,
  "rag_embed_url": "http://localhost:11434/api/embeddings",
  "rag_embed_model": "nomic-embed-text",
  "rag_auto_index_memory": true,
  "rag_auto_index_wiki": true,
  "auto_evict_after_write": false,
  "row_cap_slack_when_token_headroom": 0,
  "runtime_sentinel": false,
  "compress_repeated_reads": false,
  "preserve_compressed_reads": false,
  "read_skeleton_enabled": false,
  "file_stat_manifest_enabled": false,
  "display_name": "",
  "graph_enabled": true,
  "replay_default_days": 7,
  "replay_default_threshold": 3,
  "replay_policy_path": "",
  "replay_cluster_within_category": false,
  "peer_poll_enabled": false,
  "peer_poll_interval_seconds": 30,
  "peer_db_path": "",
  "peer_poll_roles": "",
  "peer_poll_batch": true,
  "peer_poll_silent_types": null,
  "peer_poll_ack_tool": "",
  "peer_poll_submit_tool": ""
}"""


def write(path: Path, data: dict[str, Any] | str) -> Path:
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2))
    return path


def original(**fields: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(ORIGINAL_INIT_CONFIG)
    data.update(fields)
    return data


def test_the_originals_init_config_loads(tmp_path: Path) -> None:
    config = load_config(write(tmp_path / "config.json", ORIGINAL_INIT_CONFIG))
    assert config.peer_poll_silent_types == DEFAULT_SILENT_TYPES  # null: the default set
    assert config.max_window_tokens == 500_000 and config.peer_poll_interval_seconds == 30
    assert len(config.allowed_tools) == 32 and config.policy_for("ListWindow") is not None
    assert config.unknown_fields() == ["replay_cluster_within_category"]


def test_a_comma_separated_string_is_split_as_meant(tmp_path: Path) -> None:
    data = original(peer_poll_silent_types="ack, pong_ack,,thread_close")
    config = load_config(write(tmp_path / "config.json", data))
    assert config.peer_poll_silent_types == ("ack", "pong_ack", "thread_close")


def test_an_empty_list_still_silences_nothing(tmp_path: Path) -> None:
    config = load_config(write(tmp_path / "config.json", original(peer_poll_silent_types=[])))
    assert config.peer_poll_silent_types == ()


def test_other_forms_the_original_reads_load(tmp_path: Path) -> None:
    data = original(
        role_doc_path=None,
        replay_policy_path=None,
        max_window_turns="40",
        peer_poll_interval_seconds="15",
        bash_timeout_seconds=" 90 ",
    )
    config = load_config(write(tmp_path / "config.json", data))
    assert (config.role_doc_path, config.replay_policy_path) == ("", "")
    assert (config.max_window_turns, config.peer_poll_interval_seconds) == (40, 15)
    assert config.bash_timeout_seconds == 90


def test_a_null_where_the_original_never_wrote_one_is_still_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="field 'peer_db_path'"):
        load_config(write(tmp_path / "config.json", original(peer_db_path=None)))


def test_the_init_config_needs_one_rewrite_and_keeps_everything_else() -> None:
    data = json.loads(ORIGINAL_INIT_CONFIG)
    plan = plan_config_rewrite(data, path=Path("config.json"))
    assert [(c.field, c.before) for c in plan.changes] == [("peer_poll_silent_types", None)]
    assert plan.data["peer_poll_silent_types"] == list(DEFAULT_SILENT_TYPES)
    assert list(plan.data) == list(data)  # same keys, same order, the unknown one kept
    assert {k: v for k, v in plan.data.items() if k != "peer_poll_silent_types"} == {
        k: v for k, v in data.items() if k != "peer_poll_silent_types"
    }
    again = plan_config_rewrite(plan.data, path=Path("config.json"))
    assert again.changes == () and again.data == plan.data


def test_each_original_form_is_rewritten_and_said_why() -> None:
    data = original(
        peer_poll_silent_types="ack,pong_ack",
        max_window_turns="40",
        replay_policy_path=None,
        peer_poll_interval_seconds=30,  # an int where we keep a float: the same number
        mine={"kept": True},
    )
    plan = plan_config_rewrite(data, path=Path("config.json"))
    said = {c.field: c.describe() for c in plan.changes}
    assert set(said) == {"peer_poll_silent_types", "max_window_turns", "replay_policy_path"}
    assert said["peer_poll_silent_types"] == (
        'peer_poll_silent_types: "ack,pong_ack" -> ["ack", "pong_ack"] (split on commas; '
        "the original read this string character by character)"
    )
    assert said["max_window_turns"] == 'max_window_turns: "40" -> 40 (written as we read it)'
    assert said["replay_policy_path"] == 'replay_policy_path: null -> "" (null meant "")'
    assert plan.data["mine"] == {"kept": True}
    InstanceConfig.model_validate(plan.data)  # what is written loads without the compat forms


def test_rewrite_keeps_a_backup_and_never_overwrites_one(tmp_path: Path) -> None:
    path = write(tmp_path / "config.json", ORIGINAL_INIT_CONFIG)
    now = datetime(2026, 5, 1, 10, 0, tzinfo=UTC)
    taken = tmp_path / "config.json.bak-20260501T100000Z"
    taken.write_text("an older backup")
    done = apply_config_rewrite(path, now=now)
    assert done.backup == tmp_path / "config.json.bak-20260501T100000Z-1"
    assert done.backup.read_text() == ORIGINAL_INIT_CONFIG
    assert taken.read_text() == "an older backup"
    assert json.loads(path.read_text())["peer_poll_silent_types"] == list(DEFAULT_SILENT_TYPES)
    before = sorted(tmp_path.iterdir())
    again = apply_config_rewrite(path, now=now)
    assert again.changes == () and again.backup is None
    assert again.lines() == [f"{path}: already in our field forms"]
    assert sorted(tmp_path.iterdir()) == before


def test_a_config_we_cannot_read_is_not_rewritten(tmp_path: Path) -> None:
    path = write(tmp_path / "config.json", original(max_window_turns="lots"))
    text = path.read_text()
    with pytest.raises(ConfigError, match=r"field 'max_window_turns'.*run migrate again"):
        apply_config_rewrite(path)
    assert path.read_text() == text and list(tmp_path.glob("config.json*")) == [path]


def test_a_missing_config_is_reported_not_created(tmp_path: Path) -> None:
    done = apply_config_rewrite(tmp_path / "config.json")
    assert done.absent and not (tmp_path / "config.json").exists()
