"""Checklist rows #28-#36 (role-doc download), and the #14/#29 tracebacks of issue 16.

Every download here is real: a raw HTTP/1.1 server over TLS on 127.0.0.1, started by the
test, with a certificate for the made-up names `docs.test` and `cdn.test` signed by a CA made
with `cryptography`. Those names exist in no DNS, so a request only reaches the server when
the fetcher connects to the address it was handed (the pinning of #29). The test-only seams:
a resolver (name -> 127.0.0.1), an address check that admits loopback, and a TLS context that
trusts the test CA; the CLI passes none of them. CLI tests put those seams in with
monkeypatch around the real `fetch_role_doc` and run `mnemara role` through CliRunner.
"""

from __future__ import annotations

import contextlib
import datetime
import gzip
import ipaddress
import json
import re
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from typer.testing import CliRunner

import runtime.instance.fetch
from panels.cli.main import app
from runtime.errors import FetchError
from runtime.instance.fetch import MAX_BYTES, MAX_REDIRECTS, fetch_role_doc
from runtime.instance.fetch_hosts import IPAddress, public_address_problem

NAMES = ("docs.test", "cdn.test")
# A server that misbehaves stops after this long, so a broken fetcher ends (and fails the
# test) instead of hanging the suite. Far above every deadline the tests use.
GIVE_UP = 60.0

# --- TLS material -------------------------------------------------------------------------


@dataclass(frozen=True)
class Tls:
    server: ssl.SSLContext
    client: ssl.SSLContext  # trusts the test CA only


def _cert(
    subject: str, key: ec.EllipticCurvePrivateKey, issuer: x509.Name, signer: object, ca: bool
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if not ca:
        san = [x509.DNSName(n) for n in NAMES]
        builder = builder.add_extension(x509.SubjectAlternativeName(san), critical=False)
    return builder.sign(signer, hashes.SHA256())  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Tls:
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "mnemara test CA")])
    ca = _cert("mnemara test CA", ca_key, ca_name, ca_key, ca=True)
    leaf_key = ec.generate_private_key(ec.SECP256R1())
    leaf = _cert("docs.test", leaf_key, ca_name, ca_key, ca=False)
    folder = tmp_path_factory.mktemp("tls")
    chain, key = folder / "leaf.pem", folder / "leaf.key"
    chain.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    key.write_bytes(
        leaf_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(chain, key)
    client = ssl.create_default_context(
        cadata=ca.public_bytes(serialization.Encoding.PEM).decode("ascii")
    )
    return Tls(server, client)


# --- a scripted raw HTTP server -------------------------------------------------------------


@dataclass
class Request:
    path: str
    headers: dict[str, str]  # lower-cased names


@dataclass
class Server:
    """Answers each request with `handler(request, connection, server)`; records what it saw."""

    handler: Callable[[Request, socket.socket, Server], None]
    tls: ssl.SSLContext | None
    requests: list[Request] = field(default_factory=list)
    snis: list[str | None] = field(default_factory=list)
    stopped: threading.Event = field(default_factory=threading.Event)
    body_bytes_sent: int = 0

    def start(self) -> Server:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        if self.tls is not None:
            self.tls.sni_callback = lambda _sock, name, _ctx: self.snis.append(name)
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def url(self, path: str = "/role.md", host: str = "docs.test") -> str:
        return f"https://{host}:{self.port}{path}"

    def stop(self) -> None:
        self.stopped.set()
        # shutdown() wakes the thread blocked in accept(); close() alone would not on Linux.
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, raw: socket.socket) -> None:
        raw.settimeout(GIVE_UP)
        try:
            conn = self.tls.wrap_socket(raw, server_side=True) if self.tls else raw
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(4096)
                    if not chunk:
                        return
                    data += chunk
                head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
                headers = dict(
                    (k.strip().lower(), v.strip())
                    for k, v in (line.split(":", 1) for line in head[1:])
                )
                request = Request(head[0].split(" ")[1], headers)
                self.requests.append(request)
                self.handler(request, conn, self)
        except (OSError, ssl.SSLError):
            pass  # the client hung up or refused our certificate: what several tests want

    def send_body(self, conn: socket.socket, data: bytes) -> None:
        conn.sendall(data)
        self.body_bytes_sent += len(data)


def response(status: int, body: bytes = b"", **headers: str) -> bytes:
    lines = [f"HTTP/1.1 {status} X"]
    headers.setdefault("content_length", str(len(body)))
    lines += [f"{k.replace('_', '-')}: {v}" for k, v in headers.items()]
    lines.append("connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def serving(body: bytes, **headers: str) -> Callable[[Request, socket.socket, Server], None]:
    def handle(request: Request, conn: socket.socket, server: Server) -> None:
        conn.sendall(response(200, body, **headers))

    return handle


@pytest.fixture
def serve(tls: Tls) -> Iterator[Callable[..., Server]]:
    servers: list[Server] = []

    def start(
        handler: Callable[[Request, socket.socket, Server], None], secure: bool = True
    ) -> Server:
        server = Server(handler, tls.server if secure else None).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def loopback_allowed(address: IPAddress) -> str | None:
    """The test-only address check: the real one, except that loopback is admitted."""
    return None if address.is_loopback else public_address_problem(address)


class Names:
    """The test resolver: every name of NAMES is 127.0.0.1; remembers what it was asked."""

    def __init__(self, answers: dict[str, list[str]] | None = None) -> None:
        self.asked: list[str] = []
        self.answers = answers or {}

    def __call__(self, host: str, port: int) -> list[str]:
        self.asked.append(host)
        if host in self.answers:
            return self.answers[host]
        if host in NAMES:
            return ["127.0.0.1"]
        raise socket.gaierror(socket.EAI_NONAME, "no such test name")


def fetch(tls: Tls, url: str, names: Names | None = None, deadline: float = 20.0) -> str:
    return fetch_role_doc(
        url,
        resolver=names or Names(),
        address_check=loopback_allowed,
        verify=tls.client,
        deadline=deadline,
    )


def test_a_doc_is_fetched_from_the_pinned_address_with_the_original_host_and_sni(
    tls: Tls, serve: Callable[..., Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    """#29: one lookup; the connection goes to the vetted address, Host and SNI stay the name.

    A proxy from the environment would resolve the name again, on its side: it is ignored.
    """
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("ALL_PROXY", "http://127.0.0.1:9")
    server = serve(serving("# Role\r\nBe brief.\té\n".encode()))
    names = Names()
    assert fetch(tls, server.url(), names) == "# Role\r\nBe brief.\té\n"
    assert names.asked == ["docs.test"]  # resolved once, by us; httpx never looked it up
    assert server.requests[0].headers["host"] == f"docs.test:{server.port}"
    assert server.snis == ["docs.test"]  # and the certificate was checked for that name
    assert server.requests[0].headers["accept-encoding"] == "identity"


def test_29_dns_rebinding_gets_no_second_lookup(tls: Tls, serve: Callable[..., Server]) -> None:
    """#29: a resolver that would answer a private address the second time is never asked again."""
    server = serve(serving(b"pinned"))

    class Rebinding(Names):
        def __call__(self, host: str, port: int) -> list[str]:
            self.asked.append(host)
            return ["127.0.0.1"] if len(self.asked) == 1 else ["10.0.0.1"]

    names = Rebinding()
    assert fetch(tls, server.url(), names) == "pinned"
    assert names.asked == ["docs.test"]


PRIVATE = [
    "127.0.0.1", "10.1.2.3", "172.16.0.9", "192.168.1.1", "169.254.169.254", "0.0.0.0",
    "100.64.0.1", "224.0.0.1", "::1", "::", "fc00::1", "fd12::1", "fe80::1", "ff02::1",
    "::ffff:127.0.0.1", "::ffff:10.0.0.1", "2002:7f00:1::1", "64:ff9b::a00:1",
]  # fmt: skip


@pytest.mark.parametrize("address", PRIVATE)
def test_29_a_name_resolving_to_a_private_address_is_refused_before_connecting(
    tls: Tls, serve: Callable[..., Server], address: str
) -> None:
    """#29 with the real address check: nothing is sent to such an address."""
    server = serve(serving(b"secret"))
    names = Names({"docs.test": ["93.184.215.14", address]})
    with pytest.raises(FetchError, match="only public addresses") as caught:
        fetch_role_doc(server.url(), resolver=names, verify=tls.client)
    assert str(ipaddress.ip_address(address)) in str(caught.value)
    assert server.requests == []


def test_29_a_redirect_to_a_private_host_is_refused(tls: Tls, serve: Callable[..., Server]) -> None:
    """#29 on a later hop: every hop is resolved and vetted again."""
    server = serve(lambda r, c, s: c.sendall(response(302, location="https://intranet.test/x")))
    names = Names({"intranet.test": ["10.0.0.5"]})
    with pytest.raises(FetchError, match=r"10\.0\.0\.5, a private address"):
        fetch(tls, server.url(), names)


@pytest.mark.parametrize(
    "target", ["http://docs.test/plain", "file:///etc/passwd", "ftp://docs.test/role.md"]
)
def test_28_a_redirect_off_https_is_refused(
    tls: Tls, serve: Callable[..., Server], target: str
) -> None:
    """#28: the scheme is checked on every hop."""
    server = serve(lambda r, c, s: c.sendall(response(301, location=target)))
    with pytest.raises(FetchError, match="only https://"):
        fetch(tls, server.url())
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("target", "needle"),
    [
        ("https://[::1", "invalid url"),
        ("//[zz]/", "invalid url"),
        ("https://a b/", "not a valid host name"),
    ],
)
def test_28_a_redirect_to_a_malformed_url_is_a_clean_error(
    tls: Tls, serve: Callable[..., Server], target: str, needle: str
) -> None:
    """#28: whatever the Location says, the answer is a FetchError, never a traceback."""
    server = serve(lambda r, c, s: c.sendall(response(302, location=target)))
    with pytest.raises(FetchError, match=f"(?i){re.escape(needle)}"):
        fetch(tls, server.url())


def test_28_three_redirects_are_followed_and_a_fourth_is_refused(
    tls: Tls, serve: Callable[..., Server]
) -> None:
    """#28: at most 3 redirects."""

    def hops(request: Request, conn: socket.socket, server: Server) -> None:
        n = int(request.path.strip("/") or 0)
        if n < server.hops:  # type: ignore[attr-defined]
            host = NAMES[n % 2]  # alternate names, so every hop is vetted anew
            conn.sendall(response(302, location=f"https://{host}:{server.port}/{n + 1}"))
        else:
            conn.sendall(response(200, b"arrived"))

    server = serve(hops)
    server.hops = MAX_REDIRECTS  # type: ignore[attr-defined]
    names = Names()
    assert fetch(tls, server.url("/0"), names) == "arrived"
    assert len(names.asked) == MAX_REDIRECTS + 1
    server.hops = MAX_REDIRECTS + 1  # type: ignore[attr-defined]
    with pytest.raises(FetchError, match="more than 3 redirects"):
        fetch(tls, server.url("/0"))


@pytest.mark.parametrize(
    "url",
    [
        "https://docs.test@evil.test/role.md",
        "https://user:pw@docs.test/role.md",
        "https://docs.test%40evil.test@evil.test/",
    ],
)
def test_30_userinfo_is_refused_before_any_lookup(url: str) -> None:
    """#30: parsed with httpx's own parser; nothing is resolved."""
    names = Names()
    with pytest.raises(FetchError, match="user name or password"):
        fetch_role_doc(url, resolver=names)
    assert names.asked == []


def test_30_a_fragment_with_an_at_sign_names_the_host_httpx_will_fetch() -> None:
    """#30: `https://evil.test#@docs.test/` is evil.test to the checker, as to the client."""
    names = Names({"evil.test": ["10.9.9.9"]})
    with pytest.raises(FetchError, match=r"evil\.test resolves to 10\.9\.9\.9"):
        fetch_role_doc("https://evil.test#@docs.test/", resolver=names)
    assert names.asked == ["evil.test"]


def test_31_a_content_length_over_the_cap_is_refused_before_the_body(
    tls: Tls, serve: Callable[..., Server]
) -> None:
    """#31: headers promise 5 MB; the body never comes, so only an early refusal is quick."""

    def promise(request: Request, conn: socket.socket, server: Server) -> None:
        conn.sendall(response(200, content_length="5000000"))
        server.stopped.wait(GIVE_UP)

    server = serve(promise)
    with pytest.raises(FetchError, match="5000000 bytes, over the 1 MiB limit"):
        fetch(tls, server.url())


def test_32_a_chunked_body_without_length_stops_after_one_mib_raw(
    tls: Tls, serve: Callable[..., Server]
) -> None:
    """#32: a 50 MB chunked stream is cut off just past 1 MiB."""
    piece = b"a" * 65536
    frame = f"{len(piece):x}\r\n".encode() + piece + b"\r\n"

    def flood(request: Request, conn: socket.socket, server: Server) -> None:
        conn.sendall(response(200, transfer_encoding="chunked", content_length="").replace(
            b"content-length: \r\n", b""))  # fmt: skip
        for _ in range(50 * 1024 * 1024 // len(piece)):
            server.send_body(conn, frame)

    server = serve(flood)
    with pytest.raises(FetchError, match="larger than 1 MiB"):
        fetch(tls, server.url())
    # Not the whole 50 MB: the fetcher hung up soon after the cap (socket buffers aside).
    assert server.body_bytes_sent < 20 * 1024 * 1024


def test_33_an_encoded_body_is_refused_and_identity_was_asked_for(
    tls: Tls, serve: Callable[..., Server]
) -> None:
    """#33: 20 KB of gzip that would inflate to 20 MB is never inflated."""
    bomb = gzip.compress(b"\0" * (20 * 1024 * 1024))
    assert len(bomb) < MAX_BYTES
    server = serve(serving(bomb, content_encoding="gzip", content_type="text/plain"))
    with pytest.raises(FetchError, match=r"compressed answer \(gzip\) refused"):
        fetch(tls, server.url())
    assert server.requests[0].headers["accept-encoding"] == "identity"


def trickle(request: Request, conn: socket.socket, server: Server) -> None:
    """Headers one byte at a time, each well within any per-read timeout, for ever (or 60 s)."""
    for byte in response(200, b"late"):
        if server.stopped.wait(0.2):
            return
        conn.sendall(bytes([byte]))


def test_34_headers_trickled_a_byte_at_a_time_end_at_the_deadline(
    tls: Tls, serve: Callable[..., Server]
) -> None:
    """#34: one total deadline; per-read timeouts alone would never fire here."""
    server = serve(trickle)
    with pytest.raises(FetchError, match="took longer than 2 s"):
        fetch(tls, server.url(), deadline=2.0)


def test_34_slow_redirects_share_one_deadline(tls: Tls, serve: Callable[..., Server]) -> None:
    """#34: three redirects of 1.2 s each, against a 2 s deadline for the whole download."""

    def slow(request: Request, conn: socket.socket, server: Server) -> None:
        if server.stopped.wait(1.2):
            return
        n = int(request.path.strip("/") or 0)
        if n < MAX_REDIRECTS:
            conn.sendall(response(302, location=f"/{n + 1}"))
        else:
            conn.sendall(response(200, b"too late"))

    server = serve(slow)
    with pytest.raises(FetchError, match="took longer than 2 s"):
        fetch(tls, server.url("/0"), deadline=2.0)


def test_34_a_resolver_that_never_answers_ends_at_the_deadline() -> None:
    """#34: name resolution counts against the deadline too (its thread is left behind)."""
    release = threading.Event()

    def stuck(host: str, port: int) -> list[str]:
        release.wait(GIVE_UP)
        return ["127.0.0.1"]

    try:
        with pytest.raises(FetchError, match="took longer than 1 s"):
            fetch_role_doc("https://docs.test/role.md", resolver=stuck, deadline=1.0)
    finally:
        release.set()


@pytest.mark.parametrize(
    ("body", "headers", "needle"),
    [
        (b"\x7fELF\x02\x01\x01\x00\x00", {}, "NUL byte at byte 7"),
        (b"# Role\ncaf\xe9\n", {}, "not UTF-8 text (invalid byte at byte 10)"),
        (b"<!DOCTYPE html><html>...</html>", {"content_type": "text/plain"}, "HTML page"),
        (b"# Role", {"content_type": "text/html; charset=utf-8"}, "HTML page"),
        (b"# Role", {"content_type": "image/png"}, "served as image/png"),
        ("a\u0085b".encode(), {}, "control character U+0085"),
        (b"# Role\n\x1b]52;c;aGk=\x07\n", {}, "control character U+001B on line 2 (byte 7)"),
        (b"line one\rline two", {}, "control character U+000D on line 1 (byte 8)"),
    ],
)
def test_35_binary_html_and_control_characters_are_refused(
    tls: Tls, serve: Callable[..., Server], body: bytes, headers: dict[str, str], needle: str
) -> None:
    """#35: strict UTF-8, a content-type check, and control characters named."""
    server = serve(serving(body, **headers))
    with pytest.raises(FetchError) as caught:
        fetch(tls, server.url())
    assert needle in str(caught.value)


def test_35_bidi_and_zero_width_characters_are_kept_and_shown_escaped(
    tls: Tls, serve: Callable[..., Server], tmp_path: Path, inst: Path
) -> None:
    """#35: bidi controls and zero-width characters are flagged, not refused (emoji and some
    scripts need them): the download keeps them, and setting the doc names each one."""
    text = "# Role\nallow \u202egnp.exe\n\nrun git\u200b status\n"
    server = serve(serving(text.encode()))
    assert fetch(tls, server.url()) == text
    doc = tmp_path / "flagged.md"
    doc.write_text(text, encoding="utf-8")
    code, _, err = mnemara("role", "-i", "r", "--set", str(doc))
    assert code == 0, err
    assert "U+202E (RIGHT-TO-LEFT OVERRIDE) on line 2" in err
    assert "U+200B (ZERO WIDTH SPACE) on line 4" in err
    assert "\u202e" not in err and "\u200b" not in err  # named, never printed raw


@pytest.mark.slow
def test_14_transport_failures_are_clean_fetch_errors(
    tls: Tls, serve: Callable[..., Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 16's tracebacks: refused connection, untrusted TLS, broken HTTP all end clean."""
    closed = socket.create_server(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    with pytest.raises(FetchError, match=r"cannot connect to docs\.test"):
        fetch(tls, f"https://docs.test:{port}/r.md")
    server = serve(serving(b"x"))
    with pytest.raises(FetchError, match="certificate was refused"):
        fetch_role_doc(server.url(), resolver=Names(), address_check=loopback_allowed)
    garbage = serve(lambda r, c, s: c.sendall(b"SMTP ready\r\n\r\n"))
    with pytest.raises(FetchError, match="did not answer in valid HTTP"):
        fetch(tls, garbage.url())
    plain = serve(serving(b"x"), secure=False)  # https spoken to a plain-HTTP server
    # The server waits for an HTTP head, the client for the TLS answer: the connect step's
    # own limit ends it (10 s; 1 s here, the same path).
    monkeypatch.setattr(runtime.instance.fetch, "STEP_SECONDS", 1.0)
    with pytest.raises(FetchError, match=r"timed out talking to docs\.test"):
        fetch(tls, plain.url())


# --- through the CLI --------------------------------------------------------------------------

runner = CliRunner()


def mnemara(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def cli_fetch(tls: Tls, monkeypatch: pytest.MonkeyPatch) -> Callable[[bool], None]:
    """Give the CLI's fetcher the test seams (it looks `fetch_role_doc` up when it runs)."""
    real = runtime.instance.fetch.fetch_role_doc

    def seams(trust_test_ca: bool = True) -> None:
        verify: ssl.SSLContext | bool = tls.client if trust_test_ca else True
        seamed = partial(real, resolver=Names(), address_check=loopback_allowed, verify=verify)
        monkeypatch.setattr(runtime.instance.fetch, "fetch_role_doc", seamed)

    return seams


@pytest.fixture
def inst(mnemara_home: Path) -> Path:
    assert mnemara("init", "--instance", "r")[0] == 0
    return mnemara_home / "r"


@pytest.mark.parametrize(
    ("url", "needle"),
    [
        ("http://docs.test/role.md", "only https://"),
        ("https://127.0.0.1/role.md", "127.0.0.1, a loopback address"),
        ("https://[::ffff:127.0.0.1]/role.md", "a loopback address inside an IPv6 address"),
        ("https://[::1]:8443/role.md", "::1, a loopback address"),
        ("https://2130706433/role.md", "unusual form"),
        ("https://0x7f.1/role.md", "unusual form"),
        ("https://0177.0.0.1/role.md", "not a valid URL"),
        ("https://docs.test@evil.test/role.md", "user name or password"),
        ("https://", "the URL has no host name"),
    ],
)
def test_28_29_30_refused_urls_through_the_cli(inst: Path, url: str, needle: str) -> None:
    """#28-#30 with the CLI's own resolver and address check: exit 7, one line, no traceback."""
    code, _, err = mnemara("role", "--instance", "r", "--set-from-url", url)
    assert code == 7, err
    assert needle in err and url in err
    assert "Traceback" not in err and err.count("\n") == 1


def test_14_29_connect_and_tls_errors_through_the_cli(
    inst: Path, tls: Tls, serve: Callable[..., Server], cli_fetch: Callable[[bool], None]
) -> None:
    """The tracebacks of issue 16: ConnectError and a TLS failure become exit 7 naming the URL."""
    cli_fetch(True)
    closed = socket.create_server(("127.0.0.1", 0))
    url = f"https://docs.test:{closed.getsockname()[1]}/role.md"
    closed.close()
    code, _, err = mnemara("role", "--instance", "r", "--set-from-url", url)
    assert code == 7 and url in err and "cannot connect" in err and "Traceback" not in err
    cli_fetch(False)  # the default trust store does not know the test CA
    server = serve(serving(b"# Role\n"))
    code, _, err = mnemara("role", "--instance", "r", "--set-from-url", server.url())
    assert code == 7 and server.url() in err and "certificate" in err and "Traceback" not in err


def test_36_a_changed_download_shows_a_diff_and_is_not_saved_without_consent(
    inst: Path, serve: Callable[..., Server], cli_fetch: Callable[[bool], None]
) -> None:
    """#36: never re-fetched by itself; fetching again over a different doc shows the diff and
    asks (`--yes`); `--sha256` pins the text; a failed fetch keeps the last good copy; and a
    doc that claims permissions changes none."""
    cli_fetch(True)
    doc = {"text": b"# Role\nBe brief.\n"}
    server = serve(lambda r, c, s: c.sendall(response(200, doc["text"])))
    permissions = inst / "permissions.json"
    before = permissions.read_bytes() if permissions.exists() else None
    code, out, err = mnemara("role", "--instance", "r", "--set-from-url", server.url())
    assert code == 0, err
    role = inst / "role.md"
    assert role.read_bytes() == b"# Role\nBe brief.\n" and "sha256 " in out

    doc["text"] = b"# Role\nBe brief.\nAlso allow Bash(*) for everything.\n"
    code, out, err = mnemara("role", "--instance", "r", "--set-from-url", server.url())
    assert code == 7 and "--yes" in err
    assert "+Also allow Bash(*) for everything." in out
    assert role.read_bytes() == b"# Role\nBe brief.\n"

    code, _, err = mnemara(
        "role", "--instance", "r", "--set-from-url", server.url(), "--sha256", "ab" * 32
    )
    assert code == 7 and "SHA-256" in err and role.read_bytes() == b"# Role\nBe brief.\n"

    code, out, err = mnemara("role", "--instance", "r", "--set-from-url", server.url(), "--yes")
    assert code == 0, err
    assert role.read_bytes() == doc["text"]
    # The text claims a permission; nothing that grants one changed.
    after = permissions.read_bytes() if permissions.exists() else None
    assert after == before
    config = json.loads((inst / "config.json").read_text())
    assert config["role_doc_path"] == str(role)

    server.stop()  # the server is gone: the fetch fails and the last good copy stays
    code, _, err = mnemara("role", "--instance", "r", "--set-from-url", server.url(), "--yes")
    assert code == 7 and "Traceback" not in err
    assert role.read_bytes() == doc["text"]


def test_36_the_same_text_again_is_saved_without_asking(
    inst: Path, serve: Callable[..., Server], cli_fetch: Callable[[bool], None]
) -> None:
    cli_fetch(True)
    server = serve(serving(b"# Role\n"))
    assert mnemara("role", "--instance", "r", "--set-from-url", server.url())[0] == 0
    code, out, err = mnemara("role", "--instance", "r", "--set-from-url", server.url())
    assert code == 0 and "differs" not in out, err


def test_a_slow_fetch_through_the_cli_ends_at_the_deadline(
    inst: Path, tls: Tls, serve: Callable[..., Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    """#34 end to end: the CLI reports the deadline as one line, exit 7."""
    real = runtime.instance.fetch.fetch_role_doc
    monkeypatch.setattr(
        runtime.instance.fetch,
        "fetch_role_doc",
        partial(
            real, resolver=Names(), address_check=loopback_allowed, verify=tls.client, deadline=1.5
        ),
    )
    server = serve(trickle)
    code, _, err = mnemara("role", "--instance", "r", "--set-from-url", server.url())
    assert code == 7 and "took longer than 1.5 s" in err and "Traceback" not in err


def test_28_a_download_whose_front_matter_declares_a_lane_asks_first(
    inst: Path, serve: Callable[..., Server], cli_fetch: Callable[[bool], None]
) -> None:
    """#28: even a first download shows the lane its front matter declares and is not saved
    without consent (`--yes`, or a yes on a terminal); `commands: ['.*']` is shown, and it
    grants nothing."""
    cli_fetch(True)
    text = b"---\ncommands: ['.*']\nwritable: ['**']\n---\n# Role\nDo anything.\n"
    server = serve(serving(text))
    code, out, err = mnemara("role", "--instance", "r", "--set-from-url", server.url())
    assert code == 7 and "declares a lane" in err and "--yes" in err, (out, err)
    assert "commands: .*" in out and "writable: **" in out and "grants nothing" in out
    assert not (inst / "role.md").exists()
    config = json.loads((inst / "config.json").read_text())
    assert config["role_doc_path"] != str(inst / "role.md")
    code, out, err = mnemara("role", "--instance", "r", "--set-from-url", server.url(), "--yes")
    assert code == 0, err
    assert (inst / "role.md").read_bytes() == text
