"""A program: SSA bindings of registry ops on named values (a Relax dataflow block, a jaxpr).

Every value is defined once: an input (an argument of the traced function), a captured
tensor (a parameter or a constant the function read from outside; read afresh at each
run), or the output of one binding ``%3 = mul(%x, %w)``. Bindings run in order. A binding
holds the op (its ``OpDef``: the kernel and the gradient rule), its arguments (values, or
Python literals such as ``2.0`` and ``None``) and its attributes (``dim=1``).

Names are data, never code: a name a learner chose (``x.name = "x); import os"``) prints
quoted as text and the runner (runner.py) never evaluates anything.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

import numpy as np

from ..core.events import dtype_name

IDENTIFIER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.]*\Z")  # printed bare; anything else quoted


@dataclass(eq=False)
class Value:
    """One SSA value. ``kind``: "input", "param" (captured, requires grad), "const"
    (captured), "seed" (an adjoint's ȳ input) or "binding"; ``tensor`` is the captured
    Tensor (read at each run) or an example of an input's values."""

    name: str
    shape: tuple
    dtype: np.dtype
    kind: str = "binding"
    tensor: object = None
    requires_grad: bool = False
    view_of: Value | None = None  # a view op's output shares this value's memory

    @property
    def nbytes(self) -> int:
        return 0 if self.view_of is not None else int(np.prod(self.shape)) * self.dtype.itemsize

    def root(self) -> Value:
        """The value whose memory this one uses (itself, unless it is a view)."""
        value = self
        while value.view_of is not None:
            value = value.view_of
        return value

    def ref(self) -> str:
        """``%name``; a name that is not a plain identifier is quoted, as text."""
        if self.name is None:  # while tracing: not named yet
            return f"%<{self.type_text()}>"
        return "%" + (self.name if IDENTIFIER.match(self.name) else _quoted(self.name))

    def type_text(self) -> str:
        return f"{tuple(self.shape)} {dtype_name(self.dtype)}"

    def __repr__(self) -> str:
        return f"<value {self.ref()}: {self.type_text()}>"


def _quoted(text: str) -> str:
    """The name in double quotes, every character that is not printable escaped."""
    return '"' + text.encode("unicode_escape").decode("ascii").replace('"', '\\"') + '"'


@dataclass(eq=False)
class Binding:
    """``out = op(*args, **attrs)``; ``note`` is the comment printed after it (backward
    bindings name the gradient rule that wrote them)."""

    op: object
    args: tuple
    attrs: dict
    out: Value
    note: str = ""
    recomputed: bool = False  # a checkpoint's recomputation: CSE must not merge it away
    stops_gradient: bool = False  # ran under no_grad while an input required grad
    section: str = ""  # a training step's part that starts here: "backward", "SGD.step()"

    def inputs(self) -> list[Value]:
        return [a for a in self.args if isinstance(a, Value)]

    def text(self) -> str:
        parts = [_arg_text(a) for a in self.args]
        parts += [f"{key}={_literal(value)}" for key, value in self.attrs.items()]
        line = f"{self.out.ref()} = {self.op.name}({', '.join(parts)})"
        comment = f"# shape {self.out.type_text()}"
        if self.stops_gradient:
            comment += "  # no_grad: the gradient stops here"
        return f"{line}  {comment}" + (f"  {self.note}" if self.note else "")


def _arg_text(arg) -> str:
    return arg.ref() if isinstance(arg, Value) else _literal(arg)


def _literal(value) -> str:
    """A literal argument as text: numbers and shapes as Python writes them, an array by
    its shape (its values would not fit on a line)."""
    if isinstance(value, np.ndarray):
        return f"array{tuple(value.shape)}"
    if isinstance(value, np.dtype):
        return dtype_name(value)
    if isinstance(value, (tuple, list)):
        inner = ", ".join(_literal(v) for v in value)
        return f"({inner},)" if isinstance(value, tuple) and len(value) == 1 else f"({inner})"
    if isinstance(value, (bool, int, float, complex, str, type(None), np.generic)):
        return repr(value.item() if isinstance(value, np.generic) else value)
    try:  # a stand-in for a tensor's shape (TensorShape, TensorMeta): its shape
        return f"{type(value).__name__}{tuple(value.shape)}"
    except (AttributeError, RuntimeError, TypeError):
        return type(value).__name__


@dataclass(eq=False)
class Program:
    """Inputs, captured values, bindings in order, and outputs (values; None for an
    adjoint that no path reaches)."""

    name: str
    inputs: list[Value]
    captured: list[Value]
    bindings: list[Binding]
    outputs: list
    forward_count: int | None = None  # an adjoint: how many bindings are the forward's
    wrt: list = field(default_factory=list)  # an adjoint: the values differentiated for
    single_output: bool = True  # the traced function returned one tensor, not a tuple
    forward_outputs: int | None = None  # an adjoint: how many outputs are the forward's
    seed_outputs: list = field(default_factory=list)  # an adjoint: outputs given a ȳ input
    # a training step's effects, done at the end of each run (tracer.py):
    writes: list = field(default_factory=list)  # (captured value, value): written into it
    grads: list = field(default_factory=list)  # (captured value, value or None): its .grad
    assumes_no_grad: list = field(default_factory=list)  # captured values without .grad

    def __str__(self) -> str:
        params = ", ".join(f"{v.ref()}: {v.type_text()}" for v in self.inputs)
        lines = [f"program {self.name}({params}) {{"]
        for v in self.captured:
            lines.append(f"  {v.ref()} = {v.kind}  # {v.type_text()}")
        for i, binding in enumerate(self.bindings):
            title = "backward" if i == self.forward_count else binding.section
            if title:
                lines.append(f"  # ---- {title} ----")
            lines.append("  " + binding.text())
        if self.writes or self.grads:
            lines.append("  # ---- at the end of the run ----")
        for target, value in self.writes:
            lines.append(f"  {target.ref()} <- {value.ref()}  # written in place")
        for target, value in self.grads:
            lines.append(f"  {target.ref()}.grad = {'None' if value is None else value.ref()}")
        outs = ", ".join("None" if v is None else v.ref() for v in self.outputs)
        lines.append(f"  return {outs}")
        lines.append("}")
        return "\n".join(lines)

    __repr__ = __str__

    def values(self) -> list[Value]:
        return self.inputs + self.captured + [b.out for b in self.bindings]

    def results(self) -> list[Value]:
        """What a run must leave: the outputs, and a training step's written values and
        ``.grad`` values."""
        effects = [v for _, v in self.writes] + [v for _, v in self.grads]
        return [v for v in self.outputs + effects if v is not None]

    @property
    def has_effects(self) -> bool:
        """A training step: the run changes tensors (writes) or ``.grad``."""
        return bool(self.writes or self.grads)

    def run(self, *inputs):
        """Run the program on ``inputs`` (Tensors or arrays) with the flat runner (made
        anew at each call: keep ``Runner(program)`` to run it many times)."""
        from .runner import Runner

        return Runner(self)(*inputs)

    def saved_for_backward(self) -> list[Value]:
        """An adjoint's forward values that its backward reads: what the forward keeps
        for backward (the memory held between the two, which a partitioner trades for
        recomputation)."""
        made = {b.out for b in self.bindings[: self.forward_count]}
        saved: dict[Value, None] = {}
        for binding in self.bindings[self.forward_count :]:
            saved.update((v, None) for v in binding.inputs() if v in made)
        return list(saved)

    def saved_bytes(self) -> int:
        """The bytes of :meth:`saved_for_backward` (a view's: its base's, once)."""
        return sum(v.nbytes for v in {v.root() for v in self.saved_for_backward()})

    def peak_memory(self, schedule: list | None = None) -> int:
        """The bytes of live values at the worst binding, the bindings run in the order
        ``schedule`` gives (by default the program's own): a value lives from its
        definition (inputs and captured values: from the start) to its last use (outputs:
        to the end); a view costs nothing and keeps its base alive."""
        if schedule is None:
            return memory_profile(self)[0]
        check_schedule(self, schedule)
        return memory_profile(dataclasses.replace(self, bindings=list(schedule)))[0]


def check_schedule(program: Program, schedule: list) -> None:
    """``schedule`` must hold each binding once, each after the bindings it reads."""
    if sorted(map(id, schedule)) != sorted(map(id, program.bindings)):
        raise ValueError("a schedule must list every binding of the program exactly once")
    made = set(program.inputs + program.captured)
    for binding in schedule:
        missing = [v.ref() for v in binding.inputs() if v not in made]
        if missing:
            raise ValueError(f"{binding.out.ref()} is scheduled before {', '.join(missing)}")
        made.add(binding.out)


def last_uses(program: Program) -> dict:
    """For each value's root (see Value.root): the index of the last binding that reads
    it, ``len(bindings)`` for an output."""
    last = {}
    for i, binding in enumerate(program.bindings):
        for value in binding.inputs():
            last[value.root()] = i
        if binding.out.view_of is not None:
            last[binding.out.root()] = i
    for value in program.results():
        last[value.root()] = len(program.bindings)
    return last


def memory_profile(program: Program) -> tuple[int, list[int]]:
    """(peak bytes, live bytes after each binding's output is made)."""
    last = last_uses(program)
    live = sum(v.nbytes for v in program.inputs + program.captured)
    dies_at: dict[int, int] = {}
    for v in program.inputs + program.captured:
        if v not in last:
            live -= v.nbytes  # read by nothing: never counted alive
        else:
            dies_at[last[v]] = dies_at.get(last[v], 0) + v.nbytes
    profile = []
    for i, binding in enumerate(program.bindings):
        out = binding.out
        live += out.nbytes
        profile.append(live)
        if out.nbytes and out in last:
            dies_at[last[out]] = dies_at.get(last[out], 0) + out.nbytes
        elif out.nbytes:
            live -= out.nbytes  # dead on arrival: gone as soon as it is made
        live -= dies_at.pop(i, 0)
    return max(profile, default=live), profile
