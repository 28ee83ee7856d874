# Two commands matter: `make run` (set up + start the local service) and `make test` (set up + run every test).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20

.PHONY: setup run test lint format synth bench openapi lock clean

$(STAMP): requirements.txt constraints.txt layers/requirements.txt pyproject.toml package.json
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -r requirements.txt -c constraints.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	@if [ -f package-lock.json ]; then npm ci --silent --no-audit --no-fund; fi
	@touch $(STAMP)

setup: $(STAMP)

run: setup
	$(BIN)/agent-memory serve

test: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -n 2 --cov=agent_memory --cov-report=term-missing:skip-covered

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

synth: setup
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
