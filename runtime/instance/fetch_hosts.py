"""Which addresses a role-doc download may connect to: public ones, named plainly (#29).

Pure, apart from `resolve_host` (one `getaddrinfo`). An address is refused when it is
unspecified, loopback, link-local, site-local, multicast, private, shared (100.64/10),
reserved, or otherwise not globally routable; IPv6 addresses that carry an IPv4 address
(IPv4-mapped `::ffff:a.b.c.d`, 6to4, Teredo, NAT64 `64:ff9b::/96`) are judged by that IPv4
address too. A numeric host must be four decimal numbers: `2130706433`, `0177.0.0.1` and
`0x7f.1` are all 127.0.0.1 to the C resolver, and a name check that did not know that would be
fooled, so such forms are refused outright.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# host (IDNA form), port -> the addresses it resolves to, as text
Resolver = Callable[[str, int], list[str]]
# an address -> why it may not be fetched from, or None when it may
AddressCheck = Callable[[IPAddress], str | None]

_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
# A last label that is a number makes the whole host numeric (as in the WHATWG URL standard).
_NUMBER = re.compile(r"0[xX][0-9a-fA-F]*|[0-9]+")


def resolve_host(host: str, port: int) -> list[str]:
    """Every address `host` resolves to, in the resolver's order, each once."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def parse_address(raw: str) -> IPAddress:
    """An address from a resolver, without an IPv6 zone (`fe80::1%eth0`)."""
    return ipaddress.ip_address(raw.split("%", 1)[0])


def numeric_host_problem(host: str) -> str | None:
    """Why a numeric host is refused, or None for a name or a plain dotted-decimal address."""
    if ":" in host:  # an IPv6 literal; httpx has already parsed it strictly
        return None
    last = host.rstrip(".").rsplit(".", 1)[-1]
    if not _NUMBER.fullmatch(last):
        return None
    try:
        ipaddress.IPv4Address(host)  # refuses leading zeros, hex and short forms
    except ValueError:
        return (
            f"the host {host!r} is an address written in an unusual form (octal, hex, a single "
            "number or fewer than four parts); write it as four decimal numbers or use a name"
        )
    return None


def embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries and routes to, if any."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def public_address_problem(address: IPAddress) -> str | None:
    """None for a public address; else what kind of address it is, in words."""
    if isinstance(address, ipaddress.IPv6Address):
        inner = embedded_ipv4(address)
        if inner is not None:
            problem = public_address_problem(inner)
            if problem is not None:
                return f"{problem} inside an IPv6 address ({inner})"
            if address.ipv4_mapped is not None or address in _NAT64:
                return None  # only a way of writing (or of reaching) that public address
        if address.is_site_local:
            return "a site-local address"
    kinds = (
        (address.is_unspecified, "an unspecified address"),
        (address.is_loopback, "a loopback address"),
        (address.is_link_local, "a link-local address"),
        (address.is_multicast, "a multicast address"),
        (address.is_private, "a private address"),
        (address.is_reserved, "a reserved address"),
        (not address.is_global, "not a public address"),
    )
    return next((words for found, words in kinds if found), None)
