"""The turn engine: the session (`session`, the state the tools see; `engine`, one turn),
its events, the driver protocol and the scripted driver, the prompt and its render cache,
the cache TTL choice, pricing, the recorder and the sends a turn queues."""
