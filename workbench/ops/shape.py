"""Shape ops: views, indexing, copies and dtype or device changes.

View ops (reshape, transpose, permute, unsqueeze, squeeze, basic indexing) return
numpy views that share memory and the version counter with their input. Broadcasting
(``expand``) and its undo (``collapse_sum_like``) are in :mod:`workbench.ops.broadcasting`.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..core import backend, checks
from ..core.checks import dim_in_range
from ..core.tensor import NOT_GIVEN, Tensor
from ..record.dispatch import apply_op
from ..record.forward_ad import same_op
from .broadcasting import expand, shape_arg
from .registry import (
    OpDef,
    register_gradient,
    register_jvp,
    register_linear_jvp,
    register_op,
    register_rules,
)


# ------------------------------------------------------------------- views
# reshape, view, unsqueeze and squeeze only change the shape: one rule, x̄ = reshape(ȳ, x.shape),
# as ops of their own for PyTorch's node names (squeeze of chosen dims is SqueezeBackward1).
def _register_reshaping(name: str, kernel, forward: str, tangent: str, node_name=None) -> OpDef:
    """Register an op that gives x another shape: ``kernel`` on arrays, the gradient put back
    in x's shape, and the op itself on the tangent (linear). ``forward`` and ``tangent`` are
    its formulas, as the stepper shows them."""

    def reshaping_grad(orig, grad):
        (x,) = orig.args
        return [reshape(grad, x.shape)]

    def reshaping_jvp(orig, tangents):
        return same_op(orig, tangents)

    op = register_op(name, view=True, node_name=node_name)(kernel)
    backward, linear = "x̄ = reshape(ȳ, x.shape)", f"{tangent}   (linear: the op on the tangent)"
    register_rules(name, reshaping_grad, reshaping_jvp, forward, backward, linear)
    return op


def _reshape_kernel(x, shape, dim=None):  # dim: squeeze's, for its node's name only
    return np.reshape(x, shape)


def _view_kernel(x, shape):
    return backend.reshape_view(x, shape)


# PyTorch records a reshape (or flatten) of a contiguous tensor as a view: ViewBackward0.
_reshape = _register_reshaping(
    "reshape", _reshape_kernel, "reshape(x, shape)", "ẏ = reshape(ẋ, shape)", "ViewBackward0"
)
_view = _register_reshaping("view", _view_kernel, "x.view(shape)", "ẏ = ẋ.view(shape)")
_unsqueeze = _register_reshaping(
    "unsqueeze", _reshape_kernel, "x with a dim of size 1 put in", "ẏ = unsqueeze(ẋ, dim)"
)
_squeeze = _register_reshaping(
    "squeeze",
    _reshape_kernel,
    "x without its dims of size 1",
    "ẏ = squeeze(ẋ)",
    lambda node: "SqueezeBackward0" if node.attrs["dim"] is None else "SqueezeBackward1",
)


def reshape(input: Tensor, *shape) -> Tensor:
    checks.tensor_arg("reshape", "input", input)
    shape = _resolve_shape(shape_arg("reshape", shape), input.numel(), input.shape, "reshape")
    return apply_op(_reshape, (input,), {"shape": shape})


def view(input: Tensor, *shape) -> Tensor:
    shape = _resolve_shape(shape_arg("view", shape, "size"), input.numel(), input.shape, "view")
    try:
        return apply_op(_view, (input,), {"shape": shape})
    except RuntimeError as err:
        raise RuntimeError(
            f"view: view size is not compatible with input tensor's size and stride (input "
            f"shape {tuple(input.shape)}, requested {shape}): at least one dimension spans "
            "across two contiguous subspaces. Use .reshape(...) instead."
        ) from err


def _resolve_shape(shape: tuple, numel: int, old: tuple, op: str) -> tuple:
    if shape.count(-1) > 1:
        raise RuntimeError(f"{op}: only one dimension can be inferred (shape {shape})")
    for i, s in enumerate(shape):
        if s < -1:
            raise RuntimeError(
                f"{op}: invalid shape dimension {s} at index {i} of shape {list(shape)}"
            )
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        if known == 0 or numel % known:
            raise RuntimeError(f"{op}: shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    if math.prod(shape) != numel:
        raise RuntimeError(
            f"{op}: shape '{list(shape)}' is invalid for input of size {numel} "
            f"(input shape {tuple(old)})"
        )
    return shape


@register_op("permute", view=True)
def _permute(x, dims):
    return x.transpose(dims)


@register_gradient("permute")
def permute_grad(orig, grad):
    """Forward: y = permute(x, dims)
    Backward: x̄ = permute(ȳ, inverse(dims))"""
    dims = orig.attrs["dims"]
    inverse = tuple(int(i) for i in np.argsort(dims))
    return [permute(grad, inverse)]


register_linear_jvp(
    "permute", "y = permute(x, dims)", "ẏ = permute(ẋ, dims)   (linear: the op on the tangent)"
)


def permute(input: Tensor, *dims) -> Tensor:
    dims = shape_arg("permute", dims, "dims")
    ndim = input.ndim
    if len(dims) != ndim:
        raise RuntimeError(
            f"permute: number of dims don't match in permute (input shape "
            f"{tuple(input.shape)}, dims {dims})"
        )
    dims = tuple(dim_in_range("permute", d, ndim) for d in dims)
    if sorted(dims) != list(range(ndim)):
        raise RuntimeError(f"permute: repeated dim in permute (dims {dims})")
    return apply_op(_permute, (input,), {"dims": dims})


# transpose and t swap two dims: permute's kernel, as ops of their own so that their
# nodes carry PyTorch's names (TransposeBackward0, TBackward0). Swapping is its own inverse.
def _register_swap(name: str, forward: str, backward: str, tangent: str) -> OpDef:
    """Register an op that swaps two dims: its gradient is ȳ swapped back, by the op itself."""

    def swap_grad(orig, grad):
        return [apply_op(op, (grad,), orig.attrs)]

    def swap_jvp(orig, tangents):
        return same_op(orig, tangents)

    op = register_op(name, view=True)(_permute.forward)
    linear = f"{tangent}   (linear: the op on the tangent)"
    register_rules(name, swap_grad, swap_jvp, forward, backward, linear)
    return op


_transpose = _register_swap(
    "transpose",
    "x with dims i and j swapped",
    "x̄ = ȳ with dims i and j swapped back",
    "ẏ = transpose(ẋ, i, j)",
)
_t = _register_swap("t", "xᵀ", "x̄ = ȳᵀ", "ẏ = ẋᵀ")


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    ndim = input.ndim
    dim0, dim1 = dim_in_range("transpose", dim0, ndim), dim_in_range("transpose", dim1, ndim)
    if ndim == 0:  # dims 0 and -1 only, as in PyTorch: nothing to swap
        return input
    dims = list(range(ndim))
    dims[dim0], dims[dim1] = dims[dim1], dims[dim0]
    return apply_op(_transpose, (input,), {"dims": tuple(dims)})


swapaxes = transpose


def matrix_transpose(x: Tensor) -> Tensor:
    """``x`` with its last two dims swapped, for gradient rules (their operands are at least
    2-D): the transpose op itself, without ``transpose``'s argument checks."""
    return apply_op(_transpose, (x,), {"dims": SWAP_LAST_TWO[x._data.ndim]})


# The dims of matrix_transpose by rank: (1, 0), (0, 2, 1), ... (made once, read per call).
SWAP_LAST_TWO = {n: (*range(n - 2), n - 1, n - 2) for n in range(2, 65)}


def t(input: Tensor) -> Tensor:
    """Transpose of a matrix (a 0-d or 1-d tensor is returned as is)."""
    checks.tensor_arg("t", "input", input)
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.ndim}D")
    return input if input.ndim < 2 else matrix_t(input)


def matrix_t(x: Tensor) -> Tensor:
    """``x.t()`` of a 2-D ``x`` (``nn.Linear``'s Wᵀ, checked by its caller): the t op
    itself (TBackward0), without ``t``'s argument checks."""
    return apply_op(_t, (x,), {"dims": (1, 0)})


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    dim = dim_in_range("unsqueeze", dim, input.ndim + 1)
    shape = input.shape[:dim] + (1,) + input.shape[dim:]
    return apply_op(_unsqueeze, (input,), {"shape": shape})


def squeeze(input: Tensor, dim=NOT_GIVEN) -> Tensor:
    """Drop the dims of size 1: all of them, or those of ``dim`` (an int or a sequence).

    Leaving ``dim`` out squeezes all; ``squeeze(x, None)`` is PyTorch's TypeError."""
    checks.tensor_arg("squeeze", "input", input)
    shape = input.shape or (1,)  # 0-d: dim 0 (or -1) is accepted, as in torch, and drops
    if dim is NOT_GIVEN:
        dim, dims = None, {i for i, s in enumerate(shape) if s == 1}
    else:
        dims = {d for d in _squeezed_dims(dim, input.ndim) if shape[d] == 1}
    new_shape = tuple(s for i, s in enumerate(shape) if i not in dims)
    return apply_op(_squeeze, (input,), {"shape": new_shape, "dim": dim})


def _squeezed_dims(dim, ndim: int) -> list:
    """``squeeze``'s dims in [0, ndim), each once (PyTorch's RuntimeError for a repeat)."""
    dims = [
        dim_in_range("squeeze", d, ndim)
        for d in (dim if isinstance(dim, (tuple, list)) else (dim,))
    ]
    for d in dims:
        if dims.count(d) > 1:
            raise RuntimeError(
                f"squeeze(): dim {d} appears multiple times in the list of dims {dim}"
            )
    return dims


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    if input.ndim == 0:  # dims 0 and -1 only, as in PyTorch
        dim_in_range("flatten", start_dim, 0), dim_in_range("flatten", end_dim, 0)
        return reshape(input, 1)
    start = dim_in_range("flatten", start_dim, input.ndim)
    end = dim_in_range("flatten", end_dim, input.ndim)
    size = math.prod(input.shape[start : end + 1])  # not -1: beside an empty dim, -1 is ambiguous
    shape = input.shape[:start] + (size,) + input.shape[end + 1 :]
    if start > end:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    return reshape(input, shape)


# ----------------------------------------------------------------- indexing
def index_key(key, like, op: str = "getitem"):
    """Turn Tensors inside an indexing key into arrays; keep the rest as numpy sees it.

    A list or a numpy array (a CPU tensor's too) becomes an index array on the device of
    ``like``, the array being indexed, so that the gradient's scatter-add finds it there.
    """
    if isinstance(key, tuple):
        return _one_ellipsis(tuple(index_key(k, like, op) for k in key), like.ndim, op)
    if isinstance(key, (str, bytes)):
        raise TypeError(
            f"{op}: a tensor cannot be indexed by a {type(key).__name__} ({key!r}): use ints, "
            "slices, None, ..., or tensors of ints or bools"
        )
    if isinstance(key, Tensor):
        key = key._data
    if isinstance(key, (list, np.ndarray)):
        return backend.asarray(key, like=like)
    return key


def _one_ellipsis(key: tuple, ndim: int, op: str) -> tuple:
    """``x[..., 0, ...]``: PyTorch lets a key hold several ``...``, numpy only one.

    In PyTorch every ``...`` spans the same dims: as many as the rest of the key leaves.
    Where that is none, the extra ones can go. Otherwise each becomes that many ``:``,
    and the key may reach past the last dim: there PyTorch skips a slice that reads
    from 0 in steps of 1, and allows a ``None`` right at the end; anything else is an
    IndexError.
    """
    at = [i for i, k in enumerate(key) if k is Ellipsis]
    if len(at) < 2:
        return key
    spanned = ndim - sum(_dims_taken(k) for k in key)
    if spanned <= 0:
        return tuple(k for i, k in enumerate(key) if k is not Ellipsis or i == at[0])
    spelled = [p for k in key for p in ([slice(None)] * spanned if k is Ellipsis else [k])]
    kept, dim = [], 0  # dim: the dim of x the next part reads
    for part in spelled:
        taken = _dims_taken(part)
        past = dim > ndim if part is None else dim + taken > ndim
        if past and not (dim >= ndim and _whole(part)):
            raise IndexError(
                f"{op}: each '...' spans the {spanned} dim(s) the rest of the index leaves, so "
                f"after a second '...' the part {part!r} is past the last dim of a {ndim}-D "
                "tensor (only ':' may be there)"
            )
        if not past:
            kept.append(part)
        dim += taken
    return tuple(kept)


def _whole(part) -> bool:
    """``:`` (or ``0::1``): a slice that keeps everything, which PyTorch skips unread past
    the last dim. (With a stop, there PyTorch compares it with a size it reads past the
    end of its list of sizes: whether it raises depends on memory, so no stop is taken.)"""
    return (
        isinstance(part, slice)
        and part.start in (None, 0)
        and part.stop is None
        and (part.step in (None, 1))
    )


def _dims_taken(part) -> int:
    """How many dims of the indexed tensor one part of a key uses up."""
    if part is None or part is Ellipsis:
        return 0
    if getattr(part, "dtype", None) is not None and part.dtype == bool:
        return part.ndim  # a mask covers as many dims as it has
    return 1


def is_basic_key(key) -> bool:
    """Basic indexing (ints, slices, None, Ellipsis) returns a view."""
    parts = key if isinstance(key, tuple) else (key,)
    return all(isinstance(k, (int, np.integer, slice)) or k is None or k is Ellipsis for k in parts)


def _getitem_name(node) -> str:
    """PyTorch's name for ``x[key]``: the last thing the key does (an int selects, a slice
    slices, None unsqueezes); ``x[:, 0]`` is a select, as ``x[:]`` does nothing."""
    parts = node.attrs["key"] if isinstance(node.attrs["key"], tuple) else (node.attrs["key"],)
    name = "AliasBackward0"
    for part in parts:
        if part is None:
            name = "UnsqueezeBackward0"
        elif isinstance(part, slice) and part != slice(None):
            name = "SliceBackward0"
        elif isinstance(part, (int, np.integer)):
            name = "SelectBackward0"
    return name


@register_op("getitem", view=True, node_name=_getitem_name)
def _getitem_view(x, key):
    return x[key]


@register_op("index")
def _getitem_copy(x, key):
    try:
        return x[key]
    except IndexError:
        empty = _empty_result(x, key)
        if empty is None:
            raise
        return empty


def _empty_result(x, key):
    """``x[[5], 0:0]``: where the result has no elements PyTorch reads no index, so an index
    out of range is no error there; numpy checks every one. The result's shape comes from
    the key with each index array made zeros (an in-range index); None if it is not empty."""
    xp = backend.xp(x)
    parts = key if isinstance(key, tuple) else (key,)
    probe = tuple(
        xp.zeros_like(k) if isinstance(k, xp.ndarray) and k.dtype.kind in "iu" else k for k in parts
    )
    try:
        shape = xp.broadcast_to(xp.zeros((), x.dtype), x.shape)[probe].shape
    except IndexError:
        return None
    return xp.zeros(shape, x.dtype) if 0 in shape else None


@register_gradient("getitem")
def getitem_grad(orig, grad):
    """Forward: y = x[key]   (a view)
    Backward: x̄ = zeros(x.shape) with x̄[key] = ȳ"""
    (x,) = orig.args
    return [getitem_backward(grad, x.shape, orig.attrs["key"])]


register_linear_jvp(
    "getitem", "y = x[key]   (a view)", "ẏ = ẋ[key]   (a view)   (linear: the op on the tangent)"
)


@register_gradient("index")
def index_grad(orig, grad):
    """Forward: y = x[indices]   (gather; indices may repeat)
    Backward: x̄ = scatter-add of ȳ into zeros(x.shape): repeated indices accumulate"""
    (x,) = orig.args
    return [getitem_backward(grad, x.shape, orig.attrs["key"])]


register_linear_jvp("index", "y = x[indices]", "ẏ = ẋ[indices]   (linear: the op on the tangent)")


@register_op("getitem_backward", inputs=("grad",))
def _getitem_backward(grad, shape, key):
    out = backend.xp(grad).zeros(shape, dtype=grad.dtype)  # on ȳ's device
    if grad.size == 0:  # nothing to add (and the key's indices were never read)
        return out
    if is_basic_key(key):
        out[key] = grad
    else:
        scatter_add(out, key, grad)
    return out


def scatter_add(out, key, values) -> None:
    """``np.add.at(out, key, values)``, for arrays and keys of any number of dims.

    ``np.add.at`` walks its arrays with numpy's legacy iterator, which holds 32 dims:
    given an ``out`` or an index array of 33 dims or more, it writes past its buffers and
    the process dies. So the sum runs along one dim: each indexed element's flat offset
    in ``out`` is worked out first, from an open grid of aranges (dim d's coordinate,
    broadcast over ``out``'s shape without a copy, indexed by ``key``, times d's stride),
    so no array of ``out``'s size is made.
    """
    xp = backend.xp(out)
    offsets = xp.broadcast_to(xp.zeros((), dtype=np.intp), out.shape)[key]  # the key's shape
    stride = 1
    for d in reversed(range(out.ndim)):
        along = xp.arange(out.shape[d]).reshape((-1,) + (1,) * (out.ndim - 1 - d))
        offsets = offsets + xp.broadcast_to(along, out.shape)[key] * stride
        stride *= out.shape[d]
    values = xp.broadcast_to(values, offsets.shape)
    np.add.at(out.reshape(-1), offsets.reshape(-1), values.reshape(-1))


@register_gradient("getitem_backward")
def getitem_backward_grad(orig, grad):
    """Forward: y = scatter_add(zeros(shape), key, x)
    Backward: x̄ = ȳ[key]"""
    return [getitem(grad, orig.attrs["key"], keep_raw=True)]


register_linear_jvp(
    "getitem_backward",
    "y = scatter_add(zeros(shape), key, g)",
    "ẏ = scatter_add(zeros(shape), key, ġ)   (linear)",
)


def getitem_backward(grad: Tensor, shape: tuple, key) -> Tensor:
    """The gradient of ``x[key]``: zeros of ``shape`` with ``grad`` added at ``key``."""
    return apply_op(_getitem_backward, (grad,), {"shape": tuple(shape), "key": key})


def getitem(input: Tensor, key, keep_raw: bool = False) -> Tensor:
    key = key if keep_raw else index_key(key, input._data)
    if is_basic_key(key):
        return apply_op(_getitem_view, (input,), {"key": key})
    in_two = ints_first(key)
    if in_two is not None:
        return getitem(getitem(input, in_two[0], keep_raw=True), in_two[1], keep_raw=True)
    return apply_op(_getitem_copy, (input,), {"key": key})


def _is_int(k) -> bool:
    """An int index; torch counts a 0-d integer tensor as one too."""
    if isinstance(k, (bool, np.bool_)):
        return False
    if isinstance(k, (int, np.integer)):
        return True
    return getattr(k, "shape", None) == () and k.dtype.kind in "iu"


def ints_first(key) -> tuple | None:
    """A key with ints and index arrays together, as two keys: the ints alone, then the arrays.

    torch takes the ints first (each drops its dim) and indexes with the arrays what is
    left; numpy counts ints among the arrays, so that ``x[0, :, [1, 2]]`` puts the new
    dim first there, (2, n₁), where torch gives (n₁, 2). None when there is nothing to split.
    """
    parts = key if isinstance(key, tuple) else (key,)
    arrays = [not _is_int(k) and hasattr(k, "ndim") for k in parts]
    if not (any(arrays) and any(_is_int(k) for k in parts)):
        return None
    ints, rest = [], []
    for k, is_array in zip(parts, arrays):
        if is_array:  # for the second key; the first keeps its dims (a mask's: k.ndim)
            ints.extend([slice(None)] * (k.ndim if k.dtype == np.bool_ else 1))
            rest.append(k)
        elif _is_int(k):  # applied by the first key: its dim is gone
            ints.append(k)
        else:  # a slice, None or Ellipsis: applied by the first key, kept whole by the second
            ints.append(k)
            rest.append(Ellipsis if k is Ellipsis else slice(None))
    return tuple(ints), tuple(rest)


# ---------------------------------------------------------- index_put (setitem)
@register_op("index_put", inputs=("x", "values"))
def _index_put(x, values, key):
    out = x.copy()
    in_two = ints_first(key)
    target, key = (out, key) if in_two is None else (out[in_two[0]], in_two[1])
    try:  # (with ints and arrays: torch's order, as in getitem, through the ints' view)
        target[key] = values
    except ValueError:  # values of the wrong shape: PyTorch reports an index out of range first
        target[key]  # noqa: B018 - raises numpy's IndexError if there is one
        raise
    return out


@register_gradient("index_put")
def index_put_grad(orig, grad):
    """Forward: y = x, then y[key] = v
    Backward: x̄ = ȳ with x̄[key] = 0, v̄ = collapse_sum_like(ȳ[key], v)"""
    from .broadcasting import collapse_sum_like  # broadcasting.py imports this module

    x, values = orig.args
    key = orig.attrs["key"]
    need_x, need_v = orig.needs_input_grad
    grad_x = index_put(grad, key, 0.0) if need_x else None
    grad_v = collapse_sum_like(getitem(grad, key, keep_raw=True), values) if need_v else None
    return [grad_x, grad_v]


@register_jvp("index_put")
def index_put_jvp(orig, tangents):
    """Forward: y = x, then y[key] = v
    JVP: ẏ = ẋ, then ẏ[key] = v̇   (v̇ = 0 for a number v)"""
    dx, dv = tangents
    return apply_op(_index_put, (dx, 0.0 if dv is None else dv), orig.attrs)


def index_put(input: Tensor, key, values) -> Tensor:
    """Out-of-place ``input[key] = values``: a new tensor."""
    from .arithmetic import promote

    if not isinstance(values, Tensor):
        checks.as_tensor("index_put", "values", values)  # None, strings, ints past 64 bits
        values = Tensor(backend.asarray(values, like=input._data, dtype=input.dtype))
    else:
        _, values = promote(input, values)
    return apply_op(_index_put, (input, values), {"key": index_key(key, input._data, "index_put")})


# ----------------------------------------------------------------- copies
@register_op("clone")
def _clone(x):
    return x.copy()


@register_gradient("clone")
def clone_grad(orig, grad):
    """Forward: y = x (a copy)
    Backward: x̄ = ȳ"""
    return [grad]


register_linear_jvp("clone", "y = x (a copy)", "ẏ = ẋ (a copy)   (linear: the op on the tangent)")


def clone(input: Tensor) -> Tensor:
    return apply_op(_clone, (checks.tensor_arg("clone", "input", input),))


def contiguous(input: Tensor) -> Tensor:
    if input._data.flags.c_contiguous:
        return input
    return clone(input)


@register_op("astype", node_name="ToCopyBackward0")
def _astype(x, dtype):
    if x.dtype.kind == "c" and dtype.kind != "c":  # PyTorch's warning, not numpy's
        warnings.warn("Casting complex values to real discards the imaginary part", stacklevel=2)
        return x.real.astype(dtype)
    return x.astype(dtype)


@register_gradient("astype")
def astype_grad(orig, grad):
    """Forward: y = x.to(dtype)
    Backward: x̄ = ȳ.to(x.dtype)"""
    (x,) = orig.args
    if grad.dtype.kind == "c" and x.dtype.kind != "c":
        grad = grad.real  # a real x gets the real part (PyTorch's handle_r_to_c)
    return [astype(grad, x.dtype)]


@register_jvp("astype")
def astype_jvp(orig, tangents):
    """Forward: y = x.to(dtype)
    JVP: ẏ = ẋ.to(dtype)   (Re ẋ when a complex x becomes real)"""
    (dx,) = tangents
    if dx.dtype.kind == "c" and orig.attrs["dtype"].kind != "c":
        dx = dx.real
    return apply_op(_astype, (dx,), orig.attrs)


def astype(input: Tensor, dtype, copy: bool = False) -> Tensor:
    """``input`` in ``dtype``: ``input`` itself when it has it already, unless ``copy``."""
    dtype = checks.dtype_arg("astype", dtype)
    if input.dtype == dtype and not copy:
        return input
    return apply_op(_astype, (input,), {"dtype": dtype})


@register_op("to_device")
def _to_device(x, device, source):
    from ..core.backend import to_device

    return to_device(x, device)


@register_gradient("to_device")
def to_device_grad(orig, grad):
    """Forward: y = x.to(device)
    Backward: x̄ = ȳ.to(x.device)"""
    from ..core.backend import device_of

    source = orig.attrs["source"]
    return [grad if device_of(grad._data) == source else to_device(grad, source)]


register_linear_jvp(
    "to_device", "y = x.to(device)", "ẏ = ẋ.to(device)   (linear: the op on the tangent)"
)


def to_device(input: Tensor, device: str) -> Tensor:
    return apply_op(
        _to_device, (input,), {"device": device, "source": backend.device_of(input._data)}
    )


def meshgrid(*tensors, indexing: str | None = None) -> tuple:
    """Coordinate grids from 1-D tensors: output k holds ``tensors[k]`` along its own dim.

    Each output is an ``expand`` of its input (a view, differentiable). ``indexing="ij"``
    puts input k on dim k (PyTorch's default, with a warning when not given); ``"xy"``
    swaps the first two dims, as numpy's default does.
    """
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn(
            "torch.meshgrid: in an upcoming release, it will be required to pass the indexing "
            "argument.",
            UserWarning,
            stacklevel=2,
        )
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise ValueError(
            f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}'
        )
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError(
                f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t.ndim}D"
            )
    order = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) >= 2:
        order[0], order[1] = 1, 0
    shape = tuple(tensors[k].numel() for k in order)
    grids = []
    for k, t in enumerate(tensors):
        axis = order.index(k)
        placed = tuple(-1 if d == axis else 1 for d in range(len(tensors)))
        grids.append(expand(reshape(t, placed), shape))
    return tuple(grids)
