"""The global state of the workbench, all in one place.

The modes and stacks that change what an op call or a backward pass does live
here, each changed only by the functions below: other modules read them and never
assign to them (tests/test_module_privacy.py checks this). Search for a function's
name to find every place that changes a piece of state. Counters (the random
generator, the saved-memory totals, event and node ids) stay with their modules.

=====================  =================  =============================================
piece                  threads            changed by
=====================  =================  =============================================
``grad_mode``          one per thread     ``no_grad``, ``enable_grad``,
 (enabled, inference)                     ``set_grad_enabled``, ``inference_mode``
                                          (record/grad_mode.py), and the engine
                                          while a node runs (``enter_backward``)
anomaly ``enabled``    whole process      ``detect_anomaly``, ``set_detect_anomaly``
anomaly ``check_nan``  one per thread     (record/anomaly.py), via ``set_anomaly``
backward depth,        one per thread     the engine, around each node it runs
checkpoint validity                       (``enter_backward`` / ``exit_backward``)
``stage``              one per thread     the checkpoint marker stages
 (the stage recorder)                     (record/recompute.py)
``saved_hooks``        one per thread     ``saved_tensors_hooks`` (record/graph.py)
                                          and checkpointing (record/recompute.py)
``transforms``         one per thread     ``wb.func``: the vmap levels running
 (vmap levels)                            (``vmap_level``, func/vmap.py), any
                                          transform (``func_transform``), a draw
                                          of one sample per example
                                          (``drawing_per_example``, core/random.py)
``tracing``            one per thread     ``wb.program.trace`` (program/tracer.py),
 (the program tracer)                     via ``set_tracer``
``in_use``             whole process      counts of the ones above, kept by their
                                          setters
``name_scopes``        one per thread     ``name_scope`` (scope.py) and
                                          ``Module.__call__`` (nn/module.py)
``default_device``     whole process      ``set_default_device`` (devices.py), via
                                          ``set_default_device_name``
``print_options``      whole process      ``set_printoptions`` (tensor.py), via
                                          ``set_print_options``
=====================  =================  =============================================

"One per thread" is ``threading.local``, as in PyTorch: a thread started inside
``no_grad`` still records graphs, and one started inside ``saved_tensors_hooks`` or a
checkpoint saves its tensors as they are, not through the other thread's hooks. The
pieces read on every op call (``grad_mode``, ``anomaly``, ``stage``, ``saved_hooks``,
``name_scopes``) are public objects, read as plain attributes
(``state.grad_mode.enabled``) rather than through a function call, which would slow
every op down. The rest is read through functions.

This module imports nothing from workbench, so every layer can use it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import NamedTuple

# ----------------------------------------------------------- grad mode (per thread)


class GradMode(threading.local):
    """``enabled``: grad mode is on; ``inference``: inside ``inference_mode``;
    ``records``: ops record graphs, which is grad mode outside inference mode
    (inference mode wins over ``enable_grad``, as in PyTorch). Read on every op."""

    def __init__(self) -> None:
        self.enabled = True
        self.inference = False
        self.records = True


grad_mode = GradMode()


def set_grad_enabled_flag(enabled: bool) -> None:
    """Turn grad mode on or off in this thread."""
    grad_mode.enabled = enabled
    grad_mode.records = enabled and not grad_mode.inference


def set_inference_flag(inference: bool) -> None:
    """Enter (True) or leave (False) inference mode in this thread."""
    _count("inference", grad_mode.inference, inference)
    grad_mode.inference = inference
    grad_mode.records = grad_mode.enabled and not inference


# ------------------------------------------------------------------- anomaly mode


class AnomalyMode:
    """``enabled``: nodes remember their forward stack, the engine checks for NaN.

    One flag for the whole process; whether NaN is checked (``check_nan``) is kept
    per thread, and read through :func:`anomaly_checks_nan`.
    """

    def __init__(self) -> None:
        self.enabled = False  # an instance attribute: Python specialises its read, on every node


class _CheckNan(threading.local):
    check_nan = True


anomaly = AnomalyMode()
_check_nan = _CheckNan()


def set_anomaly(enabled: bool, check_nan: bool) -> tuple[bool, bool]:
    """Turn anomaly mode on or off (for every thread), and set ``check_nan`` for this thread.

    Returns the previous ``(enabled, check_nan)``, to restore them later.
    """
    previous = (anomaly.enabled, _check_nan.check_nan)
    anomaly.enabled = enabled
    _check_nan.check_nan = check_nan
    return previous


def anomaly_checks_nan() -> bool:
    """Whether the engine checks gradients for NaN: anomaly mode with ``check_nan``."""
    return anomaly.enabled and _check_nan.check_nan


# ------------------------------------------------------ inside backward (per thread)


class _Backward(threading.local):
    depth = 0  # how many backward passes this thread is inside (nested: create_graph)
    checkpoint_valid = True  # see is_checkpoint_valid


_backward = _Backward()


def enter_backward(create_graph: bool, checkpoint_valid: bool) -> tuple[bool, bool]:
    """The engine is about to run a node: record only if ``create_graph``.

    Returns what :func:`exit_backward` needs to restore the caller's state.
    """
    saved = (grad_mode.enabled, _backward.checkpoint_valid)
    set_grad_enabled_flag(create_graph)
    _backward.checkpoint_valid = checkpoint_valid
    _backward.depth += 1
    return saved


def exit_backward(saved: tuple[bool, bool]) -> None:
    """The node has run: back to the state :func:`enter_backward` returned."""
    _backward.depth -= 1
    enabled, _backward.checkpoint_valid = saved
    set_grad_enabled_flag(enabled)


def in_backward() -> bool:
    """Whether this thread is running a node of a backward pass (ops called by a rule)."""
    return _backward.depth > 0


def is_checkpoint_valid() -> bool:
    """False while a node runs for ``grad()`` or ``backward(inputs=...)`` (as in PyTorch).

    The reentrant checkpoint runs a nested ``backward()`` that accumulates into every
    leaf, which would be wrong when only some inputs were asked for.
    """
    return _backward.checkpoint_valid


# ------------------------------------------- stages and hooks anywhere (whole process)


class InUse:
    """How many threads have a checkpoint marker stage open (``stages``), saved-tensor
    hooks in force (``saved_hooks``), a vmap or a tracer running, inference mode on, or a
    name scope open.

    Every op call reads these plain attributes first and the per-thread state only when
    one is non-zero: reading a ``threading.local`` attribute costs ten times a plain one
    (callgrind: ~650 instructions against ~60), and almost every program uses none of
    them. Changed only through ``_count``.
    """

    def __init__(self) -> None:
        # instance attributes, not class defaults: Python specialises the read of one
        self.stages = 0
        self.saved_hooks = 0
        self.vmaps = 0  # threads inside a wb.func.vmap: apply_op asks the batching rules
        self.tracers = 0  # threads tracing a program: apply_op hands each call to the tracer
        self.inference = 0  # threads in inference mode: apply_op marks the tensors it makes
        self.scopes = 0  # threads inside a name scope: a node notes its scope


in_use = InUse()
_in_use_lock = threading.Lock()


def _count(piece: str, was_in_use: bool, is_in_use: bool) -> None:
    if was_in_use != is_in_use:
        with _in_use_lock:
            setattr(in_use, piece, getattr(in_use, piece) + (1 if is_in_use else -1))


# ------------------------------------------------------ checkpoint marker stage


class StageRecorder(threading.local):
    """``record(op, inputs, attrs, result)`` of this thread's open checkpoint marker stage,
    or None (the class attribute: what every thread starts with).

    While a stage is open, the op call hands each node to record to it instead of
    recording the node itself (see ``apply_op`` and ``MarkerStage.record_op``).
    """

    record: Callable | None = None


stage = StageRecorder()


def set_stage_recorder(record: Callable | None) -> None:
    """A marker stage opens (``record``) or closes (None)."""
    _count("stages", stage.record is not None, record is not None)
    stage.record = record


@contextlib.contextmanager
def stage_recorder_paused() -> Iterator[None]:
    """Record ops plainly inside the block (the markers themselves, a replay)."""
    recording = stage.record
    set_stage_recorder(None)
    try:
        yield
    finally:
        set_stage_recorder(recording)


# ------------------------------------------------------------ program tracing


class Tracing(threading.local):
    """This thread's program tracer (``wb.program.trace``), or None.

    The one recording point of the compiled road: ``apply_op`` hands every op call to
    ``tracer.record(op, inputs, attrs, result)``. Reading a tensor's values into Python
    (``item()``, ``tolist()``, ``numpy()``), writing into a tensor and drawing random
    numbers ask ``tracer.refuse_read(tensor, how)``, ``tracer.refuse_write(tensor)`` and
    ``tracer.refuse_draw()``: a traced program cannot replay any of them.
    """

    tracer = None


tracing = Tracing()


def set_tracer(tracer) -> object:
    """Start (a tracer) or stop (None) tracing in this thread; returns the previous tracer."""
    previous = tracing.tracer
    _count("tracers", previous is not None, tracer is not None)
    tracing.tracer = tracer
    return previous


# ----------------------------------------------------------- function transforms


class Transforms(threading.local):
    """This thread's ``wb.func`` transforms: ``levels``, the vmaps running (innermost
    last), each a :class:`VmapLevel`; ``drawing_per_example``: a random function is
    drawing one sample per example (see ``vmap``'s ``randomness``); ``running``: how
    many transforms of any kind run (a custom Function checks it, as PyTorch's does).
    (A grad transform's level is the leaves it made: see ``func/reverse.py``.)"""

    levels: tuple = ()
    drawing_per_example = False
    running = 0  # wb.func transforms running (grad, vjp, jacrev, jvp, vmap...)


class VmapLevel(NamedTuple):
    """One running vmap: its level (1 for the outermost), batch size and randomness."""

    level: int
    size: int
    randomness: str


transforms = Transforms()


@contextlib.contextmanager
def vmap_level(size: int, randomness: str) -> Iterator[int]:
    """A vmap of batch ``size`` runs inside the block; yields its level."""
    outer = transforms.levels
    level = len(outer) + 1
    _count("vmaps", bool(outer), True)
    transforms.levels = (*outer, VmapLevel(level, size, randomness))
    transforms.running += 1
    try:
        yield level
    finally:
        transforms.running -= 1
        transforms.levels = outer
        _count("vmaps", True, bool(outer))


@contextlib.contextmanager
def func_transform() -> Iterator[None]:
    """A ``wb.func`` transform runs inside the block."""
    transforms.running += 1
    try:
        yield
    finally:
        transforms.running -= 1


@contextlib.contextmanager
def drawing_per_example() -> Iterator[None]:
    """A random function draws one sample per example of the vmaps inside the block."""
    transforms.drawing_per_example = True
    try:
        yield
    finally:
        transforms.drawing_per_example = False


# ----------------------------------------------------------- saved-tensor hooks


class SavedHooks(threading.local):
    """``stack``: the ``(pack, unpack)`` pairs in force in this thread, innermost last.

    A tuple, replaced on each change, so that a reader cannot change it by accident;
    every thread starts with the class attribute's empty one.
    """

    stack: tuple = ()


saved_hooks = SavedHooks()


def _set_saved_hooks(stack: tuple) -> None:
    _count("saved_hooks", bool(saved_hooks.stack), bool(stack))
    saved_hooks.stack = stack


def push_saved_hooks(*pairs: tuple) -> None:
    """Put ``(pack, unpack)`` pairs on top of the stack, the last one innermost."""
    _set_saved_hooks(saved_hooks.stack + pairs)


def pop_saved_hooks() -> tuple:
    """Take the innermost pair off the stack and return it."""
    *rest, top = saved_hooks.stack
    _set_saved_hooks(tuple(rest))
    return top


def cut_saved_hooks(depth: int) -> tuple:
    """Keep the ``depth`` outermost pairs; return the ones taken off, outermost first."""
    above = saved_hooks.stack[depth:]
    _set_saved_hooks(saved_hooks.stack[:depth])
    return above


# ----------------------------------------------------- name scopes (per thread)


class NameScopes(threading.local):
    """``stack``: the names of the scopes open in this thread, outermost first."""

    def __init__(self) -> None:
        self.stack: tuple[str, ...] = ()


name_scopes = NameScopes()


def push_name_scope(name: str) -> tuple[str, ...]:
    """Open a scope called ``name``; returns the stack before, for :func:`restore_name_scopes`."""
    previous = name_scopes.stack
    name_scopes.stack = previous + (name,)
    _count("scopes", bool(previous), True)
    return previous


def restore_name_scopes(previous: tuple[str, ...]) -> None:
    """Close the scopes opened since ``previous`` was the stack."""
    _count("scopes", bool(name_scopes.stack), bool(previous))
    name_scopes.stack = previous


# ------------------------------------------------------------ default device
class DefaultDevice:
    """Where factories put a tensor given no ``device=``: ``"cpu"`` or ``"cuda"``."""

    name = "cpu"


default_device = DefaultDevice()


def set_default_device_name(name: str) -> None:
    default_device.name = name


# ------------------------------------------------------------- print options
class PrintOptions:
    """How a tensor prints (``set_printoptions``): PyTorch's defaults."""

    precision = 4
    threshold = 1000
    edgeitems = 3
    linewidth = 80
    sci_mode = None  # None: let the values decide


print_options = PrintOptions()


def set_print_options(**values) -> None:
    """Change the named print options (``precision=2``...); ``None`` values are left alone."""
    for name, value in values.items():
        if value is not None:
            setattr(print_options, name, value)


def reset_print_options() -> None:
    for name in ("precision", "threshold", "edgeitems", "linewidth", "sci_mode"):
        if name in vars(print_options):
            delattr(print_options, name)
