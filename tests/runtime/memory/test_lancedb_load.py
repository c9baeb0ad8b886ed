"""LanceDB loads without its REST client's API modules, and the client still works whole
when something asks for it (runtime/memory/lancedb_load.py). A fresh interpreter: the test
process may have imported lancedb the ordinary way already."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROBE = """
import sys
from runtime.memory.lancedb_load import load_lancedb

lancedb = load_lancedb()
db = lancedb.connect(sys.argv[1])
table = db.create_table("t", data=[{"x": 1}])
print(table.count_rows())
print(any(name.startswith("lance_namespace_urllib3_client.api") for name in sys.modules))
import lance_namespace_urllib3_client as client
print(client.ApiClient.__name__)
print(any(name.startswith("lance_namespace_urllib3_client.api") for name in sys.modules))
print(load_lancedb() is lancedb)
"""


def test_a_local_table_works_without_the_rest_client_which_loads_when_asked(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "db")],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "False", "ApiClient", "True", "True"]
