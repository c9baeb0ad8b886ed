# One command checks everything: `make check` (lint, format, types, import layers, tests).
PY ?= .venv/bin/python

.PHONY: setup check lint types layers test demo

setup:
	@# The panels' sandbox (runtime/sandbox/) needs bubblewrap; install it where we can.
	@command -v bwrap >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
		&& DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null; } \
		|| echo "note: bubblewrap is not installed; panels' tools will run unconfined (apt-get install bubblewrap)"
	python3 -m venv .venv
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'

lint:
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

types:
	$(PY) -m mypy

layers:
	.venv/bin/lint-imports

test:
	$(PY) -m pytest -q; rc=$$?; if [ $$rc -eq 5 ]; then echo "no tests collected"; exit 0; fi; exit $$rc

check: lint types layers test

# The offline three-panel demo: the rehearsal model, no key, no network.
demo:
	.venv/bin/mnemara demo
