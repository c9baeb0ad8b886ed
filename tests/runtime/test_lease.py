"""Instance leases: a live owner in another process refuses, a dead one is taken over."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import runtime.instance.lease as lease_module
from runtime.errors import InstanceNotFoundError
from runtime.instance.home import InstancePaths, list_instances
from runtime.instance.lease import (
    InstanceLeasedError,
    LeaseOwner,
    acquire_lease,
    current_owner,
    delete_instance,
    lease_path,
    parse_owner,
)
from tests.lease_kit import held_elsewhere


def kill_hard(child: subprocess.Popen[str]) -> None:
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=10)


def lock_is_free(path: Path) -> bool:
    """Whether a fresh descriptor could take the exclusive lock (let go at once)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


def me(holder: str = "the test") -> LeaseOwner:
    return LeaseOwner.this_process(holder)


def test_a_lease_writes_its_owner_and_a_release_empties_it(instance: InstancePaths) -> None:
    owner = LeaseOwner.this_process("the host of team 'trio'", team="trio")
    with acquire_lease(instance, owner) as lease:
        assert lease.held and lease.stale_owner is None
        data = json.loads(lease_path(instance).read_text())
        assert data["format"] == 1 and data["pid"] == os.getpid() and data["team"] == "trio"
        assert parse_owner(lease_path(instance).read_bytes()) == owner
        assert not lock_is_free(lease_path(instance))
    assert not lease.held
    assert lease_path(instance).read_bytes() == b""
    assert lock_is_free(lease_path(instance))
    lease.release()  # idempotent
    with acquire_lease(instance, me()) as again:
        assert again.stale_owner is None


def test_a_live_owner_in_another_process_refuses_and_is_named(instance: InstancePaths) -> None:
    with held_elsewhere(instance) as child:
        with pytest.raises(InstanceLeasedError) as caught:
            acquire_lease(instance, me(), action="delete it")
        assert caught.value.owner.pid == child.pid
        assert caught.value.instance == "t1"
        message = str(caught.value)
        who = f"the host of team 'trio' (pid {child.pid} on "
        assert message.startswith(f"instance 't1' is in use by {who}")
        assert message.endswith("; stop it first (`mnemara down --team trio`) before you delete it")
        owner = current_owner(instance)
        assert owner is not None and owner.pid == child.pid and owner.team == "trio"
        assert parse_owner(lease_path(instance).read_bytes()) == owner  # the refusal wrote nothing


def test_a_dead_owner_is_stale_and_taken_over(instance: InstancePaths) -> None:
    with held_elsewhere(instance) as child:
        kill_hard(child)
        assert current_owner(instance) is None  # only stale
        with acquire_lease(instance, me("the new host")) as lease:
            assert lease.stale_owner is not None
            assert lease.stale_owner.pid == child.pid
            assert lease.stale_owner.holder == "the host of team 'trio'"
            assert current_owner(instance) == lease.owner


def test_a_second_lease_in_the_same_process_is_refused(instance: InstancePaths) -> None:
    with acquire_lease(instance, me("the first")) as first:
        with pytest.raises(InstanceLeasedError) as caught:
            acquire_lease(instance, me("the second"))
        assert caught.value.owner == first.owner
        assert "in use by the first (pid" in str(caught.value)
        assert current_owner(instance) == first.owner
        assert first.held and not lock_is_free(lease_path(instance))
    with acquire_lease(instance, me("the second")):
        pass


def test_current_owner_never_leaves_the_lock_taken(instance: InstancePaths) -> None:
    assert current_owner(instance) is None
    assert not lease_path(instance).exists()  # a probe creates nothing
    with acquire_lease(instance, me()):
        pass
    fds = len(os.listdir("/proc/self/fd"))
    assert current_owner(instance) is None
    assert len(os.listdir("/proc/self/fd")) == fds
    assert lock_is_free(lease_path(instance))
    with held_elsewhere(instance):  # another process can lease it right after a probe
        assert current_owner(instance) is not None


def test_probing_an_instance_this_process_holds_keeps_the_lease(instance: InstancePaths) -> None:
    with acquire_lease(instance, me()) as lease:
        assert current_owner(instance) == lease.owner
        assert lease.held and not lock_is_free(lease_path(instance))


def test_the_lease_file_does_not_make_or_hide_an_instance(
    instance: InstancePaths, mnemara_home: Path
) -> None:
    with acquire_lease(instance, me()):
        assert list_instances() == ["t1"]
    stray = mnemara_home / "stray"
    stray.mkdir()
    with pytest.raises(InstanceNotFoundError):
        acquire_lease(InstancePaths.for_name("stray"), me())
    assert not (stray / ".lease").exists() and list_instances() == ["t1"]


def test_unreadable_content_under_a_live_lock_is_another_process(instance: InstancePaths) -> None:
    with held_elsewhere(instance) as child:
        # As if the owner were between its lock and its write.
        lease_path(instance).write_text("{half")
        with pytest.raises(InstanceLeasedError) as caught:
            acquire_lease(instance, me())
        assert caught.value.owner.pid == 0
        assert "in use by another process (the lease file does not say which)" in str(caught.value)
        kill_hard(child)
    with acquire_lease(instance, me()) as lease:
        assert lease.stale_owner is not None and lease.stale_owner.pid == 0


def test_delete_renames_away_before_letting_go(instance: InstancePaths, mnemara_home: Path) -> None:
    lease = acquire_lease(instance, me())
    delete_instance(lease)
    assert not lease.held
    assert list(mnemara_home.iterdir()) == []  # no renamed leftovers either
    with pytest.raises(InstanceNotFoundError):
        acquire_lease(instance, me())


@pytest.mark.parametrize("then", ["deleted", "recreated"])
def test_a_lock_won_on_a_file_renamed_away_is_no_lease(
    then: str, instance: InstancePaths, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lease file opened just before `delete_instance` renamed it away must not count."""
    real_try_lock = lease_module._try_lock
    raced: list[int] = []

    def delete_between_open_and_flock(fd: int, mode: int) -> bool:
        if not raced:
            raced.append(fd)
            instance.root.rename(instance.root.with_name(".t1.deleting"))
            if then == "recreated":  # `mnemara init t1` right after the delete
                instance.root.mkdir()
                instance.config.write_text("{}")
        return real_try_lock(fd, mode)

    monkeypatch.setattr(lease_module, "_try_lock", delete_between_open_and_flock)
    if then == "deleted":
        with pytest.raises(InstanceNotFoundError, match="was deleted or moved"):
            acquire_lease(instance, me())
        return
    with acquire_lease(instance, me()) as lease:  # the new instance's file, not the old one
        assert parse_owner(lease_path(instance).read_bytes()) == lease.owner
        old = instance.root.with_name(".t1.deleting") / ".lease"
        assert old.read_bytes() == b"" and lock_is_free(old)


def test_describe_says_who_where_and_since_when() -> None:
    since = time.mktime((2026, 5, 1, 14, 2, 0, 0, 0, -1))
    owner = LeaseOwner(4242, "box1", "trio", "the host of team 'trio'", since)
    described = owner.describe(now=since + 60)
    assert described == "the host of team 'trio' (pid 4242 on box1, since 14:02)"
    assert owner.describe(now=since + 3 * 86400).endswith("since 2026-05-01 14:02)")
    assert owner.next_step() == "stop it first (`mnemara down --team trio`)"
    solo = LeaseOwner(7, "box1", "", "`mnemara clear`", since)
    assert solo.next_step() == "wait for it to finish or stop it first"


@pytest.mark.parametrize(
    "raw",
    [b"", b"{", b"[]", b'{"format": 2, "pid": 1}', b'{"format": 1, "pid": "1"}', b"\xff"],
)
def test_content_that_names_no_owner_is_not_parsed(raw: bytes) -> None:
    assert parse_owner(raw) is None


def test_a_child_process_does_not_inherit_the_lease(instance: InstancePaths) -> None:
    """A host's subprocesses (the Claude CLI) must not keep its lease alive after it lets go."""
    lease = acquire_lease(instance, me())
    with subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE, text=True
    ) as child:
        assert child.stdin is not None
        lease.release()
        assert lock_is_free(lease_path(instance)) and current_owner(instance) is None
        child.stdin.close()
        child.wait(timeout=10)
