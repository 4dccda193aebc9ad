"""JacobianBuilder: a Jacobian built column by column (forward mode) and row by row (reverse).

For f: Rⁿ → Rᵐ at x, one forward-mode pass along the j-th unit vector eⱼ gives J eⱼ, the
j-th column; one backward pass from the i-th unit vector eᵢ gives eᵢᵀ J, the i-th row.
So ``jacfwd`` needs n passes and ``jacrev`` m: a tall function (few inputs, many outputs)
is cheaper forward, a wide one (a loss: many inputs, one output) backward.

Each press of a "pass" button runs one real pass (``wb.func.jvp``, or the ``vjp_fn`` of
one ``wb.func.vjp``) and fills what it gave. The counters count passes as they run: a
forward pass when its ``jvp`` returns, a backward pass when the engine announces one
(``BackwardStarted``), so a count is never worked out from the shapes.
"""

from __future__ import annotations

import html
from collections.abc import Callable

import ipywidgets as widgets
import numpy as np

from ..core import events
from ..core.factories import tensor
from ..core.tensor import Tensor
from ..func import jvp, vjp
from .closing import ClosingBox
from .panel import STYLE


def _unit(size: int, index: int, dtype) -> Tensor:
    """eᵢ: the pass's direction, one 1 among zeros."""
    e = np.zeros(size, dtype=dtype)
    e[index] = 1
    return tensor(e)


def _check(f_out, x: Tensor) -> None:
    if not isinstance(f_out, Tensor) or f_out.dim() != 1 or x.dim() != 1:
        shape = tuple(f_out.shape) if isinstance(f_out, Tensor) else type(f_out).__name__
        raise ValueError(
            f"JacobianBuilder: f must take a 1-D Tensor and return one; got input shape "
            f"{tuple(x.shape)} and output {shape}"
        )


def matrix_html(matrix: np.ndarray, title: str) -> str:
    """The matrix as a table; entries not yet computed show as '·'."""
    rows = []
    for row in matrix:
        cells = "".join("<td>·</td>" if np.isnan(v) else f"<td>{v:.4g}</td>" for v in row)
        rows.append(f"<tr>{cells}</tr>")
    return f"<b>{html.escape(title)}</b><table class='wb-jacobian'>{''.join(rows)}</table>"


class JacobianBuilder(ClosingBox):
    """Build the Jacobian of ``f`` at ``x`` pass by pass, forward and reverse, side by side.

    :meth:`forward_pass` fills the next column, :meth:`backward_pass` the next row;
    :meth:`run_all` runs every pass of both. ``forward_passes`` and ``backward_passes``
    count the passes run; ``by_columns`` and ``by_rows`` are the two matrices so far
    (NaN where not yet filled).
    """

    def __init__(self, f: Callable, x: Tensor) -> None:
        super().__init__()
        self.x = x.detach()
        out, self._pull_back = vjp(f, self.x)  # one forward run; each row is one backward
        _check(out, self.x)
        self.f = f
        m, n = out.shape[0], self.x.shape[0]
        self.by_columns = np.full((m, n), np.nan)
        self.by_rows = np.full((m, n), np.nan)
        self.forward_passes = self.backward_passes = 0  # passes heard run
        self.columns_filled = self.rows_filled = 0
        self._dtype = self.x.numpy().dtype
        self.forward_button = widgets.Button(description="forward pass ▶ (a column)")
        self.backward_button = widgets.Button(description="◀ backward pass (a row)")
        self.all_button = widgets.Button(description="run all passes")
        self._on_click(self.forward_button, lambda _: self.forward_pass())
        self._on_click(self.backward_button, lambda _: self.backward_pass())
        self._on_click(self.all_button, lambda _: self.run_all())
        self.forward_view, self.backward_view = widgets.HTML(), widgets.HTML()
        self.forward_view.add_class("wb-jacfwd")
        self.backward_view.add_class("wb-jacrev")
        self.summary = widgets.HTML()
        self.summary.add_class("wb-pass-count")
        for button in (self.forward_button, self.backward_button, self.all_button):
            button.layout.width = "auto"  # the whole label, never cut to "forward pass ▶ (…"
        buttons = widgets.HBox([self.forward_button, self.backward_button, self.all_button])
        # the two matrices apart, one under the other where the output area is narrow
        views = widgets.HBox(
            [self.forward_view, self.backward_view],
            layout=widgets.Layout(flex_flow="row wrap", grid_gap="8px 32px"),
        )
        self.children = [widgets.HTML(STYLE), buttons, views, self.summary]
        self._show()

    def forward_pass(self) -> bool:
        """One forward-mode pass along the next unit vector: fills that column."""
        j = self.columns_filled
        if j >= self.by_columns.shape[1]:
            return False
        _, column = jvp(self.f, (self.x,), (_unit(len(self.by_columns[0]), j, self._dtype),))
        self.forward_passes += 1
        # detached: f may close over weights that require grad (an MLP's), so may its output
        self.by_columns[:, j] = column.detach().numpy()
        self.columns_filled += 1
        self._show()
        return True

    def backward_pass(self) -> bool:
        """One backward pass from the next output's unit vector: fills that row."""
        i = self.rows_filled
        if i >= self.by_rows.shape[0]:
            return False
        with events.collect("backward_started") as heard:
            (row,) = self._pull_back(_unit(len(self.by_rows), i, self._dtype))
        self.backward_passes += len(heard.events)
        self.by_rows[i, :] = row.detach().numpy()
        self.rows_filled += 1
        self._show()
        return True

    def run_all(self) -> None:
        while self.forward_pass():
            pass
        while self.backward_pass():
            pass

    def _show(self) -> None:
        m, n = self.by_rows.shape
        self.forward_view.value = matrix_html(
            self.by_columns, f"jacfwd: column by column, {self.forward_passes} of {n} passes"
        )
        self.backward_view.value = matrix_html(
            self.by_rows, f"jacrev: row by row, {self.backward_passes} of {m} passes"
        )
        self.forward_button.disabled = self.columns_filled >= n
        self.backward_button.disabled = self.rows_filled >= m
        self.summary.value = (
            f"f: R{n} → R{m}. Forward passes run: {self.forward_passes}. "
            f"Backward passes run: {self.backward_passes}."
            + (" The two matrices are equal." if self.done and self.equal else "")
        )

    @property
    def done(self) -> bool:
        m, n = self.by_rows.shape
        return self.columns_filled == n and self.rows_filled == m

    @property
    def equal(self) -> bool:
        return bool(np.allclose(self.by_columns, self.by_rows, rtol=1e-5, atol=1e-6))
