"""The read-only Cypher check for the graph tools: a query either reads, or it is refused.

The graph tools take their values as query parameters (`$name`) and never paste model text
into a query; this check is the second wall, for the one tool that accepts a query string.
The query is tokenised the way the engine would see it (comments and string literals set
aside, backtick-quoted names kept as names) and refused when any keyword could write,
load, install, attach or export, when it holds more than one statement, when it calls a
procedure outside a short read-only list, or a function that reads files or changes state
(ladybug and kuzu expose `read_csv`, `read_parquet`, `json_scan`, `nextval`, ...), or when a
character outside ASCII stands outside a string, a quoted name or a comment (look-alikes
such as a fullwidth CREATE are refused rather than guessed at).

The cases were run on the real engines (ladybug 0.22, kuzu 0.11): the engines end a `//`
comment at `\r` as well as `\n`, treat `\'` inside a string as an escape, and do not nest
block comments; the tokeniser below agrees with them on each point. `CALL read_csv_serial(...)`
segfaults ladybug 0.22, which is one more reason table functions stay behind the allowlist.
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
        "ANALYZE", "COMMENT", "UNINSTALL", "UPDATE", "FORCE", "TRANSACTION", "MACRO",
    }
)  # fmt: skip
READ_START = frozenset({"MATCH", "OPTIONAL", "WITH", "UNWIND", "RETURN", "CALL"})
READ_PROCEDURES = frozenset(
    {"show_tables", "table_info", "show_connection", "db_version", "db.labels",
     "db.relationshiptypes", "db.propertykeys"}
)  # fmt: skip
# Functions that read files, write, or change session state, wherever they appear (a table
# function can also sit behind LOAD FROM). Prefixes cover the families of both engines:
# read_csv*, read_parquet, read_npy, read_pandas; copy_csv/parquet/json; create_/drop_ index
# and projected-graph functions; clear_warnings; internal `_`-named functions.
DENIED_FUNCTIONS = frozenset({"FILE_INFO", "JSON_SCAN", "NEXTVAL", "SETSEED"})
DENIED_FUNCTION_PREFIXES = ("READ_", "COPY_", "CREATE_", "DROP_", "PROJECT_", "CLEAR_", "_")

_TOKEN = re.compile(
    r"""
    (?P<space>[ \t\n\r\f\v]+)
    | (?P<line_comment>//[^\n\r]*)
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
        if kind == "other" and not text.isascii():
            return f"the character {text!r} outside a string or quoted name"
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
        following_kind, following_text = tokens[i + 1] if i + 1 < len(tokens) else ("", "")
        if following_kind == "other" and following_text == "(" and _denied_function(text):
            return f"the function {text} reads files or changes state"
        if text.upper() == "CALL":
            following = tokens[i + 1] if i + 1 < len(tokens) else ("other", "")
            procedure = following[1].lower() if following[0] == "word" else ""
            if procedure not in READ_PROCEDURES:
                return f"CALL {procedure or following[1]!r} is not a known read-only procedure"
    return None


def _denied_function(name: str) -> bool:
    name = name.upper()
    return name in DENIED_FUNCTIONS or name.startswith(DENIED_FUNCTION_PREFIXES)


def require_read_only(query: str) -> str:
    """Return `query` unchanged, or raise PolicyError saying why it was refused."""
    reason = read_only_violation(query)
    if reason is not None:
        raise PolicyError(f"graph query refused: {reason}", field="query")
    return query
