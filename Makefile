# Two commands for a fresh machine, each doing all of its own set-up:
#   make demo   show Lahar at work on a local dev cluster (ARGS=--keep leaves it running)
#   make test   run every test (unit, then integration against a real control plane, then
#               end to end: Lahar's scheduler on it, and Lahar installed from manifests/ on a real
#               node, which needs root)
#   make image  build Lahar's image from the Dockerfile (buildah; no registry or Docker engine)
# The first run creates .venv, installs Lahar with its dev tools, and builds the control plane and a
# real node's kubelet and kube-proxy from Go modules into ~/.cache/lahar (about 10 minutes cold on
# 2 cores; seconds afterwards).

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
ARGS ?=
PYTEST_ARGS ?=

.PHONY: demo test unit image lint bench bench-webhook bench-memory bench-decode bench-simulate bench-whatif bench-compare bench-walks bench-topology bench-e2e bench-backlog bench-scaling faults controlplane dist clean

$(INSTALLED): pyproject.toml
	@echo "lahar: setting up $(VENV) (Python packages from PyPI)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	@touch $@

controlplane: $(INSTALLED)
	$(BIN)/lahar dev-cluster build --real-node --tools

image: $(INSTALLED)
	$(BIN)/lahar dev-cluster image

demo: controlplane
	$(BIN)/lahar demo $(ARGS)

test: controlplane
	$(BIN)/pytest $(PYTEST_ARGS)

unit: $(INSTALLED)
	$(BIN)/pytest tests/unit $(PYTEST_ARGS)

bench: $(INSTALLED)
	$(BIN)/python benchmarks/verbs.py $(ARGS)

bench-webhook: $(INSTALLED)
	$(BIN)/python benchmarks/webhook.py $(ARGS)

bench-memory: $(INSTALLED)
	$(BIN)/python benchmarks/memory.py $(ARGS)

bench-decode: $(INSTALLED)
	$(BIN)/python benchmarks/decode.py $(ARGS)

bench-simulate: $(INSTALLED)
	$(BIN)/python benchmarks/simulate.py $(ARGS)

bench-whatif: $(INSTALLED)
	$(BIN)/python benchmarks/whatif.py $(ARGS)

bench-compare: $(INSTALLED)
	$(BIN)/python benchmarks/compare.py $(ARGS)

bench-walks: $(INSTALLED)
	$(BIN)/python benchmarks/walks.py $(ARGS)

bench-topology: $(INSTALLED)
	$(BIN)/python benchmarks/topology.py $(ARGS)

bench-e2e: controlplane
	$(BIN)/python benchmarks/e2e.py $(ARGS)

bench-backlog: controlplane
	$(BIN)/python benchmarks/backlog.py $(ARGS)

bench-scaling: controlplane
	$(BIN)/python benchmarks/scaling.py $(ARGS)

faults: controlplane
	$(BIN)/python benchmarks/faults.py $(ARGS)

lint: $(INSTALLED)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/lahar crds --check
	$(BIN)/hadolint Dockerfile

# The sdist and the wheel (built from the sdist) into dist/: `pip install dist/lahar-*.whl`
# puts `lahar` and `kubectl-lahar` (the kubectl plugin: `kubectl lahar ...`) on PATH.
dist: $(INSTALLED)
	$(BIN)/python -m build --quiet --outdir dist .

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache *.egg-info
