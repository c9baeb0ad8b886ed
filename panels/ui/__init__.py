"""The split-pane dashboard: a separate asyncio process that reads host.sqlite and writes verbs.

It attaches to a host only through the host's database file: it tails the event log and the
panel status rows (tail.py) and queues verbs in the control table (commands.py). It never
talks to an agent. `make_app` (app.py) builds the app for the CLI and the tests.
"""

from panels.ui.app import DashboardApp, make_app

__all__ = ["DashboardApp", "make_app"]
