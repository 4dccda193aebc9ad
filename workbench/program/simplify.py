"""Simplifying passes a learner turns on one by one and watches the program shrink.

``eliminate_dead_code``: a binding whose output nothing reads (no later binding, no
output) is dropped, from the end backwards, so whole dead chains go at once.
``eliminate_common_subexpressions``: a binding that repeats an earlier one (same op,
same arguments, same attributes) is dropped and its readers read the earlier output.
Every registered op is pure (tracing refuses random draws and in-place writes), so
both are always safe; a checkpoint's recomputation is never merged with the forward
value it recomputes, or the checkpoint would be undone.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .ir import Binding, Program, Value


def eliminate_dead_code(program: Program) -> Program:
    """The program without the bindings whose outputs nothing reads."""
    needed = set(program.results())
    kept = []
    for binding in reversed(program.bindings):
        if binding.out in needed:
            kept.append(binding)
            needed.update(binding.inputs())
    kept.reverse()
    return _rebuilt(program, kept, program.outputs, needed)


def eliminate_common_subexpressions(program: Program) -> Program:
    """The program with each repeated binding replaced by the first one like it."""
    same: dict[Value, Value] = {}
    first: dict[tuple, Value] = {}
    kept = []
    for binding in program.bindings:
        args = tuple(same.get(a, a) if isinstance(a, Value) else a for a in binding.args)
        key = (
            binding.op.name,
            _key(args),
            _key(sorted(binding.attrs.items())),
            binding.recomputed,
            binding.stops_gradient,
        )
        if key in first:
            same[binding.out] = first[key]
            continue
        first[key] = binding.out
        kept.append(dataclasses.replace(binding, args=args))
    outputs = [same.get(v, v) if v is not None else None for v in program.outputs]
    program = dataclasses.replace(
        program,
        writes=[(t, same.get(v, v)) for t, v in program.writes],
        grads=[(t, same.get(v, v)) for t, v in program.grads],
    )
    needed = {v for b in kept for v in b.inputs()} | {v for v in outputs if v is not None}
    return _rebuilt(program, kept, outputs, needed | set(program.results()))


def _key(item):
    """A hashable stand-in for an argument: a value by identity, an array by its bytes,
    a number with its type (``1`` and ``1.0`` and ``True`` are different literals)."""
    if isinstance(item, Value):
        return ("value", id(item))
    if isinstance(item, np.ndarray):
        return ("array", item.dtype.str, item.shape, item.tobytes())
    if isinstance(item, (tuple, list)):
        return (type(item).__name__, tuple(_key(x) for x in item))
    try:
        hash(item)
    except TypeError:
        return ("object", id(item))
    return (type(item).__name__, item)


def _rebuilt(program: Program, bindings: list[Binding], outputs: list, needed: set) -> Program:
    """A copy of ``program`` with these bindings and outputs (captured values nothing
    reads nor a training step writes are dropped; inputs stay: the program's signature)."""
    needed = needed | {t for t, _ in program.writes + program.grads}
    forward_count = program.forward_count
    if forward_count is not None:
        forward = {b.out for b in program.bindings[:forward_count]}
        forward_count = sum(1 for b in bindings if b.out in forward)
    return dataclasses.replace(
        program,
        captured=[v for v in program.captured if v in needed],
        bindings=bindings,
        outputs=outputs,
        forward_count=forward_count,
    )
