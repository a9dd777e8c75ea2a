# Every target sets up .venv itself when it is missing.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test test-lab bench bench-vector crosscheck-dlio lint clean venv

venv: $(STAMP)

$(STAMP): setup.cfg pyproject.toml
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,mpi,fast]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/aiio run --phase train

# Two passes (tests/conftest.py, docs/TESTING.md): eight workers overlap their waits for
# processes and I/O on 2 cores; then the oracle lab's FUSE pacer runs apart, two tests at a
# time. The rates checked against storage of known speed (throttled devices, two at a time,
# then the GlusterFS volume on one worker) take over six minutes: `make test-lab`, which CI
# runs after `make test`.
test: $(STAMP)
	$(BIN)/python -m pytest -q -m "not serial and not known_speed and not lab and not heavy" -n 8 --dist loadgroup --no-loadscope-reorder --durations=25
	$(BIN)/python -m pytest -q -m "serial and not lab and not heavy" -n 2 --dist loadgroup

# Storage of known speed: blkio-throttled loop devices (root; two at a time: at four, as the
# pass grew, each run missed a throttle somewhere), then the oracle lab's
# scale-out filesystem (a GlusterFS volume of four throttled bricks; glusterfs-server and
# glusterfs-client), one glusterd per machine: one worker. Then the checks that take the
# most CPU (the installed wheel, the damaged-result fuzz, real clients' memory against the
# estimate: about two minutes of CPU that took `make test` past ten), after the timed ones.
test-lab: $(STAMP)
	$(BIN)/python -m pytest -q -m "known_speed and not serial and not lab" -n 2 --dist loadgroup
	$(BIN)/python -m pytest -q -m lab
	$(BIN)/python -m pytest -q -m "heavy and not known_speed and not lab" -n 4 --dist loadgroup

bench: $(STAMP)
	$(BIN)/python -m tools.bench

# The vector phase's reads beside a real DiskANN disk search (docs/PERFORMANCE.md). diskannpy
# (about 90 MB, with a numpy of its own) gets an interpreter of its own.
DISKANN := .venv-diskann
bench-vector: $(STAMP)
	test -x $(DISKANN)/bin/python || { $(PYTHON) -m venv $(DISKANN) && \
		$(DISKANN)/bin/pip install --quiet diskannpy==0.7.0; }
	$(BIN)/python -m tools.vector_check --python $(DISKANN)/bin/python

# aiio beside DLIO 2.0.0 on throttled loop devices (root; docs/PERFORMANCE.md). DLIO and its
# stack (about 7 GB) live in a venv outside the tree: AIIO_DLIO_VENV, else ~/.cache.
crosscheck-dlio: $(STAMP)
	$(BIN)/python -m tools.dlio_side $(DLIO_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) $(DISKANN) build *.egg-info .pytest_cache .ruff_cache aiio-target
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
