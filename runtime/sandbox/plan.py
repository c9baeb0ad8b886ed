"""The bubblewrap command line that confines one turn's CLI and everything it runs.

The whole CLI process runs inside, so its file tools (Read, Write, Edit) and every Bash
command meet the same walls, checked by the kernel when a file is opened: a symlink swapped
after our policy decided, or a hard link to a file elsewhere, leads nowhere new.

What the sandbox sees, in mount order (later mounts cover earlier ones):
1. the system, read-only: /usr, /bin, /lib*, /etc (minus its password hashes), /opt;
2. fresh, empty /tmp, /run and HOME (the CLI needs a writable home for its own files), then
   the CLI's own directory and the Python that runs the relay, read-only, wherever they are;
3. the panel's readable areas read-only, its working directory and writable areas, and
   inside them: secrets hidden, startup files and git hooks read-only, mnemara's state and
   every team database hidden, plus what the host names (role docs, the team file, a foreign
   bus), each held in place (guards.py says how);
4. the CLI's own home when the host gave it one (a rehearsal), writable;
5. the gateway's sockets and the relay at /run/mnemara.
Nothing else of the machine exists inside: not the rest of the home directory, not
MNEMARA_HOME, not /var/run's sockets (docker, ssh-agent, gpg-agent).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from runtime.sandbox.gateway import LIFE_SOCKET, MODEL_SOCKET, PROXY_SOCKET
from runtime.sandbox.guards import area_mounts
from runtime.sandbox.isolate import INSIDE as INSIDE_DIR
from runtime.sandbox.isolate import ISOLATE, isolate_script, sandbox_user
from runtime.sandbox.settings import SandboxSettings

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
ETC_SECRETS = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/ssh")
INSIDE = Path(INSIDE_DIR)  # where the gateway's sockets and the relay appear
MODEL_PORT = 18080  # loopback ports inside the sandbox's own network namespace
PROXY_PORT = 18081
DEFAULT_ENDPOINT = "https://api.anthropic.com"
# Variables that point at sockets outside: gone inside, where the sockets are not.
UNSET_VARS = (
    *("SSH_AUTH_SOCK", "GPG_AGENT_INFO", "DBUS_SESSION_BUS_ADDRESS", "DOCKER_HOST"),
    *("XDG_RUNTIME_DIR", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"),
)


@dataclass(frozen=True)
class Endpoint:
    """The model endpoint a turn's CLI was told to use, and how it reaches it from inside."""

    url: str
    host: str
    port: int
    plain: bool  # http: carried straight through model.sock; https: through the proxy

    @classmethod
    def of(cls, env: Mapping[str, str]) -> Endpoint:
        url = env.get("ANTHROPIC_BASE_URL") or DEFAULT_ENDPOINT
        parts = urlsplit(url)
        plain = parts.scheme == "http"
        port = parts.port or (80 if plain else 443)
        return cls(url, (parts.hostname or "").lower(), port, plain)

    def inside_url(self) -> str:
        """The base URL the CLI uses inside: plain HTTP goes to the relay's model port."""
        if not self.plain:
            return self.url
        parts = urlsplit(self.url)
        return urlunsplit(("http", f"127.0.0.1:{MODEL_PORT}", parts.path, parts.query, ""))


@dataclass(frozen=True)
class Plan:
    argv: list[str]  # bwrap ... -- python relay ... -- (the CLI's arguments follow)
    endpoint: Endpoint
    allowed: tuple[str, ...]  # what the proxy lets through besides the model endpoint
    # Files the launcher writes before it starts: name (in the gateway directory, which is
    # /run/mnemara inside) -> (content, mode).
    files: dict[str, tuple[str, int]]


def build_plan(
    *,
    bwrap: str,
    cli: Path,
    python: Path,
    relay: Path,
    gateway_dir: Path,
    cwd: Path,
    env: Mapping[str, str],
    settings: SandboxSettings,
    user_home: Path,
    state_home: Path | None,
    isolate: bool = True,
    host_uid: int | None = None,
) -> Plan:
    """The command line for one turn; pure apart from checking which paths exist.

    `isolate`: run each command of the CLI's in a nested namespace (isolate.py); `host_uid`
    (default: ours) decides whether the sandbox needs a user of its own (root's does)."""
    endpoint = Endpoint.of(env)
    cli_home = Path(env["HOME"]) if env.get("HOME") else user_home
    files: dict[str, tuple[str, int]] = {}
    # --die-with-parent ties it to the launcher shell (launch.py says why not to the host's
    # thread); the relay's tie to the turn's gateway (`life=`) ends it with the host.
    args: list[str] = [bwrap, "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    args += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net"]
    args += ["--unshare-cgroup-try"]
    args += _system()
    if isolate:
        uid = os.getuid() if host_uid is None else host_uid
        args += sandbox_user(uid, gateway_dir, files)
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/run"]
    args += ["--tmpfs", "/var/tmp", "--tmpfs", str(user_home)]
    if cli_home != user_home:
        args += ["--tmpfs", str(cli_home)]
    args += _programs(cli, python)
    readable = [_real(p) for p in settings.readable if p.exists()]
    writable = [_real(p) for p in (cwd, *settings.writable) if p.exists()]
    args += area_mounts(readable, writable, settings, user_home, state_home)
    if cli_home != user_home:
        cli_home.mkdir(parents=True, exist_ok=True)
        args += ["--bind", str(cli_home), str(cli_home)]
    else:
        args += _credentials(env, user_home)
    args += ["--ro-bind", str(gateway_dir), str(INSIDE)]
    args += _environment(endpoint, settings)
    if isolate:
        files[ISOLATE] = (isolate_script(bwrap, network_off=settings.network == "off"), 0o755)
        args += ["--setenv", "CLAUDE_CODE_SHELL_PREFIX", str(INSIDE / ISOLATE)]
    args += ["--chdir", str(_real(cwd))]
    routes = _routes(endpoint, settings)
    argv = [*args, "--", str(python), "-I", "-S", str(INSIDE / relay.name), *routes, "--", str(cli)]
    return Plan(argv, endpoint, settings.allow_list, files)


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _depth(path: Path) -> int:
    return len(path.parts)


def _system() -> list[str]:
    args: list[str] = []
    for name in SYSTEM_DIRS:
        path = Path(name)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), name]
        elif path.is_dir():
            args += ["--ro-bind", name, name]
    for secret in ETC_SECRETS:
        if Path(secret).is_dir():
            args += ["--tmpfs", secret]
        elif Path(secret).exists():
            args += ["--ro-bind", "/dev/null", secret]
    return args


def _programs(cli: Path, python: Path) -> list[str]:
    """The CLI's directory and the relay's Python, read-only, when they live outside the
    system dirs: a virtualenv or pyenv under the home directory or /tmp, which the sandbox
    has just replaced with empty ones (so these mounts come after those)."""
    args: list[str] = []
    extra = {_real(cli).parent, _real(python).parent.parent}
    for path in sorted(extra, key=_depth):
        if not any(path.is_relative_to(d) for d in SYSTEM_DIRS):
            args += ["--ro-bind", str(path), str(path)]
    return args


def _credentials(env: Mapping[str, str], user_home: Path) -> list[str]:
    """A live CLI's login, read-only: its OAuth file, when there is one and no API key."""
    if env.get("ANTHROPIC_API_KEY"):
        return []
    config = Path(env.get("CLAUDE_CONFIG_DIR") or user_home / ".claude")
    found = config / ".credentials.json"
    if not found.is_file():
        return []
    return ["--ro-bind", str(found), str(found)]


def _environment(endpoint: Endpoint, settings: SandboxSettings) -> list[str]:
    args: list[str] = []
    for name in UNSET_VARS:
        args += ["--unsetenv", name]
    args += ["--setenv", "ANTHROPIC_BASE_URL", endpoint.inside_url()]
    args += ["--setenv", "NO_PROXY", "127.0.0.1,localhost"]
    if not endpoint.plain or settings.allow_list:
        proxy = f"http://127.0.0.1:{PROXY_PORT}"
        args += ["--setenv", "HTTPS_PROXY", proxy, "--setenv", "https_proxy", proxy]
    return args


def _routes(endpoint: Endpoint, settings: SandboxSettings) -> list[str]:
    """The relay's routes; with network "off", only the CLI process may use them."""
    flag = ":cli" if settings.network == "off" else ""
    routes = [f"life={INSIDE / LIFE_SOCKET}", f"{PROXY_PORT}={INSIDE / PROXY_SOCKET}{flag}"]
    if endpoint.plain:
        routes.append(f"{MODEL_PORT}={INSIDE / MODEL_SOCKET}{flag}")
    return routes
