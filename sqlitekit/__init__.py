"""The SQLite layer under runtime and peerbus: what every SQLite file of ours shares.

- `watch` and `waiter`: noticing other processes' commits (inotify, file stats,
  PRAGMA data_version) and waiting for them on the event loop;
- `jsonload`: bounded parsing of JSON and TOML we did not just write ourselves.

It imports nothing of the project (pyproject's import contracts), so the turn store, the
bus and host.sqlite can all stand on it.
"""
