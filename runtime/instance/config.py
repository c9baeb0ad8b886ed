"""The instance config (`config.json`): field names and defaults of the original mnemara.

Loaded once per session and passed down. A file that is not JSON, or a field with a wrong
type, is a ConfigError naming the file and the field; nothing falls back silently. Fields this
version does not know are kept on save (so an original config round-trips) and reported.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from runtime.errors import ConfigError
from runtime.instance.guard_settings import LimitsConfig
from sqlitekit.jsonload import load_json

ToolMode = Literal["allow", "ask", "deny"]
GraphEngine = Literal["ladybug", "kuzu"]
# How memory search ranks (runtime/memory/fulltext.py): by meaning and by the query's exact
# words, fused ("hybrid"), or by meaning only ("vector").
SearchMode = Literal["hybrid", "vector"]
BUILTIN_EMBED_MODEL = "all-MiniLM-L6-v2"
# The original's defaults: a config that still carries both means "Ollama, as before".
ORIGINAL_EMBED_URL = "http://localhost:11434/api/embeddings"
ORIGINAL_EMBED_MODEL = "nomic-embed-text"

# The original's README documents 20 rows, its code and status bar 100. We take 100: a row is
# one side of an exchange, and 20 rows (ten exchanges) is too short for a coding session.
DEFAULT_MAX_WINDOW_TURNS = 100
DEFAULT_MAX_WINDOW_TOKENS = 200_000
DEFAULT_MODEL = "claude-opus-4-7"

# The original's default set of protocol-noise message types, acked without a model turn.
DEFAULT_SILENT_TYPES = (
    "ack",
    "ack_close",
    "ack_close_final",
    "ack_thread_terminal",
    "ack_close_2",
    "pong_ack",
    "thread_close",
    "thread_close_final",
)


class ToolPolicy(BaseModel):
    """One entry of `allowed_tools`: a tool name (or `mcp__server__*`), a mode, patterns."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool: str = Field(min_length=1)
    mode: ToolMode = "ask"
    allowed_patterns: tuple[str, ...] = ()


def default_tool_policies() -> tuple[ToolPolicy, ...]:
    return (
        ToolPolicy(tool="Bash", mode="ask"),
        ToolPolicy(tool="Read", mode="allow"),
        ToolPolicy(tool="Write", mode="ask"),
        ToolPolicy(tool="Edit", mode="ask"),
        ToolPolicy(tool="WriteMemory", mode="allow"),
    )


class McpServer(BaseModel):
    """A stdio MCP server handed to the SDK."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_-]+$")
    command: str = Field(min_length=1)
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)


class InstanceConfig(BaseModel):
    """Everything in `<home>/<instance>/config.json`."""

    model_config = ConfigDict(extra="allow", validate_assignment=True)

    role_doc_path: str = ""
    model: str = DEFAULT_MODEL
    max_window_turns: int = Field(default=DEFAULT_MAX_WINDOW_TURNS, ge=2)
    max_window_tokens: int = Field(default=DEFAULT_MAX_WINDOW_TOKENS, ge=1_000)
    allowed_tools: tuple[ToolPolicy, ...] = Field(default_factory=default_tool_policies)
    mcp_servers: tuple[McpServer, ...] = ()
    stream: bool = True
    bash_timeout_seconds: int = Field(default=60, ge=1)
    file_tool_home_only: bool = True
    display_name: str = ""

    # Opt-in context discipline.
    auto_evict_after_write: bool = False
    compress_repeated_reads: bool = False
    preserve_compressed_reads: bool = False
    read_skeleton_enabled: bool = False
    file_stat_manifest_enabled: bool = False
    # On by default (the original's default was off): every tool call is gated by it.
    runtime_sentinel: bool = True
    row_cap_slack_when_token_headroom: int = Field(default=0, ge=0)

    # Memory (runtime/memory/). The original embedded through Ollama by default; ours runs
    # a model shipped in a package, offline. A URL selects an Ollama endpoint instead.
    rag_enabled: bool = True
    rag_embed_url: str = ""
    rag_embed_model: str = BUILTIN_EMBED_MODEL
    rag_auto_index_memory: bool = True
    rag_auto_index_wiki: bool = True
    # "hybrid" also finds ids, numbers, versions and names by their words (a small embedding
    # model blurs them); "vector" searches by meaning only, as before.
    rag_search_mode: SearchMode = "hybrid"
    graph_enabled: bool = True
    # ladybug is the maintained fork of Kuzu; "kuzu" opens an original instance's graph.
    graph_engine: GraphEngine = "ladybug"
    replay_default_days: int = Field(default=7, ge=1, le=3650)
    replay_default_threshold: int = Field(default=3, ge=1, le=1000)
    replay_policy_path: str = ""

    # The original's solo peer polling against a foreign `returns` table.
    peer_poll_enabled: bool = False
    peer_db_path: str = ""
    peer_poll_roles: str = ""
    peer_poll_interval_seconds: float = Field(default=30, gt=0)
    peer_poll_batch: bool = True
    peer_poll_silent_types: tuple[str, ...] = DEFAULT_SILENT_TYPES
    peer_poll_ack_tool: str = ""
    peer_poll_submit_tool: str = ""

    # mnemara's own additions.
    tool_result_max_chars: int = Field(default=4_000, ge=200)
    # A trim drops the window to this fraction of its caps. Lower means fewer trims, and each
    # trim rewrites the whole cached transcript: bench/token_cost.py measured billed input at
    # 0.251x the original's layout with 0.75 and 0.230x with 0.6.
    window_low_water: float = Field(default=0.6, gt=0.1, le=1.0)
    # The prompt cache's lifetime for what a turn writes (runtime/turn/cache_ttl.py): "auto" picks
    # one hour for a panel whose turns come minutes apart, else five minutes.
    prompt_cache_ttl: Literal["auto", "5m", "1h"] = "auto"
    # The sentinel's thresholds (switched on by `runtime_sentinel`) and the hard budgets.
    limits: LimitsConfig = Field(default_factory=LimitsConfig)

    @field_validator("peer_poll_silent_types", mode="before")
    @classmethod
    def _silent_types(cls, value: Any) -> Any:
        # The original's `init` and its inbox toggle save null here: "use the default set".
        if value is None:
            return DEFAULT_SILENT_TYPES
        # A string is split on commas, as its writer meant. The original did not split it: it
        # read "ack,pong_ack" character by character, so such a file silenced nothing it named
        # there. `mnemara migrate` rewrites the string as a list.
        if isinstance(value, str):
            return tuple(t.strip() for t in value.split(",") if t.strip())
        return value

    @field_validator("rag_embed_url")
    @classmethod
    def _embed_url(cls, value: str) -> str:
        value = value.strip()
        if value and not value.startswith(("http://", "https://")):
            raise ValueError('must be "" (the built-in offline model) or an http(s) URL')
        return value

    @model_validator(mode="after")
    def _embedder_known(self) -> Self:
        if not self.rag_embed_url and self.rag_embed_model != BUILTIN_EMBED_MODEL:
            raise ValueError(
                f"rag_embed_model {self.rag_embed_model!r} needs rag_embed_url (an Ollama "
                f"embeddings endpoint); without one the model is {BUILTIN_EMBED_MODEL!r}"
            )
        return self

    def unknown_fields(self) -> list[str]:
        return sorted((self.model_extra or {}).keys())

    def policy_for(self, tool: str) -> ToolPolicy | None:
        for entry in self.allowed_tools:
            if entry.tool == tool:
                return entry
        return None


# Fields the original reads as "" when the file has null there (it keeps role_doc_path's null
# and treats it as "no role doc"; it reads replay_policy_path with `or ""`).
ORIGINAL_NULL_MEANS_EMPTY = ("role_doc_path", "replay_policy_path")


def read_original_forms(data: dict[str, Any]) -> dict[str, Any]:
    """`data` with the original's nulls replaced by what the original meant by them.

    The other original forms are read by validation itself: numbers written as strings by
    pydantic's lax mode, the silent types' null and string by their validator.
    `runtime/instance/config_compat.py` is how `migrate` rewrites all of them in our forms.
    """
    return {
        key: "" if value is None and key in ORIGINAL_NULL_MEANS_EMPTY else value
        for key, value in data.items()
    }


def load_config(path: Path) -> InstanceConfig:
    """Read and validate a config file; any problem is a ConfigError naming file and field."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("file not found", path=path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read ({exc}); fix or restore the file", path=path) from exc
    try:
        data = load_json(raw)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            "fix the file or restore it from a backup",
            path=path,
        ) from exc
    if not isinstance(data, dict):
        raise ConfigError("must be a JSON object", path=path)
    try:
        return InstanceConfig.model_validate(read_original_forms(data))
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or None
        raise ConfigError(
            f"{first['msg']} (got {first.get('input')!r})", path=path, field=field
        ) from exc


def save_config(path: Path, config: InstanceConfig) -> None:
    """Write the config atomically (temp file + rename), keeping unknown fields."""
    data = config.model_dump(mode="json")
    write_json_atomic(path, data)


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON to `path` so a crash leaves either the old or the new file, never half."""
    write_text_atomic(path, json.dumps(data, indent=2) + "\n")


def write_text_atomic(path: Path, text: str) -> None:
    """Write text via a temp file, fsync and rename: readers see the old or the new file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
