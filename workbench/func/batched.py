"""What a tensor is inside :func:`workbench.func.vmap`: one example's shape outside, the
whole batch inside.

A batched tensor is an ordinary :class:`~workbench.Tensor` whose ``_data`` is a
:class:`BatchedArray`: an array of the *logical* shape (one example's), holding no
values of its own, that carries the *physical* array (the batch dimension first) and
the vmap level it belongs to. Everything that reads a tensor's shape or dtype (the
Python side of every op, the autograd graph, the engine's shape checks) therefore sees
one example, as the function under vmap expects; every op reaches
:func:`workbench.record.dispatch.apply_op`, which hands a call with a batched input to
its batching rule (``batching.py``), and the rule runs the op on the physical arrays.

The stand-in holds no values: numpy functions and ufuncs on it raise, so a path that
reads a tensor's numbers without going through an op fails loudly instead of quietly
computing on the wrong data. The exceptions treat every example alike:
``np.ones_like`` and ``np.zeros_like`` (the engine seeds ``ȳ = 1`` with them, and a
constant is the same for every example); min, max, any and all over the whole array,
which the ops' argument checks use ("is every index in range?"): they read the whole
batch, so a bad value in any example raises the op's error; and ``astype``, ``copy``
and ``np.copyto``, which cast, copy and write the whole batch (type promotion, and
in-place ops: a write into every example).
"""

from __future__ import annotations

import numpy as np

from ..core.tensor import Tensor


class BatchedArray(np.ndarray):
    """The logical-shape stand-in of a batched tensor (see the module docstring)."""

    physical = None  # the batch of arrays: batch dimension first
    tensor = None  # the tensor of ``physical``: its history is on the outer levels' tape
    level = 0  # the vmap it belongs to: 1 for the outermost
    holds_values = False  # Tensor.numpy() and wb.tensor(x) refuse to read it

    def __array_finalize__(self, obj) -> None:
        # An array derived from a stand-in (a copy, a reshape) is not batched: its
        # ``physical`` stays None and using it in an op raises (see batching.unwrap).
        self.physical = None
        self.tensor = None
        self.level = 0

    def __array_function__(self, func, types, args, kwargs):
        if func in _WHOLE_BATCH and kwargs.get("axis") is None and len(args) == 1:
            return func(self.physical, **kwargs)
        if func is np.copyto:
            return _copy_into(*args, **kwargs)
        if func in (np.ones_like, np.zeros_like):
            shape = kwargs.get("shape") or self.shape
            dtype = kwargs.get("dtype") or self.dtype
            return np.ones(shape, dtype) if func is np.ones_like else np.zeros(shape, dtype)
        raise _raw_numpy(func.__name__)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "reduce" and ufunc in _WHOLE_BATCH_UFUNCS and kwargs.get("axis") is None:
            (array,) = inputs
            return getattr(ufunc, method)(array.physical, **kwargs)
        raise _raw_numpy(ufunc.__name__)

    def copy(self, order="C"):
        """A copy of the batch (an in-place op keeps its input's old values this way): a
        clone, on the tape of the levels outside the vmap as the batch is."""
        if self.physical is None:
            raise _raw_numpy("copy")
        clone = self.tensor.clone()
        return batched(clone._data, self.level, clone)

    @property
    def on_outer_tape(self) -> bool:
        """Whether the batch is on the tape of the levels outside the vmap: an in-place
        op must then record its write there too (``ops/inplace.py``). Under nested vmaps
        the batch is itself a batched tensor, on the tape of its own outer levels."""
        batch = self.tensor
        return batch.requires_grad or getattr(batch._data, "on_outer_tape", False)

    def detached(self):
        """The stand-in of the same batch without its history on the outer tape."""
        return batched(self.physical, self.level, self.tensor.detach())

    def astype(self, dtype, *args, **kwargs):
        """A cast treats every example alike: the batch is cast (type promotion casts a
        constant operand this way, ``x + randint(...)``)."""
        if self.physical is None:
            raise _raw_numpy("astype")
        return batched(self.physical.astype(dtype, *args, **kwargs), self.level)

    def item(self, *args):
        raise RuntimeError(
            "vmap: It looks like you're calling .item() on a Tensor. We don't support vmap "
            "over calling .item() on a Tensor, please try to rewrite what you're doing with "
            "other operations."
        )

    def tolist(self):
        raise RuntimeError("vmap: a batched tensor cannot become a Python list inside vmap")

    def __bool__(self) -> bool:
        raise RuntimeError(
            "vmap: It looks like you're attempting to use a Tensor in some data-dependent "
            "control flow. We don't support that yet, please shout over at "
            "https://github.com/pytorch/functorch/issues/257 ."
        )

    __float__ = __int__ = __index__ = item


_WHOLE_BATCH = (np.min, np.max, np.amin, np.amax, np.any, np.all)
_WHOLE_BATCH_UFUNCS = (np.minimum, np.maximum, np.logical_or, np.logical_and)


def _copy_into(destination, source, **kwargs) -> None:
    """An in-place op's write (``np.copyto``) under vmap: into every example of a batched
    destination, from the same example of a batched source, or from one unbatched value
    for all. Writing a batch into an unbatched tensor is refused, as PyTorch refuses it."""
    if type(destination) is not BatchedArray or destination.physical is None:
        raise RuntimeError(
            "vmap: an in-place operation would write a batched value into a tensor that is "
            "not batched (each example would need its own copy of it): write out of place"
        )
    if type(source) is BatchedArray:
        if source.level != destination.level:
            raise RuntimeError(
                "vmap: an in-place write between tensors of different vmap levels has no "
                "batching rule: write out of place"
            )
        source = source.tensor
    else:
        source = Tensor._make(np.asarray(source))
    # An in-place copy on the batch: on its tape (the levels outside the vmap), the batch
    # now ends with the write, as the batched tensor's own history does.
    destination.tensor.copy_(source)


def _raw_numpy(name: str) -> RuntimeError:
    return RuntimeError(
        f"vmap: numpy's {name} was called on a batched tensor's data outside an op; only "
        "workbench ops can run under vmap"
    )


class NoValues(np.ndarray):
    """The one-element buffer behind every stand-in: ``np.asarray(stand_in)`` drops the
    BatchedArray type but keeps this one as its ``.base``, so :func:`read_from_batch`
    still sees where such an array came from."""


def read_from_batch(array) -> bool:
    """Whether ``array`` is a stand-in, or an array numpy made from one (its numbers
    would be placeholders: an op given one as an argument must refuse it)."""
    while isinstance(array, np.ndarray):
        if isinstance(array, (BatchedArray, NoValues)):
            return True
        array = array.base
    return False


_BUFFERS: dict = {}


def _no_values(dtype) -> NoValues:
    """The read-only one-element buffer behind the stand-ins of ``dtype`` (shared: it is
    never read as a value)."""
    buffer = _BUFFERS.get(dtype)
    if buffer is None:
        buffer = np.zeros((), dtype).view(NoValues)
        buffer.flags.writeable = False
        _BUFFERS[dtype] = buffer
    return buffer


def batched(physical: np.ndarray, level: int, tensor: Tensor | None = None) -> BatchedArray:
    """The stand-in for a batch ``physical`` (batch dimension first) at vmap ``level``."""
    shape = physical.shape[1:]
    # Every element is the buffer's one element (strides 0), as np.broadcast_to would
    # make it, built directly: this runs once per batched op.
    stand_in = np.ndarray.__new__(
        BatchedArray, shape, physical.dtype, _no_values(physical.dtype), 0, (0,) * len(shape)
    )
    stand_in.flags.writeable = False
    stand_in.physical = physical
    stand_in.tensor = Tensor._make(physical) if tensor is None else tensor
    stand_in.level = level
    return stand_in


def level_of(x) -> int:
    """The vmap level of ``x``'s batch dimension; 0 for a tensor that is not batched."""
    if isinstance(x, Tensor) and type(x._data) is BatchedArray:
        if x._data.physical is None:
            raise RuntimeError(
                "vmap: a tensor made from a batched tensor's data outside an op (a copy "
                "or a reshape of its array) was passed to an op"
            )
        return x._data.level
    return 0


def physical(x: Tensor) -> Tensor:
    """The batch behind the batched tensor ``x``: a tensor with the batch dimension first
    (itself batched at a lower level under nested vmaps), with its history on the tape of
    the levels outside the vmap."""
    return x._data.tensor


def wrap(physical_tensor: Tensor, level: int) -> Tensor:
    """A batched tensor at ``level`` whose examples are the slices of ``physical_tensor``
    along its first dimension."""
    return Tensor._make(batched(physical_tensor._data, level, physical_tensor))
