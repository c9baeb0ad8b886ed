# One command checks everything: `make check` (lint, format, types, import layers, tests).
#
# The install is locked: `uv.lock` holds every package of the whole set (test tools included)
# at one version with the hashes of its files, for every platform, and `make setup` installs
# exactly that set, hash-checked. uv itself is pinned the same way in `requirements-uv.txt`
# and lives in `.venv-uv`, apart from the project's environment, which `uv sync` keeps exact.
PY ?= .venv/bin/python
BIN = $(dir $(PY))
UV = .venv-uv/bin/uv
# The interpreter the environments are made with; uv never downloads one of its own.
PYTHON ?= python3
export UV_PYTHON_DOWNLOADS = never
# Installed packages are compiled once at install, and the project's own modules and tests on
# first import: the suite starts hundreds of Python processes (hosts, CLIs' relays, the CLI
# commands), and without a bytecode cache each of them compiles what it imports again.
export UV_COMPILE_BYTECODE = 1
unexport PYTHONDONTWRITEBYTECODE
# Test workers: most tests wait on processes (the CLI, hosts, PostgreSQL), not on the CPU, so
# a 2-core machine runs best with 4 (bench/suite_time.py measures it). Tests go out one or two
# at a time to whichever worker is free, slow ones first (tests/conftest.py).
WORKERS ?= 4
PYTEST = $(PY) -m pytest -q -n $(WORKERS) --dist load --maxschedchunk 2

.PHONY: setup lock check check-latest test-fast lint types layers test demo mutate

$(UV): requirements-uv.txt
	$(PYTHON) -m venv .venv-uv
	.venv-uv/bin/python -m pip install -q --disable-pip-version-check --require-hashes --no-deps \
		-r requirements-uv.txt
	@touch $(UV)

setup: $(UV)
	@# The panels' sandbox (runtime/sandbox/) needs bubblewrap; install it where we can.
	@command -v bwrap >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
		&& DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null; } \
		|| echo "note: bubblewrap is not installed; panels' tools will run unconfined (apt-get install bubblewrap)"
	@# A venv of the interpreter's own, so it has pip for what README says to add by hand (the
	@# kuzu extra, a reinstall); uv sync then makes its packages exactly the locked set.
	@test -x .venv/bin/python || $(PYTHON) -m venv .venv
	@# --locked: a pyproject.toml changed without `make lock` stops here instead of installing
	@# something the lock does not say.
	$(UV) sync --locked --extra test

# Resolve every package again at its newest release within pyproject.toml's bounds, and uv too.
lock: $(UV)
	$(UV) lock --upgrade
	echo "uv" | $(UV) pip compile --universal --generate-hashes --no-header --quiet --upgrade \
		- -o requirements-uv.txt

# The suite against the newest releases, in a throwaway environment: finds upstream drift on
# purpose. The lock and .venv are left as they are.
check-latest: $(UV)
	@# mktemp makes its folder private; the escape rows run the venv's CLI as an unprivileged
	@# user too (tests/security/test_escape_rows.py), so it must be open to others, as .venv is.
	@set -e; tmp=$$(mktemp -d); chmod 755 "$$tmp"; trap 'rm -rf "$$tmp"' EXIT; \
	$(UV) venv -q --python $(PYTHON) "$$tmp/venv"; \
	VIRTUAL_ENV="$$tmp/venv" $(UV) pip install -q --upgrade --resolution highest -e '.[test]'; \
	echo "newest releases:"; VIRTUAL_ENV="$$tmp/venv" $(UV) pip list -q --format freeze | sed 's/^/  /'; \
	$(MAKE) --no-print-directory check PY="$$tmp/venv/bin/python"

lint:
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

types:
	$(PY) -m mypy

layers:
	$(BIN)lint-imports

# pytest exits 5 when it collects nothing: not a failure here.
test:
	$(PYTEST); rc=$$?; if [ $$rc -eq 5 ]; then echo "no tests collected"; exit 0; fi; exit $$rc

# The inner loop: every test but the slow and end-to-end ones (make check runs them all).
test-fast:
	$(PYTEST) -m "not slow and not e2e"; rc=$$?; \
		if [ $$rc -eq 5 ]; then echo "no tests collected"; exit 0; fi; exit $$rc

# mypy (about 30 s from a cold cache, one core) runs beside the tests, which leave part of the
# second core idle while they wait on processes; its output is printed after theirs, and the
# check fails if either does.
check: lint layers
	@log=$$(mktemp); $(PY) -m mypy >"$$log" 2>&1 & types=$$!; \
	$(MAKE) --no-print-directory test; rc=$$?; \
	wait $$types; trc=$$?; echo "mypy:"; cat "$$log"; rm -f "$$log"; \
	if [ $$rc -ne 0 ]; then exit $$rc; fi; exit $$trc

# Mutation testing of the core modules (bench/mutation/), on demand and never in `make check`:
# it installs mutmut (the lock's `mutate` extra; `make setup` takes it out again), then tries
# each module's mutants, resumably. MUTATE_ARGS: e.g. --module window --time-box 300 --show.
mutate: $(UV)
	$(UV) sync --locked --extra test --extra mutate
	$(PY) bench/mutation.py $(MUTATE_ARGS)

# The offline three-panel demo: the rehearsal model, no key, no network.
demo:
	$(BIN)mnemara demo
