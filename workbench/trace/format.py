"""Reading a trace file as untrusted input: limits, parsing, and a check of every field.

A trace file may come from anyone (a colleague, a bug report, a download), so
:meth:`~workbench.trace.Trace.load` trusts nothing in it:

- **Size.** The file's size is checked before it is read: at most :data:`MAX_BYTES`
  (64 MiB) unless ``Trace.load(path, max_bytes=...)`` or the environment variable
  ``WORKBENCH_TRACE_MAX_BYTES`` says otherwise.
- **Lists and objects.** Each takes dozens of bytes of memory, so a file made mostly of
  ``{}`` would take twenty times its size once parsed. A file may hold at most one
  per :data:`BYTES_PER_CONTAINER` bytes; real traces hold about one per 50 bytes.
- **Parsing.** :func:`json.loads` only (never pickle or eval). Its parser refuses to nest
  deeper than Python's recursion limit; that error becomes a :class:`TraceFormatError`.
  An integer too long for any numpy integer (over 20 characters) is not converted at
  all (Python refuses to read one of more than 4300 digits, and slowly reads one below).
- **Schema.** Every record is checked against the fields of its event class in
  :mod:`workbench.core.events`, down to the items of every list: ids are strings, shapes are
  lists of sizes, arrays are summaries whose dtype is a plain numeric one and whose
  values fit their shape and dtype. Free-form values (an op's ``attrs``) may nest at
  most :data:`MAX_DEPTH` levels.

Anything wrong raises :class:`TraceFormatError` naming the record and the field, as in
``events[12] (op_recorded), field 'inputs[0]': expected a string, got a list``;
``Trace.load`` puts the file's path in front.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..core import dtypes, events

SCHEMA_VERSION = 1
FORMAT_NAME = "autodiff-workbench-trace"

MAX_BYTES = 64 * 2**20  # the largest trace file read, unless told otherwise
MAX_BYTES_VARIABLE = "WORKBENCH_TRACE_MAX_BYTES"  # the environment variable that overrides it
BYTES_PER_CONTAINER = 8  # a file may hold one list or object per this many bytes at most
MAX_DEPTH = 32  # how deeply an op's attrs may nest lists and objects
MAX_NDIM = 64  # numpy's own limit on an array's dimensions
INT64 = (-(2**63), 2**63 - 1)  # numpy's limit on an array's size, in bytes too
UINT64_MAX = 2**64 - 1

# The dtypes an array summary may name: plain numbers only. np.dtype() would also read
# "object", "V8" or "(100000000000,)f8" (an array inside every element), so it is only
# asked about these.
DTYPES = frozenset(
    ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
    + ["float16", "bfloat16", "float32", "float64", "complex64", "complex128"]
)
NAMED_FLOATS = frozenset({"nan", "inf", "-inf"})  # how a summary spells them (JSON has none)
STATS = frozenset({"min", "max", "mean", "std", "nonfinite", "sample"})
TOP_LEVEL = frozenset({"format", "schema_version", "small_array_limit", "events"})


class TraceFormatError(ValueError):
    """A trace file that this workbench cannot read; the message says what is wrong."""


# ------------------------------------------------------------------ reading
def size_limit(max_bytes: int | None = None) -> int:
    """``max_bytes`` if given, else ``$WORKBENCH_TRACE_MAX_BYTES``, else :data:`MAX_BYTES`."""
    if max_bytes is not None:
        return max_bytes
    setting = os.environ.get(MAX_BYTES_VARIABLE)
    if setting is None:
        return MAX_BYTES
    try:
        return int(setting)
    except ValueError:
        raise ValueError(
            f"{MAX_BYTES_VARIABLE} should be a number of bytes, got {_short(setting)}"
        ) from None


def read_text(path: Path, max_bytes: int) -> str:
    """The file's text, refused before reading when it is larger than ``max_bytes``."""
    too_large = TraceFormatError(
        f"the file is larger than the limit of {max_bytes:,} bytes: pass "
        f"Trace.load(path, max_bytes=...) or set {MAX_BYTES_VARIABLE} to read it"
    )
    if not path.is_file():
        raise FileNotFoundError(f"Trace.load: no trace file at {path}")
    if path.stat().st_size > max_bytes:
        raise too_large
    with path.open("rb") as file:
        data = file.read(max_bytes + 1)  # no more, even if the file grew or is a pipe
    if len(data) > max_bytes:
        raise too_large
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise TraceFormatError("not a trace (the file is not UTF-8 text)") from None


def parse_json(text: str) -> Any:
    """JSON text as Python values, with the limits above; TraceFormatError if it cannot be."""
    containers = text.count("[") + text.count("{")  # brackets in strings count too: a bound
    if containers * BYTES_PER_CONTAINER > max(len(text), 1024):
        raise TraceFormatError(
            f"not a trace: {containers:,} lists and objects in {len(text):,} characters "
            f"(a trace holds at most one per {BYTES_PER_CONTAINER} characters)"
        )
    try:
        return json.loads(text, parse_int=_integer_from_text)
    except json.JSONDecodeError as err:
        raise TraceFormatError(f"not a trace: the text is not valid JSON ({err})") from None
    except RecursionError:
        raise TraceFormatError(
            "not a trace: lists and objects nest deeper than the JSON parser allows"
        ) from None


class LongNumber:
    """An integer from a file with too many digits for any numpy integer, kept as text."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"{self.text[:12]}... ({len(self.text)} characters)"


def _integer_from_text(text: str) -> int | LongNumber:
    """An int, unless longer than any int64 or uint64 could be (checks name it later)."""
    return int(text) if len(text) <= 20 else LongNumber(text)


# ----------------------------------------------------------------- the file
def validate(data: Any) -> None:
    """Raise TraceFormatError unless ``data`` is a trace this workbench can read."""
    if not isinstance(data, dict):
        raise TraceFormatError(f"not a trace: expected a JSON object, got {_describe(data)}")
    if data.get("format") != FORMAT_NAME:
        raise TraceFormatError(f"not a trace: 'format' should be '{FORMAT_NAME}'")
    unknown = set(data) - TOP_LEVEL
    if unknown:
        raise TraceFormatError(f"unknown top-level field(s) {_names(unknown)}")
    version = data.get("schema_version")
    if not _is_int(version):
        raise TraceFormatError("missing or non-integer 'schema_version'")
    if version > SCHEMA_VERSION:
        raise TraceFormatError(
            f"schema_version {_short(version)} is newer than this workbench reads "
            f"({SCHEMA_VERSION}); upgrade workbench to open it"
        )
    if version < 1:
        raise TraceFormatError(f"schema_version {_short(version)} is not a valid version")
    if "small_array_limit" in data:
        _check_field("the trace", "small_array_limit", data["small_array_limit"], _size)
    records = data.get("events")
    if not isinstance(records, list):
        raise TraceFormatError("'events' should be a list of event records")
    for i, record in enumerate(records):
        _check_record(i, record)


def _check_record(i: int, record: Any) -> None:
    if not isinstance(record, dict):
        raise TraceFormatError(f"events[{i}]: expected an object, got {_describe(record)}")
    kind = record.get("kind")
    cls = events.EVENT_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise TraceFormatError(f"events[{i}]: unknown kind {_short(kind)}")
    where = f"events[{i}] ({kind})"
    checks = field_checks(cls)
    unknown = set(record) - set(checks) - {"kind"}
    if unknown:
        raise TraceFormatError(f"{where}: unknown field(s) {_names(unknown)}")
    for name, (check, required) in checks.items():
        if name in record:
            _check_field(where, name, record[name], check)
        elif required:
            raise TraceFormatError(f"{where}: missing field '{name}'")


def _check_field(where: str, name: str, value: Any, check: Check) -> None:
    try:
        check(value)
    except Wrong as wrong:
        raise TraceFormatError(f"{where}, field '{name}{wrong.path}': {wrong.problem}") from None


# ------------------------------------------------- checks, from the events' fields
class Wrong(Exception):
    """A value that does not fit the schema: what is wrong, and where inside the field.

    A check raises it with an empty ``path``; each list or object it passes through on
    the way out puts its own step in front (``[0]``, ``.shape``), so the path is built
    only when something is wrong.
    """

    def __init__(self, problem: str, path: str = "") -> None:
        super().__init__(problem, path)
        self.problem, self.path = problem, path

    def inside(self, step: str) -> Wrong:
        return Wrong(self.problem, step + self.path)


Check = Callable[[Any], None]  # check(value) raises Wrong when the value is bad


@functools.cache
def field_checks(cls: type) -> dict[str, tuple[Check, bool]]:
    """``name -> (check, required)`` for every field of an event class, ``seq`` included.

    Read from the field annotations (``str``, ``int | None``, ``tuple``, ...); for a
    ``tuple`` field, :data:`ITEMS` says what its items are. A field with a default may
    be missing (files written before it was added); ``seq`` never.
    """
    checks = {}
    for f in dataclasses.fields(cls):
        parts = [part.strip() for part in str(f.type).split("|")]
        check = _check_for(f.name, parts[0])
        if "None" in parts[1:]:
            check = _maybe(check)
        has_default = f.default is not dataclasses.MISSING or (
            f.default_factory is not dataclasses.MISSING
        )
        checks[f.name] = (check, f.name == "seq" or not has_default)
    return checks


def _check_for(name: str, annotation: str) -> Check:
    if annotation == "tuple" and name in ITEMS:
        return _list_of(ITEMS[name])
    if annotation == "Any" and name in events.ARRAY_FIELDS:
        return _maybe(_summary)
    if annotation in BY_ANNOTATION:
        return BY_ANNOTATION[annotation]
    raise TypeError(f"no check for the trace field {name!r} annotated {annotation!r}")


# -------------------------------------------------------------- basic checks
def _text(value: Any) -> None:
    if not isinstance(value, str):
        raise Wrong(f"expected a string, got {_describe(value)}")


def _flag(value: Any) -> None:
    if not isinstance(value, bool):
        raise Wrong(f"expected true or false, got {_describe(value)}")


def _integer(value: Any) -> None:
    if not _is_int(value):
        raise Wrong(f"expected an integer, got {_describe(value)}")
    if not INT64[0] <= value <= INT64[1]:
        raise Wrong(f"{_short(value)} does not fit in a 64-bit integer")


def _size(value: Any) -> None:
    _integer(value)
    if value < 0:
        raise Wrong(f"expected a size (0 or more), got {value}")


def _shape(value: Any) -> None:
    """A list of sizes, at most MAX_NDIM of them, whose product fits in an int64."""
    _list_of(_size)(value)
    if len(value) > MAX_NDIM:
        raise Wrong(f"{len(value)} dimensions; numpy allows at most {MAX_NDIM}")
    if math.prod(value) > INT64[1]:
        raise Wrong(f"shape {_cut(repr(value))} has more elements than an int64 can count")


def _maybe(check: Check) -> Check:
    """``check``, or null."""

    def check_or_null(value: Any) -> None:
        if value is not None:
            check(value)

    return check_or_null


def _list_of(check: Check) -> Check:
    """A list whose every item passes ``check``."""

    def check_list(value: Any) -> None:
        if not isinstance(value, list):
            raise Wrong(f"expected a list, got {_describe(value)}")
        for i, item in enumerate(value):
            try:
                check(item)
            except Wrong as wrong:
                raise wrong.inside(f"[{i}]") from None

    return check_list


def _json_object(value: Any) -> None:
    """Any JSON object (an op's attrs): string keys, bounded numbers, not too deep."""
    if not isinstance(value, dict):
        raise Wrong(f"expected an object, got {_describe(value)}")
    _plain_json(value, MAX_DEPTH)


def _plain_json(value: Any, depth_left: int) -> None:
    if isinstance(value, (dict, list)) and depth_left == 0:
        raise Wrong(f"nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise Wrong(f"expected string keys, got {_describe(key)}")
            _inside(f"[{_short(key)}]", _plain_json, item, depth_left - 1)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _inside(f"[{i}]", _plain_json, item, depth_left - 1)
    elif _is_int(value):
        if not INT64[0] <= value <= UINT64_MAX:
            raise Wrong(f"{_short(value)} does not fit in a 64-bit integer")
    elif isinstance(value, float):
        _finite(value)
    elif not isinstance(value, (str, bool, type(None))):
        raise Wrong(f"expected a JSON value, got {_describe(value)}")


def _inside(step: str, check: Callable, value: Any, *args) -> None:
    """``check(value, *args)``, with ``step`` put in front of the path of anything wrong."""
    try:
        check(value, *args)
    except Wrong as wrong:
        raise wrong.inside(step) from None


def _finite(value: float) -> None:
    if not math.isfinite(value):
        raise Wrong(f"the number {value} is out of range (a trace writes it as a string)")


# ------------------------------------------------------------ array summaries
def _summary(value: Any) -> None:
    """``{"shape", "dtype", "values" or "stats"}``, as :func:`~workbench.trace.summarize` writes."""
    if not isinstance(value, dict):
        raise Wrong(f"expected an array summary, got {_describe(value)}")
    unknown = set(value) - {"shape", "dtype", "values", "stats"}
    if unknown:
        raise Wrong(f"unknown array field(s) {_names(unknown)}")
    for key in ("shape", "dtype"):
        if key not in value:
            raise Wrong(f"an array summary needs '{key}'")
    shape = value["shape"]
    _inside(".shape", _shape, shape)
    dtype = _dtype(value["dtype"])
    if math.prod(shape) * dtype.itemsize > INT64[1]:
        raise Wrong(f"shape {_cut(repr(shape))} {dtype} is too large for an array", ".shape")
    if "values" in value:
        _inside(".values", _values, value["values"], shape, dtype)
    elif "stats" in value:
        _inside(".stats", _stats, value["stats"])
    else:
        raise Wrong("an array needs 'values' or 'stats'")


def _dtype(value: Any) -> np.dtype:
    if not (isinstance(value, str) and value in DTYPES):
        names = ", ".join(sorted(DTYPES))
        raise Wrong(f"{_short(value)} is not a numeric dtype (one of {names})", ".dtype")
    return dtypes.from_name(value)


def _values(values: Any, shape: list, dtype: np.dtype) -> None:
    """Nested lists exactly as deep and as long as ``shape``, of numbers that fit ``dtype``."""
    if dtype.kind != "c":
        _nested(values, shape, _number_check(dtype))
        return
    part = _number_check(np.dtype(f"float{dtype.itemsize * 4}"))  # complex64: two float32
    if not isinstance(values, dict) or set(values) != {"real", "imag"}:
        raise Wrong(f"expected {{'real': [...], 'imag': [...]}}, got {_describe(values)}")
    for key in ("real", "imag"):
        _inside(f".{key}", _nested, values[key], shape, part)


def _nested(values: Any, shape: list, check: Check, level: int = 0) -> None:
    if level == len(shape):
        check(values)
        return
    if not isinstance(values, list) or len(values) != shape[level]:
        got = f"a list of {len(values)}" if isinstance(values, list) else _describe(values)
        raise Wrong(
            f"the values do not match shape {shape}: expected a list of {shape[level]}, got {got}"
        )
    for i, item in enumerate(values):
        _inside(f"[{i}]", _nested, item, shape, check, level + 1)


@functools.cache
def _number_check(dtype: np.dtype) -> Check:
    """A check for one value of an array of ``dtype``, as ``array.tolist()`` gives it."""
    if dtype.kind == "b":
        return _flag
    if dtype.kind in "iu":
        low, high = int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)

        def check_integer(value: Any) -> None:
            if not _is_int(value):
                raise Wrong(f"expected an integer ({dtype}), got {_describe(value)}")
            if not low <= value <= high:
                raise Wrong(f"{_short(value)} does not fit in {dtype}")

        return check_integer
    largest = float(dtypes.finfo(dtype).max)

    def check_float(value: Any) -> None:
        if isinstance(value, str) and value in NAMED_FLOATS:
            return
        if not (_is_int(value) or isinstance(value, float)):
            raise Wrong(f"expected a number ({dtype}), got {_describe(value)}")
        if isinstance(value, float):
            _finite(value)
        if abs(value) > largest:
            raise Wrong(f"{_short(value)} does not fit in {dtype}")

    return check_float


def _stats(value: Any) -> None:
    """The statistics of a large array: min, max, mean, std (numbers), counts (sizes)."""
    if not isinstance(value, dict):
        raise Wrong(f"expected an object, got {_describe(value)}")
    unknown = set(value) - STATS
    if unknown:
        raise Wrong(f"unknown statistic(s) {_names(unknown)}")
    check_float = _number_check(np.dtype("float64"))
    for key, item in value.items():
        if key in ("nonfinite", "sample"):
            _inside(f".{key}", _size, item)
        elif item is not None:
            _inside(f".{key}", check_float, item)


# ------------------------------------------------------------------- tables
BY_ANNOTATION: dict[str, Check] = {
    "str": _text,
    "int": _integer,
    "bool": _flag,
    "dict": _json_object,
}

# What the items of each ``tuple`` field hold (the annotations say only ``tuple``).
# Ids are strings (``t17``, ``n5``); None where an input was a number or an edge is absent.
ITEMS: dict[str, Check] = {
    "inputs": _maybe(_text),
    "input_shapes": _shape,
    "output_shape": _size,
    "input_shape": _size,
    "scope": _text,
    "next_nodes": _maybe(_text),
    "next_names": _maybe(_text),
    "input_names": _maybe(_text),
    "roots": _text,
    "root_nodes": _text,
    "grad_outputs": _maybe(_summary),
    "grads_in": _maybe(_summary),
    "grads_out": _maybe(_summary),
    "grads_out_ids": _maybe(_text),
    "axes": _integer,
    "nodes": _text,
}


# ------------------------------------------------------------------ helpers
def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_JSON_NAMES = {
    dict: "an object",
    list: "a list",
    str: "a string",
    bool: "a boolean",
    int: "a number",
    float: "a number",
    type(None): "null",
}


def _describe(value: Any) -> str:
    """What a value is, for a message: "a list", "null", or a too long number itself."""
    if isinstance(value, LongNumber):
        return f"the number {value!r}, too long for any integer type"
    return _JSON_NAMES.get(type(value), type(value).__name__)


def _short(value: Any, limit: int = 60) -> str:
    """``repr(value)`` on one line, cut to about ``limit`` characters; lists are not shown.

    A list may be nested hundreds deep, and repr() would recurse through all of it.
    """
    if not isinstance(value, (str, int, float, type(None))):
        return _describe(value)
    if _is_int(value) and value.bit_length() > 200:  # repr() refuses over 4300 digits
        return f"an integer of {value.bit_length()} bits"
    return _cut(repr(value), limit)


def _cut(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _names(keys: set) -> str:
    """``['a', 'b']``: the keys of an object, sorted, cut short if many."""
    return _cut(repr(sorted(map(str, keys))))
