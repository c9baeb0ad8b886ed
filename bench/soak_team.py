"""The soak's workspace: its directories, the team file, the rehearsal script, the instances.

Everything lives under one fresh temp dir: `home/` (MNEMARA_HOME of the host children),
`user-home/` (their HOME), `team.toml` (+ `rehearsal.toml` and `roles/`), `work/`, the
driver's `marks` file and `host.out` (what every life printed). The instances are made by
the host's own `ensure_instance` from the team file before the first life, then given
window limits that never trim, so the window rows keep every consumed id. The panels are
the protocol's (soak_protocol.py): a producer and two engineers, or a ring. With
`--recreate` the team's bus starts as a foreign table (soak_recreate.py), so the host runs
it in compatibility mode, with a sidecar.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from soak_driver import ENGINEERS, FAULTS, MARKS, PRODUCER, SENDS_TABLE, Faults
from soak_protocol import PRODUCER_TEAM, Protocol
from soak_recreate import make_foreign_bus

from panels.host.turns.instances import ensure_instance
from panels.team import TeamSpec, load_team
from runtime.instance.config import load_config, save_config
from runtime.instance.home import InstancePaths

TEAM = "soak"
# Far above anything a soak reaches: no trim, so consumed_ids stay in the window rows.
WINDOW_TURNS = 1_000_000
WINDOW_TOKENS = 1_000_000_000

ROLES = {
    "producer.md": "You are the producer of the soak team. Forward each task to an engineer.\n",
    "engineer.md": "You are an engineer of the soak team. Report each task as done.\n",
}


@dataclass(frozen=True)
class Workspace:
    root: Path
    home: Path
    user_home: Path
    team_file: Path
    marks: Path
    log: Path
    team: TeamSpec

    @property
    def state_dir(self) -> Path:
        return self.team.state_dir

    def turns(self) -> dict[str, Path]:
        return {
            spec.name: InstancePaths.for_name(spec.instance, self.home).turns
            for spec in self.team.panels
        }


def team_toml(*, cli: bool, protocol: Protocol = PRODUCER_TEAM) -> str:
    lines = ["[team]", f'name = "{TEAM}"', 'workdir = "work"', "max_concurrent_turns = 2"]
    if cli:
        lines.append('rehearsal = "rehearsal.toml"')
    # Off: the protocol is a ping-pong by design (a task, its reply, no world change), which
    # the team loop rules halt after a few rounds, and hundreds of ops in a minute or two
    # outrun their rate bound; the soak is about delivery under kills, not loop detection.
    lines += ["[team.loops]", "enabled = false", *SENDS_TABLE]
    # One peer message a turn with the CLI (operator input is still claimed up to 10 at a
    # time); the scripted drivers take what the host gives them: no more than one turn may
    # answer, operator input included (its own bound, issue 30; the soak bursts past it).
    batch = ["[panels.batch]", "enabled = false"] if cli else []
    if protocol.name == "ring":
        return "\n".join(lines + ring_panels(protocol.panels)) + "\n"
    lines += [
        "",
        "[[panels]]",
        f'name = "{PRODUCER}"',
        'role = "roles/producer.md"',
        'kind = "producer"',
        f"listens_to = {list(ENGINEERS)!r}".replace("'", '"'),
        "runtime_sentinel = false",
        *batch,
    ]
    for name in ENGINEERS:
        lines += [
            "",
            "[[panels]]",
            f'name = "{name}"',
            'role = "roles/engineer.md"',
            f'listens_to = ["{PRODUCER}"]',
            "runtime_sentinel = false",
        ]
        if not cli:
            lines += batch
    return "\n".join(lines) + "\n"


def ring_panels(names: tuple[str, ...]) -> list[str]:
    """Each panel of the ring listens to the one before it (ring0 to the last)."""
    lines: list[str] = []
    for i, name in enumerate(names):
        lines += [
            "",
            "[[panels]]",
            f'name = "{name}"',
            'role = "roles/engineer.md"' if i else 'role = "roles/producer.md"',
            *([] if i else ['kind = "producer"']),
            f'listens_to = ["{names[i - 1]}"]',
            "runtime_sentinel = false",
        ]
    return lines


def rehearsal_toml(messages: int) -> str:
    """The model of `--cli`: static rules matched on the request's text.

    A rule's `user_text_contains` searches the whole user message, older turns' text
    included, so one rule per op, newest first and used any number of times: a turn
    forwards the newest op it holds, which is always in its own input (operator input is
    claimed in id order). Rules for tool results come first: that request has no op text.
    """
    out = [
        "# Written by bench/soak.py --cli.",
        f"[panels.{PRODUCER}]",
        'fallback_text = "Nothing to forward."',
        "",
        f"[[panels.{PRODUCER}.replies]]",
        'when = { tool_result_contains = "" }',
        'times = "always"',
        'text = "Forwarded."',
    ]
    for n in reversed(range(messages)):
        engineer = ENGINEERS[n % 2]
        out += [
            "",
            f"[[panels.{PRODUCER}.replies]]",
            f'when = {{ user_text_contains = "op-{n} for {engineer}" }}',
            'times = "always"',
            "content = [",
            f'  {{ tool_use = "mcp__mnemara__send_message", '
            f'input = {{ to = "{engineer}", text = "task op-{n}" }} }},',
            "]",
        ]
    for name in ENGINEERS:
        out += ["", f"[panels.{name}]", 'fallback_text = "Noted."']
    return "\n".join(out) + "\n"


def lay_out(
    root: Path, team_text: str, extra: dict[str, str] | None = None
) -> tuple[Path, Path, Path, TeamSpec]:
    """One host's directory: its homes, role docs, team file (and `extra` files beside it),
    and its panels' instances with window limits that never trim, so every consumed id
    stays in the window rows. Returns (home, user home, team file, team)."""
    home, user_home = root / "home", root / "user-home"
    for directory in (home, user_home, root / "work", root / "roles"):
        directory.mkdir(parents=True)
    for name, text in ROLES.items():
        (root / "roles" / name).write_text(text)
    for name, text in (extra or {}).items():
        (root / name).write_text(text)
    team_file = root / "team.toml"
    team_file.write_text(team_text)
    team = load_team(team_file, home=home)
    for spec in team.panels:
        paths, _ = ensure_instance(spec, home)
        config = load_config(paths.config)
        config.max_window_turns = WINDOW_TURNS
        config.max_window_tokens = WINDOW_TOKENS
        save_config(paths.config, config)
    team.state_dir.mkdir(parents=True, exist_ok=True)
    return home, user_home, team_file, team


def make_workspace(
    root: Path,
    *,
    cli: bool,
    messages: int,
    faults: Faults | None = None,
    protocol: Protocol = PRODUCER_TEAM,
    foreign_bus: bool = False,
) -> Workspace:
    extra = {"rehearsal.toml": rehearsal_toml(messages)} if cli else {}
    if faults is not None and not cli:
        extra[FAULTS] = faults.to_json()
    home, user_home, team_file, team = lay_out(root, team_toml(cli=cli, protocol=protocol), extra)
    if foreign_bus:
        make_foreign_bus(Path(team.bus))
    return Workspace(root, home, user_home, team_file, root / MARKS, root / "host.out", team)
