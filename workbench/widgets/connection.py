"""A note on the widget itself when its kernel is gone: "run this cell again".

A widget is two halves: the view in the page and the model in the kernel, joined by a
comm. When the kernel restarts, stops or dies, the kernel's half is gone for good, but
the page keeps drawing the view, and its buttons and sliders silently do nothing.
:class:`ConnectionNote` is a small element that stays hidden while the kernel is alive
and turns into a banner once it is gone. :class:`~.closing.ClosingBox`, the base of the
workbench's widgets, puts one first in its children; any other box can hold one too::

    widgets.VBox([connection_note(), button, output])

How the page knows (all in the browser, the kernel cannot tell us it is gone):

- ipywidgets' widget manager marks every model as not live (``comm_live = false``, with a
  ``comm_live_update`` event) when the kernel restarts, after a crash as well; each view
  of such a model gets the CSS class ``jupyter-widgets-disconnected``.
- It does nothing when the kernel is shut down, so the note also watches the kernel
  connection itself (``widget_manager.kernel`` in JupyterLab and Voila): the status
  ``dead`` and its disposal.

A busy kernel (a long cell) is alive: no note. The note never goes away once shown, since
a restarted kernel has no model for this widget: only running the cell again makes a
live one.
"""

from __future__ import annotations

import anywidget
import traitlets

LOST_KERNEL = (
    "This widget lost its kernel (the kernel was restarted or stopped). "
    "Run this cell again to get a live one."
)

_ESM = r"""
// Kernel states after which this widget's kernel-side half is gone for good.
const GONE = new Set(["restarting", "autorestarting", "dead"]);

function render({ model, el }) {
  el.classList.add("wb-connection-note");
  el.setAttribute("role", "status");
  const show = () => {
    el.textContent = model.get("text");
    el.classList.add("wb-lost");
  };
  // ipywidgets' own mark on a view whose model lost its comm (a restart, a crash).
  const checkComm = () => {
    if (el.classList.contains("jupyter-widgets-disconnected")) show();
  };
  model.on("comm_live_update", checkComm);
  checkComm();
  // The kernel itself: ipywidgets does not react when it is shut down.
  const kernel = model.widget_manager && model.widget_manager.kernel;
  if (!kernel) return;
  const onStatus = (_kernel, status) => {
    if (GONE.has(status)) show();
  };
  if (kernel.isDisposed || kernel.status === "dead") show();
  kernel.statusChanged.connect(onStatus);
  kernel.disposed.connect(show);
  return () => {
    kernel.statusChanged.disconnect(onStatus);
    kernel.disposed.disconnect(show);
  };
}

export default { render };
"""

_CSS = """
.wb-connection-note:not(.wb-lost) { display: none; }
.wb-connection-note.wb-lost {
  position: sticky; top: 0; z-index: 10;  /* stays in sight over a tall widget */
  margin: 2px 0 6px; padding: 8px 12px;
  border: 2px solid #b71c1c; border-radius: 4px;
  background: #fff3e0; color: #7f0000; font-weight: 600;
}
/* The rest of the widget, greyed out: its controls no longer do anything. */
.wb-connection-note.wb-lost ~ * { opacity: 0.45; }
/* One note per widget: a workbench widget inside another keeps its note hidden. */
.wb-connection-note.wb-lost ~ * .wb-connection-note { display: none; }
"""


class ConnectionNote(anywidget.AnyWidget):
    """Hidden while the kernel lives; a banner saying "run this cell again" once it is gone.

    Put it first in a box's children: once shown, it greys out the widgets after it.
    """

    _esm = _ESM
    _css = _CSS

    text = traitlets.Unicode(LOST_KERNEL).tag(sync=True)


def connection_note() -> ConnectionNote:
    """A new note for a box of widgets: ``widgets.VBox([connection_note(), *parts])``."""
    return ConnectionNote()
