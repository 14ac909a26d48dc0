# gpu-provision: two commands on a fresh Debian 12 machine (as root): `make demo` and `make test`.
SHELL := /bin/bash
.DEFAULT_GOAL := help
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEMO_DIR := demo
DEMO_SPEC := $(DEMO_DIR)/cluster.yaml
export DEBIAN_FRONTEND := noninteractive

# Debian packages: venv support, SSH client, the sandbox (namespaces, bridge, overlay, debootstrap,
# apt proxy, tc), gpg for the stand-in NVIDIA and Slurm site repository fixtures (dpkg-dev: dpkg-scanpackages for
# the latter), headless Chromium for the HTML report test, tmux for the test of the live deploy view on a terminal.
APT_PACKAGES := python3-venv openssh-client iproute2 iputils-ping debootstrap apt-cacher-ng zstd \
	ca-certificates gpg dpkg-dev chromium tmux

.PHONY: help deps venv test demo demo-down lint clean examples lock newest promtool

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

deps:  ## install the Debian packages the tool and its tests need (root)
	@missing=$$(for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing:" $$missing; \
		apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

# Python packages come from the committed lock (every package of the runtime and test extras, exact version and
# hashes), so a fresh machine installs exactly what was tested. pyproject.toml keeps ranges for `pip install` users.
# A changed lock rebuilds .venv from nothing: nothing that the lock no longer names stays behind.
LOCK := requirements.lock
UV_VERSION := 0.13.9
LOCK_TOOL := build/lock-tool

$(BIN)/.installed: $(LOCK) pyproject.toml
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --no-deps --require-hashes -r $(LOCK)
	$(BIN)/pip install -q --no-deps --no-build-isolation -e .
	$(BIN)/pip check
	touch $@

venv: $(BIN)/.installed  ## create .venv with the package and its test extras, from requirements.lock

# The unit and moto tests share nothing with the sandbox's end-to-end tests (no cluster, no bridge, no state root),
# and the end-to-end tests leave the CPUs mostly idle (they wait on nodes): the two run side by side, the unit log
# printed after the end-to-end one, and `make test` fails when either does.
UNIT_LOG := build/test-unit.log
# End-to-end tests on sandbox clusters of their own, run in the unit tests' lane once those are done (the lane is
# idle for the rest of the end-to-end run): test_bisection.py brings up 1+8 nodes (about 6 minutes), test_gpu_stack.py
# 1+2 nodes with the stand-in NVIDIA repository (about 3), test_debian12.py 1+2 Debian 12 nodes (about 1.5).
E2E_BESIDE := tests/e2e/test_bisection.py tests/e2e/test_gpu_stack.py tests/e2e/test_debian12.py

# promtool (Debian's prometheus package) checks and unit-tests the monitoring role's alert rules and configuration;
# amtool (prometheus-alertmanager) checks Alertmanager's. The packages are unpacked under build/, never installed:
# installing them would start a Prometheus and an Alertmanager on this machine.
PROMTOOL := build/prometheus-tools/usr/bin/promtool
PROMETHEUS_TOOLS := prometheus prometheus-alertmanager

$(PROMTOOL):
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && { chown _apt "$$tmp" 2>/dev/null || true; } && \
	(cd "$$tmp" && { apt-get download -qq $(PROMETHEUS_TOOLS) || \
		{ apt-get update -qq && apt-get download -qq $(PROMETHEUS_TOOLS); }; }) && \
	rm -rf build/prometheus-tools && mkdir -p build/prometheus-tools && \
	for deb in "$$tmp"/*.deb; do dpkg-deb -x "$$deb" build/prometheus-tools; done
	test -x build/prometheus-tools/usr/bin/amtool && test -x $@ && touch $@

promtool: $(PROMTOOL)  ## unpack promtool and amtool from Debian's packages into build/ (the monitoring tests use them)

test: deps venv $(PROMTOOL)  ## static checks (ruff), then the whole test suite (unit and moto beside sandbox end-to-end)
	$(BIN)/ruff check --no-cache provision tests bench playbooks
	@mkdir -p $(dir $(UNIT_LOG))
	@{ $(BIN)/pytest -m "not e2e" -p no:cacheprovider; unit=$$?; \
	  echo "======== end-to-end tests on clusters of their own, after the unit tests: $(E2E_BESIDE) ========"; \
	  $(BIN)/pytest -m e2e -p no:cacheprovider $(E2E_BESIDE); beside=$$?; \
	  echo "unit and moto tests exit $$unit, $(E2E_BESIDE) exit $$beside"; \
	  test $$unit -eq 0 && test $$beside -eq 0; } > $(UNIT_LOG) 2>&1 & unit=$$!; \
	$(BIN)/pytest -m e2e $(addprefix --ignore=,$(E2E_BESIDE)); e2e=$$?; \
	wait $$unit; unit=$$?; \
	echo "======== unit and moto tests (run beside the end-to-end tests), then $(E2E_BESIDE): $(UNIT_LOG) ========"; \
	cat $(UNIT_LOG); \
	echo "make test: unit and moto tests and $(E2E_BESIDE) exit $$unit, the other end-to-end tests exit $$e2e"; \
	test $$unit -eq 0 && test $$e2e -eq 0

lock:  ## refresh requirements.lock to the newest versions pyproject.toml allows (then run `make test`)
	test -x $(LOCK_TOOL)/bin/uv || { $(PYTHON) -m venv $(LOCK_TOOL) && $(LOCK_TOOL)/bin/pip install -q uv==$(UV_VERSION); }
	$(LOCK_TOOL)/bin/uv pip compile pyproject.toml requirements-build.in --extra test --universal \
		--python-version 3.11 --generate-hashes --upgrade --custom-compile-command 'make lock' -o $(LOCK)

newest: deps  ## the unit suite against the newest versions pyproject.toml allows, in a scratch venv (not the lock)
	$(PYTHON) bench/newest_deps.py

demo: deps venv  ## bring up the sandbox cluster, deploy Slurm, certify it, print the report
	mkdir -p $(DEMO_DIR)
	test -f $(DEMO_SPEC) || $(BIN)/provision init --provider sandbox -o $(DEMO_SPEC)
	$(BIN)/provision validate $(DEMO_SPEC)
	$(BIN)/provision up $(DEMO_SPEC)
	$(BIN)/provision status $(DEMO_SPEC)
	$(BIN)/provision exec $(DEMO_SPEC) -- sinfo

demo-down:  ## remove the demo cluster
	$(BIN)/provision down $(DEMO_SPEC)

lint: venv  ## ansible-lint the roles
	$(BIN)/ansible-lint playbooks/

clean:  ## remove the venv and build outputs (not cluster state)
	rm -rf $(VENV) build dist *.egg-info

examples: venv  ## re-render the example inventories under inventories/ (golden files)
	for spec in inventories/*.yaml; do \
		PROVISION_STATE_DIR=/var/lib/gpu-provision $(BIN)/provision inventory $$spec -o $${spec%.yaml} >/dev/null; \
	done
