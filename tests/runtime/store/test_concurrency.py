"""Several writers, killed processes and a busy file: the store stays consistent, loses nothing,
and never shows "database is locked"."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from runtime.errors import StoreError
from runtime.store import RetryPolicy, TurnStore
from runtime.window.rows import NewRow

WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from runtime.instance.debuglog import DebugLog
    from runtime.window.rows import NewRow
    from runtime.store import RetryPolicy, TurnStore

    path, name, count, busy_ms = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    # A tiny busy_timeout makes SQLite give up at once, so our retry loop does the waiting.
    retry = RetryPolicy(busy_timeout_ms=busy_ms, backoff_seconds=(0.001, 0.002, 0.005) * 100)

    def row(role, text, ids=()):
        return NewRow(role, ({"type": "text", "text": text},), 1, consumed_ids=ids)

    debug = DebugLog(path.with_name(f"{name}.debug.log"))
    with TurnStore.open(path, retry=retry, debug=debug) as store:
        print("ready", flush=True)
        sys.stdin.readline()  # start together with the other writer
        for n in range(count):
            if n % 2:
                store.append([row("user", f"{name}-{n}")])
            else:
                user = store.begin_turn(row("user", f"{name}-{n}", (hash(name) % 1000 * 1000 + n,)))
                store.commit_turn(user, [row("assistant", f"{name}-{n}-reply")])
    print("done", flush=True)
    """
)


def start(script: str, *args: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", script, *map(str, args)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
@pytest.mark.parametrize("busy_ms", [5_000, 1], ids=["sqlite-waits", "we-retry"])
def test_two_processes_appending_lose_nothing(store_path: Path, busy_ms: int) -> None:
    count = 60
    writers = [start(WRITER, store_path, name, count, busy_ms) for name in ("alpha", "beta")]
    for writer in writers:
        assert writer.stdout is not None and writer.stdout.readline() == "ready\n"
    for writer in writers:
        assert writer.stdin is not None
        writer.stdin.write("go\n")
        writer.stdin.flush()
    for writer in writers:
        with writer:
            out, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err
        assert "locked" not in err and out == "done\n"
    with TurnStore.open(store_path) as store:
        rows = store.rows()
    texts = [row.blocks[0]["text"] for row in rows]
    for name in ("alpha", "beta"):
        mine = [t for t in texts if t.startswith(f"{name}-")]
        expected = [f"{name}-{n}" for n in range(count)]
        expected += [f"{name}-{n}-reply" for n in range(0, count, 2)]
        assert sorted(mine) == sorted(expected), "no lost or duplicated rows"
    assert all(row.status == "complete" for row in rows)
    assert len({row.id for row in rows}) == len(rows)
    if busy_ms == 1:
        logs = "".join(p.read_text() for p in store_path.parent.glob("*.debug.log"))
        assert "store_busy_retry" in logs, "the writers did contend, and our retry absorbed it"


KILLED_BETWEEN_BEGIN_AND_COMMIT = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from runtime.window.rows import NewRow
    from runtime.store import TurnStore

    store = TurnStore.open(Path(sys.argv[1]))
    store.append([NewRow("user", ({"type": "text", "text": "earlier"},), 1)])
    user = store.begin_turn(NewRow("user", ({"type": "text", "text": "unanswered"},), 2,
                                   consumed_ids=(77,)))
    print(user, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)  # the model was still answering
    """
)


def test_process_killed_mid_turn_keeps_the_input_and_marks_it(store_path: Path) -> None:
    child = start(KILLED_BETWEEN_BEGIN_AND_COMMIT, store_path)
    out, _ = child.communicate(timeout=60)
    assert child.returncode == -signal.SIGKILL
    user = int(out)
    with TurnStore.open(store_path) as store:
        assert [r.status for r in store.rows()] == ["complete", "in_flight"]
        assert store.recover_interrupted() == [user]
        row = store.row(user)
        assert row is not None and row.status == "interrupted"
        assert row.blocks == ({"type": "text", "text": "unanswered"},)
        assert 77 not in store.consumed_ids(), "the bus will deliver it again"


KILLED_INSIDE_A_TRANSACTION = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from runtime.window.rows import NewRow
    from runtime.store import connection, row_sql
    from runtime.store.connection import DEFAULT_RETRY

    path = Path(sys.argv[1])
    conn = connection.connect(path, DEFAULT_RETRY)

    def half_a_turn(c):
        rows = [NewRow("assistant", ({"type": "text", "text": "half"},), 1)] * 3
        row_sql.insert_rows(c, rows, ts="t", status="complete")
        row_sql.complete_row(c, 1, tokens=9, tokens_exact=True)
        print("inside", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)  # before COMMIT

    connection.run_write(conn, half_a_turn, path=path, policy=DEFAULT_RETRY, debug=None)
    """
)


def test_process_killed_inside_a_commit_leaves_no_partial_turn(store_path: Path) -> None:
    with TurnStore.open(store_path) as store:
        user = store.begin_turn(NewRow("user", ({"type": "text", "text": "q"},), 1))
        before = store.snapshot()
    child = start(KILLED_INSIDE_A_TRANSACTION, store_path)
    out, _ = child.communicate(timeout=60)
    assert out == "inside\n" and child.returncode == -signal.SIGKILL
    with TurnStore.open(store_path) as store:
        assert store.snapshot() == before
        assert store.commit_turn(user, [NewRow("assistant", (), 1)]) == [user + 1]


def hold_write_lock(path: Path) -> sqlite3.Connection:
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    return other


def test_busy_file_is_retried_until_the_other_writer_finishes(store_path: Path) -> None:
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == 2:
            other.execute("COMMIT")  # the other process finishes while we back off

    retry = RetryPolicy(busy_timeout_ms=1, backoff_seconds=(0.1, 0.2, 0.4), sleep=sleep)
    with TurnStore.open(store_path, retry=retry) as store:
        other = hold_write_lock(store_path)
        assert store.append([NewRow("user", (), 1)]) == [1]
        assert slept == [0.1, 0.2]
    other.close()


def test_a_file_that_stays_busy_gives_a_clear_error_not_database_is_locked(
    store_path: Path,
) -> None:
    retry = RetryPolicy(busy_timeout_ms=1, backoff_seconds=(0.0, 0.0), sleep=lambda _: None)
    with TurnStore.open(store_path, retry=retry) as store:
        other = hold_write_lock(store_path)
        with pytest.raises(StoreError) as info:
            store.set_meta("k", "v")
        message = str(info.value)
        assert "stayed busy" in message and "3 attempts" in message and str(store_path) in message
        assert "database is locked" not in message
        other.execute("ROLLBACK")
        other.close()
        assert store.get_meta("k") is None, "nothing was written"
