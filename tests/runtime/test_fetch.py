"""`role --set-from-url`'s checks before any connection: URL, numeric hosts, addresses, pinning.

The downloads themselves, against real local TLS servers, are in
tests/security/test_download_rows.py (rows #28-#36).
"""

from __future__ import annotations

import ipaddress

import pytest

from runtime.errors import FetchError
from runtime.instance.fetch import check_url
from runtime.instance.fetch_hosts import numeric_host_problem, parse_address, public_address_problem

RESOLVED = {
    "example.org": ["93.184.215.14", "2606:2800:21f:cb07::1"],
    "intranet.example.org": ["10.1.2.3"],
    "sneaky.example.org": ["93.184.215.14", "127.0.0.1"],
    "metadata.example.org": ["169.254.169.254"],
    "v6local.example.org": ["::1"],
    "zoned.example.org": ["fe80::1%eth0"],
    "xn--bcher-kva.example": ["93.184.215.15"],
}


def resolver(host: str, port: int) -> list[str]:
    return RESOLVED[host]


def test_a_public_host_is_pinned_to_its_first_address() -> None:
    pinned = check_url("https://example.org:8443/r.md", resolver)
    assert pinned.host == "example.org" and pinned.address == ipaddress.ip_address("93.184.215.14")
    assert pinned.url.port == 8443


def test_an_international_name_is_looked_up_and_pinned_in_its_ascii_form() -> None:
    assert check_url("https://bücher.example/r.md", resolver).host == "xn--bcher-kva.example"


@pytest.mark.parametrize(
    ("url", "needle"),
    [
        ("http://example.org/role.md", "only https"),
        ("file:///etc/passwd", "only https"),
        ("https://intranet.example.org/r.md", "10.1.2.3, a private address"),
        ("https://sneaky.example.org/r.md", "127.0.0.1, a loopback address"),
        ("https://metadata.example.org/r.md", "169.254.169.254, a link-local address"),
        ("https://v6local.example.org/r.md", "::1, a loopback address"),
        ("https://zoned.example.org/r.md", "a link-local address"),
        ("https://a@example.org/r.md", "user name or password"),
        ("https://2130706433/r.md", "unusual form"),
        ("https://0x7f.0.0.1/r.md", "unusual form"),
        ("https://1.2.3/r.md", "unusual form"),
        ("https://exa mple.org/", "not a valid host name"),
        ("https://ex%61mple.org/", "not a valid host name"),
    ],
)
def test_refused_urls(url: str, needle: str) -> None:
    with pytest.raises(FetchError, match=needle):
        check_url(url, resolver)


def test_a_name_that_does_not_resolve_is_a_fetch_error() -> None:
    def nowhere(host: str, port: int) -> list[str]:
        raise OSError("no such name")

    with pytest.raises(FetchError, match=r"cannot resolve example\.org"):
        check_url("https://example.org/", nowhere)
    with pytest.raises(FetchError, match="resolves to no address"):
        check_url("https://example.org/", lambda h, p: [])


@pytest.mark.parametrize("host", ["example.org", "123.example", "1password.com", "1.2.3.4", "::1"])
def test_names_and_plain_addresses_are_not_numeric_tricks(host: str) -> None:
    assert numeric_host_problem(host) is None


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("0.0.0.0", "unspecified"),
        ("100.64.0.1", "not a public address"),
        ("198.18.0.1", "private"),
        ("fec0::1", "site-local"),
        ("2002:a00:1::1", "private address inside an IPv6 address (10.0.0.1)"),
        ("2001:0:4136:e378:8000:63bf:f5ff:fffe", "inside an IPv6 address (10.0.0.1)"),  # Teredo
    ],
)
def test_address_kinds(address: str, kind: str) -> None:
    problem = public_address_problem(parse_address(address))
    assert problem is not None and kind in problem


@pytest.mark.parametrize(
    "address",
    ["93.184.215.14", "2606:2800:21f:cb07::1", "::ffff:93.184.215.14", "64:ff9b::5db8:d70e"],
)
def test_public_addresses_however_written_are_accepted(address: str) -> None:
    assert public_address_problem(parse_address(address)) is None
