"""The replay policy doc: defaults for `mnemara replay` that an operator keeps in the wiki.

`replay_policy_path` in config.json names it; empty means `<instance>/wiki/replay_policy.md`,
as in the original mnemara. Its `days:` and `threshold:` lines override the config's
defaults; flags on the command line override both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from runtime.errors import ConfigError, MemoryStoreError
from runtime.memory.files import read_memory_text

DAYS_RANGE = (1, 3650)  # as config.json's replay_default_days
THRESHOLD_RANGE = (1, 1000)  # as config.json's replay_default_threshold
_POLICY_LINE = re.compile(r"^[-*\s]*\**([a-z_]+)\**\s*[:=]\**\s*(\S+)", re.I | re.M)


@dataclass(frozen=True)
class ReplayPolicy:
    """The policy doc's defaults (None: not set) and what was wrong in it."""

    path: Path
    days: int | None = None
    threshold: int | None = None
    problems: tuple[str, ...] = ()


def policy_path(instance_root: Path, configured: str) -> tuple[Path, bool]:
    """(the policy doc's path, whether config.json names it explicitly)."""
    if configured.strip():
        return Path(configured.strip()).expanduser(), True
    return instance_root / "wiki" / "replay_policy.md", False


def load_policy(path: Path, explicit: bool) -> ReplayPolicy:
    """The `days:` and `threshold:` lines of the policy doc (Markdown; `key: value` or
    `key = value`, list markers and bold allowed). A missing default doc is no policy; a
    missing or unreadable doc that config.json names is a ConfigError."""
    try:
        text = read_memory_text(path)
    except FileNotFoundError:
        if not explicit:
            return ReplayPolicy(path)
        raise ConfigError(
            f'the replay policy doc {path} does not exist; create it or set it to ""',
            field="replay_policy_path",
        ) from None
    except (OSError, MemoryStoreError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(
            f"the replay policy doc {path} cannot be read ({why})", field="replay_policy_path"
        ) from None
    found: dict[str, int] = {}
    problems: list[str] = []
    ranges = {"days": DAYS_RANGE, "threshold": THRESHOLD_RANGE}
    for match in _POLICY_LINE.finditer(text):
        key, raw = match.group(1).lower(), match.group(2).strip("*")
        if key not in ranges or key in found:
            continue
        low, high = ranges[key]
        if not raw.isdigit() or not low <= int(raw) <= high:
            problems.append(f"{path.name}: {key} {raw!r} is not a whole number in {low}..{high}")
            continue
        found[key] = int(raw)
    return ReplayPolicy(path, found.get("days"), found.get("threshold"), tuple(problems))
