"""Every entry of commands.py's hazard tables is a hazard of its own, whatever comes before it.

An allow-pattern may cover any of these commands (`bash .*`, `python3 .*`); the hazard is
what keeps it asked about. So each case asserts the reasons `command_hazards` returns, not a
verdict that another layer (writes.py, the path checks) could produce on its own. Where the
program takes options, a harmless one comes first: a check that only looks at the first
argument would miss `bash -x -c id`. The coverage tests fail when a table gains an entry that
has no case here.
"""

from __future__ import annotations

import pytest

from runtime.policy.commands import (
    AWKS,
    CHANGES_LATER_COMMANDS,
    INLINE_FLAGS,
    MNEMARA_BUS_READS,
    MNEMARA_READS,
    RUNNERS,
    RUNS_OTHER_COMMANDS,
    SHELLS,
    SQL_SHELLS,
    command_hazards,
    mnemara_hazards,
    program_of,
    runs_module,
)
from runtime.policy.shell import Script, SimpleCommand, parse_command

MNEMARA_ACTS = (
    "acts on mnemara with the operator's authority (approvals, operator input, halts, "
    "instances); a panel does not run it without the operator's say"
)
PYTEST_PLUGIN = "`pytest -p` loads the plugin module it names"


def parse_one(text: str) -> SimpleCommand:
    parsed = parse_command(text)
    assert isinstance(parsed, Script), parsed
    (command,) = parsed.commands
    return command


def hazards_of(text: str) -> list[str]:
    return command_hazards(parse_one(text))


def program_in(text: str) -> str:
    return program_of(parse_one(text))


RUNS_OTHER_CASES = [
    "xargs -0 rm",
    "parallel -j2 rm ::: a",
    "sudo -n id",
    "doas -n id",
    "su -l root",
    "runuser -u nobody id",
    "pkexec --disable-internal-agent id",
    "nohup -- ls",
    "timeout -s KILL 5 ls",
    "nice -n 10 ls",
    "ionice -c3 ls",
    "chrt -f 1 ls",
    "taskset -c 0 ls",
    "stdbuf -oL ls",
    "setsid -f ls",
    "chroot --userspec=nobody / id",
    "unshare -r id",
    "busybox --list",
    "nsenter -t 1 id",
    "watch -n 1 ls",
    "strace -f ls",
    "ltrace -f ls",
    "gdb -batch -ex run ls",
    "unbuffer -p ls",
    "flock -n lock ls",
    "script -q -c id log",
    "systemd-run --user id",
    "at -m now",
    "batch -q b",
    "ssh -v host id",
    "tmux -L x new id",
    "screen -dm id",
    "firejail --quiet id",
    "fakeroot -- id",
    "proot -0 id",
    "valgrind -q ls",
    "entr -r ls",
    "exec -a x ls",
    "eval -- id",
    "source -- env.sh",
    ". -- env.sh",
    "command -p ls",
    "builtin -- echo",
    "trap -- id EXIT",
    "fc -s",
    "npx --yes cowsay",
    "pnpx --yes cowsay",
    "bunx --bun cowsay",
    "uvx --quiet ruff",
]


@pytest.mark.parametrize("text", RUNS_OTHER_CASES)
def test_a_command_that_runs_other_commands(text: str) -> None:
    assert hazards_of(text) == [f"`{program_in(text)}` runs another command"]


CHANGES_LATER_CASES = [
    "alias -p",
    "unalias -a",
    "export -n A",
    "set -e",
    "shopt -s nullglob",
    "declare -x A",
    "typeset -r A",
    "readonly -p",
    "unset -v A",
    "enable -n echo",
    "hash -r",
    "local -r A",
    "let -- A",
    "ulimit -n 64",
    "umask -S",
]


@pytest.mark.parametrize("text", CHANGES_LATER_CASES)
def test_a_builtin_that_changes_later_commands(text: str) -> None:
    assert hazards_of(text) == [f"`{program_in(text)}` changes how later commands run"]


AWK_CASES = [
    "awk -F: '{print}' f",
    "gawk --posix '{print}' f",
    "mawk -W interactive '{print}' f",
    "nawk -v x=1 '{print}' f",
]


@pytest.mark.parametrize("text", AWK_CASES)
def test_an_awk_runs_its_program(text: str) -> None:
    assert hazards_of(text) == [f"`{program_in(text)}` runs a program given inline"]


SQL_SHELL_CASES = [
    ("sqlite3 -readonly notes.db", "sqlite3"),
    ("litecli --auto-vertical-output notes.db", "litecli"),
    ("duckdb -readonly notes.duckdb", "duckdb"),
]


@pytest.mark.parametrize(("text", "shown"), SQL_SHELL_CASES)
def test_a_sql_shell_runs_sql_and_dot_commands(text: str, shown: str) -> None:
    # The message names the program as typed (`sqlite3`), not as the table spells it.
    assert hazards_of(text) == [
        f"`{shown}` runs SQL and dot-commands, which can load code or run programs"
    ]


@pytest.mark.parametrize(
    ("text", "program"),
    [
        ("python3 -m sqlite3 notes.db '.shell id'", "python"),
        ("python3 -u -m sqlite3 notes.db", "python"),
        ("python3 -I -msqlite3 notes.db", "python"),
        ("pypy3 -u -m sqlite3 notes.db", "pypy"),
    ],
)
def test_python_m_sqlite3_is_the_sql_shell(text: str, program: str) -> None:
    assert hazards_of(text) == [
        f"`{program} -m sqlite3` runs SQL, which can load code or write any database"
    ]


@pytest.mark.parametrize(
    "text",
    [
        "python3 script.py -m sqlite3",  # the script's own options
        "python3 -m pytest sqlite3",  # another module, given `sqlite3` as an argument
        "python3 -m sqlite3x notes.db",
        "python3 -msqlite3x notes.db",
        "python3 -m",
    ],
)
def test_python_not_running_sqlite3(text: str) -> None:
    assert hazards_of(text) == []


@pytest.mark.parametrize(
    ("values", "runs"),
    [
        (["-m", "sqlite3"], True),
        (["-u", "-m", "sqlite3", "x"], True),
        (["-msqlite3"], True),
        (["-m"], False),
        (["-m", "pytest", "sqlite3"], False),
        (["-mpytest", "-m", "sqlite3"], False),  # the first -m wins; the rest are pytest's
        (["script.py", "-m", "sqlite3"], False),
        (["--", "-m", "sqlite3"], True),  # runs_module does not know `--`; fails closed
        ([], False),
    ],
)
def test_runs_module(values: list[str], runs: bool) -> None:
    assert runs_module(values, "sqlite3") is runs


# Shells: a flag of each kind, after a harmless `-x`.
SHELL_FLAG_CASES = [
    ("bash -x -c id", "`bash -c` runs code given inline or from stdin"),
    ("bash -x -s", "`bash -s` runs code given inline or from stdin"),
    ("bash -x -i", "`bash -i` runs code given inline or from stdin"),
    ("bash -x -ec id", "`bash -ec` runs code given inline or from stdin"),
    ("bash -x --command id", "`bash --command` runs code given inline"),
    ("bash -x --init-file rc script.sh", "`bash --init-file` runs code given inline"),
    ("bash -x --rcfile rc script.sh", "`bash --rcfile` runs code given inline"),
    ("bash -x -", "`bash -` runs what arrives on stdin"),
    ("bash -x", "`bash` with no script file runs whatever arrives on stdin"),
    ("bash +x", "`bash` with no script file runs whatever arrives on stdin"),
    # The value of -o/-O is not the script: nothing after it is.
    ("bash -x -o pipefail", "`bash` with no script file runs whatever arrives on stdin"),
    ("bash -x +o pipefail", "`bash` with no script file runs whatever arrives on stdin"),
    ("bash -x -O extglob", "`bash` with no script file runs whatever arrives on stdin"),
    ("bash -x +O extglob", "`bash` with no script file runs whatever arrives on stdin"),
    ("bash -o pipefail -c id", "`bash -c` runs code given inline or from stdin"),
]


@pytest.mark.parametrize(("text", "hazard"), SHELL_FLAG_CASES)
def test_a_shell_flag_that_runs_code(text: str, hazard: str) -> None:
    assert hazards_of(text) == [hazard]


@pytest.mark.parametrize(
    "text",
    [
        "bash -x script.sh",
        "bash -x script.sh -c id",  # the script's own arguments
        "bash script.sh -",
        "bash +x script.sh",
        "bash --norc --login script.sh",  # long options with c, s, i in them run nothing
        "bash -o pipefail script.sh",
        "bash -o -c script.sh",  # `-c` is the value of -o here
        "bash -X script.sh",  # only c, s and i in a cluster run code
    ],
)
def test_a_shell_running_a_script_file(text: str) -> None:
    assert hazards_of(text) == []


SHELL_NAMES = ["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "fish", "csh", "tcsh",
               "rbash"]  # fmt: skip


@pytest.mark.parametrize("shell", SHELL_NAMES)
def test_every_shell_runs_inline_code(shell: str) -> None:
    assert hazards_of(f"{shell} -x -c id") == [f"`{shell} -c` runs code given inline or from stdin"]
    assert hazards_of(f"{shell} -x") == [
        f"`{shell}` with no script file runs whatever arrives on stdin"
    ]


# Interpreter -> a harmless flag that holds none of the letters of its inline flags.
HARMLESS_FLAG = {
    "python": "-u",
    "pypy": "-u",
    "perl": "-w",
    "ruby": "-w",
    "node": "--no-warnings",
    "nodejs": "--no-warnings",
    "bun": "--silent",
    "deno": "-q",
    "php": "-n",
    "lua": "-W",
    "luajit": "-O",
    "rscript": "--vanilla",
    "osascript": "-ss",
    "tclsh": "-x",
    "jshell": "-q",
}
# Spelled as typed; the message uses program_of's spelling.
TYPED = {"python": "python3", "pypy": "pypy3", "rscript": "Rscript", "lua": "lua5.4"}

INLINE_CASES = [
    ("python", "-c"),
    ("pypy", "-c"),
    ("perl", "-e"),
    ("perl", "-E"),
    ("ruby", "-e"),
    ("node", "-e"),
    ("node", "--eval"),
    ("node", "-p"),
    ("node", "--print"),
    ("nodejs", "-e"),
    ("nodejs", "--eval"),
    ("nodejs", "-p"),
    ("nodejs", "--print"),
    ("bun", "-e"),
    ("bun", "--eval"),
    ("bun", "-p"),
    ("bun", "--print"),
    ("deno", "eval"),
    ("deno", "repl"),
    ("php", "-r"),
    ("php", "-R"),
    ("php", "-B"),
    ("php", "-E"),
    ("php", "-a"),
    ("lua", "-e"),
    ("luajit", "-e"),
    ("rscript", "-e"),
    ("osascript", "-e"),
]


@pytest.mark.parametrize(("program", "flag"), INLINE_CASES)
def test_every_inline_flag_of_every_interpreter(program: str, flag: str) -> None:
    typed = TYPED.get(program, program)
    assert hazards_of(f"{typed} {HARMLESS_FLAG[program]} {flag} x") == [
        f"`{program} {flag}` runs code given inline"
    ]


@pytest.mark.parametrize("program", sorted(INLINE_FLAGS))
def test_every_interpreter_reads_stdin_without_a_script(program: str) -> None:
    typed = TYPED.get(program, program)
    assert hazards_of(f"{typed} {HARMLESS_FLAG[program]}") == [
        f"`{program}` with no script file runs whatever arrives on stdin"
    ]
    assert hazards_of(f"{typed} {HARMLESS_FLAG[program]} -") == [
        f"`{program} -` runs what arrives on stdin"
    ]
    assert hazards_of(f"{typed} {HARMLESS_FLAG[program]} script -") == []


@pytest.mark.parametrize(
    ("text", "hazard"),
    [
        ("python3 -u -Ic x", "`python -Ic` runs code given inline"),  # in a cluster
        ("python3 -u -cx", "`python -cx` runs code given inline"),  # the code attached
        ("perl -w -ne 'print' f", "`perl -ne` runs code given inline"),
        ("node --no-warnings --eval=1", "`node --eval=1` runs code given inline"),
        ("node --no-warnings --print=1", "`node --print=1` runs code given inline"),
    ],
)
def test_inline_flag_spellings(text: str, hazard: str) -> None:
    assert hazards_of(text) == [hazard]


@pytest.mark.parametrize(
    "text",
    [
        "python3 -u -m mymodule -c x",  # `-m`: the rest are the module's arguments
        "pypy3 -u -m mymodule -c x",
        "node --no-warnings --evaluate x",  # not --eval, nor --eval=
        "node --no-warnings -- x",  # a long option holding e and p is not a cluster
        "deno -q run x.ts eval",
        "python3 -u -m -",  # whatever follows -m is the module's, even `-`
        "pypy3 -u -m -",
        "node --no-warnings -rts-x app.js",  # a dash in a short option's value: no long flag
    ],
)
def test_interpreter_without_inline_code(text: str) -> None:
    assert hazards_of(text) == []


def test_only_python_takes_m_as_the_end_of_its_options() -> None:
    assert hazards_of("perl -w -m strict") == []  # `strict` is taken for the script
    assert hazards_of("ruby -w -m") == ["`ruby` with no script file runs whatever arrives on stdin"]


# Runner -> its own harmless option before the subcommand.
RUNNER_CASES = [
    ("uv", "uv --quiet run --frozen pytest -p evil"),
    ("poetry", "poetry -q run pytest -p evil"),
    ("pdm", "pdm -v run pytest -p evil"),
    ("hatch", "hatch -v run pytest -p evil"),
    ("pipenv", "pipenv -v run pytest -p evil"),
    ("rye", "rye -v run pytest -p evil"),
]


@pytest.mark.parametrize(("runner", "text"), RUNNER_CASES)
def test_a_runner_passes_on_the_hazards_of_what_it_runs(runner: str, text: str) -> None:
    assert program_in(text) == runner
    assert hazards_of(text) == [PYTEST_PLUGIN]


@pytest.mark.parametrize(
    ("text", "hazards"),
    [
        ("uv run python3 -c x", ["`python -c` runs code given inline"]),
        ("uv run pypy3 -c x", ["`pypy -c` runs code given inline"]),
        ("uv run python3 -m pytest -p evil", [PYTEST_PLUGIN]),
        ("uv run py.test -p evil", [PYTEST_PLUGIN]),
        ("uv run mnemara approve 3", [f"`mnemara approve` {MNEMARA_ACTS}"]),
        ("uv run mnemara list", []),
        ("uv run ./build.sh -p evil", []),
        ("uv run pytest -q", []),
        ("uv tool install pytest -p evil", []),  # no `run`: not a program it starts
        ("make -n run pytest -p evil", []),  # not a runner
    ],
)
def test_what_a_runner_starts(text: str, hazards: list[str]) -> None:
    assert hazards_of(text) == hazards


@pytest.mark.parametrize(
    ("text", "hazards"),
    [
        ("python3 -m pytest -p evil", [PYTEST_PLUGIN]),
        ("python3 -u -mpytest -p evil", [PYTEST_PLUGIN]),
        ("python3 -m pytest -q", []),
        ("python3 -m", []),
        ("python3 -m panels.cli.main approve 3", [f"`mnemara approve` {MNEMARA_ACTS}"]),
        ("python3 -u -m panels.cli bus send eng hi", [f"`mnemara bus` {MNEMARA_ACTS}"]),
        ("pypy3 -m panels.cli.main resume x", [f"`mnemara resume` {MNEMARA_ACTS}"]),
        ("python3 -m panels.cli list", []),
        ("python3 -m panels.cli", []),
        ("python3 -m panels.clix approve", []),
        ("python3 -m panels approve", []),
        ("python3 -Wignore -m pytest -p evil", [PYTEST_PLUGIN]),  # -W's value is no module
        ("python3 -mx -m pytest -p evil", []),  # the rest belong to module x
    ],
)
def test_what_python_m_starts(text: str, hazards: list[str]) -> None:
    assert hazards_of(text) == hazards


@pytest.mark.parametrize(
    "text",
    [
        "mnemara",
        *(f"mnemara {verb}" for verb in sorted(MNEMARA_READS)),
        *(f"mnemara bus {verb}" for verb in sorted(MNEMARA_BUS_READS)),
        "mnemara show eng",
        "mnemara inbox eng",
        "mnemara inbox --all",
    ],
)
def test_mnemara_that_only_reads(text: str) -> None:
    assert hazards_of(text) == []


@pytest.mark.parametrize(
    ("text", "verb"),
    [
        ("mnemara approve 3", "approve"),
        ("mnemara inbox eng off", "inbox"),
        ("mnemara inbox on", "inbox"),
        ("mnemara bus send eng hi", "bus"),
        ("mnemara bus", "bus"),
        ("mnemara --debug list", "--debug"),  # an unknown option first: not known to read
        ("mnemara send eng list", "send"),
    ],
)
def test_mnemara_that_acts(text: str, verb: str) -> None:
    assert hazards_of(text) == [f"`mnemara {verb}` {MNEMARA_ACTS}"]


def test_the_mnemara_read_tables_hold_what_the_cases_expect() -> None:
    # The read cases above come from the tables; these literals catch an entry dropped or
    # misspelled there (`mnemara list` would then ask, or `bus send` pass).
    assert frozenset({"list", "show", "ps", "logs", "--version", "--help", "-h"}) == MNEMARA_READS
    assert frozenset({"inbox", "tail", "stats", "dead", "--help", "-h"}) == MNEMARA_BUS_READS
    assert mnemara_hazards(("bus", "send")) == [f"`mnemara bus` {MNEMARA_ACTS}"]


@pytest.mark.parametrize(
    ("text", "hazards"),
    [
        ("A=1", ["sets environment variables in front of the command (NAME=value)"]),
        ("A=1 ls", ["sets environment variables in front of the command (NAME=value)"]),
        ("> out", ["a redirection with no command"]),
        (
            "A=1 > out",
            [
                "sets environment variables in front of the command (NAME=value)",
                "a redirection with no command",
            ],
        ),
        (
            "A=1 bash -c id",
            [
                "sets environment variables in front of the command (NAME=value)",
                "`bash -c` runs code given inline or from stdin",
            ],
        ),
        (
            "A=1 'bash' -c id",
            [
                "sets environment variables in front of the command (NAME=value)",
                "the command name 'bash' is quoted, escaped or unusual",
            ],
        ),
        ("'ls'", ["the command name 'ls' is quoted, escaped or unusual"]),
        ("l\\s", ["the command name 'ls' is quoted, escaped or unusual"]),
        ("l?", ["the command name 'l?' is quoted, escaped or unusual"]),
        ("~/bin/tool", ["the command name '~/bin/tool' is quoted, escaped or unusual"]),
        ("[ -f x ]", ["the command name '[' is quoted, escaped or unusual"]),
        ("-ls", ["the command name '-ls' is quoted, escaped or unusual"]),
        ("env", []),
        ("env -i ls", ["`env` runs another command"]),
        ("./run.sh -c x", []),
        ("ls -la", []),
    ],
)
def test_what_comes_before_the_program(text: str, hazards: list[str]) -> None:
    assert hazards_of(text) == hazards


def test_a_command_with_nothing_in_it_has_no_hazard() -> None:
    assert command_hazards(SimpleCommand()) == []
    assert program_of(SimpleCommand()) == ""


@pytest.mark.parametrize(
    ("text", "program"),
    [
        ("/usr/bin/Python3.12 x", "python"),
        ("python3.11", "python"),
        ("sqlite3 x", "sqlite"),
        (". env.sh", "."),  # all version suffix: the name stays
        ("7z x", "7z"),
        ("lua5.4 x", "lua"),
    ],
)
def test_program_of(text: str, program: str) -> None:
    assert program_of(parse_one(text)) == program


def test_hazards_from_more_than_one_table_add_up() -> None:
    # A risky option of the program itself and what it names through a socket both count.
    assert hazards_of("A=1 python3 -m pytest -p evil") == [
        "sets environment variables in front of the command (NAME=value)",
        PYTEST_PLUGIN,
    ]
    assert hazards_of("curl --unix-socket /run/d.sock http://x/") == [
        "`curl --unix-socket` talks to a Unix socket, beyond the file-path policy"
    ]


# Every table entry has a case above: a new entry without one fails here.


def test_every_command_that_runs_others_has_a_case() -> None:
    assert {program_in(text) for text in RUNS_OTHER_CASES} == RUNS_OTHER_COMMANDS


def test_every_builtin_that_changes_later_commands_has_a_case() -> None:
    assert {program_in(text) for text in CHANGES_LATER_CASES} == CHANGES_LATER_COMMANDS


def test_every_awk_has_a_case() -> None:
    assert {program_in(text) for text in AWK_CASES} == AWKS


def test_every_sql_shell_has_a_case() -> None:
    assert {program_in(text) for text, _ in SQL_SHELL_CASES} == SQL_SHELLS


def test_every_runner_has_a_case() -> None:
    assert {runner for runner, _ in RUNNER_CASES} == set(RUNNERS)
    assert set(RUNNERS.values()) == {"run"}


def test_every_interpreter_has_a_harmless_flag_and_a_typed_name() -> None:
    assert set(HARMLESS_FLAG) == set(INLINE_FLAGS)
    for program, typed in TYPED.items():
        assert program_in(typed) == program


def test_every_shell_has_a_case() -> None:
    assert set(SHELL_NAMES) == SHELLS


def test_every_inline_flag_has_a_case() -> None:
    assert set(INLINE_CASES) == {(p, f) for p, flags in INLINE_FLAGS.items() for f in flags}
