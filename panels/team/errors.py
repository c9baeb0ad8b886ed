"""The team file's one error, `TeamFileError`, and the `Problem`s it carries.

Both are defined in panels/errors.py with the rest of the application's errors:

PanelsError (panels/errors.py), and ConfigError (runtime/errors.py)
└── TeamFileError   a team file cannot be read, or values in it are invalid; also raised
                    when a panel's overrides do not fit its instance (`merge_limits`)

A team file is checked whole, so one error carries every problem found, each with the file,
the line (when known) and the field; the message lists them one per line in file order.
"""

from __future__ import annotations

from panels.errors import Problem, TeamFileError

__all__ = ["Problem", "TeamFileError"]
