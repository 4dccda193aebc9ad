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

import reprlib
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from ..core.tensor import Tensor
from .diagnose import ATOL, RTOL, compare
from .guard import checker
from .report import ExerciseError, Passed, call_learner, fail


@checker
def call_answer(function: Callable, *args, what: str = ""):
    """``function(*args)`` for a learner's function; an error in it becomes a short
    :class:`ExerciseError` naming their line (``raise NotImplementedError()`` included)."""
    return call_learner(function, args, what=what)


@checker
def check_answer(what: str, expected, got, proof: str = "") -> Passed:
    """``got`` must equal ``expected`` (numbers, lists, arrays or tensors, up to rounding).

    Whole numbers count as floats; complex numbers for a real ``expected`` (even with
    zero imaginary parts), True/False, text and numbers beyond float64 are wrong.
    """
    rtol, atol = tolerance_of(got)
    expected, got = as_numbers(expected, what), as_numbers(got, what)
    finding = compare(f"your {what}", expected, got, rtol=rtol, atol=atol)
    if finding is not None:
        fail(finding.sentences(), finding)
    return Passed(f"Your {what} is right.", proof)


# One unit in the last place (at 1) of the floats narrower than float32 an answer may come
# in: a right answer rounded to them is right within it.
LOW_PRECISION = {"bfloat16": (2.0**-7, ATOL), "float16": (2.0**-10, 2.0**-24)}


def tolerance_of(value) -> tuple[float, float]:
    """``(rtol, atol)`` for a prediction: the checker's own, or a bfloat16 or float16
    answer's rounding (an answer cannot be closer to the truth than its float type)."""
    name = str(getattr(value, "dtype", "")).removeprefix("torch.")
    rtol, atol = LOW_PRECISION.get(name, (RTOL, ATOL))
    return max(rtol, RTOL), max(atol, ATOL)


def as_numbers(value, what: str):
    """A prediction as an array (a tensor's values, a list, a number); None stays None.

    Whole numbers become float64 (a prediction of 2 for 2.0 is right); booleans, text,
    numbers too large for a float64 and ragged lists are refused with a sentence. A
    complex prediction stays complex, so that :func:`compare` sees its imaginary parts.
    """
    if value is None:
        return None
    array = values_of(value, what)
    if array.dtype.kind == "b":
        fail(f"Your {what} holds True/False values: write it as numbers.")
    if array.dtype.kind not in "iufc":
        fail(f"Your {what} is a {type(value).__name__} of {kind_text(array)}: write it as numbers.")
    if array.dtype.kind in "iu":
        return array.astype(np.float64)
    return array


def values_of(value, what: str) -> np.ndarray:
    """``value``'s numbers as an array: a workbench or torch tensor's, or numpy's reading."""
    if isinstance(value, Tensor):
        return widened(value.detach().numpy())
    if is_torch_tensor(value):
        value = value.detach().cpu().resolve_conj().resolve_neg()
        if str(value.dtype) == "torch.bfloat16":  # numpy has no bfloat16 of its own
            value = value.float()
    elif not readable(value):
        fail(
            f"Your {what} is a {type(value).__name__}: write it as numbers (a number, a list "
            "of numbers, an array or a tensor)."
        )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # numpy's warning about a ragged list, among others
            return widened(np.asarray(value))
    except OverflowError:
        fail(f"Your {what} holds a number too large for a float64 (over 1.8e308).")
    except (TypeError, ValueError, RuntimeError, Warning):
        fail(f"Your {what} is a {type(value).__name__} that is not a list of numbers of one shape.")


DEEPEST = 8  # lists nested deeper than this are no answer


def readable(value, depth: int = 0) -> bool:
    """``value`` is something numpy reads without asking the learner's code: a built-in
    number or text, an array or numpy's own scalar, a workbench tensor, or a list or tuple
    of these. An object of the learner's own class could answer numpy's ``__array__`` or
    ``__float__`` with anything, the checker's own expected values included."""
    if type(value) in PLAIN_TYPES or isinstance(value, (np.ndarray, Tensor)):
        return True
    if is_torch_tensor(value):
        return True
    if isinstance(value, np.generic):
        return type(value).__module__ == "numpy"
    if type(value) in (list, tuple) and depth < DEEPEST:
        return all(readable(item, depth + 1) for item in value)
    return False


def widened(array: np.ndarray) -> np.ndarray:
    """A bfloat16 array (ml_dtypes': numpy reads it as raw bytes) as float32, exactly."""
    return array.astype(np.float32) if array.dtype.name == "bfloat16" else array


def is_torch_tensor(value) -> bool:
    """A real PyTorch tensor, recognised without importing torch (a learner who has one
    has imported it): not an object of their own class that only says it is from torch."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def kind_text(array: np.ndarray) -> str:
    if array.dtype.kind == "O":
        return "Python objects (numbers too large for a float64, or not numbers)"
    if array.dtype.kind in "US":
        return "text"
    return f"{array.dtype} values"


@checker
def check_order(what: str, expected: Sequence, got: Sequence, proof: str = "") -> Passed:
    """``got`` must list the same items as ``expected``, in the same order (each read as
    a plain value: :func:`same_entry`)."""
    if not isinstance(got, (list, tuple)):
        fail(f"Write {what} as a list, not a {type(got).__name__}.")
    got = list(list.__iter__(got) if isinstance(got, list) else tuple.__iter__(got))  # read once
    for position, (want, have) in enumerate(zip(expected, got), start=1):
        if not same_entry(want, have):
            fail(
                f"Your {what} differs from the engine's at position {position}: you wrote "
                f"{short(have)} where {short(want)} comes. Everything before it is right."
            )
    if len(got) != len(expected):
        fail(
            f"Your {what} has {len(got)} entries where the engine's has {len(expected)} "
            f"(the first {min(len(got), len(expected))} are right)."
        )
    return Passed(f"Your {what} is right.", proof)


@checker
def check_table(what: str, expected: Mapping, got: Mapping, proof: str = "") -> Passed:
    """``got`` must map the same keys to the same values as ``expected``."""
    if not isinstance(got, dict):
        fail(f"Write {what} as a dict, not a {type(got).__name__}.")
    got = {plain_entry(key): value for key, value in dict.items(got)}  # read once
    if NOT_PLAIN in got:
        fail(f"Write the keys of {what} as text or numbers.")
    missing = [k for k in expected if not has_key(got, k)]
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        fail(f"Your {what} has no entry for {short(missing[0])}{more}.")
    extra = [k for k in got if not has_key(expected, k)]
    if extra:
        fail(f"Your {what} has an entry for {short(extra[0])}, which the engine's has not.")
    for key, want in expected.items():
        if not same_entry(want, got[key]):
            fail(
                f"Your {what} says {short(got[key])} for {short(key)}; "
                f"the engine says {short(want)}."
            )
    return Passed(f"Your {what} is right.", proof)


def same_entry(want, have) -> bool:
    """One entry of an order or a table: equal, and of the same kind.

    Arrays and tensors compare by shape, kind of number and values; ``True`` is not
    the count 1, nor ``1.5`` the count 1; a comparison that fails is a difference. The
    learner's entry is read as a plain value (:func:`plain_entry`): an object of their
    own class, whose ``==`` could say anything, is never the engine's entry.
    """
    have = plain_entry(have)
    if have is NOT_PLAIN:
        return False
    if isinstance(have, bool) != isinstance(want, bool):
        return False
    if isinstance(want, int) and isinstance(have, float) and not have.is_integer():
        return False
    if any(isinstance(v, (np.ndarray, Tensor)) or is_torch_tensor(v) for v in (want, have)):
        return same_array(want, have)
    try:
        return bool(want == have)
    except Exception:  # an object whose == raises or is ambiguous: not the engine's entry
        return False


NOT_PLAIN = object()  # what plain_entry gives for an object of the learner's own class
PLAIN_TYPES = (bool, int, float, complex, str, bytes, type(None))
# A subclass of a built-in type, read as that type's own value (not through its methods).
AS_BUILT_IN = ((str, str.__str__), (int, int.__int__), (float, float.__float__))


def plain_entry(value):
    """``value`` as a plain value: a built-in number, text or None, an array or a tensor as
    it is, a tuple item by item; a str, int or float subclass as that built-in's own value
    (its ``==`` or ``__float__`` never asked); :data:`NOT_PLAIN` for anything else."""
    if type(value) in PLAIN_TYPES or isinstance(value, (np.ndarray, Tensor)):
        return value
    if isinstance(value, np.generic) and type(value).__module__ == "numpy":
        return value.item()  # numpy's own scalar (a count from np.sum) as Python's
    if is_torch_tensor(value):
        return value
    if type(value) is tuple:
        items = tuple(plain_entry(item) for item in value)
        return NOT_PLAIN if any(item is NOT_PLAIN for item in items) else items
    for kind, read in AS_BUILT_IN:
        if isinstance(value, kind):
            return read(value)
    return NOT_PLAIN


def same_array(want, have) -> bool:
    try:
        want, have = (np.asarray(values_of(v, "entry")) for v in (want, have))
    except ExerciseError:
        return False
    return want.dtype.kind == have.dtype.kind and np.array_equal(want, have)


def has_key(table: Mapping, key) -> bool:
    try:
        return key in table
    except TypeError:  # an unhashable key
        return False


SHORT = reprlib.Repr()
SHORT.maxstring = SHORT.maxother = 60


def short(value) -> str:
    """``repr(value)``, cut short: an answer may be a megabyte long."""
    return SHORT.repr(value)
