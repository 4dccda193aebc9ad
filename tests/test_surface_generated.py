"""Bad input on the public surface, generated (issue 36, point 3).

tests/test_surface_errors.py writes its rows by hand; this file makes them. ``SPECS``
lists the public callables around the registry's ops (factories, casts and ``to()``,
Tensor methods and properties, ``backward``/``grad``, optimizers, schedulers, data
loading, Module methods, ``save``/``load``), each written once for both libraries with
good arguments and the arguments to spoil. ``BAD`` is a pool of bad values by kind
(wrong types, bad values, bad dtypes). ``ROWS`` is one row per (callable, argument,
bad value), with a stable id such as ``zeros(size#0)=nan`` or ``SGD(lr)=str``.

Each row runs with PyTorch 2.13 and with the workbench:

- PyTorch raises: the workbench raises the same kind of exception (test_bad_input's
  ``_kinds`` rule), from a ``raise`` in its own code, with a message naming the call or
  the argument;
- PyTorch accepts: the workbench accepts, and a tensor result has PyTorch's shape and
  dtype (a number, PyTorch's value).

Where the workbench differs on purpose, ``DECIDED`` says so and why (the row then
checks that it still does); where it differs and is not fixed yet, ``GAPS`` says so in
a line (the row is a strict xfail: once fixed, it must leave ``GAPS``). Nothing is
skipped; the whole table runs in about 30 s. A last test imports every ``torch.*``
module under ``as_torch()`` in a fresh process.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest

import workbench.optim.lr_scheduler  # noqa: F401  (m.optim.lr_scheduler on both sides)
from tests.test_bad_input import _assert_raised_by_workbench, _kinds
from tests.test_surface_errors import TORCH, WB  # with torch.utils.data as m.data

if TORCH is not None:
    import torch.optim.lr_scheduler  # noqa: F401


# ------------------------------------------------------------ values per library
@dataclass(frozen=True)
class Per:
    """A value built for each library (a tensor, a dtype, a module): ``build(m)``."""

    build: Callable

    def __call__(self, m):
        return self.build(m)


def built(value, m):
    return value(m) if isinstance(value, Per) else value


USE = object()  # "the good value the call makes itself" (a leaf, an optimizer, a dataset)

MATRIX = Per(lambda m: m.ones(2, 3))
VECTOR = Per(lambda m: m.ones(3))
FLOAT64 = Per(lambda m: m.float64)


# --------------------------------------------------------------- the bad values
NAN, INF = float("nan"), float("inf")


class _Opaque:
    """An object of no kind the libraries know (``object()`` with a readable repr)."""

    def __repr__(self) -> str:
        return "<opaque>"


BAD = {
    "type": {
        "None": None,
        "str": "a",
        "object": _Opaque(),
        "ragged": [[1, 2], [3]],
        "complex": 1 + 2j,
        "float": 1.5,
        "bool": True,
    },
    "value": {
        "-1": -1,
        "0": 0,
        "nan": NAN,
        "inf": INF,
        "2**70": 2**70,
    },
    "dtype": {
        "int64_tensor": Per(lambda m: m.ones(2, 3, dtype=m.int64)),
        "bool_tensor": Per(lambda m: m.ones(2, 3, dtype=m.bool)),
        "bfloat16_tensor": Per(lambda m: m.ones(2, 3, dtype=m.bfloat16)),
    },
}
SCALAR_POOLS = ("type", "value")
TENSOR_POOLS = ("type", "value", "dtype")


# ----------------------------------------------------------------------- specs
@dataclass(frozen=True)
class Spec:
    """One public callable, written once for both libraries.

    ``call(m, *args, **kwargs)`` runs it with good arguments; ``spoil`` maps a position
    of ``args`` or a keyword to the argument's name (what a message may say); a keyword
    missing from ``kwargs`` is added only when spoiled. ``pools`` picks the bad values;
    ``extra`` adds bad values for one argument.
    """

    name: str
    call: Callable
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    spoil: dict = field(default_factory=dict)
    pools: dict = field(default_factory=dict)  # argument → pool names (default by value)
    extra: dict = field(default_factory=dict)  # argument → {id: value}
    in_tmp: bool = False  # writes files: run in a temporary folder

    def words(self, where) -> tuple:
        """What a message may say to be about this call: its name or the argument's."""
        argument = self.spoil[where]
        call = re.split(r"[(=-]", self.name.split(".")[-1])[0]
        return (call, argument, argument.replace("_", " "), *ALIASES.get(argument, ()))


# How PyTorch's and the workbench's messages name some arguments
ALIASES = {
    "lr": ("learning rate",),
    "eps": ("epsilon",),
    "betas": ("beta",),
    "T_max": ("T_max",),
    "tensors": ("tensor",),
    "param": ("parameter",),
    "gradient": ("gradients",),
}


def factory(name, *args, spoil=None, **kwargs) -> Spec:
    return Spec(
        name,
        lambda m, *a, **k: getattr(m, name)(*a, **k),
        args,
        kwargs,
        spoil or {},
    )


def method(name, *args, on=MATRIX, spoil=None, label=None, **kwargs) -> Spec:
    """``x.name(*args)`` for a tensor x built by ``on``; positions count from 0 after x."""
    return Spec(
        label or f"Tensor.{name}",
        lambda m, *a, **k: getattr(on(m), name)(*a, **k),
        args,
        kwargs,
        spoil or {},
    )


def set_property(name, good) -> Spec:
    def call(m, value):
        x = m.ones(2, 3, requires_grad=True)
        setattr(x, name, value)
        return x

    return Spec(f"Tensor.{name}", call, (good,), spoil={0: name})


SIZES = {0: "size", 1: "size", "dtype": "dtype", "requires_grad": "requires_grad"}
LIKE = {0: "input", "dtype": "dtype"}

FACTORIES = [
    factory(
        "tensor", [1.0, 2.0], spoil={0: "data", "dtype": "dtype", "requires_grad": "requires_grad"}
    ),
    factory("as_tensor", [1.0, 2.0], spoil={0: "data", "dtype": "dtype"}),
    factory("zeros", 2, 3, spoil=SIZES),
    factory("ones", 2, 3, spoil=SIZES),
    factory("empty", 2, 3, spoil=SIZES),
    factory("rand", 2, 3, spoil=SIZES),
    factory("randn", 2, 3, spoil=SIZES),
    factory("full", (2,), 1.0, spoil={0: "size", 1: "fill_value", "dtype": "dtype"}),
    factory("arange", 0, 5, 1, spoil={0: "start", 1: "end", 2: "step", "dtype": "dtype"}),
    factory("linspace", 0.0, 1.0, 5, spoil={0: "start", 1: "end", 2: "steps", "dtype": "dtype"}),
    factory("eye", 3, 4, spoil={0: "n", 1: "m", "dtype": "dtype"}),
    factory("randint", 0, 10, (3,), spoil={0: "low", 1: "high", 2: "size", "dtype": "dtype"}),
    factory("zeros_like", MATRIX, spoil=LIKE),
    factory("ones_like", MATRIX, spoil=LIKE),
    factory("empty_like", MATRIX, spoil=LIKE),
    factory("rand_like", MATRIX, spoil=LIKE),
    factory("randn_like", MATRIX, spoil=LIKE),
    factory("full_like", MATRIX, 1.0, spoil={0: "input", 1: "fill_value", "dtype": "dtype"}),
    factory("manual_seed", 0, spoil={0: "seed"}),
]

CASTS = [
    method("to", FLOAT64, spoil={0: "dtype", "copy": "copy", "non_blocking": "non_blocking"}),
    method(
        "to", Per(lambda m: m.ones(2, dtype=m.float64)), spoil={0: "other"}, label="Tensor.to-other"
    ),
    method("type", FLOAT64, spoil={0: "dtype"}),
    method("new_zeros", (2,), spoil={0: "size", "dtype": "dtype"}),
    method("new_ones", (2,), spoil={0: "size", "dtype": "dtype"}),
    method("new_full", (2,), 1.0, spoil={0: "size", 1: "fill_value"}),
]

SHAPES = {0: "shape", 1: "shape"}
ONE_DIM = {0: "dim", "keepdim": "keepdim"}
TENSOR_METHODS = [
    method("view", 3, 2, spoil=SHAPES),
    method("reshape", 3, 2, spoil=SHAPES),
    method("permute", 1, 0, spoil={0: "dims", 1: "dims"}),
    method("transpose", 0, 1, spoil={0: "dim0", 1: "dim1"}),
    method("expand", 2, 3, on=Per(lambda m: m.ones(1, 3)), spoil=SHAPES),
    method("repeat", 2, 1, spoil={0: "repeats", 1: "repeats"}),
    method("flatten", 0, 1, spoil={0: "start_dim", 1: "end_dim"}),
    method("unsqueeze", 0, spoil={0: "dim"}),
    method("squeeze", 0, on=Per(lambda m: m.ones(1, 3)), spoil={0: "dim"}),
    method("sum", 0, spoil={**ONE_DIM, "dtype": "dtype"}),
    method("mean", 0, spoil=ONE_DIM),
    method("std", 0, spoil={**ONE_DIM, "correction": "correction"}),
    method("var", 0, spoil={**ONE_DIM, "correction": "correction"}),
    method("cumsum", 0, spoil={0: "dim"}),
    method("softmax", 0, spoil={0: "dim"}),
    method("argmax", 0, spoil={0: "dim"}),
    method("clamp", min=0.0, max=1.0, spoil={"min": "min", "max": "max"}),
    method("pow", 2.0, spoil={0: "exponent"}),
    method("fill_", 1.0, spoil={0: "value"}),
    method(
        "masked_fill", Per(lambda m: m.ones(2, 3, dtype=m.bool)), 0.0, spoil={0: "mask", 1: "value"}
    ),
    method("index_select", 0, Per(lambda m: m.tensor([0, 1])), spoil={0: "dim", 1: "index"}),
    method("chunk", 2, 1, spoil={0: "chunks", 1: "dim"}),
    method("split", 1, 0, spoil={0: "split_size", 1: "dim"}),
    method("requires_grad_", True, spoil={0: "requires_grad"}),
    set_property("requires_grad", True),
    set_property("grad", MATRIX),
    set_property("data", MATRIX),
]


# ------------------------------------------------------------------ autograd
def hooked_backward(m, hook):
    x = m.ones(2, 3, requires_grad=True)
    x.register_hook(hook)
    (x * 2).sum().backward()
    return x.grad


def scalar_backward(m, gradient=None, **options):
    x = m.ones(2, 3, requires_grad=True)
    (x * 2).sum().backward(gradient, **options)
    return x.grad


def tensor_backward(m, gradient, **options):
    x = m.ones(2, 3, requires_grad=True)
    (x * 2).backward(gradient, **options)
    return x.grad


def grad_call(m, outputs=USE, inputs=USE, **options):
    x = m.ones(2, 3, requires_grad=True)
    y = (x * 2).sum()
    return m.autograd.grad(
        y if outputs is USE else outputs, x if inputs is USE else inputs, **options
    )


def grad_of_vector(m, grad_outputs, **options):
    x = m.ones(2, 3, requires_grad=True)
    return m.autograd.grad(x * 2, x, grad_outputs, **options)


BACKWARD_OPTIONS = {
    "retain_graph": "retain_graph",
    "create_graph": "create_graph",
    "inputs": "inputs",
}
AUTOGRAD = [
    Spec("Tensor.register_hook", hooked_backward, (lambda g: g,), spoil={0: "hook"}),
    Spec("backward", scalar_backward, (None,), spoil={0: "gradient", **BACKWARD_OPTIONS}),
    Spec("backward-nonscalar", tensor_backward, (MATRIX,), spoil={0: "gradient"}),
    Spec(
        "grad",
        grad_call,
        (USE, USE),
        spoil={
            0: "outputs",
            1: "inputs",
            "retain_graph": "retain_graph",
            "create_graph": "create_graph",
            "allow_unused": "allow_unused",
        },
    ),
    Spec("grad-vector", grad_of_vector, (MATRIX,), spoil={0: "grad_outputs"}),
]


# ---------------------------------------------------------------- optimizers
def parameters(m):
    return [m.nn.Parameter(m.ones(2))]


def optimizer_step(name):
    """``name(params, **options)`` and one step, so that a value read late still shows."""

    def call(m, params=USE, **options):
        params = parameters(m) if params is USE else params
        opt = getattr(m.optim, name)(params, **options)
        for group in opt.param_groups:
            for p in group["params"]:
                (p * p).sum().backward()
        opt.step()
        return opt.param_groups[0]["params"][0].detach()

    return call


def optimizer_spec(name, **options) -> Spec:
    spoil = {0: "params", **{k: k for k in options}}
    return Spec(
        name,
        optimizer_step(name),
        (USE,),
        options,
        spoil,
        extra=BETAS if "betas" in options else {},
    )


BETAS = {"betas": {"beta1=-1": (-1.0, 0.999), "beta2=1.5": (0.9, 1.5), "one_beta": (0.9,)}}
OPTIMIZERS = [
    optimizer_spec("SGD", lr=0.1, momentum=0.9, dampening=0.0, weight_decay=0.0, nesterov=False),
    optimizer_spec("Adam", lr=0.1, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False),
    optimizer_spec("AdamW", lr=0.1, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01),
    optimizer_spec(
        "RMSprop", lr=0.1, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False
    ),
]


def scheduled(name, steps=3, metric=None):
    """``name(optimizer, *args, **options)``, ``steps`` steps; the learning rate after."""

    def call(m, optimizer=USE, *args, **options):
        opt = m.optim.SGD(parameters(m), lr=0.1) if optimizer is USE else optimizer
        scheduler = getattr(m.optim.lr_scheduler, name)(opt, *args, **options)
        for _ in range(steps):
            opt.step()
            scheduler.step() if metric is None else scheduler.step(metric)
        return opt.param_groups[0]["lr"]

    return call


def plateau_step(m, metric):
    opt = m.optim.SGD(parameters(m), lr=0.1)
    scheduler = m.optim.lr_scheduler.ReduceLROnPlateau(opt)
    scheduler.step(metric)
    return opt.param_groups[0]["lr"]


SCHEDULERS = [
    Spec(
        "StepLR",
        scheduled("StepLR"),
        (USE, 2),
        {"gamma": 0.5},
        {0: "optimizer", 1: "step_size", "gamma": "gamma"},
    ),
    Spec(
        "ExponentialLR", scheduled("ExponentialLR"), (USE, 0.5), spoil={0: "optimizer", 1: "gamma"}
    ),
    Spec(
        "CosineAnnealingLR",
        scheduled("CosineAnnealingLR"),
        (USE, 4),
        {"eta_min": 0.0},
        {1: "T_max", "eta_min": "eta_min"},
    ),
    Spec(
        "LambdaLR", scheduled("LambdaLR"), (USE, lambda epoch: 0.5**epoch), spoil={1: "lr_lambda"}
    ),
    Spec(
        "ReduceLROnPlateau",
        scheduled("ReduceLROnPlateau", metric=1.0),
        (USE,),
        {
            "mode": "min",
            "factor": 0.5,
            "patience": 0,
            "threshold": 1e-4,
            "cooldown": 0,
            "min_lr": 0.0,
            "eps": 1e-8,
        },
        {k: k for k in ("mode", "factor", "patience", "threshold", "cooldown", "min_lr", "eps")},
    ),
    Spec("ReduceLROnPlateau.step", plateau_step, (1.0,), spoil={0: "metrics"}),
]


# -------------------------------------------------------------- data loading
def dataset(m):
    return m.data.TensorDataset(m.arange(8.0).reshape(4, 2))


def first_batch(m, data=USE, **options):
    """A DataLoader and its first batch (its workers are never started: ``num_workers``
    is spoiled in a row of its own that only builds the loader)."""
    loader = m.data.DataLoader(dataset(m) if data is USE else data, **options)
    return next(iter(loader))[0]


def sampled(name):
    def call(m, source=USE, *args, **options):
        source = dataset(m) if source is USE else source
        return len(list(getattr(m.data, name)(source, *args, **options)))

    return call


def split(m, lengths):
    return [len(part) for part in m.data.random_split(dataset(m), lengths)]


DATA = [
    Spec(
        "DataLoader",
        first_batch,
        (USE,),
        {"batch_size": 2, "shuffle": False, "drop_last": False},
        {
            0: "dataset",
            "batch_size": "batch_size",
            "shuffle": "shuffle",
            "sampler": "sampler",
            "drop_last": "drop_last",
            "collate_fn": "collate_fn",
        },
    ),
    Spec(
        "DataLoader-workers",
        lambda m, **k: m.data.DataLoader(dataset(m), **k),
        (),
        {"num_workers": 0},
        {"num_workers": "num_workers"},
    ),
    Spec(
        "TensorDataset",
        lambda m, *t: len(m.data.TensorDataset(*t)),
        (MATRIX,),
        spoil={0: "tensors"},
    ),
    Spec("SequentialSampler", sampled("SequentialSampler"), (USE,), spoil={0: "data_source"}),
    Spec(
        "RandomSampler",
        sampled("RandomSampler"),
        (USE,),
        {"replacement": False},
        {0: "data_source", "replacement": "replacement", "num_samples": "num_samples"},
    ),
    Spec(
        "SubsetRandomSampler",
        lambda m, i: sorted(m.data.SubsetRandomSampler(i)),
        ([0, 2],),
        spoil={0: "indices"},
    ),
    Spec(
        "BatchSampler",
        lambda m, *a, **k: list(m.data.BatchSampler(range(4), *a, **k)),
        (2, False),
        spoil={0: "batch_size", 1: "drop_last"},
    ),
    Spec("random_split", split, ([2, 2],), spoil={0: "lengths"}),
]


# -------------------------------------------------------------------- modules
def linear(m):
    m.manual_seed(0)
    return m.nn.Linear(2, 2)


def on_linear(name, *args, spoil, **kwargs) -> Spec:
    return Spec(
        f"Module.{name}", lambda m, *a, **k: getattr(linear(m), name)(*a, **k), args, kwargs, spoil
    )


def load_into_linear(m, state=USE, **options):
    layer = linear(m)
    layer.load_state_dict(linear(m).state_dict() if state is USE else state, **options)
    return layer.weight.detach()


def zero_grad(m, *args):
    layer = linear(m)
    layer(m.ones(1, 2)).sum().backward()
    layer.zero_grad(*args)
    return layer.weight.grad


MODULES = [
    on_linear("to", FLOAT64, spoil={0: "dtype"}),
    on_linear(
        "register_buffer",
        "extra",
        MATRIX,
        spoil={0: "name", 1: "tensor", "persistent": "persistent"},
    ),
    on_linear(
        "register_parameter",
        "extra",
        Per(lambda m: m.nn.Parameter(m.ones(2))),
        spoil={0: "name", 1: "param"},
    ),
    on_linear("add_module", "extra", Per(lambda m: m.nn.ReLU()), spoil={0: "name", 1: "module"}),
    on_linear("state_dict", spoil={"prefix": "prefix", "keep_vars": "keep_vars"}),
    on_linear("train", True, spoil={0: "mode"}),
    on_linear("requires_grad_", True, spoil={0: "requires_grad"}),
    on_linear("apply", lambda module: None, spoil={0: "fn"}),
    on_linear("__call__", Per(lambda m: m.ones(3, 2)), spoil={0: "input"}),
    Spec(
        "Module.load_state_dict",
        load_into_linear,
        (USE,),
        {"strict": True},
        {0: "state_dict", "strict": "strict"},
    ),
    Spec("Module.zero_grad", zero_grad, (True,), spoil={0: "set_to_none"}),
]


# -------------------------------------------------------------- save and load
def save_to(m, f=USE):
    f = io.BytesIO() if f is USE else f
    m.save({"w": m.ones(2)}, f)


def saved(m):
    buffer = io.BytesIO()
    m.save({"w": m.ones(2)}, buffer)
    buffer.seek(0)
    return buffer


def load_from(m, f=USE, **options):
    return m.load(saved(m) if f is USE else f, **options)["w"]


SERIALIZATION = [
    Spec("save", save_to, (USE,), spoil={0: "f"}, in_tmp=True),
    Spec(
        "load",
        load_from,
        (USE,),
        spoil={0: "f", "map_location": "map_location", "weights_only": "weights_only"},
        in_tmp=True,
    ),
]

SPECS = (
    FACTORIES
    + CASTS
    + TENSOR_METHODS
    + AUTOGRAD
    + OPTIMIZERS
    + SCHEDULERS
    + DATA
    + MODULES
    + SERIALIZATION
)


# ------------------------------------------------------------------ the rows
@dataclass(frozen=True)
class Row:
    """One generated case: ``spec`` called with its good arguments but ``bad`` at ``where``."""

    id: str
    spec: Spec
    where: int | str
    bad: object

    def arguments(self, m) -> tuple[list, dict]:
        args = [built(a, m) for a in self.spec.args]
        kwargs = {k: built(v, m) for k, v in self.spec.kwargs.items()}
        value = built(self.bad, m)
        if isinstance(self.where, int):
            args[self.where] = value
        else:
            kwargs[self.where] = value
        return args, kwargs


def _bad_values(spec: Spec, where) -> dict:
    """The pool for one argument: a plain Python value gets wrong types and bad values; a
    tensor, dtype, module or object the call makes (or a keyword not given) gets bad
    dtypes too."""
    good = spec.args[where] if isinstance(where, int) else spec.kwargs.get(where, USE)
    plain = not isinstance(good, Per) and good is not USE
    pools = SCALAR_POOLS if plain else TENSOR_POOLS
    values = {name: value for pool in pools for name, value in BAD[pool].items()}
    return {**values, **spec.extra.get(where, {})}


def _label(spec: Spec, where) -> str:
    return where if isinstance(where, str) else f"{spec.spoil[where]}#{where}"


def generate(specs) -> list[Row]:
    """One row per (callable, argument, bad value), ids ``name(argument)=bad``."""
    return [
        Row(f"{spec.name}({_label(spec, where)})={bad_id}", spec, where, bad)
        for spec in specs
        for where in spec.spoil
        for bad_id, bad in _bad_values(spec, where).items()
    ]


ROWS = generate(SPECS)


# ------------------------------------------------------------- one call, each side
class _Hang(BaseException):
    """A call that ran past its time (a BaseException, so that no ``except`` swallows it)."""


@contextmanager
def _time_limit(seconds: int):
    def stop(signum, frame):
        raise _Hang(f"no answer in {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    started = time.monotonic()
    outer = signal.alarm(seconds)  # pytest-timeout's alarm, if any, is put back after
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        if outer:
            signal.alarm(max(1, outer - int(time.monotonic() - started)))


@contextmanager
def _folder(path):
    here = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(here)


@dataclass
class Outcome:
    result: object = None
    error: Exception | None = None


def run(row: Row, m, folder) -> Outcome:
    """``row`` with library ``m``; a row that writes files gets a new folder of its own
    (torch's ``load("a")`` must not read the file the workbench's ``save("a")`` wrote)."""
    where = tempfile.mkdtemp(dir=folder) if row.spec.in_tmp else os.getcwd()
    with _time_limit(20), _folder(where):
        try:
            args, kwargs = row.arguments(m)
            return Outcome(result=row.spec.call(m, *args, **kwargs))
        except Exception as error:
            return Outcome(error=error)


def _summary(value):
    """What must agree when both accept: a tensor's shape and dtype, a number's value."""
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return tuple(value.shape), str(value.dtype).removeprefix("torch.")
    if isinstance(value, (list, tuple)):
        return type(value).__name__, [_summary(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, (bool, int, float)):
        return round(value, 6) if isinstance(value, float) else value
    return type(value).__name__


def _shown(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def mismatch(row: Row, folder) -> tuple[str, str] | None:
    """None when the workbench answers as PyTorch does; else (what, how): what is
    "friendlier" (it accepts what PyTorch refuses), "stricter" (it refuses what PyTorch
    accepts), "kind", "leak", "message" or "result"."""
    theirs, ours = run(row, TORCH, folder), run(row, WB, folder)
    if theirs.error is None and ours.error is None:
        if _summary(theirs.result) != _summary(ours.result):
            return "result", f"torch {_summary(theirs.result)}, workbench {_summary(ours.result)}"
        return None
    if theirs.error is None:
        return "stricter", f"torch accepts; workbench {_shown(ours.error)}"
    if ours.error is None:
        return "friendlier", f"torch {_shown(theirs.error)}; workbench accepts"
    torch_kinds, our_kinds = _kinds(theirs.error), _kinds(ours.error)
    if not (torch_kinds <= our_kinds and our_kinds - {RuntimeError} <= torch_kinds):
        return "kind", f"torch {_shown(theirs.error)}; workbench {_shown(ours.error)}"
    try:
        _assert_raised_by_workbench(ours.error)
    except AssertionError as leak:
        return "leak", str(leak)
    words = row.spec.words(row.where)
    if not any(
        re.search(rf"(?<![A-Za-z_]){re.escape(w)}(?![A-Za-z_])", str(ours.error), re.I)
        for w in words
    ):
        return "message", f"{_shown(ours.error)} names none of {words}"
    return None


# ------------------------------------------------------ decisions and open gaps
POOL_WORDS = {f"@{pool}": list(values) for pool, values in BAD.items()}  # "@type": all types


def _rows(table: list) -> dict:
    """Expand ``(call(argument), "bad ids", note)`` triples to ``{row id: note}``; "*"
    stands for every bad value of that argument, "@type" for every one of BAD["type"]."""
    return {
        row_id: note
        for where, bads, note in table
        for row_id in (
            [r.id for r in ROWS if r.id.startswith(f"{where}=")]
            if bads == "*"
            else [f"{where}={bad}" for word in bads.split() for bad in POOL_WORDS.get(word, [word])]
        )
    }


TO_NUMBER = (
    "PyTorch reads a Python number given to to() as a tensor and casts to its dtype "
    "(to(1.5) is to(float64)); the workbench asks for a dtype, device or tensor"
)

COMPLEX_RATE = (
    "PyTorch's schedulers take a complex gamma/eta_min and make the learning rate complex; "
    "the workbench asks for a real number where the scheduler is made"
)

HUGE_HYPERPARAMETER = (
    "an optimizer refuses a Python int beyond 64 bits where it is given, every "
    "hyperparameter alike (OverflowError, optimizer.py); PyTorch refuses it only in a step "
    "that hands it to a kernel (SGD's momentum at the second step), and takes Adam's lr and "
    "AdamW's lr and decay, which its step uses as Python floats, into weights of 1e21 or inf"
)

# Where the workbench answers otherwise on purpose: (direction, why). The row checks
# that it still does ("stricter": it refuses, from its own raise, what PyTorch accepts;
# "friendlier": it accepts what PyTorch refuses).
DECIDED = _rows(
    [
        (
            "SGD(lr)",
            "nan",
            ("stricter", "a NaN rate turns every weight NaN at the first step (optimizer.py)"),
        ),
        ("SGD(momentum)", "nan", ("stricter", "as SGD(lr)=nan: NaN momentum poisons the weights")),
        ("SGD(weight_decay)", "nan", ("stricter", "as SGD(lr)=nan")),
        *(
            (where, "2**70", ("stricter", HUGE_HYPERPARAMETER))
            for where in ("SGD(momentum)", "Adam(lr)", "AdamW(lr)", "AdamW(weight_decay)")
        ),
        (
            "AdamW(weight_decay)",
            "bool",
            (
                "stricter",
                "weight_decay=True is a flag mistyped: PyTorch's SGD, Adam and RMSprop refuse "
                "it (a bool alpha), its AdamW reads it as a decay of 1; every optimizer here "
                "refuses it (optimizer.py's check_weight_decay)",
            ),
        ),
        (
            "load(map_location)",
            "str",
            ("friendlier", "tensors load on the CPU whatever location is named (load's docstring)"),
        ),
        *(
            (where, "complex", ("stricter", COMPLEX_RATE))
            for where in ("StepLR(gamma)", "ExponentialLR(gamma#1)", "CosineAnnealingLR(eta_min)")
        ),
        *(
            (where, "complex float bool nan inf", ("stricter", TO_NUMBER))
            for where in ("Tensor.to(dtype#0)", "Tensor.to-other(other#0)")
        ),
        ("Module.to(dtype#0)", "complex float nan inf", ("stricter", TO_NUMBER)),
        *(
            (
                f"Tensor.{name}(correction)",
                "bool",
                ("stricter", "a bool correction is unbiased= mistyped"),
            )
            for name in ("std", "var")
        ),
    ]
)

# Differences not fixed yet: the row must still differ (a strict xfail), so that a fix
# takes the row out of here.
GAPS = _rows([])


# ------------------------------------------------------------------- the tests
def _param(row: Row):
    marks = []
    if row.id in GAPS:
        marks.append(pytest.mark.xfail(strict=True, raises=AssertionError, reason=GAPS[row.id]))
    return pytest.param(row, id=row.id, marks=marks)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Where ``save``/``load`` rows given a file name write."""
    return tmp_path_factory.mktemp("surface")


@pytest.mark.skipif(TORCH is None, reason="PyTorch is not installed")
@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("row", [_param(r) for r in ROWS])
def test_the_workbench_answers_bad_input_as_pytorch(row, folder):
    problem = mismatch(row, folder)
    if row.id in DECIDED:
        direction, reason = DECIDED[row.id]
        assert problem is not None and problem[0] == direction, (
            f"decided {direction} ({reason}), but: {problem}"
        )
        return
    assert problem is None, f"{problem[0]}: {problem[1]}"


def test_the_generated_table_covers_the_surface_and_lists_only_its_own_rows():
    ids = [r.id for r in ROWS]
    assert len(set(ids)) == len(ids), "two rows with one id"
    assert not set(GAPS) - set(ids), f"GAPS lists no such rows: {sorted(set(GAPS) - set(ids))}"
    assert not set(DECIDED) - set(ids), f"DECIDED lists no such rows: {set(DECIDED) - set(ids)}"
    assert not set(GAPS) & set(DECIDED), "a row both decided and open"
    for group in (FACTORIES, CASTS, TENSOR_METHODS, AUTOGRAD, OPTIMIZERS, SCHEDULERS, DATA):
        assert all(spec.spoil for spec in group), "a spec spoils no argument"
    assert len(ROWS) >= 2000


# --------------------------------------------------------- as_torch's imports
AS_TORCH = r"""
import importlib, json, sys
import workbench
from workbench.compat.torch_alias import MODULES
workbench.as_torch()
answers = {}
for name in sys.argv[1:]:
    try:
        module = importlib.import_module(name)
        answers[name] = ["ok", module.__name__]
    except Exception as error:
        answers[name] = [type(error).__name__, str(error)]
print(json.dumps({"answers": answers, "modules": MODULES}))
"""


def _torch_submodules() -> list[str]:
    """The ``torch.*`` modules a PyTorch program imports: those real PyTorch has loaded
    after importing its public packages (a private ``_`` part left out)."""
    names = {n for n in sys.modules if n.startswith("torch.")}
    return sorted(n for n in names if not any(p.startswith("_") for p in n.split(".")))


@pytest.mark.skipif(TORCH is None, reason="PyTorch is not installed")
def test_as_torch_imports_what_the_workbench_has_and_names_what_it_refuses():
    """Under ``as_torch()`` (a fresh process: it refuses to start next to real PyTorch)
    every torch module the workbench maps imports as the workbench's, and every other
    one, real or made up, is a ModuleNotFoundError naming the module (or the package
    above it that the workbench refuses)."""
    from workbench.compat.torch_alias import MODULES

    names = sorted(set(_torch_submodules()) | set(MODULES) | {"torch.no_such_module"})
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(AS_TORCH), *names],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert done.returncode == 0, done.stderr
    answers = json.loads(done.stdout)["answers"]
    for name, (kind, text) in answers.items():
        if name in MODULES:
            assert kind == "ok" and text == MODULES[name], f"{name}: {kind}: {text}"
        else:  # (the refused one may be a parent package: torch.amp for torch.amp.grad_scaler)
            refused = re.match(r"No module named '([\w.]+)'", text)
            assert kind == "ModuleNotFoundError" and refused, f"{name}: {kind}: {text}"
            assert f"{name}.".startswith(f"{refused.group(1)}."), f"{name}: {text}"
    assert len(answers) > len(MODULES) + 50
