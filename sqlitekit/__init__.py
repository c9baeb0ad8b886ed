"""The SQLite layer under runtime and peerbus: what every SQLite file of ours shares.

- `jsonload`: bounded parsing of JSON and TOML we did not just write ourselves.

It imports nothing of the project (pyproject's import contracts), so the turn store, the
bus and host.sqlite can all stand on it.
"""
