"""One guard per panel: the budget, the runtime sentinel and the permission policy, composed once.

Every tool call a panel makes passes its `Guard` (guard.py): budget, then the owner's own
checks (a host's team budget and terminal sends), then the sentinel, then the policy. Modules:
settings (the thresholds and limits, as config and team files spell them), records (halt
records), budget, sentinel (the rules, documented there) with its pure parts rules (repeat,
alternation, failing), calls (call keys and normalised results), commands (Bash commands
split and unwrapped) and programs (what a command does: read, test, change), world
(measuring what changed on disk), halts (where halt records are written), guard.

Submodules are imported directly (`from runtime.guard.guard import Guard`): this package
imports nothing itself, so the config can use its settings without loading the rest.
"""
