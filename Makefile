# latent-claims: `make claims` runs the claims and writes the report; `make test` runs everything.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
ZOO ?= auto
PYTEST_ARGS ?=

.PHONY: setup claims test test-nightly test-browser mutation bench gpu-check lock test-deps clean-venv

setup: $(VENV)/.ready

# The CPU case installs exactly the tested versions, hash-checked, from requirements.lock. A python that
# already has torch (a GPU machine) keeps its torch and takes the rest at the lock's versions (constraints.txt).
$(VENV)/.ready: pyproject.toml requirements.lock constraints.txt
	@if $(PYTHON) -c "import torch" 2>/dev/null; then \
		echo "setup: using the torch already installed"; \
		$(PYTHON) -m venv --system-site-packages $(VENV) && \
		$(PY) -m pip install -q -c constraints.txt -e .; \
	else \
		$(PYTHON) -m venv $(VENV) && \
		$(PY) -m pip install -q --require-hashes -r requirements.lock && \
		$(PY) -m pip install -q --no-deps -e .; \
	fi
	touch $@

# Tools that are not the suite's dependencies (uv compiles the lock, nox runs the dependency sessions).
TOOLS := .tools
FIND_LINKS := $(if $(PIP_FIND_LINKS),--find-links $(PIP_FIND_LINKS))
$(TOOLS)/.ready:
	$(PYTHON) -m venv $(TOOLS) && $(TOOLS)/bin/pip install -q nox uv
	touch $@

# Refresh the lock from pyproject.toml's ranges and requirements.in (the newest versions the indexes serve),
# then run `make test` and commit both files only if it passes.
lock: $(TOOLS)/.ready
	$(TOOLS)/bin/uv pip compile pyproject.toml requirements.in --python-version 3.11 --generate-hashes \
		$(FIND_LINKS) --custom-compile-command "make lock" -o requirements.lock
	$(TOOLS)/bin/uv pip compile pyproject.toml requirements.in --python-version 3.11 --no-emit-package torch \
		$(FIND_LINKS) --no-annotate --custom-compile-command "make lock" -o constraints.txt

# tests/ on the oldest supported (pyproject.toml's lower bounds) and the newest available versions;
# NOX_SESSIONS='deps(newest)' runs one end only (the nightly workflow's newest-dependencies job).
NOX_SESSIONS ?= deps(oldest) deps(newest)
test-deps: $(TOOLS)/.ready
	$(TOOLS)/bin/nox -s $(foreach s,$(NOX_SESSIONS),"$(s)")

claims: setup
	$(PY) -m models prepare --zoo $(ZOO)
	$(PY) -m pytest claims -m gpu --zoo $(ZOO) $(PYTEST_ARGS)

# The self-tests first: a failure stops make before the claims (run times: the README's last fresh-clone measurement).
test: setup
	$(PY) -m models prepare --zoo tiny
	$(PY) -m pytest tests $(PYTEST_ARGS)
	$(PY) -m pytest claims benchmarks --benchmark-disable $(PYTEST_ARGS)

# The self-tests that repeat a whole claims run in another form (tests marked nightly): the nightly workflow's. They
# include test-browser's (marked nightly too); -rs prints why a test skipped (no Chromium: how to install it).
test-nightly: setup
	$(PY) -m models prepare --zoo tiny
	LATENT_CLAIMS_NIGHTLY=1 $(PY) -m pytest tests -m nightly -rs $(PYTEST_ARGS)

# index.html, trends.html and a report in headless Chromium: no console message, the expected elements
# (tests/test_browser.py). Where Chromium is absent the tests skip and say how to install it.
test-browser: setup
	LATENT_CLAIMS_NIGHTLY=1 $(PY) -m pytest tests/test_browser.py -rs $(PYTEST_ARGS)

# A seeded sample of mutants of the measurements, latent_instruments/ and claims/*/*_measures.py (benchmarks/mutation.py,
# cosmic-ray in .tools): each against the self-tests that import its module and, for a measures module, the golden
# comparison of its claims on one fast subject. Score and survivors: runs/mutation/mutation.json. Nightly only (at most
# an hour on 2 cores); MUTATION_ARGS='--instruments 40 --measures 16 --seed 0' sizes the sample.
MUTATION_ARGS ?=
$(TOOLS)/.mutation: $(TOOLS)/.ready
	$(TOOLS)/bin/pip install -q cosmic-ray==8.7.0
	touch $@

mutation: setup $(TOOLS)/.mutation
	$(PY) -m models prepare --zoo tiny
	$(TOOLS)/bin/python -m benchmarks.mutation --python $(PY) $(MUTATION_ARGS)

bench: setup
	mkdir -p runs
	$(PY) -m pytest benchmarks --benchmark-only --benchmark-json=runs/benchmark.json -p no:cacheprovider

# The GPU work in one call of at most 10 minutes (benchmarks/gpu_check.py): S4's recipe and its seed siblings trained as
# one batched job, and its claims,
# S3 at S3's scale on the references, one merged run folder and timings.json in a folder of the call's own under
# GPU_CHECK_OUT (GPU_CHECK_OUT/latest: the newest); S0.6 and S0.7 at
# S0's scale in a run of their own. GPU_CHECK_SIZE=tiny rehearses the same steps on the CPU; GPU_CHECK_PART=s4,s0
# then GPU_CHECK_PART=s3 are the two halves of a 15-minute lease, as two calls. On a machine without network
# whose python3 has every package: make gpu-check PY=python3 (a PY given on the command line skips the setup).
GPU_CHECK_SIZE ?= source
GPU_CHECK_PART ?= all
GPU_CHECK_OUT ?= runs/gpu-check
GPU_CHECK_BUDGET ?= 360
gpu-check: $(if $(filter command line,$(origin PY)),,setup)
	$(PY) -m benchmarks.gpu_check --size $(GPU_CHECK_SIZE) --part $(GPU_CHECK_PART) --out $(GPU_CHECK_OUT) \
		--budget $(GPU_CHECK_BUDGET)

clean-venv:
	rm -rf $(VENV)
