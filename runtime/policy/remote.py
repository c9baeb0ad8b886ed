"""What reaches beyond this machine: the effects a sandbox cannot contain once it has a network.

With the team's network `"off"` or `"model"`, nothing a command or a confined MCP server does
leaves the machine except through the model endpoint, so the sandbox contains it. With a list
of hosts, a command can act on a service at one of them: push a branch, publish a package,
open a pull request, delete a pod. Those effects are what is still asked about; the tables
below say which commands and which MCP tools have them. They are data, so a program or a verb
is added by adding a row.

A command is judged by its program and its first operands (its subcommand): `git push` acts
remotely, `git pull` only reads. An MCP tool is judged by the verbs in its name
(`create_pull_request`, `delete-pod`): a tool whose name says it reads (`get`, `list`,
`search`) is allowed, one that names a change asks, and one whose name says neither asks
too (fail closed).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# program -> subcommand words (the first operand, or the first two joined by a space) that
# act on a remote service; "*" means the program always does (it runs on another machine).
REMOTE_SUBCOMMANDS: dict[str, frozenset[str]] = {
    "git": frozenset({"push", "send-email", "svn dcommit", "request-pull"}),
    "gh": frozenset({
        "pr create", "pr merge", "pr close", "pr reopen", "pr edit", "pr comment", "pr review",
        "pr ready", "issue create", "issue close", "issue reopen", "issue edit", "issue comment",
        "issue delete", "release create", "release delete", "release upload", "release edit",
        "repo create", "repo delete", "repo fork", "repo edit", "repo rename", "repo archive",
        "gist create", "gist delete", "gist edit", "workflow run", "run rerun", "run cancel",
        "secret set", "secret delete", "variable set", "variable delete", "label create",
        "label delete",
    }),
    "glab": frozenset({"mr create", "mr merge", "mr close", "issue create", "release create"}),
    "npm": frozenset({"publish", "unpublish", "deprecate", "dist-tag", "owner", "access"}),
    "pnpm": frozenset({"publish"}),
    "yarn": frozenset({"publish", "npm publish"}),
    "bun": frozenset({"publish"}),
    "twine": frozenset({"upload", "register"}),
    "uv": frozenset({"publish"}),
    "poetry": frozenset({"publish"}),
    "flit": frozenset({"publish"}),
    "hatch": frozenset({"publish"}),
    "cargo": frozenset({"publish", "yank", "owner"}),
    "gem": frozenset({"push", "yank", "owner"}),
    "docker": frozenset({"push", "login"}),
    "podman": frozenset({"push", "login"}),
    "helm": frozenset({"push", "install", "upgrade", "uninstall", "rollback"}),
    "kubectl": frozenset({
        "apply", "create", "delete", "patch", "replace", "scale", "rollout", "edit", "label",
        "annotate", "set", "drain", "cordon", "uncordon", "taint", "exec", "cp", "run",
    }),
    "terraform": frozenset({"apply", "destroy", "import", "taint", "untaint", "state rm"}),
    "tofu": frozenset({"apply", "destroy", "import"}),
    "pulumi": frozenset({"up", "destroy", "import", "refresh"}),
    "ssh": frozenset({"*"}),
    "mosh": frozenset({"*"}),
    "sendmail": frozenset({"*"}),
    "mail": frozenset({"*"}),
    "mutt": frozenset({"*"}),
    "vercel": frozenset({"*"}),
    "netlify": frozenset({"deploy", "sites:create", "sites:delete", "env:set"}),
    "flyctl": frozenset({"deploy", "apps", "secrets", "scale", "machine", "destroy"}),
    "fly": frozenset({"deploy", "apps", "secrets", "scale", "machine", "destroy"}),
    "heroku": frozenset({"*"}),
    "firebase": frozenset({"deploy"}),
    "aws": frozenset({"*"}),
    "gcloud": frozenset({"*"}),
    "az": frozenset({"*"}),
}  # fmt: skip

# A cloud CLI that acts remotely except when its last verb only reads.
_READ_ONLY_WORDS = frozenset(
    {"list", "ls", "get", "describe", "show", "status", "version", "help", "whoami", "view",
     "info", "logs", "--version", "--help", "-h"}
)  # fmt: skip
_CLOUD = frozenset({"aws", "gcloud", "az", "heroku", "vercel"})

# Options of HTTP clients that send data (an upload or a state-changing request).
_HTTP_CLIENTS = frozenset({"curl", "wget", "http", "https", "xh", "httpie"})
_SENDS_DATA = re.compile(
    r"^(-d|--data(-\w+)?|-F|--form(-string)?|-T|--upload-file|--json|--post-data|--post-file"
    r"|--body-data|--body-file|--method=(?!GET|HEAD)\w+|-X(POST|PUT|PATCH|DELETE)?"
    r"|--request(=(?!GET|HEAD)\w+)?)$",
    re.IGNORECASE,
)
# scp/rsync/sftp with a `host:path` operand copy to or from another machine.
_REMOTE_OPERAND = re.compile(r"^([\w.-]+@)?[\w.-]+:")
_COPIERS = frozenset({"scp", "rsync", "sftp"})


def remote_effects(program: str, args: Sequence[str]) -> list[str]:
    """Why this command acts on something beyond this machine (empty: it does not)."""
    operands = [a for a in args if not a.startswith("-")]
    words = {*operands[:1], " ".join(operands[:2])}
    table = REMOTE_SUBCOMMANDS.get(program)
    if table is not None:
        if "*" in table:
            if program in _CLOUD and operands and operands[-1] in _READ_ONLY_WORDS:
                return []
            if program in _CLOUD and any(a in ("--version", "--help", "-h") for a in args):
                return []
            return [f"`{program}` acts on another machine or service"]
        hit = sorted(w for w in words if w in table)
        if hit:
            return [f"`{program} {hit[-1]}` acts on a remote service"]
    if program in _HTTP_CLIENTS and any(_SENDS_DATA.match(a) for a in args):
        return [f"`{program}` sends data to a remote service"]
    if program in _COPIERS and any(_REMOTE_OPERAND.match(a) for a in operands):
        return [f"`{program}` copies to or from another machine"]
    return []


# Verbs in an MCP tool's name (split on `_`, `-` and case changes).
READ_VERBS = frozenset(
    {"get", "list", "read", "search", "query", "find", "fetch", "describe", "show", "view",
     "lookup", "resolve", "check", "status", "info", "count", "diff", "inspect", "explain",
     "retrieve", "browse", "summarize", "summarise", "download", "preview", "compare", "docs",
     "documentation", "validate", "lint", "analyze", "analyse", "estimate"}
)  # fmt: skip
CHANGE_VERBS = frozenset(
    {"create", "delete", "remove", "update", "edit", "merge", "close", "push", "publish",
     "send", "post", "write", "add", "set", "start", "stop", "restart", "deploy", "run",
     "execute", "exec", "cancel", "approve", "comment", "upload", "move", "rename", "archive",
     "invite", "assign", "trigger", "terminate", "scale", "fork", "reopen", "submit", "put",
     "patch", "insert", "drop", "reply", "reboot", "resume", "pause", "kill", "transfer",
     "pay", "buy", "order", "book", "sign", "revoke", "grant", "lock", "unlock", "enable",
     "disable", "install", "uninstall", "release", "tag", "label", "review", "dismiss"}
)  # fmt: skip
_NAME_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def mcp_change(tool: str) -> str | None:
    """Why an MCP tool may change something at its service, or None when its name says it
    only reads. `mcp__server__create-pod` -> a reason; `mcp__server__get-pod` -> None."""
    name = tool.split("__", 2)[-1]
    words = [w.lower() for w in _NAME_WORDS.findall(name)]
    changes = [w for w in words if w in CHANGE_VERBS]
    if changes:
        return f"`{name}` ({changes[0]}) may change something at the server's service"
    if any(w in READ_VERBS for w in words):
        return None
    return f"`{name}` does not say it only reads, and may change something at its service"
