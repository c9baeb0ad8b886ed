"""host.sqlite: the team's event log, control table and panel status (see schema.py).

The catalogues (catalogue.py: events; verbs.py: verbs) are the only shapes of what goes in.
Sync SQL functions over a `sqlite3.Connection` (events, control, status), usable from
viewers and tests without an event loop; `open_hostdb` gives the host's async wrapper.
"""

from panels.hostdb.catalogue import EVENT_SCHEMA, HostEvent, UnknownEvent, decode
from panels.hostdb.control import (
    INSERT_COMMAND,
    Command,
    command_values,
    finish_command,
    get_command,
    pending_commands,
    prune_commands,
    submit_command,
)
from panels.hostdb.db import HostDb, open_hostdb
from panels.hostdb.events import (
    Logged,
    append_events,
    last_event_id,
    last_events,
    logged_from_row,
    prune_events,
    read_events,
)
from panels.hostdb.schema import SCHEMA_VERSION, HostDbError, connect, data_version
from panels.hostdb.status import (
    PANEL_COLUMNS,
    PANEL_TABLE_INFO,
    PanelRow,
    get_meta,
    panel_from_row,
    panel_query,
    panel_select,
    read_panels,
    set_meta,
    upsert_panels,
)
from panels.hostdb.verbs import Verb, VerbError, parse_verb

__all__ = [
    "EVENT_SCHEMA",
    "INSERT_COMMAND",
    "PANEL_COLUMNS",
    "PANEL_TABLE_INFO",
    "SCHEMA_VERSION",
    "Command",
    "HostDb",
    "HostDbError",
    "HostEvent",
    "Logged",
    "PanelRow",
    "UnknownEvent",
    "Verb",
    "VerbError",
    "append_events",
    "command_values",
    "connect",
    "data_version",
    "decode",
    "finish_command",
    "get_command",
    "get_meta",
    "last_event_id",
    "last_events",
    "logged_from_row",
    "open_hostdb",
    "panel_from_row",
    "panel_query",
    "panel_select",
    "parse_verb",
    "pending_commands",
    "prune_commands",
    "prune_events",
    "read_events",
    "read_panels",
    "set_meta",
    "submit_command",
    "upsert_panels",
]
