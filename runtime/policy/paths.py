"""Path resolution and the protected-path list: what a file path really points at.

A path is judged by every name it goes by: as written (with `~` and `..` applied), each hop
of a symlink chain on its last component, and its fully resolved form. `notes -> ~/.bashrc`
is the shell's startup file, and so is `~/.bashrc -> dotfiles/bashrc`. Names are compared
case-insensitively, as a case-insensitive filesystem would. Which of mnemara's files are
stores that no tool may write is stores.py's concern.

Besides the policy's own files, three more kinds are never written: the team file and the
role docs (they set a panel's permissions and instructions), and the directories on PATH
with the files directly in them (a file there runs whenever its name is typed).
"""

from __future__ import annotations

import fnmatch
import itertools
import os
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from runtime.policy.context import PolicyContext, is_under, real
from runtime.policy.stores import (
    DATABASE_SIBLINGS,
    TEAM_DATABASES,
    TEAM_WHY,
    holds_stores,
    is_database_family,
    store_reason,
)


class Protection(StrEnum):
    """What guards a path, strongest first (a path with several gets the strongest)."""

    POLICY = "policy"  # the policy's own files: no tool ever writes them
    STORE = "store"  # the host's databases and the instances' stores: no tool writes them
    EXEC = "exec"  # a directory on PATH, or a file in one: no tool writes them
    SECRET = "secret"  # credentials: reading and writing both ask
    PROTECTED = "protected"  # runs code later or holds mnemara's state: writing asks


SHELL_STARTUP = frozenset(
    {
        ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".bash_aliases", ".profile",
        ".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout", ".cshrc", ".tcshrc", ".login",
        ".logout", ".kshrc", ".mkshrc", ".inputrc", ".envrc", ".xprofile", ".xinitrc",
        ".xsession", ".pam_environment", ".gitconfig",
    }
)  # fmt: skip
CONFIG_SUBDIRS = frozenset({"fish", "git", "autostart", "systemd", "environment.d"})
SECRET_DIRS = frozenset({".ssh", ".gnupg", ".aws", ".kube", ".docker"})
SECRET_FILES = frozenset({".netrc", ".git-credentials", ".pgpass", ".pypirc"})
SECRET_CONFIG_SUBDIRS = frozenset({"gh", "gcloud"})
# Names a glob is compared against; `config` and `hooks` only matter under `.git`, which is
# caught as a directory instead.
PROTECTED_NAMES = (
    SHELL_STARTUP
    | SECRET_DIRS
    | SECRET_FILES
    | {db + s for db in TEAM_DATABASES for s in DATABASE_SIBLINGS}
    | {".git", ".config"}
)
PSEUDO_ROOTS = (Path("/proc"), Path("/sys"), Path("/dev"))
HARMLESS_DEVICES = frozenset({Path("/dev/null"), Path("/dev/stdout"), Path("/dev/stderr")})


@dataclass(frozen=True)
class PathCheck:
    """What a path turned out to be. `resolved` is None when it could not be resolved."""

    raw: str
    resolved: Path | None
    protection: Protection | None = None
    why: str = ""
    pseudo: bool = False
    device: bool = False  # /dev/null, /dev/stdout or /dev/stderr (pseudo too)
    inside_roots: bool = False
    secret: bool = False  # some name of it is a credential, whatever `protection` is
    holds_stores: bool = False  # removing or moving it would take a store with it
    looked_up: bool = False  # resolved on disk (not by name only): ondisk.py may ask more

    @property
    def never_written(self) -> bool:
        """No tool may write it: a file that grants permissions, one of the host's stores,
        or a command on PATH."""
        return self.protection in (Protection.POLICY, Protection.STORE, Protection.EXEC)


def expand_home(raw: str, home: Path) -> str | None:
    """`~` and `~/x` expanded; None for `~user`, which names someone else's home."""
    if raw == "~" or raw.startswith("~/"):
        return str(home) + raw[1:]
    return None if raw.startswith("~") else raw


def check_path(
    raw: str, ctx: PolicyContext, *, cwd: Path | None = None, resolve: bool = True
) -> PathCheck:
    """Judge `raw` by every name it goes by; with `resolve=False`, by its lexical name only
    (no system calls: for when a decision's budget of resolved paths is spent)."""
    if not raw or "\x00" in raw:
        return PathCheck(raw, None, why="empty path or NUL byte")
    expanded = expand_home(raw, ctx.home)
    if expanded is None:
        return PathCheck(raw, None, why="`~user` paths are not expanded")
    absolute = Path(cwd or ctx.cwd, expanded)
    lexical = Path(os.path.normpath(absolute))
    if lexical in HARMLESS_DEVICES:
        return PathCheck(raw, lexical, pseudo=True, device=True)
    try:
        names = _names_of(absolute, lexical) if resolve else [lexical]
    except (OSError, ValueError) as exc:  # undecodable names (lone surrogates) and the like
        return PathCheck(raw, None, why=f"cannot be resolved ({exc})")
    resolved = names[-1]
    pseudo = any(is_under(n, p) for n in names for p in PSEUDO_ROOTS)
    found = [p for p in (protection_of(n, ctx) for n in names) if p is not None]
    strongest = min(found, key=lambda p: list(Protection).index(p[0])) if found else None
    return PathCheck(
        raw,
        resolved,
        protection=strongest[0] if strongest else None,
        why=strongest[1] if strongest else "",
        pseudo=pseudo,
        inside_roots=any(is_under(resolved, r) for r in ctx.roots),
        secret=any(_is_secret(n) for n in names),
        holds_stores=any(holds_stores(n, ctx) for n in names),
        looked_up=resolve,
    )


def _names_of(absolute: Path, lexical: Path) -> list[Path]:
    """The path as written, each symlink hop of its last component, then the real path."""
    names = [lexical]
    current = real(lexical.parent) / lexical.name
    for _ in range(40):  # the kernel's own limit on symlink hops
        names.append(current)
        try:
            target = Path(os.readlink(current))
        except OSError:  # not a symlink, missing, or a name too long for the kernel
            break
        current = real((current.parent / target).parent) / target.name
    names.append(real(absolute))
    return names


def protection_of(path: Path, ctx: PolicyContext) -> tuple[Protection, str] | None:
    """The strongest protection that applies to one (absolute) name of a path."""
    name = path.name.lower()
    for policy_file in ctx.policy_files:
        # The lock file and the temp files of an atomic save are the policy's files too.
        same_dir = path.parent == policy_file.parent
        base = policy_file.name.lower()
        if same_dir and (name.startswith(base) or name.startswith(f".{base}.")):
            return Protection.POLICY, f"{policy_file.name} is the permission policy's own file"
    for doc in ctx.role_docs:
        if path.parent == doc.parent and _is_save_of(name, doc.name.lower()):
            return Protection.POLICY, (
                f"{doc.name} is a role doc the panel reads every turn; a change to it goes "
                "through a role proposal"
            )
    team = ctx.team_file
    if team is not None and path.parent == team.parent and _is_save_of(name, team.name.lower()):
        return Protection.POLICY, (
            f"{team.name} is the team file; its [[panels.policy]] entries set the panels' "
            "permissions when the team next starts"
        )
    store = store_reason(path, ctx)
    if store is not None:
        return Protection.STORE, store
    if path in ctx.exec_dirs or path.parent in ctx.exec_dirs:
        where = path if path in ctx.exec_dirs else path.parent
        return Protection.EXEC, f"{where} is on PATH; a file there runs as a command"
    if _is_secret(path):
        return Protection.SECRET, "credentials"
    parts = [p.lower() for p in path.parts]
    if name in SHELL_STARTUP:
        return Protection.PROTECTED, f"{path.name} runs when a shell or git starts"
    if _follows(parts, ".config", CONFIG_SUBDIRS):
        return Protection.PROTECTED, "startup configuration under ~/.config"
    for i, part in enumerate(parts[:-1]):
        if part.endswith(".git"):  # `.git` itself, or a bare repository such as `repo.git`
            if parts[i + 1] == "hooks":
                return Protection.PROTECTED, "git hooks run code on every commit"
            if parts[i + 1 :] == ["config"]:
                return Protection.PROTECTED, "git config can run code (aliases, filters, pager)"
    if any(is_database_family(name, db) for db in TEAM_DATABASES):
        # Under mnemara's state (a solo instance's `host/`, a team's) it is the host's own;
        # elsewhere it may be anyone's file of that name, so writing it asks.
        if any(is_under(path, root) for root in ctx.state_roots):
            return Protection.STORE, TEAM_WHY
        return Protection.PROTECTED, "a mnemara bus or host database"
    for root in ctx.state_roots:
        if is_under(path, root):
            return Protection.PROTECTED, "mnemara's own state"
    for guarded in ctx.extra_protected:
        if is_under(path, guarded):
            return Protection.PROTECTED, f"{guarded} is protected by the host"
    return None


def _is_save_of(name: str, base: str) -> bool:
    """`name` (lower-cased) is `base`, or a lock, temp or backup file of a save of it.

    Stricter than the policy files' rule: a role doc or team file may have any name, and
    `roles/a` must not guard `roles/abc.py`.
    """
    return name == base or name.startswith((f"{base}.", f".{base}.", f"{base}~"))


def _is_secret(path: Path) -> bool:
    parts = [p.lower() for p in path.parts]
    if any(p in SECRET_DIRS for p in parts) or path.name.lower() in SECRET_FILES:
        return True
    return _follows(parts, ".config", SECRET_CONFIG_SUBDIRS)


def _follows(parts: list[str], first: str, seconds: frozenset[str]) -> bool:
    return any(a == first and b in seconds for a, b in itertools.pairwise(parts))


def glob_risk(pattern: str, ctx: PolicyContext, *, cwd: Path | None = None) -> str | None:
    """Why a shell glob might expand to a protected path, or None.

    The literal directory before the first wildcard is checked like any path; each wildcard
    component is compared with the protected names (a leading `*` does not match dotfiles in
    the shell, so `*.py` passes while `.b*` and `.*` do not, and `b*.sqlite` only where a
    bus.sqlite exists); a literal component after a wildcard that is itself a protected name
    (`*/.git/hooks`) is refused too.
    """
    base, rest = glob_base(pattern)
    checked = check_path(base, ctx, cwd=cwd)
    if checked.resolved is None or checked.protection is not None or checked.pseudo:
        return f"the glob {pattern!r} starts in a guarded directory"
    if any(p.lower() in (".git", ".config") for p in base.split("/")):
        return f"the glob {pattern!r} reaches into .git or .config"
    for depth, part in enumerate(rest):
        lowered = part.lower()
        if lowered in PROTECTED_NAMES:
            return f"the glob {pattern!r} names {part}"
        dots = lowered.startswith((".", "["))  # `[.]x` may match a dotfile in some shells
        hits = [
            n for n in PROTECTED_NAMES if (dots or n[0] != ".") and fnmatch.fnmatchcase(n, lowered)
        ]
        if depth == 0:
            # Right under a known directory a plain name can only match a file that exists;
            # dot names are refused on sight (they are in every home).
            hits = [n for n in hits if n[0] == "." or os.path.lexists(checked.resolved / n)]
        if hits:
            return f"the glob {pattern!r} can match {hits[0]}"
    return None


def glob_base(pattern: str) -> tuple[str, list[str]]:
    """The literal directory a glob starts from, and the components from the first wildcard."""
    parts = pattern.split("/")
    first = next((i for i, p in enumerate(parts) if any(ch in p for ch in "*?[]")), len(parts))
    base = "/".join(parts[:first]) or ("/" if pattern.startswith("/") else ".")
    return base, parts[first:]
