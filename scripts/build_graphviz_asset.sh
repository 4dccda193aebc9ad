#!/usr/bin/env bash
# Build the WebAssembly Graphviz that the widgets lay graphs out with, in the browser.
#
#   bash scripts/build_graphviz_asset.sh
#
# Fetches the pinned @viz-js/viz release from npm (`npm pack`: the published tarball,
# no install scripts run), checks it is the version asked for, and copies its
# standalone script `dist/viz-global.js` (Graphviz compiled to WebAssembly, the .wasm
# inlined, defines a global `Viz`) into the Python package, with a VERSION note
# (versions and sha256) and a LICENSE note beside it. The result is committed, so a
# checkout or a wheel draws without npm; rerun this only to change the pinned version
# (then run tests/test_graphviz_asset.py).
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGE="@viz-js/viz"
VERSION="3.31.0"
DEST=workbench/viz/graphviz

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "$PACKAGE@$VERSION" >/dev/null)
tar -xzf "$work"/*.tgz -C "$work"
got=$(node -p "require('$work/package/package.json').version")
if [ "$got" != "$VERSION" ]; then
    echo "expected $PACKAGE $VERSION, npm gave $got" >&2
    exit 1
fi
graphviz=$(node -e "import('$work/package/lib/metadata.js').then(m => console.log(m.graphvizVersion))")

mkdir -p "$DEST"
cp "$work/package/dist/viz-global.js" "$DEST/viz-global.js"
sha=$(sha256sum "$DEST/viz-global.js" | cut -d' ' -f1)

cat > "$DEST/VERSION" <<NOTE
package: $PACKAGE
version: $VERSION
graphviz: $graphviz
file: dist/viz-global.js
sha256: $sha
built-by: scripts/build_graphviz_asset.sh
NOTE

cat > "$DEST/LICENSE" <<NOTE
viz-global.js is dist/viz-global.js from the npm package $PACKAGE $VERSION
(https://github.com/mdaines/viz-js), copied unchanged. It contains, in object code
form (WebAssembly):

- Viz.js, MIT licence (text below).
- Graphviz $graphviz (https://graphviz.org), Eclipse Public License 1.0
  (https://www.eclipse.org/legal/epl-v10.html). Its source code is available from
  https://gitlab.com/graphviz/graphviz (release $graphviz).
- Expat (https://libexpat.github.io), MIT licence.

Viz.js licence:

Copyright (c) Michael Daines

Permission is hereby granted, free of charge, to any person obtaining a copy of
this software and associated documentation files (the "Software"), to deal in the
Software without restriction, including without limitation the rights to use, copy,
modify, merge, publish, distribute, sublicense, and/or sell copies of the Software,
and to permit persons to whom the Software is furnished to do so, subject to the
following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED,
INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A
PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT
HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF
CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE
OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
NOTE
echo "wrote $DEST/viz-global.js ($PACKAGE $VERSION, Graphviz $graphviz, sha256 $sha)"
