"""Reverse-mode transforms: ``grad``, ``grad_and_value``, ``vjp`` and ``jacrev``, as
``torch.func`` names them, built on the workbench's own ``autograd.grad``.

Each transform gives the arguments it differentiates a fresh place on the graph (a
clone when they are on the tape already, a new leaf otherwise: its *level*, see
``_Level``), runs the function, and asks ``autograd.grad`` for the gradients, with
``create_graph=True`` when they depend on something outside the level, so that an
outer transform or an ordinary ``backward()`` can differentiate them again:
``grad(grad(f))``, ``jacrev(grad(f))`` and a gradient penalty are the same code run
twice. What depends on nothing outside comes back without history, as from
``torch.func``.

``jacrev`` runs the function once and pulls the whole basis of one-hot cotangents back
through its graph in one batched backward pass (``vmap`` over the pullback, as
torch.func does); where that pass cannot batch, one backward pass per output element.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable

from .. import ops
from ..autograd import entry_points
from ..core import state
from ..core.factories import zeros_like
from ..core.tensor import Tensor
from ..record import forward_ad, grad_mode
from ..record.graph import AccumulateGrad, edge_of, walk
from .basis import batching_refused, check_chunk_size, one_hots, through_vmap
from .batching import opened_here


# ---------------------------------------------------------------- argnums
def argnum_positions(argnums, count: int) -> tuple:
    """The argument positions ``argnums`` names (an int or a tuple of ints, bools
    counting as ints), checked as torch.func checks them: in range, and each position
    once (``(0, -2)`` of two arguments names 0 twice)."""
    if isinstance(argnums, int):
        return (_position(argnums, count),)
    if not isinstance(argnums, tuple) or not all(isinstance(a, int) for a in argnums):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    if not argnums:
        raise RuntimeError("argnums must be non-empty")
    positions = tuple(_position(a, count) for a in argnums)
    if len(set(positions)) != len(positions):
        raise RuntimeError(f"argnums elements must be unique, got {positions}")
    return positions


def _position(argnum: int, count: int) -> int:
    if not -count <= argnum < count:
        raise RuntimeError(f"Got argnum={argnum}, but only {count} positional inputs")
    return argnum % count


# ---------------------------------------------------------------- levels
class _Level:
    """One grad transform at work, and the tensors that belong to it.

    ``torch.func`` gives each running transform a *level* and wraps the tensors it
    differentiates at that level: the transform computes its gradients at its own level
    only, and every level outside it (an outer ``grad``, the ordinary tape of a
    ``backward()`` to come) sees the whole computation, the inner gradient included.
    ``grad(lambda x: (w * x * x).sum())(x)`` is then a differentiable function of ``w``
    and ``x``: a gradient penalty built on it fills ``w.grad``.

    The workbench has one tape, so a level is the set of **leaves** the transform made
    for the arguments it differentiates (``watch``). An argument on the tape already
    (it requires grad: an outer transform or the outer graph watches it) gets a clone
    instead, a fresh spot of the one graph, still linked to the original: the inner
    gradient is taken w.r.t. the clone, never w.r.t. the original, so that a tensor
    closed over from outside stays a constant to the inner transform (no *perturbation
    confusion* in ``grad(lambda x: grad(lambda y: x * y)(x))(x)``).

    Everything the history of a result reaches beyond the level's own leaves is outside
    it. The gradients are computed with ``create_graph`` when the outputs reach outside
    (the inner backward pass is then on the tape, for the outer levels to differentiate);
    a result that reaches nothing outside is handed back without history, as torch.func
    unwraps it (``release``).
    """

    def __init__(self) -> None:
        self.leaves: list[Tensor] = []
        self.records_outside = state.grad_mode.records  # the caller's grad mode
        self.under_vmap = bool(state.transforms.levels)

    def watch(self, x):
        """``x`` (a tensor, or a tuple/list/dict of them) on a fresh spot of the graph."""
        if isinstance(x, (tuple, list)):
            return type(x)(self.watch(t) for t in x)
        if isinstance(x, dict):
            return {key: self.watch(t) for key, t in x.items()}
        if not isinstance(x, Tensor):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
        if x.requires_grad:  # on the tape already: a clone stays linked to it
            return opened_here(ops.clone(x))
        leaf = Tensor._make(x._data).requires_grad_(True)  # (never an inference tensor)
        self.leaves.append(leaf)
        return opened_here(_with_tangents_of(x, leaf))

    def watch_arguments(self, args: tuple, positions: tuple) -> list:
        """``args`` with each one at ``positions`` watched (see ``watch``), the others as
        they are: what ``grad`` and ``jacrev`` hand the function."""
        args = list(args)
        for p in positions:
            args[p] = self.watch(args[p])
        return args

    def reaches_outside(self, tensors, *, through_rules: bool = False) -> bool:
        """Whether the history of one of ``tensors`` reaches a tensor that requires grad
        outside this level (a tensor closed over, an argument on the tape); with
        ``through_rules``, also whether a vmap's batched call on it is seen by the levels
        outside that vmap through its rule (``batching.mark_seen_outside``: their tensors
        have no edge on this tape)."""
        if not self.records_outside:
            return False
        own = {id(leaf) for leaf in self.leaves}
        roots = [edge_of(t)[0] for t in tensors if isinstance(t, Tensor) and t.requires_grad]
        return any(
            (isinstance(node, AccumulateGrad) and id(node.variable) not in own)
            or (through_rules and node.seen_outside)
            for node in walk(roots)
        )

    def differentiated_outside(self, tensors) -> bool:
        """Whether a level outside this one differentiates what is computed from
        ``tensors``: the backward pass is then recorded (``create_graph``). Under a vmap
        the levels outside it see its batched calls through their rules, not on this
        tape, so their marks are read too; a vmap that batches only what no outer level
        differentiates (``jacfwd``'s tangents: ``hessian``) records nothing."""
        return self.reaches_outside(tensors, through_rules=self.under_vmap)

    def release(self, value):
        """What the transform hands back: ``value`` with its history where it reaches
        outside this level, without where it does not (tangents kept either way)."""
        if isinstance(value, Tensor):
            if self.reaches_outside([value]):
                return value
            return _detached(value)
        if isinstance(value, (tuple, list)):
            return type(value)(self.release(v) for v in value)
        if isinstance(value, dict):
            return {key: self.release(v) for key, v in value.items()}
        return value


def _with_tangents_of(x: Tensor, plain: Tensor) -> Tensor:
    """``plain`` (a copy of ``x`` without history), carrying ``x``'s tangents (each
    detached alike): under an outer ``jvp`` (``jvp(grad(f))``, forward over reverse)
    detaching must not drop them."""
    forward_ad.carry_tangents(x, plain, _detached)
    return plain


def _detached(x: Tensor) -> Tensor:
    """``x`` without its history at this level; a batched ``x`` keeps the history of its
    batch (the levels outside the vmap, which this transform runs inside)."""
    plain = Tensor._make(x._data)
    plain._version_ref = x._version_ref
    return _with_tangents_of(x, plain)


def flattened(x) -> list:
    """The tensors of ``x`` (nested tuples, lists and dicts: torch.func's pytrees), in order."""
    if isinstance(x, (tuple, list)):
        return [t for item in x for t in flattened(item)]
    if isinstance(x, dict):
        return flattened(list(x.values()))
    return [x]


def shaped(flat: list, like):
    """``flat`` put back in the nesting of ``like``."""
    items = iter(flat)

    def build(template):
        if isinstance(template, (tuple, list)):
            return type(template)(build(t) for t in template)
        if isinstance(template, dict):
            return {key: build(t) for key, t in template.items()}
        return next(items)

    return build(like)


def _gradients(level: _Level, outputs: list, inputs: list, cotangents: list | None) -> list:
    """d⟨outputs, cotangents⟩/d inputs, zeros where an input does not reach the outputs.

    The backward pass records a graph when what it differentiates reaches outside the
    level (see ``_Level``). Tangents need no graph: inside a dual level (jacfwd over
    jacrev) they flow through the backward pass's ops as through any other."""
    reached = [o for o in outputs if o.requires_grad]
    if not reached:
        return [zeros_like(x) for x in inputs]
    if cotangents is not None:
        cotangents = [c for o, c in zip(outputs, cotangents) if o.requires_grad]
    grads = entry_points.grad(
        reached,
        inputs,
        cotangents,
        retain_graph=True,
        create_graph=level.differentiated_outside(reached + (cotangents or [])),
        allow_unused=True,
    )
    return [zeros_like(x) if g is None else g for x, g in zip(inputs, grads)]


@contextlib.contextmanager
def _transform():
    """Inside: grad mode on, whatever the caller's (``no_grad``, ``inference_mode``): a
    transform differentiates at its own level, as torch.func's do."""
    with state.func_transform(), grad_mode.inference_mode(False):
        yield


def split_aux(output, has_aux: bool, api: str):
    """``(output, aux)``; with ``has_aux`` f must return exactly a pair (PyTorch's error)."""
    if not has_aux:
        return output, None
    if not (isinstance(output, tuple) and len(output) == 2):
        raise RuntimeError(
            f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True"
        )
    return output


def _check_scalar_output(output, api: str) -> None:
    """grad's function must return a scalar Tensor (PyTorch's errors)."""
    if not isinstance(output, Tensor):
        raise RuntimeError(f"{api}: Expected f(*args) to return a Tensor, got {type(output)}")
    if output.dim() != 0:
        raise RuntimeError(
            f"{api}: Expected f(*args) to return a scalar Tensor, got tensor with "
            f"{output.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs "
            "instead?"
        )


def only_tensors(output, api: str) -> list:
    """The tensors of ``output`` (a tensor or a pytree of them), refused as torch.func
    refuses anything else in it, or no tensor at all."""
    outputs = flattened(output)
    for o in outputs:
        if not isinstance(o, Tensor):
            raise RuntimeError(
                f"{api}: expected f(*primals) to return only tensors, got unsupported "
                f"type {type(o)}"
            )
    if not outputs:
        raise RuntimeError(
            f"{api}: Expected f to be a function that has non-empty output (got output = [])"
        )
    return outputs


def real_only(api: str, what: str, tensors: list) -> None:
    """jacrev and jacfwd refuse complex inputs and outputs, as PyTorch does: a map
    between real and complex numbers has no complex-linear Jacobian to give (jacrev of
    a real→complex map would give zeros, jacfwd of a complex→real one only ∂/∂Re)."""
    for i, t in enumerate(tensors):
        if isinstance(t, Tensor) and t.is_complex():
            raise RuntimeError(
                f"{api}: Expected all {what} to be real but received complex tensor at "
                f"flattened input idx: {i}"
            )


# ---------------------------------------------------------------- the transforms
def grad_and_value(func: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """``func``'s gradient w.r.t. the arguments ``argnums`` names, and its value:
    ``(grad, value)``, or ``(grad, (value, aux))`` with ``has_aux``."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        api = "grad_and_value(f)(*args)"
        positions = argnum_positions(argnums, len(args))
        level = _Level()
        with _transform():
            args = level.watch_arguments(args, positions)
            output, aux = split_aux(func(*args, **kwargs), has_aux, api)
            _check_scalar_output(output, api)
            wrt = [args[p] for p in positions]
            flat = _gradients(level, [output], flattened(wrt), None)
            grads = shaped(flat, tuple(wrt) if isinstance(argnums, tuple) else wrt[0])
        value = (output, aux) if has_aux else output
        return level.release(grads), level.release(value)

    return wrapper


def grad(func: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """The gradient of the scalar function ``func`` w.r.t. the arguments ``argnums``
    names (``(grad, aux)`` with ``has_aux``)."""
    both = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        grads, value = both(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    return wrapper


def vjp(func: Callable, *primals, has_aux: bool = False):
    """``(func(*primals), vjp_fn)``, plus ``aux`` with ``has_aux``: ``vjp_fn(v)`` is
    vᵀ·J, one tensor per primal, for a ``v`` shaped like the output."""
    api = "vjp(f, *primals)"
    level = _Level()
    with _transform():
        watched = [level.watch(p) for p in primals]
        output, aux = split_aux(func(*watched), has_aux, api)
        outputs = only_tensors(output, api)

    def vjp_fn(cotangents):
        cotangents = flattened(cotangents)
        if len(cotangents) != len(outputs):
            raise RuntimeError(
                f"Expected pytree structure of cotangents to be the same as pytree structure "
                f"of outputs to the function: {len(cotangents)} cotangents for "
                f"{len(outputs)} outputs"
            )
        # (The shape check of autograd/entry_points.py's root_gradients, with torch.func's
        # messages for cotangents: PyTorch words the two differently.)
        for i, (c, o) in enumerate(zip(cotangents, outputs)):
            if not isinstance(c, Tensor):
                raise RuntimeError(f"vjp_fn: cotangent {i} must be a Tensor, got {type(c)}")
            if c.shape != o.shape:
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of {tuple(c.shape)} "
                    f"and output[{i}] has a shape of {tuple(o.shape)}."
                )
        level.records_outside = state.grad_mode.records  # the caller's grad mode now
        with _transform():
            flat = _gradients(level, outputs, flattened(watched), cotangents)
        return level.release(tuple(shaped(flat, watched)))

    value = level.release(output)
    return (value, vjp_fn, level.release(aux)) if has_aux else (value, vjp_fn)


def jacrev(
    func: Callable, argnums=0, *, has_aux: bool = False, chunk_size: int | None = None
) -> Callable:
    """The Jacobian of ``func`` w.r.t. the arguments ``argnums`` names, shaped
    ``output.shape + input.shape``: one forward pass, then one batched backward pass that
    pulls every one-hot cotangent (a row of the identity) back at once, ``vmap`` over
    the pullback as in torch.func (``chunk_size`` rows at a time when given).

    The output may be a pytree (a dict, tuple or list of tensors): the answer nests as
    torch.func's, outputs outside, arguments inside (``jac["y"][0]``); the basis then
    runs over all the outputs' elements together, split back per output.

    The loop, one backward pass per output element, is the general road: it is taken on
    a GPU (vmap runs on the CPU only), when the gradients must keep their history (an
    outer transform or the outer graph differentiates them again: ``jacrev(jacrev(f))``,
    a closed-over tensor that requires grad) or when an op on the backward path has no
    batching rule (see ``basis.py``)."""
    check_chunk_size(chunk_size, "jacrev")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        positions = argnum_positions(argnums, len(args))
        level = _Level()
        with _transform():
            args = level.watch_arguments(args, positions)
            output, aux = split_aux(func(*args, **kwargs), has_aux, "vjp(f, *primals)")
            outputs = only_tensors(output, "vjp(f, *primals)")
            wrt = flattened([args[p] for p in positions])
            real_only("jacrev", "inputs", wrt)
            real_only("jacrev", "outputs", outputs)
            arguments = tuple(args[p] for p in positions)
            like = arguments if isinstance(argnums, tuple) else arguments[0]
            per_output = [shaped(j, like) for j in _rows(level, outputs, wrt, chunk_size)]
            result = shaped(per_output, output)
        return level.release((result, aux)) if has_aux else level.release(result)

    return wrapper


def _rows(level: _Level, outputs: list, inputs: list, chunk_size: int | None) -> list:
    """The Jacobian of each of ``outputs`` w.r.t. each of ``inputs`` (a list per output):
    one batched backward pass where it can be taken, else one backward pass per row
    (``_looped_rows``). A scalar output (one row: a gradient, the inside of ``hessian``)
    is one backward pass either way; it runs without a vmap, whose batching rules would
    only wrap every op of it once more."""
    on_cpu = all(t.device.type == "cpu" for t in (*outputs, *inputs))  # vmap's only device
    basis = one_hots(outputs)
    if basis[0].shape[0] > 1 and on_cpu and not level.reaches_outside(outputs):
        try:
            rows = _batched_rows(level, outputs, inputs, basis, chunk_size)
        except RuntimeError as error:
            if not batching_refused(error):
                raise
        else:
            return _per_output(rows, outputs, inputs)
    return _looped_rows(level, outputs, inputs, basis)


def _batched_rows(level: _Level, outputs: list, inputs: list, basis: list, chunk_size):
    """Every row vᵀ·J at once: the backward pass run by the batching rules on the basis
    of one-hot cotangents (one per output element, stacked along a batch dim)."""

    def pull_back(*cotangents: Tensor) -> tuple:
        return tuple(_gradients(level, outputs, inputs, list(cotangents)))

    return through_vmap(pull_back, basis, 0, chunk_size)


def _per_output(rows: list, outputs: list, inputs: list) -> list:
    """``rows`` (per input: one row per element of all the outputs together) cut into
    each output's Jacobians, shaped ``output.shape + input.shape``."""
    jacobians, start = [], 0
    for o in outputs:
        count = o.numel()
        shapes = [(*o.shape, *x.shape) for x in inputs]
        jacobians.append([_cut(r, start, count, shape) for r, shape in zip(rows, shapes)])
        start += count
    return jacobians


def _cut(rows: Tensor, start: int, count: int, shape: tuple) -> Tensor:
    """Rows ``start`` to ``start + count`` of ``rows``, shaped ``shape``: no slice when
    they are all of them (one output), no reshape when they have that shape already (a
    vector's Jacobian by a vector), so the common case costs no op."""
    if rows.shape[0] != count:
        rows = rows[start : start + count]
    return rows if tuple(rows.shape) == shape else rows.reshape(shape)


def _looped_rows(level: _Level, outputs: list, inputs: list, basis: list) -> list:
    """One backward pass per row of the basis (a one-hot cotangent each), stacked."""
    count = basis[0].shape[0]
    flat_rows: list[list] = [[] for _ in inputs]
    for i in range(count):
        cotangents = [block[i] for block in basis]
        for rows, g in zip(flat_rows, _gradients(level, outputs, inputs, cotangents)):
            rows.append(g)
    if count == 0:
        return [[zeros_like(x).reshape(*o.shape, *x.shape) for x in inputs] for o in outputs]
    return _per_output([ops.stack(rows) for rows in flat_rows], outputs, inputs)
