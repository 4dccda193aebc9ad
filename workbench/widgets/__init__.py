"""Jupyter widgets: step through a backward pass, watch a graph grow, explore gradients.

Loaded only by ``wb.widgets`` (``import workbench`` never imports ipywidgets).

- :class:`BackwardStepper`: scrub through a real ``loss.backward()`` (or a saved Trace).
- :class:`LiveGraph`: the forward graph growing as cells run.
- :class:`SigmoidExplorer`, :class:`BroadcastExplorer`: the lessons' explorers.
- :class:`GraphView`: the clickable SVG they share.
"""

from .explorers import BroadcastExplorer, SigmoidExplorer
from .graphview import GraphView
from .live import LiveGraph
from .stepper import BackwardStepper

__all__ = ["BackwardStepper", "BroadcastExplorer", "GraphView", "LiveGraph", "SigmoidExplorer"]
