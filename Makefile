# Two commands for a fresh Linux machine; each sets up .venv itself on first use.
#   make report   run the notebook suite into reports/index.html (replays data/ without a GPU)
#   make test     run the test suite but its slow tier, on PYTEST_WORKERS processes (GPU tests are skipped without a GPU)
#   make test-all every test, the slow tier (slow emulation, notebook runs, big sweeps) included
#   make lint     ruff + mypy (pyproject.toml); CI (.ci/run) runs it, make test and make test-all
#   make hooks    install the pre-commit hooks (the same ruff and mypy on each commit)
#   make gpu-run EXTRAS=notebooks,test,gpu-cuda13   GPU tests, benchmarks, recording (scripts/gpu_run.sh)
#   make circuit [CIRCUIT=poseidon-600] [SETUP=fast|snarkjs]   a circom circuit, key and witness in build/circuits
#   make node-carry   pack node + node_modules into .node/ for a GPU host without node (scripts/node_carry.sh)
# node, circom2, snarkjs, circomlib: `npm ci` from package-lock.json into node_modules (make node;
# make test runs it; node itself comes from the system, installed with apt-get if absent).
# On a GPU machine add CuPy:  make report EXTRAS=notebooks,test,gpu-cuda13   (or gpu-cuda12)
PYTHON ?= python3
PYTEST_WORKERS ?= 2
VENV   ?= .venv
EXTRAS ?= notebooks,test,lint
comma  := ,
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.zkgpu-$(subst $(comma),-,$(EXTRAS))

NODE_STAMP := node_modules/.zkgpu-npm-ci
CIRCUIT ?= poseidon-600
SETUP ?= fast

.PHONY: report test test-all test-slow lint lint-tools hooks gpu-run clean node circuit node-carry

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[$(EXTRAS)]'
	touch $@

report: $(STAMP)
	$(BIN)/zkgpu report

$(NODE_STAMP): package.json package-lock.json
	command -v npm >/dev/null || (apt-get update -qq && apt-get install -y -qq nodejs npm)
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

node: $(NODE_STAMP)

# ruff (rules in pyproject.toml) on the package and the tests; mypy on zkgpu/ (ARCHITECTURE.md)
lint: lint-tools
	$(BIN)/ruff check zkgpu tests
	$(BIN)/mypy

# the lint extra, also where EXTRAS leaves it out (a GPU host's EXTRAS=notebooks,test,gpu-cuda13)
lint-tools: $(STAMP)
	$(BIN)/python -c 'import ruff, mypy, pre_commit' 2>/dev/null || $(BIN)/python -m pip install -q -e '.[lint]'

hooks: lint-tools
	$(BIN)/pre-commit install

# ZKGPU_REQUIRE_NODE: the real-proof tests fail (instead of skipping) if circom2/snarkjs are missing.
# make test leaves out the tests marked slow (pyproject.toml's markers); make test-all runs them too.
test: $(STAMP) $(NODE_STAMP)
	ZKGPU_REQUIRE_NODE=1 $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadgroup -m "not slow" --durations=15

test-all: $(STAMP) $(NODE_STAMP)
	ZKGPU_REQUIRE_NODE=1 $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadgroup

# the slow tier alone (CI runs make test, then this: every test once)
test-slow: $(STAMP) $(NODE_STAMP)
	ZKGPU_REQUIRE_NODE=1 $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadgroup -m slow --durations=15

# the large real circuit (not in make test). SETUP=fast: zkgpu.groth16.setup (insecure, known toxic
# waste, minutes); SETUP=snarkjs: snarkjs's powers of tau + groth16 setup (hours at 2^19 on 2 cores)
circuit: $(STAMP) $(NODE_STAMP)
	$(BIN)/zkgpu circuit $(CIRCUIT) build/circuits $(if $(filter fast,$(SETUP)),--fast)

node-carry: $(NODE_STAMP)
	scripts/node_carry.sh

# Everything that needs a GPU, in one call (tests, benchmarks, recording); see scripts/gpu_run.sh.
gpu-run: $(STAMP)
	PATH=$(abspath $(BIN)):$$PATH scripts/gpu_run.sh

clean:
	rm -rf reports .pytest_cache
