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
from .reverse import argnum_positions, flattened, jacrev, real_only, shaped, split_aux
from .vmap import vmap

__all__ = ["hessian", "jacfwd", "jvp", "linearize"]


def jvp(
    func: Callable, primals: tuple, tangents: tuple, *, strict: bool = False, has_aux: bool = False
):
    """``(func(*primals), J · tangents)``: the outputs and their tangents, one forward pass.
    Primals and tangents are torch.func's pytrees: tensors in tuples, lists and dicts."""
    _check_jvp_arguments(primals, tangents)
    with state.func_transform(), forward_ad.transform_level():
        pairs = zip(flattened(primals), flattened(tangents))
        duals = shaped([forward_ad.make_dual(p, t) for p, t in pairs], primals)
        outputs, aux = split_aux(func(*duals), has_aux, "jvp(f, primals, tangents)")
        values, directions = _unpacked(outputs)
    return (values, directions, aux) if has_aux else (values, directions)


def linearize(func: Callable, *primals) -> tuple:
    """``(func(*primals), jvp_fn)``: ``jvp_fn(*tangents)`` is J · tangents at ``primals``.

    (PyTorch traces the function once; here each call runs it again with dual inputs:
    the same answers, one forward pass per call.)
    """
    zeros = shaped([_zeros_like(p) for p in flattened(primals)], primals)
    output = jvp(func, primals, zeros)[0]

    def jvp_fn(*tangents):
        return jvp(func, primals, tangents)[1]

    return output, jvp_fn


def jacfwd(
    func: Callable, argnums: int | tuple = 0, has_aux: bool = False, *, randomness: str = "error"
) -> Callable:
    """The Jacobian of ``func`` with respect to argument(s) ``argnums`` by forward mode,
    shaped ``output.shape + input.shape``: per argument, one forward pass that carries
    every one-hot tangent at once (``vmap`` over ``jvp``, ``randomness`` as vmap's).

    Arguments and outputs may be pytrees (dicts, tuples, lists of tensors): the answer
    nests as torch.func's, outputs outside, arguments inside (``jac["y"]["w"]``).

    The loop, one forward pass per input element (a column each), is the general road:
    it is taken on a GPU (vmap runs on the CPU only), when the gradients must keep their
    history (an argument on the tape: ``jacrev(jacfwd(f))``) or when an op has no
    batching rule (see ``basis.py``)."""

    def jacobian(*args):
        positions = argnum_positions(argnums, len(args))
        wrt = (
            tuple(args[i] for i in positions) if isinstance(argnums, tuple) else args[positions[0]]
        )
        leaves = flattened(wrt)
        real_only("jacfwd", "inputs", leaves)
        per_leaf, aux, output_like = [], None, []
        for k, leaf in enumerate(leaves):
            of_one = _only_leaf(func, args, positions, argnums, k, has_aux, output_like)
            columns, aux = _columns(of_one, leaf, has_aux, randomness)
            per_leaf.append(columns)
        jac = _per_output(per_leaf, wrt, output_like[0])
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
    stacked = vmap(push_forward, out_dims=out_dims, randomness=randomness)(one_hots([x])[0])
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
def _only_leaf(func, args, positions, argnums, k: int, has_aux: bool, output_like: list):
    """``func`` as a function of the ``k``-th tensor of the arguments it is differentiated
    by (each a pytree), everything else held at ``args``; it returns its outputs' tensors
    as a tuple (and aux), their nesting kept in ``output_like``."""

    def of_one(x):
        chosen = [args[i] for i in positions]
        flat = flattened(chosen)
        chosen = shaped(flat[:k] + [x] + flat[k + 1 :], chosen)
        given = list(args)
        for i, value in zip(positions, chosen):
            given[i] = value
        where = "jvp(f, primals, tangents)"  # torch.func's words: its jacfwd runs jvp
        outputs, aux = split_aux(func(*given), has_aux, where)
        output_like[:] = [outputs]
        flat_outputs = tuple(flattened(outputs))
        return (flat_outputs, aux) if has_aux else flat_outputs

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
    if shaped([None] * len(flattened(primals)), primals) != shaped(
        [None] * len(flattened(tangents)), tangents
    ):
        raise RuntimeError(
            f"{where}: Expected primals and tangents to have the same python structure. For "
            "example, if primals is a tuple of 3 tensors, tangents also must be."
        )
    for p in flattened(primals):
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
    if isinstance(outputs, dict):
        pairs = {key: _unpacked(o) for key, o in outputs.items()}
        return {k: p for k, (p, _) in pairs.items()}, {k: t for k, (_, t) in pairs.items()}
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


def _per_output(per_leaf: list, wrt, output_like):
    """torch.func's nesting: outputs outside (as ``output_like``), arguments inside (as
    ``wrt``). ``per_leaf[k][n]`` is output ``n``'s Jacobian by the ``k``-th input tensor."""
    per_output = [shaped([jac[n] for jac in per_leaf], wrt) for n in range(len(per_leaf[0]))]
    return shaped(per_output, output_like)
