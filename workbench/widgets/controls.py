"""The stepper's controls: the buttons, the sliders, "More" and the node finder.

Every button calls the :class:`~.stepper.BackwardStepper` method of its name (the
Python API the buttons mirror); the stepper decides what each move does and when a
button is enabled. Play, the step slider and the pictures' step are linked in the
browser (``jslink``), so Play moves the highlight without the kernel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import ipywidgets as widgets

if TYPE_CHECKING:
    from .stepper import BackwardStepper

PICKER_SIZE = 40  # the node picker lists at most this many nodes; the filter finds the rest
FASTEST_MS = 25  # the speed slider's quickest Play interval (40 steps a second)


def wrapping_row(children: list) -> widgets.HBox:
    """A row of controls that wraps onto the next line when the notebook is narrow."""
    return widgets.HBox(children, layout=widgets.Layout(flex_flow="row wrap"))


class StepperControls:
    """Prev, Next, Play and the step slider every day; behind "More" step over, reset,
    stop, speed, find a node, run to it, breakpoints, fold again and the view switch.

    Made and wired once, for one stepper (``owner``): the handlers are installed with
    the owner's ``_on_click``/``_observe``, so closing the stepper removes them.
    """

    def __init__(self, owner: BackwardStepper, interval_ms: int, view: str) -> None:
        self.owner = owner
        self.prev_button = widgets.Button(description="◀ Prev", tooltip="show the previous step")
        self.next_button = widgets.Button(description="Next ▶", tooltip="run the next node")
        self.reset_button = widgets.Button(description="⟲ Reset", tooltip="back to step 1")
        self.over_button = widgets.Button(
            description="Step over ⤼", tooltip="run every step inside the lit folded box"
        )
        self.play = widgets.Play(min=1, max=1, interval=interval_ms, description="play")
        self.play.add_class("wb-play")  # its own ■ (back to step 1) is hidden: see STYLE
        self.stop_button = widgets.Button(
            description="■ Stop", tooltip="stop playing and stay at this step"
        )
        self.speed = widgets.IntSlider(
            value=max(interval_ms, FASTEST_MS),
            min=FASTEST_MS,
            max=2000,
            step=25,
            description="ms/step",
            tooltip="Play's pace in milliseconds a step (the browser adds a little)",
        )
        self.slider = widgets.IntSlider(min=1, max=1, description="step")
        owner._keep(widgets.jslink((self.play, "value"), (self.slider, "value")))
        owner._keep(widgets.jslink((self.slider, "value"), (owner.graph, "step")))
        self.view_switch = widgets.ToggleButtons(
            options=[("backward", "backward"), ("forward", "forward"), ("side by side", "both")],
            value=view,
            description="view",
            style={"button_width": "90px"},
        )
        owner._keep(widgets.jslink((self.speed, "value"), (self.play, "interval")))
        self.node_filter = widgets.Text(placeholder="find a node: name or id", description="find")
        self.fold_button = widgets.Button(
            description="Fold again ⟲", tooltip="close the opened box", disabled=True
        )
        self.node_picker = widgets.Dropdown(description="node")
        self.run_to_button = widgets.Button(description="Run to node")
        self.breakpoint_button = widgets.Button(description="Toggle breakpoint")
        self.continue_button = widgets.Button(description="Continue ▶▶")
        self._wire()
        self.step_count = widgets.HTML()  # "of 7" after the slider's own "step k"
        self.more_button = widgets.ToggleButton(
            description="More ▾", tooltip="step over, reset, speed, find a node, breakpoints, views"
        )
        self.more = widgets.VBox(
            [
                wrapping_row([self.over_button, self.reset_button, self.stop_button, self.speed]),
                wrapping_row([self.node_filter, self.node_picker, self.run_to_button]),
                wrapping_row([self.breakpoint_button, self.continue_button, self.fold_button]),
                self.view_switch,
            ],
            layout=widgets.Layout(display="none"),
        )
        owner._observe(self.more_button, lambda change: self.show_more(change["new"]))

    def _wire(self) -> None:
        """Each button calls the stepper's method of its name; the slider moves it."""
        owner = self.owner
        owner._on_click(self.prev_button, lambda _: owner.prev())
        owner._on_click(self.next_button, lambda _: owner.next())
        owner._on_click(self.reset_button, lambda _: owner.reset())
        owner._on_click(self.over_button, lambda _: owner.step_over())
        owner._on_click(self.stop_button, lambda _: owner.stop())
        owner._on_click(self.fold_button, lambda _: owner.close_box(owner._selected_node()))
        owner._on_click(self.run_to_button, lambda _: owner.run_to(self.node_picker.value))
        owner._on_click(
            self.breakpoint_button, lambda _: owner.toggle_breakpoint(self.node_picker.value)
        )
        owner._on_click(self.continue_button, lambda _: owner.continue_())
        owner._observe(self.slider, owner._on_slider)

    def rows(self) -> list:
        """The everyday row (with the "More" toggle) and the box it opens."""
        everyday = [self.prev_button, self.next_button, self.play, self.slider, self.step_count]
        return [wrapping_row([*everyday, self.more_button]), self.more]

    def show_more(self, shown: bool) -> None:
        """The everyday controls are Prev, Next, Play and the step slider; the rest wait
        behind "More" (a picture to look at first, eighteen controls later)."""
        self.more.layout.display = "" if shown else "none"
        self.more_button.description = "Less ▴" if shown else "More ▾"

    def all(self) -> list:
        """Every control that moves the stepper (disabled together when it cannot start)."""
        return [
            self.prev_button,
            self.next_button,
            self.reset_button,
            self.over_button,
            self.play,
            self.stop_button,
            self.slider,
            self.speed,
            self.node_filter,
            self.node_picker,
            self.run_to_button,
            self.breakpoint_button,
            self.continue_button,
            self.fold_button,
        ]

    # ----------------------------------------------------------- finding a node
    def fill_node_picker(self, query: str = "") -> None:
        """The nodes whose label contains ``query`` (all when empty), in step order.

        At most ``PICKER_SIZE`` are listed: on a 2,000-node graph the filter box finds
        the others. The node picked stays picked while it matches.
        """
        words = query.lower().split()
        order = self.owner.order
        found = [uid for uid in order if all(w in self._findable(uid) for w in words)]
        shown = found[:PICKER_SIZE]
        keep = self.node_picker.value if self.node_picker.value in shown else None
        self.node_picker.options = [(self._shown_name(uid), uid) for uid in shown]
        if shown:
            self.node_picker.value = keep or shown[0]
        more = len(found) - len(shown)
        self.node_filter.description = f"find (+{more})" if more else "find"

    def _shown_name(self, uid: str) -> str:
        """A node as the picture names it (``TanhBackward0 (the second tanh)``,
        ``AccumulateGrad (b)``); the engine's label where the picture names none."""
        return self.owner.names.get(uid) or self.owner.cursor.source.nodes[uid].label

    def _findable(self, uid: str) -> str:
        """What the filter searches: the shown name, and the engine's label with its id."""
        return f"{self._shown_name(uid)} {self.owner.cursor.source.nodes[uid].label}".lower()
