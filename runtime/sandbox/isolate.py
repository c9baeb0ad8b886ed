"""Each command the CLI runs, in a namespace of its own inside the sandbox.

Inside the sandbox the CLI holds the turn's only way out: its connection to the model
endpoint, and the gateway's sockets under /run/mnemara that the relay carries. A command the
CLI runs is its child, with its user and its namespaces, so it could take that way too:
connect to the sockets, ptrace the CLI or the relay, read their memory through
/proc/<pid>/mem or their files through /proc/<pid>/root, or take a socket with pidfd_getfd.

So Claude Code's CLAUDE_CODE_SHELL_PREFIX runs every command through the `isolate` script
written here, which starts it in a nested user namespace with /run/mnemara covered by an
empty directory and, with network "off", a network namespace with nothing in it. A process in
a nested user namespace cannot reach one in an ancestor's: the kernel lets a process trace
or open another only in the same namespace or with CAP_SYS_PTRACE over the other's, which a
nested namespace never has. The CLI passes each command as one argument (`isolate 'cmd'`).

A nested user namespace needs a user that is not root in the sandbox: mapping the parent's
root takes CAP_SETFCAP, which the sandbox drops. So a root host's sandbox runs as
SANDBOX_UID, named in copies of /etc/passwd and /etc/group as the host's user is (tools such
as git look the user up); what it writes is still root's on the machine, as the id maps to 0.
An unprivileged host's sandbox already runs in a user namespace of bubblewrap's, as its user.
"""

from __future__ import annotations

import pwd
import shlex
from pathlib import Path

ISOLATE = "isolate"
SANDBOX_UID = 59999  # the first id at or below it that the system does not use
INSIDE = "/run/mnemara"
SHELLS = ("/bin/bash", "/usr/bin/bash", "/bin/sh")


def isolate_script(bwrap: str, *, network_off: bool) -> str:
    """The shell prefix: the command (its only argument) run by bash in a nested namespace."""
    args = [bwrap, "--unshare-user", "--unshare-ipc", "--die-with-parent", "--cap-drop", "ALL"]
    if network_off:
        args.append("--unshare-net")
    args += ["--dev-bind", "/", "/", "--tmpfs", INSIDE]
    shell = next((s for s in SHELLS if Path(s).exists()), "/bin/sh")
    return (
        "#!/bin/sh\n"
        "# mnemara: a command in a namespace of its own (runtime/sandbox/isolate.py)\n"
        f'exec {shlex.join(args)} -- {shell} -c "$1"\n'
    )


def sandbox_user(host_uid: int, gateway_dir: Path, files: dict[str, tuple[str, int]]) -> list[str]:
    """The bubblewrap options that give a root host's sandbox a user of its own (none for
    another host's), adding the passwd and group copies to `files`."""
    if host_uid != 0:
        return []
    passwd = _read("/etc/passwd")
    group = _read("/etc/group")
    taken = {_field(line, 2) for line in passwd.splitlines()}
    taken |= {_field(line, 2) for line in group.splitlines()}
    uid = next(u for u in range(SANDBOX_UID, 999, -1) if str(u) not in taken)
    try:
        me = pwd.getpwuid(host_uid)
        name, gecos, home, shell = me.pw_name, me.pw_gecos, me.pw_dir, me.pw_shell
    except KeyError:
        name, gecos, home, shell = "root", "", "/root", "/bin/sh"
    files["passwd"] = (_append(passwd, f"{name}:x:{uid}:{uid}:{gecos}:{home}:{shell}"), 0o644)
    files["group"] = (_append(group, f"{name}:x:{uid}:"), 0o644)
    args = ["--unshare-user", "--uid", str(uid), "--gid", str(uid)]
    for name in ("passwd", "group"):
        args += ["--ro-bind", str(gateway_dir / name), f"/etc/{name}"]
    return args


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _field(line: str, index: int) -> str:
    parts = line.split(":")
    return parts[index] if len(parts) > index else ""


def _append(text: str, line: str) -> str:
    return (text if text.endswith("\n") or not text else text + "\n") + line + "\n"
