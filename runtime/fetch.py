"""`role --set-from-url`: download a role doc once, carefully, and never again.

Rules: https on every hop (redirects are followed by hand, at most 5); every address the host
name resolves to must be public (no loopback, private, link-local, multicast or reserved
ranges); at most 1 MiB of raw bytes (compression refused, so the cap counts what crosses the
wire); one deadline for the whole download; the body must be UTF-8 text.
"""

from __future__ import annotations

import ipaddress
import socket
import time
from collections.abc import Callable
from urllib.parse import urljoin, urlsplit

import httpx

from runtime.errors import FetchError

MAX_BYTES = 1024 * 1024
MAX_REDIRECTS = 5
DEADLINE_SECONDS = 20.0

Resolver = Callable[[str, int], list[str]]


def resolve_host(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return sorted({str(info[4][0]) for info in infos})


def check_url(url: str, resolver: Resolver) -> None:
    """Refuse anything but https to a public address."""
    parts = urlsplit(url)
    if parts.scheme != "https":
        raise FetchError("only https:// URLs are fetched (on every redirect too)", url=url)
    if not parts.hostname:
        raise FetchError("the URL has no host name", url=url)
    try:
        addresses = resolver(parts.hostname, parts.port or 443)
    except OSError as exc:
        raise FetchError(f"cannot resolve {parts.hostname} ({exc})", url=url) from exc
    if not addresses:
        raise FetchError(f"{parts.hostname} resolves to no address", url=url)
    for raw in addresses:
        addr = ipaddress.ip_address(raw.split("%", 1)[0])
        if not addr.is_global or addr.is_multicast:
            raise FetchError(
                f"{parts.hostname} resolves to {addr}, a private or local address; "
                "download the file yourself and use `role --set PATH`",
                url=url,
            )


def fetch_role_doc(
    url: str,
    *,
    resolver: Resolver = resolve_host,
    transport: httpx.BaseTransport | None = None,
    deadline: float = DEADLINE_SECONDS,
) -> str:
    """Download a role doc and return its text; FetchError says why it was refused."""
    started = time.monotonic()
    with httpx.Client(
        transport=transport,
        follow_redirects=False,
        timeout=httpx.Timeout(deadline),
        headers={"Accept-Encoding": "identity", "User-Agent": "mnemara-role-fetch"},
    ) as client:
        current = url
        for _hop in range(MAX_REDIRECTS + 1):
            check_url(current, resolver)
            with client.stream("GET", current) as response:
                if response.is_redirect:
                    location = response.headers.get("location", "")
                    current = urljoin(current, location)
                    continue
                if response.status_code != 200:
                    raise FetchError(f"server answered HTTP {response.status_code}", url=current)
                encoding = response.headers.get("content-encoding", "identity").lower()
                if encoding not in ("", "identity"):
                    raise FetchError(f"compressed answer ({encoding}) refused", url=current)
                body = bytearray()
                for chunk in response.iter_raw():
                    body.extend(chunk)
                    if len(body) > MAX_BYTES:
                        raise FetchError("larger than 1 MiB; refused", url=current)
                    if time.monotonic() - started > deadline:
                        raise FetchError(f"took longer than {deadline:.0f} s; refused", url=url)
                try:
                    return bytes(body).decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise FetchError(f"not UTF-8 text (byte {exc.start})", url=current) from exc
        raise FetchError(f"more than {MAX_REDIRECTS} redirects", url=url)
