"""Trace files are untrusted input: every bad file is one TraceFormatError naming file and field.

Each case here once escaped as a RecursionError, OverflowError, ValueError or TypeError
(from ``Trace.load`` or later from drawing), or was refused without saying where.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import workbench as wb
from workbench.core import events
from workbench.teaching.cli import main
from workbench.trace import Trace, TraceFormatError
from workbench.trace.format import MAX_BYTES, MAX_DEPTH, field_checks
from workbench.utils.checkpoint import checkpoint
from workbench.viz.model import RECOMPUTED


@pytest.fixture(scope="module")
def good() -> dict:
    """A small trace as plain JSON data: ops, saved tensors, a backward pass."""
    events.reset_ids()
    x = wb.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    w = wb.tensor([1.0, 2.0], requires_grad=True)
    with wb.trace() as tr:
        (x * w).sigmoid().sum().backward()
    return json.loads(tr.to_json())


def first(data: dict, kind: str) -> int:
    return next(i for i, r in enumerate(data["events"]) if r["kind"] == kind)


def changed(good: dict, kind: str, /, **fields) -> tuple[dict, str]:
    """A copy of ``good`` with some fields of the first ``kind`` record replaced; its name."""
    data = copy.deepcopy(good)
    i = first(data, kind)
    data["events"][i].update(fields)
    return data, f"events[{i}] ({kind})"


def write(tmp_path: Path, text: str, name: str = "bad.json") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def refused(path: Path, *names: str, **load_options) -> str:
    """Load ``path``, expect a one-line TraceFormatError starting with it and naming ``names``."""
    with pytest.raises(TraceFormatError) as info:
        Trace.load(path, **load_options)
    message = str(info.value)
    assert message.startswith(f"{path}: "), message
    assert "\n" not in message and len(message) < len(str(path)) + 400, message
    for name in names:
        assert name in message, message
    return message


# ---------------------------------------------------------- numbers and dtypes
def a_summary(dtype: str, values) -> dict:
    return {"shape": [len(values)], "dtype": dtype, "values": values}


NUMBERS = {  # name: (dtype, the number as JSON text, what the message says)
    "2**70 in an int64 array": ("int64", str(2**70), "too long for any integer type"),
    "2**63 in an int64 array": ("int64", str(2**63), "does not fit in int64"),
    "300 in a uint8 array": ("uint8", "300", "does not fit in uint8"),
    "10**400 in a float64 array": ("float64", str(10**400), "too long for any integer type"),
    "1e400 in a float64 array": ("float64", "1e400", "out of range"),
    "1e39 in a float32 array": ("float32", "1e39", "does not fit in float32"),
    "NaN as a bare JSON word": ("float64", "NaN", "out of range"),
    "a 5,000-digit number": ("float64", "9" * 5000, "(5000 characters)"),
    "a string in an int array": ("int32", '"nan"', "expected an integer (int32)"),
}


@pytest.mark.parametrize("case", sorted(NUMBERS))
def test_numbers_no_array_can_hold_are_refused_naming_the_field(good, tmp_path, case):
    dtype, number, says = NUMBERS[case]
    data, where = changed(good, "op_recorded", value=a_summary(dtype, [12345]))
    path = write(tmp_path, json.dumps(data).replace("12345", number))
    refused(path, f"{where}, field 'value.values[0]'", says)


def test_a_5000_digit_integer_field_is_refused_naming_it(good, tmp_path):
    data, where = changed(good, "op_recorded", seq=12345)
    path = write(tmp_path, json.dumps(data).replace('"seq": 12345', '"seq": ' + "9" * 5000))
    refused(path, f"{where}, field 'seq'", "5000 characters")


def test_statistics_that_overflow_are_refused(good, tmp_path):
    stats = {"min": 0.0, "max": 12345.0, "mean": 1.0, "std": 1.0, "nonfinite": 0, "sample": 9}
    summary = {"shape": [300], "dtype": "float64", "stats": stats}
    data, where = changed(good, "op_recorded", value=summary)
    path = write(tmp_path, json.dumps(data).replace("12345.0", "1e400"))
    refused(path, f"{where}, field 'value.stats.max'", "out of range")


@pytest.mark.parametrize("dtype", ["(100000000000,)f8", "object", "V8", "<f8", ["f8"]])
def test_only_plain_numeric_dtypes_are_read(good, tmp_path, dtype):
    summary = {"shape": [2], "dtype": dtype, "values": [1.0, 2.0]}
    data, where = changed(good, "op_recorded", value=summary)
    path = write(tmp_path, json.dumps(data))
    refused(path, f"{where}, field 'value.dtype'", "not a numeric dtype")


@pytest.mark.parametrize(
    "shape, says",
    [([-1], "expected a size"), ([2**40, 2**40], "more elements than an int64"), ([1] * 65, "65")],
)
def test_shapes_are_sizes_an_array_could_have(good, tmp_path, shape, says):
    summary = {"shape": shape, "dtype": "float64", "stats": {}}
    data, where = changed(good, "op_recorded", value=summary)
    path = write(tmp_path, json.dumps(data))
    refused(path, f"{where}, field 'value.shape", says)


# -------------------------------------------------------------- nesting and size
def test_json_nested_100000_deep_is_refused(tmp_path):
    path = write(tmp_path, "[" * 100_000 + "]" * 100_000)
    refused(path, "lists and objects")


def test_deep_nesting_inside_a_field_is_refused(good, tmp_path):
    """Past the JSON parser's own limit, and between that and the schema's limit."""
    data, where = changed(good, "op_recorded", attrs={"k": "DEEP"})
    text = json.dumps(data)
    padding = " " * 2_000_000  # enough text that the brackets are not most of it
    path = write(tmp_path, text.replace('"DEEP"', "[" * 100_000 + "]" * 100_000) + padding)
    refused(path, "nest deeper than the JSON parser allows")
    path = write(tmp_path, text.replace('"DEEP"', "[" * 50 + "]" * 50))
    refused(path, f"{where}, field 'attrs['k']{'[0]' * (MAX_DEPTH - 1)}'", "nested deeper")


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(good, tmp_path, monkeypatch):
    path = write(tmp_path, json.dumps(good))
    size = path.stat().st_size
    refused(path, "larger than the limit", "max_bytes", max_bytes=size - 1)
    assert len(Trace.load(path, max_bytes=size)) == len(good["events"])
    monkeypatch.setenv("WORKBENCH_TRACE_MAX_BYTES", str(size - 1))
    refused(path, "larger than the limit", "WORKBENCH_TRACE_MAX_BYTES")
    assert len(Trace.load(path, max_bytes=size)) == len(good["events"])  # the argument wins
    monkeypatch.setenv("WORKBENCH_TRACE_MAX_BYTES", "a lot")
    with pytest.raises(ValueError, match="WORKBENCH_TRACE_MAX_BYTES"):
        Trace.load(path)
    assert MAX_BYTES == 64 * 2**20  # what the README and the docstring promise


def test_a_file_of_empty_events_is_refused_before_it_is_parsed(tmp_path):
    """The issue's 200 MB of ``{}`` took 2 GB to parse; brackets are counted first."""
    head = '{"format": "autodiff-workbench-trace", "schema_version": 1, "events": ['
    path = write(tmp_path, head + ", ".join(["{}"] * 100_000) + "]}")
    refused(path, "lists and objects in")


def test_the_limits_are_checked_on_trace_text_too():
    with pytest.raises(TraceFormatError, match="lists and objects"):
        Trace.from_json("[" * 100_000 + "]" * 100_000)


# ---------------------------------------------------- nested items of every kind
NESTED = {  # name: (kind, the fields changed, the field named in the message)
    "inputs [[-1]]": ("op_recorded", {"inputs": [[-1]]}, "inputs[0]"),
    "input_shapes [null]": ("op_recorded", {"input_shapes": [None]}, "input_shapes[0]"),
    "output_shape of strings": ("op_recorded", {"output_shape": ["2"]}, "output_shape[0]"),
    "scope a string": ("op_recorded", {"scope": "top"}, "scope"),
    "next_nodes [1]": ("op_recorded", {"next_nodes": [1]}, "next_nodes[0]"),
    "attrs a list": ("op_recorded", {"attrs": []}, "attrs"),
    "grads_out one summary": ("node_step", "ONE_SUMMARY", "grads_out"),
    "grads_out [[]]": ("node_step", {"grads_out": [[]]}, "grads_out[0]"),
    "grads_in [1]": ("node_step", {"grads_in": [1]}, "grads_in[0]"),
    "grad_outputs null": ("backward_started", {"grad_outputs": None}, "grad_outputs"),
    "roots [null]": ("backward_started", {"roots": [None]}, "roots[0]"),
    "axes [0.5]": ("collapse_sum", {"axes": [0.5]}, "axes[0]"),
    "after a string": ("grad_accumulated", {"after": "np.zeros(10**12)"}, "after"),
    "nbytes -1.5": ("saved_tensor_packed", {"nbytes": -1.5}, "nbytes"),
    "in_backward 0": ("op_recorded", {"in_backward": 0}, "in_backward"),
}


@pytest.mark.parametrize("case", sorted(NESTED))
def test_wrong_nested_items_are_refused_naming_the_field(good, tmp_path, case):
    kind, fields, name = NESTED[case]
    if fields == "ONE_SUMMARY":
        fields = {"grads_out": good["events"][first(good, kind)]["grads_out"][0]}
    data, where = changed(good, kind, **fields)
    refused(write(tmp_path, json.dumps(data)), f"{where}, field '{name}'")


def test_values_must_match_their_shape_at_every_level(good, tmp_path):
    summary = {"shape": [2, 2], "dtype": "float64", "values": [[1.0, 2.0], [3.0]]}
    data, where = changed(good, "op_recorded", value=summary)
    path = write(tmp_path, json.dumps(data))
    refused(path, f"{where}, field 'value.values[1]'", "do not match shape [2, 2]")


def test_unknown_kinds_and_unknown_or_missing_fields_are_named(good, tmp_path):
    data, _ = changed(good, "op_recorded", kind="rm -rf")
    refused(write(tmp_path, json.dumps(data)), "events[0]: unknown kind 'rm -rf'")
    data, where = changed(good, "op_recorded", __reduce__="os.system")
    refused(write(tmp_path, json.dumps(data)), f"{where}: unknown field(s) ['__reduce__']")
    data = copy.deepcopy(good)
    i = first(data, "node_step")
    del data["events"][i]["grads_out"]
    refused(
        write(tmp_path, json.dumps(data)), f"events[{i}] (node_step): missing field 'grads_out'"
    )
    data = dict(good, small_array_limit="64")
    refused(write(tmp_path, json.dumps(data)), "field 'small_array_limit'")
    data = dict(good, extra=1)
    refused(write(tmp_path, json.dumps(data)), "unknown top-level field(s) ['extra']")


def test_a_huge_bad_value_makes_a_short_message(good, tmp_path):
    data, _ = changed(good, "op_recorded", kind="x" * 1_000_000)
    assert len(refused(write(tmp_path, json.dumps(data)), "unknown kind")) < 300
    text = json.dumps(changed(good, "op_recorded", kind="DEEP")[0])
    path = write(tmp_path, text.replace('"DEEP"', "[" * 800 + "]" * 800))
    refused(path, "events[0]: unknown kind a list")  # described, not printed 800 deep


def test_every_field_of_every_event_has_a_check():
    """A new event field needs a rule in trace_format (ITEMS for a tuple): this says which."""
    for cls in events.EVENT_TYPES.values():
        assert "seq" in field_checks(cls)


# --------------------------------------------------------------- the command line
def bad_files(good: dict, tmp_path: Path) -> dict:
    files = {"deep": "[" * 100_000 + "]" * 100_000, "not json": "{'python': 1}"}
    for name in ("2**70 in an int64 array", "a 5,000-digit number"):
        dtype, number, _ = NUMBERS[name]
        data, _ = changed(good, "op_recorded", value=a_summary(dtype, [12345]))
        files[name] = json.dumps(data).replace("12345", number)
    data, _ = changed(good, "op_recorded", value=a_summary("(100000000000,)f8", [1.0]))
    files["shaped dtype"] = json.dumps(data)
    for name, (kind, fields, _) in NESTED.items():
        if fields != "ONE_SUMMARY":
            files[name] = json.dumps(changed(good, kind, **fields)[0])
    return {
        name: write(tmp_path, text, f"bad{i}.json") for i, (name, text) in enumerate(files.items())
    }


def test_render_refuses_every_bad_file_in_one_line_with_exit_code_2(good, tmp_path, capsys):
    for name, path in bad_files(good, tmp_path).items():
        assert main(["render", str(path), "-o", str(tmp_path / "out.dot")]) == 2, name
        err = capsys.readouterr().err
        assert err.startswith(f"workbench render: {path}: "), (name, err)
        assert err.count("\n") == 1 and "Traceback" not in err, (name, err)
    assert not (tmp_path / "out.dot").exists()


def test_render_of_a_folder_is_one_line(tmp_path, capsys):
    assert main(["render", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("workbench render: ") and err.count("\n") == 1


def test_render_process_exits_2_with_one_line(tmp_path):
    path = write(tmp_path, "[" * 100_000 + "]" * 100_000)
    done = subprocess.run(
        [sys.executable, "-m", "workbench.teaching.cli", "render", str(path)],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.startswith(f"workbench render: {path}: ")
    assert done.stderr.count("\n") == 1, done.stderr


# --------------------------------------------------------- good traces still load
def test_a_varied_trace_round_trips_exactly(tmp_path):
    """Ints, bools, complex, float16 with infinities, large arrays, hooks and checkpoints."""
    x = wb.tensor(np.linspace(-1.0, 1.0, 6).reshape(2, 3), requires_grad=True, name="x")
    big = wb.tensor(np.arange(200.0), requires_grad=True)
    with wb.trace() as tr:
        wb.tensor(np.array([1 + 2j, np.nan - 1j]))
        wb.tensor(np.array([np.inf, -1.0, 65504.0], dtype=np.float16)) * 1
        wb.tensor(np.array([2**62, 3], dtype=np.uint64)) + 1
        wb.tensor(np.array([True, False])) & wb.tensor(np.array([True, True]))
        x.register_hook(lambda g: g * 1.0)
        y = checkpoint(lambda t: t.sin().exp(), x, use_reentrant=False)
        (y.sum() + (big * big).mean()).backward()
    path = tr.save(tmp_path / "run.json")
    assert Trace.load(path).records == tr.records
    assert Trace.load(path, max_bytes=path.stat().st_size).records == tr.records


def test_drawing_a_loaded_trace_marks_the_recomputed_nodes_as_the_live_graph_does(tmp_path):
    x = wb.tensor(np.ones((2, 3)), requires_grad=True)
    w = wb.tensor(np.full(3, 0.5), requires_grad=True)
    with wb.trace() as tr:
        h = checkpoint(lambda t: (t * w).sin().exp(), x, use_reentrant=False)
        loss = (h * 2.0).sum()
        loss.backward()
    loaded = Trace.load(tr.save(tmp_path / "run.json"))

    def marked(graph) -> dict:
        vertices = graph.model.vertices.values()
        return {v.id: v.lines[-1] for v in vertices if RECOMPUTED in v.classes}

    live = marked(wb.viz.draw(loss))
    assert len(live) == 3  # mul, sin, exp ran again in backward
    assert marked(wb.viz.draw(loaded)) == live
    assert all(line.startswith("↻ recomputed ×1") for line in live.values())
    assert 'class="node backward recomputed' in wb.viz.draw(loaded).svg()
