#!/usr/bin/env bash
# Install JupyterHub's proxy, configurable-http-proxy (npm), into .tools/chp of this
# checkout (not globally): deploy/hub/local_hub_config.py and tests/test_hub.py use
# .tools/chp/node_modules/.bin/configurable-http-proxy. Needs node and npm.
set -euo pipefail
cd "$(dirname "$0")/.."
CHP_VERSION=5.3.0
BIN=.tools/chp/node_modules/.bin/configurable-http-proxy
if [ -x "$BIN" ] && [ "$("$BIN" --version 2>/dev/null)" = "$CHP_VERSION" ]; then
    exit 0
fi
if ! command -v npm >/dev/null; then
    echo "install_proxy.sh: npm not found; install Node.js (apt install nodejs npm)" >&2
    exit 1
fi
mkdir -p .tools/chp
npm install --prefix .tools/chp --no-audit --no-fund --loglevel=error \
    "configurable-http-proxy@$CHP_VERSION"
echo "installed $BIN ($("$BIN" --version))"
