# Two entry points (see README): `make app` starts the app, `make test` runs the tests.
# Both set up a virtual environment from requirements.txt on first use.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: app test browser setup

$(STAMP): requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -r requirements.txt
	touch $(STAMP)

setup: $(STAMP)

# Listens on localhost only; `make app ADDRESS=0.0.0.0` serves the app on every network interface.
ADDRESS ?= localhost
app: $(STAMP)
	$(VENV)/bin/streamlit run app.py --server.address $(ADDRESS)

# Headless Chromium for the browser tests (Debian package; needs root or sudo).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q chromium; }

test: $(STAMP) browser
	$(PY) -m pytest -q
