"""The restart policy: after a panel fails, restart it after a back-off, or give up. Pure.

A failure is remembered with when it happened and how long the panel had run. The delay
doubles with each failure in a row (`base_delay`, `factor`, capped at `max_delay`); a life
that lasted `healthy_after` seconds ends the streak, so a panel that fails once a day is
restarted at once every time. More than `max_failures` failures within `window` seconds
means the panel fails for a reason a restart will not fix: the host gives up on it, records
why, and the other panels go on. A failure known to be permanent (a corrupt store or policy
file, an invalid config: the supervisor says which) is given up at once: restarting every
few seconds would only repeat the same error.

A failure that a poison message caused (its turn held a message since dead-lettered as
poison, see poison.py) is forgiven: it counts neither toward giving up nor toward the
back-off, so a panel is never given up because of one message.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class RestartPolicy:
    base_delay: float = 1.0
    factor: float = 2.0
    max_delay: float = 60.0
    max_failures: int = 5
    window: float = 600.0
    healthy_after: float = 120.0

    def __post_init__(self) -> None:
        if self.base_delay < 0 or self.max_delay < self.base_delay:
            raise ValueError("need 0 <= base_delay <= max_delay")
        if self.factor < 1 or self.max_failures < 1 or self.window <= 0:
            raise ValueError("need factor >= 1, max_failures >= 1 and window > 0")


@dataclass(frozen=True)
class Failure:
    """One failed life of a panel."""

    at: float  # when it failed (host clock)
    ran_for: float  # how long that life had run
    error: str
    permanent: bool = False  # a restart cannot fix it (the file it names must be fixed)
    # The bus ids of the turn that failed, when the life ended on a turn's own failure.
    messages: frozenset[int] = frozenset()


@dataclass(frozen=True)
class Restart:
    delay: float
    streak: int  # failures in a row, this one included


@dataclass(frozen=True)
class GiveUp:
    reason: str


def streak(failures: Sequence[Failure], healthy_after: float) -> int:
    """Failures in a row at the end of `failures`: a healthy life breaks the run."""
    count = 0
    for failure in reversed(failures):
        count += 1
        if failure.ran_for >= healthy_after:
            break
    return count


def decide(
    policy: RestartPolicy,
    failures: Sequence[Failure],
    now: float,
    poisoned: Collection[int] = frozenset(),
) -> Restart | GiveUp:
    """What to do after the last of `failures` (oldest first, at least one). Failures whose
    turn held a message of `poisoned` (dead-lettered as poison) are left out."""
    if not failures:
        raise ValueError("decide() needs the failure that just happened")
    if poisoned:
        if failures[-1].messages & set(poisoned):
            return Restart(0.0, 0)  # the message is gone: the panel goes on at once
        failures = [f for f in failures if not f.messages & set(poisoned)]
    if failures[-1].permanent:
        return GiveUp(f"{failures[-1].error}; a restart cannot fix this: fix it, then start again")
    recent = [f for f in failures if now - f.at <= policy.window]
    if len(recent) > policy.max_failures:
        last = failures[-1].error
        return GiveUp(
            f"failed {len(recent)} times in {policy.window:g}s (last: {last}); "
            "fix the cause, then resume the panel"
        )
    run = streak(failures, policy.healthy_after)
    if failures[-1].ran_for >= policy.healthy_after:
        return Restart(0.0, run)
    delay = min(policy.max_delay, policy.base_delay * policy.factor ** (run - 1))
    return Restart(delay, run)
