"""The recall bench's corpus: an operations team's notes with their ground truth. Pure.

`make_corpus(notes, seed)` writes nothing: it returns the notes (text, topic, the facts each
carries, when it was written), and what is known about them:

- differing pairs: two notes on one topic that read alike but differ in exactly one fact,
  of one of KINDS (a number or price, a region, a version, a name, a team, an id, a date,
  a negation); the second is written a day after the first;
- true repeats: two notes that state the same facts, word for word or with only common
  words changed ("the" / "our", "currently"), so runtime/memory/facts.py reads them alike;
- background: one note on each other topic;
- queries with known answers, by meaning (a paraphrase that names none of the note's key
  tokens), by id, by number, by version and by name.

A topic is a template and a service (`cost:catalog cluster`), each used once, so a query's
answers are the notes of its topic that carry its fact (`Corpus.expected`); a fact is a
`topic|slot=value` string, one per slot a note fills. `Corpus` and `recall` also score what
replay kept and what search found against this ground truth.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta

KINDS = ("number", "region", "version", "name", "team", "id", "date", "negation")
QUERY_KINDS = ("meaning", "id", "number", "version", "name")
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)  # replay's `now`: the notes are of the days before
SPREAD_DAYS = 6

# (service, how a person describes it without naming it)
SERVICES = (
    ("catalog cluster", "machines that serve product listings"),
    ("search index", "backend answering shoppers' keyword lookups"),
    ("checkout service", "component where customers pay for their basket"),
    ("orders database", "store keeping every purchase record"),
    ("login gateway", "front door that signs users in"),
    ("image resizer", "worker shrinking uploaded photos"),
    ("email sender", "job mailing receipts and newsletters"),
    ("metrics pipeline", "system collecting the dashboards' time series"),
    ("build farm", "machines compiling and testing our code"),
    ("inventory api", "endpoint reporting how much stock the warehouses hold"),
    ("recommendation engine", "model suggesting products people may like"),
    ("session cache", "in-memory store for logged-in users' state"),
    ("invoice ledger", "accounting records of what customers owe"),
    ("refund worker", "job returning money for cancelled purchases"),
    ("log archive", "bucket holding old application logs"),
    ("feature flag service", "system switching features on and off per customer"),
    ("video transcoder", "worker converting uploaded clips to streaming formats"),
    ("partner webhook relay", "forwarder of events to outside integrators"),
    ("dns resolver", "name lookup servers for internal hosts"),
    ("status page", "public site telling customers about outages"),
    ("analytics warehouse", "big store for business reporting queries"),
    ("push notifier", "service pinging phones with alerts"),
)
REGIONS = ("us-east-1", "us-west-2", "eu-west-1", "eu-central-1", "ap-south-1",
           "ap-northeast-1", "sa-east-1", "ca-central-1")  # fmt: skip
PRICES = (120, 180, 200, 240, 300, 350, 420, 500, 640, 800, 950, 1200)
LANGUAGES = {"Python": ("3.9", "3.10", "3.11", "3.12", "3.13"), "Go": ("1.21", "1.22", "1.23"),
             "Node.js": ("18", "20", "22"), "Java": ("17", "21")}  # fmt: skip
PEOPLE = ("Priya", "Tomas", "Aiko", "Mateo", "Ingrid", "Kwame", "Leila", "Dmitri", "Sofia",
          "Ravi", "Hannah", "Oskar")  # fmt: skip
TEAMS = ("billing", "payment", "platform", "storage", "identity", "growth", "data", "mobile")
CONNECTIONS = (100, 150, 200, 250, 400, 500, 800)
MINUTES = (12, 18, 25, 40, 55, 70)
RETENTION_DAYS = (7, 14, 30, 90)
FIRST_DATE = date(2027, 1, 4)
# The kind of fact each slot holds (a pair differing in KIND changes the first such slot).
SLOT_KINDS = dict(price="number", conns="number", days="number", minutes="number", neg="negation",
                  region="region", version="version", semver="version", person="name",
                  team="team", inc="id", ticket="id", date="date")  # fmt: skip


@dataclass(frozen=True)
class Template:
    """A kind of note. `text` and `reworded` state the same facts (only common words differ);
    `queries` maps a query kind to (the slot it asks for, its format)."""

    key: str
    text: str
    reworded: str
    meaning: str
    slots: tuple[str, ...]
    queries: tuple[tuple[str, str, str], ...] = ()  # (query kind, slot, format)


# fmt: off
TEMPLATES = (
    Template("cost", "The {svc} in {region} costs {price} a month on reserved instances.",
             "Our {svc} in {region} currently costs {price} each month on reserved instances.",
             "what do we pay monthly to run the {desc}", ("region", "price"),
             (("number", "price", "{price} {svc}"),)),
    Template("pin", "The {team} team pinned {version} for the {svc} builds.",
             "The {team} team has pinned {version} for all of the {svc} builds.",
             "which language release do the {desc} get compiled with", ("team", "version"),
             (("version", "version", "{version} {svc}"),)),
    Template("review",
             "The schema migration for the {svc} was reviewed by {person} before it shipped.",
             "The schema migration for our {svc} was reviewed by {person} before it shipped.",
             "who signed off the database change of the {desc}", ("person",),
             (("name", "person", "{person} reviewed {svc} migration"),)),
    Template("incident",
             "Incident {inc} took the {svc} down for {minutes} minutes after a bad config push.",
             "Incident {inc} took our {svc} down for {minutes} minutes after a bad config push.",
             "a broken settings rollout caused an outage of the {desc}", ("inc", "minutes"),
             (("id", "inc", "{inc}"), ("number", "minutes", "{svc} down {minutes} minutes"))),
    Template("oncall", "This week the on-call engineer for the {svc} is {person}.",
             "This week the on-call engineer for the {svc} is still {person}.",
             "who carries the pager for the {desc} these days", ("person",),
             (("name", "person", "{person} on call {svc}"),)),
    Template("config", "In production the {svc} runs with max_connections set to {conns}.",
             "In production the {svc} now runs with max_connections set to {conns}.",
             "connection ceiling configured for the {desc} in prod", ("conns",),
             (("number", "conns", "max_connections {conns} {svc}"),)),
    Template("autoscale", "Autoscaling for the {svc} is {neg}enabled in {region}.",
             "Autoscaling for the {svc} is currently {neg}enabled in {region}.",
             "does the {desc} add machines by itself when traffic grows", ("neg", "region")),
    Template("cert", "The TLS certificate of the {svc} expires on {date}.",
             "The TLS certificate of our {svc} expires on {date}.",
             "when must the {desc} get a fresh certificate", ("date",)),
    Template("deploy", "Release {semver} of the {svc} was deployed to {region} on {date}.",
             "Release {semver} of our {svc} was deployed to {region} on {date}.",
             "when did the latest build of the {desc} go live", ("semver", "region", "date"),
             (("version", "semver", "release {semver} {svc}"),)),
    Template("backup", "Backups of the {svc} are kept for {days} days in {region}.",
             "Backups of the {svc} are all kept for {days} days in {region}.",
             "how long do we retain snapshots of the {desc}", ("days", "region"),
             (("number", "days", "{svc} backups kept {days} days"),)),
    Template("owner", "The {team} team owns the {svc} and answers its pages.",
             "The {team} team owns our {svc} and answers all of its pages.",
             "which group is responsible for the {desc}", ("team",)),
    Template("ticket", "Ticket {ticket} tracks the move of the {svc} from {region} to {region2}.",
             "Ticket {ticket} still tracks the move of our {svc} from {region} to {region2}.",
             "where is the relocation of the {desc} to another data centre followed",
             ("ticket", "region", "region2"), (("id", "ticket", "{ticket}"),)),
)
# fmt: on


@dataclass(frozen=True)
class Note:
    text: str
    topic: str
    facts: frozenset[str]  # `topic|slot=value`
    group: str  # "pair", "repeat" or "background"
    written: datetime


@dataclass(frozen=True)
class Pair:
    """Two notes (indices into the corpus) on one topic; `kind` the fact that differs (KINDS),
    or "same" / "reworded" for a true repeat (the second note's words)."""

    first: int
    second: int
    kind: str


@dataclass(frozen=True)
class Query:
    kind: str  # QUERY_KINDS
    text: str
    topic: str
    fact: str | None  # the fact asked for; None for a query by meaning (any note of the topic)
    hard: bool  # asked of a differing pair: the other note of the pair is a decoy


@dataclass(frozen=True)
class Corpus:
    """The notes and what is known of them; `live` below is the set of notes not archived."""

    notes: tuple[Note, ...]
    differing: tuple[Pair, ...]
    repeats: tuple[Pair, ...]
    queries: tuple[Query, ...]

    def expected(self, query: Query, live: set[int] | None = None) -> frozenset[int]:
        """The notes (live ones, when given) that answer `query`."""
        return frozenset(
            i
            for i, note in enumerate(self.notes)
            if note.topic == query.topic and (query.fact is None or query.fact in note.facts)
            if live is None or i in live
        )

    def lost_facts(self, live: set[int]) -> list[str]:
        """The facts no live note carries any more, sorted."""
        kept = {fact for i in live for fact in self.notes[i].facts}
        return sorted({fact for note in self.notes for fact in note.facts} - kept)

    def differing_archived(self, live: set[int]) -> list[tuple[Pair, list[int]]]:
        """The differing pairs with a note archived, and which notes."""
        gone = [(p, [i for i in (p.first, p.second) if i not in live]) for p in self.differing]
        return [(pair, notes) for pair, notes in gone if notes]

    def repeats_archived(self, live: set[int]) -> int:
        """True repeats of which one note was archived and the other kept."""
        return sum(1 for p in self.repeats if (p.first in live) != (p.second in live))

    def pairs_proposed(self, proposed: set[frozenset[int]]) -> int:
        """The differing pairs among `proposed` (pairs of notes replay drafted to reconcile)."""
        return sum(1 for p in self.differing if frozenset((p.first, p.second)) in proposed)


@dataclass(frozen=True)
class Ranked:
    """One query's hits as corpus indices (-1: not a note of the corpus), best first."""

    query: Query
    expected: frozenset[int]
    found: tuple[int, ...]
    matched: tuple[tuple[str, ...], ...] = ()  # each hit's Hit.matched, when the build has it

    def found_within(self, k: int) -> bool:
        return any(i in self.expected for i in self.found[:k])


def recall(ranked: list[Ranked], k: int) -> dict[str, tuple[float, float]]:
    """Recall@1 and @k per query kind: the share of its queries with an answer in the first
    1 and k hits (0 for a kind without queries)."""
    scores = {}
    for kind in QUERY_KINDS:
        mine = [r for r in ranked if r.query.kind == kind]
        found = [sum(r.found_within(at) for r in mine) / (len(mine) or 1) for at in (1, k)]
        scores[kind] = (found[0], found[1])
    return scores


class CorpusError(ValueError):
    """The corpus asked for cannot be made (too many or too few notes): the message says why."""


def bounds() -> tuple[int, int]:  # the smallest and largest corpus make_corpus makes
    topics = len(TEMPLATES) * len(SERVICES)
    return 30, topics + 2 * (len(KINDS) + 2)


def make_corpus(size: int, seed: int, queries_per_kind: int = 30) -> Corpus:
    """`size` notes, the same for a seed: per kind of fact size//60 differing pairs (at least
    one), size//15 true repeats (at least two, half of them reworded), the rest background."""
    low, high = bounds()
    if not low <= size <= high:
        raise CorpusError(f"--notes {size} is out of range; give {low} to {high}")
    rng = random.Random(seed)
    per_kind, repeats = max(1, size // 60), max(2, size // 15)
    topics = [(t, s) for t in TEMPLATES for s in SERVICES]
    rng.shuffle(topics)
    ids = _id_pool(rng)
    drafts: list[tuple[Template, tuple[str, str], dict[str, str], str, str]] = []
    differing: list[tuple[int, int, str]] = []
    same: list[tuple[int, int, str]] = []

    def take(kind: str | None) -> tuple[Template, tuple[str, str]]:
        for at, (template, service) in enumerate(topics):
            if kind is None or any(SLOT_KINDS.get(s) == kind for s in template.slots):
                del topics[at]
                return template, service
        raise CorpusError(f"no topic left for a pair differing in {kind}; give fewer --notes")

    for kind in KINDS:
        for _ in range(per_kind):
            template, service = take(kind)
            values = _values(template, rng, ids)
            slot = next(s for s in template.slots if SLOT_KINDS.get(s) == kind)
            twin = dict(values, **{slot: _other(slot, values[slot], rng, ids)})
            differing.append((len(drafts), len(drafts) + 1, kind))
            drafts += [(template, service, values, template.text, "pair"),
                       (template, service, twin, template.text, "pair")]  # fmt: skip
    for n in range(repeats):
        template, service = take(None)
        values = _values(template, rng, ids)
        second = template.reworded if n % 2 else template.text
        same.append((len(drafts), len(drafts) + 1, "reworded" if n % 2 else "same"))
        drafts += [(template, service, values, template.text, "repeat"),
                   (template, service, values, second, "repeat")]  # fmt: skip
    while len(drafts) < size:
        template, service = take(None)
        drafts.append((template, service, _values(template, rng, ids), template.text, "background"))

    # Written over the SPREAD_DAYS before NOW in a shuffled order; a pair's second note a day
    # after its first, so replay sees the older one first as it would in a real window.
    order = list(range(len(drafts)))
    rng.shuffle(order)
    minutes_apart = (SPREAD_DAYS - 1) * 24 * 60 // len(drafts)
    start = NOW - timedelta(days=SPREAD_DAYS)
    when = {i: start + timedelta(minutes=rank * minutes_apart) for rank, i in enumerate(order)}
    for older, newer, _ in [*differing, *same]:
        when[newer] = when[older] + timedelta(days=1)
    notes = tuple(
        Note(fmt.format(svc=service[0], **values), f"{t.key}:{service[0]}",
             _facts(t, service, values), group, when[i])
        for i, (t, service, values, fmt, group) in enumerate(drafts)
    )  # fmt: skip
    corpus = Corpus(notes, tuple(Pair(*p) for p in differing), tuple(Pair(*p) for p in same), ())
    return replace(corpus, queries=_queries(drafts, corpus, rng, queries_per_kind))


def _values(template: Template, rng: random.Random, ids: Iterator[int]) -> dict[str, str]:
    values: dict[str, str] = {}
    for slot in template.slots:  # region2 follows region: a move goes somewhere else
        values[slot] = _fresh(slot, rng, ids, values.get("region", ""))
    return values


def _fresh(slot: str, rng: random.Random, ids: Iterator[int], region: str = "") -> str:
    pick: dict[str, Callable[[], str]] = {
        "region2": lambda: rng.choice([r for r in REGIONS if r != region]),
        "price": lambda: f"${rng.choice(PRICES):,}",
        "conns": lambda: str(rng.choice(CONNECTIONS)),
        "days": lambda: str(rng.choice(RETENTION_DAYS)),
        "minutes": lambda: str(rng.choice(MINUTES)),
        "region": lambda: rng.choice(REGIONS),
        "version": lambda: _version(rng),
        "semver": lambda: f"{rng.randint(1, 4)}.{rng.randint(0, 19)}.{rng.randint(0, 9)}",
        "person": lambda: rng.choice(PEOPLE),
        "team": lambda: rng.choice(TEAMS),
        "inc": lambda: f"INC-{next(ids)}",
        "ticket": lambda: f"OPS-{next(ids)}",
        "date": lambda: (FIRST_DATE + timedelta(days=rng.randint(0, 80))).isoformat(),
        "neg": lambda: rng.choice(("", "not ")),
    }  # fmt: skip
    return pick[slot]()


def _id_pool(rng: random.Random) -> Iterator[int]:
    """Distinct four-digit ids, none of them another's near miss (`_other`), so an id
    names one topic only."""
    drawn = rng.sample(range(1000, 10000), 400)
    near = {int(f"{n // 100}{n % 10}{n // 10 % 10}") for n in drawn}
    near |= {n // 10 * 10 + (n % 10 + 3) % 10 for n in drawn}
    return iter([n for n in drawn if n not in near])


def _version(rng: random.Random) -> str:
    language = rng.choice(sorted(LANGUAGES))
    return f"{language} {rng.choice(LANGUAGES[language])}"


def _other(slot: str, value: str, rng: random.Random, ids: Iterator[int]) -> str:
    """Another value for `slot`: a near miss where one reads easily as the other."""
    if slot in ("inc", "ticket"):  # INC-4821 -> INC-4812: the last two digits swapped
        head, digits = value[:-2], value[-2:]
        if digits[0] == digits[1]:  # 4833 -> 4836: swapping would change nothing
            return f"{head}{digits[0]}{(int(digits[1]) + 3) % 10}"
        return head + digits[::-1]
    if slot == "date":  # a week later
        return (date.fromisoformat(value) + timedelta(days=7)).isoformat()
    if slot == "neg":
        return "" if value else "not "
    if slot == "version":  # the same language, another release
        language, release = value.rsplit(" ", 1)
        return f"{language} {rng.choice([r for r in LANGUAGES[language] if r != release])}"
    while True:
        other = _fresh(slot, rng, ids)
        if other != value:
            return other


def _facts(template: Template, service: tuple[str, str], values: dict[str, str]) -> frozenset[str]:
    topic = f"{template.key}:{service[0]}"
    shown = {"neg": {"": "on", "not ": "off"}}
    return frozenset(
        f"{topic}|{slot}={shown.get(slot, {}).get(values[slot], values[slot])}"
        for slot in template.slots
    )


def _queries(
    drafts: list[tuple[Template, tuple[str, str], dict[str, str], str, str]],
    corpus: Corpus,
    rng: random.Random,
    per_kind: int,
) -> tuple[Query, ...]:
    """Up to `per_kind` queries of each kind: those asked of differing pairs first (the other
    note is a decoy), then others, in an order the seed fixes. A topic asked once per kind."""
    in_pair = {i for p in corpus.differing for i in (p.first, p.second)}
    found: dict[str, list[Query]] = {kind: [] for kind in QUERY_KINDS}
    seen: set[tuple[str, str]] = set()
    for i, (template, service, values, _, _) in enumerate(drafts):
        topic = f"{template.key}:{service[0]}"
        hard = i in in_pair
        if ("meaning", topic) not in seen:
            seen.add(("meaning", topic))
            text = template.meaning.format(desc=service[1])
            found["meaning"].append(Query("meaning", text, topic, None, False))
        for kind, slot, fmt in template.queries:
            fact = next(f for f in corpus.notes[i].facts if f.startswith(f"{topic}|{slot}="))
            if (kind, fact) in seen:
                continue
            seen.add((kind, fact))
            text = fmt.format(svc=service[0], **values)
            found[kind].append(Query(kind, text, topic, fact, hard))
    chosen: list[Query] = []
    for kind in QUERY_KINDS:
        rng.shuffle(found[kind])
        chosen += sorted(found[kind], key=lambda q: not q.hard)[:per_kind]  # stable: hard first
    return tuple(chosen)
