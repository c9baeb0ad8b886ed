"""Options that make an ordinary program run or load code, or delete a directory.

An allow-pattern such as `pytest( .*)?` admits a program for what it normally does. The
options in `RISKY_OPTIONS` make it do something else: load a plugin module, read another
config file that can, run a program of the caller's choosing, or delete a directory. A
command that uses one is asked about whatever the patterns say, and "always" is not offered.

Each entry names its spellings and why it is there. How a spelling matches an argument:

    -x          a short option: `-x v`, `-xv`, and `x` inside a cluster of short flags (`-qx`),
                up to a letter that takes the rest of the cluster as its value (`Grammar.values`)
    --name      a long option: `--name v`, `--name=v`, and its abbreviations (`--na=v`) where
                the program accepts them (getopt_long, argparse, git's parse-options)
    -name       a single-dash long option (find, Go's flag package): `-name`, `-name=v`, `--name`
    +cmd @file  any argument that starts with `+` (vim) or `@` (argparse's arguments-from-file)
    NAME=value  any argument that assigns a variable (make's command-line overrides)
    word        that exact argument (`git bisect run`)

An entry may hold only for some subcommands (`git rebase -x`), or only before the
subcommand (`git -c`, but not `git commit -c HEAD`): `GLOBAL`. One check is not a spelling:
a `git config` that sets a value is `git -c` made permanent, so it asks too.

Options that move a program elsewhere (`git -C`, `--git-dir`, `--work-tree`, `make -C`, `npm
--prefix`, `uv --directory`, ...) are risky too: a pattern such as `git .*` was written for
the panel's own repository, and another directory's repository brings its own config, hooks
and remotes. Left out on purpose: `pytest --import-mode` and
`--pyargs` (they change how the project's own tests are imported, not what is loaded);
`mypy --cache-dir` and other options that only write files (the path checks cover those).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

GLOBAL = ""  # a scope: the options before the subcommand
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True)
class RiskyOption:
    spellings: tuple[str, ...]
    why: str
    scope: tuple[str, ...] | None = None  # subcommands (GLOBAL: before one); None: anywhere


@dataclass(frozen=True)
class Grammar:
    """How a program spells its options, as far as finding the risky ones needs."""

    abbreviates: bool = True  # accepts unambiguous prefixes of long options
    clusters: bool = True  # short options may be bundled (`-xvf`)
    values: frozenset[str] = frozenset()  # short options whose value may be attached
    exact: frozenset[str] = frozenset()  # real long options that are prefixes of a risky one
    subcommands: bool = False  # the first operand is a subcommand (git)
    global_values: frozenset[str] = frozenset()  # options before it that take the next word
    bundled_first: bool = False  # the first word may be a cluster without its dash (`tar xf`)


@dataclass(frozen=True)
class ProgramOptions:
    grammar: Grammar
    risky: tuple[RiskyOption, ...]


_RUNS = "runs the program it names"
_ARGS_FILE = RiskyOption(("@file",), "reads more arguments, which may hold any option, from a file")

RISKY_OPTIONS: dict[str, ProgramOptions] = {
    "git": ProgramOptions(
        Grammar(
            subcommands=True,
            values=frozenset("eofbmsXtCcjAB"),
            global_values=frozenset(
                {"-c", "-C", "--git-dir", "--work-tree", "--namespace", "--config-env",
                 "--super-prefix", "--attr-source"}
            ),
            exact=frozenset({"--to", "--cc"}),  # send-email's address options
        ),
        (
            RiskyOption(
                ("-c", "--config-env"),
                "sets config, which can name programs git runs (core.pager, alias.x=!cmd)",
                scope=(GLOBAL,),
            ),
            RiskyOption(("--exec-path",), "runs git's helper programs from another directory",
                        scope=(GLOBAL,)),
            RiskyOption(("-C", "--git-dir", "--work-tree"), "runs git on another directory's "
                        "repository, with that repository's config, hooks and remotes",
                        scope=(GLOBAL,)),
            RiskyOption(("--upload-pack", "--receive-pack"), f"{_RUNS} as the remote's helper"),
            RiskyOption(("--exec",), f"{_RUNS} (rebase: after each commit; push, archive: as "
                        "the remote's helper)"),
            RiskyOption(("-u",), f"(--upload-pack) {_RUNS}", scope=("clone", "ls-remote")),
            RiskyOption(("-x",), "(--exec) runs a shell command after each commit",
                        scope=("rebase",)),
            RiskyOption(("-x", "--extcmd"), "runs the diff command it names",
                        scope=("difftool",)),
            RiskyOption(("-O", "--open-files-in-pager"), "opens the matches with the program "
                        "it names", scope=("grep",)),
            RiskyOption(("run",), f"{_RUNS} at every bisection step", scope=("bisect",)),
            RiskyOption(("foreach",), "runs a shell command in every submodule",
                        scope=("submodule",)),
            RiskyOption(("--sendmail-cmd", "--to-cmd", "--cc-cmd", "--header-cmd",
                         "--smtp-server"), _RUNS, scope=("send-email",)),
        ),
    ),
    # argparse without abbreviations today, with them in old releases: `--co` and `--pdb` are
    # real options, not abbreviations of `--confcutdir` or `--pdbcls`.
    "pytest": ProgramOptions(
        Grammar(values=frozenset("kmrcopWn"), exact=frozenset({"--co", "--pdb"})),
        (
            RiskyOption(("-p",), "loads the plugin module it names"),
            RiskyOption(("-c", "--config-file"), "reads another config file, whose addopts, "
                        "pythonpath and plugins settings load code"),
            RiskyOption(("-o", "--override-ini"), "overrides a config value such as addopts or "
                        "pythonpath, which load code"),
            RiskyOption(("-W", "--pythonwarnings"), "imports the module a warning category "
                        "names"),
            RiskyOption(("--confcutdir",), "loads conftest.py files from directories above "
                        "the project"),
            RiskyOption(("--rootdir",), "moves the root, where pytest writes its cache"),
            RiskyOption(("--basetemp",), "deletes the directory it names before the run"),
            RiskyOption(("--pdbcls",), "imports the debugger class it names"),
            RiskyOption(("--tx", "--rsyncdir"), "starts pytest-xdist workers with the "
                        "interpreter or ssh command it names"),
            _ARGS_FILE,
        ),
    ),
    "mypy": ProgramOptions(
        Grammar(),
        (
            RiskyOption(("--config-file",), "reads another config file, whose plugins setting "
                        "imports code"),
            RiskyOption(("--python-executable",), "runs the interpreter it names to find "
                        "installed packages"),
            RiskyOption(("--install-types",), "installs stub packages with pip, which runs "
                        "their build code"),
            _ARGS_FILE,
        ),
    ),
    "tox": ProgramOptions(
        Grammar(values=frozenset("ceix")),
        (
            RiskyOption(("-c", "--conf"), "reads another config file, whose commands tox runs"),
            RiskyOption(("-x", "--override"), "overrides a config value such as commands"),
            RiskyOption(("--root",), "builds and tests the project in another directory"),
            RiskyOption(("--workdir",), "creates and deletes environments in the directory "
                        "it names"),
            RiskyOption(("--installpkg",), "installs the package it names, running its build"),
            RiskyOption(("--discover",), "runs the interpreters it names"),
        ),
    ),
    "nox": ProgramOptions(
        Grammar(values=frozenset("sekptf")),
        (
            RiskyOption(("-f", "--noxfile"), "runs another noxfile, which is Python code"),
            RiskyOption(("--envdir",), "creates and deletes environments in the directory "
                        "it names"),
            RiskyOption(("-P", "--force-python", "--force-pythons", "--extra-python",
                         "--extra-pythons"), "runs the interpreters it names"),
        ),
    ),
    "make": ProgramOptions(
        Grammar(values=frozenset("fCIEjloOW")),
        (
            RiskyOption(("-f", "--file", "--makefile"), "reads another makefile, whose "
                        "recipes make runs"),
            RiskyOption(("-C", "--directory"), "runs the makefile of another directory"),
            RiskyOption(("-I", "--include-dir"), "looks for included makefiles in another "
                        "directory"),
            RiskyOption(("-E", "--eval"), "evaluates makefile text given inline, which can "
                        "run commands"),
            RiskyOption(("NAME=value",), "overrides a variable, which can change the commands "
                        "recipes run (SHELL, CC)"),
        ),
    ),
    "npm": ProgramOptions(
        Grammar(),
        (
            RiskyOption(("--prefix", "-C"), "runs the package in another directory, with its "
                        "scripts"),
            RiskyOption(("--userconfig", "--globalconfig"), "reads another npmrc, which can set "
                        "the shell scripts run with"),
            RiskyOption(("--script-shell",), "runs package scripts with the program it names"),
            RiskyOption(("--node-options",), "passes options such as --require, which loads "
                        "code, to node"),
            RiskyOption(("exec", "x"), "runs a package's program, downloading it if needed"),
        ),
    ),
    "yarn": ProgramOptions(
        Grammar(),
        (
            RiskyOption(("--cwd",), "runs the package in another directory, with its scripts"),
            RiskyOption(("--use-yarnrc",), "reads another yarnrc"),
            RiskyOption(("dlx",), "runs a package's program, downloading it if needed"),
        ),
    ),
    "pnpm": ProgramOptions(
        Grammar(),
        (
            RiskyOption(("-C", "--dir"), "runs the package in another directory, with its "
                        "scripts"),
            RiskyOption(("dlx", "exec"), "runs another program"),
        ),
    ),
    "cargo": ProgramOptions(
        Grammar(abbreviates=False),
        (
            RiskyOption(("--config",), "sets config such as a runner or rustc wrapper, which "
                        "cargo runs"),
            RiskyOption(("--manifest-path",), "builds another package, running its build "
                        "script"),
        ),
    ),
    "uv": ProgramOptions(
        Grammar(abbreviates=False),
        (
            RiskyOption(("--directory", "--project"), "runs the project of another directory, "
                        "with its scripts and build code"),
            RiskyOption(("--config-file",), "reads another uv.toml, which can change the "
                        "indexes packages come from"),
        ),
    ),
    "poetry": ProgramOptions(
        Grammar(abbreviates=False, values=frozenset("CP")),
        (RiskyOption(("-C", "--directory", "-P", "--project"), "runs the project of another "
                     "directory, with its scripts and build code"),),
    ),
    "ninja": ProgramOptions(
        Grammar(abbreviates=False, values=frozenset("Cfjkldt")),
        (
            RiskyOption(("-C",), "builds in another directory, running its build rules"),
            RiskyOption(("-f",), "reads another build file, whose rules ninja runs"),
        ),
    ),
    "go": ProgramOptions(
        Grammar(abbreviates=False, clusters=False),
        (
            RiskyOption(("-exec",), "runs the built binaries through the program it names"),
            RiskyOption(("-toolexec",), "runs every compiler tool through the program it "
                        "names"),
        ),
    ),
    "find": ProgramOptions(
        Grammar(abbreviates=False, clusters=False),
        (
            RiskyOption(("-exec", "-execdir", "-ok", "-okdir"), "runs another command"),
            RiskyOption(("-delete",), "deletes every file it matches"),
        ),
    ),
    "rg": ProgramOptions(
        Grammar(abbreviates=False),
        (RiskyOption(("--pre",), "runs the program it names on every file searched"),),
    ),
    # GNU tar accepts abbreviations; `--checkpoint` is real, not short for the action.
    "tar": ProgramOptions(
        Grammar(values=frozenset("fCTX"), exact=frozenset({"--checkpoint"}),
                bundled_first=True),
        (
            RiskyOption(("--to-command", "--use-compress-program", "-I", "--checkpoint-action",
                         "--info-script", "--new-volume-script", "-F"), _RUNS),
        ),
    ),
    "rsync": ProgramOptions(
        Grammar(values=frozenset("efBTM")),
        (RiskyOption(("-e", "--rsh", "--rsync-path"), _RUNS),),
    ),
    "vim": ProgramOptions(
        Grammar(),
        (
            RiskyOption(("-c", "--cmd", "-S", "+cmd"), "runs editor commands, which can run a "
                        "shell"),
            RiskyOption(("-u",), "reads another vimrc, which runs editor commands"),
        ),
    ),
    "zip": ProgramOptions(Grammar(), (RiskyOption(("-TT", "--unzip-command"), _RUNS),)),
    "sort": ProgramOptions(Grammar(), (RiskyOption(("--compress-program",), _RUNS),)),
    "install": ProgramOptions(
        Grammar(values=frozenset("gmoSt")),
        (RiskyOption(("--strip-program",), "strips the binaries with the program it names"),),
    ),
    "scp": ProgramOptions(
        Grammar(values=frozenset("cDFiJlPX")),
        (
            RiskyOption(("-S",), f"{_RUNS} instead of ssh"),
            RiskyOption(("-o", "-F"), "passes ssh an option or config file, which can run a "
                        "program (ProxyCommand)"),
        ),
    ),
    "sftp": ProgramOptions(
        Grammar(values=frozenset("BcDiJlPRX")),
        (
            RiskyOption(("-S",), f"{_RUNS} instead of ssh"),
            RiskyOption(("-o", "-F"), "passes ssh an option or config file, which can run a "
                        "program (ProxyCommand)"),
            RiskyOption(("-b",), "runs sftp commands from a file, and `!cmd` runs a shell"),
        ),
    ),
    "man": ProgramOptions(
        Grammar(values=frozenset("PHMLmCpSsEeR")),
        (RiskyOption(("-P", "--pager", "-H", "--html"), "shows the page with the program it "
                     "names"),),
    ),
}  # fmt: skip

# Other names the same programs go by.
ALIASES = {
    "py.test": "pytest", "gmake": "make", "gtar": "tar", "vi": "vim", "nvim": "vim",
    "view": "vim", "vimdiff": "vim", "ex": "vim",
}  # fmt: skip


def risky_options(program: str, args: Sequence[str]) -> list[str]:
    """A reason for every risky option among `args`, each naming the option."""
    name = ALIASES.get(program, program)
    table = RISKY_OPTIONS.get(name)
    if table is None:
        return []
    grammar = table.grammar
    found: list[str] = []
    subcommand = GLOBAL
    skip = False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        for entry in table.risky:
            if entry.scope is not None and subcommand not in entry.scope:
                continue
            for spelling in entry.spellings:
                if spelling_matches(spelling, arg, grammar, first=i == 0):
                    shown = f"{subcommand} {spelling}" if subcommand else spelling
                    found.append(f"`{name} {shown}` {entry.why}")
        if grammar.subcommands and subcommand == GLOBAL:
            if arg in grammar.global_values:
                skip = True  # its value, not an option or the subcommand
            elif not arg.startswith("-"):
                subcommand = arg
                if name == "git" and arg == "config" and _writes_git_config(args[i + 1 :]):
                    found.append("`git config` sets config, which can name programs git runs")
    return list(dict.fromkeys(found))


def spelling_matches(spelling: str, arg: str, grammar: Grammar, *, first: bool = False) -> bool:
    """Does `arg` use the option that `spelling` names? See the module docstring."""
    if spelling[0] in "+@":
        return arg.startswith(spelling[0])
    if spelling == "NAME=value":
        return _ASSIGNMENT.match(arg) is not None
    if not spelling.startswith("-"):
        return arg == spelling
    name = arg.split("=", 1)[0]
    if spelling.startswith("--"):
        if name == spelling:
            return True
        abbreviated = grammar.abbreviates and len(name) >= 3 and spelling.startswith(name)
        return abbreviated and name.startswith("--") and name not in grammar.exact
    if len(spelling) > 2:
        return name in (spelling, "-" + spelling)
    if arg.startswith("--"):
        return False
    if arg.startswith("-"):
        letters = arg[1:]
    elif first and grammar.bundled_first:
        letters = arg
    else:
        return False
    if not grammar.clusters:
        return letters[:1] == spelling[1] and (len(letters) == 1 or letters[1] == "=")
    for letter in letters:
        if letter == spelling[1]:
            return True
        if letter in grammar.values or letter == "=":
            return False  # the rest of the cluster is that option's value
    return False


# `git config` reads with one operand or these options; anything else may write.
_GIT_CONFIG_READS = frozenset(
    {"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--get-color", "--get-colorbool",
     "-l", "--list", "get", "list", "--show-origin", "--show-scope", "--null", "-z",
     "--name-only", "--includes", "--no-includes", "--global", "--system", "--local",
     "--worktree", "--type", "--bool", "--int", "--path"}
)  # fmt: skip


def _writes_git_config(rest: Sequence[str]) -> bool:
    """True for a `git config` that may set a value (`git config core.pager x`, `--add`)."""
    if any(a.startswith("-") and a.split("=", 1)[0] not in _GIT_CONFIG_READS for a in rest):
        return True
    operands = [a for a in rest if not a.startswith("-")]
    if operands[:1] in (["get"], ["list"]):
        return False
    return len(operands) > 1 or operands[:1] in (["set"], ["unset"], ["edit"])
