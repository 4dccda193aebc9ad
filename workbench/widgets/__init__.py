"""Jupyter widgets: step through a backward pass, watch a graph grow, explore gradients.

Loaded only by ``wb.widgets`` (``import workbench`` never imports ipywidgets).
"""

from .graphview import GraphView
from .stepper import BackwardStepper

__all__ = ["BackwardStepper", "GraphView"]
