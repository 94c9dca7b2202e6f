# Two entry points (see README): `make app` starts the app, `make test` runs the tests (`make index`: optional).
# Both set up a virtual environment from requirements.txt on first use (with constraints.txt: every indirect
# dependency at the version the suite passed with; `make test` adds requirements-dev.txt, the tests' tools).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: app test browser setup cluster screenshots index

$(STAMP): requirements.txt constraints.txt
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11) and f"Python 3.11 is needed, $(PYTHON) is {sys.version.split()[0]}: make PYTHON=python3.11 …")'
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -r requirements.txt -c constraints.txt
	touch $(STAMP)

setup: $(STAMP)

# Optional extra (ray, fsspec) for `python -m probes sweep|extract --ray`; the tests install it, the app does not.
CLUSTER_STAMP := $(VENV)/.installed-cluster
$(CLUSTER_STAMP): $(STAMP) requirements-cluster.txt
	$(VENV)/bin/pip install -q -r requirements-cluster.txt -c constraints.txt
	touch $(CLUSTER_STAMP)

DEV_STAMP := $(VENV)/.installed-dev
$(DEV_STAMP): $(CLUSTER_STAMP) requirements-dev.txt
	$(VENV)/bin/pip install -q -r requirements-dev.txt -c constraints.txt
	touch $(DEV_STAMP)

cluster: $(CLUSTER_STAMP)

# Listens on localhost only; `make app ADDRESS=0.0.0.0` serves the app on every network interface.
ADDRESS ?= localhost
app: $(STAMP)
	$(VENV)/bin/streamlit run app.py --server.address $(ADDRESS)

# The corpus index of the default contextual models (SemCor embedded once per model, every layer: the app's
# corpus search and the WSD probe read it), built ahead so that no page waits for it; minutes per model on a
# CPU, kept in the feature cache. `make index INDEX_MODELS=minilm` for one model.
INDEX_MODELS ?= minilm,gpt-small,elmo-small
index: $(STAMP)
	$(PY) -m features index --model $(INDEX_MODELS)

# Headless Chromium for the browser tests (Debian package; needs root or sudo).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q chromium; }

# One pytest worker per core (at most 4: each loads its own models, server and browser), a test file per worker
# so a file's tests keep their order. On 2 cores from a fresh clone: the README's CI line says how long it took.
test: $(DEV_STAMP) browser
	$(PY) -m pytest -q -n auto --maxprocesses 4 --dist loadfile

# Refresh the README screenshots: the browser tests, told to save them in docs/screenshots/ and to search all of
# SemCor (a plain test run saves them in a temporary directory and leaves the tree as it was, and searches
# SemCor's first sentences: tests/browser_support.py).
screenshots: $(DEV_STAMP) browser
	EMBPROBE_SCREENSHOTS=$(CURDIR)/docs/screenshots EMBPROBE_CORPUS_LIMIT= $(PY) -m pytest -q -m browser tests/test_browser.py \
	  tests/test_browser_explore.py tests/test_browser_attention_views.py
