"""Tensor's methods and operators are written out in tensor.py, each a call of its op.

``x.exp()`` and ``x * y`` used to be ops attached to the class at import time, which
"go to definition" could not follow. These tests keep them written out in the class
body, check that each gives what its op gives (values and gradients), and that
nothing attaches methods to Tensor from outside.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import operator
import re
from pathlib import Path

import numpy as np
import pytest
import torch

import workbench as wb
from workbench.core.tensor import Tensor

ops = importlib.import_module("workbench.ops")
WORKBENCH = Path(wb.__file__).parent
TENSOR_PY = WORKBENCH / "core/tensor.py"

# The names that used to be attached from outside the class (METHOD_OPS,
# MORE_METHOD_OPS, OPERATOR_OPS), then the rest of the operators and op methods.
ONCE_ATTACHED = (
    "abs amax amin argmax argmin clamp clip contiguous cos div eq exp expand_as flatten "
    "ge gt le log lt matmul max maximum mean min minimum mul ne neg pow relu sigmoid sign "
    "sin sqrt squeeze sub sum t tanh transpose unsqueeze add logical_not logical_and "
    "logical_or dot "
    "ceil chunk cumprod cumsum erf expm1 flip floor gather index_select log1p log_softmax "
    "logsumexp masked_fill norm prod reciprocal repeat roll round rsqrt softmax split "
    "square std take tan tile tril triu trunc unbind var "
    "__add__ __sub__ __mul__ __truediv__ __pow__ __matmul__ __neg__"
).split()
OPERATORS = (
    "__radd__ __rsub__ __rmul__ __rtruediv__ __rpow__ __rmatmul__ __pos__ __abs__ "
    "__lt__ __le__ __gt__ __ge__ __eq__ __ne__ __and__ __or__ __xor__ __invert__ "
    "__getitem__ __setitem__ __iadd__ __isub__ __imul__ __itruediv__ __ipow__"
).split()
OTHER_OP_METHODS = (
    "T mT reshape view permute expand clone where add_ sub_ mul_ div_ pow_ clamp_ zero_ fill_ copy_"
).split()
ALL_NAMES = ONCE_ATTACHED + OPERATORS + OTHER_OP_METHODS


def _function(value):
    return value.fget if isinstance(value, property) else value


def _names_in_class_body() -> set[str]:
    """The names that the ``class Tensor`` statement itself defines (def or assignment)."""
    tree = ast.parse(TENSOR_PY.read_text())
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Tensor"]
    names = set()
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


CLASS_BODY = _names_in_class_body()


# ------------------------------------------------------ (a) written in the class
@pytest.mark.parametrize("name", ALL_NAMES)
def test_method_is_written_in_the_class_body(name):
    assert name in CLASS_BODY, f"Tensor.{name} is not written in class Tensor"
    assert name in Tensor.__dict__
    source = inspect.getsourcefile(_function(Tensor.__dict__[name]))
    assert Path(source).resolve() == TENSOR_PY.resolve(), f"Tensor.{name} comes from {source}"


def test_every_function_of_tensor_comes_from_tensor_py():
    """Catches a method attached later from elsewhere, not only the names listed here."""
    elsewhere = []
    for name, value in vars(Tensor).items():
        function = _function(value)
        if isinstance(function, staticmethod):
            function = function.__func__
        if inspect.isfunction(function):
            if Path(inspect.getsourcefile(function)).resolve() != TENSOR_PY.resolve():
                elsewhere.append(name)
    assert not elsewhere


SAME_NAME_AS_OP = [
    n for n in ALL_NAMES if inspect.isfunction(getattr(ops, n, None)) and n != "where"
]


@pytest.mark.parametrize("name", SAME_NAME_AS_OP)
def test_method_takes_the_ops_arguments(name):
    """Same names, defaults and keyword-only markers as the op (``self`` for its input)."""

    def params(function):
        rest = list(inspect.signature(function).parameters.values())[1:]
        return [(p.name, p.kind, p.default) for p in rest]

    method = Tensor.__dict__[name]
    assert params(method) == params(getattr(ops, name))
    assert inspect.signature(method).return_annotation is not inspect.Signature.empty


# ---------------------------------------------- (b) same values and gradients as the op
def _samples() -> dict:
    """Fresh inputs, chosen so that neighbouring ops (lt/le, tril/triu...) differ."""
    rng = np.random.default_rng(0)

    def leaf(values):
        return wb.tensor(np.array(values, dtype=np.float64), requires_grad=True)

    return {
        "x": leaf([[0.3, -1.2, 0.7], [1.5, -0.4, 0.9]]),
        "y": leaf([[0.3, 0.0, 0.7], [1.0, -0.4, 2.0]]),  # equal, below and above x
        "p": leaf([[0.3, 1.2, 0.7], [1.5, 0.4, 0.9]]),  # positive, for log and friends
        "m": leaf(rng.standard_normal((3, 2))),
        "row": leaf([[0.5, -2.0, 1.5]]),
        "col": leaf([[0.5], [-2.0]]),
        "v": leaf([0.5, -2.0, 1.5]),
        "w": leaf([1.0, 0.25, -3.0]),
        "b": wb.tensor([[True, False, True], [False, False, True]]),
        "c": wb.tensor([[True, True, False], [False, True, True]]),
        "index": wb.tensor([[0, 2], [1, 1]]),
        "picks": wb.tensor([2, 0]),
        "array": rng.standard_normal((4, 2)),
    }


# (method, op, self sample, args, kwargs); a sample's name in args stands for the sample.
# Each case passes non-default arguments, so a method that drops one shows.
CASES = [
    # arithmetic operators
    ("__add__", "add", "x", ("y",), {}),
    ("__sub__", "sub", "x", ("y",), {}),
    ("__mul__", "mul", "x", ("y",), {}),
    ("__truediv__", "div", "x", ("p",), {}),
    ("__pow__", "pow", "p", ("y",), {}),
    ("__matmul__", "matmul", "x", ("m",), {}),
    ("__neg__", "neg", "x", (), {}),
    ("__abs__", "abs", "x", (), {}),
    # comparison and logical operators
    ("__lt__", "lt", "x", ("y",), {}),
    ("__le__", "le", "x", ("y",), {}),
    ("__gt__", "gt", "x", ("y",), {}),
    ("__ge__", "ge", "x", ("y",), {}),
    ("__eq__", "eq", "x", ("y",), {}),
    ("__ne__", "ne", "x", ("y",), {}),
    ("__and__", "logical_and", "b", ("c",), {}),
    ("__or__", "logical_or", "b", ("c",), {}),
    ("__xor__", "logical_xor", "b", ("c",), {}),
    ("__invert__", "logical_not", "b", (), {}),
    # indexing
    ("__getitem__", "getitem", "x", ((1, slice(0, 2)),), {}),
    ("gather", "gather", "x", (1, "index"), {}),
    ("index_select", "index_select", "x", (1, "picks"), {}),
    ("take", "take", "x", ("picks", 1), {}),
    ("masked_fill", "masked_fill", "x", ("b", 0.5), {}),
    # arithmetic
    ("add", "add", "x", ("y",), {"alpha": 2}),
    ("sub", "sub", "x", ("y",), {"alpha": 2}),
    ("mul", "mul", "x", ("y",), {}),
    ("div", "div", "x", ("p",), {}),
    ("pow", "pow", "p", ("y",), {}),
    ("neg", "neg", "x", (), {}),
    ("abs", "abs", "x", (), {}),
    ("reciprocal", "reciprocal", "p", (), {}),
    ("square", "square", "x", (), {}),
    ("maximum", "maximum", "x", ("y",), {}),
    ("minimum", "minimum", "x", ("y",), {}),
    ("clamp", "clamp", "x", (-0.5, 0.8), {}),
    ("clip", "clip", "x", (-0.5, 0.8), {}),
    ("matmul", "matmul", "x", ("m",), {}),
    ("dot", "dot", "v", ("w",), {}),
    # comparisons and logic
    ("eq", "eq", "x", ("y",), {}),
    ("ne", "ne", "x", ("y",), {}),
    ("lt", "lt", "x", ("y",), {}),
    ("le", "le", "x", ("y",), {}),
    ("gt", "gt", "x", ("y",), {}),
    ("ge", "ge", "x", ("y",), {}),
    ("logical_not", "logical_not", "b", (), {}),
    ("logical_and", "logical_and", "b", ("c",), {}),
    ("logical_or", "logical_or", "b", ("c",), {}),
    # elementwise math
    ("exp", "exp", "x", (), {}),
    ("expm1", "expm1", "x", (), {}),
    ("log", "log", "p", (), {}),
    ("log1p", "log1p", "p", (), {}),
    ("sqrt", "sqrt", "p", (), {}),
    ("rsqrt", "rsqrt", "p", (), {}),
    ("sin", "sin", "x", (), {}),
    ("cos", "cos", "x", (), {}),
    ("tan", "tan", "x", (), {}),
    ("tanh", "tanh", "x", (), {}),
    ("sigmoid", "sigmoid", "x", (), {}),
    ("relu", "relu", "x", (), {}),
    ("erf", "erf", "x", (), {}),
    ("sign", "sign", "x", (), {}),
    ("ceil", "ceil", "x", (), {}),
    ("floor", "floor", "x", (), {}),
    ("round", "round", "x", (), {"decimals": 1}),
    ("trunc", "trunc", "x", (), {}),
    # reductions
    ("sum", "sum", "x", (1, True), {"dtype": np.float32}),
    ("mean", "mean", "x", (1, True), {"dtype": np.float32}),
    ("prod", "prod", "x", (1, True), {"dtype": np.float32}),
    ("max", "max", "x", (1, True), {}),
    ("min", "min", "x", (1, True), {}),
    ("amax", "amax", "x", (1, True), {}),
    ("amin", "amin", "x", (1, True), {}),
    ("argmax", "argmax", "x", (1, True), {}),
    ("argmin", "argmin", "x", (1, True), {}),
    ("var", "var", "x", (1, None, True), {"correction": 0}),
    ("std", "std", "x", (1, None, True), {"correction": 0}),
    ("norm", "norm", "x", (1, 1, True, np.float32), {}),
    ("logsumexp", "logsumexp", "x", (1, True), {}),
    ("softmax", "softmax", "x", (0, np.float32), {}),
    ("log_softmax", "log_softmax", "x", (0, np.float32), {}),
    ("cumsum", "cumsum", "x", (1,), {"dtype": np.float32}),
    ("cumprod", "cumprod", "x", (1,), {"dtype": np.float32}),
    # shape
    ("reshape", "reshape", "x", (3, 2), {}),
    ("view", "view", "x", (3, 2), {}),
    ("permute", "permute", "x", (1, 0), {}),
    ("expand", "expand", "row", (2, 2, 3), {}),
    ("expand_as", "expand_as", "row", ("x",), {}),
    ("flatten", "flatten", "x", (0, 1), {}),
    ("squeeze", "squeeze", "col", (1,), {}),
    ("unsqueeze", "unsqueeze", "x", (1,), {}),
    ("transpose", "transpose", "x", (0, 1), {}),
    ("t", "t", "x", (), {}),
    ("contiguous", "contiguous", "x", (), {}),
    ("clone", "clone", "x", (), {}),
    ("flip", "flip", "x", (1,), {}),
    ("roll", "roll", "x", (1, 1), {}),
    ("repeat", "repeat", "x", (2, 1), {}),
    ("tile", "tile", "x", ((1, 2),), {}),
    ("tril", "tril", "x", (1,), {}),
    ("triu", "triu", "x", (1,), {}),
    # splitting
    ("chunk", "chunk", "x", (2, 1), {}),
    ("split", "split", "x", (2, 1), {}),
    ("unbind", "unbind", "x", (1,), {}),
]

# Methods whose op takes its arguments in another order.
REFLECTED = [
    ("__radd__", "add", "x", 2.5),
    ("__rsub__", "sub", "x", 2.5),
    ("__rmul__", "mul", "x", 2.5),
    ("__rtruediv__", "div", "x", 2.5),
    ("__rpow__", "pow", "x", 2.5),
]


def _outputs(result) -> list:
    return list(result) if isinstance(result, tuple) else [result]


def _value_and_gradient(call, inputs: list):
    """What ``call()`` returns, and the gradient of a weighted sum of it w.r.t. ``inputs``."""
    outs = _outputs(call())
    values = [(out.dtype, out.shape, out.detach().numpy()) for out in outs]
    weighted = [out for out in outs if out.requires_grad]
    if not weighted:
        return values, None
    rng = np.random.default_rng(1)
    loss = sum((out * wb.tensor(rng.standard_normal(out.shape))).sum() for out in weighted)
    grads = wb.autograd.grad(loss, inputs, allow_unused=True)
    return values, [None if g is None else g.numpy() for g in grads]


def assert_same(method_call, op_call, inputs: list) -> None:
    """Values (dtype, shape, numbers) and gradients agree, exactly."""
    got, got_grads = _value_and_gradient(method_call, inputs)
    want, want_grads = _value_and_gradient(op_call, inputs)
    assert len(got) == len(want)
    for (dtype, shape, value), (want_dtype, want_shape, want_value) in zip(got, want):
        assert (dtype, shape) == (want_dtype, want_shape)
        np.testing.assert_array_equal(value, want_value)
    assert (got_grads is None) == (want_grads is None)
    for grad, want_grad in zip(got_grads or [], want_grads or []):
        assert (grad is None) == (want_grad is None)
        if grad is not None:
            np.testing.assert_array_equal(grad, want_grad)


def check_case(method, op_name, self_name, args, kwargs) -> None:
    """``method(self, *args, **kwargs)`` must match ``ops.<op_name>(self, *args, **kwargs)``."""
    samples = _samples()
    this = samples[self_name]
    args = tuple(samples[a] if isinstance(a, str) else a for a in args)
    inputs = [t for t in (this, *args) if isinstance(t, Tensor) and t.requires_grad]
    op = getattr(ops, op_name)
    assert_same(lambda: method(this, *args, **kwargs), lambda: op(this, *args, **kwargs), inputs)


@pytest.mark.parametrize("name, op_name, self_name, args, kwargs", CASES, ids=[c[0] for c in CASES])
def test_method_matches_its_op(name, op_name, self_name, args, kwargs):
    check_case(getattr(Tensor, name), op_name, self_name, args, kwargs)


@pytest.mark.parametrize(
    "name, op_name, self_name, other", REFLECTED, ids=[c[0] for c in REFLECTED]
)
def test_reflected_operator_swaps_the_arguments(name, op_name, self_name, other):
    samples = _samples()
    this, other = samples[self_name], samples.get(other, other)
    op = getattr(ops, op_name)
    first = wb.tensor(other) if isinstance(other, np.ndarray) else other
    assert_same(lambda: getattr(this, name)(other), lambda: op(first, this), [this])


def test_transpose_properties_match_their_ops():
    x = _samples()["x"]
    assert_same(lambda: x.T, lambda: ops.permute(x, (1, 0)), [x])
    assert_same(lambda: x.mT, lambda: ops.transpose(x, -2, -1), [x])


def test_where_method_puts_self_second():
    s = _samples()
    x, y, b = s["x"], s["y"], s["b"]
    assert_same(lambda: x.where(b, y), lambda: ops.where(b, x, y), [x, y])


def test_unary_plus_is_the_tensor_itself():
    x = _samples()["x"]
    assert +x is x


def test_every_delegating_method_is_checked():
    checked = {c[0] for c in CASES} | {r[0] for r in REFLECTED} | {"T", "mT", "where", "__pos__"}
    checked.add("__rmatmul__")  # always hands back: test_operators_with_a_numpy_array...
    in_place = {"__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ipow__"}
    in_place |= {n for n in OTHER_OP_METHODS if n.endswith("_")}
    assert set(ALL_NAMES) - in_place <= checked


# The check above must be able to fail: each of these "methods" calls a neighbouring
# op, swaps arguments or drops one.
WRONG = [
    (lambda self: ops.expm1(self), "exp", "x", (), {}),
    (lambda self, other: ops.le(self, other), "lt", "x", ("y",), {}),
    (lambda self, other: ops.logical_or(self, other), "logical_and", "b", ("c",), {}),
    (lambda self, d: ops.triu(self, d), "tril", "x", (1,), {}),
    (
        lambda self, dim, keepdim, *, dtype=None: ops.mean(self, dim, keepdim),
        "sum",
        "x",
        (1, True),
        {},
    ),
    (lambda self, dim, keepdim, *, dtype=None: ops.sum(self, dim), "sum", "x", (1, True), {}),
    (lambda self, dim, keepdim: ops.amin(self, dim, keepdim), "min", "x", (1, True), {}),
    (lambda self, other: ops.sub(other, self), "sub", "x", ("y",), {}),
    (lambda self, other, *, alpha=1: ops.add(self, other), "add", "x", ("y",), {"alpha": 2}),
    (lambda self: ops.contiguous(self), "abs", "x", (), {}),
    (lambda self, a, b: ops.t(self), "permute", "x", (0, 1), {}),
]


@pytest.mark.parametrize("method, op_name, self_name, args, kwargs", WRONG)
def test_the_check_catches_a_method_calling_the_wrong_op(method, op_name, self_name, args, kwargs):
    with pytest.raises(AssertionError):
        check_case(method, op_name, self_name, args, kwargs)


# ------------------------------------------------ (c) nothing attached from outside
ATTACHING = re.compile(r"setattr\(\s*([\w.]+\.)?Tensor\b|\bTensor\.\w+\s*(=|\+=)(?!=)")


def test_the_attaching_pattern_finds_attachments():
    assert ATTACHING.search("setattr(Tensor, name, getattr(ops, name))")
    assert ATTACHING.search("    setattr(tensor.Tensor, 'exp', f)")
    assert ATTACHING.search("Tensor.__mul__ = ops.mul")
    assert not ATTACHING.search("if Tensor.__mul__ == ops.mul:")
    assert not ATTACHING.search("out = Tensor._make(array)")


def test_nothing_in_workbench_attaches_to_tensor():
    found = [
        f"{path.relative_to(WORKBENCH)}:{number}: {line.strip()}"
        for path in sorted(WORKBENCH.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if ATTACHING.search(line)
    ]
    assert not found


BITWISE_PROGRAMS = {
    "int64 & int64": lambda m: m.tensor([6, -3, 12]) & m.tensor([3, 5, 10]),
    "int64 | int32 (promoted)": lambda m: (
        m.tensor([6, -3, 12]) | m.tensor([3, 5, 1], dtype=m.int32)
    ),
    "uint8 ^ uint8": lambda m: (
        m.tensor([200, 7], dtype=m.uint8) ^ m.tensor([15, 255], dtype=m.uint8)
    ),
    "int & Python int": lambda m: m.tensor([6, 7]) & 3,
    "Python int | int": lambda m: 8 | m.tensor([1, 2]),
    "int ^ bool tensor": lambda m: m.tensor([6, 7]) ^ m.tensor([True, False]),
    "bool & Python int": lambda m: m.tensor([True, False]) & 1,
    "int & True": lambda m: m.tensor([6, 7]) & True,
    "broadcast": lambda m: m.tensor([[1], [2]]) | m.tensor([4, 8, 16]),
    "~int64": lambda m: ~m.tensor([5, 0, -1]),
    "~uint8": lambda m: ~m.tensor([0, 5], dtype=m.uint8),
    "~bool": lambda m: ~m.tensor([True, False]),
    "bool & bool": lambda m: m.tensor([True, True]) & m.tensor([True, False]),
    "int64 << int64, past the width and negative": lambda m: (
        m.tensor([1, -8, 5, 7]) << m.tensor([70, 70, -1, 3])
    ),
    "int64 >> int64, past the width and negative": lambda m: (
        m.tensor([1, -8, 5, 7]) >> m.tensor([70, 70, -1, 1])
    ),
    "uint8 << Python int": lambda m: m.tensor([200], dtype=m.uint8) << 1,
    "Python int << int": lambda m: 1 << m.tensor([3, 4]),
    "Python int >> int": lambda m: 64 >> m.tensor([3, 4]),
    "bool << Python int": lambda m: m.tensor([True, False]) << 1,
    "uint8 >> int8 (promoted)": lambda m: (
        m.tensor([5], dtype=m.uint8) >> m.tensor([1], dtype=m.int8)
    ),
}


@pytest.mark.parametrize("name", sorted(BITWISE_PROGRAMS))
def test_bitwise_operators_on_integers_give_pytorchs_bits(name):
    """``&``, ``|``, ``^``, ``~``, ``<<``, ``>>`` of integer tensors work on the bits, as
    PyTorch's (the workbench refused the first four and had no shifts): the same values
    and the same dtype."""
    ours, theirs = BITWISE_PROGRAMS[name](wb), BITWISE_PROGRAMS[name](torch)
    assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch."), name
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=name)
    assert not ours.requires_grad


@pytest.mark.parametrize("other", [None, "a", object()], ids=["None", "str", "object"])
@pytest.mark.parametrize("compare", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_comparing_with_what_is_no_operand_answers_as_pytorch(compare, other):
    """``x == None`` is False and ``x != "a"`` True in PyTorch (its operators hand such
    operands back to Python), where the workbench raised a TypeError (a harness comparing
    results with ``==`` broke on it); ``x < None`` is a TypeError in both."""

    def outcome(lib):
        try:
            return repr(getattr(operator, compare)(lib.ones(2), other))
        except TypeError:
            return "TypeError"

    assert outcome(wb) == outcome(torch)


LISTS = {"list": [1, 1], "tuple": (1.0, 1.0), "nested": [[1, 1]], "empty": [], "of tensors": None}


@pytest.mark.parametrize("compare", ["eq", "ne"])
@pytest.mark.parametrize("kind", sorted(LISTS))
def test_equality_with_a_list_is_pythons_not_elementwise_as_pytorch(compare, kind):
    """``x == [1, 1]`` is the bool False and ``x != [1, 1]`` True in PyTorch, from either
    side: its ``__eq__`` hands a list or a tuple back to Python, whose identity test
    answers. The workbench compared element by element, so ``if x == [1, 1]:`` took the
    other branch (or raised on a tensor of two bools)."""

    def outcome(lib):
        x = lib.ones(2)
        other = LISTS[kind] if LISTS[kind] is not None else [x, x]
        results = getattr(operator, compare)(x, other), getattr(operator, compare)(other, x)
        return [(type(result).__name__, result) for result in results]

    assert outcome(wb) == outcome(torch)


BINARY = "add sub mul truediv floordiv mod pow matmul lt le gt ge eq ne and_ or_ xor lshift rshift"
IN_PLACE = "iadd isub imul itruediv ifloordiv imod ipow imatmul iand ior ixor ilshift irshift"
SEQUENCES = {
    "list": [1, 1],
    "tuple": (1, 2),
    "floats": [1.5, 2.0],
    "nested": [[1, 1]],
    "empty": [],
    "one": [3],
}
TENSORS = {"float": ([1.0, 2.0], "float32"), "int": ([1, 2], "int64"), "one int": ([3], "int64")}


def _outcome(function, *args):
    """What ``function(*args)`` gives: its result (a tensor's numbers, a list, a bool), or
    its exception's type and message."""
    try:
        result = function(*args)
    except Exception as error:  # noqa: BLE001  (compared with PyTorch's)
        return type(error).__name__, str(error)
    if isinstance(result, (wb.Tensor, torch.Tensor)):
        return type(result).__name__, str(result.dtype).split(".")[-1], result.tolist()
    return type(result).__name__, result


@pytest.mark.parametrize("tensor", sorted(TENSORS))
@pytest.mark.parametrize("kind", sorted(SEQUENCES))
def test_operators_with_a_list_or_tuple_operand_answer_as_pytorch(kind, tensor):
    """PyTorch's operators hand a list or a tuple back to Python (NotImplemented), from
    either side and in place: ``x + [1, 1]`` and ``x < [1, 1]`` are Python's TypeError,
    ``[1, 1] + x`` list concatenation's, ``x * [1, 1]`` list repetition (a TypeError
    unless x is one integer: then a longer list), ``x == [1, 1]`` False. The workbench
    read the list as a tensor and computed element by element (issue 36)."""
    values, dtype = TENSORS[tensor]
    other = SEQUENCES[kind]

    def outcomes(lib):
        x = lib.tensor(values, dtype=getattr(lib, dtype))
        found = {}
        for name in BINARY.split():
            op = getattr(operator, name)
            found[name] = _outcome(op, x, other), _outcome(op, other, x)
        for name in IN_PLACE.split():
            y = x.clone()
            found[name] = _outcome(getattr(operator, name), y, other), y.tolist()
        return found

    ours, theirs = outcomes(wb), outcomes(torch)
    assert ours == theirs


def test_in_place_power_changes_the_tensor_as_pytorch():
    """``x **= 2`` is ``x.pow_(2)`` in PyTorch: the same tensor changes (an alias sees it)."""
    for lib in (wb, torch):
        x = lib.tensor([1.0, 2.0, 3.0])
        alias = x
        x **= 2
        assert x is alias and alias.tolist() == [1.0, 4.0, 9.0]


BITS_IN_PLACE = {
    "iand": 3,
    "ior": [8, 8, 8],
    "ixor": 1,
    "ilshift": 2,
    "irshift": [1, 0, 1],
}


@pytest.mark.parametrize("name", sorted(BITS_IN_PLACE))
@pytest.mark.parametrize("dtype", ["int64", "int8", "bool"])
def test_in_place_bitwise_operators_change_the_tensor_as_pytorch(name, dtype):
    """``x &= y`` is ``x.bitwise_and_(y)`` in PyTorch (so ``|=``, ``^=``, ``<<=``,
    ``>>=``): the same object, its version bumped, a view's base changed, and the result
    cast back to x's dtype or refused (a bool tensor shifted, or and-ed with an int). The
    workbench made a new tensor (issue 36)."""
    other = BITS_IN_PLACE[name]

    def outcome(lib):
        base = lib.tensor([6, 5, 3, 7], dtype=getattr(lib, dtype))
        x = base[1:]
        alias, version = x, x._version
        y = lib.tensor(other, dtype=getattr(lib, dtype)) if isinstance(other, list) else other
        found = _outcome(getattr(operator, name), x, y)
        if found[0].endswith("Error"):  # the same refusal; the workbench's names the op
            found = found[0], "cast" in found[1] or "shift" in found[1]
        return found, x is alias, x._version - version, base.tolist()

    assert outcome(wb) == outcome(torch)


@pytest.mark.parametrize("name", sorted(BITS_IN_PLACE))
def test_in_place_bitwise_operators_refuse_as_pytorch(name):
    """A leaf that requires grad is refused as by any in-place op; a result that does not
    fit x's shape too, with PyTorch's words."""

    def refusals(lib):
        leaf = lib.ones(2, requires_grad=True)
        short = lib.tensor([6])
        return _outcome(getattr(operator, name), leaf, 1), _outcome(
            getattr(operator, name), short, lib.tensor([1, 2])
        )

    (ours_leaf, ours_shape), (theirs_leaf, theirs_shape) = refusals(wb), refusals(torch)
    assert ours_leaf == theirs_leaf
    assert ours_shape[0] == theirs_shape[0] and theirs_shape[1] in ours_shape[1]


BITS_OPERANDS = {"1.5": 1.5, "2": 2, "True": True, "1+1j": 1 + 1j, "float tensor": "tensor"}


@pytest.mark.parametrize("other", sorted(BITS_OPERANDS))
@pytest.mark.parametrize("dtype", ["int64", "uint8", "bool", "float32"])
@pytest.mark.parametrize("name", sorted(BITS_IN_PLACE) + ["and_", "lshift"])
def test_bitwise_operators_with_a_float_refuse_with_pytorchs_exception(name, dtype, other):
    """PyTorch's in-place ops check first that the promoted dtype fits x: ``long_x &= 1.5``
    is its RuntimeError ("result type Float can't be cast to the desired output type
    Long"), where ``long_x & 1.5`` is the NotImplementedError of a bitwise op on floats;
    ``float_x &= 2`` fits (a float), and is that NotImplementedError. The workbench said
    NotImplementedError to all (issue 36). Its messages name the op (``bitwise_and_``)."""

    def operands(lib):
        value = BITS_OPERANDS[other]
        y = lib.tensor([1.5, 2.0]) if value == "tensor" else value
        return lib.tensor([1, 2], dtype=getattr(lib, dtype)), y

    def outcome(lib):
        found = _outcome(getattr(operator, name), *operands(lib))
        if found[0] == "RuntimeError":  # the cast, named as each library names dtypes
            return found[0], "can't be cast to the desired output type" in found[1]
        return found[0] if found[0].endswith("Error") else found

    ours = outcome(wb)
    assert ours == outcome(torch)
    if ours[0] == "RuntimeError":  # the workbench's names the in-place op
        op_name = {"iand": "bitwise_and_", "ilshift": "bitwise_left_shift_"}.get(name, "")
        with pytest.raises(RuntimeError, match=f"{op_name}.*result type .* {dtype}"):
            getattr(operator, name)(*operands(wb))


ARRAY_OPERANDS = {
    "bool": np.array([True, False]),
    "int8": np.array([1, 3], np.int8),
    "int64": np.array([1, 3]),
    "float32": np.array([1.5, 3.0], np.float32),
    "float64": np.array([1.5, 3.0]),
    "complex128": np.array([1 + 1j, 2]),
    "0-d float64": np.array(2.0),
    "0-d int64": np.array(2),
    "0-d bool": np.array(True),
}
ARRAY_OPERATORS = "add sub mul truediv floordiv mod pow matmul and_ or_ xor lshift rshift lt"
ARRAY_OPERATORS = ARRAY_OPERATORS.split()
ARRAY_IN_PLACE = "iadd isub imul itruediv ifloordiv imod ipow iand ior ixor ilshift irshift".split()
TENSOR_DTYPES = "bool uint8 int32 int64 float16 float32 float64 complex64".split()


def _array_outcome(lib, x, array, name: str, side: str):
    """What ``x <op> array`` (side "l"), ``array <op> x`` ("r") or ``x <op>= array`` gives:
    a tensor's type, dtype, requires_grad and values (and for ``<op>=`` whether x is the
    result and what x holds), or the exception's type and message."""

    def described(value):
        if not isinstance(value, lib.Tensor):
            return type(value).__name__
        dtype = str(value.dtype).split(".")[-1]
        if lib is torch and dtype == "uint8" and _numpy_says_bool(x, array, name, side):
            dtype = "bool"  # PyTorch's __array_wrap__ quirk, DECIDED (see the test)
        values = np.round(np.asarray(value.tolist(), dtype=complex), 4)
        return dtype, value.requires_grad, str(values)  # (str: NaN equals NaN)

    op = getattr(operator, name)
    try:
        if name in ARRAY_IN_PLACE:
            target = x
            target = op(target, array)
            return "same" if target is x else "new", described(target), described(x)
        return described(op(x, array) if side == "l" else op(array, x))
    except Exception as error:  # noqa: BLE001  (compared with PyTorch's)
        return type(error).__name__, str(error)


def _numpy_says_bool(x, array, name: str, side: str) -> bool:
    """Whether numpy computes ``x <op> array`` as a bool array (PyTorch then gives uint8)."""
    values = x.detach().numpy()
    base = name[1:] if name in ARRAY_IN_PLACE else name  # x &= array is x = x & array
    op = getattr(operator, base + "_" if base in ("and", "or") else base)
    return (op(values, array) if side == "l" else op(array, values)).dtype == np.bool_


@pytest.mark.filterwarnings("ignore")  # numpy's overflow and division warnings, in both
@pytest.mark.parametrize(
    ("dtype", "requires_grad"),
    [(d, False) for d in TENSOR_DTYPES] + [("float32", True), ("complex64", True)],
)
def test_operators_with_a_numpy_array_answer_as_pytorch(dtype, requires_grad):
    """PyTorch's operators hand a numpy array back to Python, as a list. Numpy then
    computes ``x + array`` itself: it reads x through ``__array__`` (PyTorch's RuntimeError
    when x requires grad) and wraps its result back into a tensor, so the dtype is
    numpy's (float32 tensor + float64 array, a 0-d one included, is float64; an int tensor
    + a float array float64), and ``x += array`` is ``x = x + array``, a new tensor.
    ``array + x`` (numpy defers to ``x.__radd__``) and ``x < array`` are Python's TypeError;
    ``array / x`` is ``x.reciprocal() * array``. The workbench read the array as a tensor
    with its own promotion and kept the graph (issue 36). The table: every tensor dtype ×
    9 arrays × 14 operators from both sides and 12 in-place ones."""
    differences = []
    for kind, array in ARRAY_OPERANDS.items():
        for name in ARRAY_OPERATORS + ARRAY_IN_PLACE:
            for side in ("l",) if name in ARRAY_IN_PLACE else ("l", "r"):
                found = []
                for lib in (wb, torch):
                    x = lib.tensor([1, 2], dtype=getattr(lib, dtype))
                    x.requires_grad_(requires_grad)
                    found.append(_array_outcome(lib, x, array.copy(), name, side))
                if found[0] != found[1]:
                    differences.append((kind, name, side, *found))
    assert not differences, differences[:5]


@pytest.mark.filterwarnings("ignore:__array_wrap__")  # PyTorch's, from numpy 2
def test_a_bool_result_computed_by_numpy_stays_bool_where_pytorch_gives_uint8():
    """DECIDED (Tensor.__array_wrap__): ``mask & array_mask`` and ``np.isnan(x)`` are
    bool tensors here; PyTorch's ``__array_wrap__`` turns numpy's bool result into uint8,
    a workaround its comment gives for a PyTorch that had no bool tensors. Pinned, so that
    a PyTorch that drops it is noticed."""
    mask = np.array([True, False])
    ours = [wb.tensor([True, True]) & mask, np.isnan(wb.tensor([1.0, float("nan")]))]
    theirs = [torch.tensor([True, True]) & mask, np.isnan(torch.tensor([1.0, float("nan")]))]
    assert [t.dtype for t in ours] == [wb.bool, wb.bool]
    assert [t.dtype for t in theirs] == [torch.uint8, torch.uint8]
    assert [t.tolist() for t in ours] == [[bool(v) for v in t.tolist()] for t in theirs]


ARRAYS = {
    "1-d": np.array([1.0, 3.0]),
    "0-d": np.array(1.0),
    "integers": np.array([1, 3]),
    "a numpy number": np.float64(1.0),
}


@pytest.mark.parametrize("kind", sorted(ARRAYS))
def test_equality_with_a_numpy_array_answers_as_pytorch_but_for_a_silent_true(kind):
    """PyTorch's ``__eq__`` reads a numpy array (pytorch/pytorch#122249): ``x == array`` is
    a tensor, from either side, in both. Its ``__ne__`` hands the array back to Python,
    whose identity test says True whatever the values; DECIDED (issue 36): the workbench
    compares elementwise there too, ``x != array`` being ``~(x == array)``. A numpy
    number is a number to both."""

    def outcomes(lib, ops):
        x = lib.tensor([1.0, 2.0])
        array = ARRAYS[kind]
        return [_outcome(op, *pair) for op in ops for pair in ((x, array), (array, x))]

    assert outcomes(wb, [operator.eq]) == outcomes(torch, [operator.eq])
    ours = [wb.tensor([1.0, 2.0]) != ARRAYS[kind], ARRAYS[kind] != wb.tensor([1.0, 2.0])]
    theirs = [torch.tensor([1.0, 2.0]) != ARRAYS[kind], ARRAYS[kind] != torch.tensor([1.0, 2.0])]
    expected = np.asarray([1.0, 2.0]) != ARRAYS[kind]
    for got in ours:
        assert isinstance(got, wb.Tensor) and got.tolist() == expected.tolist()
    if kind != "a numpy number":  # PyTorch's quirk, pinned: a PyTorch that fixes it is noticed
        assert theirs == [True, True]


def test_refused_methods_are_descriptors_and_tensor_has_no_getattr():
    """PyTorch's methods that the workbench refuses are ``Refused`` descriptors, exactly
    the ``Tensor.*`` names of torch_alias.REFUSED. Not a ``__getattr__`` on Tensor: with
    one, Python 3.11 cannot specialise a tensor's attribute reads, and every op pays."""
    from workbench.compat.torch_alias import REFUSED
    from workbench.core.tensor import Refused

    assert "__getattr__" not in vars(Tensor)
    refused = {name for name, value in vars(Tensor).items() if isinstance(value, Refused)}
    listed = {name.removeprefix("Tensor.") for name in REFUSED if name.startswith("Tensor.")}
    assert refused == listed


def test_every_way_of_making_a_tensor_fills_every_slot():
    """A slot left unset raises AttributeError when read: Tensor(), _make (every op's
    result) and Parameter() each fill all of them (Parameter once forgot two)."""
    from workbench.nn import Parameter

    slots = [name for name in Tensor.__slots__ if name not in ("__dict__", "__weakref__")]
    made = [wb.tensor([1.0]), Tensor._make(np.ones(1)), Parameter(wb.ones(1)), wb.ones(1) * 2]
    for tensor in made:
        for name in slots:
            getattr(tensor, name)
