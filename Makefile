# Two commands do all set-up on a fresh machine:
#   make lab    create .venv, install workbench, open the lessons in JupyterLab
#   make test   create .venv, install workbench[dev] (+ torch, Chromium), run ruff and the whole test suite
#   make fuzz   the long run of the property tests against PyTorch (4,000 random programs)
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
TORCH  := torch==2.13.0

.PHONY: lab test fuzz venv lint clean

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

lint: $(STAMP)
	$(VENV)/bin/ruff check $(wildcard workbench tests bench scripts)
	$(VENV)/bin/ruff format --check $(wildcard workbench tests bench scripts)

clean:
	rm -rf $(VENV) .pytest_cache
