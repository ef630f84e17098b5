# Two commands for a fresh Linux machine; each sets up .venv itself on first use.
#   make report   run the notebook suite into reports/index.html (replays data/ without a GPU)
#   make test     run the test suite (GPU tests are skipped without a GPU)
#   make gpu-run EXTRAS=notebooks,test,gpu-cuda13   GPU tests, benchmarks, recording (scripts/gpu_run.sh)
# On a GPU machine add CuPy:  make report EXTRAS=notebooks,test,gpu-cuda13   (or gpu-cuda12)
PYTHON ?= python3
VENV   ?= .venv
EXTRAS ?= notebooks,test
comma  := ,
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.zkgpu-$(subst $(comma),-,$(EXTRAS))

.PHONY: report test gpu-run clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[$(EXTRAS)]'
	touch $@

report: $(STAMP)
	$(BIN)/zkgpu report

test: $(STAMP)
	$(BIN)/python -m pytest

# Everything that needs a GPU, in one call (tests, benchmarks, recording); see scripts/gpu_run.sh.
gpu-run: $(STAMP)
	PATH=$(abspath $(BIN)):$$PATH scripts/gpu_run.sh

clean:
	rm -rf reports .pytest_cache
