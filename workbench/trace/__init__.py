"""Traces: record the event stream, save it as JSON, load it back, replay it step by step.

::

    with wb.trace() as tr:                 # record every event while the block runs
        loss = ((a * b) + a).sum()
        loss.backward()
    tr.save("run.json")                    # plain JSON with a schema version
    tr = wb.Trace.load("run.json")         # validated; a bad file is refused with a reason
    replay = tr.replay()                   # a cursor over the backward steps
    replay.next(); replay.prev(); replay.goto(3)

A trace keeps *summaries*, never live arrays or graph objects: a small array (up to
``small`` elements) is stored in full, a large one as its shape, dtype and statistics.
So a trace is safe to keep, to save and to send, and it never holds a graph alive.

Records are plain dicts shaped like the event dataclasses of :mod:`workbench.core.events`
(``record["kind"]``, ``record["seq"]`` and one key per field). A trace file is untrusted
input: the loader (:mod:`workbench.trace.format`) refuses a file over 64 MiB unless told
otherwise, parses with :func:`json.loads` only (no pickle, no eval) and checks every
field of every record against its event class before anything uses it.

``wb.trace`` is this module, made callable: ``wb.trace()`` is :func:`trace`, and
``import workbench.trace`` or ``from workbench.trace import Trace`` work as usual.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..core import dtypes, events
from ..core.tensor import writes as tensor_writes  # the list itself: its count stays live
from .format import (
    FORMAT_NAME,
    SCHEMA_VERSION,
    TraceFormatError,
    parse_json,
    read_text,
    size_limit,
    validate,
)

SMALL_ARRAY = 64  # arrays with at most this many elements are stored in full


# --------------------------------------------------------------- summaries
def summarize(array, small: int = SMALL_ARRAY) -> dict:
    """A JSON-ready summary of an array: full values when small, else statistics.

    For a large array ``min`` and ``max`` are exact (and so is ``nonfinite``, the
    count of NaN and infinite entries, which min/max would reveal); ``mean`` and
    ``std`` come from ``sample`` evenly spaced entries. Exact moments of every
    gradient would cost more than the training step being watched.
    """
    array = np.asarray(array)
    summary: dict = {"shape": list(array.shape), "dtype": events.dtype_name(array.dtype)}
    if array.size <= small:
        summary["values"] = _plain_values(array)
    else:
        summary["stats"] = _stats(array)
    return summary


def _plain_values(array: np.ndarray):
    if array.dtype.kind == "c":
        return {"real": _plain_values(array.real), "imag": _plain_values(array.imag)}
    values = array.tolist()  # Python floats: exact for bfloat16 and float16 too
    if dtypes.kind(array.dtype) == "f" and not np.isfinite(array).all():
        return _finite_or_name(values)
    return values


def _finite_or_name(value):
    """Lists of numbers with NaN/inf spelled as strings (strict JSON has no NaN)."""
    if isinstance(value, list):
        return [_finite_or_name(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # "nan", "inf", "-inf"
    return value


SAMPLE = 1024  # entries used for the mean and std of a large array


def _stats(array: np.ndarray) -> dict:
    if array.dtype.kind == "c":
        array = np.abs(array)
    low, high = float(array.min()), float(array.max())  # a pass each (bools give 0.0/1.0)
    nonfinite = 0
    if not (math.isfinite(low) and math.isfinite(high)):
        # Only now is a third pass needed: a NaN anywhere makes min and max NaN, and an
        # infinity is an extreme, so finite min and max mean there is nothing to count.
        finite = np.isfinite(array)
        nonfinite = int(array.size - np.count_nonzero(finite))
        array = array[finite]
        if array.size == 0:
            return {"min": None, "max": None, "mean": None, "std": None, "nonfinite": nonfinite}
        low, high = float(array.min()), float(array.max())
    sample = _sample(array).astype(np.float64)
    n = sample.size
    mean = float(sample.sum()) / n
    variance = max(float(np.dot(sample, sample)) / n - mean * mean, 0.0)
    return {
        "min": low,
        "max": high,
        "mean": mean,
        "std": math.sqrt(variance),
        "nonfinite": nonfinite,
        "sample": n,
    }


def _sample(array: np.ndarray) -> np.ndarray:
    """At most about SAMPLE evenly spaced entries, a view when the array is contiguous.

    Spaced in memory order, so that a transposed array (contiguous in Fortran order)
    is sampled without a copy too: column by column.
    """
    step = max(array.size // SAMPLE, 1)
    if array.flags.c_contiguous or array.flags.f_contiguous:
        return array.ravel(order="K")[::step]
    return np.asarray(array.flat[::step])


def summary_array(summary: dict | None) -> np.ndarray | None:
    """The array a summary stores in full, or None when it only kept statistics."""
    if summary is None or "values" not in summary:
        return None
    values = summary["values"]
    dtype = dtypes.from_name(summary["dtype"])
    if isinstance(values, dict):  # complex: both parts, back in the array's own dtype
        array = np.empty(summary["shape"], dtype)
        array.real = np.asarray(_numbers(values["real"]), dtype=array.real.dtype)
        array.imag = np.asarray(_numbers(values["imag"]), dtype=array.real.dtype)
        return array
    return np.asarray(_numbers(values), dtype=dtype).reshape(summary["shape"])


def _numbers(value):
    if isinstance(value, list):
        return [_numbers(v) for v in value]
    return float(value) if isinstance(value, str) else value


_FIELD_NAMES: dict = {}
_ARRAY_FIELD_NAMES: dict = {}
_AS_IS = frozenset({type(None), bool, int, str})  # JSON as they are


def _field_names(cls: type) -> tuple:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(
            f.name for f in dataclasses.fields(cls) if f.name != "seq"
        )
    return names


def _array_fields(cls: type) -> tuple:
    names = _ARRAY_FIELD_NAMES.get(cls)
    if names is None:
        names = tuple(n for n in _field_names(cls) if n in events.ARRAY_FIELDS)
        _ARRAY_FIELD_NAMES[cls] = names
    return names


def to_record(event: events.Event) -> dict:
    """An event as a plain JSON-ready dict; arrays become summaries."""
    return _make_record(event.kind, event.__dict__)


def _make_record(kind: str, fields: dict) -> dict:
    """``kind``, ``seq``, then the event's fields in declaration order, as plain JSON."""
    record = {"kind": kind, "seq": fields["seq"]}
    for name in _field_names(events.EVENT_TYPES[kind]):
        value = fields[name]
        record[name] = value if type(value) in _AS_IS else _plain(value, summarize)
    return record


def _plain(value, summarize_array):
    if type(value) in _AS_IS:
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (np.ndarray, np.generic)):
        return summarize_array(value)
    if isinstance(value, (tuple, list)):
        return [v if type(v) in _AS_IS else _plain(v, summarize_array) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v, summarize_array) for k, v in value.items()}
    return repr(value)


class _SharedSummaries:
    """One summary per array while a backward pass hands the same array from event to event.

    A gradient shows up several times in a pass: as the value of the op that made it,
    in its step's ``grads_out``, in the next step's ``grads_in``, as a
    ``grad_accumulated`` contribution and often as the new ``.grad``. Summarizing it
    once, by ``id(array)``, saves most of what recording costs. That is right only
    while the array cannot have changed, and while its id still names it, so:

    - Only within a backward pass. There, between two events, the engine runs its own
      code and gradient rules, written with tensor ops: they make new arrays. Outside
      a pass anything may run between two events, and nothing is shared.
    - Every in-place write into a tensor is counted in ``workbench.core.tensor.writes`` (an
      in-place op, ``x[i] = v``, the engine adding into a ``.grad``): when the count
      has moved, every shared summary is forgotten.
    - Your code may also write into an array uncounted (through ``.numpy()``), but the
      event after it says that it ran: ``hook_fired``, ``checkpoint_recompute``, the
      ``node_step`` of a custom Function, an op recorded outside backward. Everything
      is forgotten then, before that event is summarized.
    - An op's output is always summarized afresh: an op may hand back an array it was
      given (an identity op), which your code may have changed.
    - An entry keeps its array, so no other array can take its id while it lives, and
      it lives only as long as the engine holds the array: what a step made until the
      step is over, a gradient until the node it flows to has run.
    """

    def __init__(self, small: int) -> None:
        self.small = small
        self.passes = 0  # backward passes under way (a nested one counts too)
        self.writes = tensor_writes[0]
        self.step: dict = {}  # id(array) -> (array, summary), made since the last node_step
        self.flowing: dict = {}  # the same, for gradients on their way to a node
        self.bound_for: dict = {}  # node id -> ids of the gradients flowing to it

    def forget(self) -> None:
        self.step.clear()
        self.flowing.clear()
        self.bound_for.clear()

    def summary(self, array) -> dict:
        key = id(array)
        found = self.step.get(key) or self.flowing.get(key)
        if found is None:
            found = self.step[key] = (array, summarize(array, self.small))
        return found[1]

    def before(self, kind: str, fields: dict) -> None:
        """Forget what may have changed since the last event, before ``fields`` are summarized."""
        if self.writes != tensor_writes[0]:
            self.writes = tensor_writes[0]
            self.forget()
        if kind == "op_recorded":
            if not fields["in_backward"]:
                self.forget()
            elif fields["value"] is not None:  # summarized afresh (see above)
                self.step.pop(id(fields["value"]), None)
                self.flowing.pop(id(fields["value"]), None)
        elif kind == "node_step":
            if fields["op"] is None and fields["leaf"] is None:
                self.forget()  # not a gradient rule: a custom Function's backward, a checkpoint
        elif kind in ("hook_fired", "checkpoint_recompute"):
            self.forget()
        elif kind == "backward_started":
            self.forget()
            self.passes += 1
        elif kind == "backward_finished":
            self.forget()
            self.passes = max(self.passes - 1, 0)

    def after(self, kind: str, fields: dict) -> None:
        """Keep what later events of the pass may carry again, and let go of the rest."""
        if not self.passes:
            self.forget()
        elif kind == "node_step":
            for key in self.bound_for.pop(fields["node"], ()):  # arrived: now this step's
                if key in self.flowing:
                    self.step[key] = self.flowing.pop(key)
            self._send(fields["grads_out"], fields["next_nodes"])
            self.step.clear()
        elif kind == "backward_started":
            self._send(fields["grad_outputs"], fields["root_nodes"])

    def _send(self, grads: tuple, nodes: tuple) -> None:
        """``grads[i]`` flows to node ``nodes[i]``: keep its summary until that node has run."""
        for grad, node in zip(grads, nodes):
            if grad is not None and node is not None:
                key = id(grad)
                entry = self.step.get(key) or self.flowing.get(key)
                if entry is not None:
                    self.flowing[key] = entry
                    self.bound_for.setdefault(node, []).append(key)


# ------------------------------------------------------------------ the trace
class Trace:
    """Recorded events (as plain records), with save/load and a step-by-step replay.

    Use :func:`trace` to record one; ``Trace.load(path)`` to read a saved one.
    """

    def __init__(self, records: list | None = None, small: int = SMALL_ARRAY) -> None:
        self._records: list[dict] = list(records or [])
        self._pending: list = []  # (kind, field values with arrays summarized), not yet records
        self.small = small
        self._subscription: events.Subscription | None = None
        self._shared = _SharedSummaries(small)

    @property
    def records(self) -> list[dict]:
        """Every recorded event as a plain, JSON-ready dict, in order."""
        if self._pending:
            for kind, fields in self._pending:
                self._records.append(_make_record(kind, fields))
            self._pending.clear()
        return self._records

    # recording
    def _record(self, event: events.Event) -> None:
        """Summarize the event's arrays now (they may change later); the rest can wait.

        The field values are kept as they are (strings, numbers, tuples), with each
        array replaced by its summary, so no array stays alive. Making plain dict
        records is left until someone reads the trace: recording should slow the
        program being watched as little as it can.
        """
        kind = event.kind
        fields = event.__dict__.copy()
        shared = self._shared
        shared.before(kind, fields)
        summary = shared.summary
        for name in _array_fields(type(event)):  # an array, or a tuple of arrays and None
            value = fields[name]
            if type(value) is np.ndarray:
                fields[name] = summary(value)
            elif type(value) is tuple:
                fields[name] = [
                    summary(v) if type(v) is np.ndarray else _plain(v, summary) for v in value
                ]
            elif value is not None:
                fields[name] = _plain(value, summary)
        shared.after(kind, event.__dict__)
        self._pending.append((kind, fields))

    def start(self) -> Trace:
        """Start recording (``with wb.trace()`` does this for you)."""
        if self._subscription is None:
            self._subscription = events.subscribe(self._record)
        return self

    def stop(self) -> Trace:
        if self._subscription is not None:
            self._subscription.close()
            self._subscription = None
        self._shared = _SharedSummaries(self.small)  # holds no array, knows of no pass
        return self

    def __enter__(self) -> Trace:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # reading
    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self):
        return iter(self.records)

    def __getitem__(self, index):
        return self.records[index]

    def __repr__(self) -> str:
        return f"<Trace: {len(self.records)} events, {len(self.passes)} backward pass(es)>"

    def kinds(self) -> list[str]:
        """The kind of every record, in order."""
        return [r["kind"] for r in self.records]

    def of_kind(self, *kinds: str) -> list[dict]:
        """The records of the given kinds, in order."""
        return [r for r in self.records if r["kind"] in kinds]

    @property
    def passes(self) -> list[BackwardPass]:
        """Every backward pass in the trace, each with its steps."""
        return split_passes(self.records)

    @property
    def backward_steps(self) -> list[TraceStep]:
        """The steps of the last backward pass (empty if the trace has none)."""
        passes = self.passes
        return passes[-1].steps if passes else []

    def replay(self, which: int = -1) -> TraceReplay:
        """A cursor over the steps of backward pass ``which`` (the last by default)."""
        return TraceReplay(self, which)

    # saving and loading
    def to_dict(self) -> dict:
        return {
            "format": FORMAT_NAME,
            "schema_version": SCHEMA_VERSION,
            "small_array_limit": self.small,
            "events": self.records,
        }

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False, allow_nan=False)

    def save(self, path) -> Path:
        """Write the trace as JSON (UTF-8); returns the path."""
        path = Path(path)
        path.write_text(self.to_json(), encoding="utf-8")
        return path

    @classmethod
    def from_dict(cls, data) -> Trace:
        """Check ``data`` against the schema and build a Trace; TraceFormatError if bad."""
        validate(data)
        return cls(data["events"], small=data.get("small_array_limit", SMALL_ARRAY))

    @classmethod
    def from_json(cls, text: str) -> Trace:
        """Parse and check JSON text (see :mod:`workbench.trace.format` for the limits)."""
        return cls.from_dict(parse_json(text))

    @classmethod
    def load(cls, path, max_bytes: int | None = None) -> Trace:
        """Read a trace saved by :meth:`save`; refuses files it cannot trust, saying why.

        A file is untrusted input: one larger than ``max_bytes`` is refused before it is
        read. The limit is 64 MiB (``MAX_BYTES``) unless ``max_bytes`` or the environment
        variable ``WORKBENCH_TRACE_MAX_BYTES`` gives another. Every field of every record
        is checked (:mod:`workbench.trace.format`); a bad file raises
        :class:`TraceFormatError` naming the file and the field.
        """
        path = Path(path)
        limit = size_limit(max_bytes)
        try:
            return cls.from_json(read_text(path, limit))
        except TraceFormatError as err:
            raise TraceFormatError(f"{path}: {err}") from None


def trace(small: int = SMALL_ARRAY) -> Trace:
    """Record every event while a ``with`` block runs: ``with wb.trace() as tr: ...``.

    ``small`` is the largest array (in elements) stored with its values; larger ones
    keep shape, dtype and statistics only.
    """
    if not isinstance(small, int) or small < 0:
        raise ValueError(
            f"trace: small={small!r}: give the largest array (a number of elements, 0 or "
            "more) to store with its values"
        )
    return Trace(small=small)


# ------------------------------------------------------------ passes and steps
class _RecordField:
    """``step.node`` is ``step.record["node"]``: one field of a step's record, read as an
    attribute of the step by the field's name."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.field = name

    def __get__(self, step, owner: type | None = None):
        return self if step is None else step.record[self.field]


@dataclass
class TraceStep:
    """One node run by a backward pass, and what happened while it ran.

    ``events`` are the records published during the step (hooks, the ops its rule
    called, collapse-sums, freed saved tensors, gradients accumulated into leaves);
    ``record`` is the step's own ``node_step`` record.
    """

    index: int
    record: dict
    events: list = field(default_factory=list)

    # The step record's fields, each read by the name a learner uses: step.node, step.formula
    node = _RecordField()  # the node's id in the trace
    name = _RecordField()  # its name: "MulBackward0"
    formula = _RecordField()  # its rule's formula
    grads_in = _RecordField()  # the gradients it received (ȳ)
    grads_out = _RecordField()  # the gradients it sent to its inputs (x̄...)

    def of_kind(self, *kinds: str) -> list[dict]:
        return [r for r in self.events if r["kind"] in kinds]


@dataclass
class BackwardPass:
    """A ``backward_started`` ... ``backward_finished`` stretch of a trace."""

    started: dict
    steps: list = field(default_factory=list)
    finished: dict | None = None


def split_passes(records: list) -> list[BackwardPass]:
    """Group records into backward passes and their steps.

    A nested backward (one run from inside a hook) is kept inside the step that ran it.
    """
    passes = []
    current: BackwardPass | None = None
    pending: list = []
    depth = 0
    for record in records:
        kind = record["kind"]
        if kind == "backward_started":
            depth += 1
            if depth == 1:
                current, pending = BackwardPass(started=record), []
                passes.append(current)
                continue
        elif kind == "backward_finished":
            depth -= 1
            if depth == 0 and current is not None:
                current.finished = record
                current = None
                continue
        if current is None:
            continue
        if kind == "node_step" and depth == 1:
            current.steps.append(TraceStep(len(current.steps), record, pending))
            pending = []
        else:
            pending.append(record)
    return passes


class TraceReplay:
    """A cursor over the steps of one backward pass, for stepping forwards and back.

    ``step`` is the number of the step on show, counted from 1 as the stepper's panel
    counts ("Step k of N"): 0 before the first step, up to ``len(replay)`` at the last.
    At step ``k`` the k-th node is the one shown as running (``active``) and the steps
    before it are ``done``, as in ``wb.viz.draw(trace, kind="backward", step=k)``.
    """

    def __init__(self, trace: Trace, which: int = -1) -> None:
        passes = trace.passes
        if not passes:
            raise ValueError("this trace has no backward pass to replay (record a backward())")
        self.trace = trace
        self.backward = passes[which]
        self.steps: list[TraceStep] = self.backward.steps
        self.step = 0

    def __len__(self) -> int:
        return len(self.steps)

    @property
    def current(self) -> TraceStep | None:
        return self.steps[self.step - 1] if self.step > 0 else None

    @property
    def active(self) -> str | None:
        """The id of the node running at the current step."""
        step = self.current
        return None if step is None else step.node

    @property
    def done(self) -> list[str]:
        """Ids of the nodes whose steps came before the current one."""
        return [s.node for s in self.steps[: max(self.step - 1, 0)]]

    @property
    def at_start(self) -> bool:
        return self.step == 0

    @property
    def at_end(self) -> bool:
        return self.step >= len(self.steps)

    def next(self) -> TraceStep | None:
        """Move one step forward; returns the new current step (None past the end)."""
        if self.at_end:
            return None
        self.step += 1
        return self.current

    def prev(self) -> TraceStep | None:
        """Move one step back; returns the new current step (None before the start)."""
        if self.step > 0:
            self.step -= 1
        return self.current

    def goto(self, k: int) -> TraceStep | None:
        """Jump to step ``k`` (from 1; 0 is before the first step)."""
        if not 0 <= k <= len(self.steps):
            raise IndexError(f"step {k} is out of range: this pass has steps 1..{len(self)}")
        self.step = k
        return self.current

    def grads(self) -> dict:
        """``tensor id -> summary`` of each ``.grad`` as it stands after the current step."""
        grads = {}
        for step in self.steps[: self.step]:
            for record in step.of_kind("grad_accumulated"):
                grads[record["tensor"]] = record["after"]
        return grads


class _CallableModule(types.ModuleType):
    """Lets ``wb.trace()`` start a recording while ``wb.trace`` stays this module."""

    def __call__(self, small: int = SMALL_ARRAY) -> Trace:
        return trace(small)


sys.modules[__name__].__class__ = _CallableModule
