"""The permission policy: every tool call is allowed, asked about or denied before it runs.

`decide()` (policy.py) is the pure decision; `PolicyApprover` (approver.py) is the
runtime.turn.driver.Approver that applies it, in a worker thread, and puts `ask` verdicts to an
Asker. Inputs are capped before any parsing (limits.py); shell commands are parsed (shell.py)
and inspected (bash.py: hazards in commands.py and options.py, written paths in writes.py),
other tools' inputs in inspection.py; paths are resolved (paths.py) and the host's stores
recognised (stores.py), with what a write target is on disk (ondisk.py: a hard link, a bus
peerbus has opened) and the commands that act through sockets (sockets.py); patterns are
checked (patterns.py) and "always allow" rules kept in permissions.json (rules.py). cypher.py
holds the read-only check for graph queries.
"""
