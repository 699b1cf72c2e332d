# The two set-up commands: `make run` (the service, embedded: no Postgres or Redis needed; installs
# requirements.txt only) and `make test` (the whole suite against real Postgres and Redis; installs
# requirements-dev.txt too: pytest, Playwright, hypothesis, import-linter).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev

TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/schedboard
TEST_REDIS_URL ?= redis://127.0.0.1:6379/15

.PHONY: run test lint bench venv clean

venv: $(STAMP)

$(STAMP): requirements.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $(STAMP)

$(DEV_STAMP): $(STAMP) requirements-dev.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $(DEV_STAMP)

# `make run SCENARIO=scenarios/node-loss.yaml [TIME_SCALE=10]` plays a scenario in the background.
SCENARIO ?=
TIME_SCALE ?= 1
run: $(STAMP)
	$(BIN)/python manage.py migrate --verbosity 0
	$(BIN)/python manage.py run $(if $(SCENARIO),--scenario $(SCENARIO) --time-scale $(TIME_SCALE))

# The import contracts in .importlinter (docs/architecture.md): arrows only run down.
lint: $(DEV_STAMP)
	$(BIN)/lint-imports

test: $(DEV_STAMP)
	DATABASE_URL="$${DATABASE_URL:-$(TEST_DATABASE_URL)}" REDIS_URL="$${REDIS_URL:-$(TEST_REDIS_URL)}" \
		$(BIN)/python -m pytest

bench: $(STAMP)
	DATABASE_URL="$${DATABASE_URL:-$(TEST_DATABASE_URL)}" REDIS_URL="$${REDIS_URL:-redis://127.0.0.1:6379/14}" \
		DJANGO_SECRET_KEY="$${DJANGO_SECRET_KEY:-bench-only-secret}" $(BIN)/python manage.py bench --json

clean:
	rm -rf $(VENV) db.sqlite3 var .grimp_cache .import_linter_cache
