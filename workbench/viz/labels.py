"""The text inside a picture's boxes: a tensor's name, shape, dtype and small values, an
op's attributes, a rule's formula one input per line, a collapse-sum's axes.

Both builders of a :class:`~workbench.viz.model.GraphModel` (:mod:`workbench.viz.live`
from live tensors, :mod:`workbench.viz.from_trace` from a trace) write their labels
with these, so a picture reads the same whichever source drew it.
"""

from __future__ import annotations

import numpy as np

from ..core.dtypes import bfloat16

VALUES_SHOWN = 8  # arrays up to this many elements show their values in a label


def shape_text(shape) -> str:
    """``(2, 3)``; a scalar is ``()``."""
    shape = tuple(shape)
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def values_text(array) -> str | None:
    """Values of a small array, for a label; None for a large one."""
    if array is None:
        return None
    array = np.asarray(array)
    if array.size > VALUES_SHOWN:
        return None
    return array_text(array)


def array_text(array, **options) -> str:
    """Values with 4 decimals, as a learner reads them: ``[0.5, 1.25]``, ``3+4j``.

    numpy's printer writes complex numbers as ``3.+4.j`` and ignores the precision for
    bfloat16, so complex elements get :func:`complex_text` and bfloat16 is shown through
    float32 (exact: every bfloat16 is a float32). ``options`` go to ``np.array2string``.
    """
    array = np.asarray(array)
    if array.dtype == bfloat16:
        array = array.astype(np.float32)
    if array.ndim == 0:
        if array.dtype.kind == "c":
            return complex_text(array.item())
        if array.dtype.kind == "f":
            return np.format_float_positional(float(array), precision=4, trim="-")
    return np.array2string(
        array,
        precision=4,
        separator=", ",
        suppress_small=True,
        formatter={"complexfloat": complex_text},
        **options,
    )


def complex_text(z: complex) -> str:
    """``3+4j``, ``-1-0.5j``, ``0+2j``: 4 decimals at most, trailing zeros dropped."""
    real = np.format_float_positional(z.real, precision=4, trim="-")
    imag = np.format_float_positional(abs(z.imag), precision=4, trim="-")
    sign = "-" if np.signbit(z.imag) else "+"
    return f"{real}{sign}{imag}j"


GRAD_LINE = "grad "  # how tensor_lines starts the line of a tensor's .grad


def tensor_lines(tid: str, name: str | None, shape, dtype, values=None, grad=None) -> list:
    """Label lines of a tensor: its name (the id only where it has none, so that a
    learner reads ``W4``, not ``W4 (t32)``), shape and dtype, small values, its grad."""
    head = name or tid
    lines = [head]
    if shape is not None:
        lines.append(f"{shape_text(shape)} {dtype}".strip())
    shown = values_text(values)
    if shown is not None:
        lines.append(shown)
    shown = values_text(grad)
    if shown is not None:
        lines.append(f"{GRAD_LINE}{shown}")
    return lines


def attr_lines(attrs: dict) -> list:
    """An op's attributes worth showing: not None/False, not the Python-number inputs."""
    lines = []
    for key, value in attrs.items():
        if value is None or value is False:
            continue
        if key.startswith("input") and key[len("input") :].isdigit():
            continue
        lines.append(f"{key}={value}")
    return lines


def formula_lines(formula: str) -> list:
    """The Backward part of a rule's formula, one input's gradient per line."""
    for line in formula.splitlines():
        if line.startswith("Backward:"):
            return split_top_level(line[len("Backward:") :].strip())
    return [formula.strip()] if formula.strip() else []


def split_top_level(text: str) -> list:
    """Split ``x̄ = f(a, b), ȳ = g(c)`` at commas outside parentheses."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


def collapse_lines(axes, from_shape, to_shape) -> list:
    return [
        "collapse_sum_like",
        f"Σ over axes {tuple(axes)}",
        f"{shape_text(from_shape)} → {shape_text(to_shape)}",
    ]


def broadcast_axes(input_shape, output_shape) -> tuple | None:
    """The axes a rule sums when ``input_shape`` was broadcast to ``output_shape``.

    None when no summing is needed: same shapes, not broadcast-compatible (a
    reduction or a reshape), or the same number of elements (only size-1 axes).
    """
    from ..ops.broadcasting import summed_axes

    input_shape, output_shape = tuple(input_shape), tuple(output_shape)
    if input_shape == output_shape or len(input_shape) > len(output_shape):
        return None
    lead = len(output_shape) - len(input_shape)
    for size, out in zip(input_shape, output_shape[lead:]):
        if size != out and size != 1:
            return None
    if int(np.prod(input_shape)) == int(np.prod(output_shape)):
        return None
    return summed_axes(output_shape, input_shape)
