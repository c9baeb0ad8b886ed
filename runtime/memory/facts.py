"""The facts a note states, so replay archives only notes that say the same thing. Pure.

Two notes can sit close in meaning and still differ in what an operator looks them up for:
"the billing team pinned Python to 3.12" and "the payment team pinned Python to 3.9" are
0.076 apart for the built-in embedder, under replay's near-duplicate cutoff. A small
embedding model blurs exactly the tokens that carry the fact, so replay compares them here,
token by token, before it archives anything:

- figures: every token with a digit in it. Numbers, prices, versions, dates, times, sizes,
  regions (`us-east-1`), tickets (`PR-1234`), hashes; `$`, `%` and thousands separators
  kept as written but for the separators;
- identifiers: code spans, paths, dotted and snake_case names, CamelCase and ALLCAPS words;
- names: capitalised words that are not common words (people, products, places);
- negation: whether the note says not / no / never / without (`isn't`, `cannot` ...);
- qualifiers: the common words that still carry a fact (QUALIFIERS): order and comparison
  (`before` / `after`, `over` / `under`, `more` / `less`), condition (`if` / `unless`),
  modality (`must` / `may`); and, only when each note has one, quantity (`all` / `some`),
  `and` / `or`, and tense (`is` / `was`);
- words: every other content word, reduced to a crude stem (plural and tense endings off),
  common words left out.

Two notes are duplicates only when all six agree. A restatement that changes a common
word ("per client" / "for each client", "are kept" / "are all kept", "pinned" / "has
pinned") still counts as the same; one that changes any content word or qualifier does
not ("runs before the deploy" / "after the deploy", 0.022 apart for the built-in embedder),
and replay shows the pair to reconcile instead of archiving one of them. Erring that way
costs a proposal to read; erring the other way loses a fact.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Common words: they carry grammar, not facts. A word here may differ between duplicates.
COMMON = _words(
    """
    a an the this that these those it its it's they them their there here we us our you your
    i me my he she his her him is are was were be been being am do does did done doing has
    have had having will would shall should can could may might must of in on at to from by
    for with as into onto over under about after before between through during per each every
    all any some both either neither such so than then too very also just only still yet
    again already and or but if when while because since until unless though although which
    who whom whose what where why how one ones own same other another more most less least
    much many few lot lots get gets got now today currently
    """
)
NEGATIONS = _words(
    """
    not no never none nothing nobody nowhere neither nor without cannot can't won't don't
    doesn't didn't isn't aren't wasn't weren't hasn't haven't hadn't shouldn't wouldn't
    couldn't mustn't n't
    """
)
# Common words that carry a fact, by group. A note saying one of the first three groups' words
# and another not saying it differ; in the last three, two notes differ only when each says
# one and they differ ("are all kept" restates "are kept"; "all" / "some" does not). Tense is
# compared by class: `is` and `are` are one present, `was` and `were` one past.
_ANY, _SWAP = "any", "swap"
QUALIFIERS: dict[str, tuple[str, str]] = {
    **dict.fromkeys(
        _words("after before until since during between over under more most less least"),
        ("order", _ANY),
    ),
    **dict.fromkeys(_words("if unless because though although"), ("condition", _ANY)),
    **dict.fromkeys(_words("must may might shall should can could will would"), ("modal", _ANY)),
    **dict.fromkeys(_words("all any some both either only much many few"), ("quantity", _SWAP)),
    **dict.fromkeys(_words("and or"), ("connective", _SWAP)),
}
_TENSE = {
    **dict.fromkeys(_words("is are am has have do does"), "present tense"),
    **dict.fromkeys(_words("was were had did"), "past tense"),
}
_CODE = re.compile(r"`([^`\n]+)`")
_TOKEN = re.compile(r"[$€£]?[\w][\w'.,:/@+#-]*%?", re.UNICODE)
_EDGE = ".,:;'/-"
_IDENT = re.compile(r"[a-z]+[A-Z]|[A-Z]{2,}|[_/.@#]\w|\w[_/.@#]")
_SENTENCE_BREAK = re.compile(r"[.!?:;]|\n")


@dataclass(frozen=True)
class Facts:
    figures: frozenset[str]
    identifiers: frozenset[str]
    names: frozenset[str]
    negated: bool
    words: frozenset[str]  # stems
    qualifiers: frozenset[str] = frozenset()  # QUALIFIERS said, and tense classes
    spelled: dict[str, str] = field(default_factory=dict, compare=False)  # stem -> a spelling


def facts_of(text: str) -> Facts:
    """The facts of `text` (a note's body; the payload's `key: value` lines count too)."""
    figures: set[str] = set()
    identifiers: set[str] = {span.strip() for span in _CODE.findall(text)}
    names: set[str] = set()
    qualifiers: set[str] = set()
    spelled: dict[str, str] = {}
    negated = False
    plain = _CODE.sub(lambda m: " " * len(m.group()), text)  # offsets kept
    end = 0
    for match in _TOKEN.finditer(plain):
        raw = match.group()
        # A capital after a sentence's end (or a line's start) says nothing about a name.
        between = plain[max(0, end - 1) : match.start()]
        sentence_start = end == 0 or bool(_SENTENCE_BREAK.search(between))
        end = match.end()
        token = raw.rstrip(_EDGE)
        if not token:
            continue
        lower = token.lower()
        if lower in NEGATIONS or lower.endswith("n't"):
            negated = True
        elif any(c.isdigit() for c in token):
            figures.add(_figure(lower))
        elif _IDENT.search(token):
            identifiers.add(token)
        elif lower in QUALIFIERS or lower in _TENSE:
            qualifiers.add(_TENSE.get(lower, lower))
        elif lower in COMMON:
            continue
        elif token[0].isupper() and not sentence_start:
            names.add(lower)
        else:
            spelled.setdefault(_stem(lower), lower)
    return Facts(
        frozenset(figures),
        frozenset(identifiers),
        frozenset(names),
        negated,
        frozenset(spelled),
        frozenset(qualifiers),
        spelled,
    )


def differences(a: str, b: str) -> tuple[str, ...]:
    """How the facts of two notes differ, one line per kind, each side's own values shown
    (empty: they state the same facts)."""
    return compare(facts_of(a), facts_of(b))


def compare(fa: Facts, fb: Facts) -> tuple[str, ...]:
    """`differences` of two notes' facts already read (empty: the same facts). Equality of
    Facts is stricter: a quantity or tense said by one note only is no difference here."""
    found: list[str] = []
    for kind, left, right in (
        ("figures", fa.figures, fb.figures),
        ("identifiers", fa.identifiers, fb.identifiers),
        ("names", fa.names, fb.names),
    ):
        if left != right:
            found.append(f"{kind}: {_side(left - right)} / {_side(right - left)}")
    if fa.words != fb.words:
        only_a = {fa.spelled[w] for w in fa.words - fb.words}
        only_b = {fb.spelled[w] for w in fb.words - fa.words}
        found.append(f"words: {_side(only_a)} / {_side(only_b)}")
    said_a, said_b = _qualifier_difference(fa.qualifiers, fb.qualifiers)
    if said_a or said_b:
        found.append(f"qualifiers: {_side(said_a)} / {_side(said_b)}")
    if fa.negated != fb.negated:
        said = {True: "negated", False: "affirmed"}
        found.append(f"negation: {said[fa.negated]} / {said[fb.negated]}")
    return tuple(found)


def _qualifier_difference(a: frozenset[str], b: frozenset[str]) -> tuple[set[str], set[str]]:
    """The qualifiers that make two notes differ: each side's own, by QUALIFIERS' groups."""
    left: set[str] = set()
    right: set[str] = set()
    groups = {_group(word) for word in a | b}
    for group, rule in groups:
        mine = {w for w in a if _group(w) == (group, rule)}
        theirs = {w for w in b if _group(w) == (group, rule)}
        if mine != theirs and (rule == _ANY or (mine and theirs)):
            left |= mine - theirs
            right |= theirs - mine
    return left, right


def _group(word: str) -> tuple[str, str]:
    return QUALIFIERS.get(word, ("tense", _SWAP))


def _side(values: frozenset[str] | set[str]) -> str:
    return ", ".join(sorted(values)) or "(none)"


def _figure(token: str) -> str:
    """`1,200` and `1200` are one figure; a version's or a date's separators stay."""
    return re.sub(r"(?<=\d),(?=\d{3}\b)", "", token)


def _stem(word: str) -> str:
    """Plural and tense endings off, and a final e: `pins`, `pinned`, `pinning` -> `pin`;
    `move`, `moved`, `moves`, `moving` -> `mov`. Crude on purpose:
    it only has to make restatements agree; two words that stem alike are nearly always
    one word, and figures, identifiers and names are compared as written."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    if len(word) >= 4 and word[-1] == word[-2] and word[-1] not in "aeiousl":
        word = word[:-1]  # pinn -> pin, stopp -> stop
    if len(word) >= 4 and word.endswith("e"):
        word = word[:-1]
    return word
