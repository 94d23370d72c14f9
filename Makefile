# rocketkube: `make run` starts a local cluster, `make test` runs every check.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
SOURCES := common namesrv broker client bench operator spark launcher tests hatch_build.py tools
NODE_DIR := tests/interop/node
NODE_STAMP := $(NODE_DIR)/node_modules/.installed-stamp

.PHONY: install lint test pytest run clean crds sandbox bench-operator dashboards prometheus
.PHONY: bench-spark

# uv resolves and installs in seconds what pip takes minutes for; pip when uv cannot run.
# The install builds the compiled modules (hatch_build.py), so a changed .pyx reinstalls.
COMPILED_SOURCES := $(shell find common namesrv broker client operator -name '*.pyx' -o -name '*.pxi')
$(STAMP): pyproject.toml hatch_build.py $(COMPILED_SOURCES)
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet uv && $(VENV)/bin/uv pip install --quiet --python $(PY) -e '.[test]' \
		|| $(PY) -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

# Real Node.js RocketMQ clients for the interop tests (skipped when npm is missing).
$(NODE_STAMP): $(NODE_DIR)/package.json $(NODE_DIR)/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
		cd $(NODE_DIR) && npm ci --no-audit --no-fund --loglevel=error && touch node_modules/.installed-stamp; \
	else echo "npm not found: the Node.js interop tests will be skipped"; fi

# The Python and Node.js installs run side by side: both mostly wait on the network.
install:
	@$(MAKE) --no-print-directory -j2 $(STAMP) $(NODE_STAMP)

lint: install
	$(VENV)/bin/ruff check $(SOURCES)
	$(VENV)/bin/ruff format --check $(SOURCES)
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

# One test process per core (pytest-xdist); the slowest tests are listed at the end: CI must
# stay under 30 minutes. Tests of one xdist_group share a worker (the Spark ones: one JVM).
# The whole suite runs twice: with the compiled modules, then on their pure-Python siblings
# (ROCKETKUBE_NO_EXTENSIONS=1), leaving out only the tests about the compiled modules.
pytest: install prometheus
	$(VENV)/bin/pytest -n auto --dist loadgroup --durations=15 $(PYTEST_ARGS)
	ROCKETKUBE_NO_EXTENSIONS=1 $(VENV)/bin/pytest -n auto --dist loadgroup -m "not compiled" \
		--durations=5 $(PYTEST_ARGS)

test: lint pytest

# The CRDs are generated from the operator's pydantic models; a test fails when stale.
crds: install
	$(PY) -m rocketkube.operator.api.crds crds
	cp crds/*.yaml charts/rocketkube/crds/

run: install
	$(VENV)/bin/rocketkube local --data-dir .data

# A Kubernetes on this machine (needs root): the emulated API server, the operator's CRDs and
# a harness running pods as real processes in network namespaces; prints a KUBECONFIG for
# kubectl. `make sandbox SANDBOX_ARGS=--demo` also runs a small BrokerCluster's pods.
sandbox: install
	PYTHONPATH=tests/support $(PY) tools/sandbox.py $(SANDBOX_ARGS)

# Hostile input (docs/reliability.md): a long fuzz run of every decoder a peer reaches,
# printing inputs tried and failures per decoder. `make fuzz FUZZ_ARGS='--examples 5000'`
.PHONY: fuzz
fuzz: install
	PYTHONPATH=tests/support $(PY) tools/fuzz_decoders.py $(FUZZ_ARGS)

# Figures of the operator against the emulated API server (not a test: it prints numbers).
# `make bench-operator BENCH_ARGS='--topics 100 --json'`
bench-operator: install
	PYTHONPATH=tests/support $(PY) tools/bench_operator.py $(BENCH_ARGS)

# Figures of the Spark data source on local[2] (not a test: it prints numbers): batch read of
# 1,000,000 100-byte messages beside the same rows from Parquet, and the archive job.
# `make bench-spark BENCH_ARGS='--messages 100000 --json'`
bench-spark: install
	PYTHONPATH=tests/support $(PY) tools/bench_spark.py $(BENCH_ARGS)

# Grafana dashboards as code (tools/dashboards): the JSON the Helm chart ships; a test fails
# when stale. The monitoring tests need Debian's prometheus (prometheus and promtool): installed
# here when missing and apt-get can (as root), else those tests are skipped and say why.
dashboards: install
	PYTHONPATH=tools $(PY) -m dashboards charts/rocketkube/dashboards

prometheus:
	@command -v promtool >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
		&& { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends prometheus >/dev/null; } \
		|| echo "prometheus/promtool not installed: the monitoring tests will be skipped"; }

# The container image (Dockerfile): needs a Docker engine with BuildKit, which the project's
# own machines and CI do not run; there tests/image/ checks the Dockerfile and builds and
# installs the wheel the image would hold. `make image IMAGE=registry/name` to push elsewhere.
IMAGE ?= rocketkube/rocketkube
IMAGE_VERSION = $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
.PHONY: image
image:
	@docker info >/dev/null 2>&1 || { echo "make image: no Docker engine runs here" \
		"(docker info failed): build the image where one does" >&2; exit 1; }
	DOCKER_BUILDKIT=1 docker build --build-arg VERSION=$(IMAGE_VERSION) \
		--build-arg REVISION=$$(git rev-parse HEAD 2>/dev/null || echo unknown) \
		--build-arg CREATED=$$(date -u +%Y-%m-%dT%H:%M:%SZ) \
		-t $(IMAGE):$(IMAGE_VERSION) .

clean:
	rm -rf $(VENV) .data .mypy_cache .ruff_cache .pytest_cache
