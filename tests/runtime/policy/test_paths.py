"""Path checks: every name a path goes by counts, and the host can guard more files."""

from __future__ import annotations

from pathlib import Path

from runtime.policy.context import PolicyContext
from runtime.policy.paths import Protection, check_path, glob_risk
from tests.runtime.policy.conftest import Machine


def test_a_protected_name_that_is_itself_a_symlink_stays_protected(machine: Machine) -> None:
    dotfiles = machine.home / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "zshrc").write_text("")
    (machine.home / ".zshrc").symlink_to(dotfiles / "zshrc")
    check = check_path("~/.zshrc", machine.ctx)
    assert check.resolved == dotfiles / "zshrc"
    assert check.protection is Protection.PROTECTED


def test_extra_protected_paths_from_the_host(machine: Machine, tmp_path: Path) -> None:
    foreign = machine.home / "shared" / "returns.sqlite"
    ctx = PolicyContext.build(cwd=machine.project, home=machine.home, extra_protected=[foreign])
    assert check_path(str(foreign), ctx).protection is Protection.PROTECTED
    assert check_path(str(foreign.with_name("other.sqlite")), ctx).protection is None


def test_secrets_and_policy_files(machine: Machine) -> None:
    assert check_path("~/.ssh/config", machine.ctx).protection is Protection.SECRET
    assert check_path("~/.netrc", machine.ctx).protection is Protection.SECRET
    policy = check_path(str(machine.instance.permissions), machine.ctx)
    assert policy.protection is Protection.POLICY
    other_instance = machine.state_root / "other" / "config.json"
    assert check_path(str(other_instance), machine.ctx).protection is Protection.STORE
    role = machine.state_root / "other" / "role.md"
    assert check_path(str(role), machine.ctx).protection is Protection.PROTECTED


def test_ordinary_paths_are_unprotected_and_inside_home(machine: Machine) -> None:
    check = check_path("src/../src/app.py", machine.ctx)
    assert check.resolved == machine.project / "src" / "app.py"
    assert check.protection is None and check.inside_roots and not check.pseudo


def test_devices(machine: Machine) -> None:
    check = check_path("/dev/null", machine.ctx)
    assert check.device and check.pseudo and not check.inside_roots


def test_glob_risk(machine: Machine) -> None:
    assert glob_risk("src/*.py", machine.ctx) is None
    assert glob_risk("*", machine.ctx) is None  # a leading * skips dotfiles in the shell
    assert glob_risk("~/.b*", machine.ctx) is not None
    assert glob_risk("~/[.]bashrc", machine.ctx) is not None
    assert glob_risk("*/.git/hooks/*", machine.ctx) is not None
    assert glob_risk(".git/*", machine.ctx) is not None
    assert glob_risk("~/.mnemara/*/x", machine.ctx) is not None
    assert glob_risk("b*.sqlite", machine.ctx) is None  # no bus database here
    (machine.project / "bus.sqlite").write_text("")
    assert glob_risk("b*.sqlite", machine.ctx) is not None
    assert glob_risk("*", machine.ctx) is not None
    assert glob_risk("*/b*.sqlite", machine.ctx) is not None  # deeper: judged by name alone
