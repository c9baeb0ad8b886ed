"""Which near-duplicates replay archives, and which pairs it keeps to reconcile.

Vectors are made by hand here (unit vectors at chosen cosine distances), so the grouping is
tested apart from the embedder; tests/runtime/memory/test_replay.py runs it on real ones."""

from __future__ import annotations

import math

import numpy as np

from runtime.memory.duplicates import Conflict, find_duplicates
from runtime.memory.model import Atom

LIMIT = 0.08


def atom(i: int, text: str) -> Atom:
    return Atom(f"memory/2026-12-01.md#{i:012x}", "note", text, "insight", f"2026-12-01T00:0{i}:00")


def at_angles(*degrees: float) -> np.ndarray:
    """Unit vectors in a plane: cosine distance between two is 1 - cos(their angle)."""
    return np.array([[math.cos(math.radians(d)), math.sin(math.radians(d))] for d in degrees])


def test_a_pair_that_differs_in_a_fact_is_kept_and_named() -> None:
    atoms = [
        atom(0, "the billing team pinned Python to 3.12"),
        atom(1, "the payment team pinned Python to 3.9"),
    ]
    duplicates, conflicts, kept = find_duplicates(atoms, at_angles(0, 5), LIMIT)
    assert duplicates == [] and kept == [0, 1]
    [conflict] = conflicts
    assert (conflict.first, conflict.second) == (atoms[0], atoms[1])
    assert conflict.differences == ("figures: 3.12 / 3.9", "words: billing / payment")
    assert math.isclose(conflict.distance, 1 - math.cos(math.radians(5)))
    assert conflict.proposal.startswith("wiki_proposals/reconcile-")
    assert conflict.proposal == Conflict(atoms[0], atoms[1], 0.5, ()).proposal  # by the pair


def test_the_longest_restatement_is_kept_at_a_distance_never_below_zero() -> None:
    atoms = [
        atom(0, "The gateway limit is 500 requests per minute per client."),
        atom(1, "The gateway limit is 500 requests per minute for each client."),
    ]
    duplicates, conflicts, kept = find_duplicates(atoms, at_angles(0, 0), LIMIT)
    assert conflicts == [] and kept == [1]
    [duplicate] = duplicates
    assert (duplicate.keep, duplicate.drop) == (atoms[1].source, atoms[0].source)
    assert duplicate.distance == 0.0  # 1 - dot of equal unit vectors can round below zero


def test_a_second_run_over_what_was_kept_archives_nothing() -> None:
    # B is near A and C, A and C are not near each other. A leads the first round and B,
    # the longest, is kept in A's place; C, too far from A, led a group of its own. A second
    # round (what the next run would do) finds C near B: it is archived now, not next time.
    atoms = [
        atom(0, "Deploys take 10 minutes."),
        atom(1, "Deploys take 10 minutes, as they do now."),
        atom(2, "Deploys take 10 minutes now."),
    ]
    vectors = at_angles(0, 20, 40)  # 0.060 apart next to each other, 0.234 from end to end
    limit = 0.07
    duplicates, conflicts, kept = find_duplicates(atoms, vectors, limit)
    assert kept == [1] and conflicts == []
    assert {(d.keep, d.drop) for d in duplicates} == {
        (atoms[1].source, atoms[0].source),
        (atoms[1].source, atoms[2].source),
    }
    again = find_duplicates([atoms[i] for i in kept], vectors[kept], limit)
    assert again == ([], [], [0])


def test_notes_farther_apart_than_the_limit_are_neither_archived_nor_compared() -> None:
    atoms = [atom(0, "The nightly backup is encrypted."), atom(1, "The backup is not encrypted.")]
    assert find_duplicates(atoms, at_angles(0, 30), LIMIT) == ([], [], [0, 1])


def test_a_note_the_operator_restored_is_not_archived_again() -> None:
    atoms = [
        atom(0, "The gateway limit is 500 requests per minute per client."),
        atom(1, "The gateway limit is 500 requests per minute for each client."),
        atom(2, "The gateway limit is 500 requests a minute per client."),
    ]
    restored = [atoms[0].source]
    duplicates, conflicts, kept = find_duplicates(atoms, at_angles(0, 0, 0), LIMIT, restored)
    assert conflicts == [] and kept == [0, 1]
    assert [(d.keep, d.drop) for d in duplicates] == [(atoms[1].source, atoms[2].source)]
    again = find_duplicates([atoms[i] for i in kept], at_angles(0, 0), LIMIT, restored)
    assert again == ([], [], [0, 1])
