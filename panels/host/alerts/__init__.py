"""Alerts: when the operator is needed, the host says so as an event and calls them back (the
rules, the service that raises and delivers them, the webhook and the desktop notification)."""
