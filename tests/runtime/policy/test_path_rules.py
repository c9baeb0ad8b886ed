"""Path rules, one name at a time: which protection a name gets and why, what a path check
reports about every name a path goes by, and what a shell glob may reach.

`protection_of` is judged on made-up absolute names (it makes no system calls), so each row
says exactly which rule fires; the checks that resolve paths run on a real tmp_path tree.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.policy.context import PolicyContext, real
from runtime.policy.paths import (
    PathCheck,
    Protection,
    check_path,
    expand_home,
    glob_base,
    glob_risk,
    protection_of,
)
from runtime.policy.stores import TEAM_WHY

# A machine on paper: home /h, mnemara's state /s with this instance in /s/inst, a role doc
# and a team file in /r, PATH = /bin, and one file the host guards besides.
PAPER = PolicyContext(
    cwd=Path("/h/p"),
    home=Path("/h"),
    roots=(Path("/h"),),
    policy_files=(Path("/s/inst/permissions.json"), Path("/s/inst/Config.JSON")),
    state_roots=(Path("/s"), Path("/s/inst")),
    extra_protected=(Path("/e/guarded"),),
    role_docs=(Path("/r/role.md"),),
    team_file=Path("/r/Team.toml"),
    exec_dirs=(Path("/bin"),),
)

POLICY_FILE = "permissions.json is the permission policy's own file"
ROLE_DOC = (
    "role.md is a role doc the panel reads every turn; a change to it goes through a role proposal"
)
TEAM_FILE = (
    "Team.toml is the team file; its [[panels.policy]] entries set the panels' permissions "
    "when the team next starts"
)
STATE = "mnemara's own state"
STARTUP = "startup configuration under ~/.config"
HOOKS = "git hooks run code on every commit"
GIT_CONFIG = "git config can run code (aliases, filters, pager)"

PROTECTIONS: list[tuple[str, tuple[Protection, str] | None]] = [
    # The policy's own files, their lock and temp files, in their directory only.
    ("/s/inst/permissions.json", (Protection.POLICY, POLICY_FILE)),
    ("/s/inst/PERMISSIONS.JSON.lock", (Protection.POLICY, POLICY_FILE)),
    ("/s/inst/.permissions.json.x1y2", (Protection.POLICY, POLICY_FILE)),
    ("/s/inst/config.json", (Protection.POLICY, "Config.JSON is the permission policy's own file")),
    ("/s/inst/.permissions.json", (Protection.PROTECTED, STATE)),
    (
        "/s/other/permissions.json.lock",
        (
            Protection.STORE,
            "an instance's store (window, config "
            "or permissions); a write could rewrite a panel's memory "
            "or policy",
        ),
    ),
    ("/h/permissions.json", None),
    # Role docs and the team file: the file and the saves of it, not a longer name.
    ("/r/role.md", (Protection.POLICY, ROLE_DOC)),
    ("/r/ROLE.MD", (Protection.POLICY, ROLE_DOC)),
    ("/r/role.md.bak", (Protection.POLICY, ROLE_DOC)),
    ("/r/.role.md.swp", (Protection.POLICY, ROLE_DOC)),
    ("/r/role.md~", (Protection.POLICY, ROLE_DOC)),
    ("/r/role.mdx", None),
    ("/r/.role.md", None),
    ("/h/role.md", None),
    ("/r/team.toml", (Protection.POLICY, TEAM_FILE)),
    ("/r/team.toml.lock", (Protection.POLICY, TEAM_FILE)),
    ("/r/team.tomls", None),
    ("/h/team.toml", None),
    # The host's stores.
    ("/s/_teams/crew/bus.sqlite", (Protection.STORE, TEAM_WHY)),
    ("/s/other/host/Host.sqlite-WAL", (Protection.STORE, TEAM_WHY)),
    # PATH: the directory itself and the files directly in it.
    ("/bin", (Protection.EXEC, "/bin is on PATH; a file there runs as a command")),
    ("/bin/ls", (Protection.EXEC, "/bin is on PATH; a file there runs as a command")),
    ("/bin/sub/ls", None),
    # Credentials, in a directory or a file, anywhere.
    ("/h/.ssh/id_ed25519", (Protection.SECRET, "credentials")),
    ("/h/.SSH", (Protection.SECRET, "credentials")),
    ("/h/p/.Netrc", (Protection.SECRET, "credentials")),
    ("/h/.config/gh/hosts.yml", (Protection.SECRET, "credentials")),
    ("/h/.config/gcloud", (Protection.SECRET, "credentials")),
    ("/h/gh/.config", None),
    ("/h/.config/ghx/hosts.yml", None),
    # What runs code later.
    ("/h/.bashrc", (Protection.PROTECTED, ".bashrc runs when a shell or git starts")),
    ("/h/p/.ZSHRC", (Protection.PROTECTED, ".ZSHRC runs when a shell or git starts")),
    ("/h/.config/fish/config.fish", (Protection.PROTECTED, STARTUP)),
    ("/h/.config/systemd", (Protection.PROTECTED, STARTUP)),
    ("/h/.config/Fish", (Protection.PROTECTED, STARTUP)),
    ("/h/fish/.config", None),
    ("/h/.config/kitty/kitty.conf", None),
    ("/h/p/.git/hooks/pre-commit", (Protection.PROTECTED, HOOKS)),
    ("/h/p/.git/hooks", (Protection.PROTECTED, HOOKS)),
    ("/h/p/.GIT/Hooks/x", (Protection.PROTECTED, HOOKS)),
    ("/h/p/repo.git/hooks/update", (Protection.PROTECTED, HOOKS)),
    ("/h/p/.git/config", (Protection.PROTECTED, GIT_CONFIG)),
    ("/h/p/.git/config/x", None),
    ("/h/p/.git/objects/config", None),
    ("/h/p/.git/description", None),
    ("/h/p/.git", None),
    ("/h/p/hooks/x", None),
    ("/h/p/gitx/hooks/x", None),
    # A bus or host database: the host's own under mnemara's state, anyone's elsewhere.
    ("/h/p/bus.sqlite", (Protection.PROTECTED, "a mnemara bus or host database")),
    ("/h/p/host.sqlite.peerbus-wal", (Protection.PROTECTED, "a mnemara bus or host database")),
    ("/h/p/bus.sqlite.bak", None),
    # mnemara's state, and what the host guards besides.
    ("/s", (Protection.PROTECTED, STATE)),
    ("/s/inst/role.md", (Protection.PROTECTED, STATE)),
    ("/s/_teams/crew/notes.md", (Protection.PROTECTED, STATE)),
    ("/sx/notes.md", None),
    ("/e/guarded", (Protection.PROTECTED, "/e/guarded is protected by the host")),
    ("/e/guarded/inside", (Protection.PROTECTED, "/e/guarded is protected by the host")),
    ("/e/guardedx", None),
    ("/h/p/src/app.py", None),
]


@pytest.mark.parametrize(("path", "expected"), PROTECTIONS, ids=[p for p, _ in PROTECTIONS])
def test_each_name_gets_its_protection_and_reason(
    path: str, expected: tuple[Protection, str] | None
) -> None:
    assert protection_of(Path(path), PAPER) == expected


@pytest.mark.parametrize(
    ("protection", "never_written"),
    [
        (Protection.POLICY, True),
        (Protection.STORE, True),
        (Protection.EXEC, True),
        (Protection.SECRET, False),
        (Protection.PROTECTED, False),
        (None, False),
    ],
)
def test_only_policy_stores_and_commands_are_never_written(
    protection: Protection | None, never_written: bool
) -> None:
    assert PathCheck("x", Path("/x"), protection=protection).never_written is never_written


@pytest.mark.parametrize(
    ("raw", "expanded"),
    [
        ("~", "/h"),
        ("~/", "/h/"),
        ("~/.bashrc", "/h/.bashrc"),
        ("~bob/.bashrc", None),
        ("~bob", None),
        ("a/~/b", "a/~/b"),
        ("x~", "x~"),
        ("", ""),
    ],
)
def test_only_ones_own_home_is_expanded(raw: str, expanded: str | None) -> None:
    assert expand_home(raw, Path("/h")) == expanded


@pytest.mark.parametrize(
    ("pattern", "base", "rest"),
    [
        ("a/b/*.py/c", "a/b", ["*.py", "c"]),
        ("*.py", ".", ["*.py"]),
        ("X/*.py", "X", ["*.py"]),
        ("/*", "/", ["*"]),
        ("/a/?x", "/a", ["?x"]),
        ("a/[ab]", "a", ["[ab]"]),
        ("a/x]", "a", ["x]"]),
        ("a/b", "a/b", []),
        ("/", "/", []),
        ("", ".", []),
    ],
)
def test_a_glob_starts_from_its_literal_directory(pattern: str, base: str, rest: list[str]) -> None:
    assert glob_base(pattern) == (base, rest)


@pytest.fixture
def tree(tmp_path: Path) -> PolicyContext:
    """A real home with a project, mnemara's state, a PATH directory and a guarded file."""
    home = real(tmp_path) / "home"
    for directory in ("p/src", "p/.git/hooks", ".ssh", "dotfiles", ".mnemara/inst", "bin"):
        (home / directory).mkdir(parents=True)
    return PolicyContext(
        cwd=home / "p",
        home=home,
        roots=(home / "p",),
        policy_files=(home / ".mnemara/inst/permissions.json",),
        state_roots=(home / ".mnemara", home / ".mnemara/inst"),
        exec_dirs=(home / "bin",),
    )


def test_an_empty_path_or_a_nul_byte_is_not_a_path(tree: PolicyContext) -> None:
    assert check_path("", tree) == PathCheck("", None, why="empty path or NUL byte")
    assert check_path("a\x00b", tree) == PathCheck("a\x00b", None, why="empty path or NUL byte")


def test_someone_elses_home_is_not_expanded(tree: PolicyContext) -> None:
    expected = PathCheck("~bob/x", None, why="`~user` paths are not expanded")
    assert check_path("~bob/x", tree) == expected


@pytest.mark.parametrize("device", ["/dev/null", "/dev/stdout", "/dev/stderr", "/dev/../dev/null"])
def test_the_harmless_devices_are_pseudo_and_nothing_else(tree: PolicyContext, device: str) -> None:
    lexical = Path("/dev") / Path(device).name
    assert check_path(device, tree) == PathCheck(device, lexical, pseudo=True, device=True)


def test_an_ordinary_file_is_resolved_from_the_working_directory(tree: PolicyContext) -> None:
    home = tree.home
    assert check_path("src/../src/app.py", tree) == PathCheck(
        "src/../src/app.py", home / "p/src/app.py", inside_roots=True, looked_up=True
    )
    # Another working directory (a `cd` earlier in the command) takes the place of ctx.cwd.
    assert check_path("app.py", tree, cwd=home / "p/src").resolved == home / "p/src/app.py"
    outside = check_path("notes", tree, cwd=home)
    assert outside.resolved == home / "notes" and not outside.inside_roots


def test_a_path_under_a_pseudo_filesystem_is_pseudo_but_no_device(tree: PolicyContext) -> None:
    check = check_path("/proc/self/environ", tree)
    assert (check.pseudo, check.device) == (True, False)
    for root in ("/sys/kernel", "/dev/sda"):
        assert check_path(root, tree).pseudo, root
    (tree.home / "p/env").symlink_to("/proc/self/environ")
    assert check_path("env", tree).pseudo  # through a symlink too


def test_every_hop_of_a_symlink_chain_counts(tree: PolicyContext) -> None:
    """`p/src/notes -> ../../.bashrc -> dotfiles/bashrc`: only the middle name is protected,
    and both links are relative to their own directory."""
    home = tree.home
    (home / "dotfiles/bashrc").write_text("")
    (home / ".bashrc").symlink_to("dotfiles/bashrc")
    (home / "p/src/notes").symlink_to("../../.bashrc")
    check = check_path("src/notes", tree)
    assert check.resolved == home / "dotfiles/bashrc"
    assert (check.protection, check.why) == (
        Protection.PROTECTED,
        ".bashrc runs when a shell or git starts",
    )
    # By its lexical name only, the link is an ordinary file of the project.
    lexical = check_path("src/notes", tree, resolve=False)
    assert lexical == PathCheck("src/notes", home / "p/src/notes", inside_roots=True)


def test_a_link_in_a_symlinked_directory_is_followed_from_the_real_directory(
    tree: PolicyContext,
) -> None:
    """`p/linked -> ../dotfiles`, and `dotfiles/rc -> ../.ssh/key`: the hop is resolved from
    dotfiles/, where the link really is, not from p/."""
    home = tree.home
    (home / "p/linked").symlink_to("../dotfiles")
    (home / "dotfiles/rc").symlink_to("../.ssh/key")
    assert check_path("linked/rc", tree).protection is Protection.SECRET


def test_the_strongest_protection_of_all_names_wins(tree: PolicyContext) -> None:
    home = tree.home
    (home / ".ssh/key").write_text("")
    (home / ".bashrc").symlink_to(".ssh/key")  # protected by one name, secret by the other
    check = check_path("~/.bashrc", tree)
    assert (check.protection, check.why, check.secret) == (
        Protection.SECRET,
        "credentials",
        True,
    )
    (home / "p/src/cmd").symlink_to(home / "bin/cmd")  # the link is ordinary, its target not
    via_link = check_path("src/cmd", tree)
    assert via_link.protection is Protection.EXEC
    assert via_link.why == f"{home / 'bin'} is on PATH; a file there runs as a command"
    (home / "bin/.netrc").write_text("")  # a secret in a PATH directory: EXEC is stronger
    on_path = check_path("~/bin/.netrc", tree)
    assert (on_path.protection, on_path.secret) == (Protection.EXEC, True)


def test_a_secret_name_is_reported_whatever_the_protection(tree: PolicyContext) -> None:
    policy = tree.home / ".mnemara/inst/permissions.json"
    (tree.home / ".ssh/config").symlink_to(policy)
    check = check_path("~/.ssh/config", tree)
    assert (check.protection, check.secret) == (Protection.POLICY, True)
    assert check_path("src/app.py", tree).secret is False


def test_a_directory_that_holds_stores_is_reported(tree: PolicyContext) -> None:
    assert check_path("~/.mnemara", tree).holds_stores is True
    assert check_path("~", tree).holds_stores is True  # an ancestor of the stores
    assert check_path("src", tree).holds_stores is False


def test_a_name_the_os_cannot_encode_cannot_be_resolved(tree: PolicyContext) -> None:
    check = check_path("bad\ud800name", tree)
    assert (check.raw, check.resolved, check.protection) == ("bad\ud800name", None, None)
    assert check.why.startswith("cannot be resolved (") and check.why.endswith(")")
    assert "surrogate" in check.why
    # By name only no system call is made, so the same name is merely odd.
    assert check_path("bad\ud800name", tree, resolve=False).resolved is not None


def test_a_symlink_loop_ends(tree: PolicyContext) -> None:
    home = tree.home
    (home / "p/a").symlink_to("b")
    (home / "p/b").symlink_to("a")
    check = check_path("a", tree)
    assert check.protection is None and check.looked_up


GLOBS: list[tuple[str, str | None]] = [
    ("src/*.py", None),
    ("*", None),  # a leading `*` skips dotfiles, and no store is in the project
    ("?netrc", None),  # nor does a leading `?`
    ("src/*/x.py", None),
    ("~/.ssh/*", "the glob '~/.ssh/*' starts in a guarded directory"),
    ("/proc/*/environ", "the glob '/proc/*/environ' starts in a guarded directory"),
    ("~bob/*", "the glob '~bob/*' starts in a guarded directory"),
    ("~/.mnemara/*/x", "the glob '~/.mnemara/*/x' starts in a guarded directory"),
    (".git/*", "the glob '.git/*' reaches into .git or .config"),
    ("a/.CONFIG/*", "the glob 'a/.CONFIG/*' reaches into .git or .config"),
    ("*/.BashRC", "the glob '*/.BashRC' names .BashRC"),
    ("*/.git/hooks/*", "the glob '*/.git/hooks/*' names .git"),
    ("~/.netr?", "the glob '~/.netr?' can match .netrc"),
    ("~/[.]netrc", "the glob '~/[.]netrc' can match .netrc"),
    ("~/.NETR?", "the glob '~/.NETR?' can match .netrc"),
    ("*/bus.sqlit?", "the glob '*/bus.sqlit?' can match bus.sqlite"),  # deeper: by name alone
]


@pytest.mark.parametrize(("pattern", "risk"), GLOBS, ids=[g for g, _ in GLOBS])
def test_what_a_glob_may_reach(tree: PolicyContext, pattern: str, risk: str | None) -> None:
    assert glob_risk(pattern, tree) == risk


def test_a_plain_name_right_under_a_directory_matches_only_what_exists(
    tree: PolicyContext,
) -> None:
    assert glob_risk("bus.sqlit?", tree) is None
    (tree.home / "p/src/bus.sqlite").write_text("")
    assert glob_risk("bus.sqlit?", tree) is None  # the glob starts in p/, not p/src/
    assert glob_risk("bus.sqlit?", tree, cwd=tree.home / "p/src") == (
        "the glob 'bus.sqlit?' can match bus.sqlite"
    )
    assert glob_risk("src/bus.sqlit?", tree) == "the glob 'src/bus.sqlit?' can match bus.sqlite"


@pytest.mark.parametrize(("guarded_hop", "protected"), [(39, True), (40, False)])
def test_a_symlink_chain_is_followed_as_far_as_the_kernel_would(
    tree: PolicyContext, guarded_hop: int, protected: bool
) -> None:
    """The kernel gives up after 40 symlinks (ELOOP), so a name further down the chain can
    never be opened through it: `p/link0 -> link1 -> ... -> link40 -> plain`, where one link
    is renamed `.bashrc`, is protected when that link is the 40th name followed, not the 41st.
    """
    home = tree.home
    (home / "plain").write_text("")
    links = [home / "p" / f"link{i}" for i in range(41)]
    links[guarded_hop] = home / "p" / ".bashrc"
    for link, target in zip(links, [*links[1:], home / "plain"], strict=True):
        link.symlink_to(target)
    check = check_path("link0", tree)
    assert check.resolved == home / "plain"
    assert (check.protection is Protection.PROTECTED) is protected
