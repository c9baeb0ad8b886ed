"""Two hosts, one PostgreSQL bus: a network namespace per host, when this machine allows it.

Each host runs in a network namespace of its own (`ip netns exec`), joined to the root
namespace by a veth pair on a /30 of its own: as on a second machine, the bus server is
not on its loopback, only behind its link. The test server listens on 127.0.0.1 only and
accepts passwords from 127.0.0.1 only (tests/pgcluster.py), so a relay in the test process
listens on each link's root-side address and forwards every connection to the server: the
relay is that host's way to the database. When the server goes away (a restart), the
relay closes the host's side too, as a router would reset it.

Making namespaces needs root and `ip`; `open_netns` raises `NetnsUnavailable` otherwise
and the test runs both hosts on loopback instead (and says so).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import anyio
from anyio.abc import SocketAttribute, SocketStream, TaskStatus

CHUNK = 65536


class NetnsUnavailable(Exception):
    """This machine cannot make network namespaces here (not root, no `ip`, no right)."""


@dataclass(frozen=True)
class Netns:
    name: str
    outside: str  # the root namespace's end of the link (where the relay listens)
    inside: str  # the host's address in its namespace

    def command(self, argv: list[str]) -> list[str]:
        """`argv` run inside the namespace (same pid: `ip netns exec` execs it)."""
        return ["ip", "netns", "exec", self.name, *argv]


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30, check=False)
    if done.returncode != 0:
        raise NetnsUnavailable(f"ip {' '.join(args)}: {done.stderr.strip()}")


@contextmanager
def open_netns(tag: str, subnet: int) -> Iterator[Netns]:
    """A namespace `mnm-<tag>` linked to the root one on 10.213.<subnet>.0/30; removed
    (with its link) at the end of the block."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        raise NetnsUnavailable("network namespaces need root and the `ip` command")
    name, outer, inner = f"mnm-{tag}", f"mnmo{tag}"[:15], f"mnmi{tag}"[:15]
    outside, inside = f"10.213.{subnet}.1", f"10.213.{subnet}.2"
    _ip("netns", "add", name)
    try:
        _ip("link", "add", outer, "type", "veth", "peer", "name", inner)
        _ip("link", "set", inner, "netns", name)
        _ip("addr", "add", f"{outside}/30", "dev", outer)
        _ip("link", "set", outer, "up")
        _ip("-n", name, "addr", "add", f"{inside}/30", "dev", inner)
        _ip("-n", name, "link", "set", inner, "up")
        _ip("-n", name, "link", "set", "lo", "up")
        yield Netns(name, outside, inside)
    finally:
        # Deleting the namespace deletes its end of the veth pair, and with it the other.
        subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)
        subprocess.run(["ip", "link", "del", outer], capture_output=True, check=False)


def relay_url(url: str, address: str, port: int) -> str:
    """The bus URL as a host behind the relay at `address`:`port` gives it (password kept:
    it is that host's own team file)."""
    parts = urlsplit(url)
    userinfo = parts.netloc.rsplit("@", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{userinfo}@{address}:{port}"))


async def _pipe(source: SocketStream, sink: SocketStream) -> None:
    try:
        while True:
            data = await source.receive(CHUNK)
            await sink.send(data)
    except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass


async def _relay_one(client: SocketStream, port: int) -> None:
    async with client:
        try:
            server = await anyio.connect_tcp("127.0.0.1", port)
        except OSError:
            return  # the server is down (restarting): the host sees its connection close
        async with server, anyio.create_task_group() as tg:

            async def both(a: SocketStream, b: SocketStream) -> None:
                await _pipe(a, b)
                tg.cancel_scope.cancel()  # one side ended: end the connection

            tg.start_soon(both, client, server)
            tg.start_soon(both, server, client)


async def serve_relay(address: str, upstream: int, *, task_status: TaskStatus[int]) -> None:
    """Forward TCP connections to `address` (a free port; reported at start) to
    127.0.0.1:`upstream`, until cancelled."""
    listener = await anyio.create_tcp_listener(local_host=address, local_port=0)
    async with listener:
        port = int(listener.extra(SocketAttribute.local_port))
        task_status.started(port)
        await listener.serve(lambda client: _relay_one(client, upstream))
