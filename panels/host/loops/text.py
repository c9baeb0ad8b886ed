"""What a team message says, as the loop rules read it: an acknowledgement, or new content.

Two pure measures over a message's text (no I/O, no state):

- `is_ack`: the message only acknowledges (a payload type the bus settles, or a short text
  that is an acknowledging phrase and little else);
- `content_units` and `news`: what the message says that its chain has not said yet.
  A text is masked first, so what changes mechanically from one copy of a message to the
  next does not read as news: timestamps and dates, clock times, ids (uuids, hex digests of
  8 digits or more) and numbers standing alone become nothing (a number inside a word, as in
  a path, stays). What is left is cut into content words
  (lower case; a path or dotted name such as `src/cache.py` or `Config.read` is one word;
  `STOPWORDS` left out) and the pairs of neighbouring content words, so a sentence that
  puts known words together in a new way still says something new. Each unit is kept as a
  32-bit hash, so a chain's units cost the same whatever the words.

Length plays no part: a long message that restates what the chain said brings no units, and
a short one that names a new path or decision brings a few. A bare new number in an
otherwise repeated sentence is not news either: that is what a counter, a poll or a clock
looks like (`round 7`, `p99 is 52 ms` asked every minute).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from itertools import pairwise

# Phrases that only acknowledge (lower case, words separated by one space).
ACK_PHRASES: tuple[str, ...] = (
    "thank you", "thanks", "thx", "ty", "got it", "received", "acknowledged", "ack", "noted",
    "ok", "okay", "roger", "understood", "will do", "sounds good", "great", "perfect",
    "you're welcome", "youre welcome", "welcome", "no problem", "np", "cheers", "likewise",
    "much appreciated", "appreciated", "confirmed", "copy that", "all good", "glad to help",
    "anytime", "same here", "good", "nice", "awesome", "done",
)  # fmt: skip
# Words that carry nothing once an acknowledgement phrase is found.
FILLER = frozenset(
    (
        "a", "an", "the", "and", "so", "very", "much", "too", "again", "for", "it", "this",
        "that", "your", "you", "me", "i", "we", "us", "our", "my", "all", "of", "to", "is",
        "was", "be", "are", "am", "on", "in", "as", "well", "just", "really", "message",
        "reply", "update", "note", "back", "indeed", "yes", "sure", "both",
    )
)  # fmt: skip
# Words that carry no content of their own (left out of `content_units`).
STOPWORDS = FILLER | frozenset(
    (
        "at", "by", "from", "with", "into", "onto", "or", "but", "not", "no", "if", "then",
        "than", "there", "here", "these", "those", "its", "it's", "he", "she", "they", "them",
        "their", "his", "her", "what", "which", "who", "whom", "when", "where", "why", "how",
        "do", "does", "did", "done", "have", "has", "had", "been", "being", "were", "will",
        "would", "can", "could", "should", "shall", "may", "might", "must", "please", "ok",
        "okay", "thanks", "thank", "hi", "hello", "hey", "now", "still", "also", "only",
        "any", "some", "one", "each", "every", "other", "about", "up", "out", "over",
        "again", "once", "yet", "let", "lets", "let's", "i'm", "im", "i'll", "we'll",
    )
)  # fmt: skip
_WORD = re.compile(r"[a-z0-9']+")
# What changes from one copy of a message to the next without saying anything new: dates
# and timestamps, clock times and uuids (masked in the text), then whole tokens that are a
# number or a hex id of 8 digits or more. A number inside a word stays (`upload-3.csv`,
# `item_12`, `v2`): a new path is news.
_MASKS = (
    re.compile(
        r"\b\d{4}-\d{2}-\d{2}(?:[t ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?"
        r"(?:z|[+-]\d{2}:?\d{2})?"
    ),
    re.compile(r"\b\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?\b"),
    re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"),
)
_DIGITS = re.compile(r"[\d.,/:-]+")
_HEX = re.compile(r"[0-9a-f]{8,}")
# A content word: letters, digits and _ ' joined by . / - (a path, a dotted name).
_TOKEN = re.compile(r"[a-z0-9_'](?:[a-z0-9_'./-]*[a-z0-9_'])?")


def is_ack(
    kind: str | None,
    text: str,
    *,
    ack_types: frozenset[str],
    max_chars: int,
    extra_words: int,
) -> bool:
    """Whether a message only acknowledges: its payload type is in `ack_types`, or its text
    is at most `max_chars` long, holds a phrase of `ACK_PHRASES` (case-insensitive) and,
    the phrases taken out, at most `extra_words` words that are not `FILLER`."""
    if kind is not None and kind in ack_types:
        return True
    flat = " ".join(text.lower().split())
    if not flat or len(flat) > max_chars:
        return False
    spoken = " " + " ".join(_WORD.findall(flat)) + " "
    found = False
    for phrase in sorted(ACK_PHRASES, key=len, reverse=True):
        needle = f" {phrase} "
        while needle in spoken:
            spoken = spoken.replace(needle, " ", 1)
            found = True
    rest = [w for w in spoken.split() if w not in FILLER]
    return found and len(rest) <= extra_words


def masked(text: str) -> str:
    """The text in lower case with its dates, timestamps, clock times and uuids taken out."""
    flat = text.lower()
    for mask in _MASKS:
        flat = mask.sub(" ", flat)
    return flat


def content_words(text: str) -> list[str]:
    """The content words of a text, in order: masked, numbers and hex ids left out, and
    `STOPWORDS`."""
    words = (w.strip("'./-") for w in _TOKEN.findall(masked(text)))
    return [w for w in words if len(w) > 1 and w not in STOPWORDS and not _mechanical(w)]


def _mechanical(word: str) -> bool:
    """A number, or a hex id (8 digits or more, one of them a decimal digit)."""
    if _DIGITS.fullmatch(word):
        return True
    return _HEX.fullmatch(word) is not None and any(c.isdigit() for c in word)


def content_units(text: str, limit: int = 128) -> frozenset[int]:
    """What a text says, as hashes: its content words and pairs of neighbouring content
    words, at most `limit` of them (the first ones)."""
    words = content_words(text)
    units = dict.fromkeys([*words, *(f"{a} {b}" for a, b in pairwise(words))])
    return frozenset(_hash(u) for u in list(units)[:limit])


def news(units: frozenset[int], seen: Iterable[frozenset[int]]) -> tuple[int, float]:
    """How much of `units` is new against what was `seen`: the count of new units and
    their share of the message's units (0 for a message that says nothing)."""
    if not units:
        return (0, 0.0)
    new = set(units)
    for said in seen:
        new -= said
        if not new:
            break
    return (len(new), len(new) / len(units))


def _hash(unit: str) -> int:
    return int.from_bytes(hashlib.blake2b(unit.encode(), digest_size=4).digest(), "big")
