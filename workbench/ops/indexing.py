"""Joining, slicing, reordering and gathering tensors.

Every gradient here moves ȳ back to where each value came from: ``cat`` slices ȳ,
``flip``/``roll`` undo the move, ``pad`` crops, and the gathering ops (``take``,
``index_select``, ``gather``) scatter-*add* ȳ into zeros, so an index used twice
receives the sum of both gradients.
"""

from __future__ import annotations

import builtins

import numpy as np

from ..core import backend, checks
from ..core.checks import dim_in_range
from ..core.tensor import Tensor
from ..record.dispatch import apply_op
from .arithmetic import where
from .reductions import sum
from .registry import OpDef, register_gradient, register_jvp, register_linear_jvp, register_op
from .shape import astype, getitem, reshape, scatter_add


class VariadicNames(tuple):
    """Input names of an op that takes any number of tensors: ``tensors[0]``, ``tensors[1]``...

    The registry names each input slot; ``cat`` and ``stack`` have as many slots as
    tensors they were given, so slot ``i`` is simply called ``tensors[i]``.
    """

    def __new__(cls, name: str):
        return super().__new__(cls, (name,))

    def __getitem__(self, i):
        if isinstance(i, int):
            return f"{tuple.__getitem__(self, 0)}[{i}]"
        return tuple.__getitem__(self, i)


def variadic(op: OpDef, name: str = "tensors") -> OpDef:
    op.input_names = VariadicNames(name)
    return op


def _along(dim: int, index) -> tuple:
    """The indexing key that applies ``index`` to axis ``dim`` only."""
    return (slice(None),) * dim + (index,)


def _tensor_list(tensors, op: str, empty_error=RuntimeError) -> list:
    """A non-empty list of tensors; PyTorch's error for an empty one differs by op (cat:
    ValueError, stack: RuntimeError)."""
    tensors = list(tensors)
    if not tensors:
        raise empty_error(f"{op}(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): expected Tensor at position {i}, got {type(t).__name__}")
    return tensors


def _common_dtype(tensors: list) -> list:
    """Cast every tensor to the promoted dtype (as torch.cat does); casts are differentiable."""
    dtype = np.result_type(*[t.dtype for t in tensors])
    return [astype(t, dtype) for t in tensors]


# Each op's rules stay written out, even where two share a shape (flip's and tril's, tril's and
# triu's, and the linear rules in shape.py): a node's formula is its rule's docstring, and a learner
# reads it where the op is.


# ---------------------------------------------------------------------- cat
@register_op("cat", inputs=("tensors",))
def _cat(*arrays, dim, sizes):
    joined = [a for a, size in zip(arrays, sizes) if size is not None] or arrays[:1]
    return np.concatenate(joined, axis=dim)


variadic(_cat)


@register_gradient("cat")
def cat_grad(orig, grad):
    """Forward: y = cat([x₀, x₁, ...], dim)
    Backward: x̄ᵢ = ȳ[..., offsetᵢ : offsetᵢ + sizeᵢ, ...]   (ȳ split back along dim)"""
    dim, sizes = orig.attrs["dim"], orig.attrs["sizes"]
    grads, start = [], 0
    for size, needed in zip(sizes, orig.needs_input_grad):
        if size is None:  # a skipped legacy empty tensor: its gradient is empty too
            empty = getitem(grad, _along(dim, slice(0, 0)))
            grads.append(reshape(empty, (0,)) if needed else None)
            continue
        key = _along(dim, slice(start, start + size))
        grads.append(getitem(grad, key) if needed else None)
        start += size
    return grads


register_linear_jvp("cat", "y = cat([x₀, x₁, ...], dim)", "ẏ = cat([ẋ₀, ẋ₁, ...], dim)   (linear)")


def cat(tensors, dim: int = 0) -> Tensor:
    """Join tensors along an existing dimension; all other sizes must agree."""
    tensors = _tensor_list(tensors, "cat", empty_error=ValueError)
    # torch.cat skips legacy empty 1-D tensors so that they can seed a running cat.
    kept = [t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)] or tensors[:1]
    for i, t in enumerate(tensors):
        if t.ndim == 0:  # a 0-d tensor has no dim to join along, whatever ``dim`` is
            raise RuntimeError(
                f"cat(): zero-dimensional tensor (at position {i}) cannot be concatenated "
                f"(argument 'tensors', shapes {[tuple(t.shape) for t in tensors]})"
            )
    first = kept[0]
    d = dim_in_range("cat", dim, first.ndim)
    for i, t in enumerate(kept):
        if t.ndim != first.ndim:
            raise RuntimeError(
                f"cat(): Tensors must have same number of dimensions: got {first.ndim} and "
                f"{t.ndim} (shapes {[tuple(t.shape) for t in kept]})"
            )
        for axis in range(first.ndim):
            if axis != d and t.shape[axis] != first.shape[axis]:
                raise RuntimeError(
                    f"cat(): Sizes of tensors must match except in dimension {d}. Expected size "
                    f"{first.shape[axis]} but got size {t.shape[axis]} for tensor number {i} in "
                    f"the list (shapes {[tuple(t.shape) for t in kept]})"
                )
    # The skipped ones still count for the dtype and stay inputs (their gradient is
    # empty), as in torch; their size is None.
    kept_ids = {id(t) for t in kept}
    sizes = tuple(t.shape[d] if id(t) in kept_ids else None for t in tensors)
    return apply_op(_cat, tuple(_common_dtype(tensors)), {"dim": d, "sizes": sizes})


concat = concatenate = cat


# -------------------------------------------------------------------- stack
@register_op("stack", inputs=("tensors",))
def _stack(*arrays, dim):
    return np.stack(arrays, axis=dim)


variadic(_stack)


@register_gradient("stack")
def stack_grad(orig, grad):
    """Forward: y = stack([x₀, x₁, ...], dim)   (a new axis)
    Backward: x̄ᵢ = ȳ.select(dim, i)"""
    dim = orig.attrs["dim"]
    return [
        getitem(grad, _along(dim, i)) if needed else None
        for i, needed in enumerate(orig.needs_input_grad)
    ]


register_linear_jvp(
    "stack", "y = stack([x₀, x₁, ...], dim)", "ẏ = stack([ẋ₀, ẋ₁, ...], dim)   (linear)"
)


def stack(tensors, dim: int = 0) -> Tensor:
    """Join tensors of one shape along a new dimension."""
    tensors = _tensor_list(tensors, "stack")
    try:  # first, as in PyTorch
        d = dim_in_range("stack", dim, tensors[0].ndim + 1)
    except IndexError as err:  # say which dims there are: the tensors' and the new one
        shape = tuple(tensors[0].shape)
        raise IndexError(f"{err}: stacking tensors of shape {shape} adds one dim") from None
    first = tensors[0].shape
    for i, t in enumerate(tensors):
        if t.shape != first:
            raise RuntimeError(
                f"stack(): stack expects each tensor to be equal size, but got {list(first)} at "
                f"entry 0 and {list(t.shape)} at entry {i}"
            )
    return apply_op(_stack, tuple(_common_dtype(tensors)), {"dim": d})


# ---------------------------------------------------- split, chunk, unbind
def split(tensor: Tensor, split_size_or_sections, dim: int = 0) -> tuple:
    """Pieces of ``tensor`` along ``dim``: equal sizes (the last may be smaller) or given sizes.

    Each piece is a view made by basic indexing, so its gradient is scattered back
    into place and the pieces' gradients add up where the whole tensor is used.
    """
    checks.tensor_arg("split", "tensor", tensor)
    if tensor.ndim == 0:
        raise RuntimeError(
            "split(): split expects at least a 1-dimensional tensor (argument 'tensor' is 0-d)"
        )
    d = dim_in_range("split", dim, tensor.ndim)
    length = tensor.shape[d]
    if isinstance(split_size_or_sections, checks.INTEGERS):  # a bool too: int_arg refuses it
        size = checks.int_arg("split", "split_size", split_size_or_sections)
        if size <= 0 and length > 0:
            raise RuntimeError(f"split(): split_size must be positive, got {size}")
        sizes = [min(size, length - start) for start in range(0, length, max(size, 1))] or [0]
    else:
        sizes = list(checks.int_list("split", "split_size", split_size_or_sections))
        checks.non_negative("split", "split_sizes", tuple(sizes))
        if builtins.sum(sizes) != length:
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {length} (input tensor's "
                f"size at dimension {d}), but got split_sizes={sizes}"
            )
    pieces, start = [], 0
    for size in sizes:
        pieces.append(getitem(tensor, _along(d, slice(start, start + size))))
        start += size
    return tuple(pieces)


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple:
    """Split into ``chunks`` pieces of size ⌈n / chunks⌉ (fewer pieces if that runs out)."""
    checks.tensor_arg("chunk", "input", input)
    if checks.int_arg("chunk", "chunks", chunks) <= 0:
        raise RuntimeError(f"chunk(): chunk expects `chunks` to be greater than 0, got: {chunks}")
    if input.ndim == 0:
        raise RuntimeError(
            "chunk(): chunk expects at least a 1-dimensional tensor (argument 'input' is 0-d)"
        )
    d = dim_in_range("chunk", dim, input.ndim)
    if input.shape[d] == 0:  # as torch: `chunks` empty pieces
        return split(input, [0] * chunks, d)
    size = -(-input.shape[d] // chunks)
    return split(input, size, d)


def unbind(input: Tensor, dim: int = 0) -> tuple:
    """The slices of ``input`` along ``dim``, each without that dimension."""
    d = dim_in_range("unbind", dim, input.ndim)
    return tuple(getitem(input, _along(d, i)) for i in range(input.shape[d]))


# --------------------------------------------------------------- flip, roll
@register_op("flip")
def _flip(x, dims):
    if x.ndim == 0:  # torch accepts dim 0 (or -1) of a 0-d tensor; nothing to reverse
        return x.copy()
    return np.flip(x, axis=dims).copy()


@register_gradient("flip")
def flip_grad(orig, grad):
    """Forward: y = flip(x, dims)   (reverse the order along dims)
    Backward: x̄ = flip(ȳ, dims)"""
    return [flip(grad, orig.attrs["dims"])]


register_linear_jvp("flip", "y = flip(x, dims)", "ẏ = flip(ẋ, dims)   (linear)")


def flip(input: Tensor, dims) -> Tensor:
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    dims = tuple(dim_in_range("flip", d, input.ndim) for d in dims)
    return apply_op(_flip, (input,), {"dims": dims})


@register_op("roll")
def _roll(x, shifts, dims):
    return np.roll(x, shifts, axis=dims)


@register_gradient("roll")
def roll_grad(orig, grad):
    """Forward: y = roll(x, shifts, dims)   (shift cyclically)
    Backward: x̄ = roll(ȳ, −shifts, dims)"""
    shifts, dims = orig.attrs["shifts"], orig.attrs["dims"]
    back = -shifts if isinstance(shifts, int) else tuple(-s for s in shifts)
    return [apply_op(_roll, (grad,), {"shifts": back, "dims": dims})]


register_linear_jvp("roll", "y = roll(x, shifts, dims)", "ẏ = roll(ẋ, shifts, dims)   (linear)")


def roll(input: Tensor, shifts, dims=None) -> Tensor:
    """Shift elements cyclically; with ``dims=None`` the tensor is rolled as if flattened.
    Each shift is an int of at most 64 bits, as PyTorch takes it (a trace then reads back)."""
    many = isinstance(shifts, (tuple, list))
    shifts = tuple(checks.int_arg("roll", "shifts", s) for s in (shifts if many else [shifts]))
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError("roll(): with dims=None, shifts must be a single integer")
        return apply_op(_roll, (input,), {"shifts": shifts[0], "dims": None})
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(
            f"roll(): shifts and dimensions must align. shifts: {len(shifts)}, dims: {len(dims)}"
        )
    dims = tuple(dim_in_range("roll", d, input.ndim) for d in dims)
    return apply_op(_roll, (input,), {"shifts": shifts, "dims": dims})


# ---------------------------------------------------------------------- pad
@register_op("pad")
def _pad(x, widths, value=0.0):
    """Pad (positive widths) or crop (negative widths): ``widths[axis] = (before, after)``."""
    crop = tuple(slice(max(-b, 0), x.shape[i] - max(-a, 0)) for i, (b, a) in enumerate(widths))
    grow = [(max(b, 0), max(a, 0)) for b, a in widths]
    return np.pad(x[crop], grow, constant_values=value)


@register_gradient("pad")
def pad_grad(orig, grad):
    """Forward: y = pad(x, widths, value)   (negative widths crop)
    Backward: x̄ = pad(ȳ, −widths, 0)   (cropping and zero-padding undo each other)"""
    back = tuple((-b, -a) for b, a in orig.attrs["widths"])
    return [apply_op(_pad, (grad,), {"widths": back})]


@register_jvp("pad")
def pad_jvp(orig, tangents):
    """Forward: y = pad(x, widths, value)
    JVP: ẏ = pad(ẋ, widths, 0)   (the padding is a constant: its tangent is 0)"""
    return apply_op(_pad, (tangents[0],), {"widths": orig.attrs["widths"]})


_NUMPY_PAD_MODES = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def pad(input: Tensor, pad, mode: str = "constant", value=None) -> Tensor:
    """PyTorch's ``F.pad``: ``pad`` lists (before, after) pairs starting from the last dim.

    ``constant`` mode is one op (negative widths crop). ``reflect``, ``replicate`` and
    ``circular`` gather the border values with ``index_select``, so their gradients
    scatter-add back onto the values that were copied.
    """
    checks.tensor_arg("pad", "input", input)
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        raise RuntimeError(
            f"pad(): Padding length must be divisible by 2 and at most twice the number of "
            f"dimensions of the input (got pad {pad} for input shape {tuple(input.shape)})"
        )
    widths = [(0, 0)] * input.ndim
    for k in range(len(pad) // 2):
        widths[input.ndim - 1 - k] = (pad[2 * k], pad[2 * k + 1])
    if mode == "constant":
        for axis, (b, a) in enumerate(widths):
            if input.shape[axis] + b + a < 0:
                raise RuntimeError(
                    f"pad(): the padding {pad} would give dimension {axis} of input shape "
                    f"{tuple(input.shape)} a negative size"
                )
        attrs = {"widths": tuple(widths)}
        if value:
            attrs["value"] = value
        return apply_op(_pad, (input,), attrs)
    checks.one_of("pad", "mode", mode, ("constant", *_NUMPY_PAD_MODES), NotImplementedError)
    _border_pad_supported(input, pad, mode)
    out = input
    for axis, (b, a) in enumerate(widths):
        if b or a:
            out = index_select(out, axis, _border_index(input, axis, b, a, mode))
    return out


def _border_pad_supported(input: Tensor, pad: tuple, mode: str) -> None:
    """PyTorch pads borders of images only: the last 1, 2 or 3 dims of a (batch of)
    channels, so 2 widths need a 2-D or 3-D input, 4 a 3-D or 4-D one, 6 a 4-D or 5-D one."""
    dims = len(pad) // 2
    if dims not in (1, 2, 3) or input.ndim not in (dims + 1, dims + 2):
        raise NotImplementedError(
            f"pad(): padding size {len(pad)} is not supported for a {input.ndim}D input tensor "
            f"(shape {tuple(input.shape)}) in {mode} mode: padding sizes 2, 4 and 6 pad the "
            "last 1, 2 or 3 dims of a 2D or 3D, 3D or 4D, 4D or 5D input"
        )


def _border_index(input: Tensor, axis: int, before: int, after: int, mode: str) -> Tensor:
    """The positions along ``axis`` that the padded axis reads: reflect (2, 1) on 3 values
    reads [2, 1, 0, 1, 2, 1]. Made on ``input``'s device, as index_select needs both there."""
    size = input.shape[axis]
    if before < 0 or after < 0:
        raise RuntimeError(f"pad(): negative padding is only supported in constant mode ({mode})")
    limit = size - 1 if mode == "reflect" else size
    if max(before, after) > limit:
        raise RuntimeError(
            f"pad(): padding ({before}, {after}) is too large for a dimension of size {size} in "
            f"{mode} mode"
        )
    xp = backend.xp(input._data)
    index = xp.pad(xp.arange(size), (before, after), mode=_NUMPY_PAD_MODES[mode])
    return Tensor(index.astype(np.int64))


# -------------------------------------------------------------- tril, triu
@register_op("tril")
def _tril(x, diagonal):
    return np.tril(x, diagonal)


@register_op("triu")
def _triu(x, diagonal):
    return np.triu(x, diagonal)


@register_gradient("tril")
def tril_grad(orig, grad):
    """Forward: y = tril(x, k)   (zero above the k-th diagonal)
    Backward: x̄ = tril(ȳ, k)"""
    return [tril(grad, orig.attrs["diagonal"])]


register_linear_jvp("tril", "y = tril(x, k)", "ẏ = tril(ẋ, k)   (linear)")


@register_gradient("triu")
def triu_grad(orig, grad):
    """Forward: y = triu(x, k)   (zero below the k-th diagonal)
    Backward: x̄ = triu(ȳ, k)"""
    return [triu(grad, orig.attrs["diagonal"])]


register_linear_jvp("triu", "y = triu(x, k)", "ẏ = triu(ẋ, k)   (linear)")


def _check_matrix(input: Tensor, op: str) -> None:
    if input.ndim < 2:
        raise RuntimeError(f"{op}: input tensor must have at least 2 dimensions, got {input.ndim}")


def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    checks.tensor_arg("tril", "input", input)
    _check_matrix(input, "tril")
    return apply_op(_tril, (input,), {"diagonal": checks.int_arg("tril", "diagonal", diagonal)})


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    checks.tensor_arg("triu", "input", input)
    _check_matrix(input, "triu")
    return apply_op(_triu, (input,), {"diagonal": checks.int_arg("triu", "diagonal", diagonal)})


# ------------------------------------------------------------ repeat, tile
@register_op("repeat")
def _repeat(x, repeats):
    return np.tile(x, repeats)


@register_gradient("repeat")
def repeat_grad(orig, grad):
    """Forward: y = x.repeat(r₀, r₁, ...)   (tile copies of x)
    Backward: x̄ = Σ over the copies of ȳ   (view ȳ as (r₀, s₀, r₁, s₁, ...), sum the r axes)"""
    (x,) = orig.args
    repeats = orig.attrs["repeats"]
    sizes = (1,) * (len(repeats) - x.ndim) + tuple(x.shape)
    interleaved = tuple(v for pair in zip(repeats, sizes) for v in pair)
    copies = tuple(range(0, 2 * len(repeats), 2))
    return [reshape(sum(reshape(grad, interleaved), dim=copies), x.shape)]


register_linear_jvp("repeat", "y = x.repeat(r₀, r₁, ...)", "ẏ = ẋ.repeat(r₀, r₁, ...)   (linear)")


def repeat(input: Tensor, *sizes) -> Tensor:
    """``x.repeat(2, 3)``: tile ``x`` 2 times along dim 0 and 3 times along dim 1."""
    repeats = checks.shape_arg("repeat", sizes)
    if len(repeats) < input.ndim:
        raise RuntimeError(
            "repeat(): Number of dimensions of repeat dims can not be smaller than number of "
            f"dimensions of tensor (repeats {repeats}, input shape {tuple(input.shape)})"
        )
    return apply_op(_repeat, (input,), {"repeats": repeats})


def tile(input: Tensor, dims) -> Tensor:
    """``torch.tile``: like ``repeat``, but missing leading repeats count as 1."""
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    dims = (1,) * (input.ndim - len(dims)) + dims
    return repeat(input, dims)


# ------------------------------------------------------ take, index_select
@register_op("take", inputs=("x", "indices"), saves=("indices",))
def _take(x, indices, axis=None):
    return np.take(x, indices, axis=axis)


@register_gradient("take")
def take_grad(orig, grad):
    """Forward: y = take(x, indices, axis)   (axis None: on the flattened x)
    Backward: x̄ = take_backward(ȳ, x, indices, axis)   (scatter-add: repeats accumulate)"""
    x, indices = orig.args
    return [take_backward(grad, x, indices, orig.attrs.get("axis")), None]


register_linear_jvp(
    "take", "y = take(x, indices, axis)", "ẏ = take(ẋ, indices, axis)   (linear)", moving=(0,)
)


def _index_tensor(index, input: Tensor, op: str) -> Tensor:
    """``index`` as an integer tensor; a list or array becomes one on ``input``'s device."""
    if not isinstance(index, Tensor):
        index = checks.as_tensor(op, "index", backend.asarray(index, like=input._data))
    checks.integer_index(op, index)
    return index


def take(input: Tensor, index, axis: int | None = None) -> Tensor:
    """``torch.take``: pick elements of the flattened input. ``axis`` (TVM's, numpy's) picks
    whole slices along that axis instead, as ``index_select`` does, and also counts a
    negative index from the end."""
    checks.tensor_arg("take", "input", input)
    index = _index_tensor(index, input, "take")
    if axis is None:
        checks.indices_in_range("take", index._data, input.numel(), 0, input.shape)
        return apply_op(_take, (input, index))
    return _slices_at("take", input, axis, index, negative_ok=True)


def index_select(input: Tensor, dim: int, index) -> Tensor:
    """The slices of ``input`` along ``dim`` at ``index`` (a 1-D integer tensor).

    As in PyTorch, ``index`` must be a Tensor (a list or a number is a TypeError) and a
    vector (or one index), checked before its dtype."""
    index = checks.tensor_arg("index_select", "index", index)
    if index.ndim > 1:
        raise IndexError(f"index_select(): Index is supposed to be a vector, got {index.ndim}-D")
    checks.integer_index("index_select", index)
    if input.ndim == 0:  # as in torch: one element along dim 0 (or -1), and one index
        if index.numel() != 1:
            raise RuntimeError(
                f"index_select(): Index to scalar can have only 1 value, got {index.numel()}"
            )
        return reshape(index_select(reshape(input, (1,)), dim, reshape(index, (1,))), ())
    if index.ndim == 0:  # one index still keeps its dim, of size 1
        index = reshape(index, (1,))
    return _slices_at("index_select", input, dim, index, negative_ok=False)


def _slices_at(op: str, input: Tensor, dim: int, index: Tensor, negative_ok: bool) -> Tensor:
    """The slices along ``dim`` at ``index``; an index of several dims puts them in place
    of ``dim`` (numpy's and TVM's take: embedding's rows are its 2-D index along dim 0).

    An index out of range is PyTorch's IndexError, except along dim 1, where its CPU
    kernel takes a faster road that reports a RuntimeError.
    """
    axis = dim_in_range(op, dim, input.ndim)
    error = RuntimeError if axis == 1 else IndexError
    checks.indices_in_range(
        op, index._data, input.shape[axis], axis, input.shape, error, negative_ok
    )
    return apply_op(_take, (input, index), {"axis": axis})


# ----------------------------------------------------------------- embedding
@register_op("embedding", inputs=("weight", "indices"), saves=("indices",))
def _embedding(weight, indices):
    return np.take(weight, indices, axis=0)


@register_gradient("embedding")
def embedding_grad(orig, grad):
    """Forward: y = weight[indices]   (one row per index)
    Backward: weight̄ = take_backward(ȳ, weight, indices, 0)   (rows picked twice add up)"""
    weight, indices = orig.args
    return [take_backward(grad, weight, indices, 0), None]


register_linear_jvp(
    "embedding", "y = weight[indices]", "ẏ = ẇeight[indices]   (linear)", moving=(0,)
)


def embedding_rows(weight: Tensor, indices) -> Tensor:
    """The rows of ``weight`` at ``indices`` (checked by ``F.embedding``): EmbeddingBackward0."""
    return apply_op(_embedding, (weight, _index_tensor(indices, weight, "embedding")))


# -------------------------------------------------------------------- gather
@register_op("gather", inputs=("x", "index"), saves=("index",))
def _gather(x, index, dim):
    # torch.gather allows an index smaller than x in the other dims: cut x to it first.
    cut = tuple(slice(0, n) if axis != dim else slice(None) for axis, n in enumerate(index.shape))
    return np.take_along_axis(x[cut], index, axis=dim)


@register_gradient("gather")
def gather_grad(orig, grad):
    """Forward: y[i][j] = x[index[i][j]][j]   (dim = 0; likewise for other dims)
    Backward: x̄ = zeros(x.shape).scatter_add(dim, index, ȳ)"""
    x, index = orig.args
    return [gather_backward(grad, x, orig.attrs["dim"], index), None]


register_linear_jvp(
    "gather", "y = gather(x, dim, index)", "ẏ = gather(ẋ, dim, index)   (linear)", moving=(0,)
)


@register_op("gather_backward", inputs=("grad", "x", "index"), saves=("index",))
def _gather_backward(grad, x, index, dim):
    # x is only a shape here (the op does not save it): the zeros go on ȳ's device.
    xp = backend.xp(grad)
    out = xp.zeros(x.shape, dtype=grad.dtype)
    # Each ȳ element goes to its own position, but at index[...] along dim. The positions
    # are an open grid of aranges (as np.indices(shape, sparse=True) gives), made on ȳ's
    # device: scatter_add needs all of its arrays on one device.
    position = list(xp.ix_(*[xp.arange(n) for n in index.shape]))
    position[dim] = index
    scatter_add(out, tuple(position), grad)
    return out


@register_gradient("gather_backward")
def gather_backward_grad(orig, grad):
    """Forward: y = zeros(x.shape).scatter_add(dim, index, ḡ)
    Backward: ḡ̄ = gather(ȳ, dim, index)   (x gives only its shape)"""
    _, _, index = orig.args
    return [apply_op(_gather, (grad, index), {"dim": orig.attrs["dim"]}), None, None]


register_linear_jvp(
    "gather_backward",
    "y = zeros(x.shape).scatter_add(dim, index, g)",
    "ẏ = zeros(x.shape).scatter_add(dim, index, ġ)   (linear; x gives only its shape)",
    moving=(0,),
)


def gather_backward(grad: Tensor, x, dim: int, index: Tensor) -> Tensor:
    """The gradient of ``gather``: ȳ scatter-added into zeros shaped like ``x``."""
    return apply_op(_gather_backward, (grad, x, index), {"dim": dim})


def gather(input: Tensor, dim: int, index) -> Tensor:
    checks.tensor_arg("gather", "input", input)
    index = _index_tensor(index, input, "gather")
    if input.ndim == 0 and index.ndim == 0:  # as in torch: one element along dim 0 (or -1)
        return reshape(gather(reshape(input, (1,)), dim, reshape(index, (1,))), ())
    d = dim_in_range("gather", dim, input.ndim)
    if index.ndim != input.ndim:
        raise RuntimeError(
            f"gather(): Index tensor must have the same number of dimensions as input tensor "
            f"(index shape {tuple(index.shape)}, input shape {tuple(input.shape)})"
        )
    for axis in range(input.ndim):
        if axis != d and index.shape[axis] > input.shape[axis]:
            raise RuntimeError(
                f"gather(): Size does not match at dimension {axis} expected index "
                f"{tuple(index.shape)} to be no larger than self {tuple(input.shape)} apart "
                f"from dimension {d}"
            )
    checks.indices_in_range(
        "gather", index._data, input.shape[d], d, input.shape, RuntimeError, negative_ok=False
    )
    return apply_op(_gather, (input, index), {"dim": d})


# --------------------------------------------------------------- masked_fill
def masked_fill(input: Tensor, mask, value) -> Tensor:
    """``value`` where ``mask`` is True, ``input`` elsewhere (a ``where`` underneath).

    As in PyTorch, ``mask`` is a bool Tensor and ``value`` a number (one ``input``'s
    dtype can hold) or a 0-d tensor."""
    checks.tensor_args("masked_fill", input=input, mask=mask)
    if mask.dtype != np.bool_:
        raise RuntimeError(
            f"masked_fill_ only supports boolean masks, but got mask with dtype {mask.dtype}"
        )
    return where(mask, fill_value("masked_fill", value, input), input)


def fill_value(op: str, value, input: Tensor, count: int | None = None):
    """``masked_fill``'s and ``fill_``'s value in ``input``'s dtype: a 0-d tensor, or a
    number that dtype can hold (checked as PyTorch checks a Scalar, ``count`` elements
    written by a fill: see ``checks.value_fits``), converted as PyTorch converts it: 2.7
    is 2 in an int dtype, any nonzero number True in a bool one."""
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(
                f"{op}(): argument 'value' must be a number or a 0-dimensional tensor, but got "
                f"a tensor with {value.ndim} dimension(s) (shape {tuple(value.shape)})"
            )
        return astype(value, input.dtype)
    value = checks.scalar_arg(op, "value", value)
    value = checks.value_fits(op, "value", value, input.dtype, count)
    return backend.xp(input._data).asarray(value).astype(input.dtype)[()]


# --------------------------------------------------------------- take_backward
@register_op("take_backward", inputs=("output_grad", "x", "indices"), saves=("indices",))
def _take_backward(output_grad, x, indices, axis=None):
    # x is only a shape here (the op does not save it): the zeros go on ȳ's device.
    out = backend.xp(output_grad).zeros(x.shape, dtype=output_grad.dtype)
    if axis is None:
        np.add.at(out.reshape(-1), indices.reshape(-1), output_grad.reshape(-1))
        return out
    scatter_add(out, (slice(None),) * axis + (indices,), output_grad)
    return out


@register_gradient("take_backward")
def take_backward_grad(orig, grad):
    """Forward: x̄ = take_backward(ḡ, x, i, axis)   (zeros, then x̄[i] += ḡ)
    Backward: ḡ̄ = take(ȳ, i, axis); x and i: none"""
    _, _, indices = orig.args
    return [take(grad, indices, orig.attrs.get("axis")), None, None]


register_linear_jvp(
    "take_backward",
    "y = take_backward(g, x, i, axis)",
    "ẏ = take_backward(ġ, x, i, axis)   (linear; x gives only its shape)",
    moving=(0,),
)


def take_backward(output_grad: Tensor, x, indices: Tensor, axis: int | None = None) -> Tensor:
    """The gradient of ``take`` w.r.t. ``x``: zero-fill, then scatter-*add* ``output_grad``.

    An index that appears twice adds both gradients (``[0, 0, 2]`` → ``[2, 0, 1]``).
    A negative ``axis`` counts from the end, as in ``take``.
    """
    attrs = None if axis is None else {"axis": dim_in_range("take_backward", axis, x.ndim)}
    return apply_op(_take_backward, (output_grad, x, indices), attrs)


# TVM's checkpoint-stage markers live in markers.py; tvm.relax.op.grad has them beside the
# backward operators, so wb.ops.grad does too.
