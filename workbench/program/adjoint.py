"""The Gradient transform (TVM Relax's ``relax.transform.Gradient``): a program in, its
adjoint program out.

The adjoint is the forward bindings followed by the backward bindings. The backward
bindings are not written here: the forward is replayed op by op through ``apply_op``
(so each call records its node, ``orig``, as in eager), then, walking the bindings
backwards, each op's *registered gradient rule* runs on ȳ while the tracer writes down
the ops the rule calls. One definition of each rule serves eager backward, double
backward and this transform. Where a value feeds several bindings its adjoint is the
sum of what each sends (``x̄ = x̄₁ + x̄₂``); collapse-sums appear where the rules put
them (broadcasts). The adjoint takes ȳ, the gradient arriving at each output, as an
input named ``<output>_bar`` (1 for a loss), as ``backward(gradient=...)`` does.

Checkpoint markers (``start_checkpoint``/``end_checkpoint``) then become recomputation,
as in Relax: the values computed between the markers are not kept for backward; the
backward recomputes them from the stage's inputs just before it first needs them.
"""

from __future__ import annotations

import contextlib
import dataclasses

import numpy as np

from ..autograd.engine import checked_output
from ..core import state
from ..core.tensor import Tensor
from ..record import grad_mode
from ..record.dispatch import apply_op
from .ir import Binding, Program, Value
from .tracer import TraceError, Tracer, tracing, unique_names

SUM_NOTE = "# x̄ = x̄₁ + x̄₂: a value used twice collects both adjoints"


def gradient(program: Program, wrt: list | None = None) -> Program:
    """The adjoint program of ``program`` for the values ``wrt`` (names or values of its
    inputs and captured tensors; by default every one that requires grad).

    Returns a program whose inputs are ``program``'s then one ȳ per output, and whose
    outputs are ``program``'s then one adjoint per ``wrt`` value (None: no path from it).
    """
    if program.has_effects:
        raise TraceError(
            f"gradient: {program.name} is a training step (it writes tensors or .grad): it "
            f"has no adjoint program; its backward is inside it already"
        )
    wrt = _wrt_values(program, wrt)
    tracer = Tracer()
    tensors = {}  # the forward program's value -> the tensor standing for it here
    for value in program.inputs + program.captured:
        tensor = Tensor._make(value.tensor._data)
        tensor._requires_grad = value in wrt
        copy = Value(value.name, value.shape, value.dtype, value.kind, value.tensor)
        copy.requires_grad = value in wrt
        if value.kind == "input":
            tracer.inputs.append(copy)
        else:
            tracer.captured.append(copy)
        tracer.add(tensor, copy)
        tensors[value] = tensor
    with tracing(tracer), grad_mode.enable_grad():
        for binding in program.bindings:
            args = [tensors[a] if isinstance(a, Value) else a for a in binding.args]
            tracer.next_name = binding.out.name
            with grad_mode.no_grad() if binding.stops_gradient else contextlib.nullcontext():
                tensors[binding.out] = apply_op(binding.op, tuple(args), binding.attrs or None)
            tracer.bindings[-1].stops_gradient = binding.stops_gradient
        forward_count = len(tracer.bindings)
        if forward_count != len(program.bindings):
            raise TraceError("replaying the forward program recorded other bindings than it has")
        adjoints, seed_outputs = _backward(program, tracer, tensors)
    out_values = [None if v is None else tracer.value_of(tensors[v]) for v in program.outputs]
    grads = [_named_adjoint(tracer, adjoints.get(v), v.name) for v in wrt]
    for binding in reversed(program.bindings):  # h̄ for every forward value h too
        _named_adjoint(tracer, adjoints.get(binding.out), binding.out.name)
    adjoint = tracer.program(
        program.name + "_adjoint",
        out_values + grads,
        forward_count=forward_count,
        wrt=[tracer.value_of(tensors[v]) for v in wrt],
    )
    adjoint.single_output = False
    adjoint.forward_outputs = len(out_values)
    adjoint.seed_outputs = seed_outputs
    return recompute_checkpoints(adjoint)


def _wrt_values(program: Program, wrt) -> list[Value]:
    candidates = program.inputs + program.captured
    if wrt is None:
        return [v for v in candidates if v.requires_grad]
    by_name = {v.name: v for v in candidates}
    chosen = []
    for item in wrt if isinstance(wrt, (list, tuple)) else [wrt]:
        value = by_name.get(item) if isinstance(item, str) else item
        if value not in candidates:
            names = ", ".join(v.ref() for v in candidates)
            raise ValueError(f"gradient: wrt={item!r} is not an input or captured value ({names})")
        chosen.append(value)
    return chosen


def _backward(program: Program, tracer: Tracer, tensors: dict) -> tuple[dict, list]:
    """Run the gradient rules backwards over the bindings, under the tracer; returns each
    forward value's adjoint tensor, and the indices of the outputs that got a seed ȳ."""
    seeds, seed_outputs = [], []
    for index, value in enumerate(program.outputs):
        out = None if value is None else tensors[value]
        if out is not None and out._requires_grad:  # one ȳ per output, summed if repeated
            seed = Tensor._make(np.ones_like(out._data))  # an example ȳ: ones
            tracer.add_input(seed, f"{value.name}_bar", False, kind="seed")
            seeds.append((value, seed))
            seed_outputs.append(index)
    return _run_rules(program.bindings, tracer, tensors, seeds), seed_outputs


def backward_into_grads(tracer: Tracer, roots: list, seeds: list) -> None:
    """``backward()`` inside a traced training step: the rules run backwards over the
    bindings traced so far, from each root's ȳ, and every leaf reached gets its adjoint
    as ``.grad`` (``tracer.set_grad``: summed into one set earlier, as the engine does)."""
    tensors: dict[Value, Tensor] = {}
    for tensor, value in tracer.tensors.values():
        tensors.setdefault(value, tensor)  # an op's output first: the tensor with its node
    for tensor in tensors.values():
        if tensor._retains_grad:
            tracer.refuse_backward_code("retain_grad()")
    for seed in seeds:
        if id(seed) not in tracer.tensors:  # ȳ = 1 for a loss: a constant of the program
            tracer.capture(seed, "seed")
    pairs = [(tracer.value_of(root), seed) for root, seed in zip(roots, seeds)]
    adjoints = _run_rules(list(tracer.bindings), tracer, tensors, pairs)
    for value in tracer.inputs:
        if value in adjoints:
            tracer.refuse_write(
                value.tensor, f"backward() reaches the function's argument {value.ref()}"
            )
    for value in tracer.captured:
        if value in adjoints and value.tensor._requires_grad:
            _named_adjoint(tracer, adjoints[value], value.name)
            tracer.set_grad(value.tensor, adjoints[value])


def _run_rules(bindings: list, tracer: Tracer, tensors: dict, seeds: list) -> dict:
    """Each value's adjoint tensor: the seeds ``(value, ȳ)``, then the gradient rules of
    the bindings, last to first, with the tracer writing down the ops they call."""
    adjoints: dict[Value, Tensor] = {}
    outside = state.enter_backward(False, True)  # as the engine runs a rule: no recording
    tracer.running_rules = True
    try:
        for value, seed in seeds:
            _collect(tracer, adjoints, value, seed)
        for binding in reversed(bindings):
            grad = adjoints.get(binding.out)
            node = tensors[binding.out]._grad_fn
            if grad is None or node is None or getattr(node, "op", None) is not binding.op:
                continue
            tracer.note, tracer.note_rest = (
                _rule_note(binding.op),
                f"# {binding.op.gradient.__name__}",
            )
            grads = node.apply([grad])
            for i, (child, _) in enumerate(node.next_functions):
                if child is None or grads[i] is None:
                    continue
                g = grads[i]
                shape, dtype = node.input_meta[i]
                if type(g) is not Tensor or g._data.shape != shape or g._data.dtype != dtype:
                    g = checked_output(node, i, g)  # the engine's cast (or its error)
                _collect(tracer, adjoints, binding.args[i], g)
    finally:
        tracer.note = tracer.note_rest = ""
        tracer.running_rules = False
        state.exit_backward(outside)
    return adjoints


def _collect(tracer: Tracer, adjoints: dict, value: Value, grad: Tensor) -> None:
    before = adjoints.get(value)
    if before is None:
        adjoints[value] = grad
        return
    notes = tracer.note, tracer.note_rest
    tracer.note = tracer.note_rest = SUM_NOTE
    adjoints[value] = before + grad
    tracer.note, tracer.note_rest = notes


def _rule_note(op) -> str:
    """``# matmul_grad: Ā = Ȳ @ Bᵀ, B̄ = Aᵀ @ Ȳ``: the rule and its Backward line."""
    backward = next(
        (
            ln.split(":", 1)[1].strip()
            for ln in op.formula.splitlines()
            if ln.startswith("Backward")
        ),
        "",
    )
    return f"# {op.gradient.__name__}: {backward}" if backward else f"# {op.gradient.__name__}"


def _named_adjoint(tracer: Tracer, grad: Tensor | None, name: str) -> Value | None:
    """The adjoint of ``name`` as a program value, called ``name_bar`` (x̄) when it is a
    value of its own (not a seed or a forward value it equals)."""
    if grad is None:
        return None
    value = tracer.value_of(grad)
    if value.kind == "binding" and value.name is None:
        value.name = f"{name}_bar"
    return value


# -------------------------------------------------------- checkpoint → recompute
def checkpoint_segment(program: Program) -> set:
    """The forward values computed between a ``start_checkpoint`` and the next
    ``end_checkpoint`` (the markers' own outputs are kept, as Relax keeps them)."""
    inside, segment = False, set()
    for binding in program.bindings[: program.forward_count]:
        name = binding.op.name
        if name == "start_checkpoint":
            inside = True
        elif name == "end_checkpoint":
            inside = False
        elif inside:
            segment.add(binding.out)
    return segment


def recompute_checkpoints(adjoint: Program) -> Program:
    """Backward bindings that read a value of a checkpoint segment read a recomputed copy
    (``%h_re``), made from the stage's inputs right before the first backward binding
    that needs it; the forward copy then dies at the end of the forward."""
    return recompute_in_backward(adjoint, checkpoint_segment(adjoint), "checkpoint")


def recompute_in_backward(adjoint: Program, dropped: set, why: str) -> Program:
    """``adjoint`` with no backward binding reading a forward value of ``dropped``: each
    reads a copy recomputed (from values not dropped) right before the first backward
    binding that needs it. ``why`` goes in the recomputed bindings' comments."""
    if not dropped:
        return adjoint
    count = adjoint.forward_count
    producer = {b.out: b for b in adjoint.bindings[:count] if b.out in dropped}
    order = {b.out: i for i, b in enumerate(adjoint.bindings[:count])}
    again: dict[Value, Value] = {}
    backward = []
    for binding in adjoint.bindings[count:]:
        needed = _needed(binding.inputs(), dropped, producer, again)
        for value in sorted(needed, key=order.__getitem__):
            backward.append(_recompute(producer[value], again, why))
        args = tuple(again.get(a, a) if isinstance(a, Value) else a for a in binding.args)
        backward.append(Binding(binding.op, args, binding.attrs, binding.out, binding.note))
    adjoint = dataclasses.replace(adjoint, bindings=adjoint.bindings[:count] + backward)
    unique_names(adjoint)
    return adjoint


def _needed(inputs: list, segment: set, producer: dict, again: dict) -> set:
    """The segment values (not recomputed yet) that computing ``inputs`` needs."""
    needed, stack = set(), [v for v in inputs if v in segment and v not in again]
    while stack:
        value = stack.pop()
        if value in needed:
            continue
        needed.add(value)
        stack.extend(v for v in producer[value].inputs() if v in segment and v not in again)
    return needed


def _recompute(binding: Binding, again: dict, why: str) -> Binding:
    old = binding.out
    view_of = None if old.view_of is None else again.get(old.view_of, old.view_of)
    out = Value(f"{old.name}_re", old.shape, old.dtype, view_of=view_of)
    again[old] = out
    args = tuple(again.get(a, a) if isinstance(a, Value) else a for a in binding.args)
    return Binding(binding.op, args, binding.attrs, out, f"# recomputed ({why})", True)
