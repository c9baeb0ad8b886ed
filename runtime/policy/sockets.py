"""Commands that act through a socket, where the file-path policy cannot follow them (#25).

`gpg --list-secret-keys` reads no key file itself: it asks gpg-agent over a socket. `ssh-add
-L` asks ssh-agent. `docker run -v /:/h` asks a daemon that runs as root to do what no path
check sees. Whatever the patterns say, such a command asks, and "always" is not offered:

- programs whose whole job is to talk to an agent or a daemon (`SOCKET_CLIENTS`);
- options that point an ordinary program at a Unix socket (`curl --unix-socket`, `nc -U`);
- an argument naming a socket address (`unix:///run/x.sock`, socat's `UNIX-CONNECT:`);
- an argument that is an existing socket file (bash.py checks that once it has the path).

Like every list in this package it is a floor, not a proof: the OS sandbox must keep the
sockets out of reach (issue 16).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from runtime.policy.options import Grammar, spelling_matches

# program (as program_of spells it: version digits dropped, `gpg2` is `gpg`) -> what it reaches
SOCKET_CLIENTS: dict[str, str] = {
    "gpg": "gpg-agent, which holds the secret keys",
    "gpg-agent": "gpg-agent, which holds the secret keys",
    "gpg-connect-agent": "gpg-agent, which holds the secret keys",
    "gpgconf": "gpg-agent, which holds the secret keys",
    "gpgsm": "gpg-agent, which holds the secret keys",
    "ssh-add": "ssh-agent, which holds the SSH keys",
    "ssh-agent": "ssh-agent, which holds the SSH keys",
    "docker": "the container daemon, which runs as root",
    "podman": "the container service, which can mount any file the user can",
    "nerdctl": "the container daemon, which runs as root",
    "ctr": "the container daemon, which runs as root",
    "socat": "any socket, file or program its addresses name",
    "dbus-send": "the D-Bus, which starts services and reaches the desktop",
    "gdbus": "the D-Bus, which starts services and reaches the desktop",
    "busctl": "the D-Bus, which starts services and reaches the desktop",
    "systemctl": "systemd, which starts services",
}
# program -> options that make it talk to a Unix socket instead of the network
SOCKET_OPTIONS: dict[str, tuple[str, ...]] = {
    "curl": ("--unix-socket", "--abstract-unix-socket"),
    "nc": ("-U", "--unixsock"),
    "ncat": ("-U", "--unixsock"),
    "netcat": ("-U",),
    "wget": ("--unix-socket",),
    "http": ("--unix-socket",),  # HTTPie
}
_GRAMMAR = Grammar()
# `unix:/x`, `unix:///x` (Docker, gRPC), and socat's `UNIX-CONNECT:`, `ABSTRACT-CLIENT:` ...
_SOCKET_ADDRESS = re.compile(r"(?:^|[=,@])(?:unix|(?:unix|abstract)-[a-z]+|npipe):", re.I)


def socket_hazards(program: str, args: Sequence[str]) -> list[str]:
    """Why this command reaches something through a socket, or nothing."""
    reach = SOCKET_CLIENTS.get(program)
    if reach is not None:
        return [f"`{program}` acts through a socket on {reach}, beyond the file-path policy"]
    found = [
        f"`{program} {spelling}` talks to a Unix socket, beyond the file-path policy"
        for spelling in SOCKET_OPTIONS.get(program, ())
        if any(spelling_matches(spelling, a, _GRAMMAR) for a in args)
    ]
    for arg in args:
        if _SOCKET_ADDRESS.search(arg):
            found.append(f"the argument {arg!r} names a socket, beyond the file-path policy")
            break
    return found[:1]
