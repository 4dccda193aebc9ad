"""Check a learner's gradient accumulation over micro-batches.

An exercise of the training lesson. A batch too large for memory runs in pieces, and
because ``backward()`` *adds* into ``p.grad``, the pieces' gradients add up. The learner
writes::

    def accumulate_gradients(model, loss_fn, X, y, micro_batch):
        ...   # leave in each p.grad the gradient of loss_fn(model(X), y), the mean over
              # all N points, running the model on at most micro_batch points at a time

    check_accumulated_gradients(accumulate_gradients)

:func:`check_accumulated_gradients` runs it on a small network, on three splits:
micro-batches of equal size, micro-batches whose last one is smaller, and one
micro-batch holding everything. Each parameter's ``.grad`` must equal the full batch's gradient.
Known wrong versions are recognised by running each and comparing (``MISTAKES``): the
micro-batches' mean losses not scaled, divided by the number of micro-batches (right
only when the sizes are equal), divided by N although already means, the last
micro-batch alone kept, the last, smaller micro-batch left out. Where none fits, the
message shows expected against got and names no cause.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..autograd.entry_points import grad as autograd_grad
from ..core.tensor import Tensor
from ..nn import CrossEntropyLoss, Module, Parameter
from .diagnose import Finding, compare
from .guard import checker
from .report import Passed, call_learner, fail

Accumulate = Callable[[Module, Callable, Tensor, Tensor, int], None]

# (points N, micro-batch size): equal pieces, a smaller last piece, everything at once
SPLITS = ((9, 3), (10, 4), (6, 8))


class SmallNet(Module):
    """``tanh(x @ w1 + b1) @ w2 + b2``: 2 inputs, 5 hidden units, 3 classes (float64)."""

    def __init__(self) -> None:
        super().__init__()
        rng = np.random.default_rng(3)  # the same weights every time, the learner's seed untouched
        self.w1 = Parameter(Tensor(rng.standard_normal((2, 5))))
        self.b1 = Parameter(Tensor(rng.standard_normal(5)))
        self.w2 = Parameter(Tensor(rng.standard_normal((5, 3))))
        self.b2 = Parameter(Tensor(rng.standard_normal(3)))

    def forward(self, x: Tensor) -> Tensor:
        return (x @ self.w1 + self.b1).tanh() @ self.w2 + self.b2


def data(n: int) -> tuple[Tensor, Tensor]:
    rng = np.random.default_rng(4)
    return Tensor(rng.standard_normal((n, 2))), Tensor(rng.integers(0, 3, n))


def pieces(n: int, micro_batch: int) -> list[slice]:
    return [slice(start, start + micro_batch) for start in range(0, n, micro_batch)]


def full_batch_gradients(n: int) -> dict:
    """``{name: ∂L/∂p}`` for the mean loss over all ``n`` points at once."""
    model, (X, y) = SmallNet(), data(n)
    names, params = zip(*model.named_parameters())
    grads = autograd_grad(CrossEntropyLoss()(model(X), y), list(params))
    return {name: g.numpy() for name, g in zip(names, grads)}


# ---------------------------------------- known wrong versions, and what they miss
def summed_means(model, loss_fn, X, y, micro_batch):
    for part in pieces(len(y), micro_batch):
        loss_fn(model(X[part]), y[part]).backward()


def divided_by_count(model, loss_fn, X, y, micro_batch):
    parts = pieces(len(y), micro_batch)
    for part in parts:
        (loss_fn(model(X[part]), y[part]) / len(parts)).backward()


def means_divided_by_n(model, loss_fn, X, y, micro_batch):
    for part in pieces(len(y), micro_batch):
        (loss_fn(model(X[part]), y[part]) / len(y)).backward()


def last_alone(model, loss_fn, X, y, micro_batch):
    part = pieces(len(y), micro_batch)[-1]
    (loss_fn(model(X[part]), y[part]) * (len(y[part]) / len(y))).backward()


def last_mean_alone(model, loss_fn, X, y, micro_batch):
    part = pieces(len(y), micro_batch)[-1]
    loss_fn(model(X[part]), y[part]).backward()


def remainder_left_out(model, loss_fn, X, y, micro_batch):
    for k in range(len(y) // micro_batch):
        part = slice(k * micro_batch, (k + 1) * micro_batch)
        (loss_fn(model(X[part]), y[part]) * (micro_batch / len(y))).backward()


MISTAKES = (
    (
        (summed_means,),
        "Your gradients are the sum of the micro-batches' mean losses' gradients, as if each "
        "were the whole batch: scale each micro-batch's loss by its share of the batch, "
        "its size over N, before backward()",
    ),
    (
        (divided_by_count,),
        "You divided each micro-batch's mean loss by the number of micro-batches: that is "
        "right only when they all have the same size, and here the last one is smaller. "
        "Scale each by its own size over N",
    ),
    (
        (means_divided_by_n,),
        "You divided each micro-batch's mean loss by N, but a mean has already divided by "
        "its micro-batch's size: scale it by its size over N (or divide a sum by N)",
    ),
    (
        (last_alone, last_mean_alone),
        "p.grad holds the last micro-batch's gradient alone: the earlier ones were thrown away "
        "(zeroed, or replaced by assigning p.grad). backward() adds into p.grad: let it add",
    ),
    (
        (remainder_left_out,),
        "The last, smaller micro-batch is missing: its points never reached backward(). "
        "Take the pieces up to N, the last one smaller (range(0, N, micro_batch))",
    ),
)


@checker
def check_accumulated_gradients(accumulate_gradients: Accumulate) -> Passed:
    """Check ``accumulate_gradients(model, loss_fn, X, y, micro_batch)``: each ``p.grad``
    left equal to the gradient of the mean loss over the whole batch."""
    for n, micro_batch in SPLITS:
        check_split(accumulate_gradients, n, micro_batch)
    return Passed(
        "Your gradient accumulation is right.",
        "In equal pieces, with a smaller last piece and in one piece, every p.grad equals "
        "the whole batch's gradient. You just proved that backward() adds into p.grad, and "
        "that a micro-batch's mean loss weighs its size over N in the batch's mean.",
    )


def run(accumulate: Accumulate, n: int, micro_batch: int, context: str = "") -> SmallNet:
    """A fresh network, its gradients left by ``accumulate`` on ``n`` points."""
    model, (X, y) = SmallNet(), data(n)
    call_learner(accumulate, (model, CrossEntropyLoss(), X, y, micro_batch), context)
    return model


def gradients_of(model: SmallNet) -> dict:
    return {
        name: None if p.grad is None else p.grad.detach().numpy()
        for name, p in model.named_parameters()
    }


def check_split(accumulate_gradients: Accumulate, n: int, micro_batch: int) -> None:
    sizes = [len(range(n)[part]) for part in pieces(n, micro_batch)]
    context = f"With N = {n} points in micro-batches of {micro_batch} (sizes {sizes})"
    model = run(accumulate_gradients, n, micro_batch, context)
    took_no_step(model, context)
    expected, got = full_batch_gradients(n), gradients_of(model)
    for name in expected:
        finding = compare(f"{name}.grad", expected[name], got[name])
        if finding is not None:
            advice = known_mistake(got, n, micro_batch)
            if advice is None:
                advice = generic_advice(finding)
            fail(finding.sentences(context, advice), finding, input=name)


def took_no_step(model: SmallNet, context: str) -> None:
    """The parameters must be as they were: accumulating gradients takes no step."""
    for (name, p), (_, before) in zip(model.named_parameters(), SmallNet().named_parameters()):
        if not np.array_equal(p.detach().numpy(), before.detach().numpy()):
            fail(
                f"{context}, your function changed {name}: it should only leave gradients "
                "in p.grad, and take no step (the optimizer does that afterwards)."
            )


def known_mistake(got: dict, n: int, micro_batch: int) -> str | None:
    """The diagnosis of the known wrong version whose gradients ``got`` are, if one is."""
    for versions, diagnosis in MISTAKES:
        for version in versions:
            if same_gradients(gradients_of(run(version, n, micro_batch)), got):
                return diagnosis
    return None


def generic_advice(finding: Finding) -> str | None:
    """What the finding alone shows; compare's advice for a missing gradient would name
    a return value, which this exercise has none of."""
    if finding.kind == "missing":
        return "run backward() on each micro-batch's loss: it adds the gradient into p.grad"
    if finding.kind in ("shape", "not_a_tensor", "zeros", "not_finite"):
        return ""
    return None


def same_gradients(a: dict, b: dict) -> bool:
    return all(
        a[name] is not None
        and b[name] is not None
        and np.allclose(a[name], b[name], rtol=1e-6, atol=1e-9)
        for name in a
    )
