"""Batching rules: how each registry op runs on a whole batch at once under vmap.

:func:`batched_call` is what ``apply_op`` hands a call to while a vmap is active. It
takes the innermost vmap level among the inputs, swaps each batched input for its
physical tensor (batch dimension first), and runs the op's rule. A rule gets a
:class:`Call` and returns the physical result, batch dimension first; it does its work
with ops on the physical tensors, so under nested vmaps those ops are batched again at
the outer level. Then ``batched_call`` wraps the result back and records the autograd
node and the tangent as ``apply_op`` would: ``vmap(grad(loss))`` differentiates through
the rules, ``vmap(jvp(f))`` pushes tangents through them.

Two tapes see each call, as torch.func's levels do. The rule's ops on the batches are
ordinary ops: they record on the tape of the levels *outside* the vmap (``grad(vmap(f))``,
an ordinary backward) whenever a batch is on it. The batched call's node is on the tape of
the grad transforms opened *inside* the vmap: it has edges only to the inputs batched at
this vmap and to those a transform opened inside it watches (``tape_level``); a tensor
from outside (a parameter closed over) is seen by the outer tape alone, through the rule.

Most rules are a few kinds:

* elementwise (``exp``, ``add``, ``where``...): line the batched inputs up by giving
  them the missing dims after the batch dim; numpy's broadcasting does the rest;
* dim arguments (``sum``, ``softmax``, ``permute``...): shift every dim by one, the
  batch dim being dim 0; shapes (``reshape``, ``expand``) gain the batch size in front;
* explicit rules for ``matmul``, ``linear``, ``addmm``, the losses and the pools.

An op in :data:`REFUSED` stops vmap with an error that names it and says why; an op in
neither table has no rule yet, and stops it too (tests/test_func.py fails while any
registry op is in neither).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core import state
from ..core.tensor import Tensor
from ..ops.registry import OPS
from ..record import forward_ad
from ..record.dispatch import apply_op, link_view, records_node
from ..record.graph import AccumulateGrad, OpNode, TensorMeta
from . import batched as B


@dataclass
class Call:
    """One op call under vmap, with the batched inputs swapped for their physical tensors."""

    op: object
    args: list  # physical tensors (batch first) where ``batched``; the rest as given
    batched: list  # bool per argument
    attrs: dict
    size: int  # the batch size

    def logical_ndim(self, i: int) -> int:
        x = self.args[i]
        if not isinstance(x, Tensor):
            return 0
        return x.ndim - 1 if self.batched[i] else x.ndim


def batched_call(op, inputs: tuple, attrs: dict | None):
    """``op`` run by its batching rule when an input is batched; None when none is."""
    if attrs and any(B.read_from_batch(v) for v in _attr_values(attrs)):
        raise RuntimeError(
            "vmap: an argument computed from a batched tensor's values (an index or a mask "
            f"that differs from example to example) has no batching rule; batching is not "
            f"supported for {op.name}"
        )
    level = max(B.level_of(x) for x in inputs)
    if level == 0:
        return None
    rule = RULES.get(op.name)
    if rule is None:
        why = REFUSED.get(op.name, "it has no batching rule yet")
        raise RuntimeError(f"vmap: {why}; batching is not supported for {op.name}")
    for x in inputs:
        if isinstance(x, Tensor) and x._view_of is not None and not x._requires_grad:
            x._refresh_view()  # a view whose base may have gained a history (as apply_op)
    flags = [B.level_of(x) == level for x in inputs]
    on_tape = [flag or _inside(x, level) for x, flag in zip(inputs, flags)]
    args = [_outer_part(x, flag) for x, flag in zip(inputs, flags)]
    size = next(a.shape[0] for a, flag in zip(args, flags) if flag)
    out = rule(Call(op, args, flags, dict(attrs or {}), size))
    result = B.wrap(out, level)
    node = _record(op, inputs, attrs, result, on_tape)
    if op.view:  # an in-place op through it changes its base, as apply_op links them
        link_view(result, op, inputs, attrs, state.grad_mode.records)
    if forward_ad.LEVELS:  # inside a dual level: the tangent, as apply_op gives it
        forward_ad.push_tangent(op, inputs, attrs, result, node)
    return result


def _outer_part(x, batched: bool):
    """What the rule gets for the input ``x``: the batch behind it (its history on the
    tape of the levels outside the vmap), or ``x`` itself when it is not batched here."""
    return B.physical(x) if batched else _shape_only(x)


def _inside(x, level: int) -> bool:
    """Whether ``x`` is on the tape of a grad transform opened inside vmap ``level``."""
    return isinstance(x, Tensor) and x.requires_grad and tape_level(x) >= level


def opened_here(x: Tensor) -> Tensor:
    """``x``, a grad transform's fresh spot of the tape (a leaf or a clone), marked as on
    the tape of the vmaps running now: an op under one of them records it on that
    vmap's own tape, never through the batch's physical ops."""
    depth = len(state.transforms.levels)
    if depth:
        if x._grad_fn is None:
            x._tape_level = depth
        else:
            x._grad_fn.__dict__["tape_level"] = depth
    return x


def tape_level(x: Tensor) -> int:
    """The vmap level of the innermost grad transform whose tape ``x`` is on (0: the
    ordinary tape, or transforms opened outside every vmap); read from its history, the
    answer kept on each node it passed."""
    node = x._grad_fn
    if node is None:
        return getattr(x, "_tape_level", 0)
    return _node_level(node)


def _node_level(node) -> int:
    """The tape level of ``node``: the largest of the nodes below it, each worked out
    once and kept (children first, on an explicit stack: a long history is no deep
    recursion)."""
    stack = [node]
    while stack:
        top = stack[-1]
        if "tape_level" in top.__dict__:
            stack.pop()
            continue
        if isinstance(top, AccumulateGrad):
            top.__dict__["tape_level"] = getattr(top.variable, "_tape_level", 0)
            continue
        children = [child for child, _ in top.next_functions if child is not None]
        unknown = [child for child in children if "tape_level" not in child.__dict__]
        if unknown:
            stack.extend(unknown)
            continue
        top.__dict__["tape_level"] = max((c.__dict__["tape_level"] for c in children), default=0)
    return node.__dict__["tape_level"]


def _shape_only(x):
    """An input a backward op reads only the shape of (a :class:`TensorMeta`: the forward
    op did not save it) as zeros of that shape, broadcast from one number, so that a rule
    can expand and reshape it along with the batch; anything else as it is."""
    if isinstance(x, TensorMeta):
        return Tensor._make(np.broadcast_to(np.zeros((), x.dtype), x.shape))
    return x


def _attr_values(attrs: dict):
    for value in attrs.values():
        if isinstance(value, (tuple, list)):
            yield from value
        else:
            yield value


def _record(op, inputs: tuple, attrs, result: Tensor, on_tape: list):
    """The autograd node of the batched call (None if none), with an edge to each input
    batched at this level (``on_tape``). The levels outside the vmap see every input
    through the physical ops of the rule; an input not batched here belongs to them, so
    it gets no edge on this level's tape (see ``vmap.py``)."""
    needs_grad = any(flag and x.requires_grad for x, flag in zip(inputs, on_tape))
    if needs_grad and state.grad_mode.records and records_node(op, result):  # (not int, bool)
        return mark_seen_outside(OpNode(op, inputs, attrs, result, tuple(on_tape)), inputs, on_tape)
    return None


def mark_seen_outside(node, inputs, on_tape: list):
    """``node``, marked ``seen_outside`` when the levels outside the vmap see its call
    through the rule: an input on their tape has no edge here (a tensor closed over that
    requires grad), or a batch behind an input is on their tape. A grad transform opened
    inside the vmap reads the mark (``reverse._Level.differentiated_outside``): its
    backward pass must then be recorded for them, which its own tape cannot tell."""
    if any(_seen_by_outer_tape(x, edge) for x, edge in zip(inputs, on_tape)):
        node.seen_outside = True
    return node


def _seen_by_outer_tape(x, edge: bool) -> bool:
    if not isinstance(x, Tensor):
        return False
    if x.requires_grad and not edge:
        return True
    return type(x._data) is B.BatchedArray and x._data.on_outer_tape


# ------------------------------------------------------------------ helpers
def run(name: str, args, attrs: dict | None = None) -> Tensor:
    """Op ``name`` on physical tensors: an ordinary call (batched again if nested)."""
    return apply_op(OPS[name], tuple(args), attrs or None)


def with_batch(x: Tensor, size: int) -> Tensor:
    """An unbatched ``x`` repeated along a new first dim (a broadcast view, no copy)."""
    return run("expand", [x], {"shape": (size, *x.shape)})


def padded(x: Tensor, ndim: int) -> Tensor:
    """A physical ``x`` with size-1 dims after the batch dim up to ``ndim`` logical dims,
    so that it broadcasts against the other inputs as its examples would."""
    missing = ndim - (x.ndim - 1)
    if missing <= 0:
        return x
    shape = (x.shape[0],) + (1,) * missing + tuple(x.shape[1:])
    return standing_for(x, run("reshape", [x], {"shape": shape}), lambda t: padded(t, ndim))


def standing_for(x: Tensor, out: Tensor, same_change) -> Tensor:
    """``out``, a reshape or an expand of the input ``x`` that a rule makes, stands for
    ``x`` itself (torch's rules broadcast without one): it keeps every tangent ``x`` holds
    (``same_change`` of it), also at the dual levels out of use while a custom Function's
    jvp runs (forward mode off, as PyTorch's), whose ops may save ``out``."""
    for level, tangent in (x._forward_grad or {}).items():
        if forward_ad.tangent_of(out, level) is None:
            forward_ad.make_tangent(out, same_change(tangent), level)
    return out


def aligned(call: Call) -> list:
    """The arguments with every batched tensor padded to the largest logical ndim. When
    one is on the tape (of the levels outside the vmap), all are expanded to the shape
    they broadcast to: an op whose backward does not sum over broadcast dims
    (``tanh_backward``: its inputs have one shape outside vmap) then records the
    broadcast as an ``expand``, whose backward does."""
    ndim = max(call.logical_ndim(i) for i in range(len(call.args)))
    args = [padded(x, ndim) if flag else x for x, flag in zip(call.args, call.batched)]
    tensors = [x for x in args if isinstance(x, Tensor)]
    if not any(x.requires_grad for x in tensors) or not state.grad_mode.records:
        return args
    try:
        shape = np.broadcast_shapes(*(tuple(x.shape) for x in tensors))
    except ValueError:
        return args  # the op raises its own error, naming the shapes
    return [_expanded(x, shape) if isinstance(x, Tensor) else x for x in args]


def _expanded(x: Tensor, shape: tuple) -> Tensor:
    if tuple(x.shape) == shape:
        return x
    expanded = run("expand", [x], {"shape": shape})
    return standing_for(x, expanded, lambda t: _expanded(t, shape))


def all_batched(call: Call) -> list:
    """The tensor arguments, each with the batch dim (unbatched ones broadcast along it)."""
    return [
        with_batch(x, call.size) if isinstance(x, Tensor) and not flag else x
        for x, flag in zip(call.args, call.batched)
    ]


def shifted(dims):
    """Logical dims (non-negative, as the ops' wrappers hand them) as physical dims."""
    if isinstance(dims, int):
        return dims + 1
    return tuple(d + 1 for d in dims)


def merged(x: Tensor) -> Tensor:
    """A physical (B, N, ...) as (B·N, ...): an op that already loops over a leading
    batch (pools, convolutions, losses) then runs on every example's batch at once."""
    return run("reshape", [x], {"shape": (x.shape[0] * x.shape[1], *x.shape[2:])})


def split(x: Tensor, size: int) -> Tensor:
    return run("reshape", [x], {"shape": (size, x.shape[0] // size, *x.shape[1:])})


# ------------------------------------------------------------------ the rule kinds
def elementwise(call: Call) -> Tensor:
    return apply_op(call.op, tuple(aligned(call)), call.attrs or None)


def reduction(call: Call) -> Tensor:
    """``dims`` (a tuple, or None for all) and ``keepdim``: shift, keeping dim 0."""
    attrs = dict(call.attrs)
    (x,) = call.args
    dims = attrs["dims"]
    attrs["dims"] = tuple(range(1, x.ndim)) if dims is None else shifted(dims)
    return apply_op(call.op, (x,), attrs)


def along_dim(call: Call) -> Tensor:
    """Ops with one ``dim`` (softmax, cumsum, argmax...), inputs lined up first."""
    attrs = dict(call.attrs)
    if attrs.get("dim") is None:
        if call.op.name in ("argmax", "argmin"):  # over everything: flatten each example
            (x,) = call.args
            flat = run("reshape", [x], {"shape": (x.shape[0], -1)})
            return apply_op(call.op, (flat,), {**attrs, "dim": 1, "keepdim": False})
        raise RuntimeError(f"vmap: {call.op.name} over all dims has no batching rule")
    attrs["dim"] = shifted(attrs["dim"])
    if call.op.name in ("gather", "gather_backward"):
        args = all_batched(call)
    else:  # the shifted dim must name the same axis in every input: all get a batch dim
        ndim = max(call.logical_ndim(i) for i in range(len(call.args)))
        args = [padded(x if flag else unit_batch(x), ndim) for x, flag in _tensors(call)]
        args += call.args[len(args) :]
    return apply_op(call.op, tuple(args), attrs)


def _tensors(call: Call) -> list:
    """The leading tensor arguments with their batched flags."""
    pairs = []
    for x, flag in zip(call.args, call.batched):
        if not isinstance(x, Tensor):
            break
        pairs.append((x, flag))
    return pairs


def unit_batch(x: Tensor) -> Tensor:
    """An unbatched ``x`` with a size-1 batch dim in front (it broadcasts along the batch;
    a dim argument shifted by one then names the same axis in it as in the batched ones)."""
    return run("reshape", [x], {"shape": (1, *x.shape)})


def with_attr(name: str, change):
    """A rule that rewrites one attribute of a one-input op (``change(value, call)``)."""

    def rule(call: Call) -> Tensor:
        attrs = dict(call.attrs)
        attrs[name] = change(attrs[name], call)
        return apply_op(call.op, tuple(call.args), attrs)

    return rule


def _batch_shape(shape, call: Call) -> tuple:
    return (call.size, *shape)


def _batch_perm(dims, call: Call) -> tuple:
    return (0, *shifted(dims))


def roll(call: Call) -> Tensor:
    """Shift dims by one; a roll of the flattened tensor rolls each flattened example."""
    (x,) = call.args
    dims = call.attrs["dims"]
    if dims is not None:
        return apply_op(call.op, (x,), {**call.attrs, "dims": shifted(dims)})
    flat = run("reshape", [x], {"shape": (call.size, -1)})
    rolled = apply_op(call.op, (flat,), {**call.attrs, "dims": (1,)})
    return run("reshape", [rolled], {"shape": tuple(x.shape)})


def elementwise_loss(call: Call) -> Tensor:
    """mse_loss and the binary cross-entropies: the per-element losses of every example
    (reduction='none' is elementwise), then each example's own sum or mean."""
    losses = apply_op(call.op, tuple(aligned(call)), {**call.attrs, "reduction": "none"})
    reduction = call.attrs["reduction"]
    if reduction == "none":
        return losses
    name = "mean" if reduction == "mean" else "sum"
    return run(name, [losses], {"dims": tuple(range(1, losses.ndim)), "keepdim": False})


def _batch_key(key, call: Call):
    """An index key for the physical array: a full slice over the batch dim first. Two
    array indices with a slice between them would move their dims to the front, in
    front of the batch dim: that case is refused."""
    key = key if isinstance(key, tuple) else (key,)
    arrays = [i for i, k in enumerate(key) if hasattr(k, "shape") or isinstance(k, list)]
    if arrays and arrays[-1] - arrays[0] + 1 != len(arrays):
        raise RuntimeError(
            "vmap: array indices separated by a slice have no batching rule; batching "
            f"is not supported for {call.op.name} with such a key"
        )
    return (slice(None), *key)


def index_put(call: Call) -> Tensor:
    """``x[key] = values`` in every example: the key gains a full slice over the batch
    dim; batched values are lined up with the region they fill (unbatched ones
    broadcast), an unbatched ``x`` is repeated along the batch first."""
    x, values = call.args
    key = call.attrs["key"]
    if not call.batched[0]:
        x = with_batch(x, call.size)
    if call.batched[1]:
        region = np.broadcast_to(np.empty((), np.int8), tuple(x.shape[1:]))[key]
        values = padded(values, region.ndim)
    return apply_op(call.op, (x, values), {**call.attrs, "key": _batch_key(key, call)})


def expand(call: Call) -> Tensor:
    (x,) = call.args
    shape = call.attrs["shape"]
    return run("expand", [padded(x, len(shape))], {"shape": (call.size, *shape)})


def collapse_sum_like(call: Call) -> Tensor:
    (grad,) = call.args
    shape = tuple(call.attrs["shape"])
    extra = (grad.ndim - 1) - len(shape)
    if extra > 0:
        grad = run("sum", [grad], {"dims": tuple(range(1, 1 + extra)), "keepdim": False})
    return run("collapse_sum_like", [grad], {"shape": (call.size, *shape)})


def getitem_backward(call: Call) -> Tensor:
    (grad,) = call.args
    key = _batch_key(call.attrs["key"], call)
    return run("getitem_backward", [grad], {"shape": (call.size, *call.attrs["shape"]), "key": key})


def joined(call: Call) -> Tensor:
    """cat and stack: every tensor gets the batch dim; the dim shifts by one."""
    attrs = {**call.attrs, "dim": shifted(call.attrs["dim"])}
    return apply_op(call.op, tuple(all_batched(call)), attrs)


def pad(call: Call) -> Tensor:
    attrs = {**call.attrs, "widths": ((0, 0), *call.attrs["widths"])}
    return apply_op(call.op, tuple(call.args), attrs)


def repeat(call: Call) -> Tensor:
    (x,) = call.args
    repeats = tuple(call.attrs["repeats"])
    return run("repeat", [padded(x, len(repeats))], {"repeats": (1, *repeats)})


def take(call: Call) -> Tensor:
    x, indices = call.args
    if call.batched[1]:
        raise RuntimeError(
            "vmap: batched indices have no batching rule; batching is not supported for take"
        )
    axis = call.attrs.get("axis")
    if axis is None:
        x, axis = run("reshape", [x], {"shape": (x.shape[0], -1)}), 0
    return apply_op(call.op, (x, indices), {**call.attrs, "axis": axis + 1})


def embedding(call: Call) -> Tensor:
    if call.batched[0]:
        raise RuntimeError(
            "vmap: a batched weight has no batching rule; batching is not supported for embedding"
        )
    return apply_op(call.op, tuple(call.args), call.attrs or None)


def _unsqueezed(x: Tensor, dim: int) -> Tensor:
    shape = list(x.shape)
    shape.insert(dim, 1)
    return run("reshape", [x], {"shape": tuple(shape)})


def _squeezed(x: Tensor, dim: int) -> Tensor:
    shape = list(x.shape)
    del shape[dim]
    return run("reshape", [x], {"shape": tuple(shape)})


def batched_matmul(a: Tensor, a_batched: bool, b: Tensor, b_batched: bool) -> Tensor:
    """matmul with either side batched. A batched vector becomes a matrix (a row for
    ``a``, a column for ``b``) so that numpy cannot take the batch dim for a matrix dim;
    the batched sides get as many dims as the other, numpy's batched matmul does the
    rest, and the dims put in are taken out again."""
    a_ndim = a.ndim - 1 if a_batched else a.ndim
    b_ndim = b.ndim - 1 if b_batched else b.ndim
    if a_batched and a_ndim == 1 and not b_batched and b_ndim == 2:
        return run("matmul", [a, b])  # the batch of row vectors is a matrix: (B, n) @ (n, m)
    row = a_batched and a_ndim == 1 and (b_batched or b_ndim >= 2)
    column = b_batched and b_ndim == 1
    if row:
        a, a_ndim = _unsqueezed(a, 1), 2
    if column:
        b, b_ndim = _unsqueezed(b, 2), 2
    ndim = max(a_ndim, b_ndim)
    out = run("matmul", [padded(a, ndim) if a_batched else a, padded(b, ndim) if b_batched else b])
    if column:
        out = _squeezed(out, out.ndim - 1)
    if row:
        out = _squeezed(out, out.ndim - (1 if column else 2))
    return out


def matmul(call: Call) -> Tensor:
    a, b = call.args
    return batched_matmul(a, call.batched[0], b, call.batched[1])


def _add(x: Tensor, x_batched: bool, y, y_batched: bool) -> Tensor:
    call = Call(OPS["add"], [x, y], [x_batched, y_batched], {}, 0)
    return elementwise(call)


def _transposed(w: Tensor, w_batched: bool) -> Tensor:
    perm = list(range(w.ndim))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    if not w_batched and w.ndim == 1:
        return w
    return run("transpose", [w], {"dims": tuple(perm)})


def linear(call: Call) -> Tensor:
    """x·Wᵀ + b: the op itself when only x is batched; matmul's and add's rules otherwise."""
    x, weight, bias = call.args
    xb, wb_, bb = call.batched
    if not wb_ and not bb:
        return apply_op(call.op, (x, weight, bias), call.attrs or None)
    out = batched_matmul(x, xb, _transposed(weight, wb_), wb_)
    return out if bias is None else _add(out, xb or wb_, bias, bb)


def addmm(call: Call) -> Tensor:
    """input + mat1 @ mat2, by matmul's and add's rules."""
    bias, mat1, mat2 = call.args
    fb, f1, f2 = call.batched
    product = batched_matmul(mat1, f1, mat2, f2)
    return _add(product, f1 or f2, bias, fb) if (f1 or f2) else _add(bias, fb, product, False)


def layer_norm(call: Call) -> Tensor:
    if call.batched[1] or call.batched[2]:
        raise RuntimeError(
            "vmap: a batched weight or bias has no batching rule; batching "
            "is not supported for layer_norm"
        )
    attrs = {**call.attrs, "dims": shifted(call.attrs["dims"])}
    return apply_op(call.op, tuple(call.args), attrs)


def over_examples(call: Call) -> Tensor:
    """Pools and their backward ops: they loop over a leading N already; with 4-D
    examples the batch is folded into N, with 3-D examples it becomes N."""
    args = all_batched(call)
    first = args[0]
    if first.ndim - 1 == 3:
        return apply_op(call.op, tuple(args), call.attrs or None)
    out = apply_op(call.op, tuple(merged(a) for a in args), call.attrs or None)
    return split(out, call.size)


def conv2d(call: Call) -> Tensor:
    x, weight, bias = call.args
    if call.batched[1] or call.batched[2]:
        raise RuntimeError(
            "vmap: a batched weight or bias has no batching rule; batching "
            "is not supported for conv2d"
        )
    if x.ndim - 1 == 3:
        return apply_op(call.op, (x, weight, bias), call.attrs)
    return split(apply_op(call.op, (merged(x), weight, bias), call.attrs), call.size)


def conv2d_input_grad(call: Call) -> Tensor:
    grad, weight = call.args
    if call.batched[1]:
        raise RuntimeError(
            "vmap: a batched weight has no batching rule; batching is not "
            "supported for conv2d_input_grad"
        )
    shape = tuple(call.attrs["input_shape"])
    if len(shape) == 3:
        attrs = {**call.attrs, "input_shape": (call.size, *shape)}
        return apply_op(call.op, (grad, weight), attrs)
    attrs = {**call.attrs, "input_shape": (call.size * shape[0], *shape[1:])}
    return split(apply_op(call.op, (merged(grad), weight), attrs), call.size)


class _Shape:
    """The shape and dtype of predictions the rule did not keep (nll_loss_backward
    reads only those), merged over the batch as the predictions would be."""

    def __init__(self, shape: tuple, dtype) -> None:
        self.shape, self.dtype = shape, dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)


def _nll_merged(call: Call):
    """Predictions and targets of every example as one (B·N, C) and (B·N,) batch;
    N = 1 for examples of one sample each."""
    predictions, targets, weights = call.args[:3]
    if call.batched[2]:
        raise RuntimeError(
            "vmap: batched class weights have no batching rule; batching is not supported "
            f"for {call.op.name}"
        )
    ndim = predictions.ndim - (1 if call.batched[0] else 0)
    if ndim not in (1, 2):
        raise RuntimeError(
            "vmap: predictions of more than 2 dims have no batching rule; batching is not "
            f"supported for {call.op.name}"
        )
    if not call.batched[1]:
        targets = with_batch(targets, call.size)
    n = 1 if ndim == 1 else targets.shape[1]
    if isinstance(predictions, Tensor):
        if not call.batched[0]:
            predictions = with_batch(predictions, call.size)
        if ndim == 2:
            predictions = merged(predictions)
    else:  # the shape alone: an unbatched TensorMeta of one example's predictions
        predictions = _Shape((call.size * n, predictions.shape[-1]), predictions.dtype)
    return predictions, (merged(targets) if ndim == 2 else targets), weights, n


def _counted(call: Call, targets: Tensor, n: int) -> Tensor:
    """Each example's divisor for reduction='mean': the weight of its counted targets."""
    if call.attrs["reduction"] != "mean":
        return None
    if call.args[2] is not None:
        raise RuntimeError(
            "vmap: nll_loss with class weights and reduction='mean' has no batching rule"
        )
    kept = run("ne", [targets, call.attrs["ignore_index"]])
    kept = run("astype", [kept], {"dtype": call.args[0].dtype})
    return run(
        "sum", [run("reshape", [kept], {"shape": (call.size, n)})], {"dims": (1,), "keepdim": False}
    )


def nll_loss(call: Call) -> Tensor:
    """The per-sample losses of every example in one call, then each example's reduction."""
    predictions, targets, weights, n = _nll_merged(call)
    attrs = {**call.attrs, "reduction": "none"}
    losses = run(
        "reshape",
        [apply_op(call.op, (predictions, targets, weights), attrs)],
        {"shape": (call.size, n)},
    )
    if call.attrs["reduction"] == "none":
        one_each = call.args[0].ndim - call.batched[0] == 1
        return run("reshape", [losses], {"shape": (call.size,)}) if one_each else losses
    total = run("sum", [losses], {"dims": (1,), "keepdim": False})
    count = _counted(call, targets, n)
    return total if count is None else run("div", [total, count])


def nll_loss_backward(call: Call) -> Tensor:
    output_grad = call.args[0]
    rest = Call(call.op, call.args[1:], call.batched[1:], call.attrs, call.size)
    predictions, targets, weights, n = _nll_merged(rest)
    if not call.batched[0]:
        output_grad = with_batch(output_grad, call.size)
    if call.attrs["reduction"] == "none":
        per_sample = run("reshape", [output_grad], {"shape": (call.size * n,)})
    else:
        count = _counted(rest, targets, n)
        scale = output_grad if count is None else run("div", [output_grad, count])
        column = run("reshape", [scale], {"shape": (call.size, 1)})
        per_sample = run(
            "reshape",
            [run("expand", [column], {"shape": (call.size, n)})],
            {"shape": (call.size * n,)},
        )
    attrs = {**call.attrs, "reduction": "none"}
    out = apply_op(call.op, (per_sample, predictions, targets, weights), attrs)
    one_each = call.args[1].ndim - call.batched[1] == 1
    return out if one_each else split(out, call.size)


# ------------------------------------------------------------------ the tables
ELEMENTWISE = (
    "no_grad conj real imag angle complex clone astype to_device start_checkpoint dropout "
    "end_checkpoint add sub mul div remainder fmod floor_divide neg pow sign abs sgn maximum "
    "minimum where lt le gt ge eq ne logical_and logical_or logical_xor logical_not "
    "bitwise_and bitwise_or bitwise_xor bitwise_not bitwise_left_shift bitwise_right_shift "
    "isclose exp log sqrt sin cos log10 log2 log1p expm1 reciprocal rsqrt square floor ceil "
    "trunc round tan erf sigmoid sigmoid_backward tanh tanh_backward relu relu_backward "
    "leaky_relu elu gelu silu softplus tril triu one_hot"
).split()
REDUCTIONS = "sum mean amax amin max min all any prod var std logsumexp norm".split()
ALONG_DIM = (
    "max_dim first_extreme_mask argmax argmin cumsum cumprod softmax log_softmax "
    "log_softmax_backward gather gather_backward"
).split()

RULES = {name: elementwise for name in ELEMENTWISE}
RULES.update({name: reduction for name in REDUCTIONS})
RULES.update({name: along_dim for name in ALONG_DIM})
RULES.update(
    {
        "reshape": with_attr("shape", _batch_shape),
        "view": with_attr("shape", _batch_shape),
        "unsqueeze": with_attr("shape", _batch_shape),
        "squeeze": with_attr("shape", _batch_shape),
        "permute": with_attr("dims", _batch_perm),
        "transpose": with_attr("dims", _batch_perm),
        "t": with_attr("dims", _batch_perm),
        "flip": with_attr("dims", lambda dims, call: shifted(dims)),
        "roll": roll,
        "getitem": with_attr("key", _batch_key),
        "index": with_attr("key", _batch_key),
        "expand": expand,
        "index_put": index_put,
        "collapse_sum_like": collapse_sum_like,
        "getitem_backward": getitem_backward,
        "cat": joined,
        "stack": joined,
        "pad": pad,
        "repeat": repeat,
        "take": take,
        "embedding": embedding,
        "matmul": matmul,
        "linear": linear,
        "addmm": addmm,
        "layer_norm": layer_norm,
        "max_pool2d": over_examples,
        "avg_pool2d": over_examples,
        "max_pool2d_backward": over_examples,
        "max_pool2d_gather": over_examples,
        "avg_pool2d_backward": over_examples,
        "conv2d": conv2d,
        "conv2d_input_grad": conv2d_input_grad,
        "nll_loss": nll_loss,
        "nll_loss_backward": nll_loss_backward,
        # registered when workbench.nn is first used (workbench/ops/losses.py)
        "mse_loss": elementwise_loss,
        "binary_cross_entropy": elementwise_loss,
        "binary_cross_entropy_with_logits": elementwise_loss,
    }
)

# Ops vmap refuses, and why (the reason starts the error message).
REFUSED = {
    "batch_norm": "batch_norm's statistics mix the examples of a batch",
    "take_backward": "take's backward has no batching rule",
    "conv2d_weight_grad": "per-example convolution weight gradients have no batching rule",
}


# ------------------------------------------------------------------ custom Functions
def batched_function(cls, args: tuple, kwargs: dict):
    """A custom Function called with a batched input; None when no input is batched.

    As for an op, two tapes see the call: this vmap level's (the batched outputs get
    the Function's own node, with edges to the inputs on it: ``_record``), and the
    levels' outside it, which see the batch: there a Function made for the call
    (PyTorch's ``generate_vmap_rule``) takes the batches and gives the batches of the
    outputs, and its backward runs ``cls.backward`` under a fresh vmap."""
    from ..autograd.function import BackwardFunction, finish, run_forward

    level = max(B.level_of(a) for a in args)
    if level == 0:
        return None
    flags = [B.level_of(a) == level for a in args]
    on_tape = [flag or _inside(a, level) for a, flag in zip(args, flags)]
    ctx = BackwardFunction(cls)
    ctx.needs_input_grad = tuple(
        keep and isinstance(a, Tensor) and a._requires_grad for a, keep in zip(args, on_tape)
    )
    ran = {}

    def forward(*batches):
        outputs = ran["outputs"] = run_forward(cls, ctx, args, kwargs)
        outs = outputs if isinstance(outputs, tuple) else (outputs,)
        return tuple(B.physical(o) if B.level_of(o) == level else o for o in outs)

    batch_rule = _batch_rule(cls, ctx, flags, level, forward)
    with forward_ad.suspended():  # the tangents are the batched tensors' (finish: cls.jvp)
        batch_rule.apply(*(_outer_part(a, f) for a, f in zip(args, flags)))
    outputs = finish(cls, ctx, args, ran["outputs"])
    for out in outputs if isinstance(outputs, tuple) else (outputs,):
        if isinstance(out, Tensor) and out.grad_fn is not None:
            mark_seen_outside(out.grad_fn, args, on_tape)
    if forward_ad.LEVELS:  # the batches get the tangents cls.jvp gave the outputs
        _carry_tangents(outputs, level)
    return outputs


def _carry_tangents(outputs, level: int) -> None:
    """The batches of the outputs carry the tangents of the batched outputs: the ops
    that read the batches (the tape outside the vmap: forward over reverse) see them.
    Under nested vmaps a batch is batched itself: its own batch gets them too."""
    from .vmap import physical_with_tangents

    for out in outputs if isinstance(outputs, tuple) else (outputs,):
        if B.level_of(out) == level:
            batch = physical_with_tangents(out, level, B.physical(out).shape[0])
            if B.level_of(batch):
                _carry_tangents(batch, B.level_of(batch))


def _batch_rule(cls, ctx, flags: list, level: int, forward):
    """The Function of one batched call of ``cls`` on the batches (see batched_function)."""
    from ..autograd.function import Function

    class BatchRule(Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(*batches):
            return forward(*batches)

        @staticmethod
        def setup_context(rule_ctx, inputs, output):
            saved = ctx.to_save
            rule_ctx.batched = [B.level_of(s) == level for s in saved]
            rule_ctx.save_for_backward(
                *(B.physical(s) if b else s for s, b in zip(saved, rule_ctx.batched))
            )

        @staticmethod
        def backward(rule_ctx, *grads):
            return _batched_backward(cls, ctx, rule_ctx, flags, grads)

    BatchRule.__name__ = cls.__name__
    return BatchRule


def _batched_backward(cls, ctx, rule_ctx, flags: list, grads: tuple) -> tuple:
    """``cls.backward`` of every example at once, under a fresh vmap: the saved batches
    and the outputs' gradients are its batched inputs. An input that was not batched
    gets the sum of its examples' gradients."""
    from .vmap import vmap

    saved_dims = tuple(0 if b else None for b in rule_ctx.batched)
    given = []  # per input: whether cls.backward gives it a gradient

    def one_example(saved, grads):
        results = cls.backward(_Example(ctx, saved), *grads)
        results = results if isinstance(results, tuple) else (results,)
        given[:] = [r is not None for r in results]
        return tuple(r for r in results if r is not None)

    found = iter(vmap(one_example, in_dims=(saved_dims, 0))(rule_ctx.saved_tensors, grads))
    gradients = []
    for batched_input, has_gradient in zip(flags, given):
        g = next(found) if has_gradient else None
        if g is not None and not batched_input:
            g = run("sum", [g], {"dims": (0,), "keepdim": False})
        gradients.append(g)
    return tuple(gradients)


class _Example:
    """The ``ctx`` one example's backward sees: the saved tensors of that example, and
    everything else (``needs_input_grad``, the attributes setup_context set) from the
    batched call's ``ctx``."""

    def __init__(self, ctx, saved: tuple) -> None:
        self._ctx = ctx
        self.saved_tensors = saved

    def __getattr__(self, name: str):
        return getattr(self._ctx, name)
