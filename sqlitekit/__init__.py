"""The SQLite layer under runtime and peerbus: what every SQLite file of ours shares.

- `connect`: opening a connection (autocommit, busy timeout, usable from worker threads);
- `txn`: one transaction with BEGIN IMMEDIATE, and the runner that retries it while the
  file is busy (each caller brings its own back-off and its own errors);
- `watch` and `waiter`: noticing other processes' commits (inotify, file stats,
  PRAGMA data_version) and waiting for them on the event loop;
- `jsonload`: bounded parsing of JSON and TOML we did not just write ourselves.

It imports nothing of the project (pyproject's import contracts), so the turn store, the
bus and host.sqlite can all stand on it.
"""
