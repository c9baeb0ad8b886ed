"""What one simple command does that no pattern may wave through.

Some commands are never auto-allowed, whatever the allow-patterns say: env-var prefixes, a
command name that is quoted or escaped, interpreters given inline code or fed from stdin
(`bash -c`, `python -c`, `| sh`), awk programs, the SQL shell, commands that run other
commands (`xargs`, `sudo`, `env`, `npx`), builtins that change how later commands run
(`alias`, `export`), mnemara's own CLI unless it only reads (`mnemara approve`, `bus send`:
the operator's authority), and the options of ordinary programs that run or load code or
delete a directory (`git -c`, `pytest -p`, `find -exec`: the table is options.py's, and it
also applies to the program behind `python -m pytest` or `uv run pytest`). These lists are a
floor, not a proof: a command allowed by a pattern runs with the user's rights, which is why
Bash asks by default.
"""

from __future__ import annotations

import re

from runtime.policy.options import ALIASES, RISKY_OPTIONS, risky_options
from runtime.policy.shell import SimpleCommand, Word
from runtime.policy.sockets import socket_hazards

_PLAIN_NAME = re.compile(r"[A-Za-z0-9_./][A-Za-z0-9_./+:@%,-]*")
_VERSION_SUFFIX = re.compile(r"[0-9.]+$")

SHELLS = frozenset(
    {"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "fish", "csh", "tcsh", "rbash"}
)
# Interpreter -> the flags that take a program as an argument. Every interpreter here also
# reads a program from stdin when it is given no script file (or `-`).
INLINE_FLAGS: dict[str, tuple[str, ...]] = {
    "python": ("-c",),
    "pypy": ("-c",),
    "perl": ("-e", "-E"),
    "ruby": ("-e",),
    "node": ("-e", "--eval", "-p", "--print"),
    "nodejs": ("-e", "--eval", "-p", "--print"),
    "bun": ("-e", "--eval", "-p", "--print"),
    "deno": ("eval", "repl"),
    "php": ("-r", "-R", "-B", "-E", "-a"),
    "lua": ("-e",),
    "luajit": ("-e",),
    "rscript": ("-e",),
    "osascript": ("-e",),
    "tclsh": (),
    "jshell": (),
}
AWKS = frozenset({"awk", "gawk", "mawk", "nawk"})
RUNS_OTHER_COMMANDS = frozenset(
    {
        "xargs", "parallel", "sudo", "doas", "su", "runuser", "pkexec", "nohup", "timeout",
        "nice", "ionice", "chrt", "taskset", "stdbuf", "setsid", "chroot", "unshare", "busybox",
        "nsenter", "watch", "strace", "ltrace", "gdb", "unbuffer", "flock", "script",
        "systemd-run", "at", "batch", "ssh", "tmux", "screen", "firejail", "fakeroot", "proot",
        "valgrind", "entr", "exec", "eval", "source", ".", "command", "builtin", "trap", "fc",
        "npx", "pnpx", "bunx", "uvx",
    }
)  # fmt: skip
CHANGES_LATER_COMMANDS = frozenset(
    {
        "alias", "unalias", "export", "set", "shopt", "declare", "typeset", "readonly", "unset",
        "enable", "hash", "local", "let", "ulimit", "umask",
    }
)  # fmt: skip
# The SQL shell runs what it is given: SQL can load a shared library (load_extension) and
# dot-commands run programs (`.shell`, `.system`); with no SQL it reads stdin. (`sqlite3`
# is `sqlite` once program_of has dropped the version; `python -m sqlite3` is one too.)
SQL_SHELLS = frozenset({"sqlite", "litecli", "duckdb"})
# Programs that run the program named after their subcommand (`uv run pytest -p x`): the
# risky-option table applies to the program they run.
RUNNERS: dict[str, str] = {"uv": "run", "poetry": "run", "pdm": "run", "hatch": "run",
                           "pipenv": "run", "rye": "run"}  # fmt: skip
DIRECTORY_CHANGES = frozenset({"cd", "pushd", "popd"})
# mnemara's own CLI acts with the operator's authority: it answers approvals, sends operator
# input, resumes halted panels, changes instances. A panel's shell does not drive its host
# unasked (the sandbox hides MNEMARA_HOME; without it this is the only check). These only read.
MNEMARA_READS = frozenset({"list", "show", "ps", "logs", "--version", "--help", "-h"})
MNEMARA_BUS_READS = frozenset({"inbox", "tail", "stats", "dead", "--help", "-h"})
MNEMARA_MODULE = "panels.cli"  # `python -m panels.cli.main` is the same program


def program_of(command: SimpleCommand) -> str:
    """The basename of the program, lower-cased, version suffix dropped (`python3.11` -> python)."""
    if not command.words:
        return ""
    base = command.words[0].value.rsplit("/", 1)[-1].lower()
    return _VERSION_SUFFIX.sub("", base) or base


def command_hazards(command: SimpleCommand) -> list[str]:
    """Reasons this command must be asked about even when a pattern or `allow` covers it."""
    hazards: list[str] = []
    if command.assignments:
        hazards.append("sets environment variables in front of the command (NAME=value)")
    if not command.words:
        if command.redirects:
            hazards.append("a redirection with no command")
        return hazards
    name = command.words[0]
    if name.quoted or name.glob or name.tilde or not _PLAIN_NAME.fullmatch(name.value):
        return [*hazards, f"the command name {name.value!r} is quoted, escaped or unusual"]
    program = program_of(command)
    args = command.words[1:]
    if program in RUNS_OTHER_COMMANDS or (program == "env" and args):
        hazards.append(f"`{program}` runs another command")
    elif program in CHANGES_LATER_COMMANDS:
        hazards.append(f"`{program}` changes how later commands run")
    elif program in AWKS:
        hazards.append(f"`{program}` runs a program given inline")
    elif program in SHELLS:
        hazards.extend(_shell_hazards(program, args))
    elif program in INLINE_FLAGS:
        hazards.extend(_interpreter_hazards(program, args))
    elif program in SQL_SHELLS:
        hazards.append(
            f"`{name.value}` runs SQL and dot-commands, which can load code or run programs"
        )
    elif program == "mnemara":
        hazards.extend(mnemara_hazards(tuple(a.value for a in args)))
    hazards.extend(risky_options(program, tuple(a.value for a in args)))
    hazards.extend(_wrapped_hazards(program, args))
    hazards.extend(socket_hazards(program, tuple(a.value for a in args)))
    return hazards


def _wrapped_hazards(program: str, args: tuple[Word, ...]) -> list[str]:
    """Risky options of the program that `python -m` or a runner (`uv run`) starts."""
    values = [a.value for a in args]
    if program in ("python", "pypy"):
        if runs_module(values, "sqlite3"):
            return [f"`{program} -m sqlite3` runs SQL, which can load code or write any database"]
        for i, value in enumerate(values):
            module, after = None, values[i + 1 :]
            if value == "-m" and after:
                module, after = after[0], after[1:]
            elif value.startswith("-m") and len(value) > 2:
                module = value[2:]
            if module is not None:
                if module.split(".")[:2] == MNEMARA_MODULE.split("."):
                    return mnemara_hazards(tuple(after))
                return risky_options(module, after)
        return []
    subcommand = RUNNERS.get(program)
    if subcommand is None or subcommand not in values:
        return []
    # The runner's own options come before the program; the first word after the subcommand
    # that names a program in the table (or python) is taken to be it.
    rest = args[values.index(subcommand) + 1 :]
    for i in range(len(rest)):
        inner = SimpleCommand(words=rest[i:])
        if program_of(inner) in (*RISKY_OPTIONS, *ALIASES, "python", "pypy", "mnemara"):
            return command_hazards(inner)
    return []


def runs_module(values: list[str], module: str) -> bool:
    """`python -m module ...` (or `-mmodule`): the interpreter runs `module`."""
    for i, value in enumerate(values):
        if value == "-m":
            return values[i + 1 : i + 2] == [module]
        if value.startswith("-m"):
            return value[2:] == module
        if not value.startswith("-"):
            return False  # a script file: what follows is its own
    return False


def _shell_hazards(program: str, args: tuple[Word, ...]) -> list[str]:
    takes_value = False
    for arg in args:
        value = arg.value
        if takes_value:
            takes_value = False
        elif value in ("-o", "+o", "-O", "+O"):
            takes_value = True
        elif value in ("--command", "--init-file", "--rcfile"):
            return [f"`{program} {value}` runs code given inline"]
        elif value.startswith("-") and not value.startswith("--") and set(value[1:]) & set("csi"):
            return [f"`{program} {value}` runs code given inline or from stdin"]
        elif value == "-" or not value.startswith(("-", "+")):
            # The script file; what follows are its own arguments.
            return [] if value != "-" else [f"`{program} -` runs what arrives on stdin"]
    return [f"`{program}` with no script file runs whatever arrives on stdin"]


def _interpreter_hazards(program: str, args: tuple[Word, ...]) -> list[str]:
    flags = INLINE_FLAGS[program]
    letters = {f[1] for f in flags if len(f) == 2 and f.startswith("-")}
    for arg in args:
        value = arg.value
        if any(value == f or value.startswith(f + "=") for f in flags):
            return [f"`{program} {value}` runs code given inline"]
        short = value.startswith("-") and not value.startswith("--") and len(value) > 1
        if short and letters & set(value[1:]):
            return [f"`{program} {value}` runs code given inline"]
        if value == "-":
            return [f"`{program} -` runs what arrives on stdin"]
        if not value.startswith("-") or (program in ("python", "pypy") and value == "-m"):
            # A script file, or `python -m module`: the rest are that program's arguments.
            return []
    return [f"`{program}` with no script file runs whatever arrives on stdin"]


def mnemara_hazards(args: tuple[str, ...]) -> list[str]:
    """Why a run of mnemara's own CLI with `args` must be asked about ([] when it only reads)."""
    if not args or args[0] in MNEMARA_READS:
        return []
    verb = args[0]
    if verb == "bus" and len(args) > 1 and args[1] in MNEMARA_BUS_READS:
        return []
    if verb == "inbox" and not {"on", "off"} & set(args[1:]):
        return []
    return [
        f"`mnemara {verb}` acts on mnemara with the operator's authority (approvals, operator "
        "input, halts, instances); a panel does not run it without the operator's say"
    ]
