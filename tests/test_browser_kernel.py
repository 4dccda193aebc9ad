"""Workbench in a browser kernel (Pyodide, JupyterLite): no threads, no subprocesses.

Pyodide's Python cannot start a thread or a process, and loads no native module
that was not built for WebAssembly (numpy is). Each test runs a fresh Python in
which ``threading.Thread.start``, ``subprocess.Popen`` and ``os.fork`` raise, then
imports workbench and steps through a backward pass. Only static SVG/PNG export
(``graph.svg()``, ``workbench render``) may need a subprocess: a native renderer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Each refusal is the error Pyodide gives: starting a process fails with OSError
# (ENOSYS, "Function not implemented"), starting a thread with RuntimeError. A library
# that falls back on OSError, as matplotlib does when it cannot run fc-list to find
# fonts, falls back here as it would in the browser.
FORBID = """\
import errno, os, subprocess, threading

class ThreadNotInTheBrowser(RuntimeError):
    pass

class ProcessNotInTheBrowser(OSError):
    def __init__(self, what):
        super().__init__(errno.ENOSYS, f"{what} cannot run in a browser kernel")

def forbid(what, error):
    def refuse(*args, **kwargs):
        raise error(what)
    return refuse

threading.Thread.start = forbid("threading.Thread.start", ThreadNotInTheBrowser)
subprocess.Popen.__init__ = forbid("subprocess.Popen", ProcessNotInTheBrowser)
os.fork = forbid("os.fork", ProcessNotInTheBrowser)
"""

REPORT = """\
import importlib.metadata, json, os, sys
# Which installed distribution each native (compiled) file belongs to, from its RECORD.
owner = {}
for dist in importlib.metadata.distributions():
    for file in dist.files or ():
        if file.name.endswith((".so", ".pyd")):
            owner[os.path.realpath(file.locate())] = dist.metadata["Name"].lower()
stdlib = os.path.dirname(os.path.realpath(os.__file__))  # Pyodide builds in its own
loaded = {os.path.realpath(getattr(m, "__file__", None) or "") for m in list(sys.modules.values())}
result["native"] = sorted(
    {owner.get(f, f) for f in loaded if f.endswith((".so", ".pyd")) and not f.startswith(stdlib)}
)
result["modules"] = sorted({name.split(".")[0] for name in sys.modules})
print(json.dumps(result))
"""

# A loss whose backward has a broadcast (a collapse-sum) and a leaf reached twice.
LOSS = """\
import numpy as np
import workbench as wb

def make_loss():
    x = wb.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True, name="x")
    w = wb.tensor([0.5, -1.0, 2.0], requires_grad=True, name="w")
    return x, w, (wb.sigmoid(x * w) * w).sum()

x0, w0, plain = make_loss()
plain.backward()
x, w, loss = make_loss()
result = {}
"""


def run_without_threads(body: str) -> dict:
    """Run ``body`` in a fresh Python with threads and processes forbidden; its result."""
    code = FORBID + LOSS + textwrap.dedent(body) + REPORT
    with tempfile.TemporaryDirectory() as no_font_cache:  # as on a machine never used
        env = os.environ | {
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
            "MPLCONFIGDIR": no_font_cache,
        }
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
        )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


# Native code in a browser kernel: numpy, and what Pyodide ships built for WebAssembly
# or as pure Python (psygnal, anywidget's dependency, has a pure-Python wheel; ml_dtypes,
# which gives bfloat16, is among Pyodide's packages since its 2025 builds).
BROWSER_NATIVE = {
    "numpy",
    "psygnal",
    "matplotlib",
    "contourpy",
    "kiwisolver",
    "pillow",
    "ml_dtypes",
}
NEVER_IMPORTED = {"pygraphviz", "graphviz", "torch", "cupy", "scipy", "zmq", "tornado"}


def test_import_and_step_backward_without_threads_or_processes():
    result = run_without_threads(
        """
        from workbench.widgets.steps import LiveSteps, StepCursor

        cursor = StepCursor(LiveSteps(loss))
        while cursor.next():
            pass
        result["steps"] = cursor.position + 1
        result["same_grads"] = bool(
            np.allclose(x.grad.numpy(), x0.grad.numpy())
            and np.allclose(w.grad.numpy(), w0.grad.numpy())
        )
        result["dot"] = wb.viz.draw(loss, kind="backward").dot.startswith("digraph")
        """
    )
    assert result["steps"] >= 5 and result["same_grads"] and result["dot"]
    assert set(result["native"]) <= BROWSER_NATIVE, result["native"]
    assert not NEVER_IMPORTED & set(result["modules"])


def test_explorers_draw_without_threads_or_processes():
    """Lesson 3b's explorers draw with matplotlib (PNG, in-process), which Pyodide has."""
    result = run_without_threads(
        """
        sigmoid = wb.widgets.SigmoidExplorer(x=1.0)
        broadcast = wb.widgets.BroadcastExplorer("2, 3", "3")
        result["sigmoid_png"] = sigmoid.image.value[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
        result["broadcast_error"] = broadcast.error
        result["broadcast_png"] = broadcast.image.value[:4] == b"\\x89PNG"
        sigmoid.close()
        broadcast.close()
        """
    )
    assert result["sigmoid_png"] and result["broadcast_png"], result
    assert result["broadcast_error"] is None
    assert set(result["native"]) <= BROWSER_NATIVE, result["native"]


def test_backward_stepper_widget_without_threads_or_processes():
    result = run_without_threads(
        """
        stepper = wb.widgets.BackwardStepper(loss)
        result["error"] = stepper.error
        while stepper.error is None and stepper.next():
            pass
        result["same_grads"] = stepper.error is None and bool(
            np.allclose(x.grad.numpy(), x0.grad.numpy())
            and np.allclose(w.grad.numpy(), w0.grad.numpy())
        )
        stepper.close()
        """
    )
    assert result["error"] is None
    assert result["same_grads"]
    assert set(result["native"]) <= BROWSER_NATIVE, result["native"]
    assert not NEVER_IMPORTED & set(result["modules"])
