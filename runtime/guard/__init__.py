"""One guard per panel: the budget, the runtime sentinel and the permission policy, composed once.

Every tool call a panel makes passes its `Guard` (guard.py): budget, then sentinel, then the
owner's own checks (a host's team budget and terminal sends), then the policy. Modules:
settings (the thresholds and limits, as config and team files spell them), records (halt
records), budget, sentinel (pure rules over calls and world changes), world (measuring what
changed on disk), halts (where halt records are written), guard.

Submodules are imported directly (`from runtime.guard.guard import Guard`): this package
imports nothing itself, so the config can use its settings without loading the rest.
"""
