"""The watchdog: digests of the team's activity, the watchdog panel's tools, the slope trigger.

Pure cores (digest, slope) and the tool specs; the host (panels/host) runs them.
"""

from panels.watchdog.digest import Activity, DigestSettings, alerts, build_digest, digest_key
from panels.watchdog.slope import SlopeSettings, TurnSpend, budget_slope
from panels.watchdog.tools import WatchdogHost, watchdog_tools

__all__ = [
    "Activity",
    "DigestSettings",
    "SlopeSettings",
    "TurnSpend",
    "WatchdogHost",
    "alerts",
    "budget_slope",
    "build_digest",
    "digest_key",
    "watchdog_tools",
]
