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
    "MATCH (n:Node) WHERE n.label = $label AND n.id IN $ids RETURN n.id, n.properties",
    "MATCH p = (a:Node {id: $a})-[:Edge* SHORTEST 1..30]-(b:Node {id: $b}) RETURN nodes(p)",
    "WITH $x AS x RETURN x",
    "OPTIONAL MATCH (a)-[e]->(b) WITH a, count(e) AS degree WHERE degree > $min RETURN a",
    "UNWIND range(1, 3) AS i RETURN i, lower('ＣＲＥＡＴＥ') AS wide",  # non-ASCII in a string
    "MATCH (n) RETURN n.`naïve` // a comment with ü and \u2028 in it",
    "MATCH (n) RETURN n.read_csv, n.properties AS read_parquet",  # names, not calls
    "CALL table_info('Node') RETURN *",
    "CALL db_version() RETURN *",
    "MATCH (n) RETURN n /* multi\nline */ LIMIT $limit",
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
    # every clause that writes, reaches outside the database, or controls transactions
    "MATCH (n) DETACH DELETE n",
    "COPY (MATCH (n) RETURN n) TO '/tmp/out.csv'",
    "LOAD FROM '/etc/passwd' (header = false) RETURN *",
    "LOAD WITH HEADERS (a STRING) FROM 'x.csv' RETURN *",
    "LOAD EXTENSION '/tmp/evil.so'",
    "LOAD json",
    "INSTALL json FROM 'http://example.com/'",
    "UNINSTALL json",
    "ATTACH '/tmp/other.lbug' AS other (dbtype lbug)",
    "DETACH other",
    "USE other",
    "IMPORT DATABASE '/tmp/dump'",
    "EXPORT DATABASE '/tmp/dump' (format = 'parquet')",
    "CHECKPOINT",
    "FORCE CHECKPOINT",
    "BEGIN TRANSACTION",
    "BEGIN TRANSACTION READ ONLY",
    "COMMIT",
    "ROLLBACK",
    "ANALYZE",
    "COMMENT ON TABLE Node IS 'x'",
    "CREATE MACRO m(x) AS x",
    "DROP MACRO m",
    "MATCH (n) UPDATE n",
    "RETURN 1; RETURN 2",
    "MATCH (n) RETURN n ;; ",
    # odd case, comments, string literals: the keyword still counts where the engine sees it
    "mAtCh (n) DeTaCh DeLeTe n",
    "MATCH (n) /* harmless */ SET /* really */ n.x = 1",
    "MATCH (n) WHERE n.id = 'a' CREATE (m)",
    'MATCH (n) WHERE n.id = "it\'s" MERGE (m)',
    "MATCH (n) WHERE n.id = 'a\\' RETURN n MERGE (m)",
    "RETURN 1 //\r CREATE (n)",  # the engines end a // comment at \r too
    # procedures and functions that read files or change state
    "CALL read_csv('/etc/passwd') RETURN *",
    "CALL READ_CSV_SERIAL('/etc/passwd') RETURN *",
    "CALL read_parquet('x.parquet') RETURN *",
    "CALL json_scan('x.json') RETURN *",
    "CALL file_info('/etc/passwd') RETURN *",
    "CALL show_functions() RETURN *",
    "CALL show_attached_databases() RETURN *",
    "CALL project_graph('g', ['Node'], ['Edge'])",
    "CALL threads = 1",
    "CALL current_setting('home_directory') RETURN *",
    "MATCH (n) RETURN read_csv('/etc/passwd')",
    "MATCH (n) RETURN file_info ('/etc/passwd')",
    "RETURN nextval('seq')",
    "RETURN setseed(0.5)",
    "RETURN copy_csv('x')",
    "RETURN create_vector_index('Node', 'i', 'v')",
    "RETURN drop_fts_index('Node', 'i')",
    "RETURN _cache_array_column_locally('x')",
    # look-alikes outside strings: refused, not guessed at
    "MATCH (n) ＣＲＥＡＴＥ (m)",
    "MATCH (n) CRЕATE (m)",
    "MATCH (n)\u00a0RETURN n",
    "MATCH (n) RETURN n\u037e CREATE (m)",
    "MATCH (n) RETURN n\u2028",
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
