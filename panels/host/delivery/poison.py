"""Telling a poison message from a broken panel, after a turn failed on its own. Pure.

A message that makes every turn it is in fail (the service refuses it, the CLI dies on it)
must not take the panel down, nor the messages behind it. A panel that is broken (no
credentials, the service overloaded, a model that fails on any input) must not dead-letter
every message it is given. The host tells them apart so:

- A failure the error itself puts on the panel or the service (`CredentialsError`,
  `ServiceBusyError`) is never the message's: its messages go back uncounted.
- A failed turn of several messages says only that one of them may be bad: each goes back
  with one failed attempt, which makes the bus deliver it alone from then on
  (`ISOLATE_AFTER` = 1). A message's later attempts are counted only when it failed alone.
- A message that failed alone `POISON_ATTEMPTS` times is poison, and dead-lettered, unless
  another message also failed alone since the panel's last good turn: then the failures
  follow the panel, not the message, and the message is kept (given back uncounted) while
  the restart policy deals with the panel.

The attempt count is the bus's own (`attempts`, written by `nack(count=True)` in the same
transaction as the release), so it survives the host's death; a delivery cut off by a crash
never counts. `FailureBook` is the in-memory memory of one host life: a restart forgets which
messages failed alone, which errs toward keeping messages, never toward losing them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from peerbus import Message
from runtime.errors import CredentialsError, ServiceBusyError

# A message whose turn failed this many times, alone, is dead-lettered (the host opens its
# bus with `max_attempts` set to this, so the bus's own backstop agrees).
POISON_ATTEMPTS = 3
# A message that failed once is delivered alone, so only the culprit of a batch is judged.
ISOLATE_AFTER = 1

# Errors that say the panel or the service is at fault, whatever the input was.
PANEL_FAULTS: tuple[type[BaseException], ...] = (CredentialsError, ServiceBusyError)


@dataclass
class FailureBook:
    """Which messages failed alone since the panel's last turn that ended well."""

    failed_alone: set[int] = field(default_factory=set)

    def turn_done(self) -> None:
        """A turn ended well: the panel works, so earlier failures were their messages'."""
        self.failed_alone.clear()


@dataclass(frozen=True)
class Verdict:
    """What settle does with the messages a failed turn gives back."""

    counted: tuple[int, ...] = ()  # back with one more failed attempt
    uncounted: tuple[int, ...] = ()  # back as they were
    poison: tuple[int, ...] = ()  # dead-lettered: they failed alone POISON_ATTEMPTS times
    kept: tuple[int, ...] = ()  # at the limit, but the panel looks broken: back, uncounted


def judge(
    book: FailureBook,
    error: BaseException | None,
    turn_size: int,
    given_back: Sequence[Message],
    *,
    limit: int = POISON_ATTEMPTS,
) -> Verdict:
    """The verdict on the messages `given_back` by a turn of `turn_size` messages that
    failed with `error` (None: a fault that was not a driver error). Updates `book`."""
    if not given_back:
        return Verdict()
    ids = tuple(m.id for m in given_back)
    if error is not None and isinstance(error, PANEL_FAULTS):
        return Verdict(uncounted=ids)
    if turn_size > 1:
        # Only a first failure counts in a batch: it is what isolates the message. A message
        # already isolated but batched with operator input is not judged by this turn.
        first = tuple(m.id for m in given_back if m.attempt <= 1)
        return Verdict(counted=first, uncounted=tuple(i for i in ids if i not in first))
    (message,) = given_back
    others = book.failed_alone - {message.id}
    book.failed_alone.add(message.id)
    if message.attempt < limit:
        return Verdict(counted=ids)
    if others:
        return Verdict(kept=ids)
    return Verdict(poison=ids)
