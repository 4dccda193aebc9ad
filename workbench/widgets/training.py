"""TrainingMonitor: a progress bar, the loss curve and a 2-D decision boundary, as it trains.

::

    monitor = wb.widgets.TrainingMonitor(steps=300, points=X, labels=y, predict=classify)
    display(monitor)
    for step in range(300):
        ...                            # zero_grad, loss, backward, step
        monitor.record(loss.item())    # one step done

``predict`` maps an ``(m, 2)`` float32 array of points to their class numbers; the
monitor calls it under ``no_grad`` on a grid covering the data, and colours each
region by its class. The pictures are redrawn every ``every`` steps and at the last
one (a redraw costs a figure); the progress bar moves at every step. After the last
step the widget shows the finished run: its text says so.
"""

from __future__ import annotations

import html
from collections.abc import Callable

import ipywidgets as widgets
import numpy as np

from ..autograd.grad_mode import no_grad
from ..tensor import Tensor
from .closing import ClosingBox
from .plots import figure_png, new_figure

GRID = 100  # points per side of the grid the boundary is drawn on


class TrainingMonitor(ClosingBox):
    """Watch a classifier of 2-D points train: progress, loss curve, decision regions."""

    def __init__(
        self,
        steps: int,
        points,
        labels,
        predict: Callable[[np.ndarray], object],
        every: int = 50,
    ) -> None:
        super().__init__()
        if steps < 1 or every < 1:
            raise ValueError(f"TrainingMonitor: steps and every must be ≥ 1 (got {steps}, {every})")
        self.steps = steps
        self.every = every
        self.points = as_array(points)
        if self.points.ndim != 2 or self.points.shape[1] != 2:
            raise ValueError(
                f"TrainingMonitor: points must have shape (n, 2), got {self.points.shape}"
            )
        self.labels = as_array(labels)
        self.predict = predict
        self.losses: list[float] = []
        self.progress = widgets.IntProgress(value=0, min=0, max=steps, description="training")
        self.status = widgets.HTML()
        self.image = widgets.Image(format="png")
        self.children = [widgets.HBox([self.progress, self.status]), self.image]
        self.redraw()

    @property
    def done(self) -> bool:
        return len(self.losses) >= self.steps

    def record(self, loss: float) -> None:
        """One training step is done, with this loss: move the bar, redraw when it is time."""
        if self.done:
            raise RuntimeError(f"TrainingMonitor: all {self.steps} steps are already recorded")
        self.losses.append(float(loss))
        self.progress.value = len(self.losses)
        self.status.value = self.status_html()
        if len(self.losses) % self.every == 0 or self.done:
            self.redraw()

    def status_html(self) -> str:
        step = len(self.losses)
        text = f"step {step} of {self.steps}"
        if self.losses:
            text += f", loss {self.losses[-1]:.4f}"
        if self.done:
            text += " — finished"
        return html.escape(text)

    def regions(self) -> tuple:
        """The grid's x and y coordinates and the predicted class at each grid point."""
        low = self.points.min(axis=0) - 0.2
        high = self.points.max(axis=0) + 0.2
        xs, ys = np.linspace(low[0], high[0], GRID), np.linspace(low[1], high[1], GRID)
        grid = np.stack(np.meshgrid(xs, ys), axis=-1).reshape(-1, 2).astype(np.float32)
        with no_grad():
            classes = as_array(self.predict(grid))
        return xs, ys, classes.reshape(GRID, GRID)

    def redraw(self) -> None:
        """Draw the loss curve so far and the current decision regions."""
        fig = new_figure(9.0, 3.4)
        curve, board = fig.subplots(1, 2)
        if self.losses:
            curve.plot(np.arange(1, len(self.losses) + 1), self.losses)
        curve.set(xlim=(0, self.steps), xlabel="step", ylabel="loss", title="training loss")
        xs, ys, classes = self.regions()
        extent = (xs[0], xs[-1], ys[0], ys[-1])
        vmin, vmax = self.labels.min(), self.labels.max()  # regions coloured as their points
        board.imshow(
            classes,
            origin="lower",
            extent=extent,
            alpha=0.3,
            cmap="viridis",
            vmin=vmin,
            vmax=vmax,
            interpolation="nearest",
            aspect="equal",
        )
        board.scatter(*self.points.T, c=self.labels, s=6, cmap="viridis", vmin=vmin, vmax=vmax)
        board.set(title=f"decision regions after {len(self.losses)} steps")
        self.image.value = figure_png(fig)
        self.status.value = self.status_html()

    def _let_go(self) -> None:
        self.predict = None


def as_array(values) -> np.ndarray:
    if isinstance(values, Tensor):
        return values.detach().numpy()
    return np.asarray(values)
