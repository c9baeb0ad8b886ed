"""The runtime's exceptions: one root, each class raised in one kind of situation.

MnemaraError                      root of everything the runtime raises on purpose
├── ConfigError                   config.json (or another settings file) is unreadable or invalid
├── InstanceError                 an instance cannot be used as asked
│   ├── InvalidInstanceNameError  the name could escape MNEMARA_HOME or is reserved
│   ├── InstanceNotFoundError     no directory for that instance
│   ├── InstanceExistsError       `init` would overwrite an existing instance
│   └── InstanceLeasedError       a host or command holds the instance's lease (instance/lease.py)
├── StoreError                    turns.sqlite cannot be opened, read or written
│   ├── StoreCorruptError         the file is not a usable SQLite database
│   └── ExportFormatError         an import file is malformed or from a newer format version
├── RoleDocError                  a role doc given on purpose (`role --set`) cannot be used
│   └── LaneError                 a role doc's front matter (its lane) is malformed
├── FetchError                    `role --set-from-url` refused or failed
├── PolicyError                   permissions.json or a policy pattern is unusable (fail closed)
├── MemoryStoreError              a memory store (notes, wiki, index, graph) refused or failed
│   ├── WikiSlugError             a wiki page name is unsafe or malformed
│   └── EngineUnavailableError    the index or graph engine is missing, broken or switched off
├── PanelHaltedError              a halted panel (sentinel or budget) was asked for a turn
├── CheckpointError               a checkpoint of a panel's files cannot be taken, read or restored
│   └── CheckpointNotFoundError   no checkpoint has the number asked for (or there is none)
├── RehearsalError                the rehearsal model cannot serve (runtime/rehearsal/errors.py)
├── SandboxUnavailable            the sandbox is required and cannot be built on this machine
│                                 (runtime/sandbox/launch.py)
└── DriverError                   a turn could not be run by the model driver
    ├── CredentialsError          no API key, login or base URL the CLI can use
    ├── PromptTooLongError        the model service refused the prompt's size
    ├── ServiceBusyError          429 / 529 overloaded; the input is kept, retry later
    └── TurnInterruptedError      the turn was stopped (operator /stop, shutdown)

Every error carries the fields that locate it and a message that says what to do next; the
CLI maps the classes to exit codes (see panels/cli/errors.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runtime.guard.records import HaltRecord


class MnemaraError(Exception):
    """Root of the runtime's own errors."""


class ConfigError(MnemaraError):
    """Raised when a config file cannot be parsed or a field is invalid. Names file and field."""

    def __init__(self, message: str, *, path: Path | None = None, field: str | None = None):
        where = str(path) if path else "config"
        if field:
            where = f"{where}: field '{field}'"
        super().__init__(f"{where}: {message}")
        self.path = path
        self.field = field


class InstanceError(MnemaraError):
    """Raised when an instance cannot be used as asked."""

    def __init__(self, message: str, *, instance: str):
        super().__init__(message)
        self.instance = instance


class InvalidInstanceNameError(InstanceError):
    """Raised for names that are empty, reserved, or could escape MNEMARA_HOME."""


class InstanceNotFoundError(InstanceError):
    """Raised when the instance directory does not exist."""


class InstanceExistsError(InstanceError):
    """Raised when `init` would overwrite an existing instance."""


class StoreError(MnemaraError):
    """Raised when turns.sqlite cannot be opened, read or written."""

    def __init__(self, message: str, *, path: Path | None = None, row_id: int | None = None):
        super().__init__(message)
        self.path = path
        self.row_id = row_id


class StoreCorruptError(StoreError):
    """Raised when turns.sqlite is not a usable SQLite database."""


class ExportFormatError(StoreError):
    """Raised when an import file is malformed or written by a newer format version."""

    def __init__(self, message: str, *, path: Path | None = None, line: int | None = None):
        super().__init__(message, path=path)
        self.line = line


class RoleDocError(MnemaraError):
    """Raised when a role doc set on purpose is a directory, binary, unreadable or too big."""

    def __init__(self, message: str, *, path: Path):
        super().__init__(f"{path}: {message}")
        self.path = path


class LaneError(RoleDocError):
    """Raised when a role doc's front matter (its lane, runtime/instance/lane.py) cannot be used.

    The message is `<file>:<line>: lane field '<field>': <what is wrong>; <what to do>`
    (`lane front matter` in place of the field when no one field is at fault). A turn that
    meets one does not run: the host halts the panel until the doc is fixed.
    """

    def __init__(
        self, problem: str, fix: str, *, path: str, line: int, field: str | None = None
    ) -> None:
        where = f"lane field '{field}'" if field else "lane front matter"
        Exception.__init__(self, f"{path}:{line}: {where}: {problem}; {fix}")
        self.path = Path(path)
        self.line = line
        self.field = field


class FetchError(MnemaraError):
    """Raised when `role --set-from-url` refuses a URL or the download fails."""

    def __init__(self, message: str, *, url: str):
        super().__init__(f"{url}: {message}")
        self.url = url


class PolicyError(MnemaraError):
    """Raised when permissions.json or a pattern cannot be trusted; the policy fails closed."""

    def __init__(self, message: str, *, path: Path | None = None, field: str | None = None):
        where = str(path) if path else "policy"
        if field:
            where = f"{where}: field '{field}'"
        super().__init__(f"{where}: {message}")
        self.path = path
        self.field = field


class MemoryStoreError(MnemaraError):
    """Raised when a memory store refuses a request or cannot complete it."""

    def __init__(self, message: str, *, path: Path | None = None):
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path


class WikiSlugError(MemoryStoreError):
    """Raised for a wiki page name outside `[a-z0-9-]+(/[a-z0-9-]+)*` or its length caps."""

    def __init__(self, message: str, *, slug: str):
        super().__init__(f"wiki page {slug!r}: {message}")
        self.slug = slug


class EngineUnavailableError(MemoryStoreError):
    """Raised when the search index or the graph cannot be used; notes and the wiki still work.

    `store` is "index" or "graph"; the message says why and what to do.
    """

    def __init__(self, message: str, *, store: str, path: Path | None = None):
        super().__init__(message, path=path)
        self.store = store


class PanelHaltedError(MnemaraError):
    """Raised by a turn asked of a halted panel; the input was not stored or sent.

    `record` is the halt record that stopped the panel; `Session.resume()` lifts the halt.
    """

    def __init__(self, message: str, *, panel: str, record: HaltRecord):
        super().__init__(message)
        self.panel = panel
        self.record = record


class CheckpointError(MnemaraError):
    """Raised when a checkpoint of a panel's files cannot be taken, read or restored
    (runtime/checkpoint/). `path` is the checkpoint store or the file concerned."""

    def __init__(self, message: str, *, path: Path | None = None):
        super().__init__(message)
        self.path = path


class CheckpointNotFoundError(CheckpointError):
    """Raised when no checkpoint has the number asked for; `number` is None when the store
    holds no checkpoint at all."""

    def __init__(self, message: str, *, path: Path | None = None, number: int | None = None):
        super().__init__(message, path=path)
        self.number = number


class DriverError(MnemaraError):
    """Raised when the model driver cannot run a turn."""


class CredentialsError(DriverError):
    """Raised when the CLI has no API key, login or base URL to use."""


class PromptTooLongError(DriverError):
    """Raised when the model service refuses a prompt for its size."""


class ServiceBusyError(DriverError):
    """Raised on 429 / 529 answers; the turn's input is kept so it can be retried."""


class TurnInterruptedError(DriverError):
    """Raised when a turn is stopped before it finished (operator /stop or shutdown)."""


CREDENTIALS_HELP = (
    "No credentials for the model service. Provide one of:\n"
    "  - ANTHROPIC_API_KEY=sk-ant-...        an API key\n"
    "  - a logged-in Claude Code CLI         run `mnemara claude auth login` once\n"
    "  - ANTHROPIC_BASE_URL=http://host:port an Anthropic-compatible endpoint, such as a\n"
    "                                        local model server or the rehearsal model"
)
