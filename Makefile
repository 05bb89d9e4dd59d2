# Fresh-machine entry points: `make demo` and `make test` install everything they need.
# Re-running them is fast: the virtual environment is rebuilt only when pyproject.toml changes.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.skcalbound-installed
EXTRAS ?= plot,test

.PHONY: demo test test-slow bench install system-deps clean

demo: install
	$(BIN)/python examples/demo.py

test: install
	$(BIN)/python -m pytest
	$(BIN)/python -m pytest --doctest-modules skcalbound -p no:cacheprovider

test-slow: install
	$(BIN)/python -m pytest -m slow

bench: install
	$(BIN)/python benchmarks/bench_bounds.py

install: $(STAMP)

# prox-tv builds from source against the system LAPACKE headers.
system-deps:
	@bash .ci/ensure-system-deps

$(STAMP): pyproject.toml | system-deps
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[$(EXTRAS)]"
	@touch $(STAMP)

clean:
	rm -rf $(VENV) build *.egg-info demo_output .pytest_cache
