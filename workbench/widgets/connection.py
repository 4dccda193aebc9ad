"""A note on the widget itself when its kernel is gone: "run this cell again".

A widget is two halves: the view in the page and the model in the kernel, joined by a
comm. When the kernel restarts, stops or dies, the kernel's half is gone for good, but
the page keeps drawing the view, and its buttons and sliders silently do nothing.
:class:`ConnectionNote` is a small element that stays hidden while the kernel is alive
and turns into a banner once it is gone. :class:`~.closing.ClosingBox`, the base of the
workbench's widgets, puts one first in its children; any other box can hold one too::

    widgets.VBox([connection_note(), button, output])

How the page knows (in the browser: a kernel that is gone cannot say so):

- ipywidgets' widget manager marks every model as not live when the kernel restarts (a
  crash ends in a restart too), and each ordinary view of such a model gets the CSS
  class ``jupyter-widgets-disconnected``. The box around the note is such a view, so the
  note's CSS shows it under a box with that class. (The note itself, an anywidget, never
  gets the class: anywidget 0.11 clears a view's listeners before it renders.)
- The manager marks nothing when the kernel is shut down, so the note also watches the
  kernel connection (``widget_manager.kernel``, in JupyterLab's widget manager): its status
  ``restarting``, ``autorestarting`` or ``dead``, or its disposal, shows the note.

A busy kernel (a long cell) is alive: no note. Once shown the note stays, since a new
kernel has no model for this widget: only running the cell again makes a live one.
"""

from __future__ import annotations

import json

import anywidget
import traitlets

LOST_KERNEL = (
    "This widget lost its kernel (the kernel was restarted or stopped). "
    "Run this cell again to get a live one."
)

_ESM = (
    f"const DEFAULT_TEXT = {json.dumps(LOST_KERNEL)};\n"
    + r"""
// Kernel states after which this widget's kernel-side half is gone for good.
const GONE = new Set(["restarting", "autorestarting", "dead"]);

function render({ model, el }) {
  el.classList.add("wb-connection-note");
  el.setAttribute("role", "status");
  // The words, hidden by the CSS until the kernel is gone (the default should a view be
  // drawn before the model's state has arrived: a shown note is never blank).
  const say = () => { el.textContent = model.get("text") || DEFAULT_TEXT; };
  say();
  model.on("change:text", say);
  const show = () => el.classList.add("wb-lost");
  const kernel = model.widget_manager && model.widget_manager.kernel;
  if (!kernel) return () => model.off("change:text", say);  // ipywidgets' mark shows it
  const onStatus = (_kernel, status) => {
    if (GONE.has(status)) show();
  };
  if (kernel.isDisposed || kernel.status === "dead") show();
  kernel.statusChanged.connect(onStatus);
  kernel.disposed.connect(show);
  return () => {
    model.off("change:text", say);
    kernel.statusChanged.disconnect(onStatus);
    kernel.disposed.disconnect(show);
  };
}

export default { render };
"""
)

# Shown by the note's own mark (wb-lost) or by ipywidgets' mark on the box around it.
_CSS = """
.wb-connection-note { display: none; }
.wb-connection-note.wb-lost,
.jupyter-widgets-disconnected > .wb-connection-note {
  display: block;
  position: sticky; top: 0; z-index: 10;  /* stays in sight over a tall widget */
  margin: 2px 0 6px; padding: 8px 12px;
  border: 2px solid #b71c1c; border-radius: 4px;
  background: #fff3e0; color: #7f0000; font-weight: 600;
}
/* The rest of the widget, greyed out: its controls no longer do anything. */
.wb-connection-note.wb-lost ~ *,
.jupyter-widgets-disconnected > .wb-connection-note ~ * { opacity: 0.45; }
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
