# Two commands for a fresh machine: `make run` and `make test`. Everything installs into .venv.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
RUN_STAMP := $(VENV)/.run-installed
DEV_STAMP := $(VENV)/.dev-installed
# The dashboard's browser tests drive Debian's chromium through Playwright's executable_path:
# never `playwright install`, which downloads a browser build of its own.
CHROMIUM ?= /usr/bin/chromium

BINDIR ?= $(HOME)/.local/bin

.PHONY: run install compile test test-fast lint format bench eval clean help

help:
	@echo "make run    install into $(VENV) and serve lorestore over HTTP (MCP + REST) on the embedded store"
	@echo "make install  link the lorestore command into $(BINDIR) (BINDIR=DIR for another folder)"
	@echo "make test   install dev dependencies (and Debian's chromium, as root), lint, type-check"
	@echo "            and run the whole suite, the dashboard's browser tests included"
	@echo "make test-fast  the inner loop: the suite without lint, mypy and the slow-marked tests"
	@echo "            (real server processes, remote mode, multi-process writers); PostgreSQL included"
	@echo "make lint   ruff + mypy strict on src/"
	@echo "make bench  run the benchmarks (figures go to docs/benchmarks.md by hand)"
	@echo "make eval   the retrieval eval of evals/ on SQLite and PostgreSQL (fails on a forbidden hit)"

$(BIN)/python:
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "lorestore needs Python 3.11+"'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(RUN_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	@touch $@

# An editable install runs the checkout's sources: their byte code is written here, so a
# start (every hook a host runs) does not compile every module again where the environment
# sets PYTHONDONTWRITEBYTECODE. Quick when nothing changed; a changed file is recompiled.
compile: $(RUN_STAMP)
	@$(BIN)/python -m compileall -q src >/dev/null

# The semantic extra too: the tests of hybrid retrieval run with its model (offline).
$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev,semantic]'
	@touch $@ $(RUN_STAMP)

# Prints the URL and, on first start only, an admin token (shown once, stored hashed).
run: $(RUN_STAMP) compile
	@echo "The lorestore command is $(abspath $(BIN))/lorestore; \`make install\` puts it on your PATH."
	@$(BIN)/lorestore serve

# A link, not a copy: the command keeps running this checkout's virtual environment.
install: $(RUN_STAMP) compile
	@mkdir -p "$(BINDIR)"
	@ln -sf "$(abspath $(BIN))/lorestore" "$(BINDIR)/lorestore"
	@echo "linked $(BINDIR)/lorestore -> $(abspath $(BIN))/lorestore"
	@case ":$$PATH:" in *":$(BINDIR):"*) ;; *) echo "$(BINDIR) is not on your PATH: add it (e.g. export PATH=\"$(BINDIR):\$$PATH\" in your shell's profile)";; esac

lint: $(DEV_STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy

format: $(DEV_STAMP)
	$(BIN)/ruff format src tests benchmarks
	$(BIN)/ruff check --fix src tests benchmarks

test: lint $(CHROMIUM)
	$(BIN)/python -m pytest -q

# Installed only when missing, and only as root (apt); anyone else is told the command.
$(CHROMIUM):
	@if [ "$$(id -u)" != 0 ]; then \
		echo "the dashboard's browser tests need Debian's chromium at $(CHROMIUM):"; \
		echo "  run 'sudo apt-get update && sudo apt-get install -y chromium', then make test again"; \
		exit 1; \
	fi
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium

test-fast: $(DEV_STAMP)
	$(BIN)/python -m pytest -q -m "not slow"

bench: $(DEV_STAMP)
	$(BIN)/python benchmarks/run.py

# A superuser URL: the eval creates a throwaway database there. EVAL_DATABASE_URL= runs SQLite only.
EVAL_DATABASE_URL ?= postgresql://postgres@127.0.0.1:5432/postgres
# EVAL_ARGS=--lexical: full-text retrieval only, as without the semantic extra.
eval: $(RUN_STAMP)
	$(BIN)/lorestore eval $(if $(EVAL_DATABASE_URL),--database-url $(EVAL_DATABASE_URL)) $(EVAL_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
