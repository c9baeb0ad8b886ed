"""The permission policy: every tool call is allowed, asked about or denied before it runs.

`decide()` (policy.py) is the pure decision; `PolicyApprover` (approver.py) is the
runtime.driver.Approver that applies it and puts `ask` verdicts to an Asker. Shell commands are
parsed (shell.py, commands.py), paths resolved (paths.py), patterns checked (patterns.py) and
"always allow" rules kept in permissions.json (rules.py). cypher.py holds the read-only check
for graph queries.
"""
