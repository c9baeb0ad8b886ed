"""A panel's lives and turns: the panel as the host keeps it, its state machine, supervision
and restart policy, one life and one turn, instance set-up, drivers and sandbox choice,
wake-ups, window verbs, checkpoints and orphans of earlier lives."""
