"""The flat runner: a program as a list of ``(kernel, input slots, attrs, output slot)``.

Every value gets a slot in one list; literals (``2.0``, ``None``, a shape) sit in slots of
their own, filled once. A run fills the input slots, reads each captured tensor's array
(a parameter the optimizer changed is read as it is now), then calls the kernels in
order: no dispatch, no checks, no nodes, no events. A slot is emptied after its last
use, so memory follows ``Program.peak_memory``. Nothing is compiled from text: the
kernels are the registry's functions, called with the arrays in the slots.

Where shapes repeat, memory is reused. A kernel that takes ``out=`` (numpy's ufuncs,
matmul, addmm: ``OpDef.writes_out``) writes into one of the runner's own buffers, made
once and kept from run to run: a buffer holds one value at a time and is free again
after that value's last use (its views' included). A value the run hands out (an output,
a ``.grad``, what backward keeps) and anything that shares its memory never goes into a
buffer: the next run would overwrite it. (So one runner runs one call at a time.)

A training step's effects come last: each written tensor (a parameter, the optimizer's
state) gets its new values copied into its own memory, so views of it, the optimizer
and the module all see them; each leaf's ``.grad`` becomes its adjoint.
"""

from __future__ import annotations

from operator import itemgetter

import numpy as np

from ..core.tensor import Tensor
from .ir import Program, Value, last_uses


class Runner:
    """``Runner(program)(*inputs)`` runs ``program``; outputs come back as Tensors."""

    def __init__(self, program: Program) -> None:
        self.program = program
        slots: dict[Value, int] = {}
        for value in program.inputs + program.captured + [b.out for b in program.bindings]:
            slots[value] = len(slots)
        constants: list = []  # (slot, literal)
        last = last_uses(program)
        frees: dict[int, list[int]] = {}
        for value, index in last.items():
            if value in slots and index < len(program.bindings):
                frees.setdefault(index, []).append(slots[value])
        plan, kinds = _buffer_plan(program)
        self.buffers = [np.empty(shape, dtype) for shape, dtype in kinds]
        self.steps = []
        for i, binding in enumerate(program.bindings):
            indices = []
            for arg in binding.args:
                if isinstance(arg, Value):
                    indices.append(slots[arg])
                else:
                    constants.append((len(slots) + len(constants), arg))
                    indices.append(constants[-1][0])
            gather = _gather(indices)
            self.steps.append(
                (
                    binding.op.forward,
                    gather,
                    binding.attrs or None,
                    slots[binding.out],
                    frees.get(i, ()),
                    plan.get(i),
                )
            )
        self.size = len(slots) + len(constants)
        self.constants = constants
        self.input_slots = [slots[v] for v in program.inputs]
        self.captured = [(slots[v], v.tensor) for v in program.captured]
        self.output_slots = [None if v is None else slots[v] for v in program.outputs]
        self.writes = [(target.tensor, slots[value]) for target, value in program.writes]
        self.grads = [
            (target.tensor, None if value is None else slots[value])
            for target, value in program.grads
        ]
        self.assumes_no_grad = [v.tensor for v in program.assumes_no_grad]

    def holds(self) -> bool:
        """Whether the program fits the leaves as they are now: a training step traced
        with no ``.grad`` on a leaf sets it, where eager would add to one that is there."""
        return all(tensor._grad is None for tensor in self.assumes_no_grad)

    def run_arrays(self, arrays: list) -> list:
        """The kernels on raw arrays: inputs in, output arrays (None for a None output) out."""
        slots = [None] * self.size
        for index, literal in self.constants:
            slots[index] = literal
        for index, array in zip(self.input_slots, arrays):
            slots[index] = array
        for index, tensor in self.captured:
            slots[index] = tensor._data
        with np.errstate(all="ignore"):  # inf and NaN are values, as in eager
            buffers = self.buffers
            for kernel, gather, attrs, out, frees, buffer in self.steps:
                if buffer is not None:
                    result = kernel(*gather(slots), out=buffers[buffer])
                elif attrs:
                    result = kernel(*gather(slots), **attrs)
                else:
                    result = kernel(*gather(slots))
                slots[out] = np.asarray(result) if isinstance(result, np.generic) else result
                for index in frees:
                    slots[index] = None
        for tensor, index in self.writes:
            np.copyto(tensor._data, slots[index])
            tensor._bump_version()
        for tensor, index in self.grads:
            tensor._grad = None if index is None else Tensor._make(slots[index])
        return [None if index is None else slots[index] for index in self.output_slots]

    def __call__(self, *inputs):
        """Tensors (of the traced shapes and dtypes), or numbers and arrays (cast to the
        input's dtype); an adjoint's ȳ inputs left out are ones (as for a loss)."""
        if not self.holds():
            names = ", ".join(v.ref() for v in self.program.assumes_no_grad)
            raise RuntimeError(
                f"{self.program.name} was traced with no .grad on {names}: call zero_grad() "
                f"first (eager backward would add to the .grad that is there)"
            )
        values = self.program.inputs
        seeds = sum(1 for v in values if v.kind == "seed")
        if not len(values) - seeds <= len(inputs) <= len(values):
            names = ", ".join(v.ref() for v in values)
            raise TypeError(f"the program takes the inputs {names}; got {len(inputs)}")
        inputs = inputs + tuple(np.ones(v.shape, v.dtype) for v in values[len(inputs) :])
        arrays = [_array_for(value, x) for value, x in zip(values, inputs)]
        outs = [None if a is None else Tensor._make(a) for a in self.run_arrays(arrays)]
        return outs[0] if self.program.single_output and len(outs) == 1 else tuple(outs)


def _buffer_plan(program: Program) -> tuple[dict, list]:
    """``({binding index: buffer}, [(shape, dtype) of each buffer])``: which bindings
    write into which of the runner's buffers (see the module's docstring)."""
    handed_out = {v.root() for v in program.results()}
    last = last_uses(program)
    free: dict[tuple, list[int]] = {}  # (shape, dtype) -> buffers free now
    kinds: list[tuple] = []
    plan: dict[int, int] = {}
    released: dict[int, list] = {}  # binding index -> (kind, buffer) free after it
    for i, binding in enumerate(program.bindings):
        out = binding.out
        if (
            binding.op.writes_out
            and not binding.attrs
            and out.view_of is None
            and out not in handed_out
            and out in last
        ):
            kind = (tuple(out.shape), out.dtype)
            pool = free.get(kind)
            if pool:
                plan[i] = pool.pop()
            else:
                plan[i] = len(kinds)
                kinds.append(kind)
            released.setdefault(last[out], []).append((kind, plan[i]))
        for kind, buffer in released.pop(i, ()):
            free.setdefault(kind, []).append(buffer)
    return plan, kinds


def _array_for(value: Value, x) -> np.ndarray:
    if not isinstance(x, Tensor):
        return np.asarray(x, dtype=value.dtype)
    if x._data.shape != tuple(value.shape) or x._data.dtype != value.dtype:
        raise TypeError(
            f"input {value.ref()} was traced as {value.type_text()}, got "
            f"{tuple(x.shape)} {x.dtype}: trace again for these inputs"
        )
    return x._data


def _gather(indices: list):
    """A function from the slot list to the tuple of a kernel's arguments."""
    if not indices:
        return lambda slots: ()
    if len(indices) == 1:
        index = indices[0]
        return lambda slots: (slots[index],)
    return itemgetter(*indices)
