"""gradcheck and gradgradcheck: compare the engine's gradients with finite differences.

The numerical Jacobian uses central differences, ``(f(x + ε) − f(x − ε)) / 2ε``, one
input element at a time. The analytical Jacobian is built one row at a time with
vector-Jacobian products (one ``grad()`` call per output element). Both are laid
out as PyTorch does: rows are input elements, columns are output elements.

Complex numbers are checked as PyTorch checks them. A complex output is two real
functions, its imaginary part (checked first) and its real part. A complex input
element z = x + iy is perturbed twice, along x and along y, and its numerical entry is
∂s/∂x + i·∂s/∂y, which is what the engine's gradient z̄ must be (see
``workbench/ops/complex_numbers.py``). A rule that forgets a ``conj`` gets the sign of
the imaginary parts wrong, and the elements that differ are named.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

from ..core.tensor import Tensor, is_differentiable_dtype
from ..record import forward_ad
from . import entry_points

DOUBLE = (np.dtype("float64"), np.dtype("complex128"))


class GradcheckError(RuntimeError):
    """The analytical and numerical gradients disagree."""


def _as_tuple(x) -> tuple:
    return x if isinstance(x, tuple) else tuple(x) if isinstance(x, list) else (x,)


def _differentiable_outputs(func, inputs) -> tuple:
    outputs = _as_tuple(func(*inputs))
    return tuple(o for o in outputs if isinstance(o, Tensor) and is_differentiable_dtype(o.dtype))


def _output_values(func, inputs, expected: int) -> list:
    """Copies of the outputs' values: an output may be a view of the input we perturb.

    The function runs in the caller's grad mode: gradgradcheck's function calls grad()
    inside, which needs a graph to differentiate.
    """
    values = [o._data.copy() for o in _differentiable_outputs(func, inputs)]
    if len(values) != expected:
        raise AssertionError(
            f"gradcheck: the function returned {len(values)} differentiable outputs when an "
            f"input was perturbed, and {expected} before"
        )
    return values


def _numerical_jacobians(func, inputs, eps: float, base: tuple) -> list:
    """``jac[j][i]`` for input j and output i: shape (input.numel, output.numel)."""
    jacobians = []
    for x in inputs:
        if not (isinstance(x, Tensor) and x.requires_grad):
            jacobians.append(None)
            continue
        dtype = x._data.dtype if x._data.dtype.kind == "c" else np.float64
        columns = [np.zeros((x.numel(), o.numel()), dtype=dtype) for o in base]
        flat = x._data.reshape(-1)
        if not np.shares_memory(flat, x._data):
            raise RuntimeError("gradcheck needs inputs whose memory can be perturbed in place")
        # A complex element is moved along its real and its imaginary axis: ∂/∂x + i·∂/∂y.
        directions = (1, 1j) if x._data.dtype.kind == "c" else (1,)
        for k in range(flat.size):
            for direction in directions:
                slope = _central_difference(func, inputs, flat, k, eps * direction, base)
                for i, column in enumerate(slope):
                    columns[i][k] += column if direction == 1 else 1j * column
        jacobians.append(columns)
    return jacobians


def _central_difference(func, inputs, flat, k, step, base) -> list:
    """``(f(x + step) − f(x − step)) / 2|step|`` for element ``k`` of ``flat``, per output."""
    original = flat[k].copy()
    flat[k] = original + step
    plus = _output_values(func, inputs, len(base))
    flat[k] = original - step
    minus = _output_values(func, inputs, len(base))
    flat[k] = original
    slopes = []
    for p, m, b in zip(plus, minus, base):
        if p.shape != b.shape or m.shape != b.shape:
            raise AssertionError(
                "gradcheck: functions must return outputs with the same shape when "
                "inputs are perturbed"
            )
        slopes.append(((p - m) / (2 * abs(step))).reshape(-1))
    return slopes


def _analytical_jacobians(func, inputs, outputs, zero_grad_check: bool) -> tuple[list, list]:
    wanted = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    jacobians = [
        [np.zeros((x.numel(), o.numel()), dtype=_jacobian_dtype(x)) for o in outputs]
        if any(x is w for w in wanted)
        else None
        for x in inputs
    ]
    reentrant = []
    for i, out in enumerate(outputs):
        if not out.requires_grad:
            continue
        for m in range(out.numel()):
            unit = np.zeros(out.shape, dtype=out.dtype)
            unit.reshape(-1)[m] = 1
            first = entry_points.grad(
                out, wanted, Tensor._make(unit), retain_graph=True, allow_unused=True
            )
            again = entry_points.grad(
                out, wanted, Tensor._make(unit), retain_graph=True, allow_unused=True
            )
            reentrant.append((first, again))
            w = 0
            for j in range(len(inputs)):
                if jacobians[j] is None:
                    continue
                g = first[w]
                w += 1
                if g is not None:
                    jacobians[j][i][:, m] = g._data.reshape(-1)
        if zero_grad_check:
            zeros = Tensor._make(np.zeros(out.shape, dtype=out.dtype))
            got = entry_points.grad(out, wanted, zeros, retain_graph=True, allow_unused=True)
            if any(g is not None and np.any(g._data != 0) for g in got):
                raise GradcheckError(
                    "Gradcheck: backward not multiplied by grad_output: a zero grad_output gave "
                    "a non-zero gradient"
                )
    return jacobians, reentrant


def _forward_jacobians(func, inputs, outputs) -> list:
    """The Jacobians again, column by column in forward mode: one pass per input element,
    that input made dual with a unit tangent at the element, the outputs' tangents read.

    A complex input element is moved along 1 and along i, and its entry is
    ẏ(1) + i · ẏ(i), the layout of the numerical Jacobian (∂s/∂x + i · ∂s/∂y).
    """
    jacobians = []
    for j, x in enumerate(inputs):
        if not (isinstance(x, Tensor) and x.requires_grad):
            jacobians.append(None)
            continue
        columns = [np.zeros((x.numel(), o.numel()), dtype=_jacobian_dtype(x)) for o in outputs]
        directions = (1, 1j) if x._data.dtype.kind == "c" else (1,)
        for k in range(x.numel()):
            for direction in directions:
                unit = np.zeros(x.shape, dtype=x._data.dtype)
                unit.reshape(-1)[k] = direction
                for i, tangent in enumerate(_output_tangents(func, inputs, j, unit, len(outputs))):
                    columns[i][k] += tangent if direction == 1 else 1j * tangent
        jacobians.append(columns)
    return jacobians


def _output_tangents(func, inputs, j: int, unit: np.ndarray, expected: int) -> list:
    """The outputs' tangents (flattened; zeros for an output without one) when input ``j``
    carries the tangent ``unit``."""
    with forward_ad.dual_level():
        args = list(inputs)
        args[j] = forward_ad.make_dual(inputs[j], Tensor._make(unit))
        outputs = _differentiable_outputs(func, tuple(args))
        if len(outputs) != expected:
            raise AssertionError("gradcheck: the function returned other outputs in forward mode")
        tangents = []
        for out in outputs:
            tangent = forward_ad.unpack_dual(out).tangent
            values = np.zeros(out.shape) if tangent is None else tangent._data
            tangents.append(np.asarray(values).reshape(-1))
    return tangents


def _jacobian_dtype(x):
    return x._data.dtype if x._data.dtype.kind == "c" else np.float64


def _mismatch_message(
    i: int, j: int, numerical, analytical, atol, rtol, prefix="", what="Jacobian mismatch"
) -> str:
    bad = ~np.isclose(analytical, numerical, rtol=rtol, atol=atol)
    where = [tuple(int(v) for v in idx) for idx in np.argwhere(bad)[:10]]
    return (
        f"{prefix}{what} for output {i} with respect to input {j},\n"
        f"numerical:{numerical}\nanalytical:{analytical}\n"
        f"elements that differ (input element, output element): {where}"
    )


def gradcheck(
    func: Callable,
    inputs,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    fast_mode: bool = False,
    check_forward_ad: bool = False,
    check_backward_ad: bool = True,
    **_ignored,
) -> bool:
    """Check ``func``'s gradients at ``inputs`` against central finite differences.

    ``check_forward_ad``: check the forward-mode Jacobian (JVP rules, through
    ``forward_ad``) too; ``check_backward_ad=False`` checks forward mode alone.
    """
    if not (check_forward_ad or check_backward_ad):
        raise AssertionError(
            "Expected at least one of check_forward_ad or check_backward_ad to be True"
        )
    inputs = _as_tuple(inputs)
    if not any(isinstance(x, Tensor) and x.requires_grad for x in inputs):
        raise ValueError("gradcheck expects at least one input tensor to require gradient")
    for j, x in enumerate(inputs):
        if isinstance(x, Tensor) and x.requires_grad and x.dtype not in DOUBLE:
            warnings.warn(
                f"Input #{j} requires gradient and is not a double precision floating point. "
                "This check will likely fail if all the inputs are not of double precision "
                "floating point.",
                UserWarning,
                stacklevel=2,
            )
    try:
        for part, part_func, complex_outputs in _real_and_imag_parts(func, inputs):
            settings = (eps, atol, rtol, nondet_tol, check_undefined_grad, fast_mode)
            prefix = f"While considering the {part} part of complex outputs only, "
            prefixes = {i: prefix for i in complex_outputs}
            if check_backward_ad:
                _check(part_func, inputs, *settings, prefixes)
            if check_forward_ad:
                _check_forward(part_func, inputs, eps, atol, rtol, prefixes)
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


def _real_and_imag_parts(func, inputs) -> list:
    """``(part, function, indices of complex outputs)`` to check, as PyTorch does: with
    complex outputs, first their imaginary parts, then their real parts (real outputs
    stay as they are in both); without, ``func`` alone."""
    from .. import ops

    outputs = _differentiable_outputs(func, inputs)
    complex_outputs = [i for i, o in enumerate(outputs) if o.is_complex()]
    if not complex_outputs:
        return [("real", func, [])]

    def part_of(take):
        def part_func(*args):
            outs = _differentiable_outputs(func, args)
            return tuple(take(o) if o.is_complex() else o for o in outs)

        return part_func

    return [
        ("imaginary", part_of(ops.imag), complex_outputs),
        ("real", part_of(ops.real), complex_outputs),
    ]


def _check(
    func, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad, fast_mode, prefixes
) -> None:
    """Compare the Jacobians of a function with real outputs (``prefixes``: the words that
    name a complex output's part in a failure message, by output index)."""
    outputs = _differentiable_outputs(func, inputs)
    analytical, reentrant = _analytical_jacobians(func, inputs, outputs, check_undefined_grad)
    for first, again in reentrant:
        for a, b in zip(first, again):
            if a is None or b is None:
                continue
            if not np.allclose(a._data, b._data, rtol=0, atol=nondet_tol):
                raise GradcheckError(
                    "Backward is not reentrant, i.e., running backward with same input and "
                    "grad_output multiple times gives different values, although analytical "
                    "gradient matches numerical gradient. The tolerance for nondeterminism "
                    f"was {nondet_tol}."
                )
    numerical = _numerical_jacobians(func, inputs, eps, outputs)
    if fast_mode:
        _compare_fast(analytical, numerical, atol, rtol, prefixes)
        return
    for j, (num_j, ana_j) in enumerate(zip(numerical, analytical)):
        if num_j is None:
            continue
        for i, (num, ana) in enumerate(zip(num_j, ana_j)):
            if not np.allclose(ana, num, rtol=rtol, atol=atol):
                prefix = prefixes.get(i, "")
                raise GradcheckError(_mismatch_message(i, j, num, ana, atol, rtol, prefix))


def _check_forward(func, inputs, eps, atol, rtol, prefixes) -> None:
    """Compare the forward-mode Jacobians with the numerical ones (PyTorch's message)."""
    outputs = _differentiable_outputs(func, inputs)
    forward = _forward_jacobians(func, inputs, outputs)
    numerical = _numerical_jacobians(func, inputs, eps, outputs)
    for j, (num_j, fwd_j) in enumerate(zip(numerical, forward)):
        if num_j is None:
            continue
        for i, (num, fwd) in enumerate(zip(num_j, fwd_j)):
            if not np.allclose(fwd, num, rtol=rtol, atol=atol):
                what = "Jacobian computed with forward mode mismatch"
                raise GradcheckError(
                    _mismatch_message(i, j, num, fwd, atol, rtol, prefixes.get(i, ""), what)
                )


def _compare_fast(analytical, numerical, atol, rtol, prefixes) -> None:
    """Fast mode compares vᵀ J u for random u, v; on failure it shows the full Jacobians."""
    rng = np.random.default_rng(0)
    for j, (num_j, ana_j) in enumerate(zip(numerical, analytical)):
        if num_j is None:
            continue
        for i, (num, ana) in enumerate(zip(num_j, ana_j)):
            u = rng.standard_normal(num.shape[0])
            v = rng.standard_normal(num.shape[1])
            if not np.isclose(u @ ana @ v, u @ num @ v, rtol=rtol, atol=atol):
                raise GradcheckError(
                    "Jacobian mismatch (fast mode: uᵀJv differs). Slow mode would show:\n"
                    + _mismatch_message(i, j, num, ana, atol, rtol, prefixes.get(i, ""))
                )


def _random_like(rng, t: Tensor) -> np.ndarray:
    """Standard normal values of ``t``'s shape and dtype (both parts random if complex)."""
    values = rng.standard_normal(t.shape)
    if t.is_complex():
        values = values + 1j * rng.standard_normal(t.shape)
    return values.astype(t.dtype)


def gradgradcheck(
    func: Callable,
    inputs,
    grad_outputs=None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    gen_non_contig_grad_outputs: bool = False,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    fast_mode: bool = False,
    **_ignored,
) -> bool:
    """Check second derivatives: gradcheck of the function ``(x, v) ↦ vᵀ ∂f/∂x``."""
    inputs = _as_tuple(inputs)
    outputs = _differentiable_outputs(func, inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(1234)
        grad_outputs = tuple(Tensor(_random_like(rng, o), requires_grad=True) for o in outputs)
    else:
        grad_outputs = _as_tuple(grad_outputs)
    n_inputs = len(inputs)
    wanted_idx = [j for j, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]

    def first_derivative(*args):
        xs, vs = args[:n_inputs], args[n_inputs:]
        outs = _differentiable_outputs(func, xs)
        pairs = [(o, v) for o, v in zip(outs, vs) if o.requires_grad]
        grads = entry_points.grad(
            [o for o, _ in pairs],
            [xs[j] for j in wanted_idx],
            [v for _, v in pairs],
            create_graph=True,
            allow_unused=True,
        )
        return tuple(g for g in grads if g is not None)

    return gradcheck(
        first_derivative,
        inputs + grad_outputs,
        # Passes every option on by name; alike in shape only with the optimizers' defaults dicts.
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
        nondet_tol=nondet_tol,
        check_undefined_grad=check_undefined_grad,
        fast_mode=fast_mode,
    )
