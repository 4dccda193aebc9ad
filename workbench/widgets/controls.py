"""The steppers' controls: the buttons, the sliders, "More" and the node finder.

Every stepper (:class:`~.stepper.BackwardStepper`, :class:`~.tangent_flow.ForwardStepper`,
:class:`~.compare.CompareStepper`) shows the same everyday row, :class:`StepBar`: Prev,
Next, Play/Pause and the step slider with its "of n", then one "More ▾" toggle for the
rest. :class:`StepperControls` is the backward stepper's bar, with its node finder,
breakpoints, folded boxes and view switch behind "More".

Every button calls the stepper's method of its name (the Python API the buttons
mirror); the stepper decides what each move does and when a button is enabled. Play,
the step slider and the picture's step are linked in the browser (``jslink``), so Play
moves the highlight without the kernel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import ipywidgets as widgets

if TYPE_CHECKING:
    from .stepper import BackwardStepper

PICKER_SIZE = 40  # the node picker lists at most this many nodes; the filter finds the rest
FASTEST_MS = 25  # the speed slider's quickest Play interval (40 steps a second)


def wrapping_row(children: list) -> widgets.HBox:
    """A row of controls that wraps onto the next line when the notebook is narrow."""
    return widgets.HBox(children, layout=widgets.Layout(flex_flow="row wrap"))


class Steppable(Protocol):
    """What a :class:`StepBar` drives: the moves its buttons call, and the
    :class:`~.closing.ClosingBox` methods that install (and, on close, remove) handlers."""

    def prev(self) -> bool: ...
    def next(self) -> bool: ...
    def reset(self) -> None: ...
    def stop(self) -> None: ...
    def _on_slider(self, change: dict) -> None: ...
    def _on_click(self, button: widgets.Button, handler) -> None: ...
    def _observe(self, widget: widgets.Widget, handler, names: str = "value") -> None: ...
    def _keep(self, widget: widgets.Widget) -> widgets.Widget: ...


class StepBar:
    """Prev, Next, Play and the step slider ("step k" and "of n") every day; Reset, Stop
    and Play's speed behind "More ▾", with whatever else a stepper puts there.

    Made and wired once, for one stepper (``owner``): the handlers are installed with
    the owner's ``_on_click``/``_observe``, so closing the stepper removes them. With a
    ``picture`` (a :class:`~.graphview.GraphView`), the slider moves its lit step in
    the browser.
    """

    NAMES = (
        "prev_button", "next_button", "reset_button", "play", "stop_button", "speed",
        "slider", "step_count", "more_button", "more",
    )  # fmt: skip
    # The controls that move the stepper: all() gives them, to disable together.
    MOVING = (
        "prev_button", "next_button", "reset_button", "play", "stop_button", "slider", "speed",
    )  # fmt: skip

    def __init__(
        self,
        owner: Steppable,
        interval_ms: int,
        picture: widgets.Widget | None = None,
        more_says: str = "reset, stop, Play's speed",
    ) -> None:
        self.owner = owner
        self.prev_button = widgets.Button(description="◀ Prev", tooltip="show the previous step")
        self.next_button = widgets.Button(description="Next ▶", tooltip="show the next step")
        self.reset_button = widgets.Button(description="⟲ Reset", tooltip="back to step 1")
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
        self.step_count = widgets.HTML()  # "of 7" after the slider's own "step k"
        owner._keep(widgets.jslink((self.play, "value"), (self.slider, "value")))
        owner._keep(widgets.jslink((self.speed, "value"), (self.play, "interval")))
        if picture is not None:
            owner._keep(widgets.jslink((self.slider, "value"), (picture, "step")))
        owner._on_click(self.prev_button, lambda _: owner.prev())
        owner._on_click(self.next_button, lambda _: owner.next())
        owner._on_click(self.reset_button, lambda _: owner.reset())
        owner._on_click(self.stop_button, lambda _: owner.stop())
        owner._observe(self.slider, owner._on_slider)
        self.more_button = widgets.ToggleButton(description="More ▾", tooltip=more_says)
        self.more = widgets.VBox(self.more_rows(), layout=widgets.Layout(display="none"))
        owner._observe(self.more_button, lambda change: self.show_more(change["new"]))

    def more_rows(self) -> list:
        """What "More ▾" opens: Reset, Stop and Play's speed."""
        return [wrapping_row([self.reset_button, self.stop_button, self.speed])]

    def rows(self, *everyday: widgets.Widget) -> list:
        """The everyday row (and ``everyday``, a stepper's own one or two controls it
        needs every day, before "More ▾"), then the box "More ▾" opens."""
        row = [self.prev_button, self.next_button, self.play, self.slider, self.step_count]
        return [wrapping_row([*row, *everyday, self.more_button]), self.more]

    def show_more(self, shown: bool) -> None:
        """The everyday controls are Prev, Next, Play and the step slider; the rest wait
        behind "More" (a picture to look at first, eighteen controls later)."""
        self.more.layout.display = "" if shown else "none"
        self.more_button.description = "Less ▴" if shown else "More ▾"

    def count(self, step: int, total: int, reachable: int | None = None) -> None:
        """Step ``step`` of ``total`` on the slider, its "of n" and Play; the slider and
        Play go no further than ``reachable`` (predict mode stops at its question)."""
        last = total if reachable is None else min(total, reachable)
        self.slider.max = self.play.max = max(last, 1)
        self.step_count.value = f"<span class='wb-step-count'>of {total}</span>"
        self.slider.value = step

    def name_on(self, owner: widgets.Widget) -> None:
        """The controls as the stepper's own attributes (``stepper.next_button``): the
        names tests and lessons read."""
        for name in self.NAMES:
            setattr(owner, name, getattr(self, name))

    def all(self) -> list:
        """Every control that moves the stepper (disabled together when it cannot start)."""
        return [getattr(self, name) for name in self.MOVING]


class StepperControls(StepBar):
    """The backward stepper's bar: behind "More" also step over, find a node, run to it,
    breakpoints, fold again and the view switch."""

    NAMES = (
        *StepBar.NAMES, "over_button", "view_switch", "node_filter", "fold_button",
        "node_picker", "run_to_button", "breakpoint_button", "continue_button",
    )  # fmt: skip
    MOVING = (
        *StepBar.MOVING, "over_button", "node_filter", "node_picker", "run_to_button",
        "breakpoint_button", "continue_button", "fold_button",
    )  # fmt: skip

    def __init__(self, owner: BackwardStepper, interval_ms: int, view: str) -> None:
        # Made before the bar, whose "More" box holds them (see more_rows).
        self.over_button = widgets.Button(
            description="Step over ⤼", tooltip="run every step inside the lit folded box"
        )
        self.view_switch = widgets.ToggleButtons(
            options=[("backward", "backward"), ("forward", "forward"), ("side by side", "both")],
            value=view,
            description="view",
            style={"button_width": "90px"},
        )
        self.node_filter = widgets.Text(placeholder="find a node: name or id", description="find")
        self.fold_button = widgets.Button(
            description="Fold again ⟲", tooltip="close the opened box", disabled=True
        )
        self.node_picker = widgets.Dropdown(description="node")
        self.run_to_button = widgets.Button(description="Run to node")
        self.breakpoint_button = widgets.Button(description="Toggle breakpoint")
        self.continue_button = widgets.Button(description="Continue ▶▶")
        super().__init__(
            owner,
            interval_ms,
            owner.graph,
            "step over, reset, speed, find a node, breakpoints, views",
        )
        self.next_button.tooltip = "run the next node"
        self._wire()

    def more_rows(self) -> list:
        """Step over beside the bar's Reset, Stop and speed; then the node finder,
        breakpoints and fold again, and the view switch."""
        return [
            wrapping_row([self.over_button, self.reset_button, self.stop_button, self.speed]),
            wrapping_row([self.node_filter, self.node_picker, self.run_to_button]),
            wrapping_row([self.breakpoint_button, self.continue_button, self.fold_button]),
            self.view_switch,
        ]

    def _wire(self) -> None:
        """Each button calls the stepper's method of its name."""
        owner = self.owner
        owner._on_click(self.over_button, lambda _: owner.step_over())
        owner._on_click(self.fold_button, lambda _: owner.close_box(owner._selected_node()))
        owner._on_click(self.run_to_button, lambda _: owner.run_to(self.node_picker.value))
        owner._on_click(
            self.breakpoint_button, lambda _: owner.toggle_breakpoint(self.node_picker.value)
        )
        owner._on_click(self.continue_button, lambda _: owner.continue_())

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
