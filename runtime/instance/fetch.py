"""`role --set-from-url`: download a role doc once, with every limit set before a byte is trusted.

The rules, with the checklist rows they answer:

- https only, checked on every hop; redirects followed by hand, at most 3 (#28).
- a URL with userinfo (`https://trusted@evil/`) is refused, parsed by httpx's own parser, so
  the host checked is the host fetched (#30).
- the host name is resolved once; every address it gives must be public (fetch_hosts.py), and a
  numeric host must be written as four decimal numbers (#29). The connection then goes to the
  checked address only: the request URL carries the address, while the Host header and the
  TLS SNI and certificate check carry the original name (`sni_hostname`), so there is no
  second lookup for a rebinding DNS server to answer differently. Proxies from the
  environment are ignored for the same reason.
- one deadline (20 s) over everything: resolution, connect, TLS, headers, every redirect
  and the body; a server that trickles its headers a byte at a time ends there (#34).
- a Content-Length over 1 MiB is refused before the body is read; raw bytes are counted as
  they arrive; `Accept-Encoding: identity` is sent and an encoded answer refused, so what is
  counted is what is kept (#31, #32, #33).
- the body must be a role doc: not HTML, UTF-8, no NUL or control characters
  (`runtime.instance.roledoc.role_text_problem`, #35).
- every failure, httpx's and the OS's included, is a FetchError naming the URL.
"""

from __future__ import annotations

import re
import ssl
from dataclasses import dataclass
from functools import partial

import anyio
import anyio.to_thread
import httpx

from runtime.errors import FetchError
from runtime.instance.fetch_hosts import (
    AddressCheck,
    IPAddress,
    Resolver,
    numeric_host_problem,
    parse_address,
    public_address_problem,
    resolve_host,
)
from runtime.instance.roledoc import decode_role_text, role_text_problem

MAX_BYTES = 1024 * 1024
MAX_REDIRECTS = 3
DEADLINE_SECONDS = 20.0
# Each connect, read and write also has its own limit, under the deadline that bounds them all.
STEP_SECONDS = 10.0
_HEADERS = {"Accept-Encoding": "identity", "User-Agent": "mnemara-role-fetch"}
# Media types a role doc may be served as (none at all is fine too); the body is checked anyway.
_TEXT_TYPES = ("text/", "application/octet-stream")
_HTML_TYPES = ("text/html", "application/xhtml+xml")
# What a host name may hold once httpx has IDNA-encoded it (it %-encodes anything else).
_HOST_NAME = re.compile(r"[A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class Pinned:
    """A vetted hop: the URL as given, its host name and the one address to connect to."""

    url: httpx.URL
    host: str  # IDNA (ASCII) form, for SNI, the certificate check and the Host header
    address: IPAddress


def parse_url(raw: str | httpx.URL, shown: str) -> httpx.URL:
    """The URL as httpx will send it, refused unless https without userinfo (#28, #30)."""
    try:
        url = raw if isinstance(raw, httpx.URL) else httpx.URL(raw)
    except (httpx.InvalidURL, ValueError, TypeError) as exc:
        raise FetchError(f"not a valid URL ({exc})", url=shown) from None
    if url.scheme != "https":
        raise FetchError("only https:// URLs are fetched (on every redirect too)", url=shown)
    if url.userinfo:
        raise FetchError(
            "a URL with a user name or password before '@' is refused: the part before '@' "
            "is not the host; give the plain https://host/path URL",
            url=shown,
        )
    if not url.host:
        raise FetchError("the URL has no host name", url=shown)
    host = url.raw_host.decode("ascii")
    if ":" not in host and not _HOST_NAME.fullmatch(host):
        raise FetchError(f"{host!r} is not a valid host name", url=shown)
    return url


def check_url(
    raw: str | httpx.URL,
    resolver: Resolver = resolve_host,
    address_check: AddressCheck = public_address_problem,
) -> Pinned:
    """Parse, resolve once and vet one hop; the result says where to connect. Blocking."""
    shown = str(raw)
    url = parse_url(raw, shown)
    host = url.raw_host.decode("ascii")
    problem = numeric_host_problem(host)
    if problem is not None:
        raise FetchError(problem, url=shown)
    port = url.port or 443
    try:
        addresses = resolver(host, port)
    except OSError as exc:
        raise FetchError(f"cannot resolve {host} ({exc})", url=shown) from None
    if not addresses:
        raise FetchError(f"{host} resolves to no address", url=shown)
    checked = [parse_address(a) for a in addresses]
    for address in checked:
        problem = address_check(address)
        if problem is not None:
            raise FetchError(
                f"{host} resolves to {address}, {problem}; only public addresses are fetched: "
                "download the file yourself and use `role --set PATH`",
                url=shown,
            )
    return Pinned(url, host, checked[0])


def fetch_role_doc(
    url: str,
    *,
    resolver: Resolver = resolve_host,
    deadline: float = DEADLINE_SECONDS,
    verify: ssl.SSLContext | bool = True,
    address_check: AddressCheck = public_address_problem,
) -> str:
    """Download a role doc and return its text; FetchError says why it was refused.

    The keyword arguments exist for tests (a resolver and an address check that admit a
    server on 127.0.0.1, a TLS context trusting its certificate); the CLI passes only `url`.
    """
    fetch = partial(_fetch, url, resolver, deadline, verify, address_check)
    return anyio.run(fetch)


async def _fetch(
    url: str,
    resolver: Resolver,
    deadline: float,
    verify: ssl.SSLContext | bool,
    address_check: AddressCheck,
) -> str:
    try:
        with anyio.fail_after(deadline):
            return await _follow(url, resolver, verify, address_check)
    except TimeoutError:
        raise FetchError(
            f"took longer than {deadline:g} s (connecting, headers, redirects and body "
            "together); try again later, or download the file yourself and use `role --set`",
            url=url,
        ) from None


async def _follow(
    url: str,
    resolver: Resolver,
    verify: ssl.SSLContext | bool,
    address_check: AddressCheck,
) -> str:
    current: httpx.URL | str = url
    for _hop in range(MAX_REDIRECTS + 1):
        # getaddrinfo cannot be interrupted: the thread is abandoned at the deadline.
        pinned = await anyio.to_thread.run_sync(
            check_url, current, resolver, address_check, abandon_on_cancel=True
        )
        outcome = await _get(pinned, verify)
        if isinstance(outcome, str):
            return outcome
        current = outcome
    raise FetchError(f"more than {MAX_REDIRECTS} redirects; give the final URL", url=url)


async def _get(pinned: Pinned, verify: ssl.SSLContext | bool) -> str | httpx.URL:
    """One hop: the role doc's text, or the (unchecked) URL it redirects to."""
    shown = str(pinned.url)
    # A fresh client per hop: a pooled connection made for one name must never carry a
    # request for another name that happens to share the address.
    async with httpx.AsyncClient(
        verify=verify,
        trust_env=False,
        follow_redirects=False,
        headers=_HEADERS,
        timeout=httpx.Timeout(STEP_SECONDS),
    ) as client:
        request = client.build_request(
            "GET",
            pinned.url.copy_with(host=str(pinned.address)),
            headers={"Host": pinned.url.netloc.decode("ascii")},
            extensions={"sni_hostname": pinned.host},
        )
        try:
            response = await client.send(request, stream=True)
            try:
                return await _answer(pinned, response)
            finally:
                await response.aclose()
        except httpx.HTTPError as exc:
            raise FetchError(_transport_failure(exc, pinned), url=shown) from None
        except OSError as exc:
            raise FetchError(f"download failed ({exc.strerror or exc})", url=shown) from None


async def _answer(pinned: Pinned, response: httpx.Response) -> str | httpx.URL:
    shown = str(pinned.url)
    if response.is_redirect:
        try:
            return pinned.url.join(response.headers["location"])
        except (httpx.InvalidURL, ValueError, TypeError) as exc:
            raise FetchError(f"redirected to an invalid URL ({exc})", url=shown) from None
    if response.status_code != 200:
        raise FetchError(f"the server answered HTTP {response.status_code}", url=shown)
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        raise FetchError(f"compressed answer ({encoding}) refused; it cannot be bounded", url=shown)
    media = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if media.startswith(_HTML_TYPES):
        raise FetchError("an HTML page, not a role doc: link the raw Markdown file", url=shown)
    if media and not media.startswith(_TEXT_TYPES):
        raise FetchError(f"served as {media}, not text: a role doc is Markdown", url=shown)
    declared = response.headers.get("content-length")
    if declared is not None and declared.strip().isdigit() and int(declared) > MAX_BYTES:
        raise FetchError(f"is {int(declared)} bytes, over the 1 MiB limit; refused", url=shown)
    body = bytearray()
    # aiter_raw: the bytes as they came off the wire (after chunked framing only), so the cap
    # counts what was received, not what some decoder made of it.
    async for chunk in response.aiter_raw():
        body.extend(chunk)
        if len(body) > MAX_BYTES:
            raise FetchError("larger than 1 MiB; refused", url=shown)
    return _role_text(bytes(body), shown)


def _role_text(raw: bytes, shown: str) -> str:
    head = raw[:200].lstrip().lower()
    if head.startswith((b"<!doctype html", b"<html")):
        raise FetchError("an HTML page, not a role doc: link the raw Markdown file", url=shown)
    problem = role_text_problem(raw)
    if problem is not None:
        raise FetchError(f"the downloaded text {problem}", url=shown)
    return decode_role_text(raw)


def _transport_failure(exc: httpx.HTTPError, pinned: Pinned) -> str:
    """One line for any httpx failure, in our words."""
    where = f"{pinned.host} ({pinned.address})"
    detail = " ".join(str(exc).split())[:200] or type(exc).__name__
    if isinstance(exc, httpx.TimeoutException):
        return f"timed out talking to {where}; try again later"
    if isinstance(exc, httpx.ConnectError):
        if "CERTIFICATE" in detail.upper() or "SSL" in detail.upper():
            return f"the TLS connection to {where} failed; its certificate was refused ({detail})"
        return f"cannot connect to {where} ({detail})"
    if isinstance(exc, httpx.RemoteProtocolError | httpx.LocalProtocolError):
        return f"{where} did not answer in valid HTTP ({detail})"
    return f"download from {where} failed ({type(exc).__name__}: {detail})"
