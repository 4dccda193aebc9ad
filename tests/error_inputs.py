"""Error inputs by construction: bad arguments generated for every op and public function,
each one run in PyTorch too (PyTorch's OpInfo ``error_inputs`` is the model).

Two generators, both derived from what the project already lists, so an op or a public
function is covered the day it is added:

* :func:`sample_cases` takes every registry sample (``tests/samples``: each registered op
  called as a user calls it, with PyTorch's same call) and replaces one tensor argument
  at a time by a bad one: ``None``, a string, a list of strings, a complex, bool or
  integer tensor, a 0-d or empty tensor, one with an extra dimension, NaN or inf
  elements, an index out of range, a Python int that overflows 64 bits.
* :func:`api_cases` takes every public function of ``workbench``, ``workbench.Tensor``
  and ``workbench.nn.functional`` that PyTorch has too, calls it on a small float tensor
  with its required arguments filled in from their names (``dim`` → 1, ``other`` → a
  tensor), and replaces one argument at a time: a dim out of range, a string, ``None``,
  a float, NaN, a negative size, an int over 64 bits, a complex or bool tensor.

A generated call is an error case only where PyTorch raises: calls PyTorch accepts are
dropped when the table is made and are not counted. Each case then requires of the
workbench the same builtin exception type as PyTorch's (PyTorch's own classes mapped to
the builtin they derive from), a message that names the op and the argument, and its
inputs unchanged afterwards (``tests/test_error_inputs.py``).
"""

from __future__ import annotations

import inspect
import itertools
import os
import re
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

import workbench as wb
import workbench.nn.functional as F
from tests.samples import Sample, all_samples
from workbench.ops.registry import OPS

# The builtin exception types an error is judged by, most specific first.
BUILTINS = (
    IndexError,
    KeyError,
    NotImplementedError,
    OverflowError,
    ZeroDivisionError,
    TypeError,
    ValueError,
    AttributeError,
    RuntimeError,
    ArithmeticError,
    LookupError,
    Exception,
)


def builtin_of(error: BaseException) -> type:
    """The builtin class a raised error is judged by: ``torch.OutOfMemoryError`` is a
    RuntimeError, ``torch._C._LinAlgError`` too; an IndexError is an IndexError."""
    return next(kind for kind in BUILTINS if isinstance(error, kind))


@dataclass
class ErrorCase:
    """One bad call. ``make(lib)`` builds ``(call, inputs)`` for ``lib`` (``wb`` or
    ``torch``): ``call()`` makes the call, ``inputs`` are the tensors it is given, which
    must be unchanged afterwards. ``names`` are the words that name the op in a message,
    ``argument`` the words that name the argument (its name, or the bad value's type,
    dtype or shape)."""

    id: str
    make: Callable
    names: tuple
    argument: tuple
    source: str  # "sample:<registry sample>"
    op: str = ""  # the registered op the call is about
    torch_error: type | None = field(default=None)


# ------------------------------------------------------------------ converting inputs
def to_lib(lib, value, requires_grad=False):
    if isinstance(value, np.ndarray):
        grad = requires_grad and value.dtype.kind in "fc"
        if lib is torch:
            return torch.tensor(value, requires_grad=grad)
        return wb.tensor(value, requires_grad=grad)
    return value


# ------------------------------------------------------------------ bad tensor arguments
DTYPE_WORDS = {
    "complex": ("complex", "Complex"),
    "bool": ("bool", "Bool"),
    "int": ("int64", "Long", "integer", "int"),
    "float": ("float", "Float", "Double"),
}


def bad_tensors(array: np.ndarray) -> list:
    """``(label, replacement, words that name it)`` for one tensor argument ``array``."""
    shape = array.shape
    out = [
        ("None", None, ("None", "NoneType")),
        ("str", "a", ("str",)),
        ("list_of_str", ["a", "b"], ("str", "list")),
        ("complex", array.astype(np.complex128) + 1j, DTYPE_WORDS["complex"]),
        ("bool", array != 0, DTYPE_WORDS["bool"]),
        ("zero_dim", np.array(array.reshape(-1)[0] if array.size else 0, dtype=array.dtype), ()),
        ("empty", np.zeros((0,), dtype=array.dtype), ("0",)),
        ("extra_dim", np.stack([array, array, array]), ("3",)),
        ("huge_int", 2**70, ("1180591620717411303424", "int", "70")),
    ]
    if array.dtype.kind == "f":
        out.append(("int", np.ones(shape, dtype=np.int64), DTYPE_WORDS["int"]))
        out.append(("nan", np.full(shape, np.nan), ("nan",)))
        out.append(("inf", np.full(shape, np.inf), ("inf",)))
    if array.dtype.kind in "iu":
        out.append(("float", array.astype(np.float64), DTYPE_WORDS["float"]))
        big = int(np.abs(array).max(initial=0)) + 1000
        out.append(("index_too_big", np.full(shape, big, dtype=array.dtype), (str(big),)))
        out.append(("index_too_small", np.full(shape, -big, dtype=array.dtype), (str(-big),)))
    return out


OPERATOR_WORDS = {
    "add": ("+",),
    "sub": ("-",),
    "mul": ("*",),
    "div": ("/",),
    "remainder": ("%",),
    "floor_divide": ("//",),
    "pow": ("**",),
    "matmul": ("@",),
    "neg": ("-",),
    "getitem": ("index", "[]", "subscript"),
}


def op_words(sample) -> tuple:
    words = {sample.name.split(":")[0]}
    for op in sample.ops:
        words.add(op)
        words.update(OPERATOR_WORDS.get(op, ()))
    return tuple(sorted(words))


def input_names(sample) -> tuple:
    names = {"input", "other", "self", "tensor", "argument", "operand"}
    for op in sample.ops:
        if op in OPS:
            names.update(OPS[op].input_names)
    return tuple(sorted(names))


# Ops a user calls through another name: ``x[i]`` and ``x.max(dim)``.
CALLED_AS = {"index": "__getitem__", "max_dim": "max"}


def user_facing(op: str) -> bool:
    """Whether a user calls ``op`` (``wb.exp``, ``x.sum``, ``F.conv2d``, ``x[i]``); the
    rest (``conv2d_input_grad``, ``start_checkpoint``) only ever get inputs that the
    engine made, never a user's."""
    name = CALLED_AS.get(op, op)
    return any(hasattr(where, name) for where in (wb, wb.Tensor, F))


def sample_cases() -> list:
    cases = []
    for sample in all_samples():
        if sample.torch_fn is None or not user_facing(sample.ops[0]):
            continue
        arrays, requires = sample.arrays(), sample.requires()
        for position, array in enumerate(arrays):
            if not isinstance(array, np.ndarray):
                continue
            for label, bad, words in bad_tensors(array):
                cases.append(_sample_case(sample, arrays, requires, position, label, bad, words))
        cases.extend(_function_form_cases(sample, arrays, requires))
    return cases


NOT_TENSORS = ("None", "str", "list_of_str", "huge_int")


def _function_form_cases(sample, arrays, requires) -> list:
    """The sample's inputs given to ``wb.<op>`` and ``torch.<op>`` with one of them not a
    tensor: samples written as methods (``x.exp()``) say nothing about ``wb.exp(None)``."""
    op = sample.ops[0]
    if not (callable(getattr(wb, op, None)) and callable(getattr(torch, op, None))):
        return []
    function_form = Sample(sample.name, sample.ops, getattr(wb, op), (), getattr(torch, op))
    try:
        for lib in (wb, torch):
            with _quiet():
                (function_form.fn if lib is wb else function_form.torch_fn)(
                    *[to_lib(lib, a, r) for a, r in zip(arrays, requires)]
                )
    except Exception:  # noqa: BLE001 - the sample's inputs do not fit the function form
        return []
    cases = []
    for position, array in enumerate(arrays):
        if isinstance(array, np.ndarray):
            for label, bad, words in bad_tensors(array):
                if label in NOT_TENSORS:
                    case = _sample_case(
                        function_form, arrays, requires, position, label, bad, words
                    )
                    case.id = f"{op}(){case.id[len(sample.name) :]}"
                    cases.append(case)
    return cases


# Samples whose PyTorch half is written out for the gradient test rather than called, with
# the PyTorch call a user makes: that call's errors are the ones to match. l1_loss and the
# 1- and inf-norms are written with d · sign(d) (torch's abs and norm have a ZeroTensor
# second derivative the registry test cannot read), and sign() refuses complex inputs and
# 2**70 - tensor overflows, where F.l1_loss and Tensor.norm take complex inputs and
# F.l1_loss fails on a Python int with Python's own AttributeError.
TORCH_CALLED = {
    "l1_loss": lambda a, b: torch.nn.functional.l1_loss(a, b),
    "norm:p1": lambda x: x.norm(1, dim=1),
    "norm:inf": lambda x: x.norm(float("inf"), dim=1, keepdim=True),
}


def _sample_case(sample, arrays, requires, position, label, bad, words) -> ErrorCase:
    values = list(arrays)
    values[position] = bad
    theirs = TORCH_CALLED.get(sample.name, sample.torch_fn)

    def make(lib):
        inputs = [to_lib(lib, v, r) for v, r in zip(values, requires)]
        fn = theirs if lib is torch else sample.fn
        return (lambda: fn(*inputs)), inputs

    return ErrorCase(
        id=f"{sample.name}[{position}]={label}",
        make=make,
        names=op_words(sample),
        argument=input_names(sample) + words,
        source=f"sample:{sample.name}",
        op=sample.ops[0],
    )


# Python's own errors for a bad value used by a sample's code before any library call
# (``None > 0``, ``"a"[0, 1]``, ``2.0 ** 2**70``): they say nothing about an op.
PYTHON_ERRORS = re.compile(
    r"not supported between instances of|object is not subscriptable|indices must be "
    r"integers|Numerical result out of range|object has no attribute"
)


def torch_raises(case: ErrorCase) -> type | None:
    """The builtin class of PyTorch's error for ``case``, or None where PyTorch accepts
    it or the error is Python's own, raised before the call reached PyTorch."""
    try:
        call, _ = case.make(torch)
        with _quiet():
            call()
    except Exception as err:  # noqa: BLE001 - any error PyTorch raises makes it a case
        if PYTHON_ERRORS.search(str(err)):
            return None
        return builtin_of(err)
    return None


def torch_message(case: ErrorCase) -> str | None:
    """PyTorch's error message for ``case`` (None where it accepts it)."""
    try:
        call, _ = case.make(torch)
        with _quiet():
            call()
    except Exception as err:  # noqa: BLE001 - its words are compared
        return str(err)
    return None


class _quiet:
    """A bad call leaves nothing behind: no warning shown, both libraries' random states,
    default dtypes and grad modes as they were (a sample that draws random numbers, a
    call that fails half way through a mode change, must not move the next test's)."""

    def __enter__(self):
        self._warnings = warnings.catch_warnings()
        self._warnings.__enter__()
        warnings.simplefilter("ignore")
        self._state = (
            wb.get_rng_state(),
            torch.get_rng_state(),
            wb.get_default_dtype(),
            torch.get_default_dtype(),
            wb.is_grad_enabled(),
            torch.is_grad_enabled(),
        )

    def __exit__(self, *exc):
        ours, theirs, our_dtype, their_dtype, our_grad, their_grad = self._state
        wb.set_rng_state(ours)
        torch.set_rng_state(theirs)
        wb.set_default_dtype(our_dtype)
        torch.set_default_dtype(their_dtype)
        wb.set_grad_enabled(our_grad)
        torch.set_grad_enabled(their_grad)
        self._warnings.__exit__(*exc)
        return False


def _fails_in_sample_code(case: ErrorCase) -> bool:
    """Whether the workbench's half fails in the sample's own code with one of Python's
    errors (``None.norm()`` where PyTorch's half calls ``torch.linalg.norm(None)``): the
    call never reached the workbench, so it says nothing about it."""
    try:
        call, _ = case.make(wb)
        with _quiet():
            call()
    except Exception as err:  # noqa: BLE001 - only where it failed matters
        frames = traceback.extract_tb(err.__traceback__)
        in_sample = bool(frames) and f"tests{os.sep}samples" in frames[-1].filename
        return in_sample and bool(PYTHON_ERRORS.search(str(err)))
    return False


def error_cases() -> list:
    out, seen = [], set()
    for case in sample_cases() + api_cases():
        if case.id in seen:  # the function form of an op with several samples
            continue
        seen.add(case.id)
        kind = torch_raises(case)
        if kind is not None and not _fails_in_sample_code(case):
            case.torch_error = kind
            out.append(case)
    return out


# ------------------------------------------------------------------ judging the workbench
def snapshot(inputs) -> list:
    return [x.detach().numpy().copy() if isinstance(x, wb.Tensor) else None for x in inputs]


def unchanged(before, inputs) -> bool:
    return all(
        b is None or (np.array_equal(b, x.detach().numpy(), equal_nan=True))
        for b, x in zip(before, inputs)
    )


def mentions(message: str, words) -> bool:
    return any(word in message for word in words)


LEADING_NAME = re.compile(r"^(\w+)(\(\))?[:\s]")


def names_an_op(message: str, words) -> bool:
    """The message names the sample's op, or starts with the name of the op that failed
    (``gt: ...`` where a sample's ``where(c > 0, a, b)`` compares a complex ``c``)."""
    if mentions(message, words):
        return True
    found = LEADING_NAME.match(message)
    return bool(found) and (found.group(1) in OPS or user_facing(found.group(1)))


def verdict(case: ErrorCase) -> str:
    """``"ok"``, or what is wrong with the workbench's answer to ``case``."""
    call, inputs = case.make(wb)
    before = snapshot(inputs)
    try:
        with _quiet():
            call()
    except Exception as err:  # noqa: BLE001 - the error is what is judged
        error = err
    else:
        return f"no error: PyTorch raises {case.torch_error.__name__}"
    message = str(error)
    if not isinstance(error, case.torch_error):
        theirs = case.torch_error.__name__
        return f"type: {type(error).__name__} where PyTorch raises {theirs}: {message}"
    if not names_an_op(message, case.names) and message != torch_message(case):
        # (PyTorch's own words pass: a list operand, ``["a"] + x``, is handed back to
        # Python by both libraries' operators, and Python's error is the answer in both)
        return f"op: the message names none of {case.names}: {message}"
    if not mentions(message, case.argument):
        return f"argument: the message names none of {case.argument}: {message}"
    if not unchanged(before, inputs):
        return "inputs: the call changed its inputs before raising"
    return "ok"


# ------------------------------------------------------------------ deliberate differences
@dataclass(frozen=True)
class Decision:
    """Where the workbench is friendlier than PyTorch on purpose: for ``ops`` given the
    bad values ``labels``, it answers with one of ``outcomes`` (None: it accepts the call)."""

    ops: frozenset
    labels: frozenset
    outcomes: tuple
    reason: str


FRIENDLIER = [
    Decision(
        frozenset(
            "elu gelu silu softplus leaky_relu relu softmax log_softmax layer_norm batch_norm "
            "dropout norm linear addmm matmul mm dot conv2d binary_cross_entropy "
            "binary_cross_entropy_with_logits nll_loss cross_entropy round floor ceil trunc "
            "abs argmax argmin sub take l1_loss".split()
        ),
        frozenset({"int", "bool"}),
        (None,),
        "Integer and bool tensors given to a floating-point function, a matrix product or a "
        "loss are promoted to the default float dtype (dispatch.float_input, numpy's "
        "promotion), so a lesson's wb.tensor([1, 2]) works everywhere; PyTorch refuses many "
        "of these ('not implemented for Long', 'expected m1 and m2 to have the same dtype').",
    ),
    Decision(
        frozenset(
            "maximum minimum logical_and logical_or logical_xor where masked_fill "
            "eq ne lt le gt ge".split()
        ),
        frozenset({"huge_int"}),
        (None, OverflowError),
        "maximum, minimum, where, masked_fill, the comparisons and the logical ops take a "
        "Python number where PyTorch wants a tensor (wb.maximum(x, 0), wb.where(x > 0, x, 0), "
        "wb.lt(0, x)): a number beyond 64 "
        "bits is then refused as every number argument is, with OverflowError, where PyTorch "
        "says TypeError (a tensor was expected); a Python bool condition is accepted.",
    ),
    Decision(
        frozenset({"index_put"}),
        frozenset({"int", "bool", "complex"}),
        (None,),
        "wb.index_put(x, key, values) is x[key] = values out of place (the op that records "
        "an indexed assignment), so it takes values of any dtype as assignment does: an "
        "integer, bool or complex x or values is promoted with the other (numpy's "
        "promotion), where torch.index_put requires both of one dtype ('Index put requires "
        "the source and destination dtypes match').",
    ),
    Decision(
        frozenset({"take"}),
        frozenset({"extra_dim"}),
        (None,),
        "wb.take(x, index, axis) is TVM's and numpy's take: an index of any shape picks the "
        "slices along axis and puts its dims in axis's place (the rows of an embedding are "
        "take along dim 0 with a 2-D index); index_select, its PyTorch counterpart, wants a "
        "vector ('Index is supposed to be a vector').",
    ),
    Decision(
        frozenset({"var", "std"}),
        frozenset({"bool"}),
        (None,),
        "x.var(True) is PyTorch's legacy form of x.var(unbiased=True), and a Python function "
        "cannot tell True given by position from dim=True given by name, so the workbench "
        "reads both as unbiased; PyTorch refuses the named one ('must be tuple of ints').",
    ),
]


def decision_for(case: ErrorCase) -> Decision | None:
    label = case.id.rsplit("=", 1)[1].rstrip(")")  # "op[0]=bool", "wb.var(dim=bool)"
    for decision in FRIENDLIER:
        if case.op in decision.ops and label in decision.labels:
            return decision
    return None


def as_decided(decision: Decision, verdict: str) -> bool:
    """Whether the workbench's answer (``verdict``) is the one ``decision`` records."""
    for outcome in decision.outcomes:
        if outcome is None and verdict.startswith("no error"):
            return True
        if outcome is not None and verdict.startswith(f"type: {outcome.__name__} "):
            return True
    return False


# ------------------------------------------------------------------ the public API's arguments
# Bad values for the arguments that are not tensors, by the argument's name (PyTorch's
# names, which the workbench's signatures use too): (label, value, words naming it).
DIM_LIKE = ("dim", "dim0", "dim1", "start_dim", "end_dim")
BAD_ARGUMENTS = {
    **{
        name: [
            ("out_of_range", 5, ("5",)),
            ("negative_out_of_range", -6, ("-6",)),
            ("str", "a", ("str",)),
            ("float", 1.5, ("float", "1.5")),
            ("huge_int", 2**70, ("int", "1180591620717411303424")),
            ("nan", float("nan"), ("float", "nan")),
            ("bool", True, ("bool",)),
        ]
        for name in DIM_LIKE
    },
    "dims": [
        ("out_of_range", (0, 5), ("5",)),
        ("repeated", (0, 0), ("0", "repeat")),
        ("str", "a", ("str",)),
    ],
    "keepdim": [("str", "a", ("str",)), ("list", [1], ("list",))],
    "dtype": [("str", "a", ("str",)), ("int", 5, ("int",))],
    "size": [
        ("negative", (-2, 3), ("-2",)),
        ("huge", (2**70,), ("int", "too big", "1180591620717411303424")),
        ("str", "a", ("str",)),
        ("float", (1.5,), ("float",)),
    ],
    "diagonal": [
        ("str", "a", ("str",)),
        ("float", 1.5, ("float",)),
        ("huge_int", 2**70, ("int", "1180591620717411303424")),
    ],
    "chunks": [("zero", 0, ("0",)), ("negative", -1, ("-1",)), ("str", "a", ("str",))],
    "alpha": [("str", "a", ("str",)), ("None", None, ("None",)), ("list", [1], ("list",))],
    "correction": [("str", "a", ("str",)), ("list", [1], ("list",))],
    "unbiased": [("str", "a", ("str",)), ("list", [1], ("list",))],
    "p": [("str", "a", ("str",)), ("list", [1], ("list",))],
    "rtol": [("str", "a", ("str",)), ("None", None, ("None",))],
    "atol": [("str", "a", ("str",)), ("None", None, ("None",))],
    "min": [("str", "a", ("str",)), ("list_of_str", ["a"], ("list",))],
    "max": [("str", "a", ("str",)), ("list_of_str", ["a"], ("list",))],
}
BAD_ARGUMENTS["sizes"] = BAD_ARGUMENTS["shape"] = BAD_ARGUMENTS["size"]

# Values for required arguments, tried in order until both libraries accept the call.
FILLERS = {
    "dim": (1,),
    "dim0": (0,),
    "dim1": (1,),
    "dims": ((0, 1), (1,)),
    "start_dim": (0,),
    "end_dim": (1,),
    "size": ((4, 6), (2, 3, 4), 2),
    "sizes": ((4, 6), (2, 3, 4), 2),
    "shape": ((4, 6), (2, 3, 4)),
    "chunks": (2,),
    "diagonal": (0,),
    "p": (2,),
    "other": ("tensor", 2.0),
    "min": (0.5,),
    "max": (0.5,),
}


def api_functions() -> list:
    """``(label, workbench function, torch function)`` for the public functions and
    methods both libraries have; methods are called on their first argument."""
    out = []
    for where, theirs, label in ((wb, torch, "wb"), (wb.Tensor, torch.Tensor, "Tensor")):
        for name in sorted(dir(where)):
            ours = getattr(where, name, None)
            if name.startswith("_") or isinstance(ours, type) or not callable(ours):
                continue
            if hasattr(theirs, name) and callable(getattr(theirs, name)):
                out.append((f"{label}.{name}", name, ours, getattr(theirs, name)))
    return out


TENSOR_FIRST = ("self", "input", "tensor", "x")


def _parameters(function) -> list:
    """The parameters after the tensor, for a function whose first parameter is a tensor
    (never ``manual_seed`` or ``set_default_dtype``: a base call must change no state)."""
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return []
    if not parameters or parameters[0].name not in TENSOR_FIRST:
        return []
    return parameters[1:]


def _base_call(function, theirs, parameters):
    """Keyword arguments for the required parameters that both libraries accept, or None."""
    required = [
        p
        for p in parameters
        if p.default is inspect.Parameter.empty
        and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    if any(p.name not in FILLERS for p in required):
        return None
    choices = [[(p.name, v) for v in FILLERS[p.name]] for p in required]
    for combination in itertools.product(*choices):
        kwargs = dict(combination)
        if all(_runs(lib, fn, kwargs) for lib, fn in ((wb, function), (torch, theirs))):
            return kwargs
    return None


def _input(lib):
    return lib.tensor(np.arange(24.0).reshape(2, 3, 4) / 10)


def _filled(lib, kwargs: dict) -> dict:
    return {k: (_input(lib) if v == "tensor" else v) for k, v in kwargs.items()}


def _runs(lib, fn, kwargs) -> bool:
    try:
        with _quiet():
            fn(_input(lib), **_filled(lib, kwargs))
    except Exception:  # noqa: BLE001 - the base call must simply work
        return False
    return True


def api_cases() -> list:
    cases = []
    for label, name, ours, theirs in api_functions():
        parameters = _parameters(ours)
        if not any(p.name in BAD_ARGUMENTS for p in parameters):
            continue
        base = _base_call(ours, theirs, parameters)
        if base is None:
            continue
        for parameter in parameters:
            for bad_label, bad, words in BAD_ARGUMENTS.get(parameter.name, ()):
                cases.append(
                    _api_case(
                        label, name, ours, theirs, base, parameter.name, bad_label, bad, words
                    )
                )
    return cases


def _api_case(label, name, ours, theirs, base, argument, bad_label, bad, words) -> ErrorCase:
    def make(lib):
        x = _input(lib)
        kwargs = {**_filled(lib, base), argument: bad}
        fn = ours if lib is wb else theirs
        return (lambda: fn(x, **kwargs)), [x]

    return ErrorCase(
        id=f"{label}({argument}={bad_label})",
        make=make,
        names=(name, name.rstrip("_")),
        argument=(argument, repr(bad), *words),
        source=f"api:{label}",
        op=name,
    )
