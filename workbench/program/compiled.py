"""``wb.compile``: PyTorch's ``torch.compile``, made of this package's parts.

On the first call with each input signature (shapes, dtypes, requires_grad of the tensor
arguments, the other arguments' values, grad mode, and for a module its parameters and
``training``) the function is traced into a program; that call and every later one with
the same signature run the program with the flat runner. Where inputs or parameters
require grad, the adjoint program is derived once and split in two: its forward part
runs now and also returns what backward needs; its backward part runs when the eager
engine reaches the one node (a custom ``Function``) that wraps the compiled call.

Tracing may refuse (data-dependent control flow, in-place writes, random draws): the
function then runs eagerly for that signature, after one printed note;
``fullgraph=True`` makes the refusal an error instead, as in PyTorch.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

import numpy as np

from ..autograd.function import Function
from ..core import state
from ..core.tensor import Tensor
from ..record import forward_ad, grad_mode
from .adjoint import gradient
from .ir import Program
from .runner import Runner
from .simplify import eliminate_dead_code
from .tracer import TraceError, trace

EAGER = "eager"  # a signature whose tracing was refused: it runs eagerly


def compile(  # noqa: A001  (torch.compile's name)
    model: Callable | None = None,
    *,
    fullgraph: bool = False,
    dynamic=None,
    backend="inductor",
    mode=None,
    options=None,
    disable: bool = False,
):
    """``torch.compile``: a compiled ``model`` (or, as ``@compile(...)``, a decorator).

    ``fullgraph=True``: a function that cannot be traced whole raises
    :class:`TraceError` instead of running eagerly. ``dynamic``, ``backend``, ``mode``
    and ``options`` are accepted and change nothing (there is one backend: the runner);
    ``disable=True`` gives ``model`` back as it is.
    """
    if model is None:
        return lambda fn: compile(fn, fullgraph=fullgraph, disable=disable)
    if disable:
        return model
    return Compiled(model, fullgraph)


class Compiled:
    """A compiled function or module: call it as you would call the original."""

    def __init__(self, fn: Callable, fullgraph: bool = False) -> None:
        self.fn = self._orig_mod = fn  # (_orig_mod: PyTorch's name for the model compiled)
        self.fullgraph = fullgraph
        self.cache: dict = {}
        self.modules: list | None = None  # (name, module) whose parameters fn reads
        self.noted = False
        functools.update_wrapper(self, fn, updated=())

    def __call__(self, *args, **kwargs):
        if kwargs or not any(isinstance(a, Tensor) for a in args) or _inside_a_transform():
            return self.fn(*args, **kwargs)  # keyword arguments, no tensors: eager too
        key = self.signature(args)
        entry = self.cache.get(key)
        if entry is None:
            entry = self.cache[key] = self.build(args)
        return self.fn(*args) if entry is EAGER else entry(args)

    def __getattr__(self, name: str):  # a compiled module still has its parameters...
        return getattr(self.__dict__["fn"], name)

    def parameters_named(self) -> list:
        """``(name, parameter)`` of the module compiled, or of the modules the function
        reads by name (``model`` in ``lambda x: loss(model(x))``: ``model.0.weight``)."""
        if self.modules is None:
            self.modules = modules_read(self.fn)
        return [
            (f"{var}.{name}" if var else name, p)
            for var, module in self.modules
            for name, p in module.named_parameters()
        ]

    def signature(self, args: tuple) -> tuple:
        parts = [grad_mode.is_grad_enabled(), getattr(self.fn, "training", None)]
        for a in args:
            if isinstance(a, Tensor):
                parts.append((a._data.shape, a._data.dtype, a._requires_grad))
            else:
                parts.append(_literal_key(a))
        for name, p in self.parameters_named():
            parts.append((name, id(p), p._data.shape, p._data.dtype, p._requires_grad))
        return tuple(parts)

    def build(self, args: tuple):
        """Trace for this signature; EAGER (after one note) where tracing refuses."""
        captured = {id(p): (p, name) for name, p in self.parameters_named()}
        forward = getattr(self.fn, "forward", self.fn)
        name = getattr(self.fn, "__name__", None) or type(self.fn).__name__
        try:
            program = trace(self.fn, *args, captured_names=captured, name=name)
            program = _named_like(program, forward, args)
            return CompiledCall(program)
        except TraceError as err:
            if self.fullgraph:
                raise
            if not self.noted:
                print(f"wb.compile: {name} runs eagerly for these inputs: {err}")
                self.noted = True
            return EAGER


def _inside_a_transform() -> bool:
    """A trace (its tracer must see the ops), a ``wb.func`` transform or a dual level
    (their tangents and batches ride on the ops) is running: the compiled program, which
    carries none of them, must not run; the function runs eagerly instead."""
    return bool(
        state.tracing.tracer or state.in_use.vmaps or state.transforms.running or forward_ad.LEVELS
    )


def modules_read(fn: Callable) -> list:
    """``[(variable name, module)]``: ``fn`` itself if it is a module (name ""), else the
    modules among the globals and closure variables its code names."""
    if callable(getattr(fn, "named_parameters", None)):
        return [("", fn)]
    try:
        seen = inspect.getclosurevars(fn)
    except (TypeError, ValueError):
        return []
    return [
        (var, obj)
        for var, obj in {**seen.globals, **seen.nonlocals}.items()
        if callable(getattr(obj, "named_parameters", None))
    ]


def _literal_key(a):
    try:
        hash(a)
        return (type(a).__name__, a)
    except TypeError:
        return ("object", id(a))


def _named_like(program: Program, forward: Callable, args: tuple) -> Program:
    """A module's inputs are named after its ``forward``'s parameters."""
    from .tracer import argument_names

    names = argument_names(forward, len(args))
    tensor_names = [n for n, a in zip(names, args) if isinstance(a, Tensor)]
    for value, name in zip(program.inputs, tensor_names):
        value.name = name
    return program


class CompiledCall:
    """One signature's programs: the forward alone, or the adjoint split in two."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.forward = Runner(program)
        self.diff = [v for v in program.inputs + program.captured if v.requires_grad]
        wants_grad = grad_mode.is_grad_enabled() and any(
            v is not None and v.requires_grad for v in program.outputs
        )
        self.split = (
            _split(eliminate_dead_code(gradient(program, self.diff))) if wants_grad else None
        )

    def __call__(self, args: tuple):
        tensors = [a for a in args if isinstance(a, Tensor)]
        if self.split is None:
            outs = self.forward(*tensors)
            return outs
        params = [v.tensor for v in self.program.captured if v.requires_grad]
        outs = CompiledFunction.apply(self, *tensors, *params)
        return outs[0] if self.program.single_output else tuple(outs)


def _split(adjoint: Program) -> tuple:
    """(forward runner, backward runner, number of outputs, the outputs' indices that
    take a ȳ) of an adjoint: the forward part also returns the values backward reads."""
    count = adjoint.forward_count
    forward_values = {b.out for b in adjoint.bindings[:count]}
    backward = adjoint.bindings[count:]
    n_out = adjoint.forward_outputs
    saved = []
    for v in [v for b in backward for v in b.inputs()] + adjoint.outputs[n_out:]:
        if v in forward_values and v not in saved:
            saved.append(v)
    inputs = [v for v in adjoint.inputs if v.kind == "input"]
    seeds = [v for v in adjoint.inputs if v.kind == "seed"]
    fwd = Program(
        adjoint.name,
        inputs,
        adjoint.captured,
        adjoint.bindings[:count],
        adjoint.outputs[:n_out] + saved,
        single_output=False,
    )
    bwd = Program(
        adjoint.name,
        inputs + saved + seeds,
        adjoint.captured,
        backward,
        adjoint.outputs[n_out:],
        single_output=False,
    )
    return Runner(fwd), Runner(bwd), n_out, adjoint.seed_outputs


class CompiledFunction(Function):
    """The one eager node of a compiled call: forward and backward are programs."""

    @staticmethod
    def forward(ctx, call: CompiledCall, *tensors):
        fwd, _, n_out, _ = call.split
        outs = fwd.run_arrays([t._data for t in tensors[: len(call.program.inputs)]])
        ctx.save_for_backward(*tensors)  # inputs and parameters: an in-place change is caught
        ctx.call, ctx.saved = call, outs[n_out:]
        return tuple(Tensor._make(a) for a in outs[:n_out])

    @staticmethod
    def backward(ctx, *grads):
        if grad_mode.is_grad_enabled():
            raise RuntimeError(
                "wb.compile: a compiled function's backward is not differentiable again "
                "(create_graph=True), as with torch.compile: call the function uncompiled "
                "for gradients of gradients"
            )
        call = ctx.call
        tensors = ctx.saved_tensors  # checks that no input or parameter changed since
        arrays = [t._data for t in tensors[: len(call.program.inputs)]]
        _, bwd, n_out, seed_outputs = call.split
        seeds = []
        for index in seed_outputs:
            g = grads[index]
            out = call.program.outputs[index]
            seeds.append(np.zeros(out.shape, out.dtype) if g is None else g._data)
        arrays = bwd.run_arrays(arrays + ctx.saved + seeds)
        by_value = dict(zip(map(id, call.diff), arrays))
        ordered = call.program.inputs + [v for v in call.program.captured if v.requires_grad]
        return (None,) + tuple(
            None if by_value.get(id(v)) is None else Tensor._make(by_value[id(v)]) for v in ordered
        )
