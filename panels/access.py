"""Who may reach a server mnemara serves on the network: loopback, tokens, and the checks of
every request. Pure; shared by `dash --web` (panels/ui/web.py, panels/cli/dash.py) and
`mnemara mcp --http` (panels/mcp/transports.py, panels/cli/mcp.py).

Whoever reaches such a server can steer the team, so the rules are the same for both:

- it listens on loopback unless told otherwise, and any other address needs a token of at
  least MIN_TOKEN characters (`listen_refusal`, asked before the server starts);
- served on loopback, a request's Host header must name loopback too: a web page whose domain
  is made to resolve to 127.0.0.1 (DNS rebinding) is refused;
- an Origin header, when sent, must be the server itself: another site's page cannot drive it;
- with a token, every request carries it, compared in constant time (`request_refusal`).

How a request carries its token is the server's own business (the dashboard: a query, then a
cookie; the MCP server: an `Authorization: Bearer` header).
"""

from __future__ import annotations

import hmac
import ipaddress
from urllib.parse import urlsplit

MIN_TOKEN = 16
TOKEN_HINT = 'make one with `python3 -c "import secrets; print(secrets.token_urlsafe())"`'


def is_loopback(name: str) -> bool:
    """Whether an address (or the host name in a Host header) reaches this machine only."""
    if name.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(name.strip("[]")).is_loopback
    except ValueError:
        return False  # any other name may resolve anywhere


def hostname(netloc: str) -> str:
    """The host name in a Host header or URL authority, without port or IPv6 brackets."""
    return (urlsplit(f"//{netloc}").hostname or "").lower()


def listen_refusal(
    address: str, token: str | None, *, address_flag: str, token_env: str
) -> str | None:
    """Why a server must not start on `address` with `token` (None: it may), in words that
    name the command's own options (`address_flag`, e.g. "--host") and environment variable."""
    if token is not None and len(token) < MIN_TOKEN:
        return f"the token is too short: give {MIN_TOKEN} characters or more; {TOKEN_HINT}"
    if not is_loopback(address) and token is None:
        return (
            f"listening on {address} lets other machines steer the team: add --token TOKEN "
            f"(or set {token_env}; {TOKEN_HINT}), or drop {address_flag} to stay on 127.0.0.1"
        )
    return None


def token_matches(given: str | None, token: str) -> bool:
    """Whether a request's token is the server's, compared in constant time."""
    return given is not None and hmac.compare_digest(given.encode(), token.encode())


def request_refusal(
    *,
    loopback: bool,
    token: str | None,
    host: str,
    origin: str | None,
    given: str | None,
    needs_token: str,
) -> str | None:
    """Why a request must be refused (403), or None to let it through. `loopback`: served on
    loopback only; `token`: the server's (None: none needed); `host` and `origin`: the
    request's headers; `given`: the token it carries; `needs_token`: what to say without it."""
    if loopback and not is_loopback(hostname(host)):
        return "this server answers on loopback names only (use the address it printed)"
    if origin is not None and urlsplit(origin).netloc.lower() != host.lower():
        return "requests from another site's page are refused"
    if token is not None and not token_matches(given, token):
        return needs_token
    return None
