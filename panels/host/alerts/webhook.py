"""An alert as a JSON POST to the team's webhook (`[team.alerts] webhook`), with httpx.

`Webhook.post` sends one payload: a timeout per request and a few tries with a doubling
pause between them, retrying what may pass on a second try (no answer, a timeout, 429, a
5xx) and giving up at once on any other refusal. It answers None when the receiver took
the alert, else one line saying why not: the caller logs it, never a traceback. The URL is
shown without its path and query (they may hold a token).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import anyio

from panels.hostdb import Logged
from panels.hostdb import catalogue as ev

if TYPE_CHECKING:
    import httpx

TIMEOUT = 5.0  # seconds for one request, connect to last byte
TRIES = 4
BACKOFF = 0.25  # seconds before the second try; doubled before each next one


def payload(team: str, logged: Logged) -> dict[str, Any]:
    """The JSON body for one written `AlertRaised`."""
    event = logged.event
    assert isinstance(event, ev.AlertRaised)
    when = dt.datetime.fromtimestamp(logged.ts, dt.UTC).isoformat(timespec="seconds")
    return {"team": team, "panel": event.panel, "kind": event.alert, "text": event.text,
            "time": when, "event": logged.id, "cause": event.cause}  # fmt: skip


def shown(url: str) -> str:
    """The URL as warnings show it: scheme and host only."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or '?'}{':' + str(parts.port) if parts.port else ''}"


class Webhook:
    """One receiver; get it from `open_webhook`, which owns the HTTP client."""

    def __init__(
        self, url: str, client: httpx.AsyncClient, *, tries: int = TRIES, backoff: float = BACKOFF
    ) -> None:
        self.url = url
        self._client = client
        self.tries = tries
        self.backoff = backoff

    async def post(self, body: dict[str, Any]) -> str | None:
        import httpx

        why = ""
        for attempt in range(self.tries):
            if attempt:
                await anyio.sleep(self.backoff * 2 ** (attempt - 1))
            try:
                answer = await self._client.post(self.url, json=body)
            except httpx.TimeoutException:
                why = f"no answer within {TIMEOUT:g} s"
                continue
            except httpx.HTTPError as exc:
                why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                continue
            if answer.is_success:
                return None
            why = f"HTTP {answer.status_code}"
            if answer.status_code != 429 and answer.status_code < 500:
                break  # the receiver refuses this alert: another try would get the same
        return f"the alert webhook {shown(self.url)} did not take an alert ({why})"


@asynccontextmanager
async def open_webhook(url: str, **options: Any) -> AsyncIterator[Webhook]:
    import httpx

    # No proxy from the environment: an alert goes where the team file says, and nowhere else.
    async with httpx.AsyncClient(timeout=TIMEOUT, trust_env=False) as client:
        yield Webhook(url, client, **options)
