"""Where a bus is: a SQLite file (a path or `sqlite:` URL) or a PostgreSQL database.

`parse_location` tells the two apart by the scheme. SQLite URLs follow the spelling most
tools use: `sqlite:///bus.sqlite` is relative to the working directory and
`sqlite:////srv/bus.sqlite` is absolute (three slashes, then the path). `redact` is how a
location is printed or logged: a URL never shows its password.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

from peerbus.errors import BusLocationError

Scheme = Literal["sqlite", "postgresql"]
POSTGRES_SCHEMES = ("postgresql", "postgres")


@dataclass(frozen=True)
class Location:
    scheme: Scheme
    target: str  # the file path (SQLite) or the whole URL (PostgreSQL)

    @property
    def path(self) -> Path:
        return Path(self.target)


def parse_location(location: str | Path) -> Location:
    """The backend and target a bus location names; BusLocationError for anything else."""
    if isinstance(location, Path):
        return Location("sqlite", str(location))
    text = location.strip()
    if not text:
        raise BusLocationError("the bus location is empty; give a file path or a postgresql:// URL")
    scheme, sep, rest = text.partition("://")
    if not sep or "/" in scheme or "\\" in scheme:
        return Location("sqlite", text)
    scheme = scheme.lower()
    if scheme in POSTGRES_SCHEMES:
        return Location("postgresql", text)
    if scheme == "sqlite":
        if not rest.startswith("/") or len(rest) == 1:
            raise BusLocationError(
                f"{redact(text)!r}: write sqlite:///relative/path or sqlite:////absolute/path"
            )
        return Location("sqlite", rest[1:])
    raise BusLocationError(
        f"{redact(text)!r} names an unknown kind of bus ({scheme}://); give a file path, a "
        "sqlite:/// URL or a postgresql:// URL"
    )


def redact(location: str | Path) -> str:
    """The location fit to print, log or keep in a state file: a URL without its password
    (nor any `password=` query value). libpq finds the password again in PGPASSWORD or
    ~/.pgpass, so the redacted URL still opens the bus where those are set."""
    text = str(location)
    if "://" not in text:
        return text
    try:
        parts = urlsplit(text)
    except ValueError:
        return text.split("://", 1)[0] + "://…"
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        netloc = userinfo.split(":", 1)[0] + "@" + host
    items = [i for i in parts.query.split("&") if i]
    query = "&".join(i for i in items if i.split("=")[0].lower() != "password")
    if netloc == parts.netloc and query == parts.query:
        return text  # nothing to hide: the text as given (urlunsplit drops an empty host)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
