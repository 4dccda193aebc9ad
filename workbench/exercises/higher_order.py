"""Check a learner's Hessian-vector product and Jacobian, against finite differences.

Two exercises of the higher-order lesson::

    def hvp(f, x, v):            # H·v, the Hessian of the scalar f at x times v,
        ...                      # by double backward (create_graph=True)

    def jacobian(f, x):          # J[i..., j...] = ∂f(x)[i...] / ∂x[j...], one
        ...                      # backward per output element

    check_hvp(hvp)
    check_jacobian(jacobian)

The expected answers come from central finite differences in float64 (of the
gradient for H·v, of ``f`` for J) and, to the last digits, from the engine
(``wb.autograd.functional.hvp``, ``wb.gradient``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..autograd import functional
from ..autograd.entry_points import grad as autograd_grad
from ..autograd.te import gradient
from ..core.tensor import Tensor
from ..record.grad_mode import no_grad
from .diagnose import NOT_VALUES, Finding, as_array, compare, is_close
from .guard import checker
from .report import ExerciseError, Passed, call_learner, fail
from .rules import FD_ATOL, FD_EPS, FD_RTOL, central_differences

NO_GRAPH = "does not require grad and does not have a grad_fn"
SECOND_TIME = "backward through the graph a second time"


def scalar_functions() -> list:
    """(name, f, x, v): scalar functions with nonzero, non-diagonal Hessians."""
    rng = np.random.default_rng(3)
    a = Tensor(rng.standard_normal((3, 3)))
    return [
        ("f(x) = Σ x³ + x₀·x₁", lambda x: (x**3).sum() + x[0] * x[1], [1.0, -2.0, 0.5], [1, 1, 2]),
        ("f(x) = logsumexp(A @ x)", lambda x: (a @ x).logsumexp(0), [0.3, -0.1, 0.8], [2, 0, -1]),
        ("f(x) = Σ sin(x) · x", lambda x: (x.sin() * x).sum(), [[0.5, 1.0], [-1.5, 2.0]], None),
    ]


def leaf(values) -> Tensor:
    return Tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


def numeric_gradient(f: Callable, x: np.ndarray) -> np.ndarray:
    """∇f(x) by central differences (f: a scalar function of a tensor)."""
    point = x.copy()

    def value() -> float:
        with no_grad():
            return float(f(Tensor(point)).numpy())

    return central_differences(point, value)


def engine_gradient(f: Callable, x: np.ndarray) -> np.ndarray:
    point = leaf(x)
    return autograd_grad(f(point), point)[0].numpy()


def short_error(err: ExerciseError, advice: str) -> ExerciseError:
    """The learner's error, with ``advice`` in place of the engine's words."""
    context = err.message.split(", your", 1)[0]
    return ExerciseError(f"{context}, {advice}.")


def named(finding: Finding, kind: str, advice: str) -> str:
    """``advice``, with the finding's kind set to the diagnosis that names its cause (an
    "elements" finding that a diagnosis explains is no longer a bare difference)."""
    finding.kind = kind
    return advice


def call_with_advice(function: Callable, args: tuple, context: str, known: dict):
    """Run the learner's function; an engine error listed in ``known`` gets its advice."""
    try:
        return call_learner(function, args, context)
    except ExerciseError as err:
        for words, advice in known.items():
            if words in err.message:
                raise short_error(err, advice) from None
        raise


# --------------------------------------------------------------------- H·v
HVP_ERRORS = {
    NO_GRAPH: "your second backward found no graph: the first gradient was taken without "
    "create_graph=True, so it is a plain number that cannot be differentiated again",
    SECOND_TIME: "your second backward found the graph freed: take the first gradient with "
    "create_graph=True (which also keeps the graph)",
}


@checker
def check_hvp(hvp: Callable[[Callable, Tensor, Tensor], Tensor]) -> Passed:
    """Check ``hvp(f, x, v)`` = H(x)·v on three scalar functions (vectors and a matrix x)."""
    rng = np.random.default_rng(0)
    for name, f, x, v in scalar_functions():
        x = np.asarray(x, dtype=np.float64)
        v = rng.standard_normal(x.shape) if v is None else np.asarray(v, dtype=np.float64)
        context = f"For {name} at x of shape {x.shape}"
        got = call_with_advice(hvp, (f, leaf(x), Tensor(v)), context, HVP_ERRORS)
        expected = functional.hvp(f, Tensor(x), Tensor(v))[1].numpy()
        numeric = gradient_change(f, x, v)
        finding = compare("your H·v", expected, got)
        if finding is None:
            finding = compare("your H·v", numeric, got, rtol=FD_RTOL, atol=FD_ATOL)
        if finding is not None:
            fail(finding.sentences(context, hvp_advice(finding, f, x, v, got)), finding)
    return Passed(
        "Your Hessian-vector product is right.",
        "On three functions it equals (∇f(x + εv) − ∇f(x − εv)) / 2ε, the change of the "
        "gradient along v. You just proved that differentiating g·v, where g = ∇f came from "
        "a recorded backward (create_graph=True), gives H·v without ever forming H.",
    )


def gradient_change(f: Callable, x: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(∇f(x + εv) − ∇f(x − εv)) / 2ε: H·v by finite differences of the gradient."""
    return (engine_gradient(f, x + FD_EPS * v) - engine_gradient(f, x - FD_EPS * v)) / (2 * FD_EPS)


def hvp_advice(finding: Finding, f: Callable, x: np.ndarray, v: np.ndarray, got) -> str | None:
    """Name the usual mistakes: the gradient itself, g + H·v (x.grad kept the first
    gradient), vᵀ·g, H·v with v left out."""
    if finding.kind in NOT_VALUES:
        return None  # the observation says it all
    if finding.kind == "shape":
        if as_array(got).size == 1:
            return "that is one number, the directional derivative g·v: differentiate it again"
        return "H·v has the shape of x"
    got = as_array(got)
    g = engine_gradient(f, x)
    if is_close(g + as_array(finding.expected), got, 1e-6, 1e-9):
        return named(
            finding,
            "gradient_kept",
            "that is ∇f(x) + H·v: x.grad still held the first gradient when your second "
            "backward added H·v into it. Set x.grad = None between the two backward passes, "
            "or use wb.autograd.grad, which adds into nothing",
        )
    if is_close(g, got, 1e-6, 1e-9):
        return named(
            finding,
            "gradient",
            "that is the gradient g = ∇f(x) itself: differentiate g·v (a scalar) with respect "
            "to x a second time",
        )
    ones = functional.hvp(f, Tensor(x), Tensor(np.ones_like(x)))[1].numpy()
    if is_close(ones, got, 1e-6, 1e-9):
        advice = "that is H·1, the Hessian times ones: weight the gradient by v, (g * v).sum()"
        return named(finding, "hessian_ones", advice)
    return None


# ------------------------------------------------------------------ Jacobians
def vector_functions() -> list:
    """(name, f, x): functions whose Jacobians are not diagonal; the first, not square."""
    a = np.array([[1.0, 2.0, 0.0], [-1.0, 0.5, 3.0]])
    return [
        ("f(x) = A @ x, A of shape (2, 3)", lambda x: Tensor(a) @ x, [0.5, -1.0, 2.0]),
        ("f(x) = softmax(x)", lambda x: x.softmax(0), [0.2, -0.4, 1.0]),
        ("f(x) = cumsum(x²) over rows", lambda x: (x * x).cumsum(1), [[1.0, -2.0], [0.5, 3.0]]),
    ]


JACOBIAN_ERRORS = {
    SECOND_TIME: "your second backward found the graph freed by the first: pass "
    "retain_graph=True to every backward but the last (or compute f(x) again for each row)",
}


@checker
def check_jacobian(jacobian: Callable[[Callable, Tensor], Tensor]) -> Passed:
    """Check ``jacobian(f, x)``, shaped ``f(x).shape + x.shape``, on three functions."""
    for name, f, x in vector_functions():
        x = np.asarray(x, dtype=np.float64)
        context = f"For {name} at x of shape {x.shape}"
        got = call_with_advice(jacobian, (f, leaf(x)), context, JACOBIAN_ERRORS)
        point = leaf(x)
        expected = gradient(f(point), point)[0].numpy()
        numeric = numeric_jacobian(f, x)
        finding = compare("your Jacobian", expected, got)
        if finding is None:
            finding = compare("your Jacobian", numeric, got, rtol=FD_RTOL, atol=FD_ATOL)
        if finding is not None:
            y_shape = expected.shape[: expected.ndim - x.ndim]
            advice = jacobian_advice(finding, expected, got, x.shape, y_shape)
            fail(finding.sentences(context, advice), finding)
    return Passed(
        "Your Jacobian is right.",
        "On three functions it equals finite differences and wb.gradient(y, x). You just "
        "proved that one backward with the one-hot ȳ = eᵢ gives eᵢᵀJ, row i of J: a backward "
        "pass computes the vector-Jacobian product ȳᵀJ.",
    )


def numeric_jacobian(f: Callable, x: np.ndarray) -> np.ndarray:
    """J by central differences: for each output element, the gradient of that element."""
    with no_grad():
        out_shape = f(Tensor(x)).shape
    rows = []
    for index in np.ndindex(out_shape):
        rows.append(numeric_gradient(lambda t, i=index: f(t)[i], x))
    return np.stack(rows).reshape(tuple(out_shape) + x.shape)


def jacobian_advice(
    finding: Finding, expected: np.ndarray, got, x_shape: tuple, y_shape: tuple
) -> str | None:
    """Name the usual mistakes: the gradient of the sum, x's axes first, another shape of
    the right size, rows that accumulate, every row alike, rows in another order."""
    if finding.kind in NOT_VALUES:
        return None  # the observation says it all
    got = as_array(got)
    if finding.kind == "shape":
        return jacobian_shape_advice(expected, got, x_shape, y_shape)
    size = int(np.prod(x_shape))
    rows, answer = expected.reshape(-1, size), got.reshape(-1, size)
    if is_close(np.cumsum(rows, 0), answer, 1e-6, 1e-9):
        return named(
            finding,
            "accumulated",
            "row i holds the sum of rows 0 to i: x.grad kept adding up across your backward "
            "passes. Set x.grad = None before each, or use wb.autograd.grad",
        )
    if len(rows) > 1 and is_close(np.broadcast_to(rows.sum(0), rows.shape), answer, 1e-6, 1e-9):
        return named(
            finding,
            "summed_rows",
            "every row is the gradient of f(x).sum(): ȳ must be one-hot for row i (1 at "
            "output element i, 0 elsewhere), not all ones",
        )
    if same_rows_in_another_order(rows, answer):
        return named(
            finding,
            "row_order",
            "every row of yours is a row of J, but in another order: row i must be the "
            "gradient of output element i, counting y's elements in y.reshape(-1)'s order",
        )
    return None


def jacobian_shape_advice(expected: np.ndarray, got: np.ndarray, x_shape, y_shape) -> str:
    """A Jacobian of the wrong shape: x's shape (a gradient), x's axes first, or the
    right number of elements in another shape."""
    if got.shape == x_shape:
        return (
            "that has the shape of x: it looks like the gradient of f(x).sum(), the sum "
            "of J's rows. Take one backward per output element, with ȳ one-hot"
        )
    wanted = f"f(x).shape + x.shape = {tuple(expected.shape)}"
    if got.shape == tuple(x_shape) + tuple(y_shape):
        moved = np.moveaxis(got, list(range(len(x_shape))), list(range(-len(x_shape), 0)))
        right = " (with its axes moved back, its values are right)"
        right = right if is_close(expected, moved, 1e-6, 1e-9) else ""
        return (
            f"that has x's axes first: J's shape is {wanted}, row i being the gradient of "
            f"output element i{right}"
        )
    if got.size == expected.size:
        right = " (reshaped, its values are right)"
        right = right if is_close(expected, got.reshape(expected.shape), 1e-6, 1e-9) else ""
        return f"reshape it to {wanted}{right}"
    return f"J has the shape {wanted}: one row per output element"


def same_rows_in_another_order(rows: np.ndarray, answer: np.ndarray) -> bool:
    """Each row of ``answer`` is a row of ``rows``, each used once, not all in place."""
    unused = list(range(len(rows)))
    for row in answer:
        match = next((k for k in unused if is_close(rows[k], row, 1e-6, 1e-9)), None)
        if match is None:
            return False
        unused.remove(match)
    return not is_close(rows, answer, 1e-6, 1e-9)
