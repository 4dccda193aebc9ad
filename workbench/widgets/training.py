"""TrainingMonitor: a progress bar, the loss curve and a 2-D decision boundary, as it trains.

::

    monitor = wb.widgets.TrainingMonitor(steps=300, points=X, labels=y, predict=classify)
    display(monitor)
    for step in range(300):
        ...                            # zero_grad, loss, backward, step
        monitor.record(loss.item())    # one step done

With ``model=net`` it also watches the gradient flow (:mod:`.gradient_flow`): per layer,
the gradient norm and the update-to-data ratio over the steps, drawn under the loss, and
a sentence that marks vanishing or exploding gradients and says why. ``record`` must
then come after ``optimizer.step()`` and before the next ``zero_grad()``: it reads each
weight's ``.grad`` and how far the step moved it.

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

from ..core.tensor import Tensor
from ..nn import Module
from ..record.grad_mode import no_grad
from .closing import ClosingBox
from .gradient_flow import HEALTHY_UPDATE, FlowVerdict, GradientFlow
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
        model: Module | None = None,
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
        self.flow = GradientFlow(model) if model is not None else None
        self.diagnosis = widgets.HTML()
        self.children = [widgets.HBox([self.progress, self.status]), self.image]
        if self.flow is not None:
            self.children = [*self.children, self.diagnosis]
        self.redraw()

    @property
    def done(self) -> bool:
        return len(self.losses) >= self.steps

    def record(self, loss: float) -> None:
        """One training step is done, with this loss: move the bar, redraw when it is time."""
        if self.done:
            raise RuntimeError(f"TrainingMonitor: all {self.steps} steps are already recorded")
        self.losses.append(float(loss))
        if self.flow is not None:
            self.flow.record()
        self.progress.value = len(self.losses)
        self.status.value = self.status_html()
        if len(self.losses) % self.every == 0 or self.done:
            self.redraw()

    @property
    def verdict(self) -> FlowVerdict:
        """The gradient flow so far in one sentence (needs ``model=``)."""
        if self.flow is None:
            raise RuntimeError("TrainingMonitor: the gradient flow is watched only with model=")
        return self.flow.verdict()

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
        rows = 1 if self.flow is None else 2
        fig = new_figure(9.0, 3.4 * rows)
        axes = fig.subplots(rows, 2, squeeze=False)
        curve, board = axes[0]
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
        if self.flow is not None:
            self.draw_flow(*axes[1])
            self.diagnosis.value = html.escape(self.verdict.message)
        self.image.value = figure_png(fig)
        self.status.value = self.status_html()

    def draw_flow(self, norms_axes, updates_axes) -> None:
        """Per layer, the gradient norm and the update-to-data ratio at every step so far,
        on log axes: zeros (a dead layer) and inf or nan (an overflow) are left out."""
        steps = np.arange(1, self.flow.steps + 1)
        curves = [
            (norms_axes, self.flow.grad_norms, "gradient norm per layer"),
            (updates_axes, self.flow.update_ratios, "update / data per layer (-- 1e-3)"),
        ]
        updates_axes.axhline(HEALTHY_UPDATE, color="grey", linestyle="--", linewidth=1)
        for axes, rows, title in curves:
            values = np.array(rows, dtype=np.float64).reshape(len(rows), len(self.flow.names))
            drawable = np.isfinite(values) & (values > 0)
            for layer, name in enumerate(self.flow.names if drawable.any() else []):
                axes.plot(steps, np.where(drawable[:, layer], values[:, layer], np.nan), label=name)
            axes.set(xlim=(0, self.steps), xlabel="step", title=title)
            if drawable.any():
                axes.set_yscale("log")
        if norms_axes.get_legend_handles_labels()[0]:
            norms_axes.legend(fontsize=7)

    def _let_go(self) -> None:
        self.predict = None
        if self.flow is not None:
            self.flow.close()


def as_array(values) -> np.ndarray:
    if isinstance(values, Tensor):
        return values.detach().numpy()
    return np.asarray(values)
