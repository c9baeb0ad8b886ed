"""An alert as a desktop notification: `notify-send`, where a desktop session exists.

A desktop exists when DISPLAY or WAYLAND_DISPLAY is set and `notify-send` is on PATH
(`find_notifier`, pure over the environment it is given). `notify` runs it with a timeout
(a notification daemon that hangs must not hold the alerts back) and answers None when it
worked, else one line saying why not.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Mapping

import anyio

TIMEOUT = 5.0


def find_notifier(
    env: Mapping[str, str], which: Callable[[str], str | None] = shutil.which
) -> str | None:
    """The path of notify-send when there is a desktop to show a notification on, else None."""
    if not (env.get("DISPLAY") or env.get("WAYLAND_DISPLAY")):
        return None
    return which("notify-send")


def command(notifier: str, title: str, text: str) -> list[str]:
    # "--" ends the options: a text starting with "-" is shown, not parsed.
    return [notifier, "--app-name=mnemara", "--", title, text]


async def notify(notifier: str, title: str, text: str) -> str | None:
    failed = f"{notifier} did not show an alert"
    with anyio.move_on_after(TIMEOUT):
        try:
            done = await anyio.run_process(
                command(notifier, title, text), check=False, stdin=subprocess.DEVNULL
            )
        except OSError as exc:
            return f"{failed} ({exc.strerror or exc})"
        if done.returncode == 0:
            return None
        said = done.stderr.decode(errors="replace").strip().splitlines()
        return f"{failed} (exit {done.returncode}{': ' + said[0] if said else ''})"
    return f"{failed} (no exit within {TIMEOUT:g} s)"
