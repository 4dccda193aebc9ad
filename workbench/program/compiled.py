"""``wb.compile``: PyTorch's ``torch.compile``, made of this package's parts.

On the first call with each input signature (shapes, dtypes, requires_grad of the tensor
arguments, the other arguments' values, grad mode, and for a module its parameters and
``training``) the function is traced into a program; that call and every later one with
the same signature run the program with the flat runner. Where inputs or parameters
require grad, the adjoint program is derived once and split in two: its forward part
runs now and also returns what backward needs; its backward part runs when the eager
engine reaches the one node (a custom ``Function``) that wraps the compiled call.

A training step (forward, ``loss.backward()``, ``opt.step()``, as ``@torch.compile``
users write it) traces into one program: its backward and the optimizer's update are
bindings, and each run ends by writing the parameters and the optimizer's state in place
and setting ``.grad`` (see tracer.py). The signature then also holds each optimizer's
settings and state (which tensors, the step count if it is a number): the first step,
which makes the state, runs as traced and leaves a new signature; the second is traced
again and kept. The trace of a step *is* that call's step (running its program as well
would take two); its outputs come back without a graph: the backward inside used it.
Python side effects of the function (a print, a list append) happen when it is traced.

Tracing may refuse (data-dependent control flow, an in-place write it cannot replay,
random draws): whatever the trace changed (parameters, buffers, ``.grad``, the
optimizer's state) is put back, and the function runs eagerly for that signature, after
one printed note; ``fullgraph=True`` makes the refusal an error instead, as in PyTorch.
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
from .tracer import TraceError, trace_and_run

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
        self.optimizers: list | None = None  # (name, optimizer) fn reads
        self.noted = False
        functools.update_wrapper(self, fn, updated=())

    def __call__(self, *args, **kwargs):
        if kwargs or not any(isinstance(a, Tensor) for a in args) or _inside_a_transform():
            return self.fn(*args, **kwargs)  # keyword arguments, no tensors: eager too
        key = self.signature(args)
        entry = self.cache.get(key)
        if entry is EAGER:
            return self.fn(*args)
        if entry is not None and entry.forward.holds():
            return entry(args)
        return self.trace_and_call(key, args)

    def __getattr__(self, name: str):  # a compiled module still has its parameters...
        return getattr(self.__dict__["fn"], name)

    def parameters_named(self) -> list:
        """``(name, parameter)`` of the module compiled, or of the modules the function
        reads by name (``model`` in ``lambda x: loss(model(x))``: ``model.0.weight``), then
        the other parameters of the optimizers it reads (``opt.param3``)."""
        if self.modules is None:
            self.read = variables_read(self.fn)
            self.modules = having(self.read, "named_parameters")
            self.optimizers = having(self.read, "param_groups")
        named = [
            (f"{var}.{name}" if var else name, p)
            for var, module in self.modules
            for name, p in module.named_parameters()
        ]
        known = {id(p) for _, p in named}
        for var, opt in self.optimizers:
            params = [p for group in opt.param_groups for p in group["params"]]
            named += [(f"{var}.param{i}", p) for i, p in enumerate(params) if id(p) not in known]
        return named

    def tensors_named(self) -> dict:
        """``{id(tensor): name}`` of the tensors the function names (``counter``) and of
        the optimizers' state (``fc1.weight.exp_avg``): captured by these names if read."""
        names = {id(p): name for name, p in self.parameters_named()}
        named = {id(t): var for var, t in self.read if isinstance(t, Tensor)}
        named.update(
            (id(value), f"{names.get(id(p), 'p')}.{key}")
            for _, opt in self.optimizers
            for p, per_param in opt.state.items()
            for key, value in per_param.items()
            if isinstance(value, Tensor)
        )
        return named

    def signature(self, args: tuple) -> tuple:
        parts = [grad_mode.is_grad_enabled(), getattr(self.fn, "training", None)]
        for a in args:
            if isinstance(a, Tensor):
                parts.append((a._data.shape, a._data.dtype, a._requires_grad))
            else:
                parts.append(_literal_key(a))
        for name, p in self.parameters_named():
            parts.append((name, id(p), p._data.shape, p._data.dtype, p._requires_grad))
        parts += [optimizer_key(opt) for _, opt in self.optimizers]
        return tuple(parts)

    def trace_and_call(self, key: tuple, args: tuple):
        """Trace for this signature and answer this call. A training step's trace is its
        run; it is kept unless it changed the signature (the first step makes the state).
        Where tracing refuses: put back what it changed, note once, run eagerly."""
        captured = {id(p): (p, name) for name, p in self.parameters_named()}
        forward = getattr(self.fn, "forward", self.fn)
        name = getattr(self.fn, "__name__", None) or type(self.fn).__name__
        before = Snapshot(self.read, self.modules, self.optimizers)
        try:
            program, results = trace_and_run(
                self.fn, *args, captured_names=captured, name=name, names=self.tensors_named()
            )
            call = CompiledCall(_named_like(program, forward, args))
        except TraceError as err:
            before.restore()
            if self.fullgraph:
                raise
            if not self.noted:
                print(f"wb.compile: {name} runs eagerly for these inputs: {err}")
                self.noted = True
            self.cache[key] = EAGER
            return self.fn(*args)
        if not program.has_effects:
            self.cache[key] = call
            return call(args)
        if self.signature(args) == key:
            self.cache[key] = call
        outs = tuple(Tensor._make(t._data) for t in results)  # the graph: used by backward
        return outs[0] if program.single_output else outs


def _inside_a_transform() -> bool:
    """A trace (its tracer must see the ops), a ``wb.func`` transform or a dual level
    (their tangents and batches ride on the ops) is running: the compiled program, which
    carries none of them, must not run; the function runs eagerly instead."""
    return bool(
        state.tracing.tracer or state.in_use.vmaps or state.transforms.running or forward_ad.LEVELS
    )


def variables_read(fn: Callable) -> list:
    """``[(variable name, object)]``: ``fn`` itself if it is a module (name ""), else the
    globals and closure variables its code names."""
    if callable(getattr(fn, "named_parameters", None)):
        return [("", fn)]
    try:
        seen = inspect.getclosurevars(fn)
    except (TypeError, ValueError):
        return []
    return list({**seen.globals, **seen.nonlocals}.items())


def having(variables: list, attribute: str) -> list:
    """The variables whose objects have ``attribute`` (modules: ``named_parameters``,
    optimizers: ``param_groups``); classes are not objects of that kind."""
    return [
        (var, obj)
        for var, obj in variables
        if getattr(obj, attribute, None) is not None and not isinstance(obj, type)
    ]


def optimizer_key(opt) -> tuple:
    """An optimizer's part of a signature: its groups' parameters and settings (a traced
    update has them as literals) and its state (which tensors; numbers by value)."""
    groups = tuple(
        (
            tuple(map(id, group["params"])),
            tuple((k, _literal_key(v)) for k, v in sorted(group.items()) if k != "params"),
        )
        for group in opt.param_groups
    )
    state = tuple(
        (id(p), tuple((k, _state_key(v)) for k, v in sorted(per_param.items())))
        for p, per_param in opt.state.items()
    )
    return (id(opt), groups, state)


def _state_key(value):
    if isinstance(value, Tensor):
        return (id(value), value._data.shape, value._data.dtype)
    return _literal_key(value)


class Snapshot:
    """What a trace may change, kept to be put back if it refuses: the tensors the
    function names, the modules' parameters and buffers (values, ``.grad``), the
    optimizers' parameters and state."""

    def __init__(self, variables: list, modules: list, optimizers: list) -> None:
        tensors = {id(t): t for _, t in variables if isinstance(t, Tensor)}
        for _, module in modules:
            tensors.update((id(p), p) for _, p in module.named_parameters())
            tensors.update((id(b), b) for _, b in getattr(module, "named_buffers", list)())
        self.optimizers = []
        for _, opt in optimizers:
            for group in opt.param_groups:
                tensors.update((id(p), p) for p in group["params"])
            for per_param in opt.state.values():
                tensors.update((id(v), v) for v in per_param.values() if isinstance(v, Tensor))
            state = {p: dict(per_param) for p, per_param in opt.state.items()}
            self.optimizers.append((opt, state, opt.__dict__.get("_opt_called")))
        self.tensors = [(t, t._data.copy(), t._grad) for t in tensors.values()]

    def restore(self) -> None:
        for tensor, values, grad in self.tensors:
            np.copyto(tensor._data, values)
            tensor._grad = grad
        for opt, per_param, called in self.optimizers:
            opt.state.clear()
            opt.state.update(per_param)
            opt.__dict__.pop("_opt_called", None)
            if called is not None:
                opt._opt_called = called


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
        wants_grad = (
            grad_mode.is_grad_enabled()
            and not program.has_effects  # a training step: its backward is inside
            and any(v is not None and v.requires_grad for v in program.outputs)
        )
        self.split = (
            _split(eliminate_dead_code(gradient(program, self.diff))) if wants_grad else None
        )

    def __call__(self, args: tuple):
        tensors = [a for a in args if isinstance(a, Tensor)]
        if self.split is None:
            return self.forward(*tensors)
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
