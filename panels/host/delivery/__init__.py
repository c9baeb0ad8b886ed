"""Delivery and outbox: what a turn is fed, the sends it queues and publishes, the send
limits and the bus tools, inbox counts, poison messages, input tickets, follow-up turns and
the watchdog's digests."""
