"""Tracing: run a function once on example inputs and write down every op it calls.

The function runs eagerly, on real values, while a :class:`Tracer` sits in the one
recording point of the engine (``state.tracing.tracer``, which ``apply_op`` calls after
each kernel). Each op call becomes a binding; each tensor the tracer has not seen
before (a parameter, a constant) becomes a captured value. Whatever a program cannot
replay is refused with the line of the learner's code that asked for it: reading a
traced value into Python (``if y > 0``, ``float(y)``, ``.item()``, ``.numpy()``: the
answer would be baked into the program), and drawing random numbers (the program would
replay one draw forever).

A training step traces too (AOTAutograd's *functionalization*). ``loss.backward()``
writes the backward bindings, from the same registered rules as the Gradient transform
(adjoint.py), and sets each parameter's ``.grad`` to its adjoint. An in-place write
that builds no graph (an optimizer's ``p.sub_(...)``, ``buf.mul_(m)``) becomes an
out-of-place binding, and the tensor stands for the new value from then on; a tensor
from outside (a parameter, the optimizer's state) is written back at the end of each
run. Writes the program could not replay are refused: into an argument of the function,
through a view, one that builds a graph, or straight into the memory (not through an op).
"""

from __future__ import annotations

import contextlib
import inspect
import os
import traceback
from collections.abc import Callable, Iterator
from functools import partial
from types import SimpleNamespace

import numpy as np

from ..core import state
from ..core.tensor import Tensor
from ..record import grad_mode
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
        self.names: dict[int, str] = {}  # id(tensor) -> its name, should the function read it
        # a training step (see the module's docstring):
        self.written: dict[int, tuple[Tensor, Value]] = {}  # tensors from outside written
        self.overwritten: set[Value] = set()  # old values of written tensors: stale now
        self.announced: set[int] = set()  # tensors whose next version bump is a traced write
        self.grads_before: dict[int, tuple[Tensor, object]] = {}  # known leaves' .grad at start
        self.grads_set: dict[int, Tensor] = {}  # leaves whose .grad backward() set
        self.assumes_no_grad: dict[int, Tensor] = {}  # leaves backward found without .grad
        self.section_title = ""  # the next binding starts this part of a training step
        self.backward_done = False

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
        self.refuse_outside_grad(tensor)
        data = tensor._data
        kind = "param" if tensor._requires_grad else "const"
        name = name or tensor.name or self.names.get(id(tensor))
        name = name or f"{kind[0]}{sum(v.kind == kind for v in self.captured)}"
        value = Value(name, data.shape, data.dtype, kind, tensor)
        value.requires_grad = tensor._requires_grad
        self.captured.append(value)
        return self.add(tensor, value)

    def value_of(self, x):
        """The program's value for an op's input (a literal stays as it is)."""
        if not isinstance(x, Tensor):
            return x
        known = self.tensors.get(id(x))
        value = None if known is None else known[1]
        if value is None:
            same_array = self.arrays.get(id(x._data))
            if same_array is not None and (x._grad_fn is not None or state.in_backward()):
                value = same_array[1]  # a saved output, unpacked (by a rule) as a new object
        if value is None:
            self.refuse_escaped(x)
            return self.capture(x)
        if self.overwritten and value.root() in self.overwritten:
            raise TraceError(
                f"a view of a tensor is read after an in-place write into that tensor: the "
                f"program would read the old values. At {learner_line()}"
            )
        return value

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
        binding = Binding(op, args, dict(attrs or {}), out, self.note, section=self.section_title)
        self.section_title = ""
        # an input requires grad and the (differentiable) output does not: no_grad ran it
        # (not a gradient rule's op: the engine runs rules without recording, yet their
        # bindings are differentiable code, as with create_graph=True)
        binding.stops_gradient = (
            not self.running_rules
            and not self.backward_done  # a training step's update: nothing differentiates it
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

    # ------------------------------------------- in-place writes, backward()
    def write(self, tensor: Tensor, result: Tensor) -> None:
        """An in-place op is about to write ``result`` (its out-of-place result) into
        ``tensor``: from now on ``tensor`` stands for ``result``'s value; a tensor from
        outside the function is written back at the end of each run."""
        if state.grad_mode.records and (tensor._requires_grad or result._requires_grad):
            self.refuse_write(tensor, "it builds a graph (write it out of place)")
        if tensor._base is not None:
            self.refuse_write(tensor, "it writes through a view")
        old = self.value_of(tensor)
        if old.kind in ("input", "seed"):
            self.refuse_write(tensor, f"it writes into the function's argument {old.ref()}")
        if old.view_of is not None:
            self.refuse_write(tensor, "it writes through a view")
        new = self.value_of(result)
        if new.kind == "binding" and new.name is None and old.name is not None:
            new.name = old.name  # fc1.weight -> fc1.weight_1 (unique_names numbers it)
        if old.kind in ("param", "const"):
            self.written.setdefault(id(tensor), (tensor, old))
        self.overwritten.add(old)
        self.add(tensor, new)
        self.announced.add(id(tensor))

    def bumped(self, tensor: Tensor) -> None:
        """A tensor's version moved: fine after :meth:`write`; a write straight into the
        memory (not through an op) is refused, for the program cannot replay it."""
        if id(tensor) in self.announced:
            self.announced.discard(id(tensor))
            return
        self.refuse_write(tensor, "it writes into the memory, not through an op")

    def refuse_write(self, tensor: Tensor, why: str) -> None:
        raise TraceError(
            f"an in-place write cannot be traced into a program here: {why}. At {learner_line()}"
        )

    def backward_task(self, roots: list, seeds: list, create_graph: bool, inputs):
        """What ``backward()`` runs in a traced step: an object whose ``run()`` is
        :meth:`backward` (the engine's GraphTask, run, would compute gradients instead)."""
        return SimpleNamespace(run=partial(self.backward, roots, seeds, create_graph, inputs))

    def backward(self, roots: list, seeds: list, create_graph: bool, inputs) -> None:
        """``loss.backward()`` in a traced training step: the backward bindings (from the
        registered rules, as the Gradient transform writes them), and each leaf's ``.grad``
        set to its adjoint."""
        if create_graph or inputs is not None:
            self.refuse_backward_code("backward(create_graph=True) or backward(inputs=...)")
        from .adjoint import backward_into_grads

        self.section_title = "backward"
        backward_into_grads(self, roots, seeds)
        self.backward_done = True

    def set_grad(self, leaf: Tensor, grad: Tensor) -> None:
        """``leaf.grad`` gets ``grad`` as the engine would give it: added to a ``.grad`` this
        trace set before; its own memory if another ``.grad`` or a captured tensor has it."""
        value = self.value_of(leaf)
        if value.kind not in ("param", "const") or leaf._grad_fn is not None:
            self.refuse_write(leaf, f"backward() reaches {value.ref()}, not a parameter")
        if leaf._hooks or leaf._post_acc_hooks:
            self.refuse_backward_code(f"a hook on {value.ref()}")
        old = leaf._grad
        with grad_mode.no_grad():
            if old is None:
                before = self.grads_before.get(id(leaf), (leaf, None))[1]
                if before is None:
                    self.assumes_no_grad[id(leaf)] = leaf
                shared = any(leaf._grad is grad for leaf in self.grads_set.values())
                if (
                    shared
                    or not grad._data.flags.writeable
                    or self.value_of(grad).root().kind != "binding"
                ):
                    grad = grad.clone()  # its own memory, as the engine's first .grad
                leaf._grad = grad
            elif id(old) in self.tensors and self.value_of(old).kind == "binding":
                leaf._grad = old + grad
            else:
                self.refuse_write(
                    leaf,
                    f"backward() would add into the .grad {value.ref()} had before the call "
                    f"(call opt.zero_grad() inside the compiled step)",
                )
        self.grads_set[id(leaf)] = leaf

    def refuse_outside_grad(self, tensor: Tensor) -> None:
        """The ``.grad`` of a known parameter, from before the call, is read: the program
        would keep reading that tensor, not the next call's ``.grad``."""
        for leaf, _ in self.grads_before.values():
            if leaf._grad is tensor:
                raise TraceError(
                    f"the .grad of {leaf.name or 'a parameter'} from before the call is read "
                    f"(backward() ran outside the traced function): call backward() inside "
                    f"it. At {learner_line()}"
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
        """The program written so far, returning ``outputs`` (values or None), with the
        writes and ``.grad`` changes a training step leaves behind."""
        program = Program(name, self.inputs, self.captured, self.bindings, outputs, **extra)
        program.writes = [(old, self.value_of(t)) for t, old in self.written.values()]
        program.grads = self.grad_changes()
        program.assumes_no_grad = [self.captured_value(t) for t in self.assumes_no_grad.values()]
        self.name_values(program)
        return program

    def grad_changes(self) -> list:
        """``(leaf's value, its .grad's value or None)`` for each leaf whose ``.grad`` is
        another tensor than at the start; one from outside the ops is refused."""
        leaves = {**{i: t for i, (t, _) in self.grads_before.items()}, **self.grads_set}
        changes = []
        for key, leaf in leaves.items():
            grad = leaf._grad
            if key in self.grads_before and grad is self.grads_before[key][1]:
                continue
            if grad is not None and id(grad) not in self.tensors:
                self.refuse_write(leaf, "its .grad is set to a tensor not made by an op")
            value = None if grad is None else self.value_of(grad)
            changes.append((self.captured_value(leaf), value))
        return changes

    def captured_value(self, tensor: Tensor) -> Value:
        """The value ``tensor`` was captured as (before any write gave it a new one)."""
        return next(v for v in self.captured if v.tensor is tensor)

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


def section(title: str) -> None:
    """The next op the running trace writes starts the part ``title`` of a training step
    (``SGD.step()``): its program prints ``# ---- title ----`` there. No trace: nothing."""
    tracer = state.tracing.tracer
    if tracer is not None:
        tracer.section_title = title


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
    fn: Callable,
    *example_inputs,
    captured_names: dict | None = None,
    name: str | None = None,
    names: dict | None = None,
) -> Program:
    """Trace ``fn`` once on ``example_inputs`` into a :class:`Program`.

    Tensor arguments become the program's inputs (named after ``fn``'s parameters), other
    arguments are baked in as the constants they are. ``captured_names`` maps tensors ``fn``
    reads from outside (a module's parameters) to names (``{id(p): (p, "fc1.weight")}``);
    ``names`` names tensors captured only if ``fn`` reads them (``{id(t): "name"}``).
    The function runs eagerly, in the caller's grad mode, on copies of the inputs that
    require grad as the inputs do: an op that a ``no_grad`` block inside ``fn`` ran is
    written down as one that stops the gradient, as eager would. A training step's
    effects (the update, ``.grad``) happen in that run: tracing it takes one step.
    """
    return trace_and_run(
        fn, *example_inputs, captured_names=captured_names, name=name, names=names
    )[0]


def trace_and_run(
    fn: Callable,
    *example_inputs,
    captured_names: dict | None = None,
    name: str | None = None,
    names: dict | None = None,
) -> tuple[Program, list]:
    """:func:`trace`, and the tensors the traced run returned."""
    tracer = Tracer()
    tracer.names = dict(names or {})
    for tensor, pname in (captured_names or {}).values():
        tracer.capture(tensor, pname)
        tracer.grads_before[id(tensor)] = (tensor, tensor._grad)
    traced = []
    names_in = argument_names(fn, len(example_inputs))
    for arg_name, x in zip(names_in, example_inputs):
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
    return program, outs
