"""The browser's Graphviz: the shipped script, the Web Worker code, and no layout in Python.

The page lays every widget's graph out with ``workbench/viz/graphviz/viz-global.js``
(WebAssembly Graphviz) in a Web Worker. Here Node.js runs that script followed by the
worker code from :mod:`workbench.widgets.graphview`, exactly as the page concatenates
them, on DOT the widgets really send: the SVG must carry each vertex's id and classes.
tests/test_browser_core.py does the same in JupyterLab and Chromium.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import workbench as wb
from tests.helpers import dot_vertices
from workbench.core import events
from workbench.viz.browser import WORKER_JS
from workbench.viz.graphviz_asset import asset_notes, asset_source, shared_asset
from workbench.widgets import BackwardStepper

ROOT = Path(__file__).resolve().parent.parent
ASSET_DIR = ROOT / "workbench" / "viz" / "graphviz"
NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="needs Node.js to run the worker code")

# Runs the Graphviz script and the worker code in one V8 context, as a Web Worker does,
# with the globals a worker has (crypto too: Expat, which reads the stepper's HTML-like
# labels, seeds its hash tables from it); the DOT comes on stdin, the worker's message
# goes to stdout.
RUN_WORKER = """
const fs = require("fs");
const vm = require("vm");
const [asset, worker] = process.argv.slice(1);
const code = fs.readFileSync(asset, "utf8") + fs.readFileSync(worker, "utf8");
const scope = { console, performance, URL, TextDecoder, TextEncoder, crypto,
                location: { href: "blob:null/worker" } };
scope.self = scope;
scope.postMessage = (message) => process.stdout.write(JSON.stringify(message));
vm.createContext(scope);
vm.runInContext(code, scope);
scope.onmessage({ data: fs.readFileSync(0, "utf8") });
"""


def lay_out_like_the_page(dot: str, tmp_path: Path) -> dict:
    worker = tmp_path / "worker.js"
    worker.write_text(WORKER_JS)
    done = subprocess.run(
        [NODE, "-e", RUN_WORKER, str(ASSET_DIR / "viz-global.js"), str(worker)],
        input=dot,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout)


def svg_groups(svg: str) -> dict:
    """``<g id="n5" class="node backward active">`` -> {"n5": ["backward", "active"]}; a
    checkpoint segment's frame (``class="cluster segment"``) likewise."""
    found = re.findall(r'<g id="([^"]+)" class="((?:node|cluster)[^"]*)"', svg)
    return {html.unescape(m[0]): m[1].split()[1:] for m in found}  # (Graphviz writes - as &#45;)


def small_loss():
    events.reset_ids()
    x = wb.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True, name="x")
    w = wb.tensor([0.5, -1.0], requires_grad=True, name="w")
    return (x * w).sigmoid().sum()


def test_version_note_matches_the_build_script_and_the_file():
    notes = asset_notes()
    script = (ROOT / "scripts" / "build_graphviz_asset.sh").read_text()
    assert notes["package"] == "@viz-js/viz"
    assert f'VERSION="{notes["version"]}"' in script  # the pinned version is what we ship
    assert hashlib.sha256(asset_source()).hexdigest() == notes["sha256"]
    licence = (ASSET_DIR / "LICENSE").read_text()
    assert "MIT" in licence and "Eclipse Public License" in licence


def test_the_widget_sends_the_shipped_script_once():
    script = shared_asset()
    assert script.source == (ASSET_DIR / "viz-global.js").read_bytes()
    assert asset_notes()["sha256"][:12] in script.version  # the page caches by version
    assert wb.widgets.GraphView()._graphviz is script


@needs_node
def test_the_worker_lays_out_the_steppers_dot_with_ids_and_classes(tmp_path):
    stepper = BackwardStepper(small_loss())
    wanted = dot_vertices(stepper.graph.dot)
    done = lay_out_like_the_page(stepper.graph.dot, tmp_path)
    assert done.get("error") is None and done["ms"] > 0
    assert svg_groups(done["svg"]) == wanted
    assert stepper.active in svg_groups(done["svg"])  # the node the page lights first
    # every caption's slot comes out as a group the page finds (viz.browser's takeSlots)
    slots = re.findall(r'<g id="a_wb&#45;slot&#45;[^"]+"><a[^>]*>\s*<polygon', done["svg"])
    assert len(slots) == stepper.graph.dot.count('ID="wb-slot-') > 5


@needs_node
def test_the_worker_keeps_step_and_recomputed_classes(tmp_path):
    events.reset_ids()
    x = wb.randn(3, 4, requires_grad=True)
    h = wb.utils.checkpoint.checkpoint(lambda t: t.tanh() * 2.0, x, use_reentrant=False)
    with wb.trace() as tr:
        h.exp().sum().backward()
    graph = wb.viz.draw(tr, step=2, fold_limit=None)
    groups = svg_groups(lay_out_like_the_page(graph.dot, tmp_path)["svg"])
    assert groups == dot_vertices(graph.dot)
    assert "active" in groups[graph.order[1]] and "done" in groups[graph.order[0]]


@needs_node
def test_a_graph_graphviz_refuses_comes_back_as_an_error(tmp_path):
    done = lay_out_like_the_page("digraph { a -> }", tmp_path)
    assert "syntax error" in done["error"] and "svg" not in done


def test_widgets_and_displayed_drawings_never_lay_out_in_python(tmp_path):
    """No pygraphviz, no `dot`, and starting a renderer an error: every widget still draws."""
    code = """
import sys
sys.modules["pygraphviz"] = None          # pygraphviz cannot be imported
from IPython.core.formatters import DisplayFormatter
import workbench as wb
from workbench.viz import renderers
def refuse(command, *args):
    raise AssertionError(f"a renderer was started: {command!r}")
renderers._run = refuse                   # every renderer child starts here
x = wb.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True, name="x")
loss = (x * 2.0).sigmoid().sum()
live = wb.widgets.LiveGraph(auto=False)
(x.exp() * 3).sum()
live.refresh()
stepper = wb.widgets.BackwardStepper(loss)
stepper.next()
explorer = wb.widgets.CheckpointExplorer(segments=2, layers=4, width=8, batch=4)
shown, _ = DisplayFormatter().format(wb.viz.draw(loss))
assert stepper.error is None and explorer.error is None, (stepper.error, explorer.error)
assert live.view.dot and stepper.graph.dot and explorer.graph.dot
assert "application/vnd.jupyter.widget-view+json" in shown
print("drawn without a renderer")
"""
    env = {"PATH": str(tmp_path), "PYTHONPATH": str(ROOT), "MPLCONFIGDIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "drawn without a renderer"
    assert done.stderr == ""  # IPython prints a failing _repr_*'s traceback there
