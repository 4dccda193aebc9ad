"""Every workbench widget holds a connection note, first among its children.

The note is what says "this widget lost its kernel, run this cell again" in the page
(tests/test_browser_restart.py watches it do so in JupyterLab). Here, as Python
objects: each widget built on ClosingBox has exactly one, in front, whatever its
subclass sets as children; the note can be given to any box; closing closes it.
"""

from __future__ import annotations

import ipywidgets
import numpy as np
import pytest

import workbench as wb
from workbench.widgets import (
    BackwardStepper,
    BroadcastExplorer,
    CheckpointExplorer,
    ConnectionNote,
    LiveGraph,
    SigmoidExplorer,
    TrainingMonitor,
    connection_note,
)
from workbench.widgets.closing import ClosingBox
from workbench.widgets.connection import LOST_KERNEL


def small_loss():
    x = wb.tensor([0.5, -1.0], requires_grad=True, name="x")
    return wb.sigmoid(x * 2.0).sum()


WIDGETS = {
    "BackwardStepper": lambda: BackwardStepper(small_loss()),
    "SigmoidExplorer": lambda: SigmoidExplorer(x=1.0),
    "BroadcastExplorer": lambda: BroadcastExplorer(),
    "CheckpointExplorer": lambda: CheckpointExplorer(),
    "LiveGraph": lambda: LiveGraph(),
    "TrainingMonitor": lambda: TrainingMonitor(
        steps=2, points=np.eye(2), labels=np.arange(2), predict=lambda p: p[:, 0] > 0
    ),
}


def notes_in(box: ipywidgets.Box) -> list[ConnectionNote]:
    return [child for child in box.children if isinstance(child, ConnectionNote)]


@pytest.mark.parametrize("name", sorted(WIDGETS))
def test_every_workbench_widget_shows_its_note_first_and_once(name):
    widget = WIDGETS[name]()
    try:
        assert isinstance(widget, ClosingBox)
        assert widget.children[0] is widget.connection_note
        assert notes_in(widget) == [widget.connection_note]
        assert widget.connection_note.text == LOST_KERNEL
    finally:
        widget.close()


def test_setting_the_children_keeps_the_note_in_front_once():
    box = ClosingBox()
    note = box.connection_note
    assert box.children == (note,)
    a, b = ipywidgets.HTML("a"), ipywidgets.HTML("b")
    box.children = [a, b]
    assert box.children == (note, a, b)
    box.children = [b, note, a]  # given again, elsewhere: moved to the front, not doubled
    assert box.children == (note, b, a)
    box.children = []
    assert box.children == (note,)
    box.close()


def test_closing_a_widget_closes_its_note():
    explorer = SigmoidExplorer(x=1.0)
    note = explorer.connection_note
    assert note.comm is not None
    explorer.close()
    assert note.comm is None


def test_any_box_can_hold_a_note():
    note = connection_note()
    assert isinstance(note, ConnectionNote)
    assert note is not connection_note()  # a new one each time: one per box
    box = ipywidgets.VBox([note, ipywidgets.Button(description="Show hint 1 of 2")])
    assert box.children[0] is note
    box.close()
    note.close()
