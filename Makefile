# Two commands do all set-up on a fresh machine:
#   make lab    create .venv, install autodiff-workbench[lab] (JupyterLab, no test tools), open the lessons
#               options go to `workbench lab`: make lab ARGS="--port 9000 --no-browser"
#   make test   create .venv, install autodiff-workbench[dev] (+ torch, Chromium), run ruff and the whole test suite
#   make quick  while you work: the same, less the browser tests and the fresh-venv builds
#               (pytest -m "not browser and not slow"), about 11 minutes on two cores
#   make fuzz   the long run of the property tests against PyTorch (4,000 random programs)
#   make lite   build the static JupyterLite site of the course into build/lite
#               (PYODIDE=path/to/pyodide: a site that runs with no CDN, see docs/teaching.md;
#               SOLUTIONS=1: a self-study site, the solutions file beside its lessons)
#   make hub    the class set-up as one JupyterHub on this machine (127.0.0.1:8000), as root
#   make hub-image  the build context of the learners' image (build/hub-image), no solution in it
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
LAB_STAMP := $(VENV)/.installed-lab
DEV_STAMP := $(VENV)/.installed-dev
ARGS   ?=

.PHONY: lab test quick fuzz lite hub hub-image venv lint clean

# setuptools>=77: scripts/learner_env.sh (make hub, tests/test_hub.py) builds the wheel
# with --no-build-isolation, on .venv's own setuptools; older ones (a fresh venv on
# Python 3.11 holds 65.5.0) refuse pyproject's licence string (tests/test_make_venv.py).
$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip 'setuptools>=77'

# setuptools boxes a note ("Editable installation ... folders with the same name may take
# precedence") into every editable install; it is information, not a problem: kept quiet.
QUIET_EDITABLE := PYTHONWARNINGS="ignore:Editable installation"

# The distribution is autodiff-workbench; a `workbench` distribution in .venv is this
# project under its old name, or the unrelated PyPI project of that name: both would
# provide the package `workbench`, so it goes first.
$(LAB_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip uninstall -q -y workbench 2>/dev/null || true
	$(QUIET_EDITABLE) $(PY) -m pip install -q -e '.[lab]'
	touch $(LAB_STAMP)

$(DEV_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip uninstall -q -y workbench 2>/dev/null || true
	$(QUIET_EDITABLE) $(PY) -m pip install -q -e '.[dev]'
	touch $(DEV_STAMP)

venv: $(DEV_STAMP)

lab: $(LAB_STAMP)
	$(PY) -m workbench lab $(ARGS)

test: $(DEV_STAMP)
	bash scripts/test.sh

quick: $(DEV_STAMP)
	bash scripts/test.sh -m "not browser and not slow"

fuzz: $(DEV_STAMP)
	bash scripts/fuzz.sh

lite: $(DEV_STAMP)
	$(PY) scripts/build_lite.py build/lite $(if $(PYODIDE),--pyodide $(PYODIDE)) $(if $(SOLUTIONS),--with-solutions)

hub: $(DEV_STAMP)
	bash scripts/learner_env.sh
	bash scripts/install_proxy.sh
	$(VENV)/bin/jupyterhub -f deploy/hub/local_hub_config.py

hub-image: $(DEV_STAMP)
	$(PY) scripts/hub_image_context.py build/hub-image

lint: $(DEV_STAMP)
	$(VENV)/bin/ruff check $(wildcard workbench tests bench scripts)
	$(VENV)/bin/ruff format --check $(wildcard workbench tests bench scripts)

clean:
	rm -rf $(VENV) .pytest_cache .tools .hub build/lite build/hub-image
