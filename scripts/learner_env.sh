#!/usr/bin/env bash
# The learners' Python for the local rehearsal (`make hub`, tests/test_hub.py):
# .tools/learner-env, installed and configured by deploy/hub/setup-learner-env.sh as
# the image is (every package pinned in deploy/hub/requirements.txt, this checkout's
# wheel). It is made from the system's Python (/usr/bin/python3), not from the
# project's .venv: every learner's server runs under its own user id, and a Python
# under /root (pyenv's) is out of their reach. Rebuilt when requirements.txt changes;
# the wheel is reinstalled every time.
set -euo pipefail
cd "$(dirname "$0")/.."
ENV=.tools/learner-env
BASE_PYTHON=${WORKBENCH_LEARNER_PYTHON:-/usr/bin/python3}
STAMP=$ENV/.requirements.sha256
want=$(sha256sum deploy/hub/requirements.txt | cut -d' ' -f1)

if ! "$BASE_PYTHON" -c 'import ensurepip, venv' 2>/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    else
        echo "learner_env.sh: $BASE_PYTHON cannot make a virtual environment (apt install python3-venv)" >&2
        exit 1
    fi
fi
# The rehearsal's servers see a passwd entry of their own through nss_wrapper
# (deploy/hub/rehearsal_spawner.py), as docker-stacks' start.sh gives them one.
if ! ls /usr/lib/*/libnss_wrapper.so >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libnss-wrapper >/dev/null \
            || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libnss-wrapper >/dev/null; }
    else
        echo "learner_env.sh: nss_wrapper is missing (apt install libnss-wrapper)" >&2
    fi
fi
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$want" ]; then
    rm -rf "$ENV"
    "$BASE_PYTHON" -m venv "$ENV"
    fresh=1
fi
wheels=$(mktemp -d)
trap 'rm -rf "$wheels"' EXIT
PY=${WORKBENCH_BUILD_PYTHON:-.venv/bin/python}
"$PY" -m pip wheel --no-deps --no-build-isolation -q -w "$wheels" . >/dev/null
bash deploy/hub/setup-learner-env.sh "$ENV/bin/python" deploy/hub/requirements.txt "$wheels"/autodiff_workbench-*.whl
[ -n "${fresh:-}" ] && echo "$want" > "$STAMP"
chmod -R a+rX "$ENV"
