# Two commands: `make run` and `make test`. Everything else is a step they call.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: run test test-fast lint bench services-test clean

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[postgres,redis]'
	touch $@

$(VENV)/.installed-dev: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@ $(VENV)/.installed

run: export LLMWIKI_DEBUG ?= 1
run: $(VENV)/.installed
	$(PY) manage.py migrate --noinput
	$(PY) manage.py load_demo
	$(PY) manage.py setup_schedules
	$(PY) manage.py serve --exit-with-parent 127.0.0.1:8000

# The whole suite: unit, integration, browser (Chromium), then the PostgreSQL and Redis
# suites against real servers started for the run.
test: $(VENV)/.installed-dev
	scripts/ensure-system-packages
	$(PY) -m pytest
	scripts/with-scaleout-services $(PY) -m pytest -m "not browser" -p no:randomly -q

test-fast: $(VENV)/.installed-dev
	$(PY) -m pytest -m "not browser" -x -q

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

bench: $(VENV)/.installed-dev
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) var test-results
