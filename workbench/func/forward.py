"""torch.func's forward-mode transforms: ``jvp``, ``jacfwd``, ``hessian``, ``linearize``.

Each is a few lines over ``wb.autograd.forward_ad``: make the inputs dual, run the
function once, read the outputs' tangents. ``jacfwd`` pushes the whole basis of one-hot
tangents through one batched forward pass (``vmap`` over ``jvp``, as torch.func does;
one forward pass per input element where that pass cannot batch); ``hessian`` is
``jacfwd`` of a reverse-mode Jacobian (forward over reverse: the backward pass runs
inside the dual level, so the gradients carry tangents).

Forward over forward nests as torch.func's: each ``jvp`` opens a dual level of its own
(``forward_ad.transform_level``), so ``jacfwd(jacfwd(f))`` is a Hessian and a ``jvp``
inside a ``jvp`` never mistakes the outer tangent for its own. A ``jvp`` inside a plain
``forward_ad.dual_level()`` is refused, as PyTorch refuses it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..core import state
from ..core.tensor import Tensor
from ..record import forward_ad
from .basis import batching_refused, one_hots
from .reverse import argnum_positions, flattened, jacrev, real_only, split_aux
from .vmap import vmap

__all__ = ["hessian", "jacfwd", "jvp", "linearize"]


def jvp(
    func: Callable, primals: tuple, tangents: tuple, *, strict: bool = False, has_aux: bool = False
):
    """``(func(*primals), J · tangents)``: the outputs and their tangents, one forward pass."""
    _check_jvp_arguments(primals, tangents)
    with state.func_transform(), forward_ad.transform_level():
        duals = [forward_ad.make_dual(p, t) for p, t in zip(primals, tangents)]
        outputs, aux = split_aux(func(*duals), has_aux, "jvp(f, primals, tangents)")
        values, directions = _unpacked(outputs)
    return (values, directions, aux) if has_aux else (values, directions)


def linearize(func: Callable, *primals) -> tuple:
    """``(func(*primals), jvp_fn)``: ``jvp_fn(*tangents)`` is J · tangents at ``primals``.

    (PyTorch traces the function once; here each call runs it again with dual inputs:
    the same answers, one forward pass per call.)
    """
    output = jvp(func, primals, tuple(_zeros_like(p) for p in primals))[0]

    def jvp_fn(*tangents):
        return jvp(func, primals, tangents)[1]

    return output, jvp_fn


def jacfwd(
    func: Callable, argnums: int | tuple = 0, has_aux: bool = False, *, randomness: str = "error"
) -> Callable:
    """The Jacobian of ``func`` with respect to argument(s) ``argnums`` by forward mode,
    shaped ``output.shape + input.shape``: per argument, one forward pass that carries
    every one-hot tangent at once (``vmap`` over ``jvp``, ``randomness`` as vmap's).

    The loop, one forward pass per input element (a column each), is the general road:
    it is taken on a GPU (vmap runs on the CPU only), when the gradients must keep their
    history (an argument on the tape: ``jacrev(jacfwd(f))``) or when an op has no
    batching rule (see ``basis.py``)."""

    def jacobian(*args):
        per_argument, aux = [], None
        positions = argnum_positions(argnums, len(args))
        real_only("jacfwd", "inputs", [args[i] for i in positions])
        for i in positions:
            columns, aux = _columns(_only_argument(func, args, i), args[i], has_aux, randomness)
            per_argument.append(columns)
        jac = _per_output(per_argument, argnums)
        return (jac, aux) if has_aux else jac

    return jacobian


def _columns(of_one: Callable, x: Tensor, has_aux: bool, randomness: str):
    """``(Jacobian of of_one at x, aux)``: one batched forward pass where it can be taken,
    else one forward pass per column (``_looped_columns``)."""
    on_cpu = x.device.type == "cpu"  # vmap's only device
    if x.numel() and on_cpu and not (state.grad_mode.records and x.requires_grad):
        try:
            return _batched_columns(of_one, x, has_aux, randomness)
        except RuntimeError as error:
            if not batching_refused(error):
                raise
    return _looped_columns(of_one, x, has_aux)


def _batched_columns(of_one: Callable, x: Tensor, has_aux: bool, randomness: str):
    """Every column J·eₖ at once: ``jvp`` under ``vmap`` over the basis of one-hot
    tangents; the primal outputs (and aux) do not depend on the tangent, so they are
    the same in every example and leave the vmap unbatched."""
    unbatched = []

    def push_forward(unit: Tensor):
        answer = jvp(of_one, (x,), (unit,), has_aux=has_aux)
        real_only("jacfwd", "outputs", flattened(answer[0]))
        unbatched.append(answer[2] if has_aux else None)
        return answer[1]

    out_dims = -1  # output.shape + (x.numel(),), as the loop stacks its columns
    stacked = vmap(push_forward, out_dims=out_dims, randomness=randomness)(one_hots(x.numel(), x))
    return _reshaped(stacked, x), unbatched[0]


def _looped_columns(of_one: Callable, x: Tensor, has_aux: bool):
    columns, aux = [], None
    for unit in _unit_tangents(x):
        answer = jvp(of_one, (x,), (unit,), has_aux=has_aux)
        real_only("jacfwd", "outputs", flattened(answer[0]))
        aux = answer[2] if has_aux else None
        columns.append(answer[1])
    return _assemble(columns, x), aux


def hessian(func: Callable, argnums: int | tuple = 0) -> Callable:
    """``jacfwd(jacrev(func, argnums), argnums)``: forward over reverse, as torch.func's
    (jacrev's backward passes run inside jacfwd's dual level, so the gradients carry
    tangents)."""
    return jacfwd(jacrev(func, argnums), argnums)


# ---------------------------------------------------------------- helpers
def _only_argument(func: Callable, args: tuple, i: int) -> Callable:
    """``func`` as a function of its argument ``i`` alone, the others held at ``args``."""

    def of_one(x):
        return func(*args[:i], x, *args[i + 1 :])

    return of_one


def _check_jvp_arguments(primals, tangents) -> None:
    where = "jvp(f, primals, tangents)"
    if not isinstance(primals, tuple):
        raise RuntimeError(
            f"{where}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals)."
        )
    if not isinstance(tangents, tuple) or len(tangents) != len(primals):
        raise RuntimeError(
            f"{where}: Expected primals and tangents to have the same python structure. For "
            "example, if primals is a tuple of 3 tensors, tangents also must be."
        )
    if not primals:
        raise RuntimeError(f"{where}: Expected primals to contain at least one Tensor.")
    for p in primals:
        if not isinstance(p, Tensor):
            raise RuntimeError(f"{where}: Expected primals to only contain Tensors, got {type(p)}")


def _unpacked(outputs):
    """Primal values and tangents (zeros where an output has none) of the outputs."""
    if isinstance(outputs, Tensor):
        primal, tangent = forward_ad.unpack_dual(outputs)
        return primal, tangent if tangent is not None else _zeros_like(primal)
    if isinstance(outputs, (tuple, list)):
        pairs = [_unpacked(o) for o in outputs]
        return tuple(p for p, _ in pairs), tuple(t for _, t in pairs)
    raise RuntimeError(
        "jvp(f, primals, tangents): expected f(*primals) to return only tensors, got "
        f"unsupported type {type(outputs)}"
    )


def _zeros_like(t: Tensor) -> Tensor:
    return Tensor._make(np.zeros_like(t._data))


def _unit_tangents(x: Tensor):
    """The tangents e₀, e₁, ...: one per element of ``x`` (one forward pass each)."""
    for k in range(x.numel()):
        unit = np.zeros(x.shape, dtype=x._data.dtype)
        unit.reshape(-1)[k] = 1
        yield Tensor._make(unit).to(x.device)  # on x's device (a GPU's: the loop runs there)


def _assemble(columns: list, x: Tensor):
    """The columns J eₖ, one per element of x, as a Jacobian ``output.shape + x.shape``."""
    from .. import ops

    if isinstance(columns[0], tuple):
        return tuple(_assemble([c[n] for c in columns], x) for n in range(len(columns[0])))
    return _reshaped(ops.stack(columns, dim=-1), x)  # output.shape + (x.numel(),)


def _reshaped(stacked, x: Tensor):
    """Columns stacked on a last dim (``output.shape + (x.numel(),)``) as a Jacobian
    ``output.shape + x.shape`` (each output of a tuple alike)."""
    from .. import ops

    if isinstance(stacked, tuple):
        return tuple(_reshaped(s, x) for s in stacked)
    return ops.reshape(stacked, tuple(stacked.shape[:-1]) + tuple(x.shape))


def _per_output(per_argument: list, argnums):
    """torch.func's nesting: outputs outside, arguments inside."""
    if isinstance(argnums, int):
        return per_argument[0]
    if isinstance(per_argument[0], tuple):  # several outputs
        return tuple(tuple(arg[n] for arg in per_argument) for n in range(len(per_argument[0])))
    return tuple(per_argument)
