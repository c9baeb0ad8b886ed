"""What one simple command does that no pattern may wave through.

Some commands are never auto-allowed, whatever the allow-patterns say: env-var prefixes, a
command name that is quoted or escaped, interpreters given inline code or fed from stdin
(`bash -c`, `python -c`, `| sh`), awk programs, commands that run other commands (`xargs`,
`sudo`, `env`, `find -exec`), builtins that change how later commands run (`alias`,
`export`), and options known to start a program (`git -c`, `rg --pre`, `tar -I`).
These lists are a floor, not a proof: a command allowed by a pattern runs with the user's
rights, which is why Bash asks by default.
"""

from __future__ import annotations

import re

from runtime.policy.shell import SimpleCommand, Word

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
    }
)  # fmt: skip
CHANGES_LATER_COMMANDS = frozenset(
    {
        "alias", "unalias", "export", "set", "shopt", "declare", "typeset", "readonly", "unset",
        "enable", "hash", "local", "let", "ulimit", "umask",
    }
)  # fmt: skip
FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
# Options that make an ordinary tool start a program of the caller's choosing.
OPTIONS_RUN_PROGRAM: dict[str, tuple[str, ...]] = {
    "git": ("--upload-pack", "--receive-pack", "--exec"),
    "rg": ("--pre",),
    "tar": ("--to-command", "--use-compress-program", "--checkpoint-action", "--info-script",
            "--new-volume-script", "-I"),
    "rsync": ("-e", "--rsh", "--rsync-path"),
    "vim": ("-c", "--cmd", "-S", "+"),
    "vi": ("-c", "--cmd", "-S", "+"),
    "nvim": ("-c", "--cmd", "-S", "+"),
    "zip": ("-TT", "--unzip-command"),
    "sort": ("--compress-program",),
}  # fmt: skip
DIRECTORY_CHANGES = frozenset({"cd", "pushd", "popd"})


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
    elif program == "find" and any(a.value in FIND_EXEC for a in args):
        hazards.append("`find -exec` runs another command")
    if program == "git" and _git_config_option(args):
        hazards.append("`git -c` / `--config-env` / `--exec-path` can make git run a program")
    for option in OPTIONS_RUN_PROGRAM.get(program, ()):
        if any(_has_option(a.value, option) for a in args):
            hazards.append(f"`{program} {option}` runs a program")
    return hazards


def _has_option(arg: str, option: str) -> bool:
    if option == "+":
        return arg.startswith("+")
    if arg == option or arg.startswith(option + "="):
        return True
    # Short options may carry their value attached: `-ecmd`, `-Igzip`.
    return len(option) == 2 and not option.startswith("--") and arg.startswith(option)


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


def _git_config_option(args: tuple[Word, ...]) -> bool:
    """True for git's global options that set config, before the subcommand."""
    for arg in args:
        value = arg.value
        if value == "-c" or value.startswith(("--config-env", "--exec-path")):
            return True
        if not value.startswith("-"):
            return False
    return False
