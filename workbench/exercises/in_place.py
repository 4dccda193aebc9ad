"""Check a loss rewritten so that backward works: no saved tensor changed in place.

Lesson 3's ``broken_loss(x)`` changes sigmoid's output in place after sigmoid saved
it for its gradient rule; its backward raises the version error. The learner writes
``fixed_loss(x)``, the same value with a backward that works.
:func:`check_fixed_loss` runs it on a fresh ``x`` and compares the value and
``x.grad`` with the engine's for the out-of-place loss; a wrong gradient is named
where it is exactly what a known shortcut gives (the change hidden from the version
counter with ``.data``), otherwise shown as expected against got.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import workbench as wb

from ..core.tensor import Tensor
from .guard import checker
from .predictions import Mistake, check_prediction
from .report import Passed, call_learner, fail

X_VALUES = (0.5, -1.0, 2.0)
VERSION_ERROR = "modified by an inplace operation"
NO_GRAPH = "does not require grad"
SECOND_TIME = "backward through the graph a second time"


def broken_loss(x: Tensor) -> Tensor:
    """The loss of lesson 3 whose backward fails."""
    y = wb.sigmoid(x)  # sigmoid saves its output y for its gradient rule
    y.add_(1)  # ... which this changes in place: y is now at version 1
    return (y * y).sum()


def right_loss(x: Tensor) -> Tensor:
    """The same value, out of place: sigmoid's saved output stays as it was."""
    y = wb.sigmoid(x) + 1
    return (y * y).sum()


def data_changed_loss(x: Tensor) -> Tensor:
    """The change hidden from the version counter: backward runs, on the wrong y."""
    y = wb.sigmoid(x)
    y.data.add_(1)  # .data: the same memory, without a version to check
    return (y * y).sum()


def one_factor_detached(x: Tensor) -> Tensor:
    """The error avoided by detaching one factor of y * y: half the gradient is cut."""
    y = wb.sigmoid(x) + 1
    return (y.detach() * y).sum()


def fresh_x() -> Tensor:
    return wb.tensor(list(X_VALUES), requires_grad=True, name="x")


@checker
def check_fixed_loss(fixed_loss: Callable[[Tensor], Tensor]) -> Passed:
    """``fixed_loss(x)`` must give ``broken_loss(x)``'s value, and a backward that works."""
    x = fresh_x()
    loss = call_learner(fixed_loss, (x,), what="function fixed_loss")
    check_value(loss)
    run_backward(loss)
    check_prediction("x.grad", gradient_of(right_loss), x.grad, shortcuts())
    return Passed(
        "Your fixed_loss is right.",
        "Same value, and its backward works: sigmoid's saved output was left as it was, so "
        "its version still matched when backward needed it.",
    )


def gradient_of(loss_of: Callable[[Tensor], Tensor]) -> np.ndarray:
    x = fresh_x()
    loss_of(x).backward()
    return x.grad.numpy()


def shortcuts() -> list:
    """The gradients of two ways round the error that give a wrong gradient."""
    return [
        Mistake(
            "hidden_change",
            gradient_of(data_changed_loss),
            "That is the gradient sigmoid's rule gives from its saved output after that "
            "output changed behind the version counter's back (.data): the error was hidden, "
            "not fixed. Make a new tensor for y + 1, or change a clone",
        ),
        Mistake(
            "path_cut",
            gradient_of(one_factor_detached),
            "That is the gradient of y * y with one factor detached: .detach() stops the "
            "gradient through that factor, and y * y sends one back through each",
        ),
    ]


def check_value(loss) -> None:
    """A one-number tensor, equal to ``broken_loss``'s value."""
    if not isinstance(loss, Tensor):
        fail(f"Your fixed_loss returns a {type(loss).__name__}: return the loss, a tensor.")
    with wb.no_grad():
        expected = broken_loss(fresh_x().detach()).item()
    if loss.numel() != 1:
        fail(f"Your loss has shape {tuple(loss.shape)}: sum it to one number, as broken_loss does.")
    value = loss.detach().item()
    if not np.isclose(value, expected, rtol=1e-6):
        fail(
            f"Your loss is {value:.6g} where broken_loss gives {expected:.6g}: keep the same "
            "value, (sigmoid(x) + 1)² summed, and change only how y is made."
        )


def run_backward(loss: Tensor) -> None:
    """``loss.backward()``; the version error and a loss with no graph are named."""
    try:
        loss.backward()
    except RuntimeError as err:
        fail(backward_error(str(err)))


def backward_error(message: str) -> str:
    """What a RuntimeError of the learner's loss's backward means for this exercise."""
    if VERSION_ERROR in message:
        saved = message.split("[", 1)[1].split("]", 1)[0] if "[" in message else "a saved tensor"
        return (
            f"Your loss's backward still meets the in-place error: [{saved}] changed after it "
            "was saved. An in-place change counts whatever mode it runs in (under no_grad() "
            "too): make a new tensor (y + 1), or change a clone of sigmoid's output instead."
        )
    if SECOND_TIME in message:
        return (
            "Your loss's backward found its graph already used: fixed_loss ran backward "
            "itself, so backward ran twice. Return the loss; the check runs backward."
        )
    if NO_GRAPH in message:
        return (
            "Your loss has no graph back to x, so backward has nothing to follow: .detach() "
            "or no_grad() cut it. Keep sigmoid's output in the graph and make a new tensor "
            "for y + 1."
        )
    return f"Your loss's backward raised RuntimeError: {message.splitlines()[0]}"
