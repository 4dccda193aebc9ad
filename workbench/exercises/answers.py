"""Check a learner's prediction: a value, an order of nodes, a table of counts.

The lessons ask the learner to predict before a widget reveals: the next node to
run, ``x.grad`` after step k, the axes a collapse-sum sums over. The lesson
computes the truth with the engine (or the stepper) and hands both here::

    check_answer("w.grad after step 4", truth, predicted)        # arrays: diagnosed
    check_order("the order of the backward steps", ran, predicted)
    check_table("the dependency counts", engine_counts, yours)

:func:`call_answer` runs a function the learner wrote, turning an error in it into a
short message on their line.

A wrong prediction raises :class:`ExerciseError` saying where it first differs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from ..tensor import Tensor
from .diagnose import compare
from .report import Passed, call_learner, fail


def call_answer(function: Callable, *args, what: str = ""):
    """``function(*args)`` for a learner's function; an error in it becomes a short
    :class:`ExerciseError` naming their line (``raise NotImplementedError()`` included)."""
    return call_learner(function, args, what=what)


def check_answer(what: str, expected, got, proof: str = "") -> Passed:
    """``got`` must equal ``expected`` (numbers, lists, arrays or tensors, up to rounding)."""
    finding = compare(f"your {what}", as_numbers(expected, what), as_numbers(got, what))
    if finding is not None:
        fail(finding.sentences(), finding)
    return Passed(f"Your {what} is right.", proof)


def as_numbers(value, what: str):
    """A prediction as an array (a tensor's values, a list, a number); None stays None."""
    if value is None:
        return None
    if isinstance(value, Tensor):
        return value.detach().numpy()
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        fail(f"Your {what} is a {type(value).__name__}: write it as numbers (a numpy array).")


def check_order(what: str, expected: Sequence, got: Sequence, proof: str = "") -> Passed:
    """``got`` must list the same items as ``expected``, in the same order."""
    if not isinstance(got, (list, tuple)):
        fail(f"Write {what} as a list, not a {type(got).__name__}.")
    for position, (want, have) in enumerate(zip(expected, got), start=1):
        if want != have:
            fail(
                f"Your {what} differs from the engine's at position {position}: you wrote "
                f"{have!r} where {want!r} comes. Everything before it is right."
            )
    if len(got) != len(expected):
        fail(
            f"Your {what} has {len(got)} entries where the engine's has {len(expected)} "
            f"(the first {min(len(got), len(expected))} are right)."
        )
    return Passed(f"Your {what} is right.", proof)


def check_table(what: str, expected: Mapping, got: Mapping, proof: str = "") -> Passed:
    """``got`` must map the same keys to the same values as ``expected``."""
    if not isinstance(got, Mapping):
        fail(f"Write {what} as a dict, not a {type(got).__name__}.")
    missing = [k for k in expected if k not in got]
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        fail(f"Your {what} has no entry for {missing[0]!r}{more}.")
    extra = [k for k in got if k not in expected]
    if extra:
        fail(f"Your {what} has an entry for {extra[0]!r}, which the engine's has not.")
    for key, want in expected.items():
        if got[key] != want:
            fail(f"Your {what} says {got[key]!r} for {key!r}; the engine says {want!r}.")
    return Passed(f"Your {what} is right.", proof)
