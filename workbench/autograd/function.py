"""Custom autograd Functions, with PyTorch's API.

::

    class Exp(Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y

    Exp.apply(x)

The ``ctx`` a Function sees is its backward node (:class:`BackwardFunction`), so
what it saves lives exactly as long as the graph.
"""

from __future__ import annotations

import contextlib
import functools
import warnings
import weakref

from ..core import backend, state
from ..core.tensor import Tensor, is_differentiable_dtype
from ..record import dispatch, forward_ad, grad_mode
from ..record.graph import (
    FREED,
    Node,
    SavedTensor,
    edge_of,
    forward_stack,
    saved_memory_packed,
    saved_memory_release,
    set_history,
)


class BackwardFunction(Node):
    """The node a custom Function records; also the ``ctx`` its forward/backward receive."""

    __slots__ = (
        "_cls",
        "to_save",
        "_saved",
        "needs_input_grad",
        "non_differentiable",
        "materialize_grads",
        "dirty_tensors",
        "input_meta",
        "output_meta",
        "num_outputs",
        "saved_for_forward",
        "_in_jvp",
    )

    def __init__(self, cls) -> None:
        super().__init__()
        self._cls = cls
        self.to_save = ()
        self._saved = None
        self.needs_input_grad = ()
        self.non_differentiable = ()
        self.materialize_grads = True
        self.dirty_tensors = ()
        self.input_meta = ()
        self.output_meta = ()
        self.num_outputs = 1
        self.saved_for_forward = ()
        self._in_jvp = False

    def name(self) -> str:
        return f"{self._cls.__name__}Backward"

    @property
    def formula(self) -> str:
        return (self._cls.__doc__ or "").strip().splitlines()[0] if self._cls.__doc__ else ""

    # ctx API
    def save_for_backward(self, *tensors) -> None:
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(
                    f"save_for_backward can only save variables, but argument {i} is of type "
                    f"{type(t).__name__}"
                )
        self.to_save = tensors

    def save_for_forward(self, *tensors) -> None:
        """Keep ``tensors`` for the Function's ``jvp`` (where ``saved_tensors`` gives them)."""
        self.saved_for_forward = tensors

    @property
    def saved_tensors(self) -> tuple:
        if self._in_jvp:
            return tuple(self.saved_for_forward)
        if self._saved is None:
            return tuple(self.to_save)  # inside forward, before outputs are wrapped
        return tuple(
            None if s is None else s.unpack(self, f"saved tensor {i}")
            for i, s in enumerate(self._saved)
        )

    def mark_non_differentiable(self, *tensors) -> None:
        self.non_differentiable = tensors

    def mark_dirty(self, *tensors) -> None:
        self.dirty_tensors = tensors

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = value

    # engine API
    def apply(self, grad_outputs: list) -> list:
        if self.materialize_grads and any(g is None for g in grad_outputs):
            # zeros on the device of a gradient that did arrive (a graph lives on one device)
            xp = backend.xp(next(g for g in grad_outputs if g is not None)._data)
            grad_outputs = [
                Tensor._make(xp.zeros(shape, dtype)) if g is None and shape is not None else g
                for g, (shape, dtype) in zip(grad_outputs, self.output_meta)
            ]
        result = self._cls.backward(self, *grad_outputs)
        if not isinstance(result, tuple):
            result = (result,)
        return self._check_count(list(result))

    def _check_count(self, grads: list) -> list:
        expected = len(self.next_functions)
        if len(grads) < expected:
            raise RuntimeError(
                f"function {self.name()} returned an incorrect number of gradients "
                f"(expected {expected}, got {len(grads)})"
            )
        extra = grads[expected:]
        if any(g is not None for g in extra):
            raise RuntimeError(
                f"function {self.name()} returned an incorrect number of gradients "
                f"(expected {expected}, got {len(grads)})"
            )
        grads = grads[:expected]
        for i, g in enumerate(grads):
            if g is not None and self.input_meta[i] is None:
                raise RuntimeError(
                    f"function {self.name()} returned a gradient different than None at "
                    f"position {i + 1}, but the corresponding forward input was not a Variable"
                )
        return grads

    def release(self) -> None:
        if self._saved:
            released = [
                (str(i), s, s.drop()) for i, s in enumerate(self._saved) if type(s) is SavedTensor
            ]
            self._saved = tuple(None if s is None else FREED for s in self._saved)
            saved_memory_release(self, released)

    def was_freed(self) -> bool:
        return any(s is FREED for s in self._saved or ())


class FunctionMeta(type):
    def __init__(cls, name, bases, attrs) -> None:
        super().__init__(name, bases, attrs)


class Function(metaclass=FunctionMeta):
    """Base class of custom differentiable operations: subclass, then call ``.apply``."""

    generate_vmap_rule = False  # under wb.func.vmap: batch the forward's own ops

    def __init__(self, *args, **kwargs) -> None:
        warnings.warn(
            f"{self.__class__} should not be instantiated. Methods on autograd functions are "
            "all static, so you should invoke them on the class itself. Instantiating an "
            "autograd function will raise an error in a future version of PyTorch.",
            DeprecationWarning,
            stacklevel=2,
        )

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please use "
            "new-style autograd function with static forward method. (Example: "
            "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)"
        )

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError(
            "You must implement the forward function for custom autograd.Function."
        )

    @staticmethod
    def setup_context(ctx, inputs, output):
        return _NO_SETUP

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom "
            "autograd.Function to use it with backward mode AD."
        )

    @staticmethod
    def jvp(ctx, *tangents):
        """Forward mode's rule: one tangent per input in (zeros for a tensor input that
        has none, None for a non-tensor), one per output out."""
        raise NotImplementedError(
            "You must implement the jvp function for custom autograd.Function to use it "
            "with forward mode AD."
        )

    @classmethod
    def apply(cls, *args, **kwargs):
        if state.in_use.tracers and state.tracing.tracer is not None:
            state.tracing.tracer.refuse_backward_code(f"the custom Function {cls.__name__}")
        if state.transforms.running:
            _check_transformable(cls)
        if state.in_use.vmaps:  # a batched input: func/batching.py runs it on the batch too
            batched = dispatch.vmap_function_call(cls, args, kwargs)
            if batched is not None:
                return batched
        ctx = BackwardFunction(cls)
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
        return finish(cls, ctx, args, run_forward(cls, ctx, args, kwargs))


def run_forward(cls, ctx: BackwardFunction, args: tuple, kwargs: dict):
    """The Function's forward (and setup_context): nothing in it is recorded."""
    dual = bool(forward_ad.LEVELS)  # forward mode: tangents come from cls.jvp
    with grad_mode.no_grad(), forward_ad.suspended() if dual else contextlib.nullcontext():
        if cls.setup_context is Function.setup_context:
            return cls.forward(ctx, *args, **kwargs)
        outputs = cls.forward(*args, **kwargs)
        cls.setup_context(ctx, args, outputs)
        return outputs


def finish(cls, ctx: BackwardFunction, args: tuple, outputs):
    """The outputs of the Function's call, with ``ctx`` as their node when an input needs
    a gradient (``ctx.needs_input_grad``: the inputs that get an edge), and their
    tangents from ``cls.jvp`` inside a dual level."""
    recording = grad_mode.is_grad_enabled() and any(ctx.needs_input_grad)
    single = not isinstance(outputs, tuple)
    outs = (outputs,) if single else outputs
    outs = _wrap_outputs(ctx, args, outs, recording)
    if forward_ad.LEVELS:
        _push_tangents(cls, ctx, args, outs)
    return outs[0] if single else outs


_NO_SETUP = object()


def _check_transformable(cls) -> None:
    """Under a ``wb.func`` transform, PyTorch's rules for a Function: a
    ``setup_context`` staticmethod (forward without ctx), and under vmap a ``vmap``
    staticmethod or ``generate_vmap_rule = True``. (The workbench batches the forward's
    own ops in both cases, which is what a generated rule does.)"""
    if cls.setup_context is Function.setup_context:
        raise RuntimeError(
            "In order to use an autograd.Function with functorch transforms (vmap, grad, "
            "jvp, jacrev, ...), it must override the setup_context staticmethod. For more "
            "details, please see https://pytorch.org/docs/main/notes/extending.func.html"
        )
    if state.transforms.levels and not (cls.generate_vmap_rule or hasattr(cls, "vmap")):
        raise RuntimeError(
            f"You tried to vmap over {cls.__name__}, but it does not have vmap support. "
            "Please override and implement the vmap staticmethod or set "
            "generate_vmap_rule=True. For more details, please see "
            "https://pytorch.org/docs/main/notes/extending.func.html"
        )


def _push_tangents(cls, ctx: BackwardFunction, args: tuple, outputs: tuple) -> None:
    """Forward mode through a Function: its outputs' tangents are what its ``jvp`` says
    (never its forward's own ops: a straight-through estimator's ``round`` has tangent 0,
    its rule says 1), as in PyTorch; without a ``jvp``, PyTorch's NotImplementedError.
    One call per dual level in use, outermost first, as ``forward_ad.push_tangent``, but
    each with every level out of use: PyTorch runs the ``jvp`` with forward mode off, so
    the tangent it gives carries none of an outer level (forward over forward through a
    Function gives 0 for the second derivative, as in PyTorch)."""
    for level in tuple(forward_ad.LEVELS):
        _push_tangents_at(level, cls, ctx, args, outputs)


def _push_tangents_at(level, cls, ctx: BackwardFunction, args: tuple, outputs: tuple) -> None:
    tangents = [forward_ad.tangent_of(a, level) if isinstance(a, Tensor) else None for a in args]
    if all(t is None for t in tangents):
        return
    filled = [forward_ad.tangent_or_zeros(a, t) for a, t in zip(args, tangents)]
    ctx._in_jvp = True
    try:
        with forward_ad.suspended():
            result = cls.jvp(ctx, *filled)
    finally:
        ctx._in_jvp = False
    result = result if isinstance(result, tuple) else (result,)
    if len(result) != len(outputs):
        raise RuntimeError(
            "Function's jvp returned an invalid number of forward gradients (expected "
            f"{len(outputs)} but got {len(result)})"
        )
    for out, tangent in zip(outputs, result):
        if isinstance(out, Tensor) and tangent is not None:
            forward_ad.make_tangent(out, forward_ad.checked_tangent(out, tangent), level)


def _wrap_outputs(ctx: BackwardFunction, args: tuple, outputs: tuple, recording: bool):
    dirty = {id(t) for t in ctx.dirty_tensors}
    input_ids = {id(a) for a in args if isinstance(a, Tensor)}
    for t in ctx.dirty_tensors:
        if not any(t is o for o in outputs):
            raise RuntimeError(
                "Some elements marked as dirty during the forward method were not returned as "
                "output. The inputs that are modified inplace must all be outputs of the "
                "Function."
            )
    non_diff = {id(t) for t in ctx.non_differentiable}
    # The edges to the inputs, taken before any output is rewired: an input marked dirty is
    # also an output, and its old history is what this node's gradient must flow into.
    edges = _input_edges(ctx, args) if recording else ()
    wrapped = []
    for nr, out in enumerate(outputs):
        if not isinstance(out, Tensor):
            wrapped.append(out)
            continue
        if id(out) in input_ids and id(out) not in dirty:
            alias = Tensor._make(out._data)
            alias._version_ref = out._version_ref
            out = alias
        elif id(out) in dirty:
            _check_dirty_leaf(out)
            out._bump_version()
        if recording and id(out) not in non_diff and is_differentiable_dtype(out.dtype):
            set_history(out, ctx, nr)
        elif id(out) in non_diff:
            out._requires_grad = False
        wrapped.append(out)
    if recording:
        _record(ctx, args, edges, wrapped)
    return tuple(wrapped)


def _check_dirty_leaf(t: Tensor) -> None:
    if t._grad_fn is None and t._requires_grad and grad_mode.is_grad_enabled():
        raise RuntimeError(
            "a leaf Variable that requires grad is being used in an in-place operation."
        )


def _input_edges(ctx: BackwardFunction, args: tuple) -> tuple:
    return tuple(edge_of(a) if need else (None, 0) for a, need in zip(args, ctx.needs_input_grad))


def _record(ctx: BackwardFunction, args: tuple, edges: tuple, outputs: list) -> None:
    ctx.next_functions = edges
    ctx.input_meta = tuple((a.shape, a.dtype) if isinstance(a, Tensor) else None for a in args)
    ctx.num_outputs = len(outputs)
    ctx.output_meta = tuple(
        (o.shape, o.dtype) if isinstance(o, Tensor) else (None, None) for o in outputs
    )
    output_index = {id(o): i for i, o in enumerate(outputs) if isinstance(o, Tensor)}
    saved = []
    for t in ctx.to_save:
        if t is None:
            saved.append(None)
            continue
        nr = output_index.get(id(t))
        is_output = nr is not None and t._grad_fn is ctx
        saved.append(SavedTensor(t, is_output=is_output, output_nr=nr or 0))
    ctx._saved = tuple(saved)
    ctx.to_save = ()
    if saved:
        saved_memory_packed(ctx, sum(s.added for s in saved if s is not None))
    first = next((o for o in outputs if isinstance(o, Tensor)), None)
    if first is not None:
        ctx.metadata["output"] = weakref.ref(first)
    if state.anomaly.enabled:  # anomaly mode: remember where this node was made
        ctx._forward_stack = forward_stack()


class _OnceDifferentiableBackward(Node):
    """Stands in the graph of a gradient computed by a @once_differentiable backward."""

    __slots__ = ("_name",)

    def __init__(self, next_functions: tuple, name: str) -> None:
        super().__init__()
        self.next_functions = next_functions
        self._name = name

    def name(self) -> str:
        return "DelayedError"

    def apply(self, grad_outputs: list) -> list:
        raise RuntimeError(
            "trying to differentiate twice a function that was marked with @once_differentiable"
            f" ({self._name})"
        )


def once_differentiable(backward):
    """Mark a custom backward as not differentiable itself (it may use raw arrays)."""

    @functools.wraps(backward)
    def wrapper(ctx, *grads):
        with grad_mode.no_grad():
            outputs = backward(ctx, *grads)
        if not grad_mode.is_grad_enabled():
            return outputs
        if not any(isinstance(g, Tensor) and g._requires_grad for g in grads):
            return outputs
        edges = tuple(edge_of(g) for g in grads if isinstance(g, Tensor) and g._requires_grad)
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        for out in outs:
            if isinstance(out, Tensor):
                set_history(out, _OnceDifferentiableBackward(edges, ctx.name()))
        return outs[0] if single else outs

    return wrapper
