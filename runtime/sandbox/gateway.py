"""The host's side of a sandbox's way out: Unix sockets that lead only where the policy says.

A sandboxed CLI has no network of its own. The relay inside it (relay.py) carries loopback
connections to the sockets here, in a directory bound into the sandbox:

- `model.sock` connects straight to the model endpoint's host and port (used when the
  endpoint is plain HTTP, as the rehearsal model is);
- `proxy.sock` is an HTTPS proxy that answers `CONNECT host:port` for the allowed hosts only
  (the model endpoint, plus a team's allow-list) and refuses everything else with 403;
- `life.sock` is the sandbox's tie to the host: the relay holds one connection to it, on
  which nothing is ever sent, and stops the CLI when it ends. It ends when the gateway closes
  at the end of the turn, or when the host process dies (the kernel closes its sockets).

bubblewrap's `--die-with-parent` ties the sandbox to the launcher shell that starts it
(launch.py), which a host killed with -9 leaves behind; the tie covers that case.

Plain threads and blocking sockets: a gateway lives for one turn, carries a handful of
connections, and must not care which event loop the host runs.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterable
from pathlib import Path

from runtime.sandbox.relay import splice

HEAD_LIMIT = 8192  # a CONNECT request head is one short line and a few headers
HEAD_TIMEOUT_S = 10.0
CONNECT_TIMEOUT_S = 10.0
MODEL_SOCKET = "model.sock"
PROXY_SOCKET = "proxy.sock"
LIFE_SOCKET = "life.sock"


def parse_connect(head: bytes) -> tuple[str, int] | None:
    """(host, port) of a `CONNECT host:port HTTP/1.x` head, or None for anything else."""
    line = head.split(b"\r\n", 1)[0].decode("ascii", "replace")
    parts = line.split(" ")
    if len(parts) != 3 or parts[0] != "CONNECT" or not parts[2].startswith("HTTP/1."):
        return None
    host, sep, port = parts[1].rpartition(":")
    if not sep or not port.isdigit() or not host:
        return None
    return host.strip("[]").lower(), int(port)


def allowed_targets(hosts: Iterable[str]) -> frozenset[tuple[str, int]]:
    """`host` or `host:port` entries as (host, port) pairs; a bare host means port 443."""
    found: set[tuple[str, int]] = set()
    for entry in hosts:
        host, sep, port = entry.strip().lower().rpartition(":")
        if sep and port.isdigit():
            found.add((host, int(port)))
        else:
            found.add((entry.strip().lower(), 443))
    return frozenset(found)


class Gateway:
    """The sockets of one sandboxed turn; `close()` stops them and ends the relay's tie."""

    def __init__(
        self,
        directory: Path,
        *,
        model: tuple[str, int] | None,
        allowed: frozenset[tuple[str, int]],
    ) -> None:
        self.directory = directory
        self._model = model
        self._allowed = allowed
        self._listeners: list[socket.socket] = []
        self._ties: list[socket.socket] = []
        self._lock = threading.Lock()
        self._closed = False
        self.refused: list[tuple[str, int] | None] = []
        if model is not None:
            self._listen(MODEL_SOCKET, self._to_model)
        self._listen(PROXY_SOCKET, self._proxy)
        self._listen(LIFE_SOCKET, self._tie)

    def _listen(self, name: str, handle: object) -> None:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(self.directory / name))
        listener.listen(64)
        self._listeners.append(listener)

        def accept_loop() -> None:
            while True:
                try:
                    client, _ = listener.accept()
                except OSError:
                    return
                threading.Thread(target=handle, args=(client,), daemon=True).start()  # type: ignore[arg-type]

        threading.Thread(target=accept_loop, daemon=True).start()

    def _tie(self, client: socket.socket) -> None:
        """Hold the relay's connection, never writing to it, until `close()`."""
        with self._lock:
            if not self._closed:
                self._ties.append(client)
                return
        client.close()

    def _to_model(self, client: socket.socket) -> None:
        assert self._model is not None
        try:
            upstream = socket.create_connection(self._model, timeout=CONNECT_TIMEOUT_S)
        except OSError:
            client.close()
            return
        upstream.settimeout(None)
        splice(client, upstream)

    def _proxy(self, client: socket.socket) -> None:
        client.settimeout(HEAD_TIMEOUT_S)
        head = b""
        try:
            while b"\r\n\r\n" not in head and len(head) < HEAD_LIMIT:
                data = client.recv(HEAD_LIMIT)
                if not data:
                    break
                head += data
        except OSError:
            client.close()
            return
        target = parse_connect(head)
        if target is None or target not in self._allowed:
            self.refused.append(target)
            with contextlib.suppress(OSError):
                client.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
            client.close()
            return
        try:
            upstream = socket.create_connection(target, timeout=CONNECT_TIMEOUT_S)
        except OSError:
            with contextlib.suppress(OSError):
                client.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            client.close()
            return
        upstream.settimeout(None)
        client.settimeout(None)
        rest = head.split(b"\r\n\r\n", 1)[1]
        try:
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            if rest:
                upstream.sendall(rest)
        except OSError:
            client.close()
            upstream.close()
            return
        splice(client, upstream)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            ties, self._ties = self._ties, []
        for sock in [*self._listeners, *ties]:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        self._listeners.clear()
