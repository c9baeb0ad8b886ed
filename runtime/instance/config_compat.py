"""Rewriting an original mnemara `config.json` in our field forms (what `migrate` does to it).

`load_config` already reads every form the original writes; this module plans the rewrite so
the file says what we read: the silent types' null becomes the default list, a silent-types
string becomes a list, numbers written as strings become numbers, and so on. The plan is a
pure function over the parsed JSON; `apply_config_rewrite` is the I/O edge. Only fields of
the original are rewritten, and only when their value differs from our reading of it; every
other key (fields this version does not know included) is kept as it was, in its place.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from runtime.errors import ConfigError
from runtime.instance.config import InstanceConfig, read_original_forms, write_text_atomic
from sqlitekit.jsonload import load_json

# Every field the original's `init` writes (its Config dataclass, in its order). Of these,
# replay_cluster_within_category is unknown to us and is kept as it is.
ORIGINAL_FIELDS = (
    "role_doc_path",
    "model",
    "max_window_turns",
    "max_window_tokens",
    "allowed_tools",
    "mcp_servers",
    "stream",
    "bash_timeout_seconds",
    "file_tool_home_only",
    "rag_enabled",
    "rag_embed_url",
    "rag_embed_model",
    "rag_auto_index_memory",
    "rag_auto_index_wiki",
    "auto_evict_after_write",
    "row_cap_slack_when_token_headroom",
    "runtime_sentinel",
    "compress_repeated_reads",
    "preserve_compressed_reads",
    "read_skeleton_enabled",
    "file_stat_manifest_enabled",
    "display_name",
    "graph_enabled",
    "replay_default_days",
    "replay_default_threshold",
    "replay_policy_path",
    "replay_cluster_within_category",
    "peer_poll_enabled",
    "peer_poll_interval_seconds",
    "peer_db_path",
    "peer_poll_roles",
    "peer_poll_batch",
    "peer_poll_silent_types",
    "peer_poll_ack_tool",
    "peer_poll_submit_tool",
)


@dataclass(frozen=True)
class FieldRewrite:
    """One field whose original form is rewritten: the value before, after, and why."""

    field: str
    before: Any
    after: Any

    @property
    def why(self) -> str:
        if self.before is None and self.field == "peer_poll_silent_types":
            return "null meant the default set"
        if self.before is None:
            return 'null meant ""'
        if self.field == "peer_poll_silent_types" and isinstance(self.before, str):
            return "split on commas; the original read this string character by character"
        return "written as we read it"

    def describe(self) -> str:
        return f"{self.field}: {_short(self.before)} -> {_short(self.after)} ({self.why})"


@dataclass(frozen=True)
class ConfigRewrite:
    """What `migrate` writes to one config.json: the new content and each change made."""

    data: dict[str, Any]
    changes: tuple[FieldRewrite, ...]


@dataclass(frozen=True)
class ConfigMigration:
    """What `migrate` did to one config.json (maybe nothing)."""

    path: Path
    changes: tuple[FieldRewrite, ...] = ()
    backup: Path | None = None
    absent: bool = False

    def lines(self) -> list[str]:
        """One line per change, then where the old file is kept; or one line saying why not."""
        if self.absent:
            return [f"{self.path}: no config, nothing to rewrite"]
        if not self.changes:
            return [f"{self.path}: already in our field forms"]
        out = [f"{self.path}: {change.describe()}" for change in self.changes]
        out.append(f"{self.path}: original kept at {self.backup}")
        return out


def plan_config_rewrite(data: dict[str, Any], *, path: Path) -> ConfigRewrite:
    """The rewrite of a parsed config.json to our forms; a ConfigError if we cannot read it."""
    try:
        ours = InstanceConfig.model_validate(read_original_forms(data)).model_dump(mode="json")
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or None
        raise ConfigError(
            f"{first['msg']} (got {first.get('input')!r}); fix it, then run migrate again",
            path=path,
            field=field,
        ) from exc
    rewritten = dict(data)
    changes: list[FieldRewrite] = []
    for key, before in data.items():
        if key in ORIGINAL_FIELDS and key in ours and not _same(before, ours[key]):
            rewritten[key] = ours[key]
            changes.append(FieldRewrite(key, before, ours[key]))
    return ConfigRewrite(rewritten, tuple(changes))


def apply_config_rewrite(path: Path, *, now: datetime | None = None) -> ConfigMigration:
    """Rewrite `path` in our forms, first keeping the old bytes in a new `.bak-<stamp>` file."""
    if not path.is_file():
        return ConfigMigration(path, absent=True)
    try:
        raw = path.read_bytes()
        data = load_json(raw)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read ({exc}); fix or restore the file", path=path) from exc
    if not isinstance(data, dict):
        raise ConfigError("must be a JSON object", path=path)
    plan = plan_config_rewrite(data, path=path)
    if not plan.changes:
        return ConfigMigration(path)
    backup = _keep_backup(path, raw, now or datetime.now(UTC))
    write_text_atomic(path, json.dumps(plan.data, indent=2) + "\n")
    return ConfigMigration(path, plan.changes, backup)


def _keep_backup(path: Path, raw: bytes, now: datetime) -> Path:
    """Copy `raw` to a backup name not yet taken; an existing backup is never overwritten."""
    stem = f"{path.name}.bak-{now.strftime('%Y%m%dT%H%M%SZ')}"
    for n in range(1000):
        backup = path.with_name(stem if n == 0 else f"{stem}-{n}")
        try:
            # "x": fails if the name exists, so a backup from an earlier run stays as it was.
            with backup.open("xb") as fh:
                fh.write(raw)
            return backup
        except FileExistsError:
            continue
    raise ConfigError(f"too many backups named {stem}*; remove old ones", path=path)


def _same(before: Any, after: Any) -> bool:
    """JSON equality: 30 and 30.0 are the same number; "30" and 30, or 1 and true, are not."""
    if isinstance(before, bool) or isinstance(after, bool):
        return type(before) is type(after) and before == after
    if isinstance(before, int | float) and isinstance(after, int | float):
        return before == after
    if isinstance(before, list) and isinstance(after, list):
        return len(before) == len(after) and all(map(_same, before, after))
    if isinstance(before, dict) and isinstance(after, dict):
        return before.keys() == after.keys() and all(_same(before[k], after[k]) for k in before)
    return type(before) is type(after) and before == after


def _short(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 80 else text[:77] + "..."
