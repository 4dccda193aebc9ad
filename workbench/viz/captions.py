"""Room in the layout for the texts a stepper writes on its picture at each step.

A BackwardStepper writes the gradient that moved on each edge it took, a leaf's
``.grad`` in the leaf's box and a folded box's progress ("3 of 12 run"), and changes them
at every step. Written on top of a finished layout, such a text lands on other labels
and lines. So the DOT keeps a blank slot for each text a vertex or edge can get, as
wide as the widest text it will hold, and Graphviz lays the graph out around the
slots: under an edge's label (its shape), as the last line of a box. The page writes
each caption into its slot (see :mod:`.browser`), and nothing drawn moves when a
caption changes.

The texts are made here too (:func:`gradient_text`, :func:`grad_text`,
:func:`progress_text`), so a slot and the texts it holds cannot disagree on how wide
they get.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .fold import shallow_copy
from .model import GraphModel

VALUES_ON_EDGE = 4  # a vector of up to this many elements is written out ...
LIST_CHARS = 24  # ... when that takes no more characters than this: "[0.0421, -0.483, 0.0237]"
WIDEST_NUMBER = f"{-1.234e-100:.4g}"  # one number, 4 digits: the widest it gets
WIDEST_NORM = f"‖g‖={1.23e-100:.3g}"  # a norm (never negative), 3 digits
WIDEST_MEAN = f"mean {-1.23e-100:.3g}"  # a trace's mean, for an array it did not keep
GRAD_SUFFIX = ".grad "  # after a leaf's name, before its gradient
CAPTION_PX = 11  # the page writes captions in 11 px text: 11 of the picture's units
# Helvetica's widths (Arial's and Liberation Sans's too), in 1/1000 of the font size, of
# the characters captions use; any other character counts as UNKNOWN_WIDTH, more than
# the widest of these, as the page may draw it from a wider font.
WIDTHS = {
    **dict.fromkeys("0123456789abdeghnopqu", 556),
    **dict.fromkeys(" ,.[]()/ftijl", 278),
    **dict.fromkeys("-r", 333),
    "=": 584,
    "+": 584,
    "m": 833,
    "w": 722,
}
UNKNOWN_WIDTH = 750


def text_width(text: str) -> float:
    """How wide the page draws ``text`` as a caption, in the picture's units (at most)."""
    return sum(WIDTHS.get(ch, UNKNOWN_WIDTH) for ch in text) * CAPTION_PX / 1000


def gradient_text(value) -> str:
    """A gradient in a few characters: ``0.25``, ``[0.1, -2]``, ``‖g‖=1.73``.

    No shape: the edge it is written on shows it in its label. A trace's description
    of an array it did not keep gives its mean.
    """
    if value is None:
        return ""
    if isinstance(value, str):
        return _described(value)
    array = np.asarray(value)
    if array.size == 1:
        return f"{array.reshape(()).item():.4g}"
    if array.size <= VALUES_ON_EDGE and array.ndim == 1:
        listed = "[" + ", ".join(f"{v:.3g}" for v in array.tolist()) + "]"
        if len(listed) <= LIST_CHARS:
            return listed
    norm = float(np.linalg.norm(array.astype(np.float64).ravel()))
    return f"‖g‖={norm:.3g}"


def _described(text: str) -> str:
    """``mean 0.1`` out of a trace's ``shape (500,) float32: min -1, max 2, mean 0.1``."""
    stats = dict(item.partition(" ")[::2] for item in text.partition(": ")[2].split(", "))
    try:
        return f"mean {float(stats['mean']):.3g}"
    except (KeyError, ValueError):
        return ""


def gradient_width(shape) -> float:
    """The widest :func:`gradient_text` a gradient of ``shape`` gets (None: of any
    shape), in the picture's units."""
    widest = max(text_width(WIDEST_NORM), text_width(WIDEST_MEAN))
    if shape is None:
        return max(widest, gradient_width((VALUES_ON_EDGE,)))
    size = int(np.prod(shape))
    if size == 1:
        return text_width(WIDEST_NUMBER)
    if size <= VALUES_ON_EDGE and len(shape) == 1:
        return max(widest, _list_width(size))
    return widest


def _list_width(size: int) -> float:
    """The widest list of ``size`` numbers :func:`gradient_text` writes out: of the widest
    numbers, or of LIST_CHARS characters, digits but for its brackets and separators."""
    numbers = "[" + ", ".join([f"{-1.23e-100:.3g}"] * size) + "]"
    if len(numbers) <= LIST_CHARS:
        return text_width(numbers)
    separators = "[]" + ", " * (size - 1)
    return text_width(separators + "0" * (LIST_CHARS - len(separators)))


def grad_text(name: str, value) -> str:
    """A leaf's ``.grad``, written as the last line of its box: ``w.grad [0.1, -2]``."""
    return f"{name}{GRAD_SUFFIX}{gradient_text(value)}"


BEFORE_SUM = "before Σ"  # on the edge into a collapse-sum, in the step it runs


def progress_text(done: int, steps: int) -> str:
    """A folded box's progress: ``3 of 12 run``."""
    return f"{done} of {steps} run"


def reserve_captions(model: GraphModel) -> GraphModel:
    """``model`` with slots for a stepper's captions (a new model; ``model`` is unchanged).

    Every gradient edge out of a node gets a slot under its label for the gradient it
    carries (not the edge from the loss: it carries no step's gradient); a leaf's box a
    line for its ``.grad``; a vertex standing for several steps (a folded box) a line for
    its progress.
    """
    new = shallow_copy(model)
    out_of_collapse = {e.tail: e.shape for e in model.edges if _is_collapse(model, e.tail)}
    rooms = {}
    for edge in model.edges:
        tail = model.vertices.get(edge.tail)
        if edge.kind != "flow" or tail is None or tail.kind == "root":
            continue
        room = gradient_width(edge.shape)
        if edge.head in out_of_collapse:  # "before Σ", or the summed gradient
            room = max(room, text_width(BEFORE_SUM), gradient_width(out_of_collapse[edge.head]))
        rooms[id(edge)] = room
    new.edges = [
        dataclasses.replace(e, room=rooms.get(id(e), 0), classes=list(e.classes))
        for e in model.edges
    ]
    into = {e.head: e.shape for e in model.edges if e.kind == "flow"}
    steps = set(model.order)
    for vid, vertex in model.vertices.items():
        room = 0
        if vertex.kind == "accumulate":  # lines: AccumulateGrad, the leaf's name, ...
            name = vertex.lines[1] if len(vertex.lines) > 1 else vertex.id
            room = text_width(name + GRAD_SUFFIX) + gradient_width(into.get(vid))
        inside = sum(1 for m in vertex.members if m in steps)
        if inside > 1:
            room = max(room, text_width(progress_text(inside, inside)))
        if room:
            new.vertices[vid] = dataclasses.replace(vertex, room=room, classes=list(vertex.classes))
    return new


def _is_collapse(model: GraphModel, vid: str) -> bool:
    vertex = model.vertices.get(vid)
    return vertex is not None and vertex.kind == "collapse"
