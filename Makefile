# Fresh-machine entry points: `make demo` and `make test` install everything they need.
# Re-running them is fast: the virtual environment is rebuilt only when pyproject.toml changes.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.skcalbound-installed
EXTRAS ?= plot,test,cli
DOCS_STAMP := $(VENV)/.skcalbound-docs-installed

.PHONY: demo test test-slow bench reproduce docs install install-docs system-deps clean

demo: install
	$(BIN)/python examples/demo.py

test: install
	$(BIN)/python -m pytest
	$(BIN)/python -m pytest --doctest-modules skcalbound -p no:cacheprovider

test-slow: install
	$(BIN)/python -m pytest -m slow

bench: install
	$(BIN)/python benchmarks/bench_bounds.py

# The paper's synthetic study (docs/reproduce.rst): 4 problems, n = 1e3..1e7, 64 repeats.
reproduce: install
	$(BIN)/python -m skcalbound.experiments --n-jobs 2 --output-dir docs/reproduce

# The documentation, with warnings as errors; runs every examples/plot_*.py.
docs: install-docs
	rm -rf docs/_build docs/generated docs/auto_examples docs/sg_execution_times.rst
	$(BIN)/python -m sphinx -W --keep-going -b html docs docs/_build/html
	$(BIN)/python docs/check_gallery_times.py
	@echo "Documentation: docs/_build/html/index.html"

install: $(STAMP)

install-docs: $(DOCS_STAMP)

$(DOCS_STAMP): pyproject.toml $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[$(EXTRAS),docs]"
	@touch $(DOCS_STAMP)

# prox-tv builds from source against the system LAPACKE headers.
system-deps:
	@bash .ci/ensure-system-deps

$(STAMP): pyproject.toml | system-deps
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[$(EXTRAS)]"
	@touch $(STAMP)

clean:
	rm -rf $(VENV) build *.egg-info demo_output .pytest_cache \
		docs/_build docs/generated docs/auto_examples docs/sg_execution_times.rst
