"""Jupyter widgets: step through a backward pass, watch a graph grow, explore gradients.

Loaded only by ``wb.widgets`` (``import workbench`` never imports ipywidgets).

- :class:`BackwardStepper`: scrub through a real ``loss.backward()`` (or a saved Trace);
  ``predict=True`` asks the learner each step's result before showing it.
- :class:`ForwardStepper`: step through a forward-mode pass (``jvp``'s arguments): each op's
  JVP formula, value and tangent on the forward picture.
- :class:`JacobianBuilder`: a Jacobian column by column (jacfwd, one forward pass per input)
  beside row by row (jacrev, one backward pass per output), the passes counted.
- :class:`TwoModes`: one program's forward-mode pass beside its reverse-mode pass.
- :class:`CompareStepper`: two backward passes in lockstep, side by side, and the first
  node where they part (your Function against the built-in, the workbench against PyTorch).
- :class:`LiveGraph`: the forward graph growing as cells run.
- :class:`SigmoidExplorer`, :class:`BroadcastExplorer`: the lessons' explorers.
- :class:`CheckpointExplorer`: segments of ``checkpoint_sequential`` vs memory and recompute.
- :class:`GraphView`: the clickable graph they share, DOT laid out in the browser (WebAssembly
  Graphviz in a Web Worker: the kernel never lays a graph out for a widget).
- :class:`TrainingMonitor`: a progress bar, the loss curve and the decision regions of a
  2-D classifier, while it trains; with ``model=`` also each layer's gradient norm and
  update-to-data ratio, and a sentence marking vanishing or exploding gradients.

Each one shows a :class:`ConnectionNote` when its kernel is restarted, stopped or dies
("run this cell again"); :func:`connection_note` gives one to any other box of widgets.

Each one's ``close()`` closes all of its parts and removes its handlers, so a closed
widget keeps no loss, graph or event subscription alive (see ``closing.py``).
"""

from .checkpoint_explorer import CheckpointExplorer
from .compare import CompareStepper, Difference
from .connection import ConnectionNote, connection_note
from .explorers import BroadcastExplorer, SigmoidExplorer
from .graphview import GraphView
from .jacobian_builder import JacobianBuilder
from .live import LiveGraph
from .stepper import BackwardStepper
from .tangent_flow import ForwardStepper
from .training import TrainingMonitor
from .two_modes import TwoModes
from .verdicts import Verdict

__all__ = [
    "BackwardStepper",
    "BroadcastExplorer",
    "CheckpointExplorer",
    "CompareStepper",
    "ConnectionNote",
    "Difference",
    "ForwardStepper",
    "GraphView",
    "JacobianBuilder",
    "LiveGraph",
    "SigmoidExplorer",
    "TrainingMonitor",
    "TwoModes",
    "Verdict",
    "connection_note",
]
