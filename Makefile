# Every target sets up .venv itself when it is missing.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test bench lint clean venv

venv: $(STAMP)

$(STAMP): setup.cfg pyproject.toml
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,mpi,fast]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/aiio run --phase train

# Three passes (tests/conftest.py, docs/TESTING.md): eight workers overlap their waits for
# processes and I/O on 2 cores; then the FUSE rate oracle's lab runs apart, two tests at a
# time; then the rates checked against throttled devices, four at a time.
test: $(STAMP)
	$(BIN)/python -m pytest -q -m "not serial and not known_speed" -n 8 --dist loadgroup --no-loadscope-reorder
	$(BIN)/python -m pytest -q -m serial -n 2
	$(BIN)/python -m pytest -q -m "known_speed and not serial" -n 4 --dist loadgroup

bench: $(STAMP)
	$(BIN)/python -m tools.bench

lint: $(STAMP)
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache aiio-target
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
