"""Closing a widget lets go of everything: child widgets, handlers, the event bus, the graph.

ipywidgets keeps every open widget in a global registry until it is closed. A child
left open keeps its click and observe handlers, and a handler such as
``lambda _: self.next()`` keeps the whole widget, and the loss and graph it holds,
alive for the rest of the session. Each test builds a widget, uses it, closes it and
checks with weak references that nothing it held survives ``gc.collect()``.
"""

from __future__ import annotations

import gc
import weakref

import ipywidgets
import pytest
from IPython.core.events import EventManager, available_events

import workbench as wb
from workbench.core import events
from workbench.viz.graphviz_asset import shared_asset
from workbench.widgets import (
    BackwardStepper,
    BroadcastExplorer,
    CheckpointExplorer,
    GraphView,
    LiveGraph,
    SigmoidExplorer,
)
from workbench.widgets import live as live_module


def registry() -> dict:
    """Every widget ipywidgets holds open, by model id.

    ipywidgets 8 keeps them in ``ipywidgets.widgets.widget._instances`` (``Widget.widgets``
    is a deprecated alias of it); ipywidgets 7 kept them in ``Widget.widgets``.
    """
    instances = getattr(ipywidgets.widgets.widget, "_instances", None)
    if instances is None:  # pragma: no cover - ipywidgets 7
        instances = ipywidgets.Widget.widgets
    return instances


def open_widgets() -> set[str]:
    return set(registry())


def left_open(before: set[str]) -> list[str]:
    """The kinds of the widgets opened since ``before`` that are still open."""
    opened = registry()
    return sorted(type(opened[uid]).__name__ for uid in open_widgets() - before)


def mlp_loss():
    """A two-layer MLP's loss: ``mean((tanh(x @ w1 + b1) @ w2)²)``."""
    x = wb.randn(4, 3)
    w1 = wb.randn(3, 5, requires_grad=True, name="w1")
    b1 = wb.zeros(5, requires_grad=True, name="b1")
    w2 = wb.randn(5, 1, requires_grad=True, name="w2")
    return ((x @ w1 + b1).tanh() @ w2).pow(2).mean()


def assert_closed_widget_lets_go(build) -> None:
    """``build()`` makes a widget and uses it; closed (twice: the second does nothing
    more) and dropped, nothing it opened stays open and the widget itself is freed."""
    before = open_widgets()
    widget = build()
    widget.close()
    widget.close()
    assert left_open(before) == []
    widget_ref = weakref.ref(widget)
    del widget
    gc.collect()
    assert widget_ref() is None


@pytest.fixture(autouse=True)
def _graphviz_script_already_sent():
    """The kernel's one Graphviz script stays open for every picture, by design: it is
    made before a test takes its snapshot of the open widgets, so it is never counted."""
    shared_asset()


@pytest.fixture(autouse=True)
def _quiet_bus():
    """Every test here starts with nobody listening to the event bus."""
    assert not events.listening, "an earlier test left a subscriber on the event bus"


def test_a_closed_stepper_lets_go_of_the_loss_its_graph_and_every_child_widget():
    refs = []

    def build():
        loss = mlp_loss()
        refs.extend([weakref.ref(loss), weakref.ref(loss.grad_fn)])
        stepper = BackwardStepper(loss)
        for _ in range(3):
            stepper.next()
        assert stepper.step == 4
        return stepper

    assert_closed_widget_lets_go(build)
    assert [ref() for ref in refs] == [None, None]


def test_a_closed_stepper_still_held_by_the_notebook_holds_no_graph():
    """``s.close()`` leaves ``s`` in the notebook's namespace: the graph must go anyway."""
    loss = mlp_loss()
    loss_ref, node_ref = weakref.ref(loss), weakref.ref(loss.grad_fn)
    stepper = BackwardStepper(loss)
    stepper.next()
    del loss
    stepper.close()
    gc.collect()
    assert loss_ref() is None and node_ref() is None
    assert stepper.next() is False  # a closed stepper's moves do nothing, quietly


def test_a_closed_stepper_of_a_saved_trace_lets_go_too():
    def build():
        with wb.trace.Trace() as trace:
            mlp_loss().backward()
        stepper = BackwardStepper(trace)
        stepper.next()
        return stepper

    assert_closed_widget_lets_go(build)


def test_a_stepper_that_showed_a_message_closes_too():
    before = open_widgets()
    stepper = BackwardStepper(wb.tensor([1.0, 2.0]))  # no graph: a message, no handlers
    assert stepper.error is not None
    stepper.close()
    assert left_open(before) == []


def test_fifteen_steppers_built_and_closed_do_not_grow_the_registry():
    before = open_widgets()
    refs = []
    for _ in range(15):
        loss = mlp_loss()
        refs.append(weakref.ref(loss))
        stepper = BackwardStepper(loss)
        stepper.next()
        stepper.next()
        stepper.close()
    del loss, stepper
    gc.collect()
    assert left_open(before) == []
    assert [ref() for ref in refs] == [None] * 15


def test_a_closed_live_graph_stops_listening_and_lets_go():
    before = open_widgets()
    live = LiveGraph(auto=False)
    assert events.listening
    x = wb.tensor([1.0, 2.0], requires_grad=True, name="x")
    loss = (x * 3).exp().sum()
    live.refresh()
    assert f'id="{loss.grad_fn.uid}"' in live.view.dot
    loss_ref, node_ref = weakref.ref(loss), weakref.ref(loss.grad_fn)
    del loss
    live.close()
    live.close()
    assert not events.listening  # close() alone turns the bus off: no stop() needed
    assert live.ops == []  # nothing recorded is kept, and nothing more is heard
    (x * 2).sum()
    assert live.ops == []
    assert left_open(before) == []
    live_ref = weakref.ref(live)
    del live
    gc.collect()
    assert live_ref() is None
    assert loss_ref() is None and node_ref() is None


class FakeShell:
    """Just enough of IPython's shell for LiveGraph: its real event manager."""

    def __init__(self) -> None:
        self.events = EventManager(self, available_events)


def test_a_closed_live_graph_leaves_ipython_cell_events(monkeypatch):
    shell = FakeShell()
    monkeypatch.setattr(live_module, "_ipython", lambda: shell)
    live = LiveGraph()
    assert len(shell.events.callbacks["post_run_cell"]) == 1
    live.close()
    assert shell.events.callbacks["post_run_cell"] == []
    live_ref = weakref.ref(live)
    del live
    gc.collect()
    assert live_ref() is None


def test_a_closed_sigmoid_explorer_lets_go():
    def build():
        explorer = SigmoidExplorer(x=0.5)
        explorer.slider.value = 1.5
        assert abs(explorer.point.x - 1.5) < 1e-12
        return explorer

    assert_closed_widget_lets_go(build)


def test_a_closed_broadcast_explorer_lets_go():
    def build():
        explorer = BroadcastExplorer("2, 3", "3")
        explorer.op_picker.value = "add"
        assert explorer.result.op == "add"
        return explorer

    assert_closed_widget_lets_go(build)


def test_a_closed_checkpoint_explorer_lets_go_of_its_model():
    before = open_widgets()
    explorer = CheckpointExplorer(segments=2, layers=3, width=4, batch=2)
    explorer.slider.value = 3
    assert explorer.result.segments == 3
    weight_ref = weakref.ref(explorer.mlp.layers[0].weight)
    explorer.close()
    explorer.close()
    assert left_open(before) == []
    gc.collect()
    assert weight_ref() is None  # let go even while the notebook still holds the explorer
    explorer_ref = weakref.ref(explorer)
    del explorer
    gc.collect()
    assert explorer_ref() is None


def test_a_closed_graph_view_closes_its_layout_and_leaves_the_shared_script_open():
    before = open_widgets()
    view = GraphView(layout=ipywidgets.Layout(width="50%"))
    script = view._graphviz
    view.close()
    view.close()
    assert left_open(before) == []
    assert script.comm is not None  # still open, for the other pictures
    assert GraphView()._graphviz is script  # sent to the page once, not once per picture


def stepper_and_parts():
    stepper = BackwardStepper(mlp_loss())
    stepper.next()
    return stepper, [stepper.next_button, stepper.slider, stepper.graph]


def live_graph_and_parts():
    live = LiveGraph(auto=False)
    return live, [live.clear_button]


def sigmoid_and_parts():
    explorer = SigmoidExplorer()
    return explorer, [explorer.slider]


def broadcast_and_parts():
    explorer = BroadcastExplorer()
    return explorer, [explorer.a_text, explorer.op_picker]


def checkpoint_and_parts():
    explorer = CheckpointExplorer(segments=2, layers=2, width=4, batch=2)
    return explorer, [explorer.slider, explorer.layers_box]


@pytest.mark.parametrize(
    "build",
    [
        stepper_and_parts,
        live_graph_and_parts,
        sigmoid_and_parts,
        broadcast_and_parts,
        checkpoint_and_parts,
    ],
)
def test_a_control_still_held_does_not_keep_the_closed_widget_alive(build):
    """close() removes the handlers: a button kept in a variable no longer holds the widget."""
    widget, parts = build()
    widget.close()
    widget_ref = weakref.ref(widget)
    del widget
    gc.collect()
    assert widget_ref() is None
    assert parts  # still held, all through the check


def closing_boxes() -> list[type]:
    """Every widget class of the workbench built on ClosingBox, found, not listed."""
    from workbench import widgets as package
    from workbench.widgets.closing import ClosingBox

    found = {value for value in vars(package).values() if isinstance(value, type)}
    return sorted((c for c in found if issubclass(c, ClosingBox)), key=lambda c: c.__name__)


@pytest.mark.parametrize("widget_class", closing_boxes(), ids=lambda c: c.__name__)
def test_a_widget_given_a_wrong_argument_raises_only_the_type_error(widget_class, monkeypatch):
    """ipywidgets' __del__ closes the half-built widget: that close must say nothing."""
    unraisable = []
    monkeypatch.setattr("sys.unraisablehook", unraisable.append)
    with pytest.raises(TypeError, match="unexpected keyword argument 'no_such_argument'"):
        widget_class(no_such_argument=1)
    gc.collect()
    assert [str(u.exc_value) for u in unraisable] == []
