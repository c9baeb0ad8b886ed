"""What a program does, as far as the sentinel can tell from a Bash command's words. Pure.

`classify(command)` says whether a command may change anything (`changes`) and whether it runs
tests or a checker (`tests`: pytest, `python -m pytest`, npm/yarn/pnpm test, make test, cargo
test, go test, tox, nox, jest, mypy, ruff check, ...), from each simple command's program and
subcommand (commands.py splits the command and unwraps `sudo`, `timeout N`, `env A=1`,
`uv run`, `npx`). A segment changes nothing only when its program is known to read (ls, cat,
grep, git status/diff/log, curl or gh without a body or a method, sleep, kubectl get, pip
list, ...) or runs tests; a write redirection, an unknown program, a script or a package
manager counts as a change. `cd`, `export` and `source` in front of other commands change
nothing; alone, they change the shell's own state.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise

from runtime.guard.commands import INTERPRETERS, Segment, is_null_device, segments, unwrap


@dataclass(frozen=True)
class CommandClass:
    changes: bool  # may change something: a file, a package, the network, the shell
    tests: bool  # runs tests or a checker, whose outcome the sentinel records
    # Its only changes are writes redirected into files (`echo x >> notes.log`): files the
    # command names, which the world probe measures, so the change is not opaque.
    writes_only: bool = False


_SHELL_STATE = frozenset(
    {"cd", "pushd", "popd", "export", "unset", "source", ".", "alias", "set", "shopt", "umask"}
)
_READERS = frozenset(
    {
        "ls", "ll", "cat", "bat", "head", "tail", "less", "more", "grep", "egrep", "fgrep",
        "zgrep", "zcat", "rg", "ag", "ack", "fd", "fdfind", "tree", "wc", "du", "df", "stat",
        "file", "which", "whereis", "type", "pwd", "echo", "printf", "date", "whoami", "id",
        "uname", "hostname", "printenv", "ps", "pgrep", "top", "free", "uptime", "lsof",
        "netstat", "ss", "ping", "dig", "nslookup", "host", "sleep", "true", "false", "test",
        "[", ":", "diff", "cmp", "comm", "uniq", "cut", "tr", "jq", "yq", "xxd", "hexdump",
        "od", "strings", "md5sum", "sha1sum", "sha256sum", "shasum", "cksum", "basename",
        "dirname", "realpath", "readlink", "seq", "column", "nl", "tac", "rev", "base64",
        "nproc", "lscpu", "nvidia-smi", "wait", "watch", "man", "history", "locale", "tldr",
        "fold", "expand", "env", "gofmt",
    }
)  # fmt: skip
# Runners and checkers whose outcome is what they produce.
_TESTERS = frozenset(
    {
        "pytest", "py.test", "tox", "nox", "jest", "vitest", "mocha", "ava", "karma", "rspec",
        "phpunit", "ctest", "bats", "mypy", "pyright", "flake8", "pylint", "pyflakes",
        "bandit", "shellcheck", "hadolint", "yamllint", "markdownlint", "lint-imports",
        "golangci-lint", "unittest", "trial", "behave", "nosetests", "ward",
    }
)  # fmt: skip
_TEST_TARGETS = re.compile(r"^(tests?|check|checks|lint|typecheck|types|unit|integration|e2e)"
                           r"([-:_].*)?$")  # fmt: skip
_FIXERS = frozenset({"--fix", "--write", "-w", "--unsafe-fixes", "--in-place", "-i"})
_GIT_READS = frozenset(
    {
        "status", "diff", "log", "show", "rev-parse", "blame", "ls-files", "ls-tree",
        "ls-remote", "describe", "grep", "shortlog", "cat-file", "show-ref", "merge-base",
        "name-rev", "whatchanged", "count-objects", "help", "version", "check-ignore",
        "for-each-ref", "var", "rev-list", "cherry", "range-diff",
    }
)  # fmt: skip
_GIT_LISTERS = {
    "branch": {"-a", "-r", "-v", "-vv", "--list", "-l", "--show-current", "--contains",
               "--merged", "--no-merged", "--all", "--remotes", "--format"},
    "tag": {"-l", "--list", "-n", "--contains", "--points-at", "--sort"},
    "remote": {"-v", "show", "get-url"},
    "stash": {"list", "show"},
    "config": {"--get", "--get-all", "--list", "-l", "--get-regexp", "--show-origin"},
    "worktree": {"list"},
    "submodule": {"status"},
    "reflog": {"show"},
}  # fmt: skip
_GIT_BARE_READS = frozenset({"branch", "tag", "remote", "submodule", "reflog"})
_GIT_GLOBAL_VALUED = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace"})
_SUBCOMMAND_READS = {
    "gh": frozenset({"view", "list", "status", "checks", "diff", "watch", "search", "browse"}),
    "docker": frozenset({"ps", "logs", "images", "inspect", "version", "info", "stats", "top",
                         "port", "history", "events", "search", "ls"}),
    "podman": frozenset({"ps", "logs", "images", "inspect", "version", "info", "stats", "top"}),
    "kubectl": frozenset({"get", "describe", "logs", "top", "version", "explain", "wait",
                          "api-resources", "api-versions", "cluster-info", "events", "status",
                          "history", "view", "get-contexts", "current-context", "can-i"}),
    "helm": frozenset({"list", "ls", "status", "get", "history", "show", "search", "version",
                       "template"}),
    "npm": frozenset({"ls", "list", "view", "info", "outdated", "why", "explain", "root", "bin",
                      "prefix", "search", "help", "doctor", "--version", "-v", "audit"}),
    "pip": frozenset({"list", "show", "freeze", "check", "--version", "-V", "help", "index",
                      "search", "inspect", "debug"}),
    "cargo": frozenset({"tree", "metadata", "--version", "search", "locate-project"}),
    "go": frozenset({"list", "env", "version", "doc"}),
    "terraform": frozenset({"plan", "show", "validate", "output", "version", "providers"}),
    "uv": frozenset({"tree", "--version", "version"}),
    "poetry": frozenset({"show", "check", "--version", "version", "env"}),
    "brew": frozenset({"list", "info", "search", "--version", "outdated", "deps", "config"}),
}  # fmt: skip
_SUBCOMMAND_TESTS = {
    "npm": frozenset({"test", "t", "tst"}),
    "cargo": frozenset({"test", "nextest", "check", "clippy"}),
    "go": frozenset({"test", "vet"}),
    "mvn": frozenset({"test", "verify"}),
    "gradle": frozenset({"test", "check"}),
    "dotnet": frozenset({"test"}),
    "mix": frozenset({"test"}),
    "swift": frozenset({"test"}),
    "deno": frozenset({"test", "check", "lint"}),
    "bun": frozenset({"test"}),
    "rake": frozenset({"test", "spec"}),
}
_ALIASES = {"pip3": "pip", "yarn": "npm", "pnpm": "npm", "podman-compose": "docker",
            "docker-compose": "docker", "oc": "kubectl", "gradlew": "gradle"}  # fmt: skip


@lru_cache(maxsize=512)
def classify(command: str) -> CommandClass:
    """Does `command` change anything, and does it run tests? See the module docstring."""
    parts = segments(command)
    if not parts:
        return CommandClass(changes=True, tests=False)
    kinds = [_segment_kind(s) for s in parts]
    tests = "test" in kinds
    if all(k in ("read", "state") for k in kinds) and "state" in kinds:
        changes = all(k == "state" for k in kinds)  # `cd x` alone moves the shell
    else:
        changes = "change" in kinds
    writes_only = changes and all(_segment_kind(s, writes=False) in ("read", "test") for s in parts)
    return CommandClass(changes=changes, tests=tests, writes_only=writes_only)


def _segment_kind(segment: Segment, *, writes: bool = True) -> str:
    """ "read", "test", "change", or "state" (cd, export: the shell's own state); with
    `writes` False, what the program does leaving its redirections aside."""
    if writes and any(not is_null_device(t) for t in segment.writes):
        return "change"
    words = list(segment.words)
    while words and "=" in words[0] and not words[0].startswith("="):
        words.pop(0)  # NAME=value before the command
    words = unwrap(words)
    if not words:
        return "read"
    program = os.path.basename(words[0])
    program = _ALIASES.get(program, program)
    rest = words[1:]
    if program in _SHELL_STATE:
        return "state"
    if INTERPRETERS.match(program):
        return _python_kind(rest)
    if program in _TESTERS:
        return "test"
    if program in ("ruff", "black", "isort", "prettier", "eslint", "tsc", "biome"):
        return _checker_kind(program, rest)
    if program == "make":
        targets = [w for w in rest if not w.startswith("-") and "=" not in w]
        if "-n" in rest or "--dry-run" in rest:
            return "read"
        return "test" if targets and all(_TEST_TARGETS.match(t) for t in targets) else "change"
    if program == "npm" and rest[:1] == ["run"]:
        script = rest[1] if len(rest) > 1 else ""
        return "test" if _TEST_TARGETS.match(script) else "change"
    if program == "git":
        return _git_kind(rest)
    if program in ("curl", "http", "https", "wget"):
        return _http_kind(program, rest)
    if program in ("find", "sed", "awk", "gawk", "sort", "perl"):
        return _filter_kind(program, rest)
    sub = next((w for w in rest if not w.startswith("-")), "")
    if program in _SUBCOMMAND_TESTS and sub in _SUBCOMMAND_TESTS[program]:
        return "test"
    if program == "gh" and sub == "api":
        return _http_kind("gh", rest)
    if program in _SUBCOMMAND_READS:
        if sub in _SUBCOMMAND_READS[program] or (not sub and rest[:1] == ["--version"]):
            return "read"
        # `gh run view`, `kubectl rollout status`, `docker compose ps`: the action is second
        actions = [w for w in rest if not w.startswith("-")]
        return "read" if actions[1:2] and actions[1] in _SUBCOMMAND_READS[program] else "change"
    if program in _READERS:
        return "read"
    if rest in (["--version"], ["-V"], ["-v"], ["--help"], ["-h"]):
        return "read"
    return "change"


def _python_kind(rest: list[str]) -> str:
    if not rest or rest[0] in ("--version", "-V", "--help"):
        return "read"
    if rest[0] == "-m" and len(rest) > 1:
        module = rest[1]
        if module in ("pytest", "unittest", "tox", "nox", "mypy", "pylint", "flake8", "pyright"):
            return "test"
        if module == "pip":
            return _segment_kind(Segment(("pip", *rest[2:])))
        if module in ("ruff", "black", "isort"):
            return _checker_kind(module, rest[2:])
    return "change"  # a script, `-c` code: anything may happen


def _checker_kind(program: str, rest: list[str]) -> str:
    if any(w in _FIXERS or w.startswith("--fix") for w in rest):
        return "change"
    if program == "black" or (program == "ruff" and rest[:1] == ["format"]):
        return "test" if any(w in ("--check", "--diff") for w in rest) else "change"
    if program == "isort":
        return "test" if any(w.startswith("--check") or w == "--diff" for w in rest) else "change"
    if program == "prettier":
        return "test" if "--check" in rest or "-c" in rest else "change"
    if program == "tsc":
        return "test" if "--noEmit" in rest else "change"
    return "test"  # ruff check, eslint, biome check


def _git_kind(rest: list[str]) -> str:
    i = 0
    while i < len(rest) and rest[i].startswith("-"):
        i += 2 if rest[i] in _GIT_GLOBAL_VALUED else 1
    if i >= len(rest):
        return "read"  # `git --version`
    sub, args = rest[i], rest[i + 1 :]
    if sub in _GIT_READS:
        return "read"
    listers = _GIT_LISTERS.get(sub)
    if listers is None:
        return "change"
    if not args:
        return "read" if sub in _GIT_BARE_READS else "change"
    return "read" if args[0] in listers or args[0].startswith("--format") else "change"


_HTTP_WRITES = frozenset(
    {
        "-d", "--data", "--data-raw", "--data-binary", "--data-urlencode", "-F", "--form", "-T",
        "--upload-file", "--json", "-o", "--output", "-O", "--remote-name", "-f", "--field",
        "--raw-field", "--input",
    }
)  # fmt: skip


def _http_kind(program: str, rest: list[str]) -> str:
    """curl, httpie, wget, `gh api`: a read unless it sends a body, a method or writes a file."""
    if program == "wget":
        to_stdout = any(w in ("-O-", "-qO-", "--spider") for w in rest)
        to_stdout = to_stdout or any(pair == ("-O", "-") for pair in pairwise(rest))
        return "read" if to_stdout else "change"
    if program in ("http", "https"):
        method = next((w for w in rest if not w.startswith("-")), "GET")
        return "read" if method.upper() in ("GET", "HEAD") or "://" in method else "change"
    for i, word in enumerate(rest):
        method = ""
        if word in ("-X", "--request", "--method"):
            method = rest[i + 1] if i + 1 < len(rest) else ""
        elif word.startswith(("-X", "--request=", "--method=")):
            method = word.split("=", 1)[-1] if "=" in word else word[2:]
        if method and method.upper() not in ("GET", "HEAD"):
            return "change"
        if word.split("=", 1)[0] in _HTTP_WRITES:
            return "change"
    return "read"


_SED_INPLACE = re.compile(r"^(-[nErsuz]*i|--in-place)")
_PERL_INPLACE = re.compile(r"^-[a-zA-Z]*i")


def _filter_kind(program: str, rest: list[str]) -> str:
    if program == "find":
        writes = {"-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprintf", "-fls"}
        return "change" if any(w in writes for w in rest) else "read"
    if program == "sort":
        return "change" if any(w == "-o" or w.startswith("--output") for w in rest) else "read"
    if program == "sed":
        return "change" if any(_SED_INPLACE.match(w) for w in rest) else "read"
    if program == "perl":
        return "change" if any(_PERL_INPLACE.match(w) for w in rest) else "read"
    return "change" if "inplace" in rest else "read"  # awk -i inplace
