"""The rolling window: rows and their token estimates, the trim plan, the window operations
and eviction the agent calls, the window's inspection and a file's skeleton."""
