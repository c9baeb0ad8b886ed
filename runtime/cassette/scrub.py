"""Scrubbing secrets out of a recorded exchange before it touches the disk.

A cassette (file.py) is meant to be committed and shared, so nothing that could
authenticate anyone may reach it. Three layers, applied to every string of a request and a
response (JSON bodies, header values, the request path):

- credential headers are dropped whole (`x-api-key`, `authorization`, cookies, proxy auth,
  any header whose name says key, token, secret or auth);
- literal secrets known at record time (the upstream key, secret-looking variables of the
  environment the CLI inherits) are replaced wherever they occur, whatever their shape;
- patterns of well-known secret formats are replaced (`PATTERNS`);
- identifiers of the user and the machine that are not secrets but need not travel with a
  shared file are replaced too: a request's `metadata.user_id` (the CLI puts a device hash
  and account and session ids there).

Each replacement is the fixed marker `[scrubbed:<name>]`, and a `Tally` counts what was
replaced where (header names, JSON paths, pattern names), never the values, so the cassette
can say what was scrubbed without saying what it was.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# Name → pattern. Order matters: the more specific shapes come first, so an Anthropic key is
# reported as one and not as a generic `sk-` key. A pattern with a group `value` replaces
# only that group (the `password=` before it stays, so the text still reads).
PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "private-key",
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----.*?-----END [A-Z0-9 ]*PRIVATE KEY"
            r"( BLOCK)?-----",
            re.DOTALL,
        ),
    ),
    ("anthropic-key", re.compile(r"sk-ant-[A-Za-z0-9_\-]{6,}")),
    ("openai-key", re.compile(r"sk-[A-Za-z0-9_\-]{16,}")),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})")),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}")),
    ("bearer-token", re.compile(r"(?i)\bbearer\s+(?P<value>[A-Za-z0-9._~+/=\-]{8,})")),
    (
        "secret-assignment",
        re.compile(
            r"(?i)\b(?:password|passwd|pwd|api[_-]?key|secret|access[_-]?token|auth[_-]?token)"
            r"""["']?\s*[:=]\s*["']?(?!\[scrubbed:)(?P<value>[^\s"'&,;<>]{4,})"""
        ),
    ),
)

# (parent key, key) of JSON members replaced whole, by the name of what they identify.
IDENTIFYING: dict[tuple[str, str], str] = {("metadata", "user_id"): "user-id"}

# Headers never written, whatever their value; plus any header whose name contains one of
# `CREDENTIAL_WORDS` (e.g. `anthropic-auth-token`, `x-goog-api-key`).
CREDENTIAL_HEADERS = frozenset(
    {"x-api-key", "authorization", "proxy-authorization", "cookie", "set-cookie"}
)
CREDENTIAL_WORDS = ("key", "token", "secret", "auth", "cookie", "password")
# Variables of the environment whose values are treated as secrets when long enough.
SECRET_ENV_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
MIN_LITERAL = 8


def marker(name: str) -> str:
    return f"[scrubbed:{name}]"


def is_credential_header(name: str) -> bool:
    lowered = name.lower()
    return lowered in CREDENTIAL_HEADERS or any(w in lowered for w in CREDENTIAL_WORDS)


def env_secrets(env: Mapping[str, str]) -> dict[str, str]:
    """The values of secret-looking variables (`*KEY*`, `*TOKEN*`...), named `env:<NAME>`."""
    return {
        f"env:{name}": value
        for name, value in env.items()
        if len(value) >= MIN_LITERAL and any(w in name.upper() for w in SECRET_ENV_WORDS)
    }


@dataclass
class Tally:
    """What was scrubbed: counts by pattern (or literal) name, and where."""

    headers: set[str] = field(default_factory=set)
    names: Counter[str] = field(default_factory=Counter)
    paths: set[str] = field(default_factory=set)

    def merge(self, other: Tally) -> None:
        self.headers |= other.headers
        self.names.update(other.names)
        self.paths |= other.paths

    def as_json(self) -> dict[str, Any]:
        return {
            "headers": sorted(self.headers),
            "patterns": dict(sorted(self.names.items())),
            "paths": sorted(self.paths),
        }

    def summary(self) -> str:
        """One line for the operator: what kinds were scrubbed, how often, never values."""
        parts = [f"{n} x{c}" for n, c in sorted(self.names.items())]
        if self.headers:
            parts.append("headers " + ", ".join(sorted(self.headers)))
        return "; ".join(parts) if parts else "nothing"


@dataclass(frozen=True)
class Scrubber:
    """Replaces secrets in strings and JSON values. `literals`: name → exact secret value."""

    literals: Mapping[str, str] = field(default_factory=dict)

    def text(self, value: str, tally: Tally, path: str) -> str:
        out = value
        # Longest first: a literal that contains another is replaced whole.
        for name, secret in sorted(self.literals.items(), key=lambda kv: -len(kv[1])):
            if secret and secret in out:
                tally.names[name] += out.count(secret)
                out = out.replace(secret, marker(name))
        for name, pattern in PATTERNS:
            out = pattern.sub(functools.partial(_replace, name=name, tally=tally), out)
        if out != value:
            tally.paths.add(path)
        return out

    def json(self, value: Any, tally: Tally, path: str) -> Any:
        """A copy of a JSON value with every string (keys too) scrubbed."""
        if isinstance(value, str):
            return self.text(value, tally, path)
        if isinstance(value, list):
            return [self.json(v, tally, f"{path}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, dict):
            return {
                self.text(str(k), tally, path): self._member(path, str(k), v, tally)
                for k, v in value.items()
            }
        return value

    def _member(self, path: str, key: str, value: Any, tally: Tally) -> Any:
        where = f"{path}.{key}"
        name = IDENTIFYING.get((path.rsplit(".", 1)[-1], key))
        if name is None or value is None:
            return self.json(value, tally, where)
        tally.names[name] += 1
        tally.paths.add(where)
        return marker(name)

    def headers(self, headers: Mapping[str, str], tally: Tally, path: str) -> dict[str, str]:
        """The headers to keep: credentials dropped (named in the tally), values scrubbed."""
        kept: dict[str, str] = {}
        for name, value in headers.items():
            lowered = name.lower()
            if is_credential_header(lowered):
                tally.headers.add(lowered)
                continue
            kept[lowered] = self.text(value, tally, f"{path}.{lowered}")
        return kept


def _replace(match: re.Match[str], *, name: str, tally: Tally) -> str:
    tally.names[name] += 1
    if "value" in match.re.groupindex and match.group("value") is not None:
        start, end = match.span("value")
        whole_start = match.start()
        text = match.group(0)
        return text[: start - whole_start] + marker(name) + text[end - whole_start :]
    return marker(name)
