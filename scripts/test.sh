#!/usr/bin/env bash
# The whole test suite, as `make test` runs it (and .ci/run calls `make test`).
# Installs what the tests compare against and drive: PyTorch (pinned CPU build),
# Debian's Chromium for the browser tests (when we are root and apt works), and
# JupyterHub's configurable-http-proxy from npm into .tools/ for the hub test.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python

if ! $PY -c 'import torch' 2>/dev/null; then
    $PY -m pip install -q torch==2.13.0 || echo "note: torch==2.13.0 could not be installed; PyTorch comparisons will skip"
fi
if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
        || echo "note: chromium could not be installed; browser tests will skip"
fi
# The hub and image tests (tests/test_hub.py, tests/test_hub_image.py), as root: Podman,
# Buildah and runc to build the learners' image, debootstrap for its stand-in base,
# nss_wrapper for the rehearsal's per-user ids; all from Debian's packages.
need=""
for pair in podman:podman buildah:buildah runc:runc debootstrap:debootstrap; do
    command -v "${pair%%:*}" >/dev/null || need="$need ${pair##*:}"
done
ls /usr/lib/*/libnss_wrapper.so >/dev/null 2>&1 || need="$need libnss-wrapper"
if [ -n "$need" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need >/dev/null) \
        || echo "note:$need could not be installed; the hub and image tests will skip"
fi
# JupyterHub's proxy for tests/test_hub.py, from npm into .tools/ (not global).
bash scripts/install_proxy.sh || echo "note: configurable-http-proxy could not be installed; the hub test will skip"

echo "== ruff"
LINT_DIRS=$(ls -d workbench tests bench scripts 2>/dev/null)
.venv/bin/ruff check $LINT_DIRS
.venv/bin/ruff format --check $LINT_DIRS
echo "== import-linter (imports only go down the layers: pyproject.toml's [tool.importlinter])"
.venv/bin/lint-imports
echo "== pytest"
# Two workers on CI's two cores (more where there are more, at most four); each test file
# runs whole on one worker, so a file's JupyterLab, hub or graded course is made once.
# TEST_WORKERS=0 runs everything in this one process. The slowest tests are listed last.
exec $PY -m pytest -q -p no:cacheprovider -n "${TEST_WORKERS:-auto}" --maxprocesses=4 \
    --dist loadfile --durations=15 "$@"
