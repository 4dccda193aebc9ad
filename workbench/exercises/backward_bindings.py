"""Check a learner's backward bindings of a layer, against the Gradient transform (lesson 13).

The forward program of one layer, as ``wb.program.trace`` prints it::

    %0 = matmul(%x, %w)
    %z = add(%0, %b)          # b, of shape (H,), broadcast over the N rows
    %h = tanh(%z)

and the learner writes its backward bindings, from h̄ down, as a function of numpy arrays::

    def layer_backward(x, w, b, h, h_bar):
        z_bar = ...           # tanh's rule
        return {"z_bar": z_bar, "x_bar": ..., "w_bar": ..., "b_bar": ...}

:func:`check_adjoint_by_hand` runs it on two layers of random float64 values (shapes
chosen so that no two of N, D, H are equal: a transposed answer cannot have the right
shape by chance) and compares each adjoint with the values of the adjoint program
``wb.program.gradient`` derives from the registered rules. The learner's text is never
read or evaluated: only the arrays their function returns. z̄ is checked first, for
x̄, w̄ and b̄ are made from it. The known slips are named (:func:`slip_finding`): tanh's
derivative taken as 1 − h instead of 1 − h², ȳ left out, the transposes of matmul's
rule swapped, the broadcast bias's adjoint not summed back over the batch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from ..core.tensor import Tensor
from .diagnose import Finding, compare, is_close, shape_text, wrong_values
from .guard import checker
from .report import Passed, call_learner, fail, fail_on
from .rules import as_result

SEED = 13
SHAPES = ((4, 3, 5), (2, 6, 3))  # (N, D, H): x (N, D), w (D, H), b (H,)
NAMES = ("z_bar", "x_bar", "w_bar", "b_bar")
SYMBOLS = {"z_bar": "z̄", "x_bar": "x̄", "w_bar": "w̄", "b_bar": "b̄"}
REAL = "the layer is real, and so are its adjoints"


def layer(x: Tensor, w: Tensor, b: Tensor) -> Tensor:
    """The forward program the exercise differentiates: h = tanh(x @ w + b)."""
    z = x @ w + b
    z.name = "z"
    h = z.tanh()
    h.name = "h"
    return h


def reference(x, w, b, h_bar) -> tuple[np.ndarray, dict]:
    """(h, the adjoints by name): the adjoint program of :func:`layer`, from the
    registered rules, run on these arrays (z̄ taken from inside it)."""
    from ..program import Runner, gradient, trace

    tensors = [Tensor(a.copy(), requires_grad=True) for a in (x, w, b)]
    adjoint = gradient(trace(layer, *tensors))
    z_bar = next(bd.out for bd in adjoint.bindings if bd.out.name == "z_bar")
    adjoint = dataclasses.replace(adjoint, outputs=adjoint.outputs + [z_bar])
    h, x_bar, w_bar, b_bar, z_bar = Runner(adjoint)(*tensors, h_bar)
    values = {"z_bar": z_bar, "x_bar": x_bar, "w_bar": w_bar, "b_bar": b_bar}
    return h.numpy(), {name: v.numpy() for name, v in values.items()}


def cases() -> list[tuple]:
    """(x, w, b, h_bar) for each shape, random float64 values."""
    rng = np.random.default_rng(SEED)
    made = []
    for n, d, hidden in SHAPES:
        made.append(
            (
                rng.standard_normal((n, d)),
                rng.standard_normal((d, hidden)) / np.sqrt(d),
                rng.standard_normal(hidden),
                rng.standard_normal((n, hidden)),
            )
        )
    return made


@checker
def check_adjoint_by_hand(layer_backward: Callable) -> Passed:
    """Check ``layer_backward(x, w, b, h, h_bar)``: a dict of z̄, x̄, w̄ and b̄ for
    z = x @ w + b, h = tanh(z), equal to the Gradient transform's adjoint values."""
    for x, w, b, h_bar in cases():
        h, expected = reference(x, w, b, h_bar)
        context = (
            f"With x of shape {shape_text(x.shape)}, w {shape_text(w.shape)}, "
            f"b {shape_text(b.shape)} and h̄ {shape_text(h_bar.shape)}"
        )
        args = (x.copy(), w.copy(), b.copy(), h.copy(), h_bar.copy())
        got = call_learner(layer_backward, args, context, "function layer_backward")
        answers = adjoints_of(got, context)
        for name in NAMES:
            fail_on(adjoint_finding(name, x, w, h, h_bar, expected, answers[name]), context)
    return Passed(
        "Your backward bindings are right.",
        "On two layers of random values your z̄, x̄, w̄ and b̄ equal the adjoint program that "
        "wb.program.gradient derives from the registered rules: tanh's z̄ = h̄ · (1 − h²), "
        "matmul's x̄ = z̄ @ wᵀ and w̄ = xᵀ @ z̄, and add's b̄, z̄ collapse-summed over the batch "
        "that broadcasting added. You just wrote, by hand, the bindings the transform writes.",
    )


def adjoints_of(got, context: str) -> dict:
    """The four adjoints the learner returned, as float arrays (refused in words)."""
    keys = ", ".join(f'"{n}"' for n in NAMES)
    if not isinstance(got, dict):
        fail(
            f"{context}, your function returned a {type(got).__name__}: return a dict with "
            f"the keys {keys}"
        )
    missing = [n for n in NAMES if n not in got]
    if missing:
        fail(
            f"{context}, the dict your function returned has no "
            f"{', '.join(repr(n) for n in missing)}: return one array for each of {keys}"
        )
    return {
        n: as_result(got[n], context, f"an array for {SYMBOLS[n]} ({n!r})", REAL) for n in NAMES
    }


def adjoint_finding(name, x, w, h, h_bar, expected: dict, got: np.ndarray) -> Finding | None:
    """None if ``got`` is the adjoint ``name``; else a named slip, or expected against got."""
    want = expected[name]
    what = f"your {SYMBOLS[name]}"
    if is_close(want, got):
        return None
    finding = slip_finding(name, what, x, w, h, h_bar, expected, got)
    if finding is not None:
        return finding
    upstream = h_bar if name == "z_bar" else None
    finding = compare(what, want, got, upstream=upstream)
    if finding is not None and finding.kind == "no_upstream":
        finding.advice = "multiply it by h̄, the adjoint arriving from above: the chain rule"
    return finding


def slip_finding(name, what, x, w, h, h_bar, expected, got) -> Finding | None:
    """The known slips of this exercise, by the values they give."""
    want = expected[name]
    if name == "z_bar" and is_close(h_bar * (1 - h), got):
        return wrong_values(
            "tanh_derivative",
            what,
            f"{what} is h̄ · (1 − h): tanh's derivative is 1 − h², not 1 − h",
            "the derivative of tanh(z) is 1 − tanh(z)² = 1 − h · h, with h the forward value",
            want,
            got,
            1e-7,
            1e-9,
        )
    if name in ("x_bar", "w_bar") and got.shape == want.T.shape and is_close(want.T, got):
        right = "z̄ @ wᵀ" if name == "x_bar" else "xᵀ @ z̄"
        return Finding(
            "transposed",
            what,
            f"{what} has shape {shape_text(got.shape)} where {shape_text(want.shape)} was "
            f"expected: it is the transpose of the right one, the transposes swapped",
            f"an adjoint has its value's shape; matmul's rule is {SYMBOLS[name]} = {right}",
            details={"expected_shape": want.shape, "got_shape": got.shape},
        )
    if name == "b_bar" and got.shape != want.shape:
        return bias_finding(what, want, expected["z_bar"], got)
    return None


def bias_finding(what, want, z_bar, got) -> Finding:
    """b̄ of the wrong shape: most often z̄ itself, not summed back over the batch."""
    rows = z_bar.shape[0]
    observation = (
        f"{what} has shape {shape_text(got.shape)} where {shape_text(want.shape)} was expected"
    )
    details = {"expected_shape": want.shape, "got_shape": got.shape}
    if got.shape == z_bar.shape:
        advice = (
            f"broadcasting stretched b over the {rows} rows of the batch, so its adjoint is z̄ "
            f"summed back over them (axis 0): the collapse-sum, collapse_sum_like(z̄, b)"
        )
        return Finding("not_summed", what, observation, advice, details=details)
    if got.shape == (rows,):
        advice = "the sum ran along axis 1: b's axis is the last one, sum over the batch (axis 0)"
        return Finding("wrong_axis", what, observation, advice, details=details)
    advice = "an adjoint has its value's shape: b̄ has b's"
    return Finding("shape", what, observation, advice, details=details)


# ------------------------------------------------------- a value used twice
LOSS_CASES = (((4, 3), 1.5), ((2, 5), -0.7))  # (err's shape, L̄)


def squared_error(err: Tensor) -> Tensor:
    """The forward program of the second exercise: L = mean(err * err)."""
    loss = (err * err).mean()
    loss.name = "loss"
    return loss


def loss_reference(err: np.ndarray, loss_bar: float) -> np.ndarray:
    """err̄ from the adjoint program of :func:`squared_error`."""
    from ..program import gradient, trace

    tensor = Tensor(err.copy(), requires_grad=True)
    adjoint = gradient(trace(squared_error, tensor))
    return adjoint.run(tensor, np.asarray(loss_bar))[1].numpy()


@checker
def check_used_twice(loss_backward: Callable) -> Passed:
    """Check ``loss_backward(err, loss_bar)``: err̄ for L = mean(err * err), equal to the
    Gradient transform's value."""
    rng = np.random.default_rng(SEED + 1)
    for shape, loss_bar in LOSS_CASES:
        err = rng.standard_normal(shape)
        expected = loss_reference(err, loss_bar)
        context = f"With err of shape {shape_text(shape)} and L̄ = {loss_bar}"
        got = call_learner(loss_backward, (err.copy(), loss_bar), context, "function loss_backward")
        got = as_result(got, context, "err̄, an array of err's shape", REAL)
        fail_on(used_twice_finding(err, loss_bar, expected, got), context)
    return Passed(
        "Your err̄ is right.",
        "On two shapes and two values of L̄ your err̄ = 2 · err · L̄ / N equals the adjoint "
        "program's: mean_grad's L̄ / N, then mul_grad's two contributions, one per use of err, "
        "added. A value used twice collects both adjoints.",
    )


def used_twice_finding(err, loss_bar, expected, got) -> Finding | None:
    what = "your err̄"
    if is_close(expected, got):
        return None
    slips = (
        (
            "one_use",
            err * loss_bar / err.size,
            "is half the right one: it holds the adjoint from one use of err only",
            "err * err uses err twice, and mul_grad sends ȳ · err to each: a value used twice "
            "collects both adjoints, x̄ = x̄₁ + x̄₂",
        ),
        (
            "mean_not_divided",
            2 * err * loss_bar,
            "is N times the right one: the mean's 1 / N is missing",
            f"mean_grad divides L̄ by the {err.size} averaged elements",
        ),
        (
            "no_upstream",
            2 * err / err.size,
            "leaves L̄ out",
            "multiply by L̄ = loss_bar, the adjoint arriving from above: the chain rule",
        ),
    )
    for kind, slipped, observation, advice in slips:
        if got.shape == slipped.shape and is_close(slipped, got):
            return wrong_values(
                kind, what, f"{what} {observation}", advice, expected, got, 1e-7, 1e-9
            )
    return compare(what, expected, got)
