"""Ways out of a panel's sandbox, tried through the real CLI: how many land. Issue 28.

    .venv/bin/python bench/escapes.py [--json] [--as-user NAME]

One rehearsed turn per scenario runs `python3 probe.py` inside the sandbox of a default
panel (network "off"), as a test file an agent wrote would. The probe tries every way out
below and prints what each did; the host then looks at its own files. An escape has landed
when the probe reached what it must not (a socket, another process, a secret) or a file on
the machine changed that the sandbox must keep (judged on the machine, not by the probe).

Scenarios: "work" (the working directory is a git repository holding role docs, the team
file, a bus in a folder of its own and mnemara's state; a second writable area is not a
repository; a readable area is shared) and "home" (the working directory is the home
directory). The sandbox is the one the host builds from the scenario's team file
(panels/host/turns/confine.py): of its three panels, two take their role docs from the team
file and one from its own instance, so what the host keeps read-only is what is tried. As
root, `--as-user nobody` runs the same as an unprivileged user (bubblewrap works differently
for each); without `--as-user` the bench runs as itself and, when that is root, again as
`nobody`.

Prints one line per attempt, then `escapes landed: N of K` with the load average.
`--control` runs the same probe unconfined (pattern-allowed), to show that the attempts are
real: there, most of them land.
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from escape_probes import HOME_PROBE_CODE, PROBE_CODE  # noqa: E402

INSTANCE = "eng"
PROBE = "probe.py"
SCRIPT = f"""
[[panels.{INSTANCE}.replies]]
when = {{ user_text_contains = "go" }}
content = [ {{ tool_use = "Bash", input = {{ command = "python3 {PROBE}" }} }} ]

[[panels.{INSTANCE}.replies]]
when = {{ tool_result_contains = "" }}
text = "finished"
"""
ROLE = "---\ncommands: ['python3 probe.py']\n---\n# Role\nRun the probe.\n"
FSMONITOR = "[core]\n\tfsmonitor = touch /tmp/mnemara-escaped\n"

# The team the scenario runs in: its sandbox is built by the host's own rules from this file
# (panels/host/turns/confine.py), so what the host keeps read-only or hidden is what is tried.
TEAM = """[team]
name = "escapes"
sandbox = "required"
readable = ["{shared}"]
writable = ["{extra}"]
{bus}"""
TEAM_PANELS = """
[[panels]]
name = "eng"
role = "roles/eng.md"

[[panels]]
name = "qa"
role = "roles/qa.md"

[[panels]]
name = "ops"
"""

HOME_PANELS = """
[[panels]]
name = "eng"
"""


@dataclass
class Outcome:
    name: str
    landed: bool
    said: str


@dataclass
class World:
    """The machine a scenario runs on: directories made for it, and what must not change."""

    base: Path
    home: Path
    work: Path
    outside: Path
    extra: Path
    shared: Path
    state: Path
    team_file: Path
    listener: int
    before: dict[Path, bytes | None]


def snapshot(paths: list[Path]) -> dict[Path, bytes | None]:
    return {p: (p.read_bytes() if p.is_file() else None) for p in paths}


def make_world(base: Path, listener: int, *, at_home: bool) -> World:
    home = base / "home"
    work = home if at_home else home / "work"
    outside, extra, shared = base / "outside", base / "extra", base / "shared"
    for d in (work, outside, extra, shared, home / ".ssh", home / ".config" / "editor"):
        d.mkdir(parents=True, exist_ok=True)
    (home / ".local" / "share").mkdir(parents=True, exist_ok=True)
    (home / ".bashrc").write_text("# mine\n", encoding="utf-8")
    (home / ".ssh" / "id_rsa").write_text("SECRET KEY\n", encoding="utf-8")
    (outside / "secret.txt").write_text("outside\n", encoding="utf-8")
    state = work / ".mnemara"
    panels = HOME_PANELS
    if not at_home:
        subprocess.run(["git", "init", "-q", str(work)], check=True)
        (work / "roles").mkdir()
        for name in ("eng", "qa", "ops"):
            (work / "roles" / f"{name}.md").write_text(ROLE, encoding="utf-8")
        (work / "data").mkdir()
        (work / "data" / "bus.sqlite").write_text("BUS CONTENT", encoding="utf-8")
        (work / "fsmonitor.txt").write_text(FSMONITOR, encoding="utf-8")
        # eng and qa take their role docs from the team file; ops from its own instance
        panels = TEAM_PANELS
    team_file = (base if at_home else work) / "team.toml"
    team_file.write_text(
        TEAM.format(shared=shared, extra=extra, bus="" if at_home else 'bus = "data/bus.sqlite"\n')
        + panels,
        encoding="utf-8",
    )
    guarded = [
        home / ".bashrc", work / ".git" / "config", work / "team.toml",
        work / "data" / "bus.sqlite",
        *(work / "roles" / f"{name}.md" for name in ("eng", "qa", "ops")),
    ]  # fmt: skip
    return World(
        base, home, work, outside, extra, shared, state, team_file, listener, snapshot(guarded)
    )


def judge_on_disk(world: World) -> dict[str, tuple[bool, str]]:
    """What landed on the machine, by name (these override what the probe said)."""
    w, home = world.work, world.home
    changed = {p for p, was in world.before.items() if snapshot([p])[p] != was}

    def made(*paths: Path) -> bool:
        return any(p.exists() or p.is_symlink() for p in paths)

    git_dirs = (
        [w / ".git-old", w / "evil" / "config"] if (w / ".git" / "commondir").exists() else []
    )
    return {
        "outside_write": (made(world.outside / "planted"), "outside/planted"),
        "home_startup_file": (home / ".bashrc" in changed, "~/.bashrc"),
        "readable_area_write": (made(world.shared / "planted"), "shared/planted"),
        "git_config": (w / ".git" / "config" in changed, ".git/config"),
        "git_hook": (
            made(*(w / d / "hooks" / "post-checkout" for d in (".git", ".git-old"))),
            ".git/hooks/post-checkout",
        ),
        "git_rename": (made(w / ".git-old") or w / ".git" / "config" in changed, ".git moved"),
        "git_commondir": (made(w / ".git" / "commondir") or bool(git_dirs), ".git/commondir"),
        "role_doc_write": (w / "roles" / "eng.md" in changed, "roles/eng.md"),
        "peer_role_doc_write": (w / "roles" / "qa.md" in changed, "roles/qa.md"),
        "instance_role_doc_write": (w / "roles" / "ops.md" in changed, "roles/ops.md"),
        "role_doc_via_symlink": (w / "roles" / "eng.md" in changed, "roles/eng.md"),
        "role_doc_parent_rename": (
            made(w / "roles-old") or w / "roles" / "eng.md" in changed,
            "roles moved",
        ),
        "team_file_write": (w / "team.toml" in changed, "team.toml"),
        "envrc_create": (made(w / ".envrc"), ".envrc"),
        "git_init_new_area": (made(world.extra / ".git"), "extra/.git"),
        "bus_parent_rename": (
            made(w / "data-old") or w / "data" / "bus.sqlite" in changed,
            "data moved",
        ),
        "state_rename": (made(w / "state-old") or not world.state.is_dir(), ".mnemara moved"),
        "hard_link_out": (made(w / "linked.txt"), "linked.txt"),
        "symlink_out": (made(world.outside / "via-link"), "outside/via-link"),
    }


def judge_home_on_disk(world: World) -> dict[str, tuple[bool, str]]:
    home = world.home
    return {
        "home_new_zshrc": ((home / ".zshrc").exists(), "~/.zshrc"),
        "home_new_gitconfig": ((home / ".gitconfig").exists(), "~/.gitconfig"),
        "home_new_ssh": ((home / ".ssh" / "authorized_keys").exists(), "~/.ssh/authorized_keys"),
        "home_autostart": ((home / ".config" / "autostart").exists(), "~/.config/autostart"),
        "home_local_bin": ((home / ".local" / "bin").exists(), "~/.local/bin"),
        "home_config_rename": ((home / ".config-old").exists(), "~/.config moved"),
        "home_local_rename": ((home / ".local-old").exists(), "~/.local moved"),
    }


@contextmanager
def listening() -> Iterator[int]:
    """A TCP listener on the machine's loopback, standing for "the network"."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
                conn.close()
            except OSError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        server.close()


async def run_probe(
    world: World, code: str, args: list[str], confined: bool = True
) -> dict[str, str]:
    """One turn through the real CLI that runs the probe, sandboxed (or, for the control,
    unconfined with the probe pattern-allowed); what the probe printed."""
    from panels.host.turns.confine import guarded_settings
    from panels.team import parse_team
    from runtime.claude import ClaudeDriver
    from runtime.instance.config import (
        InstanceConfig,
        ToolPolicy,
        default_tool_policies,
        save_config,
    )
    from runtime.instance.home import InstancePaths
    from runtime.rehearsal import open_rehearsal_server, parse_script
    from runtime.sandbox import Sandbox, probe
    from runtime.store import TurnStore
    from runtime.turn.driver import ToolResult
    from runtime.turn.open import open_session

    support = probe()
    if support.bwrap is None:
        raise SystemExit(f"escapes: cannot run, {support.reason}")
    mnemara = world.state
    paths = InstancePaths.for_name(INSTANCE, mnemara)
    paths.root.mkdir(parents=True, exist_ok=True)
    paths.role.write_text(ROLE, encoding="utf-8")
    bash = ToolPolicy(tool="Bash", mode="ask", allowed_patterns=(rf"python3 {PROBE}",))
    others = tuple(p for p in default_tool_policies() if p.tool != "Bash")
    config = InstanceConfig(role_doc_path=str(paths.role), allowed_tools=(bash, *others))
    save_config(paths.config, config)
    TurnStore.open(paths.turns).close()
    (world.work / PROBE).write_text(code, encoding="utf-8")
    if (world.work / "roles" / "ops.md").is_file():
        ops = InstancePaths.for_name("ops", mnemara)
        ops.root.mkdir(parents=True, exist_ok=True)
        save_config(ops.config, InstanceConfig(role_doc_path=str(world.work / "roles" / "ops.md")))
    team = parse_team(world.team_file.read_text(encoding="utf-8"), source=world.team_file)
    settings = guarded_settings(team, mnemara)
    cli_home = world.base / "cli-home"
    cli_home.mkdir(exist_ok=True)
    async with open_rehearsal_server(parse_script(SCRIPT)) as server:
        env = {
            "ANTHROPIC_BASE_URL": server.base_url_for(INSTANCE),
            "ANTHROPIC_API_KEY": "sk-ant-rehearsal",
            "HOME": str(cli_home),
            "CLAUDE_CODE_MAX_RETRIES": "0",
        }
        sandbox = Sandbox(settings, support.bwrap, world.home, mnemara) if confined else None
        driver = ClaudeDriver(env=env, sandbox=sandbox)
        async with open_session(INSTANCE, driver=driver, cwd=world.work, home=mnemara) as session:
            events = [e async for e in session.turn("go")]
    results = [e for e in events if isinstance(e, ToolResult)]
    if len(results) != 1:
        raise RuntimeError(f"the probe did not run: {events}")
    out = results[0].content
    line = next((x for x in out.splitlines() if x.startswith("{")), None)
    if line is None:
        raise RuntimeError(f"the probe printed no result: {out[:400]}")
    said: dict[str, str] = json.loads(line)
    return said


def outcomes(said: dict[str, str], on_disk: dict[str, tuple[bool, str]]) -> list[Outcome]:
    found = []
    for name, text in said.items():
        if name in on_disk:
            landed, where = on_disk[name]
            found.append(Outcome(name, landed, f"{where} {'changed' if landed else 'kept'}"))
        else:
            found.append(Outcome(name, text.startswith("ok"), text))
    return found


def run_all(base: Path, confined: bool = True) -> list[Outcome]:
    import anyio

    found: list[Outcome] = []
    with listening() as listener:
        world = make_world(base / "work-scenario", listener, at_home=False)
        args = [str(world.work), str(world.home), str(world.outside), str(world.extra)]
        args += [str(world.shared), str(listener)]
        code = PROBE_CODE.replace("W, HOME, OUT, EXTRA, SHARED = sys.argv[1:6]", _assign(args))
        code = code.replace("LISTENER = int(sys.argv[6])", f"LISTENER = {listener}")
        os.environ["HOME"] = str(world.home)
        said = anyio.run(run_probe, world, code, args, confined)
        found += outcomes(said, judge_on_disk(world))
        home_world = make_world(base / "home-scenario", listener, at_home=True)
        os.environ["HOME"] = str(home_world.home)
        said = anyio.run(run_probe, home_world, HOME_PROBE_CODE, [], confined)
        found += outcomes(said, judge_home_on_disk(home_world))
    return found


def _assign(args: list[str]) -> str:
    return "W, HOME, OUT, EXTRA, SHARED = " + ", ".join(repr(a) for a in args[:5])


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"(load {one:.2f} / {five:.2f})"


def as_user(name: str, emit_json: bool) -> list[Outcome]:
    """The same bench run by `name` (from root), in a directory of its own; its outcomes."""
    try:
        user = pwd.getpwnam(name)
    except KeyError:
        raise SystemExit(f"escapes: no user {name!r} here") from None
    base = Path(tempfile.mkdtemp(prefix="mnemara-escapes-"))
    os.chown(base, user.pw_uid, user.pw_gid)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(base), "LANG": "C.UTF-8"}
    python, path = python_for(user.pw_uid)
    env["PYTHONPATH"] = os.pathsep.join(path)
    command = ["runuser", "-u", name, "--", python, str(Path(__file__).resolve())]
    command += ["--json", "--here", str(base)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    if done.returncode != 0:
        raise SystemExit(f"escapes as {name} failed:\n{done.stderr[-3000:]}")
    rows = json.loads(done.stdout.strip().splitlines()[-1])
    return [Outcome(**row) for row in rows]


def python_for(uid: int) -> tuple[str, list[str]]:
    """An interpreter `uid` may run with this one's packages: this one when it can reach
    it, else the system's of the same version (a pyenv under root's home is out of reach)."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    packages = [str(ROOT), *(p for p in sys.path if p.endswith("site-packages"))]
    for needed in packages:
        if not _reachable(Path(needed), uid):
            raise Unreachable(f"{needed} is not open to other users, so uid {uid} cannot run")
    for candidate in (sys.executable, f"/usr/bin/{version}", f"/usr/local/bin/{version}"):
        if _reachable(Path(candidate), uid):
            return candidate, packages
    raise Unreachable(f"no {version} that uid {uid} can run; install one under /usr")


class Unreachable(SystemExit):
    """This checkout or its interpreter cannot be reached by the other user."""


def _reachable(path: Path, uid: int) -> bool:
    """Whether `path` and every directory on the way to it let others through (a rough
    check that does not need to switch users)."""
    real = Path(os.path.realpath(path))
    if not real.exists():
        return False
    return all(os.stat(d).st_mode & 0o001 for d in real.parents) and bool(
        os.stat(real).st_mode & 0o001
    )


def report(title: str, found: list[Outcome], *, show: Callable[[str], None] = print) -> int:
    landed = [o for o in found if o.landed]
    show(f"-- {title}")
    for o in found:
        show(f"  {'LANDED ' if o.landed else 'held   '} {o.name:<24} {o.said}")
    show(f"escapes landed ({title}): {len(landed)} of {len(found)} {load()}")
    return len(landed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the outcomes as JSON only")
    parser.add_argument("--as-user", metavar="NAME", help="run as this user (from root)")
    parser.add_argument(
        "--control",
        action="store_true",
        help="run the probe unconfined, pattern-allowed: what lands without the sandbox",
    )
    parser.add_argument("--here", type=Path, help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.as_user:
        found = as_user(opts.as_user, opts.json)
        sys.exit(1 if report(f"as {opts.as_user}", found) else 0)
    base = opts.here or Path(tempfile.mkdtemp(prefix="mnemara-escapes-"))
    try:
        found = run_all(base, confined=not opts.control)
    finally:
        if opts.here is None:
            shutil.rmtree(base, ignore_errors=True)
    if opts.json:
        print(json.dumps([o.__dict__ for o in found]))
        return
    me = pwd.getpwuid(os.getuid()).pw_name
    if opts.control:
        report(f"control: unconfined, as {me}", found)
        return
    landed = report(f"as {me}", found)
    if os.getuid() == 0:
        landed += report("as nobody", as_user("nobody", False))
    print(f"escapes landed: {landed} of {len(found) * (2 if os.getuid() == 0 else 1)} {load()}")
    sys.exit(1 if landed else 0)


if __name__ == "__main__":
    main()
