#!/usr/bin/env bash
# Pyodide's core (the npm package `pyodide`, the version the Lite kernel is built for:
# scripts/build_lite.py's PYODIDE_VERSION) into .tools/pyodide-core: its runtime, its
# standard library and its pyodide-lock.json, without the packages of the full
# distribution. tests/test_lite.py builds an offline site on it (the kernel's pure-Python
# packages are added from PyPI) and reads the lock. Needs npm.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=$(sed -n 's/^PYODIDE_VERSION = "\([^"]*\)".*/\1/p' scripts/build_lite.py)
DEST=.tools/pyodide-core
if [ -f "$DEST/pyodide-lock.json" ] && grep -q "\"version\": \"$VERSION\"" "$DEST/package.json"; then
    exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "pyodide@$VERSION" >/dev/null && tar xzf "pyodide-$VERSION.tgz")
rm -rf "$DEST" && mkdir -p .tools && mv "$tmp/package" "$DEST"
echo "Pyodide $VERSION (core) in $DEST"
