# ackwise: run 'make help' for the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV ?= .venv
PY := $(VENV)/bin/python
# The pinned P4 toolchain first on PATH when ackwise uses it (tools/toolchain.sh; README, "The P4
# toolchain"): a bmv2/p4c of the user's own stays in use unless ACKWISE_TOOLCHAIN=pinned.
ACKWISE_TOOLCHAIN ?= auto
export ACKWISE_TOOLCHAIN
TOOLCHAIN_PATH := $(shell ACKWISE_TOOLCHAIN=$(ACKWISE_TOOLCHAIN) \
  $(if $(ACKWISE_TOOLCHAIN_ROOT),ACKWISE_TOOLCHAIN_ROOT=$(ACKWISE_TOOLCHAIN_ROOT)) tools/toolchain.sh path 2>/dev/null)
ifneq ($(TOOLCHAIN_PATH),)
export PATH := $(TOOLCHAIN_PATH):$(PATH)
endif
P4C ?= p4c-bm2-ss
BUILD := build
RESULTS := $(BUILD)/test-results

P4_PROGRAMS := $(wildcard p4src/*.p4)
P4_JSON := $(patsubst p4src/%.p4,$(BUILD)/%.json,$(P4_PROGRAMS))
P4_INCLUDES := $(wildcard p4src/include/*.p4)
PY_SOURCES := $(wildcard control-plane ptf-tests tools topologies hosts experiments integration-tests validation)

CC ?= cc
# What the test targets run (the defaults: everything); e.g. INTEGRATION_TESTS=integration-tests/test_linkem.py
INTEGRATION_TESTS ?= integration-tests
PTF_ARGS ?=
.PHONY: help deps build constants demo bench experiments fuzz test unit ptf integration lint format clean check-toolchain check-venv validate check-results

help: ## this list
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

deps: ## Debian and Python dependencies, and bmv2 + p4c: yours on PATH, else the pinned ones built from source (first time tens of minutes; then seconds)
	@tools/deps.sh

build: $(P4_JSON) $(BUILD)/linkem ## compile every program in p4src/ into build/<program>.json, and the link emulator

$(BUILD)/%.json: p4src/%.p4 $(P4_INCLUDES) | check-toolchain
	@mkdir -p $(BUILD)
	$(P4C) --std p4-16 --Werror -o $@ $<

# p4c folds P4 constants into the code it emits, so the Python side of them is generated from the
# sources and committed (make unit needs no p4c); a unit test fails while it is stale.
constants: check-venv ## regenerate control-plane/ackwise/twins/p4names.py (every P4 constant, enum and @name) from p4src
	@$(PY) tools/gen_p4names.py

$(BUILD)/linkem: topologies/linkem/linkem.c topologies/linkem/medium.c topologies/linkem/medium.h
	@mkdir -p $(BUILD)
	$(CC) -O2 -Wall -Wextra -Werror -std=c11 -o $@ topologies/linkem/linkem.c topologies/linkem/medium.c -lm

# The ns-3 validation of the 802.11 medium model (validation/run.py; docs/testbed.md). ns-3 is
# installed here, not by make deps: only this target uses it, and it is hundreds of megabytes that
# a machine which only runs the test bed does not need. Offline; not part of make test.
NS3_MODULES := ns3-wifi ns3-applications ns3-internet ns3-mobility ns3-network ns3-core ns3-propagation ns3-traffic-control
NS3_DEBIAN := ns3 libns3-dev libgsl-dev pkg-config

NS3_INSTALL = pkg-config --exists $(NS3_MODULES) || { echo "validate: installing $(NS3_DEBIAN) (ns-3 3.37)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	  $(NS3_DEBIAN) >/dev/null; }

$(BUILD)/wifi_validation: validation/ns3/wifi_validation.cc
	@$(NS3_INSTALL)
	@mkdir -p $(BUILD)
	$(CXX) -std=c++17 -O2 -Wall -Wextra -Werror -o $@ $< -Wl,--no-as-needed $$(pkg-config --cflags --libs $(NS3_MODULES))

$(BUILD)/chain_validation: validation/ns3/chain_validation.cc
	@$(NS3_INSTALL)
	@mkdir -p $(BUILD)
	$(CXX) -std=c++17 -O2 -Wall -Wextra -Werror -o $@ $< -Wl,--no-as-needed $$(pkg-config --cflags --libs $(NS3_MODULES))

validate: check-venv $(BUILD)/linkem $(BUILD)/wifi_validation $(BUILD)/chain_validation ## the 802.11 medium model against ns-3 3.37 (installs it if missing): WLAN and multihop chain tables into docs/testbed.md (~6 min)
	@$(PY) validation/run.py --write-docs
	@$(PY) validation/chain.py --write-docs

demo: check-toolchain check-venv build ## the comparison in miniature: one transfer, nothing on vs a host vs a switch policy (root, <1 min)
	@$(VENV)/bin/ackwise demo

experiments: check-toolchain check-venv build ## every scenario's default matrix (QUICK=1: one repeat of the reduced one; CONFIRM=1: then each one's confirmation pass; START_BEFORE=HH:MM: a part, resumed by the same command), reports, docs/results.md (root; ackwise experiment estimate says how long)
	@$(PY) -m ackwise.experiments.harness.all --write-docs $(if $(QUICK),--quick) $(if $(CONFIRM),--confirm) $(if $(START_BEFORE),--start-before $(START_BEFORE))

check-results: check-venv ## recompute docs/results.md's headline table and each docs/results/*/report.md from the published records; fail on any difference (~10 s)
	@$(PY) -m ackwise.experiments.harness.all --check

bench: check-toolchain check-venv build ## throughput (highest rate with at most 1 % lost, by bisection) and instructions per packet (callgrind, and where they go by bmv2 function) through simple_switch per ACK policy vs forwarding only and a minimal thinning yardstick; writes docs/performance.md (root, ~30 min)
	@$(PY) -m ackwise.experiments.stress.bench --write-docs

FUZZ_PACKETS ?= 100000
fuzz: check-toolchain check-venv build ## fuzz the data plane: FUZZ_PACKETS (100000) per program and policy; docs/robustness.md (root, ~15 min)
	@$(PY) -m ackwise.experiments.stress.fuzz --packets $(FUZZ_PACKETS) --write-docs

test: check-toolchain check-venv build ## everything: unit, PTF (bmv2) and integration tests; one summary line at the end
	@rm -rf $(RESULTS) && mkdir -p $(RESULTS)
	-@$(PY) -m pytest -q -p no:cacheprovider control-plane/tests --junitxml=$(RESULTS)/unit.xml
	-@$(PY) ptf-tests/run_ptf.py --xunit-dir $(RESULTS)/ptf $(PTF_ARGS) $(TESTS)
	-@$(PY) -m pytest -q -p no:cacheprovider $(INTEGRATION_TESTS) --junitxml=$(RESULTS)/integration.xml
	@$(PY) tools/test_summary.py unit=$(RESULTS)/unit.xml ptf=$(RESULTS)/ptf \
	    integration=$(RESULTS)/integration.xml

unit: check-venv ## Python unit tests only
	@$(PY) -m pytest -q -p no:cacheprovider control-plane/tests

ptf: check-toolchain check-venv build ## PTF data-plane tests on bmv2 only (TESTS="name ..." to pick)
	@$(PY) ptf-tests/run_ptf.py $(PTF_ARGS) $(TESTS)

integration: check-toolchain check-venv build ## integration tests only (root: namespaces, switches; INTEGRATION_TESTS=path to pick)
	@$(PY) -m pytest -q -p no:cacheprovider $(INTEGRATION_TESTS)

lint: check-venv ## ruff (lint and format check) on the Python, p4c warnings as errors on the P4
	@$(PY) -m ruff check $(PY_SOURCES)
	@$(PY) -m ruff format --check $(PY_SOURCES)
	@$(PY) tools/check_layers.py
	@$(MAKE) --no-print-directory -B build

format: check-venv ## apply ruff's formatting and safe fixes
	@$(PY) -m ruff format $(PY_SOURCES)
	@$(PY) -m ruff check --fix $(PY_SOURCES)

clean: ## remove build/ (compiled programs, test results, logs)
	rm -rf $(BUILD)

check-toolchain:
	@tools/check_toolchain.sh

check-venv:
	@[ -x $(PY) ] || { echo "no Python environment in $(VENV): run 'make deps' first"; exit 1; }
