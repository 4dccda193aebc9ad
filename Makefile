# Two commands do all set-up on a fresh machine:
#   make lab    create .venv, install workbench, open the lessons in JupyterLab
#   make test   create .venv, install workbench[dev] (+ torch, Chromium), run ruff and the whole test suite
#   make fuzz   the long run of the property tests against PyTorch (4,000 random programs)
#   make lite   build the static JupyterLite site of the course into build/lite
#   make hub    a JupyterHub on this machine (127.0.0.1:8000), to try the class set-up
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
TORCH  := torch==2.13.0

.PHONY: lab test fuzz lite hub venv lint clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

lab: $(STAMP)
	$(PY) -m workbench.cli lab

test: $(STAMP)
	bash scripts/test.sh

fuzz: $(STAMP)
	bash scripts/fuzz.sh

lite: $(STAMP)
	$(PY) scripts/build_lite.py build/lite

hub: $(STAMP)
	bash scripts/install_proxy.sh
	$(VENV)/bin/jupyterhub -f deploy/hub/local_hub_config.py

lint: $(STAMP)
	$(VENV)/bin/ruff check $(wildcard workbench tests bench scripts)
	$(VENV)/bin/ruff format --check $(wildcard workbench tests bench scripts)

clean:
	rm -rf $(VENV) .pytest_cache .tools .hub build/lite
