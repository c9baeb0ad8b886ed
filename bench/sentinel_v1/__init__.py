"""The sentinel's rules as they were before they judged calls by their effects (issue 29):
the spelled key, no outcomes, no patience, no changes from outside. Kept only so that the
benches can print the old figures beside the new ones on the same corpus; nothing in the
product imports it."""
