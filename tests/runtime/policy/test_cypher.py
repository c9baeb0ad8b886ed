"""The read-only Cypher check: reads pass; writes, loads and tricks are refused."""

from __future__ import annotations

import pytest

from runtime.errors import PolicyError
from runtime.policy.cypher import read_only_violation, require_read_only

READS = [
    "MATCH (n) RETURN n",
    "MATCH (n:Entity {name: $name}) RETURN n.name LIMIT 10",
    "MATCH (a)-[r:MENTIONS]->(b) WHERE a.id = $id RETURN b ORDER BY b.name",
    "OPTIONAL MATCH (n) RETURN count(n);",
    "UNWIND $ids AS id MATCH (n {id: id}) RETURN n",
    "MATCH (n) RETURN 'CREATE (x)' AS text",
    "MATCH (`DELETE`) RETURN 1",
    "MATCH (n) RETURN n // DROP TABLE x",
    "MATCH (n) /* SET n.x = 1 */ RETURN n",
    "CALL show_tables() RETURN *",
    "MATCH (n) RETURN n.set, n.create",
]

WRITES = [
    "CREATE (n:Entity {name: 'x'})",
    "MERGE (n:Entity {name: $name})",
    "MATCH (n) SET n.flag = true",
    "match (n) delete n",
    "MATCH (n) DETACH DELETE n",
    "MATCH (n) REMOVE n.flag",
    "DROP TABLE Entity",
    "ALTER TABLE Entity ADD x INT",
    "COPY Entity FROM 'rows.csv'",
    "LOAD EXTENSION httpfs",
    "MATCH (n) WITH n LOAD FROM 'x.csv' RETURN *",
    "INSTALL httpfs",
    "ATTACH 'other.db' AS other",
    "EXPORT DATABASE '/tmp/x'",
    "MATCH (n) RETURN n; MATCH (m) DELETE m",
    "MATCH (n) RETURN n; // trailing then more\nCREATE (x)",
    "MATCH (n) CALL { CREATE (m) } RETURN n",
    "CALL apoc.periodic.iterate('x', 'y', {})",
    "MATCH (n) FOREACH (x IN [1] | SET n.y = x)",
    "MATCH (n) WHERE n.name = 'a\\' CREATE (x)' RETURN n UNION CREATE (y)",
    "MATCH (n) RETURN 'unterminated",
    "MATCH (n) RETURN n /* unterminated",
    "MATCH (`unterminated) RETURN 1",
    "PROFILE MATCH (n) RETURN n",
    "",
    "   // only a comment",
]


@pytest.mark.parametrize("query", READS)
def test_reads_pass(query: str) -> None:
    assert read_only_violation(query) is None
    assert require_read_only(query) == query


@pytest.mark.parametrize("query", WRITES)
def test_everything_else_is_refused(query: str) -> None:
    assert read_only_violation(query) is not None
    with pytest.raises(PolicyError):
        require_read_only(query)
