"""The sandbox's only way out: loopback ports that lead to the host's gateway sockets.

Runs inside the sandbox (a network namespace with nothing but loopback) as the parent of the
Claude Code CLI, so it imports the standard library only and is started as a plain script
(`python3 -I -S relay.py ...`). Each `PORT=SOCKET[:cli]` argument opens 127.0.0.1:PORT and
carries every connection to the Unix socket SOCKET, which the host binds into the sandbox.
With `:cli`, a connection is carried only when it comes from the CLI process itself; one
from a command the CLI runs (a Bash tool call, which is another process) is closed at once.
That is how the model endpoint stays reachable for the CLI while commands get no network.

A `life=SOCKET` argument ties the sandbox to the host: the relay connects to SOCKET before it
starts anything (and refuses to start when it cannot), and when that connection ends, which
happens when the host closes the turn's gateway or dies, kills every process of the
sandbox's pid namespace, so the namespace's init (bubblewrap) ends too.

After `--` comes the command to run (the CLI and its arguments). The relay forwards SIGTERM
and SIGINT to it and exits with its exit status, so to the SDK it looks like the CLI.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading

CHUNK = 65536


def pump(src: socket.socket, dst: socket.socket) -> None:
    """Copy bytes from `src` to `dst` until `src` ends, then end `dst`'s sending side."""
    try:
        while data := src.recv(CHUNK):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)


def splice(client: socket.socket, upstream: socket.socket) -> None:
    """Carry bytes both ways until both sides are done, then close both. (The host's gateway
    uses it too: this module is standard library only, so both sides can import it.)"""
    back = threading.Thread(target=pump, args=(upstream, client), daemon=True)
    back.start()
    pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


def _carry(client: socket.socket, target: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(target)
    except OSError:
        client.close()
        upstream.close()
        return
    splice(client, upstream)


def _socket_inode(local_port: int, remote_port: int) -> str | None:
    """The inode of the client end of a loopback connection, read from /proc/net/tcp."""
    want_local = f"0100007F:{local_port:04X}"
    want_remote = f"0100007F:{remote_port:04X}"
    try:
        with open("/proc/net/tcp", encoding="ascii") as table:
            for line in table:
                fields = line.split()
                if len(fields) > 9 and fields[1] == want_local and fields[2] == want_remote:
                    return fields[9]
    except OSError:
        return None
    return None


def _held_by(pid: int, inode: str) -> bool:
    """Whether process `pid` has the socket `inode` open (threads share the fd table)."""
    wanted = f"socket:[{inode}]"
    fd_dir = f"/proc/{pid}/fd"
    try:
        names = os.listdir(fd_dir)
    except OSError:
        return False
    for name in names:
        try:
            if os.readlink(f"{fd_dir}/{name}") == wanted:
                return True
        except OSError:
            continue
    return False


def _serve(port: int, target: str, only_pid: list[int] | None) -> socket.socket:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)

    def accept_loop() -> None:
        while True:
            try:
                client, (_, peer_port) = listener.accept()
            except OSError:
                return
            if only_pid is not None:
                inode = _socket_inode(peer_port, port)
                if not only_pid or inode is None or not _held_by(only_pid[0], inode):
                    client.close()
                    continue
            threading.Thread(target=_carry, args=(client, target), daemon=True).start()

    threading.Thread(target=accept_loop, daemon=True).start()
    return listener


def _end_with(tie: socket.socket, child: subprocess.Popen[bytes]) -> None:
    """Once the host's end of `tie` closes (nothing is ever sent on it), kill everything in
    the sandbox: bubblewrap's init (pid 1 of the sandbox's pid namespace) waits for every
    process in it, so one the command left behind would keep the sandbox alive."""
    try:
        while tie.recv(CHUNK):
            pass
    except OSError:
        pass
    with contextlib.suppress(OSError):
        if os.getpid() == 2 and os.getppid() == 1:  # bubblewrap's layout: the namespace's own
            os.kill(-1, signal.SIGKILL)  # every process but this one and the init
        else:  # not in a pid namespace of its own: never signal beyond the command
            child.kill()


def main(argv: list[str]) -> int:
    if "--" not in argv:
        print("relay: usage: relay.py PORT=SOCKET[:cli]... -- COMMAND...", file=sys.stderr)
        return 2
    split = argv.index("--")
    routes, command = argv[:split], argv[split + 1 :]
    cli_pid: list[int] = []
    tie: socket.socket | None = None
    try:
        for route in routes:
            port, _, rest = route.partition("=")
            if port == "life":
                tie = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                tie.connect(rest)
                continue
            target, _, flag = rest.partition(":")
            _serve(int(port), target, cli_pid if flag == "cli" else None)
    except (OSError, ValueError) as exc:
        print(f"relay: cannot open {routes}: {exc}", file=sys.stderr)
        return 70
    try:
        child = subprocess.Popen(command)
    except OSError as exc:
        print(f"relay: cannot start {command[:1]}: {exc}", file=sys.stderr)
        return 127
    cli_pid.append(child.pid)
    if tie is not None:
        threading.Thread(target=_end_with, args=(tie, child), daemon=True).start()
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, lambda sig, _frame: child.send_signal(sig))
    while True:
        try:
            code = child.wait()
            break
        except InterruptedError:
            continue
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
