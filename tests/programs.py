"""Inputs for the engine tests that run one program on two code paths.

``sample_program(sample)`` builds a registry sample's call on fresh leaves;
``random_program(seed)`` builds a small random program (broadcasting, fan-out,
several leaves, reductions). Both return ``(leaves, outputs, output_grads)``; the
same arguments always build the same program, so a test can build it twice and
run each copy down a different road. ``assert_same_events`` compares the events two
runs published, field by field, ids by the order each run first mentions them.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np

import workbench as wb


def sample_program(sample) -> tuple:
    """The sample's call on fresh float64 leaves, and a fixed gradient per output."""
    wb.manual_seed(0)  # samples that draw random numbers (dropout) draw the same ones
    leaves, args = [], []
    for array, req in zip(sample.arrays(), sample.requires()):
        if isinstance(array, np.ndarray):
            t = wb.tensor(array, requires_grad=req)
            args.append(t)
            if req:
                leaves.append(t)
        else:
            args.append(array)
    result = sample.fn(*args)
    outputs = [o for o in _flat(result) if isinstance(o, wb.Tensor) and o.requires_grad]
    return leaves, outputs, _output_grads(outputs, sample.name)


def _flat(result) -> list:
    if isinstance(result, (tuple, list)):
        return [x for item in result for x in _flat(item)]
    return [result]


def _output_grads(outputs: list, name: str) -> list:
    rng = np.random.default_rng(len(name))
    return [wb.tensor(rng.uniform(-1, 1, o.shape), dtype=o.dtype) for o in outputs]


UNARY = ("exp", "tanh", "sigmoid", "sin", "neg", "square", "relu")
BINARY = ("add", "sub", "mul", "div", "maximum")
SHAPES = ((3, 4), (4,), (1, 4), (3, 1), ())  # all broadcast to (3, 4)


def random_program(seed: int) -> tuple:
    """A random program of 4 to 12 ops on 2 to 4 leaves; values reused (fan-out)."""
    rng = np.random.default_rng(seed)
    leaves = [
        wb.tensor(rng.uniform(0.5, 1.5, SHAPES[rng.integers(len(SHAPES))]), requires_grad=True)
        for _ in range(rng.integers(2, 5))
    ]
    values = list(leaves)
    for _ in range(rng.integers(4, 13)):
        kind = rng.integers(4)
        a = values[rng.integers(len(values))]
        if kind == 0:
            values.append(getattr(wb, UNARY[rng.integers(len(UNARY))])(a))
        elif kind == 1:
            b = values[rng.integers(len(values))]
            values.append(getattr(wb, BINARY[rng.integers(len(BINARY))])(a, b))
        elif kind == 2 and a.ndim > 0:
            values.append(a.sum(dim=int(rng.integers(a.ndim)), keepdim=True))
        else:
            values.append(a * float(rng.uniform(-2, 2)))
    outputs = [values[-1], values[len(values) // 2]]
    outputs = [o for o in dict.fromkeys(outputs) if o.requires_grad]
    return leaves, outputs, _output_grads(outputs, f"program {seed}")


# ------------------------------------------------- comparing two runs' events
ID = re.compile(r"\b[tnc]\d+\b")  # tensor, node and checkpoint ids, also inside text


def canonical(value, ids: dict):
    """``value`` with each id replaced by the order of its first mention in this run."""
    if isinstance(value, str):
        return ID.sub(lambda m: ids.setdefault(m.group(), f"{m.group()[0]}#{len(ids)}"), value)
    if isinstance(value, (tuple, list)):
        return type(value)(canonical(v, ids) for v in value)
    if isinstance(value, dict):
        return {k: canonical(v, ids) for k, v in value.items()}
    return value


def _fields(event, ids: dict) -> dict:
    fields = {f.name: getattr(event, f.name) for f in dataclasses.fields(event)}
    fields.pop("seq", None)
    return {name: canonical(value, ids) for name, value in fields.items()}


def _assert_same_value(a, b, where: str) -> None:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray), where
        assert a.dtype == b.dtype and a.shape == b.shape, where
        np.testing.assert_array_equal(a, b, err_msg=where)
    elif isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_same_value(x, y, f"{where}[{i}]")
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def assert_same_events(general: list, fast: list) -> None:
    assert [e.kind for e in general] == [e.kind for e in fast]
    ids_general, ids_fast = {}, {}
    for i, (a, b) in enumerate(zip(general, fast)):
        fa, fb = _fields(a, ids_general), _fields(b, ids_fast)
        assert fa.keys() == fb.keys()
        for name in fa:
            _assert_same_value(fa[name], fb[name], f"event {i} ({a.kind}).{name}")
