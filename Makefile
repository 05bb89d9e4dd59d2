# Fresh-machine entry points: `make demo` and `make test` install everything they need.
# Re-running them is fast: the virtual environment is rebuilt only when pyproject.toml changes.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.skcalbound-installed
EXTRAS ?= plot,test,cli,dask,lint
DOCS_STAMP := $(VENV)/.skcalbound-docs-installed
ROOT_PTH_STAMP := $(VENV)/.skcalbound-root-on-path

.PHONY: demo lint test test-slow test-study bench reproduce docs install install-docs system-deps clean

demo: install
	$(BIN)/python examples/demo.py

# The formatter and the linter (settings in pyproject.toml); CI runs this first.
lint: install
	$(BIN)/ruff format --check --diff .
	$(BIN)/ruff check .

# PYTHONDONTWRITEBYTECODE (set by some environments, this one included) would stop
# pytest from caching its rewritten test modules: each worker would rewrite them all
# (~2.5 s of CPU) on every run; the cache is __pycache__, which git ignores.
PYTEST := PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest

# The tests and the docstrings' examples in one run on two worker processes
# (pytest-xdist): one start-up, and the summary lists every failure.
test: install
	$(PYTEST) -n 2 tests --doctest-modules skcalbound

# The slow cells (large Monte Carlo runs with R = 100), without the study-size ones.
# Cells take from milliseconds to about a minute: a worker that runs out of work takes
# pending cells from the other (worksteal), so no core idles through the last one.
test-slow: install
	$(PYTEST) -n 2 --dist worksteal -m "slow and not study"

# The slow Monte Carlo cells at their full sizes (R = 500 or 1000): hours of CPU.
test-study: install
	$(PYTEST) -n 2 --dist worksteal -m study

bench: install
	$(BIN)/python benchmarks/bench_bounds.py
	$(BIN)/python benchmarks/bench_slack.py
	$(BIN)/python benchmarks/bench_tv_cells.py
	$(BIN)/python benchmarks/bench_adaptive.py

# The paper's synthetic study (docs/reproduce.rst): 4 problems, n = 1e3..1e7, 64 repeats.
reproduce: install
	$(BIN)/python -m skcalbound.experiments --n-jobs 2 --output-dir docs/reproduce

# The documentation, with warnings as errors; runs every examples/plot_*.py.
docs: install-docs
	rm -rf docs/_build docs/generated docs/auto_examples docs/sg_execution_times.rst
	$(BIN)/python -m sphinx -W --keep-going -b html docs docs/_build/html
	@test -f docs/_build/html/_static/mathjax/tex-chtml.js \
		|| { echo "docs: MathJax was not copied into _static/mathjax" >&2; exit 1; }
	@if grep -rlqiE 'src="https?://[^"]*mathjax' --include='*.html' docs/_build/html; then \
		echo "docs: a page loads MathJax from the network" >&2; exit 1; fi
	$(BIN)/python docs/check_gallery_times.py
	@echo "Documentation: docs/_build/html/index.html"

install: $(STAMP) $(ROOT_PTH_STAMP)

install-docs: $(DOCS_STAMP)

$(DOCS_STAMP): pyproject.toml $(STAMP) $(ROOT_PTH_STAMP)
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

# `pip install -e` of this flat layout imports skcalbound through a finder that Python
# consults after sys.path, so a folder named skcalbound without __init__.py (this clone,
# seen from its parent folder) became an empty namespace package that won. The clone's
# root as a plain sys.path entry makes the real package win from any folder.
$(ROOT_PTH_STAMP): $(STAMP)
	@$(BIN)/python -c "import pathlib, sysconfig; pathlib.Path(sysconfig.get_path('purelib'), 'skcalbound_clone_root.pth').write_text(str(pathlib.Path.cwd()) + '\\n')"
	@touch $(ROOT_PTH_STAMP)

clean:
	rm -rf $(VENV) build *.egg-info demo_output .pytest_cache \
		docs/_build docs/generated docs/auto_examples docs/sg_execution_times.rst
