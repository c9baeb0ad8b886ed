"""Control and verbs: the control table's reader, the one dispatcher, headless approvals, and
the event log with its coalescer and its account for people."""
