# Two commands do all set-up on a fresh machine:
#   make lab    create .venv, install workbench[lab] (JupyterLab, no test tools), open the lessons
#               options go to `workbench lab`: make lab ARGS="--port 9000 --no-browser"
#   make test   create .venv, install workbench[dev] (+ torch, Chromium), run ruff and the whole test suite
#   make fuzz   the long run of the property tests against PyTorch (4,000 random programs)
#   make lite   build the static JupyterLite site of the course into build/lite
#   make hub    a JupyterHub on this machine (127.0.0.1:8000), to try the class set-up
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
LAB_STAMP := $(VENV)/.installed-lab
DEV_STAMP := $(VENV)/.installed-dev
ARGS   ?=

.PHONY: lab test fuzz lite hub venv lint clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# setuptools boxes a note ("Editable installation ... folders with the same name may take
# precedence") into every editable install; it is information, not a problem: kept quiet.
QUIET_EDITABLE := PYTHONWARNINGS="ignore:Editable installation"

$(LAB_STAMP): pyproject.toml | $(PY)
	$(QUIET_EDITABLE) $(PY) -m pip install -q -e '.[lab]'
	touch $(LAB_STAMP)

$(DEV_STAMP): pyproject.toml | $(PY)
	$(QUIET_EDITABLE) $(PY) -m pip install -q -e '.[dev]'
	touch $(DEV_STAMP)

venv: $(DEV_STAMP)

lab: $(LAB_STAMP)
	$(PY) -m workbench.cli lab $(ARGS)

test: $(DEV_STAMP)
	bash scripts/test.sh

fuzz: $(DEV_STAMP)
	bash scripts/fuzz.sh

lite: $(DEV_STAMP)
	$(PY) scripts/build_lite.py build/lite

hub: $(DEV_STAMP)
	bash scripts/install_proxy.sh
	$(VENV)/bin/jupyterhub -f deploy/hub/local_hub_config.py

lint: $(DEV_STAMP)
	$(VENV)/bin/ruff check $(wildcard workbench tests bench scripts)
	$(VENV)/bin/ruff format --check $(wildcard workbench tests bench scripts)

clean:
	rm -rf $(VENV) .pytest_cache .tools .hub build/lite
