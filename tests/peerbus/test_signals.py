"""The signal directory: names that cannot escape it, files made as the bus's own."""

from __future__ import annotations

from pathlib import Path

from peerbus.sqlite.signals import Signals, signal_name

ODD_NAMES = [
    "../../escaped",
    "a/b/c",
    "..",
    "/etc/passwd",
    "\u202eevil\u0301\U0001f600 名前",
    "x" * 5000,
    "\udcff lone surrogate",
]


def test_odd_recipient_names_stay_inside_the_signal_directory(tmp_path: Path) -> None:
    directory = tmp_path / "deep" / "bus.sqlite.signals"
    directory.parent.mkdir()
    signals = Signals(directory)
    before = set(tmp_path.rglob("*"))
    signals.touch([*ODD_NAMES, None])
    watcher = signals.watcher()
    if watcher is not None:
        try:
            assert all(watcher.add(name) for name in ODD_NAMES)
        finally:
            watcher.close()
    made = set(tmp_path.rglob("*")) - before
    assert made == {directory, *(signals.path(n) for n in [*ODD_NAMES, None])}
    assert all(p.parent == directory for p in made - {directory})
    assert len({signal_name(n) for n in ODD_NAMES}) == len(ODD_NAMES)
    assert {len(signal_name(n)) for n in ODD_NAMES} == {42}
