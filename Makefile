# One command checks everything: `make check` (lint, format, types, import layers, tests).
PY ?= .venv/bin/python

.PHONY: setup check lint types layers test demo

setup:
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
