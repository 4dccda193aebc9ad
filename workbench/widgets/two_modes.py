"""TwoModes: one program's forward-mode pass beside its reverse-mode pass.

The :class:`~.tangent_flow.ForwardStepper` runs ``f`` once on dual inputs that also
require grad, so that one run records the graph too; the
:class:`~.stepper.BackwardStepper` then steps ``result.backward(cotangent)`` through
that very graph. The two pictures share their node ids: step k of the forward pass
lights the op that made the k-th value and its tangent, and the backward pass walks
the same ops in reverse, each sending a gradient back.
"""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as widgets

from ..core.factories import ones_like
from .closing import ClosingBox
from .panel import PICTURE_PX
from .stepper import BackwardStepper
from .tangent_flow import ForwardStepper


class TwoModes(ClosingBox):
    """``TwoModes(f, primals, tangents)``: tangents flowing forward (left) and gradients
    flowing back (right) through one run of ``f``.

    ``cotangent`` is the reverse pass's ȳ, as in ``y.backward(cotangent)``; by default
    ones, which for a scalar output is ``y.backward()``. ``forward`` and ``backward`` are
    the two steppers, each with its own controls.
    """

    def __init__(self, f: Callable, primals, tangents, *, cotangent=None) -> None:
        super().__init__()
        self.forward = ForwardStepper(f, primals, tangents)
        result = self.forward.result
        seed = ones_like(result) if cotangent is None else cotangent
        self.backward = BackwardStepper(result, gradient=seed)
        self.children = [
            widgets.HBox(
                [
                    self._titled("Forward mode: tangents flow forward", self.forward),
                    self._titled("Reverse mode: gradients flow back", self.backward),
                ],
                layout=widgets.Layout(flex_flow="row wrap"),
            )
        ]

    @staticmethod
    def _titled(title: str, stepper: widgets.Widget) -> widgets.VBox:
        heading = widgets.HTML(f"<h3>{title}</h3>")
        # Side by side where each has room for its picture (PICTURE_PX) and a little
        # more; else forward mode above reverse mode, each the full width.
        layout = widgets.Layout(flex=f"1 1 {PICTURE_PX + 120}px", min_width="0")
        return widgets.VBox([heading, stepper], layout=layout)
