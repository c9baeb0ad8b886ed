"""`role --set-from-url`: https on every hop, public addresses only, 1 MiB raw cap, UTF-8."""

from __future__ import annotations

import httpx
import pytest

from runtime.errors import FetchError
from runtime.fetch import MAX_BYTES, check_url, fetch_role_doc

PUBLIC = {"example.org": ["93.184.215.14"], "cdn.example.org": ["2606:2800:21f:cb07::1"]}


def resolver(host: str, port: int) -> list[str]:
    return {
        **PUBLIC,
        "intranet.example.org": ["10.1.2.3"],
        "sneaky.example.org": ["93.184.215.14", "127.0.0.1"],
        "metadata.example.org": ["169.254.169.254"],
        "v6local.example.org": ["::1"],
    }[host]


def serve(**routes: tuple[int, bytes, dict[str, str]]) -> httpx.MockTransport:
    """A transport answering by host (dots as underscores): (status, body, headers)."""

    def handle(request: httpx.Request) -> httpx.Response:
        status, body, headers = routes.get(request.url.host.replace(".", "_"), (404, b"", {}))
        # A byte stream, so the fetcher reads it as raw bytes off the wire.
        return httpx.Response(status, stream=httpx.ByteStream(body), headers=headers)

    return httpx.MockTransport(handle)


def test_a_public_https_doc_is_fetched() -> None:
    transport = serve(example_org=(200, "# Role\nhello é".encode(), {}))
    assert (
        fetch_role_doc("https://example.org/role.md", resolver=resolver, transport=transport)
        == "# Role\nhello é"
    )


@pytest.mark.parametrize(
    ("url", "needle"),
    [
        ("http://example.org/role.md", "only https"),
        ("file:///etc/passwd", "only https"),
        ("https://intranet.example.org/r.md", "private or local"),
        ("https://sneaky.example.org/r.md", "private or local"),
        ("https://metadata.example.org/r.md", "private or local"),
        ("https://v6local.example.org/r.md", "private or local"),
        ("https://127.0.0.1/r.md", "private or local"),
    ],
)
def test_refused_urls(url: str, needle: str) -> None:
    def literal(host: str, port: int) -> list[str]:
        return [host] if host[0].isdigit() else resolver(host, port)

    with pytest.raises(FetchError, match=needle):
        check_url(url, literal)


def test_a_redirect_to_http_or_a_private_host_is_refused() -> None:
    for location, needle in [
        ("http://example.org/plain", "only https"),
        ("https://intranet.example.org/x", "private or local"),
    ]:
        transport = serve(example_org=(302, b"", {"location": location}))
        with pytest.raises(FetchError, match=needle):
            fetch_role_doc("https://example.org/r.md", resolver=resolver, transport=transport)


def test_https_redirects_are_followed() -> None:
    transport = serve(
        example_org=(301, b"", {"location": "https://cdn.example.org/r.md"}),
        cdn_example_org=(200, b"moved", {}),
    )
    assert (
        fetch_role_doc("https://example.org/r.md", resolver=resolver, transport=transport)
        == "moved"
    )


def test_redirect_loops_end() -> None:
    transport = serve(example_org=(302, b"", {"location": "/again"}))
    with pytest.raises(FetchError, match="redirects"):
        fetch_role_doc("https://example.org/r.md", resolver=resolver, transport=transport)


def test_more_than_one_mib_is_refused_and_compression_too() -> None:
    big = serve(example_org=(200, b"a" * (MAX_BYTES + 1), {}))
    with pytest.raises(FetchError, match="1 MiB"):
        fetch_role_doc("https://example.org/r.md", resolver=resolver, transport=big)
    gz = serve(example_org=(200, b"x", {"content-encoding": "gzip"}))
    with pytest.raises(FetchError, match="compressed"):
        fetch_role_doc("https://example.org/r.md", resolver=resolver, transport=gz)


def test_non_utf8_and_http_errors_are_refused() -> None:
    latin = serve(example_org=(200, b"caf\xe9", {}))
    with pytest.raises(FetchError, match="UTF-8"):
        fetch_role_doc("https://example.org/r.md", resolver=resolver, transport=latin)
    with pytest.raises(FetchError, match="HTTP 404"):
        fetch_role_doc("https://example.org/r.md", resolver=resolver, transport=serve())
