"""Closing a widget for good: every widget it holds, every handler it installed.

ipywidgets keeps every open widget in a global registry until it is closed, and
``Widget.close()`` closes that one widget only: not its children, not its Layout and
Style (widgets of their own), not the ``jslink`` links between them. A child left
open keeps its handlers, and a handler such as ``lambda _: self.next()`` keeps the
whole widget, and the loss and graph it holds, alive for the rest of the session.

- :func:`close_held` closes everything a widget holds, at any depth.
- :class:`ClosingBox` is the base of the workbench's widgets: its ``close()`` removes
  the handlers it installed, closes its whole tree and drops what it computed. Its first
  child is always a :class:`~.connection.ConnectionNote`, which says so on the widget when
  the kernel is gone (restarted, stopped, dead).
"""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as widgets
import traitlets

from .connection import ConnectionNote


def held_widgets(widget: widgets.Widget) -> list[widgets.Widget]:
    """The widgets in ``widget``'s synced traits: children, layout, style, a link's ends.

    A widget marked ``shared = True`` (the one Graphviz script every picture points at)
    is not held by any of them, so closing one picture leaves it open for the others.
    """
    found = []
    values = [getattr(widget, name, None) for name in widget.keys]
    while values:
        value = values.pop()
        if isinstance(value, widgets.Widget):
            if not getattr(value, "shared", False):
                found.append(value)
        elif isinstance(value, (list, tuple)):
            values.extend(value)
        elif isinstance(value, dict):
            values.extend(value.values())
    return found


def close_held(widget: widgets.Widget, *more: widgets.Widget) -> None:
    """Close every widget that ``widget`` (and each of ``more``) holds, at any depth.

    ``widget`` itself stays open: its own ``close()`` calls this, then ``super().close()``.
    ``more`` are widgets it keeps outside its traits, such as ``jslink`` links; they are
    closed too. Each widget is closed by its own ``close()``, so a nested workbench
    widget lets go of its handlers as well.
    """
    seen = {id(widget)}
    stack = [*held_widgets(widget), *more]
    tree = []
    while stack:  # a stack walk, never recursion: trees can be deep
        held = stack.pop()
        if id(held) in seen:
            continue
        seen.add(id(held))
        tree.append(held)
        stack.extend(held_widgets(held))
    for held in tree:
        held.close()


class ClosingBox(widgets.VBox):
    """A VBox whose ``close()`` lets go of everything, as ``Widget.close()`` alone does not.

    Subclasses install handlers with :meth:`_observe` and :meth:`_on_click`, keep widgets
    that are not in their tree (``jslink`` links) with :meth:`_keep`, and drop the
    tensors, graphs and traces they hold in :meth:`_let_go`. Closing twice is harmless.

    Subclasses set ``self.children`` as for any VBox; the box puts its
    :class:`~.connection.ConnectionNote` (``self.connection_note``) back in front each time.
    """

    _undo: list[Callable[[], None]]
    _kept: list[widgets.Widget]

    def __new__(cls, *args, **kwargs):
        """Every box is born with nothing to undo, before any ``__init__`` runs.

        ipywidgets' ``__del__`` calls ``close()`` on every widget, also one whose
        constructor failed (a wrong argument raises before ``ClosingBox.__init__`` runs):
        what ``close()`` reads must exist from birth, not from construction, and a box
        whose constructor raised before ``ClosingBox.__init__`` computed nothing to let go.
        """
        box = super().__new__(cls, *args, **kwargs)
        box._undo = []
        box._kept = []
        box._started = False  # True once ClosingBox.__init__ runs: before, nothing to let go
        return box

    def __init__(self, **kwargs) -> None:
        # Set before VBox.__init__, so that the children's validator below finds the note.
        self.connection_note = ConnectionNote()
        self._started = True
        super().__init__(**kwargs)

    @traitlets.validate("children")
    def _note_first(self, proposal) -> tuple[widgets.Widget, ...]:
        """Every ``children`` given keeps the connection note in front, once."""
        parts = tuple(child for child in proposal["value"] if child is not self.connection_note)
        return (self.connection_note, *parts)

    def _observe(self, widget: widgets.Widget, handler, names: str = "value") -> None:
        """``widget.observe(handler, names)``, undone by ``close()``."""
        widget.observe(handler, names=names)
        self._undo.append(lambda: widget.unobserve(handler, names=names))

    def _on_click(self, button: widgets.Button, handler) -> None:
        """``button.on_click(handler)``, undone by ``close()``."""
        button.on_click(handler)
        self._undo.append(lambda: button.on_click(handler, remove=True))

    def _keep(self, widget: widgets.Widget) -> widgets.Widget:
        """Remember a widget outside the tree (a ``jslink`` link) so ``close()`` closes it."""
        self._kept.append(widget)
        return widget

    def _let_go(self) -> None:
        """Drop what the widget computed from (a loss, a model, a trace); called by close()."""

    def close(self) -> None:
        """Remove every handler, close every widget in the tree, and let go of the graph."""
        while self._undo:
            self._undo.pop()()
        close_held(self, *self._kept)
        self._kept.clear()
        if self._started:
            self._let_go()
        super().close()
