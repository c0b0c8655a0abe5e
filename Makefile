# latent-claims: `make claims` runs the claims and writes the report; `make test` runs everything.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
ZOO ?= auto
PYTEST_ARGS ?=

.PHONY: setup claims test bench clean-venv

setup: $(VENV)/.ready

# A python that already has torch (a GPU machine) is used as is; otherwise the
# CPU build torch==2.13.0 is installed rather than gigabytes of CUDA packages.
$(VENV)/.ready: pyproject.toml
	@if $(PYTHON) -c "import torch" 2>/dev/null; then \
		echo "setup: using the torch already installed"; \
		$(PYTHON) -m venv --system-site-packages $(VENV); \
	else \
		$(PYTHON) -m venv $(VENV) && $(PY) -m pip install -q torch==2.13.0; \
	fi
	$(PY) -m pip install -q -e .
	touch $@

claims: setup
	$(PY) -m models prepare --zoo $(ZOO)
	$(PY) -m pytest claims -m gpu --zoo $(ZOO) $(PYTEST_ARGS)

test: setup
	$(PY) -m models prepare --zoo tiny
	$(PY) -m pytest tests claims benchmarks --benchmark-disable $(PYTEST_ARGS)

bench: setup
	mkdir -p reports
	$(PY) -m pytest benchmarks --benchmark-only --benchmark-json=reports/benchmark.json -p no:cacheprovider

clean-venv:
	rm -rf $(VENV)
