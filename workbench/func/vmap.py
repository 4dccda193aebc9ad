"""``vmap``: a function of one example, run on a whole batch at once.

``vmap(f)(xs)`` calls ``f`` once, on batched tensors (``batched.py``) that look like one
example each; every op inside runs its batching rule (``batching.py``) on the whole
batch. There is no loop over the examples anywhere: an op without a rule stops vmap
with an error naming it.

Gradients flow inside vmap (``vmap(grad(loss))``) and through it (``grad(vmap(f))``,
``backward()`` through its outputs), as torch.func's levels let them: a batched tensor
has two histories. Its own, on the vmap's tape, is for the grad transforms opened inside
the vmap; the history of the batch behind it (the physical tensor), on the tape of the
levels outside, is for those opened outside it and for the ordinary tape. A batching
rule runs its ops on the batches, so they record on the outer tape by themselves; the
batched call gets its node on the vmap's tape (``batching.py``); an in-place op writes
into the batch in place, on its tape too (``batched.py``); a custom Function gets a
Function made for the batch (``batching.batched_function``).

Tangents flow both ways: ``vmap(jvp(f))`` pushes batched tangents through the batching
rules, and ``jvp(vmap(f))`` batches the tangent of each input with it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from ..core import state
from ..core.tensor import Tensor
from ..record import forward_ad
from ..record.graph import AccumulateGrad, edge_of, walk
from . import batched as B
from .batching import run, with_batch


def vmap(
    func: Callable, in_dims=0, out_dims=0, randomness: str = "error", *, chunk_size=None
) -> Callable:
    """``func`` mapped over dim ``in_dims`` of its inputs (an int for all, or a tuple
    with one entry per argument, None for an argument that is not batched, nested as
    the arguments are); the outputs carry the batch dim at ``out_dims``.

    ``randomness``, as PyTorch's: ``"error"`` refuses a random function inside,
    ``"different"`` draws one sample per example, ``"same"`` one for the whole batch."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(
            "Only allowed values for randomness are 'error', 'different', or 'same'. "
            f"Got {randomness}"
        )
    if chunk_size is not None:
        raise ValueError("vmap: chunk_size is not supported: the whole batch runs at once")

    @functools.wraps(func)
    def batched_func(*args, **kwargs):
        name = getattr(func, "__name__", repr(func))
        dims = _in_dims(in_dims, args, name)
        size = _batch_size(args, dims, name)
        with state.vmap_level(size, randomness) as level:
            inputs = _map(lambda x, d: x if d is None else _batched(x, d, level), args, dims)
            outputs = func(*inputs, **kwargs)
        return _released(_unbatched_outputs(outputs, out_dims, level, size, name), level)

    return batched_func


# ---------------------------------------------------------------- inputs
def _in_dims(in_dims, args: tuple, name: str) -> tuple:
    """One in_dim per argument (nested as the arguments are), with PyTorch's errors."""
    if isinstance(in_dims, int) and not isinstance(in_dims, bool):
        return tuple(_spread(in_dims, a) for a in args)
    if not isinstance(in_dims, tuple):
        raise ValueError(
            f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int "
            "or a (potentially nested) tuple matching the structure of inputs, got: "
            f"{type(in_dims)}."
        )
    if len(in_dims) != len(args):
        raise ValueError(
            f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with "
            f"the structure of `inputs`: in_dims has {len(in_dims)} entries but there are "
            f"{len(args)} inputs."
        )
    return tuple(_spread(d, a) for d, a in zip(in_dims, args))


def _spread(dim, arg):
    """``dim`` for every tensor in ``arg`` (a tensor, or a tuple/list/dict of them)."""
    return _over_structure(dim, arg, lambda _, leaf_dim: leaf_dim, _in_dims_mismatch)


def _in_dims_mismatch(dims, arg) -> str:
    entries = f"with the keys {list(arg)}" if isinstance(arg, dict) else f"of {len(arg)} entries"
    return f"vmap: in_dims {dims} is not compatible with the structure of an input {entries}."


def _over_structure(dims, values, leaf: Callable, mismatch: Callable):
    """``leaf(value, dim)`` for every leaf of ``values`` (nested tuples, lists and dicts),
    each with its own dim: a tuple/list (or dict) of dims goes entry by entry (key by key)
    over a tuple/list (dict) of values, any other dim stands for every entry below it.

    One walk for in_dims over the inputs and out_dims over the outputs, as PyTorch pairs
    both; ``mismatch(dims, values)`` is the message of the ValueError for a container of
    dims that does not fit its values (PyTorch words it differently for each)."""
    if isinstance(values, (tuple, list)):
        if not isinstance(dims, (tuple, list)):
            return type(values)(_over_structure(dims, v, leaf, mismatch) for v in values)
        if len(dims) != len(values):
            raise ValueError(mismatch(dims, values))
        return type(values)(_over_structure(d, v, leaf, mismatch) for d, v in zip(dims, values))
    if isinstance(values, dict):
        per_key = dims if isinstance(dims, dict) else dict.fromkeys(values, dims)
        if per_key.keys() != values.keys():
            raise ValueError(mismatch(dims, values))
        return {key: _over_structure(per_key[key], v, leaf, mismatch) for key, v in values.items()}
    return leaf(values, dims)


def _map(function, args, dims):
    """``function(x, dim)`` over every leaf of ``args`` (nested tuples, lists and dicts)."""
    if isinstance(args, (tuple, list)):
        return type(args)(_map(function, a, d) for a, d in zip(args, dims))
    if isinstance(args, dict):
        return {key: _map(function, a, dims[key]) for key, a in args.items()}
    return function(args, dims)


def _leaves(args, dims) -> list:
    if isinstance(args, (tuple, list)):
        return [pair for a, d in zip(args, dims) for pair in _leaves(a, d)]
    if isinstance(args, dict):
        return [pair for key, a in args.items() for pair in _leaves(a, dims[key])]
    return [(args, dims)]


def _batch_size(args: tuple, dims: tuple, name: str) -> int:
    sizes = []
    for x, d in _leaves(args, dims):
        if d is None:
            continue
        if not isinstance(d, int):
            raise ValueError(
                f"vmap({name}, ...)(<inputs>): in_dims must be ints or None, got {d!r}."
            )
        if not isinstance(x, Tensor):
            raise ValueError(
                f"vmap({name}, in_dims=..., ...)(<inputs>): Got in_dim={d} for an input but "
                f"the input is of type {type(x)}. We cannot vmap over non-Tensor arguments, "
                "please use None as the respective in_dim"
            )
        if not -x.ndim <= d < x.ndim:
            raise ValueError(
                f"vmap({name}, in_dims=..., ...)(<inputs>): Got in_dim={d} for some input, "
                f"but that input is a Tensor of dimensionality {x.ndim} so expected in_dim to "
                f"satisfy {-x.ndim} <= in_dim < {x.ndim}."
            )
        if x.device.type != "cpu":
            raise RuntimeError(
                f"vmap({name}, ...)(<inputs>): an input is on {x.device}; vmap runs on the "
                "CPU only (a batched tensor's stand-in is a numpy array): move the inputs "
                "with .cpu() first"
            )
        sizes.append(x.shape[d])
    if not sizes:
        raise ValueError(
            f"vmap({name}, in_dims=..., ...)(<inputs>): at least one input must be a Tensor "
            "mapped over a dimension (in_dims all None)."
        )
    if len(set(sizes)) > 1:
        raise ValueError(
            "vmap: Expected all tensors to have the same size in the mapped dimension, got "
            f"sizes {sizes} for the mapped dimension"
        )
    return sizes[0]


def _batched(x: Tensor, dim: int, level: int) -> Tensor:
    """``x`` as a batched tensor at ``level``, its dim ``dim`` the batch."""
    dim %= x.ndim
    if dim:
        order = (dim, *(d for d in range(x.ndim) if d != dim))
        x = run("permute", [x], {"dims": order})
    return _wrapped(x, level)


def _wrapped(x: Tensor, level: int) -> Tensor:
    """``x``'s first dim as the batch of a tensor at ``level``; the tangents ``x`` carries
    (``jvp(vmap(f))``: the dual levels are outside this vmap) are batched with it."""
    batched = B.wrap(x, level)
    forward_ad.carry_tangents(x, batched, lambda tangent: _wrapped(tangent, level))
    return batched


# ---------------------------------------------------------------- outputs
def physical_with_tangents(out: Tensor, level: int, size: int) -> Tensor:
    """The batch behind ``out``, with the batches of its tangents; an ``out`` that is not
    batched at ``level`` (it does not depend on the batch) repeated along a new first dim,
    as PyTorch does (``with_batch`` is an op: it carries the tangents itself)."""
    if B.level_of(out) != level:
        return with_batch(out, size)
    full = B.physical(out)
    forward_ad.carry_tangents(
        out, full, lambda tangent: physical_with_tangents(tangent, level, size)
    )
    return full


def _released(outputs, level: int):
    """The outputs, each without its history where it reaches no tensor from outside the
    vmap: a grad transform opened inside watched a tensor the vmap was given unbatched
    (its leaf is then an input of the rules' ops), and outside the vmap that leaf is no
    tensor at all, as in torch.func (tangents kept either way)."""
    if isinstance(outputs, (tuple, list)):
        return type(outputs)(_released(o, level) for o in outputs)
    if isinstance(outputs, dict):
        return {key: _released(o, level) for key, o in outputs.items()}
    if not isinstance(outputs, Tensor):
        return outputs
    if outputs.requires_grad and not _reaches_outside(outputs, level):
        plain = Tensor._make(outputs._data)
        forward_ad.carry_tangents(outputs, plain, lambda tangent: _released(tangent, level))
        return plain
    return outputs


def _reaches_outside(out: Tensor, level: int) -> bool:
    leaves = (n.variable for n in walk([edge_of(out)[0]]) if isinstance(n, AccumulateGrad))
    return any(getattr(leaf, "_tape_level", 0) < level for leaf in leaves)


def _unbatched_outputs(outputs, out_dims, level: int, size: int, name: str):
    """Each output tensor's batch, its batch dim where out_dims puts it."""
    unbatched = functools.partial(_unbatched_output, level=level, size=size, name=name)
    mismatch = functools.partial(_out_dims_mismatch, name)
    return _over_structure(out_dims, outputs, unbatched, mismatch)


def _out_dims_mismatch(name: str, out_dims, outputs) -> str:
    if isinstance(outputs, dict):
        what = f"keys {list(out_dims)} for the outputs {list(outputs)}"
    else:
        what = f"{len(out_dims)} out_dims for {len(outputs)} outputs"
    return (
        f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with "
        f"the structure of `outputs`: {what}."
    )


def _unbatched_output(out, out_dim, level: int, size: int, name: str) -> Tensor:
    if not isinstance(out, Tensor):
        raise ValueError(
            f"vmap({name}, ...): `{name}` must only return Tensors, got type "
            f"{type(out)}. Did you mean to set out_dims= to None for output?"
        )
    return _unbatched(out, out_dim, level, size, name)


def _unbatched(out: Tensor, out_dim, level: int, size: int, name: str) -> Tensor:
    """The batch behind ``out`` with its batch dim at ``out_dim`` (an output that does not
    depend on the batch is repeated along it, as PyTorch does)."""
    is_batched = B.level_of(out) == level
    if out_dim is None:
        if is_batched:
            raise ValueError(
                f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None"
            )
        return out
    full = physical_with_tangents(out, level, size)
    ndim = full.ndim
    if not -ndim <= out_dim < ndim:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but "
            f"got {out_dim})"
        )
    out_dim %= ndim
    if out_dim == 0:
        return full
    order = list(range(1, ndim))
    order.insert(out_dim, 0)
    return run("permute", [full], {"dims": tuple(order)})
