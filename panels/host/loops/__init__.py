"""Checks and loops: the host's checks in a panel's guard, and the team's message graph with
its rules, its stored state, how it reads messages and measures the world."""
