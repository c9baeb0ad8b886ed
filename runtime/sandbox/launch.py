"""One sandboxed turn: the gateway, the relay, and a launcher the SDK runs as "the CLI".

The SDK starts `cli_path` with the CLI's arguments. For a sandboxed turn that path is a
small launcher script, written into a private per-turn directory, that runs bubblewrap with
the turn's plan and then the real CLI under the relay. The directory also holds the gateway's
sockets; it is removed when the turn ends (or, after a host killed with -9, by the next
host's start: leftovers.py).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from runtime.errors import MnemaraError
from runtime.policy.context import Containment
from runtime.sandbox.gateway import Gateway, allowed_targets
from runtime.sandbox.leftovers import GATEWAY_DIR, WORK_PREFIX
from runtime.sandbox.placeholders import Placeholders
from runtime.sandbox.plan import Plan, build_plan
from runtime.sandbox.probe import probe
from runtime.sandbox.settings import SandboxSettings

RELAY = Path(__file__).with_name("relay.py")
SYSTEM_PYTHON = Path("/usr/bin/python3")


class SandboxUnavailable(MnemaraError):
    """Raised by `sandbox_for` when the settings require the sandbox and bubblewrap cannot
    build it here; the message says why (the host adds how to run unconfined instead)."""


class AddedReadOnly:
    """Files made read-only inside after the sandbox was made (a role doc a panel switched
    to mid-run), for every turn that starts from now on. One set per sandbox, shared by all
    the drivers of a host, so every panel's next sandbox guards a peer's new role doc too."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._paths: tuple[Path, ...] = ()

    def add(self, path: Path) -> None:
        with self._lock:
            if path not in self._paths:
                self._paths = (*self._paths, path)

    def paths(self) -> tuple[Path, ...]:
        return self._paths


@dataclass(frozen=True)
class Sandbox:
    """What a driver needs to confine its turns: the settings and the machine's facts."""

    settings: SandboxSettings
    bwrap: str
    user_home: Path
    state_home: Path | None = None
    isolate: bool = True  # each command in a nested namespace (isolate.py); probed
    placeholders: Placeholders = field(default_factory=Placeholders, compare=False, repr=False)
    added: AddedReadOnly = field(default_factory=AddedReadOnly, compare=False, repr=False)

    def current(self) -> SandboxSettings:
        """The settings a turn starting now is confined by: with the read-only files added
        since the sandbox was made."""
        known = self.settings.read_only
        extra = tuple(p for p in self.added.paths() if p not in known)
        if not extra:
            return self.settings
        return replace(self.settings, read_only=(*known, *extra))

    def containment(self, cwd: Path) -> Containment:
        """What a turn in `cwd` can do inside, for the policy (runtime/policy/containment.py):
        write its working directory and the `writable` areas, read the `readable` ones, use
        the empty scratch directories plan.py mounts, and reach the listed hosts."""
        s = self.settings
        return Containment.of(
            writable=(cwd, *s.writable),
            readable=s.readable,
            scratch=(Path("/tmp"), Path("/var/tmp"), self.user_home),
            hosts=s.allow_list,
        )

    @contextlib.contextmanager
    def turn(self, *, cli: Path, cwd: Path, env: Mapping[str, str]) -> Iterator[Path]:
        """A launcher path to give the SDK as `cli_path` for one turn."""
        roots = [Path(os.path.realpath(p)) for p in (cwd, *self.settings.writable) if p.is_dir()]
        home = Path(os.path.realpath(self.user_home))
        stand_ins = self.placeholders.held([r for r in roots if r != home])
        with stand_ins, self._launcher(cli=cli, cwd=cwd, env=env) as launcher:
            yield launcher

    @contextlib.contextmanager
    def _launcher(self, *, cli: Path, cwd: Path, env: Mapping[str, str]) -> Iterator[Path]:
        work = Path(tempfile.mkdtemp(prefix=WORK_PREFIX))
        gateway_dir = work / GATEWAY_DIR
        gateway_dir.mkdir()
        gateway: Gateway | None = None
        try:
            shutil.copyfile(RELAY, gateway_dir / RELAY.name)
            plan = build_plan(
                bwrap=self.bwrap,
                cli=cli,
                python=relay_python(),
                relay=RELAY,
                gateway_dir=gateway_dir,
                cwd=cwd,
                env=env,
                settings=self.current(),
                user_home=self.user_home,
                state_home=self.state_home,
                isolate=self.isolate,
            )
            write_files(gateway_dir, plan)
            gateway = open_gateway(gateway_dir, plan)
            launcher = work / "claude"
            launcher.write_text(launcher_script(plan), encoding="utf-8")
            launcher.chmod(0o700)
            yield launcher
        finally:
            if gateway is not None:
                gateway.close()
            shutil.rmtree(work, ignore_errors=True)


def relay_python() -> Path:
    """The system's Python when there is one (already inside), else the one running us."""
    if SYSTEM_PYTHON.exists():
        return SYSTEM_PYTHON
    return Path(os.path.realpath(sys.executable))


def write_files(directory: Path, plan: Plan) -> None:
    """The files the plan binds from the gateway directory (isolate.py's)."""
    for name, (content, mode) in plan.files.items():
        written = directory / name
        written.write_text(content, encoding="utf-8")
        written.chmod(mode)


def open_gateway(directory: Path, plan: Plan) -> Gateway:
    endpoint = plan.endpoint
    model_target = (endpoint.host, endpoint.port)
    allowed = allowed_targets(plan.allowed)
    if not endpoint.plain:
        allowed = allowed | {model_target}
    return Gateway(directory, model=model_target if endpoint.plain else None, allowed=allowed)


def launcher_script(plan: Plan) -> str:
    """The script the SDK starts as the CLI. It runs bubblewrap as its child, not by `exec`:
    bubblewrap's --die-with-parent follows the *thread* that started its parent process, and
    trio starts processes from worker threads that exit after 10 idle seconds, which killed
    a CLI that waited that long for the operator. The shell is single-threaded, so the sandbox
    now dies with the shell (a stop, or a kill of "the CLI"); the relay's tie to the turn's
    gateway (gateway.py) ends it with the host.

    The shell ignores SIGINT, and so does bubblewrap, which inherits that: both are in the
    host's process group, which a terminal's Ctrl-C reaches as a whole. The Ctrl-C is the
    host's, which then stops its turns itself, after their grace; bubblewrap's new session
    keeps the CLI out of the group."""
    return "#!/bin/sh\ntrap '' INT\n" + " ".join(shlex.quote(a) for a in plan.argv) + ' "$@"\n'


def sandbox_for(
    settings: SandboxSettings, *, user_home: Path, state_home: Path | None
) -> Sandbox | None:
    """The sandbox these settings ask for on this machine; None when tools run unconfined.

    Raises SandboxUnavailable when the settings require it and bubblewrap cannot build it.
    """
    if settings.mode == "off":
        return None
    support = probe()
    if support.bwrap is None:
        if settings.mode == "required":
            raise SandboxUnavailable(f"the sandbox is required, but {support.reason}")
        return None
    return Sandbox(settings, support.bwrap, user_home, state_home, isolate=support.nested)
