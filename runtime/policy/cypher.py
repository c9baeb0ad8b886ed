"""The read-only Cypher check for the graph tools: a query either reads, or it is refused.

The graph tools take their values as query parameters (`$name`) and never paste model text
into a query; this check is the second wall, for the one tool that accepts a query string.
The query is tokenised the way the engine would see it (comments and string literals set
aside, backtick-quoted names kept as names) and refused when any keyword could write,
load, install, attach or export, when it holds more than one statement, or when it calls a
procedure outside a short read-only list.
"""

from __future__ import annotations

import re

from runtime.errors import PolicyError

# Keywords that change the database, reach outside it, or control transactions.
WRITE_KEYWORDS = frozenset(
    {
        "CREATE", "MERGE", "SET", "DELETE", "DETACH", "REMOVE", "DROP", "ALTER", "COPY", "LOAD",
        "INSTALL", "ATTACH", "USE", "IMPORT", "EXPORT", "CHECKPOINT", "BEGIN", "COMMIT",
        "ROLLBACK", "FOREACH", "PROFILE", "EXPLAIN", "RENAME", "GRANT", "REVOKE", "TRUNCATE",
    }
)  # fmt: skip
READ_START = frozenset({"MATCH", "OPTIONAL", "WITH", "UNWIND", "RETURN", "CALL"})
READ_PROCEDURES = frozenset(
    {"show_tables", "table_info", "show_connection", "db_version", "db.labels",
     "db.relationshiptypes", "db.propertykeys"}
)  # fmt: skip

_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
    | (?P<line_comment>//[^\n]*)
    | (?P<block_comment>/\*.*?\*/)
    | (?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
    | (?P<quoted_name>`(?:[^`]|``)*`)
    | (?P<word>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
    | (?P<param>\$[A-Za-z_][A-Za-z0-9_]*)
    | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)


def read_only_violation(query: str) -> str | None:
    """Why `query` is not a single read-only query, or None when it is."""
    tokens: list[tuple[str, str]] = []
    statements_ended = False
    position = 0
    while position < len(query):
        match = _TOKEN.match(query, position)
        if match is None:  # pragma: no cover - `other` matches any single character
            return "cannot be read"
        kind = match.lastgroup
        text = match.group()
        position = match.end()
        if kind == "other" and text in "'\"`":
            return "an unterminated string or quoted name"
        if kind == "other" and text == "/" and query.startswith("/*", match.start()):
            return "an unterminated comment"
        if kind in ("space", "line_comment", "block_comment"):
            continue
        if statements_ended:
            return "more than one statement"
        if kind == "other" and text == ";":
            statements_ended = True
        else:
            tokens.append((kind or "", text))
    return _judge(tokens)


def _judge(tokens: list[tuple[str, str]]) -> str | None:
    words = [text for kind, text in tokens if kind == "word"]
    if not words:
        return "an empty query"
    if tokens[0][0] != "word" or words[0].upper() not in READ_START:
        return f"starts with {tokens[0][1]!r}; a read query starts with MATCH, WITH or RETURN"
    for i, (kind, text) in enumerate(tokens):
        if kind != "word":
            continue
        if text.upper() in WRITE_KEYWORDS:
            return f"{text} is not allowed in a read-only query"
        if text.upper() == "CALL":
            following = tokens[i + 1] if i + 1 < len(tokens) else ("other", "")
            procedure = following[1].lower() if following[0] == "word" else ""
            if procedure not in READ_PROCEDURES:
                return f"CALL {procedure or following[1]!r} is not a known read-only procedure"
    return None


def require_read_only(query: str) -> str:
    """Return `query` unchanged, or raise PolicyError saying why it was refused."""
    reason = read_only_violation(query)
    if reason is not None:
        raise PolicyError(f"graph query refused: {reason}", field="query")
    return query
