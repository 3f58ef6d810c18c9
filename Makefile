# The two commands of the README, and the pieces they are made of.
#   make run    set everything up, then open Imprint on the starter model and sample workspace
#   make test   set everything up, then run the checks and the whole test suite
PYTHON_BIN := .venv/bin
PYTEST_ARGS ?=

.PHONY: run test setup setup-test system-deps-check lint pytest bench package clean

run: setup
	$(PYTHON_BIN)/python -m imprint_desktop

test: setup-test system-deps-check lint pytest

setup:
	scripts/system-deps.sh run
	scripts/venv.sh run

setup-test:
	scripts/system-deps.sh test
	scripts/venv.sh test

# Every program the tests start comes from scripts/system-deps.sh test: checked in seconds, before
# the suite, so a missing one is named here rather than failing a test half an hour in.
system-deps-check:
	$(PYTHON_BIN)/pytest -q -p no:cacheprovider tests/unit/test_system_deps.py

lint:
	$(PYTHON_BIN)/ruff check .
	$(PYTHON_BIN)/ruff format --check .
	$(PYTHON_BIN)/mypy
	$(PYTHON_BIN)/lint-imports

pytest:
	$(PYTHON_BIN)/pytest $(PYTEST_ARGS)

bench: setup-test
	for script in bench/bench_*.py; do $(PYTHON_BIN)/python "$$script" || exit 1; done

# The frozen bundle, its smoke test, the installer and the Debian package (packaging/README.md).
package: setup-test
	$(PYTHON_BIN)/python packaging/build.py

clean:
	rm -rf .venv build dist .pytest_cache .mypy_cache .ruff_cache
