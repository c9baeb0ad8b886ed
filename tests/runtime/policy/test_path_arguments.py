"""Which words of a command are paths, and which of them it writes, word by word.

Each row is a command and the exact list `path_arguments` gives for it, in order. A path is
written as (value, flags): `w` the program writes it, `r` it may remove or move a whole
tree there, `g` the word holds an unquoted wildcard. A path that is written is listed as a
write only, and a path listed twice alike is listed once.
"""

from __future__ import annotations

import pytest

from runtime.instance.config import InstanceConfig, ToolPolicy
from runtime.policy.commands import program_of
from runtime.policy.policy import PolicyState, decide
from runtime.policy.shell import Script, parse_command
from runtime.policy.writes import PathArgument, path_arguments
from tests.runtime.policy.conftest import Machine


def arguments_of(command: str) -> list[tuple[str, str]]:
    script = parse_command(command)
    assert isinstance(script, Script), script
    (simple,) = script.commands
    return [_flags(arg) for arg in path_arguments(simple, program_of(simple))]


def _flags(arg: PathArgument) -> tuple[str, str]:
    flags = "g" * arg.glob + "w" * arg.writes + "r" * arg.removes
    return arg.value, flags


ROWS: list[tuple[str, list[tuple[str, str]]]] = [
    # A program that writes nothing: every operand and option value is only mentioned.
    ("cat x -", [("x", ""), ("-", "")]),
    ("cat x x", [("x", "")]),
    ("cat --verbose x", [("x", "")]),
    ("cat -- -n x", [("-n", ""), ("x", "")]),
    ("cat -I./inc x", [("./inc", ""), ("x", "")]),
    ("cat -I./inc* x", [("./inc*", "g"), ("x", "")]),
    ("cat -Ia/b x", [("a/b", ""), ("x", "")]),
    ("cat -I~x x", [("~x", ""), ("x", "")]),
    ("cat -Ixyz x", [("x", "")]),  # a flag cluster, not a path
    ("cat -IXyz x", [("x", "")]),
    ("cat -Dk=v x", [("v", ""), ("x", "")]),
    ("cat -Dk=v* x", [("v*", "g"), ("x", "")]),
    ("cat -Da=b=/p x", [("a=b=/p", ""), ("b=/p", ""), ("x", "")]),
    ("cat -D= x", [("x", "")]),
    ("cat --color=~/x y", [("~/x", ""), ("y", "")]),
    ("cat --color= y", [("", ""), ("y", "")]),
    ("cat k=v", [("v", ""), ("k=v", "")]),
    ("cat k=v*", [("v*", "g"), ("k=v*", "g")]),
    ("cat a=b=/p", [("b=/p", ""), ("a=b=/p", "")]),
    ("cat k=", [("k=", "")]),
    # Any program's output options write their value, in every spelling.
    ("cat --output=a=b y", [("a=b", "w"), ("y", "")]),
    ("cat --output o* y", [("o*", "gw"), ("y", "")]),
    ("cat --output=o* y", [("o*", "gw"), ("y", "")]),
    ("cat --outp=o y", [("o", "w"), ("y", "")]),
    ("cat --log-file l y", [("l", "w"), ("y", "")]),
    ("cat -o./x y", [("./x", "w"), ("y", "")]),
    ("cat -o/x* y", [("/x*", "gw"), ("y", "")]),
    ("cat -ox y", [("y", "")]),  # `-o` of a program not listed: only a path-like value
    ("cat -o x y", [("x", ""), ("y", "")]),
    ("cat of=x", [("x", ""), ("of=x", "")]),
    # A program's own output options.
    ("sort -o out in", [("out", "w"), ("in", "")]),
    ("sort -oout in", [("out", "w"), ("in", "")]),
    ("sort -oo* in", [("o*", "gw"), ("in", "")]),
    ("sort -o=/tmp/o in", [("/tmp/o", "w"), ("in", "")]),
    ("sort --output out in", [("out", "w"), ("in", "")]),
    ("dd if=x of=y", [("x", ""), ("y", "w"), ("if=x", ""), ("of=y", "")]),
    ("gcc -O2 -o build/app x.c", [("build/app", "w"), ("x.c", "")]),
    ("curl -cjar --trace t u", [("jar", "w"), ("t", "w"), ("u", "")]),
    ("wget -Plogs -a log u", [("logs", "w"), ("log", "w"), ("u", "")]),
    # Removers and movers take whole trees with them.
    ("rm -rf x y", [("x", "wr"), ("y", "wr")]),
    ("rm -- -x", [("-x", "wr")]),
    ("chmod 600 f", [("600", "wr"), ("f", "wr")]),
    ("mv a b", [("a", "wr"), ("b", "wr"), ("b", "w"), ("b/a", "w")]),
    ("mv x/ y", [("x/", "wr"), ("y", "wr"), ("y", "w"), ("y/x", "w")]),
    ("mv -t d a", [("a", "wr"), ("d", "w"), ("d/a", "w")]),
    ("mv -S .old a b", [(".old", ""), ("a", "wr"), ("b", "wr"), ("b", "w"), ("b/a", "w")]),
    ("mv a", [("a", "wr")]),
    # Writers of every operand.
    ("touch a b", [("a", "w"), ("b", "w")]),
    ("tee -a x", [("x", "w")]),
    ("touch a=b", [("b", ""), ("a=b", "w")]),
    ("sqlite3 db .tables", [("db", "w"), (".tables", "w")]),
    ("python -m sqlite3 db", [("sqlite3", "w"), ("db", "w")]),
    ("pypy3 -msqlite3 db", [("db", "w")]),
    ("python -m json.tool f", [("json.tool", ""), ("f", "")]),
    ("python script.py -m sqlite3", [("script.py", ""), ("sqlite3", "")]),
    ("rsync a b", [("a", "w"), ("b", "w"), ("b/a", "w")]),
    ("rsync a", [("a", "w")]),
    ("rsync a b c", [("a", "w"), ("b", "w"), ("c", "w"), ("c/a", "w"), ("c/b", "w")]),
    # Copiers write the destination, and each source's name inside it.
    ("cp", []),
    ("cp a", [("a", ""), (".", "w"), ("./a", "w")]),
    ("cp a b c", [("a", ""), ("b", ""), ("c", "w"), ("c/a", "w"), ("c/b", "w")]),
    ("cp a d/", [("a", ""), ("d/", "w"), ("d/a", "w")]),
    ("cp X/ X", [("X/", ""), ("X", "w"), ("X/X", "w")]),
    ("cp a a", [("a", "w"), ("a/a", "w")]),
    ("cp a/.. . / d", [("a/..", ""), (".", ""), ("/", ""), ("d", "w")]),
    ("cp *.py d", [("*.py", "g"), ("d", "w")]),
    ("cp a d*", [("a", ""), ("d*", "gw")]),
    ("cp -t d a b", [("a", ""), ("b", ""), ("d", "w"), ("d/a", "w"), ("d/b", "w")]),
    ("cp -td a", [("a", ""), ("d", "w"), ("d/a", "w")]),
    ("cp -td* a", [("a", ""), ("d*", "gw")]),
    ("cp -t", []),
    ("cp --target-directory=d a", [("a", ""), ("d", "w"), ("d/a", "w")]),
    ("cp --target-directory=d* a", [("a", ""), ("d*", "gw")]),
    ("cp --target-directory d a", [("a", ""), ("d", "w"), ("d/a", "w")]),
    ("cp --t=d a", [("a", ""), ("d", "w"), ("d/a", "w")]),
    ("cp -S .bak a b", [(".bak", ""), ("a", ""), ("b", "w"), ("b/a", "w")]),
    ("cp --suf .bak a b", [(".bak", ""), ("a", ""), ("b", "w"), ("b/a", "w")]),
    ("ln -s ../shared/x", [("../shared/x", ""), (".", "w"), ("./x", "w")]),
    ("link a b", [("a", ""), ("b", "w"), ("b/a", "w")]),
    ("install -m 644 a b", [("644", ""), ("a", ""), ("b", "w"), ("b/a", "w")]),
    ("install -d a b", [("a", "w"), ("b", "w")]),
    ("scp -i key a host:b", [("key", ""), ("a", ""), ("host:b", "w"), ("host:b/a", "w")]),
    # Editors write every operand only when editing in place.
    ("sed -e s/a/b/ f", [("s/a/b/", ""), ("f", "")]),
    ("sed -n p f", [("p", ""), ("f", "")]),
    ("sed -i s/a/b/ f", [("s/a/b/", "w"), ("f", "w")]),
    ("sed -ni.bak p f", [("p", "w"), ("f", "w")]),
    ("sed --in-place -f script f", [("script", ""), ("f", "w")]),
    ("perl -pi -e s/a/b/ f", [("s/a/b/", "w"), ("f", "w")]),
    ("perl -e 1 f", [("1", ""), ("f", "")]),
]


@pytest.mark.parametrize(("command", "expected"), ROWS, ids=[c for c, _ in ROWS])
def test_the_paths_of_a_command_and_what_it_writes(
    command: str, expected: list[tuple[str, str]]
) -> None:
    assert arguments_of(command) == expected


@pytest.mark.parametrize("command", ["sort -obus.sqlite x", "sort -o bus.sqlite x"])
def test_an_output_file_attached_to_its_option_is_a_write_whatever_its_name(
    machine: Machine, command: str
) -> None:
    """`sort -obus.sqlite` writes bus.sqlite as surely as `sort -o bus.sqlite` does; the
    attached name was once believed only when it looked like a path (`-o./bus.sqlite`)."""
    allow_all = PolicyState.from_config(
        InstanceConfig(allowed_tools=(ToolPolicy(tool="Bash", mode="allow"),))
    )
    in_the_team = f"cd ~/.mnemara/_teams/crew && {command}"
    verdict = decide(allow_all, "Bash", {"command": in_the_team}, machine.ctx)
    assert verdict.action == "deny", verdict.reason
    assert verdict.reason.startswith("`sort` writes "), verdict.reason
