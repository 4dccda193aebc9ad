"""Bad input, the whole public API: every case raises PyTorch's exception type, with a
message that names the op or argument and the values or shapes involved, raised by a
``raise`` in workbench's own code (never a numpy or Python error from deep inside).

Each case is one call written once for both libraries: ``call(m)`` runs with ``m`` as
workbench (``m.ones``, ``m.F.conv2d``, ``m.nn.Linear``) and, when PyTorch is installed,
as torch, whose exception type must be the same kind (IndexError, TypeError, ValueError
or RuntimeError). ``torch=False`` marks calls with no PyTorch counterpart (traces,
widgets, the TVM checkpoint markers) or where PyTorch itself fails with a bare Python
error (said in the case's comment); a callable gives a different torch call.
"""

from __future__ import annotations

import importlib.util
import io
import json
import linecache
import re
import traceback
import warnings
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import workbench as wb
import workbench.nn.functional
import workbench.optim
import workbench.utils.checkpoint
from workbench.core import backend

try:
    import torch
    import torch.nn.functional
    import torch.utils.checkpoint
except ImportError:  # the workbench half of every case still runs
    torch = None

WORKBENCH_DIR = str(Path(wb.__file__).resolve().parent)


class Lib:
    """A library seen through PyTorch's names: ``m.ones``, ``m.F.conv2d``, ``m.nn.Linear``."""

    def __init__(self, base, **parts) -> None:
        self._base = base
        self.__dict__.update(parts)

    def __getattr__(self, name):
        return getattr(self._base, name)


WB = Lib(
    wb,
    F=wb.nn.functional,
    nn=wb.nn,
    optim=wb.optim,
    checkpoint=wb.utils.checkpoint.checkpoint,
    checkpoint_sequential=wb.utils.checkpoint.checkpoint_sequential,
)
TORCH = None
if torch is not None:
    TORCH = Lib(
        torch,
        F=torch.nn.functional,
        nn=torch.nn,
        optim=torch.optim,
        checkpoint=torch.utils.checkpoint.checkpoint,
        checkpoint_sequential=torch.utils.checkpoint.checkpoint_sequential,
    )


@dataclass
class Case:
    id: str
    call: Callable  # call(m), m = WB or TORCH
    error: type
    patterns: tuple  # regexes the message must contain
    torch: bool | Callable = True  # True: call(TORCH); a callable: torch's own call


def case(id, call, error, *patterns, torch=True) -> Case:
    return Case(id, call, error, patterns, torch)


# ------------------------------------------------------------------ helpers
def leaf(m, *shape):
    return m.ones(*shape, requires_grad=True)


def image(m):
    return m.ones(1, 1, 5, 5)


def kernel(m):
    return m.ones(1, 1, 3, 3)


def backward_of(m, fn, *shape):
    """Run ``fn(x).sum().backward()`` for a leaf ``x``: errors raised during backward."""
    x = leaf(m, *shape)
    fn(x).sum().backward()


def backward_twice(m):
    x = leaf(m, 3)
    y = (x * x).sum()
    y.backward()
    y.backward()


def grad_of_unused(m):
    x, unused = leaf(m, 2), leaf(m, 2)
    m.autograd.grad((x * 2).sum(), [unused])


def hook_returning(m, value):
    x = leaf(m, 3)
    x.register_hook(lambda g: value(m))
    (x * 2).sum().backward()


def node_hook_returning(m, value):
    """A hook on ``y.grad_fn`` (``MulBackward0`` of ``x * 2``) that returns ``value(m, grads)``."""
    x = leaf(m, 2)
    y = x * 2
    y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: value(m, grad_inputs))
    y.sum().backward()


def node_prehook_returning(m, value):
    x = leaf(m, 2)
    y = x * 2
    y.grad_fn.register_prehook(lambda grad_outputs: value(m, grad_outputs))
    y.sum().backward()


def backward_without_grad_mode(m):
    x = leaf(m, 2)
    with m.no_grad():
        y = (x * 2).sum()
    y.backward()


def function_returning(m, result):
    """A custom Function whose backward returns ``result(m, grad)``."""

    class Double(m.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return result(m, grad)

    Double.apply(leaf(m, 2, 3)).sum().backward()


def function_saving(m, value):
    class Saves(m.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(value)
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad

    Saves.apply(leaf(m, 2))


def function_dirty_not_returned(m):
    class Dirty(m.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad

    Dirty.apply(m.ones(2).requires_grad_().clone())


def function_without_forward(m):
    class NoForward(m.autograd.Function):
        pass

    NoForward.apply(leaf(m, 2))


def function_without_backward(m):
    class NoBackward(m.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

    NoBackward.apply(leaf(m, 2)).sum().backward()


def function_grad_for_number(m):
    class Scale(m.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        @staticmethod
        def backward(ctx, grad):
            return grad, grad

    Scale.apply(leaf(m, 2), 3.0).sum().backward()


def checkpointed_grad(m):
    x = leaf(m, 3)
    y = m.checkpoint(lambda t: (t * 2).sum(), x, use_reentrant=True)
    m.autograd.grad(y, [x])


def checkpoint_changing_shape(m):
    """A checkpointed function that computes something else when rerun in backward."""
    calls = []

    def grows(t):
        calls.append(1)
        return t.repeat(len(calls)).sin()  # sin saves its input: (3,), then (6,)

    x = leaf(m, 3)
    m.checkpoint(grows, x, use_reentrant=False).sum().backward()


def saved_then_modified(m):
    y = leaf(m, 2).exp()  # exp saves its output
    y.add_(1)
    y.sum().backward()


def linear_state(m, drop=(), **replace):
    layer = m.nn.Linear(2, 3)
    state = dict(layer.state_dict())
    for key in drop:
        del state[key]
    state.update({key: make(m) for key, make in replace.items()})
    layer.load_state_dict(state)


def sgd(m, **settings):
    return m.optim.SGD([leaf(m, 2)], **settings)


def adam(m, **settings):
    return m.optim.Adam([leaf(m, 2)], **settings)


def optimizer_state_mismatch(m):
    a = m.optim.SGD([leaf(m, 2)], lr=0.1)
    b = m.optim.SGD([{"params": [leaf(m, 2)]}, {"params": [leaf(m, 2)]}], lr=0.1)
    a.load_state_dict(b.state_dict())


def module_with(m, attribute, value):
    layer = m.nn.Linear(2, 3)
    setattr(layer, attribute, value(m))


def saved_trace():
    with wb.trace() as tr:
        x = wb.ones(2, requires_grad=True)
        (x * 3).sum().backward()
    return tr


def no_backward_trace():
    with wb.trace() as tr:
        wb.ones(2) * 2
    return tr


def _markers_end_without_start():
    from workbench.ops import markers

    markers.end_checkpoint(wb.ones(2))


# ----------------------------------------------------------------- the table
CASES = [
    # ---------------------------------------------------- arithmetic, comparisons
    case(
        "add broadcast",
        lambda m: m.ones(2, 3) + m.ones(4),
        RuntimeError,
        r"^add:",
        r"\(2, 3\)",
        r"\(4,\)",
    ),
    case(
        "sub broadcast", lambda m: m.sub(m.ones(2, 3), m.ones(2)), RuntimeError, r"sub:", r"\(2,\)"
    ),
    case("mul string", lambda m: m.ones(3) * "a", TypeError, r"mul", r"'a'", r"str"),
    case("add string", lambda m: m.add(m.ones(3), "a"), TypeError, r"add", r"str"),
    case(
        "div broadcast", lambda m: m.ones(2, 3) / m.ones(3, 2), RuntimeError, r"div:", r"\(3, 2\)"
    ),
    case("pow broadcast", lambda m: m.pow(m.ones(2), m.ones(3)), RuntimeError, r"pow:", r"\(3,\)"),
    case(
        "maximum broadcast",
        lambda m: m.maximum(m.ones(2), m.ones(3)),
        RuntimeError,
        r"maximum:",
        r"\(2,\)",
    ),
    case(
        "minimum broadcast",
        lambda m: m.minimum(m.ones(2), m.ones(3)),
        RuntimeError,
        r"minimum:",
        r"\(3,\)",
    ),
    case(
        "where broadcast",
        lambda m: m.where(m.ones(2) > 0, m.ones(2), m.ones(3)),
        RuntimeError,
        r"where:",
        r"\(3,\)",
    ),
    case("clamp no bounds", lambda m: m.clamp(m.ones(2)), RuntimeError, r"clamp", r"min", r"max"),
    case("lt broadcast", lambda m: m.ones(2) < m.ones(3), RuntimeError, r"lt:", r"\(3,\)"),
    case("eq broadcast", lambda m: m.eq(m.ones(2), m.ones(3)), RuntimeError, r"eq:", r"\(2,\)"),
    case(
        "logical_and broadcast",
        lambda m: m.logical_and(m.ones(2), m.ones(3)),
        RuntimeError,
        r"logical_and:",
        r"\(3,\)",
    ),
    case(
        "bool minus bool",
        lambda m: m.tensor([True]) - m.tensor([False]),
        RuntimeError,
        r"sub",
        r"bool",
    ),
    case("negate bool", lambda m: -m.tensor([True]), RuntimeError, r"neg", r"bool"),
    case("lt string", lambda m: m.ones(3) < "a", TypeError, r"lt", r"str"),
    case(
        "add_ changes shape",
        lambda m: m.ones(3).add_(m.ones(2, 3)),
        RuntimeError,
        r"add_",
        r"\[3\]",
        r"\[2, 3\]",
    ),
    case(
        "add_ float into int",
        lambda m: m.ones(3, dtype=m.int64).add_(1.5),
        RuntimeError,
        r"add_",
        r"float",
        r"int64",
    ),
    case(
        "in-place on a leaf",
        lambda m: leaf(m, 3).mul_(2),
        RuntimeError,
        r"leaf Variable that requires grad",
        r"in-place",
    ),
    case(
        "clamp bounds broadcast",
        lambda m: m.clamp(m.ones(2), m.ones(3)),
        RuntimeError,
        r"\(2,\)",
        r"\(3,\)",
    ),
    case(
        "where condition broadcast",
        lambda m: m.where(m.tensor([True, False, True]), m.ones(2), 0.0),
        RuntimeError,
        r"where",
        r"\(3,\) bool",
    ),
    case(
        "in-place relu of a leaf",
        lambda m: m.F.relu(leaf(m, 2), inplace=True),
        RuntimeError,
        r"leaf Variable that requires grad",
    ),
    # ----------------------------------------------------------------- unary, activations
    case("exp of string", lambda m: m.exp("a"), TypeError, r"exp", r"str"),
    case("sqrt of list", lambda m: m.sqrt([1.0, 4.0]), TypeError, r"sqrt", r"list"),
    case(
        "gelu approximate",
        lambda m: m.F.gelu(m.ones(2), approximate="fast"),
        RuntimeError,
        r"gelu",
        r"approximate",
        r"'fast'",
    ),
    case(
        "softmax dim",
        lambda m: m.softmax(m.ones(2, 3), dim=2),
        IndexError,
        r"softmax",
        r"\[-2, 1\]",
        r"got 2",
    ),
    case(
        "log_softmax dim",
        lambda m: m.log_softmax(m.ones(2, 3), dim=-3),
        IndexError,
        r"log_softmax",
        r"-3",
    ),
    case("relu of string", lambda m: m.relu("a"), TypeError, r"relu", r"str"),
    case(
        "sigmoid of int tensor needs grad",
        lambda m: m.sigmoid(m.tensor([1, 2], requires_grad=True)),
        RuntimeError,
        r"floating point",
        r"int64",
    ),
    # ------------------------------------------------------------------- reductions
    case(
        "sum dim",
        lambda m: m.ones(2, 3).sum(3),
        IndexError,
        r"sum",
        r"Dimension out of range",
        r"got 3",
    ),
    case("mean dim", lambda m: m.ones(2, 3).mean(-3), IndexError, r"mean", r"-3"),
    case(
        "mean of ints", lambda m: m.ones(3, dtype=m.int64).mean(), RuntimeError, r"mean", r"int64"
    ),
    case("prod dim", lambda m: m.ones(2).prod(1), IndexError, r"prod", r"got 1"),
    case("max dim", lambda m: m.ones(2, 3).max(2), IndexError, r"max", r"got 2"),
    case("min dim", lambda m: m.ones(2, 3).min(-4), IndexError, r"min", r"-4"),
    case("argmax dim", lambda m: m.ones(2).argmax(1), IndexError, r"argmax", r"got 1"),
    case("argmin dim", lambda m: m.ones(2).argmin(5), IndexError, r"argmin", r"got 5"),
    case("amax dim", lambda m: m.ones(2).amax(3), IndexError, r"amax", r"got 3"),
    case("max of empty", lambda m: m.ones(0).max(), RuntimeError, r"max", r"numel|empty", r"0"),
    case(
        "max of empty along dim",
        lambda m: m.ones(0, 2).max(0),
        IndexError,
        r"max",
        r"dim 0",
        r"non-zero size",
    ),
    case("amin of empty", lambda m: m.amin(m.ones(0)), RuntimeError, r"amin", r"empty|numel"),
    case("argmax of empty", lambda m: m.ones(0).argmax(), IndexError, r"argmax", r"numel\(\) == 0"),
    case("var dim", lambda m: m.ones(2).var(1), IndexError, r"var", r"got 1"),
    case("var of ints", lambda m: m.ones(2, dtype=m.int64).var(), RuntimeError, r"var", r"int64"),
    case(
        "var unbiased and correction",
        lambda m: m.var(m.ones(3), unbiased=True, correction=0),
        TypeError,
        r"var",
        r"unbiased",
        r"correction",
    ),
    case("std dim", lambda m: m.ones(2).std(2), IndexError, r"std|var", r"got 2"),
    case("logsumexp dim", lambda m: m.ones(2).logsumexp(1), IndexError, r"logsumexp", r"got 1"),
    case("norm dim", lambda m: m.ones(2).norm(dim=1), IndexError, r"norm", r"got 1"),
    case(
        "norm p string",
        lambda m: m.norm(m.ones(2), p="euclid"),
        RuntimeError,
        r"norm",
        r"'euclid'",
    ),
    case("cumsum dim", lambda m: m.ones(2, 3).cumsum(2), IndexError, r"cumsum", r"got 2"),
    case("cumprod dim", lambda m: m.cumprod(m.ones(2), -2), IndexError, r"cumprod", r"-2"),
    case(
        "sum dtype string",
        lambda m: m.ones(2).sum(dtype="int"),
        TypeError,
        r"sum",
        r"dtype",
        r"'int'",
    ),
    case(
        "softmax dtype string",
        lambda m: m.softmax(m.ones(2), 0, dtype="float64"),
        TypeError,
        r"dtype",
        r"'float64'",
    ),
    # ---------------------------------------------------------------- broadcasting
    case(
        "expand mismatch",
        lambda m: m.ones(2, 3).expand(4, 4),
        RuntimeError,
        r"expand",
        r"\(2, 3\)|\[2, 3\]",
        r"4",
    ),
    case(
        "expand fewer sizes",
        lambda m: m.ones(2, 3).expand(3),
        RuntimeError,
        r"expand",
        r"number of sizes provided \(1\)",
        r"\(2\)",
    ),
    case("expand negative", lambda m: m.ones(3).expand(-2), RuntimeError, r"expand", r"-2"),
    case(
        "broadcast_to mismatch",
        lambda m: m.broadcast_to(m.ones(3), (2,)),
        RuntimeError,
        r"broadcast_to|expand",
        r"\(3,\)|\[3\]",
    ),
    case(
        "expand_as mismatch",
        lambda m: m.ones(2).expand_as(m.ones(3)),
        RuntimeError,
        r"expand",
        r"2",
        r"3",
    ),
    # ---------------------------------------------------------------------- shapes
    case(
        "reshape size",
        lambda m: m.ones(2, 3).reshape(4, 4),
        RuntimeError,
        r"reshape",
        r"\[4, 4\]",
        r"size 6",
    ),
    case(
        "reshape two -1",
        lambda m: m.ones(6).reshape(-1, -1),
        RuntimeError,
        r"reshape",
        r"only one dimension can be inferred",
    ),
    case(
        "reshape -2",
        lambda m: m.ones(6).reshape(2, -2),
        RuntimeError,
        r"reshape",
        r"invalid shape dimension -2",
    ),
    case(
        "view size",
        lambda m: m.ones(2, 3).view(5),
        RuntimeError,
        r"view",
        r"\[5\]",
        r"size 6",
    ),
    case(
        "view non-contiguous",
        lambda m: m.ones(2, 3).t().view(6),
        RuntimeError,
        r"view",
        r"\(3, 2\)",
        r"reshape",
    ),
    case(
        "permute count",
        lambda m: m.ones(3).permute(1, 0),
        RuntimeError,
        r"permute",
        r"number of dims",
        r"\(3,\)",
    ),
    case(
        "permute repeated",
        lambda m: m.ones(2, 2).permute(0, 0),
        RuntimeError,
        r"permute",
        r"repeated",
    ),
    case(
        "transpose dim", lambda m: m.ones(2, 3).transpose(0, 5), IndexError, r"transpose", r"got 5"
    ),
    case("t of 3-D", lambda m: m.ones(2, 2, 2).t(), RuntimeError, r"t\(\)", r"3D"),
    case("unsqueeze dim", lambda m: m.ones(2).unsqueeze(3), IndexError, r"unsqueeze", r"got 3"),
    case("squeeze dim", lambda m: m.ones(2).squeeze(2), IndexError, r"squeeze", r"got 2"),
    case("flatten dim", lambda m: m.ones(2).flatten(3), IndexError, r"flatten", r"got 3"),
    case(
        "flatten order",
        lambda m: m.ones(2, 3, 4).flatten(2, 1),
        RuntimeError,
        r"flatten",
        r"start_dim",
        r"end_dim",
    ),
    case("size dim", lambda m: m.ones(2, 3).size(2), IndexError, r"size", r"got 2"),
    case("to a bad device", lambda m: m.ones(2).to("tpu"), RuntimeError, r"device", r"tpu"),
    case("item of many", lambda m: m.ones(2).item(), RuntimeError, r"2 elements", r"Scalar"),
    case("bool of many", lambda m: bool(m.ones(2)), RuntimeError, r"ambiguous", r"2 elements"),
    case("len of 0-d", lambda m: len(m.tensor(1.0)), TypeError, r"len\(\)", r"0-d"),
    case(
        "numpy of a tensor that requires grad",
        lambda m: leaf(m, 2).numpy(),
        RuntimeError,
        r"numpy",
        r"requires grad",
        r"detach",
    ),
    case(
        "flatten float dim",
        lambda m: m.ones(2, 3).flatten(0.5),
        TypeError,
        r"flatten",
        r"must be int",
        r"float",
    ),
    case(
        "unsqueeze string dim", lambda m: m.ones(2).unsqueeze("0"), TypeError, r"unsqueeze", r"str"
    ),
    case("squeeze dims", lambda m: m.ones(2, 1).squeeze((0, 5)), IndexError, r"squeeze", r"got 5"),
    case(
        "to dtype string",
        lambda m: m.ones(2).to(dtype="float64"),
        TypeError,
        r"to\(\)",
        r"dtype",
        r"'float64'",
    ),
    # -------------------------------------------------------------- indexing, setitem
    case("getitem past the end", lambda m: m.ones(3)[5], IndexError, r"index 5", r"size 3"),
    case("getitem too many", lambda m: m.ones(3)[0, 0], IndexError, r"too many indices", r"1"),
    case("getitem index list", lambda m: m.ones(3)[[0, 5]], IndexError, r"5", r"3"),
    case("getitem float", lambda m: m.ones(3)[1.5], IndexError, r"1\.5|float", r"index"),
    case("getitem string", lambda m: m.ones(3)["a"], TypeError, r"getitem", r"str", r"'a'"),
    case(
        "getitem float tensor",
        lambda m: m.ones(3)[m.tensor([0.0])],
        IndexError,
        r"float32",
        r"long|int|bool",
    ),
    case(
        "setitem past the end",
        lambda m: m.ones(5).__setitem__(5, 1.0),
        IndexError,
        r"index 5",
        r"size 5",
    ),
    case(
        "setitem index list",
        lambda m: m.ones(5).__setitem__(m.tensor([0, 7]), 1.0),
        IndexError,
        r"7",
        r"5",
    ),
    case(
        "setitem shape",
        lambda m: m.ones(3, 2).__setitem__((slice(None), 0), m.ones(4)),
        RuntimeError,
        r"shape mismatch|setitem",
        r"\[4\]|\(4,\)",
        r"\[3\]|\(3,\)",
    ),
    case(
        "setitem string",
        lambda m: m.ones(3).__setitem__(0, "a"),
        TypeError,
        r"setitem|assign",
        r"str",
    ),
    case(
        "setitem on a leaf view",
        lambda m: leaf(m, 3).__setitem__(0, 1.0),
        RuntimeError,
        r"view of a leaf Variable",
        r"in-place",
    ),
    case("cat empty", lambda m: m.cat([]), ValueError, r"cat", r"non-empty"),
    case(
        "cat sizes",
        lambda m: m.cat([m.ones(2, 3), m.ones(3, 3)], 1),
        RuntimeError,
        r"cat",
        r"Sizes of tensors must match",
        r"\(3, 3\)",
    ),
    case(
        "cat ndims",
        lambda m: m.cat([m.ones(2, 2), m.ones(2)]),
        RuntimeError,
        r"cat",
        r"same number of dimensions",
        r"2 and 1",
    ),
    case("cat dim", lambda m: m.cat([m.ones(2)], 1), IndexError, r"cat", r"got 1"),
    case("cat non-tensor", lambda m: m.cat([m.ones(2), 3]), TypeError, r"cat", r"int", r"1"),
    case("stack empty", lambda m: m.stack([]), RuntimeError, r"stack", r"non-empty"),
    case(
        "stack shapes",
        lambda m: m.stack([m.ones(2), m.ones(3)]),
        RuntimeError,
        r"stack",
        r"\[2\]",
        r"\[3\]",
    ),
    case("stack dim", lambda m: m.stack([m.ones(2)], 3), IndexError, r"stack", r"got 3"),
    case(
        "split sizes",
        lambda m: m.split(m.ones(5), [2, 2]),
        RuntimeError,
        r"split",
        r"\[2, 2\]",
        r"5",
    ),
    case("split zero", lambda m: m.ones(4).split(0), RuntimeError, r"split", r"split_size", r"0"),
    case("chunk zero", lambda m: m.ones(4).chunk(0), RuntimeError, r"chunk", r"0"),
    case("unbind dim", lambda m: m.ones(2).unbind(1), IndexError, r"unbind", r"got 1"),
    case("flip dim", lambda m: m.ones(2, 3).flip(2), IndexError, r"flip", r"got 2"),
    case(
        "roll lengths",
        lambda m: m.ones(2, 3).roll((1, 1), 0),
        RuntimeError,
        r"roll",
        r"shifts: 2",
        r"dims: 1",
    ),
    case("roll dim", lambda m: m.ones(2).roll(1, 3), IndexError, r"roll", r"got 3"),
    case(
        "pad odd length",
        lambda m: m.F.pad(m.ones(2, 3), (1, 2, 3)),
        RuntimeError,
        r"pad",
        r"divisible by 2",
        r"\(1, 2, 3\)",
    ),
    case(
        "pad mode",
        lambda m: m.F.pad(m.ones(1, 2, 3), (1, 1), mode="mirror"),
        NotImplementedError,
        r"pad",
        r"'mirror'",
    ),
    case(
        "pad reflect too wide",
        lambda m: m.F.pad(m.ones(1, 2, 3), (3, 0), mode="reflect"),
        RuntimeError,
        r"pad",
        r"\(3, 0\)|3",
        r"size 3",
    ),
    case(
        "tril of a vector",
        lambda m: m.tril(m.ones(3)),
        RuntimeError,
        r"tril",
        r"2 dimensions",
        r"1",
    ),
    case("triu of a vector", lambda m: m.ones(3).triu(), RuntimeError, r"triu", r"2 dimensions"),
    case(
        "repeat too few",
        lambda m: m.ones(2, 3).repeat(2),
        RuntimeError,
        r"repeat",
        r"Number of dimensions",
        r"\(2, 3\)",
    ),
    case("repeat negative", lambda m: m.ones(2).repeat(-1), RuntimeError, r"repeat", r"-1"),
    case(
        "take out of range",
        lambda m: m.take(m.ones(2, 3), m.tensor([6])),
        IndexError,
        r"take",
        r"6",
    ),
    case(
        "index_select out of range",
        lambda m: m.ones(3, 2).index_select(0, m.tensor([0, 3])),
        IndexError,
        r"index_select",
        r"index 3",
        r"size 3",
    ),
    case(
        "index_select 2-D index",
        lambda m: m.ones(3, 2).index_select(0, m.tensor([[0]])),
        IndexError,
        r"index_select",
        r"vector|2-D|1D",
    ),
    case(
        "index_select float index",
        lambda m: m.ones(3).index_select(0, m.tensor([0.0])),
        RuntimeError,
        r"index_select",
        r"int32 or int64",
        r"float32",
    ),
    case(
        "gather out of range",
        lambda m: m.gather(m.ones(3), 0, m.tensor([5])),
        RuntimeError,
        r"gather",
        r"index 5",
        r"size 3",
    ),
    case(
        "gather ndim",
        lambda m: m.ones(3, 2).gather(0, m.tensor([0, 1])),
        RuntimeError,
        r"gather",
        r"same number of dimensions",
        r"\(3, 2\)",
    ),
    case(
        "gather float index",
        lambda m: m.ones(3).gather(0, m.tensor([0.0])),
        RuntimeError,
        r"gather",
        r"int32 or int64",
        r"float32",
    ),
    case(
        "masked_fill non-bool mask",
        lambda m: m.ones(2).masked_fill(m.tensor([1, 0]), 0.0),
        RuntimeError,
        r"masked_fill",
        r"bool",
        r"int64",
    ),
    case(
        "masked_fill mask shape",
        lambda m: m.ones(2).masked_fill(m.tensor([True, False, True]), 0.0),
        RuntimeError,
        r"masked_fill|where",
        r"\(3,\)|3",
    ),
    case(
        "masked_fill value 1-D",
        lambda m: m.ones(2).masked_fill(m.tensor([True, False]), m.ones(2)),
        RuntimeError,
        r"masked_fill",
        r"0-dimensional",
        r"1 dimension",
    ),
    case(
        "split negative sizes",
        lambda m: m.split(m.ones(2), [3, -1]),
        RuntimeError,
        r"split",
        r"negative",
        r"\(3, -1\)",
    ),
    case("chunk negative", lambda m: m.ones(4).chunk(-1), RuntimeError, r"chunk", r"-1"),
    case(
        "roll two shifts without dims",
        lambda m: m.ones(2).roll((1, 1)),
        RuntimeError,
        r"roll",
        r"shifts",
    ),
    case(
        "index_select dim",
        lambda m: m.ones(2).index_select(1, m.tensor([0])),
        IndexError,
        r"index_select",
        r"got 1",
    ),
    case(
        "gather dim", lambda m: m.ones(2).gather(1, m.tensor([0])), IndexError, r"gather", r"got 1"
    ),
    case(
        "take float index",
        lambda m: m.take(m.ones(2), m.tensor([0.5])),
        RuntimeError,
        r"take",
        r"float32",
    ),
    case(
        "masked_fill mask broadcast",
        lambda m: m.ones(2, 3).masked_fill(m.tensor([True, False]), 0.0),
        RuntimeError,
        r"\(2,\) bool",
        r"\(2, 3\)",
    ),
    # ---------------------------------------------------------------------- linalg
    case(
        "matmul inner",
        lambda m: m.ones(2, 3) @ m.ones(4, 5),
        RuntimeError,
        r"matmul|mat1",
        r"2x3",
        r"4x5",
    ),
    case(
        "matmul 0-d", lambda m: m.matmul(m.tensor(1.0), m.ones(2)), RuntimeError, r"matmul", r"0D"
    ),
    case(
        "matmul batch",
        lambda m: m.ones(2, 3, 4) @ m.ones(5, 4, 2),
        RuntimeError,
        r"matmul",
        r"\(2, 3, 4\)",
        r"\(5, 4, 2\)",
    ),
    case("matmul number", lambda m: m.matmul(m.ones(2), 2.0), TypeError, r"matmul", r"float"),
    case("dot 2-D", lambda m: m.dot(m.ones(2, 2), m.ones(2)), RuntimeError, r"dot", r"2D"),
    case(
        "dot sizes",
        lambda m: m.dot(m.ones(2), m.ones(3)),
        RuntimeError,
        r"dot|matmul",
        r"2",
        r"3",
    ),
    case(
        "linear shapes",
        lambda m: m.F.linear(m.ones(2, 3), m.ones(4, 5)),
        RuntimeError,
        r"linear",
        r"\(4, 5\)",
        r"\(2, 3\)",
    ),
    case(
        "linear bias",
        lambda m: m.F.linear(m.ones(2, 3), m.ones(4, 3), m.ones(5)),
        RuntimeError,
        r"linear|bias|size",
        r"5",
        r"4",
    ),
    # ----------------------------------------------------------- conv2d and pooling
    case(
        "conv2d stride 0",
        lambda m: m.F.conv2d(image(m), kernel(m), stride=0),
        RuntimeError,
        r"conv2d",
        r"stride should be greater than zero",
        r"stride=\(0, 0\)",
    ),
    case(
        "conv2d stride pair with 0",
        lambda m: m.F.conv2d(image(m), kernel(m), stride=(1, 0)),
        RuntimeError,
        r"conv2d",
        r"stride=\(1, 0\)",
    ),
    case(
        "conv2d padding -1",
        lambda m: m.F.conv2d(image(m), kernel(m), padding=-1),
        RuntimeError,
        r"conv2d",
        r"negative padding",
        r"padding=\(-1, -1\)",
    ),
    case(
        "conv2d dilation 0",
        lambda m: m.F.conv2d(image(m), kernel(m), dilation=0),
        RuntimeError,
        r"conv2d",
        r"dilation",
        r"\(0, 0\)",
    ),
    case(
        "conv2d groups 0",
        lambda m: m.F.conv2d(image(m), kernel(m), groups=0),
        RuntimeError,
        r"conv2d",
        r"groups",
        r"0",
    ),
    case(
        "conv2d stride of three",
        lambda m: m.F.conv2d(image(m), kernel(m), stride=(1, 1, 1)),
        RuntimeError,
        r"conv2d",
        r"stride",
        r"\(1, 1, 1\)",
    ),
    case(
        "conv2d stride string",
        lambda m: m.F.conv2d(image(m), kernel(m), stride="2"),
        TypeError,
        r"conv2d",
        r"stride",
        r"str",
    ),
    case(
        "conv2d padding string",
        lambda m: m.F.conv2d(image(m), kernel(m), padding="full"),
        RuntimeError,
        r"conv2d",
        r"padding",
        r"'full'",
    ),
    case(
        "conv2d same with stride",
        lambda m: m.F.conv2d(image(m), kernel(m), stride=2, padding="same"),
        RuntimeError,
        r"conv2d",
        r"padding='same'",
        r"strided",
    ),
    case(
        "conv2d channels",
        lambda m: m.F.conv2d(m.ones(1, 2, 5, 5), kernel(m)),
        RuntimeError,
        r"conv2d",
        r"\[1, 1, 3, 3\]",
        r"2 channels",
    ),
    case(
        "conv2d 2-D input",
        lambda m: m.F.conv2d(m.ones(5, 5), kernel(m)),
        RuntimeError,
        r"conv2d",
        r"\(5, 5\)",
    ),
    case(
        "conv2d kernel too big",
        lambda m: m.F.conv2d(m.ones(1, 1, 2, 2), m.ones(1, 1, 5, 5)),
        RuntimeError,
        r"conv2d",
        r"Kernel size",
        r"\(2 x 2\)",
    ),
    case(
        "conv2d bias",
        lambda m: m.F.conv2d(image(m), kernel(m), m.ones(2)),
        RuntimeError,
        r"conv2d",
        r"bias",
        r"\(2,\)",
    ),
    case(
        "max_pool2d kernel 0",
        lambda m: m.F.max_pool2d(image(m), 0),
        RuntimeError,
        r"max_pool2d",
        r"kernel_size",
        r"0",
    ),
    case(
        "max_pool2d stride 0",
        lambda m: m.F.max_pool2d(image(m), 2, stride=0),
        RuntimeError,
        r"max_pool2d",
        r"stride",
        r"0",
    ),
    case(
        "max_pool2d padding -1",
        lambda m: m.F.max_pool2d(image(m), 2, padding=-1),
        RuntimeError,
        r"max_pool2d",
        r"padding",
        r"-1",
    ),
    case(
        "max_pool2d dilation 0",
        lambda m: m.F.max_pool2d(image(m), 2, dilation=0),
        RuntimeError,
        r"max_pool2d",
        r"dilation",
        r"0",
    ),
    case(
        "max_pool2d pad too large",
        lambda m: m.F.max_pool2d(image(m), 3, padding=2),
        RuntimeError,
        r"max_pool2d",
        r"pad should be at most half",
        r"pad=2",
    ),
    case(
        "max_pool2d output too small",
        lambda m: m.F.max_pool2d(m.ones(1, 1, 2, 2), 3),
        RuntimeError,
        r"max_pool2d",
        r"\(1, 1, 2, 2\)",
        r"too small",
    ),
    case(
        "max_pool2d 2-D input",
        lambda m: m.F.max_pool2d(m.ones(5, 5), 2),
        RuntimeError,
        r"max_pool2d",
        r"\(5, 5\)",
    ),
    case(
        "max_pool2d kernel of three",
        lambda m: m.F.max_pool2d(image(m), (2, 2, 2)),
        RuntimeError,
        r"max_pool2d",
        r"kernel_size",
        r"\(2, 2, 2\)",
    ),
    case(
        "avg_pool2d kernel 0",
        lambda m: m.F.avg_pool2d(image(m), 0),
        RuntimeError,
        r"avg_pool2d",
        r"kernel_size",
        r"0",
    ),
    case(
        "avg_pool2d padding -1",
        lambda m: m.F.avg_pool2d(image(m), 2, padding=-1),
        RuntimeError,
        r"avg_pool2d",
        r"padding",
        r"-1",
    ),
    case(
        "avg_pool2d divisor 0",
        lambda m: m.F.avg_pool2d(image(m), 2, divisor_override=0),
        RuntimeError,
        r"avg_pool2d",
        r"divisor",
        r"0",
    ),
    # ------------------------------------------------------------------------ losses
    case(
        "nll_loss target out of range",
        lambda m: m.F.nll_loss(m.ones(2, 3), m.tensor([0, 3])),
        IndexError,
        r"nll_loss",
        r"Target 3 is out of bounds",
    ),
    case(
        "nll_loss batch mismatch",
        lambda m: m.F.nll_loss(m.ones(2, 3), m.tensor([0, 1, 2])),
        ValueError,
        r"nll_loss",
        r"batch size \(2\)",
        r"\(3\)",
    ),
    case(
        "nll_loss float target",
        lambda m: m.F.nll_loss(m.ones(2, 3), m.tensor([0.0, 1.0])),
        RuntimeError,
        r"nll_loss",
        r"float32",
    ),
    case(
        "nll_loss reduction",
        lambda m: m.F.nll_loss(m.ones(2, 3), m.tensor([0, 1]), reduction="avg"),
        ValueError,
        r"avg is not a valid value for reduction",
    ),
    case(
        "nll_loss weight",
        lambda m: m.F.nll_loss(m.ones(2, 3), m.tensor([0, 1]), weight=m.ones(2)),
        RuntimeError,
        r"nll_loss",
        r"weight tensor should be defined",
        r"\[2\]",
    ),
    case(
        "cross_entropy (2, 1) target",
        lambda m: m.F.cross_entropy(m.ones(2, 3), m.tensor([[0], [1]])),
        RuntimeError,
        r"cross_entropy|nll_loss",
        r"0D or 1D target",
        r"\(2, 1\)",
    ),
    case(
        "cross_entropy target out of range",
        lambda m: m.F.cross_entropy(m.ones(2, 3), m.tensor([-2, 1])),
        IndexError,
        r"Target -2 is out of bounds",
    ),
    case(
        "cross_entropy probability shape",
        lambda m: m.F.cross_entropy(m.ones(2, 3), m.ones(2, 4)),
        RuntimeError,
        r"cross_entropy",
        r"\(2, 3\)|\[2, 3\]",
        r"\(2, 4\)|\[2, 4\]",
    ),
    case(
        "binary_cross_entropy range",
        lambda m: m.F.binary_cross_entropy(m.tensor([1.5]), m.tensor([1.0])),
        RuntimeError,
        r"binary_cross_entropy",
        r"between 0 and 1",
    ),
    case(
        "binary_cross_entropy size",
        lambda m: m.F.binary_cross_entropy(m.tensor([0.5]), m.tensor([1.0, 0.0])),
        ValueError,
        r"binary_cross_entropy",
        r"\(2,\)|\[2\]",
    ),
    case(
        "bce_with_logits size",
        lambda m: m.F.binary_cross_entropy_with_logits(m.ones(2), m.ones(3)),
        ValueError,
        r"binary_cross_entropy_with_logits",
        r"\(3,\)|\[3\]",
        r"\(2,\)|\[2\]",
    ),
    case(
        "mse_loss shapes",
        lambda m: m.F.mse_loss(m.ones(2), m.ones(3)),
        RuntimeError,
        r"mse_loss|sub",
        r"\(3,\)|\(3\)",
    ),
    case(
        "mse_loss reduction",
        lambda m: m.F.mse_loss(m.ones(2), m.ones(2), reduction="avg"),
        ValueError,
        r"avg is not a valid value for reduction",
    ),
    case(
        "l1_loss reduction",
        lambda m: m.F.l1_loss(m.ones(2), m.ones(2), reduction="total"),
        ValueError,
        r"total is not a valid value for reduction",
    ),
    case(
        "dropout p",
        lambda m: m.F.dropout(m.ones(3), 1.5),
        ValueError,
        r"dropout probability",
        r"1\.5",
    ),
    case("dropout negative p", lambda m: m.F.dropout(m.ones(3), -0.1), ValueError, r"-0\.1"),
    case(
        "layer_norm shape",
        lambda m: m.F.layer_norm(m.ones(2, 3), (4,)),
        RuntimeError,
        r"layer_norm",
        r"normalized_shape=\[4\]",
        r"\[2, 3\]",
    ),
    case(
        "layer_norm weight",
        lambda m: m.F.layer_norm(m.ones(2, 3), (3,), m.ones(4)),
        RuntimeError,
        r"layer_norm",
        r"weight",
        r"\(4,\)|\[4\]",
    ),
    case(
        "embedding out of range",
        lambda m: m.F.embedding(m.tensor([5]), m.ones(3, 2)),
        IndexError,
        r"embedding|take",
        r"5",
        r"3",
    ),
    case(
        "embedding float input",
        lambda m: m.F.embedding(m.tensor([0.0]), m.ones(3, 2)),
        RuntimeError,
        r"embedding|take",
        r"float32",
    ),
    case(
        "nll_loss spatial target",
        lambda m: m.F.nll_loss(m.ones(2, 3, 4), m.tensor([[0] * 5] * 2)),
        RuntimeError,
        r"nll_loss",
        r"\(2, 4\)",
        r"\(2, 5\)",
    ),
    case(
        "cross_entropy spatial target",
        lambda m: m.F.cross_entropy(m.ones(2, 3, 4), m.tensor([0, 1])),
        RuntimeError,
        r"\(2, 4\)",
        r"targets \(2,\)",
    ),
    case(
        "layer_norm normalized_shape",
        lambda m: m.F.layer_norm(m.ones(2, 3), 3.5),
        TypeError,
        r"layer_norm",
        r"normalized_shape",
        r"float",
    ),
    case(
        "embedding 1-D weight",
        lambda m: m.F.embedding(m.tensor([0]), m.ones(3)),
        RuntimeError,
        r"embedding",
        r"2-D",
        r"\(3,\)",
    ),
    case(
        "in-place dropout of a leaf",
        lambda m: m.F.dropout(leaf(m, 3), 0.5, inplace=True),
        RuntimeError,
        r"leaf Variable that requires grad",
    ),
    # ----------------------------------------------------------------------- factories
    case(
        "ones -1", lambda m: m.ones(-1), RuntimeError, r"ones", r"negative dimension -1", r"\[-1\]"
    ),
    case("zeros negative", lambda m: m.zeros(2, -3), RuntimeError, r"zeros", r"-3", r"\[2, -3\]"),
    case("empty -1", lambda m: m.empty(-1), RuntimeError, r"empty", r"-1"),
    case("full negative", lambda m: m.full((-2,), 1.0), RuntimeError, r"full", r"-2"),
    case("rand -1", lambda m: m.rand(-1), RuntimeError, r"rand", r"-1"),
    case("randn negative", lambda m: m.randn(3, -1), RuntimeError, r"randn", r"-1"),
    case(
        "randint empty range",
        lambda m: m.randint(5, 2, (3,)),
        RuntimeError,
        r"randint",
        r"from=5",
        r"to=2",
    ),
    case("randint size", lambda m: m.randint(0, 5, (-1,)), RuntimeError, r"randint", r"-1"),
    case(
        "arange step 0",
        lambda m: m.arange(0, 5, 0),
        RuntimeError,
        r"arange",
        r"step must be nonzero",
    ),
    case(
        "arange wrong direction",
        lambda m: m.arange(5, 0, 1),
        RuntimeError,
        r"arange",
        r"bound",
        r"step",
    ),
    case("arange infinite", lambda m: m.arange(0, float("inf")), RuntimeError, r"arange", r"inf"),
    case(
        "linspace steps",
        lambda m: m.linspace(0, 1, -1),
        RuntimeError,
        r"linspace",
        r"steps",
        r"-1",
    ),
    case("eye negative", lambda m: m.eye(-1), RuntimeError, r"eye", r"n", r"-1"),
    case(
        "tensor ragged",
        lambda m: m.tensor([[1.0, 2.0], [3.0]]),
        ValueError,
        r"tensor",
        r"expected sequence of length 2 at dim 1 \(got 1\)",
    ),
    case("tensor of a string", lambda m: m.tensor("abc"), TypeError, r"tensor", r"str"),
    case("tensor dtype", lambda m: m.tensor([1.0], dtype="float"), TypeError, r"dtype", r"'float'"),
    case("zeros dtype", lambda m: m.zeros(2, dtype="int"), TypeError, r"dtype", r"'int'"),
    case("zeros_like of a number", lambda m: m.zeros_like(5), TypeError, r"zeros_like", r"int"),
    case("ones_like of a list", lambda m: m.ones_like([1.0]), TypeError, r"ones_like", r"list"),
    case("tensor device", lambda m: m.tensor([1.0], device="tpu"), RuntimeError, r"device", r"tpu"),
    case(
        "set_default_dtype int",
        lambda m: m.set_default_dtype(m.int64),
        TypeError,
        r"default",
        r"int64",
    ),
    case(
        "requires_grad on ints",
        lambda m: m.tensor([1, 2], requires_grad=True),
        RuntimeError,
        r"floating point",
        r"int64",
    ),
    case(
        "tensor ragged deeper",
        lambda m: m.tensor([[[1.0], [2.0, 3.0]]]),
        ValueError,
        r"tensor",
        r"length 1 at dim 2 \(got 2\)",
    ),
    case("full_like of a string", lambda m: m.full_like("a", 1.0), TypeError, r"full_like", r"str"),
    # ---------------------------------------------------------------------- nn modules
    case("Linear negative", lambda m: m.nn.Linear(-1, 3), RuntimeError, r"negative dimension -1"),
    case(
        "Linear input",
        lambda m: m.nn.Linear(3, 2)(m.ones(4)),
        RuntimeError,
        r"linear|mat1|size",
        r"4",
        r"3",
    ),
    case(
        "Conv2d groups",
        lambda m: m.nn.Conv2d(3, 4, 3, groups=2),
        ValueError,
        r"in_channels",
        r"groups",
    ),
    case(
        "Conv2d groups 0",
        lambda m: m.nn.Conv2d(3, 4, 3, groups=0),
        ValueError,
        r"Conv2d",
        r"groups should be greater than zero",
        r"groups=0",
    ),
    case(
        "Conv2d padding string",
        lambda m: m.nn.Conv2d(1, 1, 3, padding="full"),
        ValueError,
        r"padding",
        r"'full'",
    ),
    case(
        "Conv2d same with stride",
        lambda m: m.nn.Conv2d(1, 1, 3, stride=2, padding="same"),
        ValueError,
        r"padding='same'",
        r"strided",
    ),
    case(
        "Conv2d input channels",
        lambda m: m.nn.Conv2d(3, 4, 3)(m.ones(1, 2, 5, 5)),
        RuntimeError,
        r"conv2d",
        r"3 channels",
        r"2 channels",
    ),
    case(
        "MaxPool2d kernel 0",
        lambda m: m.nn.MaxPool2d(0)(image(m)),
        RuntimeError,
        r"max_pool2d",
        r"0",
    ),
    case(
        "AvgPool2d stride 0",
        lambda m: m.nn.AvgPool2d(2, 0)(image(m)),
        RuntimeError,
        r"avg_pool2d",
        r"0",
    ),
    case("Dropout p", lambda m: m.nn.Dropout(2), ValueError, r"dropout probability", r"2"),
    case(
        "LayerNorm input",
        lambda m: m.nn.LayerNorm(4)(m.ones(2, 3)),
        RuntimeError,
        r"layer_norm",
        r"\[4\]",
        r"\[2, 3\]",
    ),
    case(
        "Embedding index",
        lambda m: m.nn.Embedding(3, 2)(m.tensor([5])),
        IndexError,
        r"5",
        r"3",
    ),
    case(
        "Embedding negative",
        lambda m: m.nn.Embedding(-1, 2),
        RuntimeError,
        r"negative dimension -1",
    ),
    case(
        "Flatten of a vector", lambda m: m.nn.Flatten()(m.ones(3)), IndexError, r"flatten", r"got 1"
    ),
    case("Sequential index", lambda m: m.nn.Sequential()[5], IndexError, r"index 5", r"range"),
    case("ModuleList index", lambda m: m.nn.ModuleList([m.nn.ReLU()])[3], IndexError, r"index 3"),
    case(
        "CrossEntropyLoss reduction",
        lambda m: m.nn.CrossEntropyLoss(reduction="avg")(m.ones(2, 3), m.tensor([0, 1])),
        ValueError,
        r"avg is not a valid value for reduction",
    ),
    case(
        "Parameter of ints",
        lambda m: m.nn.Parameter(m.tensor([1, 2])),
        RuntimeError,
        r"floating point",
        r"int64",
    ),
    case(
        "module assigns a tensor to a parameter",
        lambda m: module_with(m, "weight", lambda m: m.ones(3, 2)),
        TypeError,
        r"weight",
        r"Parameter or None",
    ),
    case(
        "register_parameter dotted name",
        lambda m: m.nn.Linear(2, 2).register_parameter("a.b", None),
        KeyError,
        r"parameter name",
        r'"\."',
    ),
    case(
        "add_module of a number",
        lambda m: m.nn.Linear(2, 2).add_module("child", 5),
        TypeError,
        r"int",
        r"Module",
    ),
    case(
        "get_submodule missing",
        lambda m: m.nn.Sequential(m.nn.ReLU()).get_submodule("fc"),
        AttributeError,
        r"fc",
    ),
    case(
        "load_state_dict missing key",
        lambda m: linear_state(m, drop=("bias",)),
        RuntimeError,
        r"Missing key",
        r"bias",
    ),
    case(
        "load_state_dict shape",
        lambda m: linear_state(m, weight=lambda m: m.ones(4, 2)),
        RuntimeError,
        r"size mismatch for weight",
        r"\(4, 2\)|\[4, 2\]",
        r"\(3, 2\)|\[3, 2\]",
    ),
    case(
        "kaiming of a vector",
        lambda m: m.nn.init.kaiming_uniform_(m.ones(3)),
        ValueError,
        r"Fan in and fan out",
        r"fewer than 2 dimensions",
    ),
    case(
        "calculate_gain",
        lambda m: m.nn.init.calculate_gain("swish"),
        ValueError,
        r"Unsupported nonlinearity swish",
    ),
    case(
        "kaiming mode",
        lambda m: m.nn.init.kaiming_normal_(m.ones(2, 2), mode="fan_avg"),
        ValueError,
        r"fan_avg",
    ),
    case(
        "Module without forward",
        lambda m: m.nn.Module()(m.ones(2)),
        NotImplementedError,
        r"forward",
    ),
    case("Sequential of a number", lambda m: m.nn.Sequential(5), TypeError, r"int", r"Module"),
    case("ModuleList append", lambda m: m.nn.ModuleList().append(5), TypeError, r"int", r"Module"),
    case(
        "register_buffer of a number",
        lambda m: m.nn.Linear(2, 2).register_buffer("b", 5),
        TypeError,
        r"buffer 'b'",
        r"int",
    ),
    case(
        "load_state_dict unexpected key",
        lambda m: linear_state(m, extra=lambda m: m.ones(1)),
        RuntimeError,
        r"Unexpected key",
        r"extra",
    ),
    case("Flatten dims", lambda m: m.nn.Flatten(0, 5)(m.ones(2, 3)), IndexError, r"flatten", r"5"),
    case(
        "LayerNorm negative", lambda m: m.nn.LayerNorm(-1), RuntimeError, r"negative dimension -1"
    ),
    case(
        "MaxPool2d of a vector",
        lambda m: m.nn.MaxPool2d(2)(m.ones(2)),
        RuntimeError,
        r"max_pool2d",
        r"\(2,\)",
    ),
    case("Softmax dim", lambda m: m.nn.Softmax(dim=3)(m.ones(2, 2)), IndexError, r"softmax", r"3"),
    # ------------------------------------------------------------------------- optim
    case("SGD no params", lambda m: m.optim.SGD([], lr=0.1), ValueError, r"empty parameter list"),
    case("SGD lr", lambda m: sgd(m, lr=-1.0), ValueError, r"Invalid learning rate: -1"),
    case(
        "SGD momentum", lambda m: sgd(m, lr=0.1, momentum=-0.5), ValueError, r"momentum", r"-0\.5"
    ),
    case(
        "SGD weight_decay",
        lambda m: sgd(m, lr=0.1, weight_decay=-1.0),
        ValueError,
        r"weight_decay",
        r"-1",
    ),
    case(
        "SGD nesterov",
        lambda m: sgd(m, lr=0.1, nesterov=True),
        ValueError,
        r"Nesterov momentum requires a momentum and zero dampening",
    ),
    case(
        "SGD of a tensor",
        lambda m: m.optim.SGD(leaf(m, 2), lr=0.1),
        TypeError,
        r"iterable of Tensors or dicts",
    ),
    case(
        "SGD of a non-leaf",
        lambda m: m.optim.SGD([leaf(m, 2) * 2], lr=0.1),
        ValueError,
        r"non-leaf Tensor",
    ),
    case(
        "SGD duplicate groups",
        lambda m: (lambda p: m.optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1))(leaf(m, 2)),
        ValueError,
        r"more than one parameter group",
    ),
    case(
        "Adam beta",
        lambda m: adam(m, betas=(1.0, 0.9)),
        ValueError,
        r"beta parameter at index 0",
        r"1\.0",
    ),
    case("Adam eps", lambda m: adam(m, eps=-1e-8), ValueError, r"epsilon value", r"-1e-08"),
    case("Adam lr", lambda m: adam(m, lr=-0.1), ValueError, r"learning rate", r"-0\.1"),
    case(
        "AdamW weight_decay",
        lambda m: m.optim.AdamW([leaf(m, 2)], weight_decay=-0.1),
        ValueError,
        r"weight_decay",
        r"-0\.1",
    ),
    case(
        "optimizer load_state_dict groups",
        optimizer_state_mismatch,
        ValueError,
        r"different number of parameter groups",
    ),
    case(
        "Adam beta at index 1",
        lambda m: adam(m, betas=(0.9, -0.1)),
        ValueError,
        r"beta parameter at index 1",
        r"-0\.1",
    ),
    case(
        "parameter group without params",
        lambda m: m.optim.SGD([{"lr": 0.1}], lr=0.1),
        KeyError,
        r"params",
    ),
    # ---------------------------------------------------------------------- autograd
    case(
        "backward of a non-scalar",
        lambda m: (leaf(m, 3) * 2).backward(),
        RuntimeError,
        r"grad can be implicitly created only for scalar outputs",
    ),
    case(
        "backward without grad",
        lambda m: m.ones(2).sum().backward(),
        RuntimeError,
        r"does not require grad",
    ),
    case(
        "backward twice",
        backward_twice,
        RuntimeError,
        r"backward through the graph a second time",
    ),
    case(
        "backward gradient shape",
        lambda m: (leaf(m, 2) * 2).backward(m.ones(3)),
        RuntimeError,
        r"Mismatch in shape",
        r"\[3\]|\(3,\)",
        r"\[2\]|\(2,\)",
    ),
    case(
        "backward inputs empty",
        lambda m: (leaf(m, 2) * 2).sum().backward(inputs=[]),
        RuntimeError,
        r"inputs",
        r"cannot be empty",
    ),
    case(
        "grad of an unused input", grad_of_unused, RuntimeError, r"not have been used in the graph"
    ),
    case(
        "grad w.r.t. a constant",
        lambda m: m.autograd.grad((leaf(m, 2) * 2).sum(), [m.ones(2)]),
        RuntimeError,
        r"does not require grad",
    ),
    case(
        "grad of a non-scalar",
        lambda m: (lambda x: m.autograd.grad(x * 2, [x]))(leaf(m, 2)),
        RuntimeError,
        r"grad can be implicitly created only for scalar outputs",
    ),
    # torch.autograd.backward and grad ignore an extra gradient (zip); workbench refuses it.
    case(
        "backward gradients count",
        lambda m: (lambda x: m.autograd.backward([x * 2], [m.ones(2), m.ones(2)]))(leaf(m, 2)),
        RuntimeError,
        r"backward",
        r"1 tensors and 2 gradients",
        torch=False,
    ),
    case(
        "grad outputs count",
        lambda m: (lambda x: m.autograd.grad([x * 2], [x], [m.ones(2), m.ones(2)]))(leaf(m, 2)),
        RuntimeError,
        r"grad",
        r"1 tensors and 2 gradients",
        torch=False,
    ),
    case(
        "grad_fn of a leaf set",
        lambda m: setattr(leaf(m, 2), "grad", m.ones(3)),
        RuntimeError,
        r"grad",
        r"size|shape",
    ),
    case(
        "grad set to a number",
        lambda m: setattr(leaf(m, 2), "grad", 1.0),
        TypeError,
        r"grad",
        r"float",
    ),
    case(
        "retain_grad without grad",
        lambda m: m.ones(2).retain_grad(),
        RuntimeError,
        r"retain_grad",
        r"requires_grad=False",
    ),
    case(
        "set_grad_enabled string",
        lambda m: m.set_grad_enabled("yes"),
        TypeError,
        r"set_grad_enabled|bool",
    ),
    case(
        "requires_grad_ on a non-leaf",
        lambda m: (leaf(m, 2) * 2).requires_grad_(False),
        RuntimeError,
        r"leaf variables",
        r"detach",
    ),
    case(
        "detach_ of a view",
        lambda m: leaf(m, 2, 2)[0].detach_(),
        RuntimeError,
        r"view",
    ),
    case(
        "saved tensor modified",
        saved_then_modified,
        RuntimeError,
        r"modified by an inplace operation",
    ),
    case(
        "gradcheck without inputs needing grad",
        lambda m: m.autograd.gradcheck(lambda x: x * 2, (m.ones(2, dtype=m.float64),)),
        ValueError,
        r"gradcheck",
        r"requir",
    ),
    case(
        "jacobian of a non-tensor",
        lambda m: m.autograd.functional.jacobian(lambda x: x, "a"),
        TypeError,
        r"jacobian|inputs",
        r"str",
    ),
    case(
        "backward under no_grad",
        backward_without_grad_mode,
        RuntimeError,
        r"does not require grad and does not have a grad_fn",
    ),
    case(
        "vjp v shape",
        lambda m: m.autograd.functional.vjp(lambda x: x * 2, m.ones(2), m.ones(3)),
        RuntimeError,
        r"invalid size",
        r"\(3,\)|\[3\]",
    ),
    case(
        "hessian of a non-scalar",
        lambda m: m.autograd.functional.hessian(lambda x: x * 2, m.ones(2)),
        RuntimeError,
        r"hessian",
        r"single element",
    ),
    case(
        "jacobian of a function returning a number",
        lambda m: m.autograd.functional.jacobian(lambda x: 5, m.ones(2)),
        TypeError,
        r"jacobian",
        r"Tensor",
    ),
    # ------------------------------------------------------------------------- hooks
    case(
        "hook changes the shape",
        lambda m: hook_returning(m, lambda m: m.ones(4)),
        RuntimeError,
        r"hook",
        r"size",
        r"\(3,\)|\[3\]",
    ),
    case(
        "hook returns a number",
        lambda m: hook_returning(m, lambda m: 5),
        TypeError,
        r"hook",
        r"int",
    ),
    case(
        "hook changes the dtype",
        lambda m: hook_returning(m, lambda m: m.ones(3, dtype=m.float64)),
        RuntimeError,
        r"hook",
        r"type",
    ),
    case(
        "register_hook without grad",
        lambda m: m.ones(2).register_hook(lambda g: None),
        RuntimeError,
        r"register a hook on a tensor that doesn't require gradient",
    ),
    case(
        "post-accumulate hook on a non-leaf",
        lambda m: (leaf(m, 2) * 2).register_post_accumulate_grad_hook(lambda t: None),
        RuntimeError,
        r"post accumulate grad hook|leaf",
    ),
    case(
        "node hook returns a number",
        lambda m: node_hook_returning(m, lambda m, grads: 5),
        TypeError,
        r"expected tuple",
        r"int",
    ),
    case(
        "node hook gives a gradient where there was none",
        lambda m: node_hook_returning(m, lambda m, grads: (grads[0], grads[0])),
        RuntimeError,
        r"can't replace a None gradient",
    ),
    case(
        "node pre-hook count",
        lambda m: node_prehook_returning(m, lambda m, grads: (grads[0], grads[0])),
        RuntimeError,
        r"incorrect number of values",
        r"got 2, but expected 1",
    ),
    case(
        "node pre-hook size",
        lambda m: node_prehook_returning(m, lambda m, grads: (m.ones(3),)),
        RuntimeError,
        r"changed the size of value",
        r"\(3,\)",
    ),
    # ---------------------------------------------------------------------- Function
    case(
        "Function backward returns an ndarray",
        lambda m: function_returning(m, lambda m, g: np.ones((2, 3))),
        RuntimeError,
        r"DoubleBackward",
        r"ndarray",
        r"Variable or None",
    ),
    case(
        "Function backward returns a list",
        lambda m: function_returning(m, lambda m, g: [g]),
        RuntimeError,
        r"DoubleBackward",
        r"list",
    ),
    case(
        "Function backward shape",
        lambda m: function_returning(m, lambda m, g: m.ones(3, 2)),
        RuntimeError,
        r"DoubleBackward",
        r"\[3, 2\]",
        r"\[2, 3\]",
    ),
    case(
        "Function backward count",
        lambda m: function_returning(m, lambda m, g: (g, g)),
        RuntimeError,
        r"DoubleBackward",
        r"incorrect number of gradients",
        r"expected 1, got 2",
    ),
    case(
        "Function saves a number",
        lambda m: function_saving(m, 3.0),
        TypeError,
        r"save_for_backward",
        r"float",
    ),
    case(
        "Function dirty input not returned",
        function_dirty_not_returned,
        RuntimeError,
        r"marked as dirty",
    ),
    case("Function without forward", function_without_forward, NotImplementedError, r"forward"),
    case(
        "Function without backward",
        function_without_backward,
        NotImplementedError,
        r"backward",
    ),
    case(
        "Function gradient for a number",
        function_grad_for_number,
        RuntimeError,
        r"ScaleBackward",
        r"position 2",
        r"not a Variable|not a Tensor",
    ),
    # -------------------------------------------------------------------- checkpoint
    case(
        "checkpoint keyword with reentrant",
        lambda m: m.checkpoint(lambda x, k: x, leaf(m, 2), k=1, use_reentrant=True),
        ValueError,
        r"Unexpected keyword arguments: k",
    ),
    case(
        "checkpoint determinism_check",
        lambda m: m.checkpoint(
            lambda x: x, leaf(m, 2), use_reentrant=False, determinism_check="all"
        ),
        ValueError,
        r"determinism_check",
        r"all",
    ),
    case(
        "checkpoint reentrant with grad",
        checkpointed_grad,
        RuntimeError,
        r"use_reentrant=True",
        r"\.grad\(\)",
    ),
    case(
        "checkpoint recompute differs",
        checkpoint_changing_shape,
        RuntimeError,
        r"checkpoint",
        r"Recomputed values",
    ),
    # torch: checkpoint_sequential(fns, 0, x) fails with a bare ZeroDivisionError.
    case(
        "checkpoint_sequential zero segments",
        lambda m: m.checkpoint_sequential([m.nn.ReLU()], 0, leaf(m, 2), use_reentrant=False),
        ValueError,
        r"checkpoint_sequential",
        r"segments",
        r"0",
        torch=False,
    ),
    case(
        "end_checkpoint without start",
        lambda m: _markers_end_without_start(),
        RuntimeError,
        r"end_checkpoint",
        r"start_checkpoint",
        torch=False,
    ),
    # ------------------------------------------------------------------------- traces
    case(
        "trace from bad json",
        lambda m: wb.Trace.from_json("{not json"),
        ValueError,
        r"not a trace",
        r"JSON",
        torch=False,
    ),
    case(
        "trace of the wrong format",
        lambda m: wb.Trace.from_dict({"format": "other"}),
        ValueError,
        r"'format'",
        torch=False,
    ),
    case(
        "trace record kind",
        lambda m: wb.Trace.from_json(
            json.dumps({**saved_trace().to_dict(), "events": [{"kind": "teleport"}]})
        ),
        ValueError,
        r"events\[0\]",
        r"teleport",
        torch=False,
    ),
    case(
        "trace file missing",
        lambda m: wb.Trace.load("/nonexistent/run.json"),
        FileNotFoundError,
        r"Trace\.load",
        r"/nonexistent/run\.json",
        torch=False,
    ),
    case(
        "replay without backward",
        lambda m: wb.TraceReplay(no_backward_trace()),
        ValueError,
        r"no backward pass",
        torch=False,
    ),
    case(
        "replay goto",
        lambda m: wb.TraceReplay(saved_trace()).goto(99),
        IndexError,
        r"step 99",
        r"steps 1\.\.",
        torch=False,
    ),
    case(
        "trace small negative",
        lambda m: wb.trace(small=-1),
        ValueError,
        r"small",
        r"-1",
        torch=False,
    ),
]


# Widgets load ipywidgets; their cases run only where it is installed.
HAS_WIDGETS = importlib.util.find_spec("ipywidgets") is not None

# A bad argument to a widget's constructor raises, as any function's would.
WIDGET_CASES = [
    case(
        "broadcast explorer op",
        lambda m: wb.widgets.BroadcastExplorer(op="pow"),
        ValueError,
        r"BroadcastExplorer",
        r"op",
        r"'pow'",
        torch=False,
    ),
    case(
        "sigmoid explorer span",
        lambda m: wb.widgets.SigmoidExplorer(span=-1.0),
        ValueError,
        r"SigmoidExplorer",
        r"span=-1\.0",
        torch=False,
    ),
]
if HAS_WIDGETS:
    CASES += WIDGET_CASES


@dataclass
class Shown:
    """A widget given bad input shows the reason in its ``error`` (a UI never raises)."""

    id: str
    build: Callable
    patterns: tuple


WIDGET_MESSAGES = [
    Shown("stepper of a number", lambda: wb.widgets.BackwardStepper(5), (r"Trace", r"int")),
    Shown(
        "stepper without a graph",
        lambda: wb.widgets.BackwardStepper(wb.ones(2).sum()),
        (r"no backward graph", r"requires_grad=True"),
    ),
    Shown(
        "stepper of a trace without backward",
        lambda: wb.widgets.BackwardStepper(no_backward_trace()),
        (r"no backward pass",),
    ),
    Shown(
        "checkpoint explorer segments",
        lambda: wb.widgets.CheckpointExplorer(segments=0, layers=2, width=4, batch=2),
        (r"segments = 0", r"from 1 to 2"),
    ),
    Shown(
        "checkpoint explorer more segments than layers",
        lambda: wb.widgets.CheckpointExplorer(segments=5, layers=2, width=4, batch=2),
        (r"segments = 5", r"from 1 to 2"),
    ),
    Shown(
        "checkpoint explorer layers",
        lambda: wb.widgets.CheckpointExplorer(layers=2.5, width=4, batch=2),
        (r"layers = 2\.5", r"whole number"),
    ),
    Shown(
        "broadcast explorer shape text",
        lambda: wb.widgets.BroadcastExplorer(a_shape="two, 3"),
        (r"'two, 3' is not a shape",),
    ),
    Shown(
        "broadcast explorer zero size",
        lambda: wb.widgets.BroadcastExplorer(a_shape="0, 3"),
        (r"\(0, 3\)", r"positive sizes"),
    ),
    Shown(
        "broadcast explorer shapes",
        lambda: wb.widgets.BroadcastExplorer(a_shape="2, 3", b_shape="4"),
        (r"^mul:", r"\(2, 3\)", r"\(4,\)"),
    ),
]


@dataclass
class Command:
    """``workbench ARGS`` exits with ``code`` and one line on stderr, never a traceback."""

    id: str
    args: Callable  # args(tmp_path) -> argv
    code: int
    patterns: tuple


def _trace_file(tmp_path) -> str:
    return str(saved_trace().save(tmp_path / "run.json"))


def _bad_file(tmp_path) -> str:
    path = tmp_path / "bad.json"
    path.write_text("{not json")
    return str(path)


CLI_CASES = [
    Command("no command", lambda p: [], 2, (r"required: command",)),
    Command("unknown command", lambda p: ["fly"], 2, (r"invalid choice: 'fly'",)),
    Command(
        "render a missing file",
        lambda p: ["render", str(p / "nope.json")],
        2,
        (r"^workbench render: ", r"nope\.json"),
    ),
    Command(
        "render a folder",
        lambda p: ["render", str(p)],
        2,
        (r"^workbench render: ", r"no trace file"),
    ),
    Command(
        "render a file that is not JSON",
        lambda p: ["render", _bad_file(p)],
        2,
        (r"bad\.json", r"not a trace", r"not valid JSON"),
    ),
    Command(
        "render a step out of range",
        lambda p: ["render", _trace_file(p), "--step", "40", "-o", str(p / "o.dot")],
        2,
        (r"step 40 is out of range", r"steps 1\.\."),
    ),
    Command(
        "render a negative step",
        lambda p: ["render", _trace_file(p), "--step", "-5", "-o", str(p / "o.dot")],
        2,
        (r"step -5 is out of range",),
    ),
    Command(
        "render a step that is not a number",
        lambda p: ["render", _trace_file(p), "--step", "two"],
        2,
        (r"--step", r"invalid int value: 'two'"),
    ),
    Command(
        "render a kind",
        lambda p: ["render", _trace_file(p), "--kind", "sideways"],
        2,
        (r"--kind", r"invalid choice: 'sideways'"),
    ),
    Command(
        "render to an unknown format",
        lambda p: ["render", _trace_file(p), "-o", str(p / "out.gif")],
        2,
        (r"cannot save as 'gif'",),
    ),
    Command(
        "render into a missing folder",
        lambda p: ["render", _trace_file(p), "-o", str(p / "no" / "out.dot")],
        2,
        (r"^workbench render: ", r"out\.dot"),
    ),
    Command(
        "lab without lessons",
        lambda p: ["lab", "--lessons", str(p / "nowhere")],
        2,
        (r"no lessons folder", r"nowhere"),
    ),
]


# ------------------------------------------------------- nothing silent, nothing loud
def backward_values(m, fn, *values):
    """``fn(m, *leaves).sum().backward()`` with a leaf for each of ``values``."""
    leaves = [m.tensor(v, requires_grad=True) for v in values]
    fn(m, *leaves).sum().backward()
    return [x.grad for x in leaves]


INF, NAN = float("inf"), float("nan")

# Where PyTorch is silent (inf and NaN are values), no numpy RuntimeWarning may escape.
SILENT = {
    "pow 0 ** 0, both gradients": lambda m: backward_values(m, lambda m, x, p: x**p, 0.0, 0.0),
    "pow 0 ** 0, base gradient": lambda m: backward_values(m, lambda m, x: x ** m.tensor(0.0), 0.0),
    "pow(0, tensor(0))": lambda m: m.pow(0, m.tensor(0)),
    "pow of a number 0": lambda m: backward_values(m, lambda m, p: m.pow(0, p), [0.0, -1.0]),
    "pow 0 ** -1": lambda m: backward_values(m, lambda m, x: x**-1.0, [0.0]),
    "pow of a negative base": lambda m: backward_values(m, lambda m, x: x**0.5, [-1.0]),
    "mean of an empty tensor": lambda m: m.ones(0).mean(),
    "mean of an empty dim": lambda m: m.ones(0, 3).mean(0),
    "mean of nothing, backward": lambda m: backward_values(m, lambda m, x: x.mean(), [[]]),
    "mse_loss of nothing": lambda m: m.F.mse_loss(m.ones(0), m.ones(0)),
    "std of a constant": lambda m: m.ones(3).std(),
    "var of a constant, backward": lambda m: backward_values(m, lambda m, x: x.var(), [1.0] * 3),
    "log of 0 and -1": lambda m: backward_values(m, lambda m, x: x.log(), [0.0, -1.0]),
    "log1p of -1": lambda m: backward_values(m, lambda m, x: x.log1p(), [-1.0, -2.0]),
    "division by 0": lambda m: backward_values(m, lambda m, x, y: x / y, [1.0, 0.0], [0.0, 0.0]),
    "integers divided by 0": lambda m: m.tensor([1, 0]) / m.tensor([0, 0]),
    "sqrt of -1 and 0": lambda m: backward_values(m, lambda m, x: x.sqrt(), [-1.0, 0.0]),
    "rsqrt of 0": lambda m: backward_values(m, lambda m, x: x.rsqrt(), [0.0]),
    "reciprocal of 0": lambda m: backward_values(m, lambda m, x: x.reciprocal(), [0.0]),
    "exp overflows": lambda m: backward_values(m, lambda m, x: x.exp(), [1000.0]),
    "expm1 overflows": lambda m: backward_values(m, lambda m, x: x.expm1(), [1000.0]),
    "inf - inf": lambda m: backward_values(m, lambda m, x, y: x - y, [INF], [INF]),
    "a product overflows": lambda m: backward_values(m, lambda m, x: x * x, [1e30]),
    "a matmul overflows": lambda m: backward_values(m, lambda m, x: x @ x, [1e30, 1e30]),
    "a sum overflows": lambda m: m.tensor([3e38, 3e38]).sum(),
    "NaN cast to an integer": lambda m: m.tensor([NAN]).long(),
    "softmax of -inf only": lambda m: backward_values(m, lambda m, x: x.softmax(0), [-INF, -INF]),
    "log_softmax of -inf only": lambda m: backward_values(
        m, lambda m, x: x.log_softmax(0), [-INF, -INF]
    ),
    "logsumexp of -inf only": lambda m: backward_values(
        m, lambda m, x: x.logsumexp(0), [-INF, -INF]
    ),
    "sigmoid far out": lambda m: backward_values(m, lambda m, x: x.sigmoid(), [-1e3, 1e3]),
    "tanh far out": lambda m: backward_values(m, lambda m, x: x.tanh(), [-1e3, 1e3]),
    "softplus far out": lambda m: backward_values(m, lambda m, x: m.F.softplus(x), [-1e3, 1e3]),
    "elu far out": lambda m: backward_values(m, lambda m, x: m.F.elu(x), [-1e3, 1e3]),
    "silu far out": lambda m: backward_values(m, lambda m, x: m.F.silu(x), [-1e3, 1e3]),
    "gelu far out": lambda m: backward_values(m, lambda m, x: m.F.gelu(x), [-1e3, 1e3]),
    "norm of zeros": lambda m: backward_values(m, lambda m, x: x.norm(), [0.0, 0.0]),
    "3-norm of zeros": lambda m: backward_values(m, lambda m, x: x.norm(p=3), [0.0, 0.0]),
    "prod with zeros": lambda m: backward_values(m, lambda m, x: x.prod(), [0.0, 2.0, 0.0]),
    "cumprod with a zero": lambda m: backward_values(m, lambda m, x: x.cumprod(0), [2.0, 0.0]),
    "max_pool2d of -inf": lambda m: backward_values(
        m, lambda m, x: m.F.max_pool2d(x, 2), [[[[-INF, -INF], [-INF, -INF]]]]
    ),
    "binary_cross_entropy at 0 and 1": lambda m: backward_values(
        m, lambda m, x: m.F.binary_cross_entropy(x, m.tensor([0.0, 1.0])), [1.0, 0.0]
    ),
    "cross_entropy with -inf logits": lambda m: backward_values(
        m, lambda m, x: m.F.cross_entropy(x, m.tensor([0])), [[0.0, -INF]]
    ),
    "cross_entropy, every target ignored": lambda m: m.F.cross_entropy(
        m.zeros(2, 3), m.tensor([-100, -100])
    ),
    "layer_norm of a constant row": lambda m: backward_values(
        m, lambda m, x: m.F.layer_norm(x, (3,)), [[1.0, 1.0, 1.0]]
    ),
    "where with a NaN branch": lambda m: backward_values(
        m, lambda m, x: m.where(x > 0, x.log(), x), [-1.0, 1.0]
    ),
}


@pytest.mark.parametrize("call", SILENT.values(), ids=SILENT.keys())
def test_no_numpy_warning_where_pytorch_is_silent(call):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        call(WB)
        if torch is not None:
            call(TORCH)  # the case belongs here: PyTorch is silent too


# Where PyTorch warns, workbench warns too, naming the op.
LOUD = {
    "softmax without dim": (lambda m: m.F.softmax(m.ones(2, 3)), UserWarning, r"softmax"),
    "std of one value": (lambda m: m.ones(1).std(), UserWarning, r"std\(\): degrees of freedom"),
    "var over one value": (
        lambda m: m.ones(3, 1).var(1),
        UserWarning,
        r"var\(\): degrees of freedom",
    ),
    "mse_loss broadcasts": (
        lambda m: m.F.mse_loss(m.ones(3, 1), m.ones(3)),
        UserWarning,
        r"mse_loss.*target size",
    ),
    "l1_loss broadcasts": (
        lambda m: m.F.l1_loss(m.ones(3), m.ones(2, 3)),
        UserWarning,
        r"l1_loss.*target size",
    ),
    "Linear with no inputs": (
        lambda m: m.nn.Linear(0, 3),
        UserWarning,
        r"Initializing zero-element tensors is a no-op",
    ),
    "checkpoint without use_reentrant": (
        lambda m: m.checkpoint(lambda x: x * 2, leaf(m, 2)),
        UserWarning,
        r"use_reentrant",
    ),
    "backward with create_graph": (
        lambda m: (leaf(m, 2) * 2).sum().backward(create_graph=True),
        UserWarning,
        r"create_graph=True",
    ),
}


# PyTorch gives these once per process (TORCH_WARN_ONCE): an earlier test in the same
# process may have heard them already, so only the workbench is held to them here.
TORCH_WARNS_ONCE = {"backward with create_graph"}


@pytest.mark.parametrize(
    "call, category, pattern, once",
    [(*call, name in TORCH_WARNS_ONCE) for name, call in LOUD.items()],
    ids=LOUD.keys(),
)
def test_a_warning_names_the_op(call, category, pattern, once):
    heard = {}
    for m in (WB, TORCH) if torch is not None else (WB,):
        with warnings.catch_warnings(record=True) as heard[m]:
            warnings.simplefilter("always")
            call(m)
        if m is TORCH and once:
            continue
        assert any(issubclass(w.category, category) for w in heard[m]), m._base.__name__
        assert not [w for w in heard[m] if issubclass(w.category, RuntimeWarning)]
    assert any(re.search(pattern, str(w.message)) for w in heard[WB])


def test_kernels_run_with_numpy_errors_ignored_and_the_callers_setting_survives():
    """backend.quiet runs a kernel as np.errstate(all="ignore") would; outside it, a
    user's own numpy setting is untouched, even one that raises."""
    with np.errstate(all="ignore"):
        ignored = np.geterr()
    assert backend.quiet.run(np.geterr) == ignored
    with np.errstate(over="raise", divide="raise", invalid="raise"):
        before = np.geterr()
        x = wb.tensor([1e38, 0.0], requires_grad=True)
        y = (x * 10).log()  # overflow, then log 0: values, no error
        y.sum().backward()
        assert np.geterr() == before
        with pytest.raises(FloatingPointError):
            np.float32(1e38) * np.float32(10)  # the user's own numpy still raises
    assert np.isinf(y.detach().numpy()).all()


def test_every_thread_gets_its_own_quiet_context():
    """A contextvars.Context cannot be entered by two threads at once: each has its own."""
    import threading

    errors = []

    def work():
        try:
            for _ in range(200):
                (wb.ones(3, requires_grad=True) / 0).sum().backward()
        except Exception as err:  # noqa: BLE001  (any failure is the finding)
            errors.append(err)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


# ----------------------------------------------------------------------- the checks
def _kinds(err: BaseException) -> set:
    """The built-in exception kinds an error is caught as (workbench's OpIndexError is
    both a RuntimeError and an IndexError, like its other op errors)."""
    kinds = (
        IndexError,
        KeyError,
        TypeError,
        ValueError,
        NotImplementedError,
        AttributeError,
        OSError,
        RuntimeError,
    )
    return {k for k in kinds if isinstance(err, k)}


def _assert_raised_by_workbench(err: BaseException) -> None:
    """The innermost frame is a ``raise`` statement in workbench's own code: the error
    was made to be read, not leaked from a call into numpy or Python."""
    frame = traceback.extract_tb(err.__traceback__)[-1]
    assert frame.filename.startswith(WORKBENCH_DIR), (
        f"raised from {frame.filename}:{frame.lineno}, outside workbench: {err}"
    )
    line = linecache.getline(frame.filename, frame.lineno).strip()
    assert line.startswith("raise"), (
        f"{frame.filename}:{frame.lineno} is not a raise statement (an error leaked from a "
        f"call inside workbench): {line!r}: {err}"
    )


@pytest.mark.filterwarnings("ignore::UserWarning")  # (mse_loss warns, then raises)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_bad_input_gets_an_error_that_teaches(case):
    with pytest.raises(case.error) as info:
        case.call(WB)
    message = str(info.value)
    for pattern in case.patterns:
        assert re.search(pattern, message), f"{pattern!r} not in {message!r}"
    _assert_raised_by_workbench(info.value)


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("case", [c for c in CASES if c.torch is not False], ids=lambda c: c.id)
def test_pytorch_raises_the_same_kind_of_error(case):
    call = case.torch if callable(case.torch) else case.call
    with pytest.raises(Exception) as theirs:
        call(TORCH)
    with pytest.raises(Exception) as ours:
        case.call(WB)
    torch_kinds, our_kinds = _kinds(theirs.value), _kinds(ours.value)
    assert isinstance(theirs.value, case.error), f"torch raised {theirs.value!r}"
    assert torch_kinds <= our_kinds and our_kinds - {RuntimeError} <= torch_kinds, (
        f"torch: {type(theirs.value).__name__}: {theirs.value}\n"
        f"workbench: {type(ours.value).__name__}: {ours.value}"
    )


@pytest.mark.parametrize("shown", WIDGET_MESSAGES, ids=lambda s: s.id)
def test_a_widget_shows_bad_input(shown):
    pytest.importorskip("ipywidgets")
    widget = shown.build()
    try:
        assert widget.error, "the widget shows no error"
        for pattern in shown.patterns:
            assert re.search(pattern, widget.error), f"{pattern!r} not in {widget.error!r}"
        assert "Traceback" not in widget.error
    finally:
        widget.close()


@pytest.mark.parametrize("command", CLI_CASES, ids=lambda c: c.id)
def test_the_cli_refuses_bad_input_in_one_line(command, tmp_path):
    from workbench.teaching.cli import main

    err = io.StringIO()
    with redirect_stderr(err), redirect_stdout(io.StringIO()):
        try:
            code = main(command.args(tmp_path))
        except SystemExit as exit:  # argparse's errors
            code = exit.code
    text = err.getvalue()
    assert code == command.code, text
    assert "Traceback" not in text
    for pattern in command.patterns:
        assert re.search(pattern, text, re.MULTILINE), f"{pattern!r} not in {text!r}"


AREAS = {
    "ops": ("add ", "sub ", "mul ", "exp ", "sum ", "cat ", "matmul", "conv2d", "max_pool2d"),
    "factories": ("ones ", "arange", "linspace", "tensor ", "randint"),
    "nn": ("Linear", "Conv2d", "Embedding", "LayerNorm", "nll_loss", "cross_entropy"),
    "optim": ("SGD", "Adam"),
    "autograd": ("backward", "grad "),
    "hooks": ("hook",),
    "Function": ("Function",),
    "checkpoint": ("checkpoint",),
    "traces": ("trace", "replay"),
}


def test_the_table_covers_the_public_api():
    ids = [c.id for c in CASES]
    assert len(set(ids)) == len(ids), "two cases with one id"
    assert len(CASES) + len(WIDGET_MESSAGES) + len(CLI_CASES) >= 150
    for area, words in AREAS.items():
        assert any(w in i for i in ids for w in words), f"no case for {area}"
    assert WIDGET_MESSAGES and CLI_CASES
