"""The WebAssembly Graphviz that lays graphs out in the learner's browser.

``graphviz/viz-global.js`` is Graphviz compiled to WebAssembly (the npm package
``@viz-js/viz``, pinned in ``graphviz/VERSION``, built by
``scripts/build_graphviz_asset.sh``; licences in ``graphviz/LICENSE``). The kernel
never lays a graph out for a widget: it sends DOT text, and the page runs this
script in a Web Worker.

The script (1.3 MB) reaches the page once per kernel, not once per picture: one
:class:`GraphvizAsset` widget holds it, and every :class:`~.browser.GraphView`
points at that widget. The page builds one worker from it and keeps it for every
picture, across kernel restarts (it is keyed by the version).
"""

from __future__ import annotations

from functools import cache
from importlib import resources

import ipywidgets as widgets
import traitlets

ASSET = "viz-global.js"
MISSING = (
    "the browser's Graphviz (workbench/viz/graphviz/{name}) is missing from this "
    "installation: rebuild it with `bash scripts/build_graphviz_asset.sh` (needs npm)"
)


def _asset_file(name: str):
    return resources.files(__package__).joinpath("graphviz", name)


@cache
def asset_source() -> bytes:
    """The JavaScript of the WebAssembly Graphviz, as shipped in the package."""
    try:
        return _asset_file(ASSET).read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(MISSING.format(name=ASSET)) from None


@cache
def asset_notes() -> dict:
    """``graphviz/VERSION`` as a dict: package, version, graphviz, file, sha256."""
    try:
        text = _asset_file("VERSION").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(MISSING.format(name="VERSION")) from None
    pairs = (line.split(":", 1) for line in text.splitlines() if ":" in line)
    return {key.strip(): value.strip() for key, value in pairs}


def asset_version() -> str:
    """``@viz-js/viz 3.31.0 (sha256 prefix)``: changes whenever the script does."""
    notes = asset_notes()
    return f"{notes['package']} {notes['version']} ({notes['sha256'][:12]})"


class GraphvizAsset(widgets.Widget):
    """A model-only widget holding the Graphviz script; the pictures read it from the page.

    ``shared``: one instance serves every picture of the kernel, so a picture closing
    must not close it (see :func:`workbench.widgets.closing.held_widgets`).
    """

    shared = True
    source = traitlets.Bytes(b"").tag(sync=True)
    version = traitlets.Unicode("").tag(sync=True)

    def __repr__(self) -> str:
        return f"GraphvizAsset({self.version!r}, {len(self.source):,} bytes)"


_shared: GraphvizAsset | None = None


def shared_asset() -> GraphvizAsset:
    """The kernel's one :class:`GraphvizAsset`, made on first use (again if it was closed)."""
    global _shared
    if _shared is None or _shared.comm is None:
        _shared = GraphvizAsset(source=asset_source(), version=asset_version())
    return _shared
