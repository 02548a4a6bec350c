# The README's two commands: `make demo` and `make test`. Each sets everything up first.
VENV ?= .venv
PYTHON := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed

.PHONY: demo test lint typecheck pytest statements install clean

demo: $(INSTALLED)
	$(VENV)/bin/retrieval demo
	@echo 'To use the retrieval command in this shell: . $(VENV)/bin/activate'

# The type check runs beside the tests: they wait on servers and processes much of the time
# (docs/development.md). Either one failing fails the run.
test: lint
	$(MAKE) --no-print-directory -j2 typecheck pytest

lint: $(INSTALLED)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(INSTALLED)
	$(VENV)/bin/mypy --strict retrieval

# Two workers (pytest-xdist), each with its own embedded server: the suite's time on two cores
# is about 0.7x that of one worker (docs/development.md).
pytest: $(INSTALLED)
	$(PYTHON) -m pytest -n 2

# Rewrites docs/statements/*.sql, the read statement of each pinned shape, after an intended
# change to the SQL (tests/unit/test_statement_files.py fails until they match).
statements: $(INSTALLED)
	$(PYTHON) -m pytest -q tests/unit/test_statement_files.py --snapshot-update

install: $(INSTALLED)

# constraints.txt pins the CPU build of PyTorch so pip never pulls a multi-GB CUDA build.
# --no-compile: Python compiles a module when it is first imported, so the install does not
# compile the many files of PyTorch and the frameworks that nothing imports (a third of the
# install's time, docs/development.md).
$(INSTALLED): pyproject.toml constraints.txt
	@python3 -c 'import sys; sys.exit(sys.version_info < (3, 11) and "retrieval needs Python 3.11 or newer" or 0)'
	test -x $(PYTHON) || python3 -m venv $(VENV)
	$(PYTHON) -m pip install --quiet --no-compile --constraint constraints.txt --editable '.[dev]'
	touch $@

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache
