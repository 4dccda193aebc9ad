"""Tracing: run a function once on example inputs and write down every op it calls.

The function runs eagerly, on real values, while a :class:`Tracer` sits in the one
recording point of the engine (``state.tracing.tracer``, which ``apply_op`` calls after
each kernel). Each op call becomes a binding; each tensor the tracer has not seen
before (a parameter, a constant) becomes a captured value. Whatever a program cannot
replay is refused with the line of the learner's code that asked for it: reading a
traced value into Python (``if y > 0``, ``float(y)``, ``.item()``, ``.numpy()``: the
answer would be baked into the program), writing into a tensor, and drawing random
numbers (the program would replay one draw forever).
"""

from __future__ import annotations

import contextlib
import inspect
import os
import traceback
from collections.abc import Callable, Iterator

import numpy as np

from ..core import state
from ..core.tensor import Tensor
from .ir import Binding, Program, Value

WORKBENCH_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class TraceError(RuntimeError):
    """The traced function did something a program cannot replay (the message says what
    and names the line)."""


def learner_line() -> str:
    """The innermost line of the call stack outside the workbench package: the learner's."""
    for frame in reversed(traceback.extract_stack()):
        if not os.path.abspath(frame.filename).startswith(WORKBENCH_DIR):
            code = f": {frame.line}" if frame.line else ""
            return f"{frame.filename}, line {frame.lineno}{code}"
    return "(no line outside the workbench)"


class Tracer:
    """Writes a program while a function runs: ``record`` is called by ``apply_op``."""

    def __init__(self) -> None:
        self.tensors: dict[int, tuple[Tensor, Value]] = {}  # id(tensor) -> (tensor, value)
        self.arrays: dict[int, tuple[np.ndarray, Value]] = {}  # the same, by array
        self.inputs: list[Value] = []
        self.captured: list[Value] = []
        self.bindings: list[Binding] = []
        self.note = ""  # the comment the next binding gets
        self.note_rest = ""  # the comment the bindings after it get
        self.next_name: str | None = None  # the name of the next binding's output
        self.running_rules = False  # the Gradient transform runs the rules (adjoint.py)

    # ------------------------------------------------------------ values
    def add(self, tensor: Tensor, value: Value) -> Value:
        self.tensors[id(tensor)] = (tensor, value)
        self.arrays[id(tensor._data)] = (tensor._data, value)
        return value

    def add_input(
        self, tensor: Tensor, name: str, requires_grad: bool, kind: str = "input"
    ) -> Value:
        data = tensor._data
        value = Value(name, data.shape, data.dtype, kind, tensor, requires_grad)
        self.inputs.append(value)
        return self.add(tensor, value)

    def capture(self, tensor: Tensor, name: str | None = None) -> Value:
        """A tensor from outside the traced code: a parameter (it requires grad) or a
        constant. The program reads it afresh at every run."""
        data = tensor._data
        kind = "param" if tensor._requires_grad else "const"
        name = name or tensor.name or f"{kind[0]}{sum(v.kind == kind for v in self.captured)}"
        value = Value(name, data.shape, data.dtype, kind, tensor)
        value.requires_grad = tensor._requires_grad
        self.captured.append(value)
        return self.add(tensor, value)

    def value_of(self, x):
        """The program's value for an op's input (a literal stays as it is)."""
        if not isinstance(x, Tensor):
            return x
        known = self.tensors.get(id(x))
        if known is not None:
            return known[1]
        same_array = self.arrays.get(id(x._data))
        if same_array is not None and (x._grad_fn is not None or state.in_backward()):
            return same_array[1]  # a saved output, unpacked (by a rule) as a new tensor object
        self.refuse_escaped(x)
        return self.capture(x)

    def refuse_escaped(self, x: Tensor) -> None:
        """A tensor made from a traced value's memory outside the ops (``detach()``,
        ``.data``, an array taken out and wrapped again) would be baked in as a constant."""
        for array, value in self.arrays.values():
            if value.kind in ("input", "binding", "seed") and np.may_share_memory(x._data, array):
                raise TraceError(
                    f"a tensor shares memory with the traced value {value.ref()} but was not "
                    f"made by an op (detach(), .data or a wrapped array): a program cannot "
                    f"trace it. At {learner_line()}"
                )

    # ------------------------------------------------------- the hook
    def record(self, op, inputs: tuple, attrs: dict | None, result: Tensor) -> None:
        """``apply_op`` ran ``op``: write the binding ``result = op(*inputs, **attrs)``."""
        if state.in_backward() and not self.running_rules:
            raise TraceError(
                f"a backward pass (backward(), autograd.grad, wb.func.grad) inside a traced "
                f"function cannot be traced: the engine adds gradients outside the ops. Trace "
                f"the forward and take wb.program.gradient of the program. At {learner_line()}"
            )
        args = tuple(self.value_of(x) for x in inputs)
        data = result._data
        out = Value(self.next_name, data.shape, data.dtype, requires_grad=result._requires_grad)
        self.next_name = None
        if op.view and args and isinstance(args[0], Value):
            out.view_of = args[0]
        binding = Binding(op, args, dict(attrs or {}), out, self.note)
        # an input requires grad and the (differentiable) output does not: no_grad ran it
        # (not a gradient rule's op: the engine runs rules without recording, yet their
        # bindings are differentiable code, as with create_graph=True)
        binding.stops_gradient = (
            not self.running_rules
            and op.differentiable
            and data.dtype.kind in "fc"
            and not result._requires_grad
            and any(isinstance(x, Tensor) and x._requires_grad for x in inputs)
        )
        self.bindings.append(binding)
        self.note = self.note_rest
        self.add(result, out)

    def refuse_read(self, tensor: Tensor, how: str) -> None:
        known = self.tensors.get(id(tensor)) or self.arrays.get(id(tensor._data))
        if known is None and not any(
            np.may_share_memory(tensor._data, a) for a, _ in self.arrays.values()
        ):
            return  # a tensor the program never saw: reading it changes nothing
        raise TraceError(
            f"the values of a traced tensor are read into Python ({how}): data-dependent "
            f"Python control flow (if, bool(), float(), int(), .item()) and copies (.numpy(), "
            f"wb.tensor(t)) cannot be traced, for a program runs the same bindings whatever "
            f"the values are. "
            f"Use ops instead (wb.where(y > 0, a, b) for an if). At {learner_line()}"
        )

    def refuse_detach(self, tensor: Tensor) -> None:
        """``detach()`` of a traced value: the result is no op's output, so a program
        could only bake its example values in (a rule's own detach is left alone)."""
        if self.running_rules or self.tensors.get(id(tensor)) is None:
            return
        raise TraceError(
            f"detach() of a traced value cannot be traced (it is no op: a program would keep "
            f"the example's values). At {learner_line()}"
        )

    def refuse_write(self, tensor: Tensor) -> None:
        raise TraceError(
            f"an in-place write (a method ending in _, x[i] = v, an optimizer step, a "
            f"backward() accumulating into .grad) cannot be traced into a program: write it "
            f"out of place. At {learner_line()}"
        )

    def refuse_backward_code(self, what: str) -> None:
        raise TraceError(
            f"{what} changes the backward pass with Python code the Gradient transform cannot "
            f"see (it derives backward from the registered rules only). At {learner_line()}"
        )

    def refuse_draw(self) -> None:
        raise TraceError(
            f"random numbers (dropout, randn...) cannot be traced: the program would replay "
            f"the same draw at every run. At {learner_line()}"
        )

    # ------------------------------------------------------------ result
    def program(self, name: str, outputs: list, **extra) -> Program:
        """The program written so far, returning ``outputs`` (values or None)."""
        program = Program(name, self.inputs, self.captured, self.bindings, outputs, **extra)
        self.name_values(program)
        return program

    def name_values(self, program: Program) -> None:
        """Names the learner gave tensors (``t.name``) win; the rest are numbered; a name
        used twice gets ``_1``, ``_2``... (names are text, never code: see ir.py)."""
        for tensor, value in self.tensors.values():
            if value.name is None and tensor.name is not None:
                value.name = tensor.name
        unique_names(program)


def unique_names(program: Program) -> None:
    taken = {v.name for v in program.values() if v.name is not None}
    seen: set[str] = set()
    number = 0
    for value in program.values():
        if value.name is None:
            while str(number) in taken:
                number += 1
            value.name = str(number)
            taken.add(value.name)
        base, n = value.name, 0
        while value.name in seen:
            n += 1
            value.name = f"{base}_{n}"
        seen.add(value.name)


@contextlib.contextmanager
def tracing(tracer: Tracer) -> Iterator[Tracer]:
    """``tracer`` records every op called in this thread inside the block."""
    previous = state.set_tracer(tracer)
    try:
        yield tracer
    finally:
        state.set_tracer(previous)


def argument_names(fn: Callable, count: int) -> list[str]:
    """The names of ``fn``'s first ``count`` positional parameters (``x0``... if unknown)."""
    try:
        params = [
            p
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        params = []
    names = [p.name for p in params[:count]]
    if params and params[-1:] and len(names) < count:
        names += [f"x{i}" for i in range(len(names), count)]
    return names if len(names) == count else [f"x{i}" for i in range(count)]


def trace(
    fn: Callable, *example_inputs, captured_names: dict | None = None, name: str | None = None
) -> Program:
    """Trace ``fn`` once on ``example_inputs`` into a :class:`Program`.

    Tensor arguments become the program's inputs (named after ``fn``'s parameters), other
    arguments are baked in as the constants they are. ``captured_names`` maps tensors ``fn``
    reads from outside (a module's parameters) to names (``{id(p): "fc1.weight"}``).
    The function runs eagerly, in the caller's grad mode, on copies of the inputs that
    require grad as the inputs do: an op that a ``no_grad`` block inside ``fn`` ran is
    written down as one that stops the gradient, as eager would.
    """
    tracer = Tracer()
    for tensor, pname in (captured_names or {}).values():
        tracer.capture(tensor, pname)
    traced = []
    names = argument_names(fn, len(example_inputs))
    for arg_name, x in zip(names, example_inputs):
        if isinstance(x, Tensor):
            copy = Tensor._make(x._data, x._requires_grad)
            tracer.add_input(copy, arg_name, x._requires_grad)
            traced.append(copy)
        else:
            traced.append(x)
    with tracing(tracer):
        result = fn(*traced)
    for value in tracer.captured:
        value.requires_grad = value.tensor._requires_grad
    single = isinstance(result, Tensor)
    outs = [result] if single else list(result) if isinstance(result, (tuple, list)) else None
    if outs is None or not all(isinstance(t, Tensor) for t in outs):
        raise TraceError(
            f"a traced function must return a tensor or a tuple of tensors, not "
            f"{type(result).__name__}"
        )
    outputs = [tracer.value_of(t) for t in outs]
    program = tracer.program(name or getattr(fn, "__name__", "program"), outputs)
    program.single_output = single
    return program
