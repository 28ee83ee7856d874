# Two commands matter: `make run` (set up + start the local service) and `make test` (set up + run every test).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
# uv installs no bytecode, and some hosts (this one's image, CI's) set PYTHONDONTWRITEBYTECODE: then every
# Python process of a run compiles every module it imports from source again (~17 s of CPU to collect the tests,
# per xdist worker, and more for each subprocess). Written once into __pycache__, it is read by the rest.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup browser run test lint format synth bench openapi lock clean

NODE_STAMP := node_modules/.installed

# Incremental: nothing is reinstalled unless one of these files changed. pip puts uv (pinned in constraints.txt)
# into the venv, and uv installs the rest: the same pins in seconds where pip took minutes. The venv keeps pip
# (the CDK layer build and `make lock` use it). The two editable packages go in one call. tools/uv_pip.py hands
# uv the package sources pip is configured with (pip.conf, PIP_* variables), which uv does not read.
$(STAMP): requirements.txt constraints.txt layers/requirements.txt pyproject.toml clients/python/pyproject.toml tools/uv_pip.py
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -c constraints.txt uv
	$(BIN)/python tools/uv_pip.py install --quiet -r requirements.txt -c constraints.txt
	$(BIN)/python tools/uv_pip.py install --quiet --no-deps -e . -e clients/python
	@touch $(STAMP)

# The CDK CLI (package.json) is for `make synth` and deploys only: the tests synthesize through the Python
# library (Node.js runs its jsii kernel), so `make test` does not wait for npm.
$(NODE_STAMP): package.json package-lock.json
	npm ci --silent --no-audit --no-fund
	@touch $(NODE_STAMP)

setup: $(STAMP)

# The review console's browser tests (tests/browser) drive Debian's Chromium with Playwright; Playwright's own
# browser downloads are never used. Only `make test` needs it (`make run` serves the console to your browser). Idempotent: nothing to do when a chromium is on PATH (as root in CI it
# installs the package, elsewhere through sudo).
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || { \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium; }

run: setup
	$(BIN)/agent-memory serve

# mypy runs beside the tests rather than before them: in a fresh clone (no mypy cache) it keeps one core busy for
# ~20 s (pyproject.toml skips the aws_cdk services infra/ does not use), which run alone leaves the other core idle. Its report is printed after the tests' and
# either failing fails the target.
test: setup browser
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	@echo "$(BIN)/mypy (beside the tests; its report follows theirs)"; \
	$(BIN)/mypy > $(VENV)/mypy.log 2>&1 & types=$$!; \
	AGENT_MEMORY_REQUIRE_BROWSER=1 $(BIN)/python -m pytest -n 2 --dist loadgroup --durations=15 \
	  --cov=agent_memory --cov-report=term-missing:skip-covered; tests=$$?; \
	wait $$types; typed=$$?; echo "$(BIN)/mypy:"; cat $(VENV)/mypy.log; \
	exit $$(( tests != 0 ? tests : typed ))

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

synth: setup $(NODE_STAMP)
	npx cdk synth --quiet

bench: setup
	$(BIN)/python bench/recall_latency.py
	$(BIN)/python bench/retrieval_quality.py
	$(BIN)/python bench/prompt_cache.py
	$(BIN)/python bench/dreaming.py
	$(BIN)/python bench/cold_start.py

openapi: setup
	$(BIN)/python -m agent_memory.api.openapi > docs/openapi.json

lock:
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/python -m pip install --quiet -r requirements.txt
	(echo "# Every package the developer environment resolves to, pinned (regenerate: make lock)."; \
	 echo "# requirements.txt names what we depend on; this file fixes the transitive versions too."; \
	 .lock-venv/bin/python -m pip freeze) > constraints.txt
	rm -rf .lock-venv

clean:
	rm -rf $(VENV) node_modules cdk.out .pytest_cache .mypy_cache .coverage
