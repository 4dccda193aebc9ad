"""Traces: recording, summaries, JSON round trip, refusing bad files, replay."""

from __future__ import annotations

import json

import numpy as np
import pytest

import workbench as wb
from workbench import events
from workbench.trace import SCHEMA_VERSION, Trace, TraceFormatError, summarize, summary_array


def recorded(small: int = 64) -> Trace:
    events.reset_ids()
    x = wb.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    w = wb.tensor([1.0, 2.0], requires_grad=True)
    with wb.trace(small=small) as tr:
        (x * w).sigmoid().sum().backward()
    return tr


def test_trace_records_every_event_in_order():
    tr = recorded()
    assert tr.kinds()[0] == "op_recorded"
    assert tr.kinds()[-1] == "backward_finished"
    assert [r["seq"] for r in tr] == sorted(r["seq"] for r in tr)
    assert not events.listening  # the with block unsubscribed


def test_small_arrays_keep_values_large_ones_statistics():
    small = summarize(np.array([1.0, np.nan, np.inf]))
    assert small == {"shape": [3], "dtype": "float64", "values": [1.0, "nan", "inf"]}
    np.testing.assert_array_equal(summary_array(small), [1.0, np.nan, np.inf])
    big = summarize(np.arange(100.0).reshape(10, 10))
    assert big["shape"] == [10, 10] and "values" not in big
    assert big["stats"]["min"] == 0.0 and big["stats"]["max"] == 99.0
    assert big["stats"]["mean"] == pytest.approx(49.5)
    assert big["stats"]["nonfinite"] == 0
    assert summary_array(big) is None


def test_trace_holds_no_live_arrays():
    tr = recorded(small=2)
    text = json.dumps(tr.to_dict(), allow_nan=False)  # would fail on an ndarray or NaN
    assert "stats" in text
    step = tr.backward_steps[1]
    assert step.name == "SigmoidBackward0"
    assert step.grads_out[0]["shape"] == [2, 2] and "stats" in step.grads_out[0]


def test_json_round_trip(tmp_path):
    tr = recorded()
    path = tr.save(tmp_path / "run.json")
    back = Trace.load(path)
    assert back.records == tr.records
    data = json.loads(path.read_text())
    assert data["schema_version"] == SCHEMA_VERSION
    assert data["format"] == "autodiff-workbench-trace"


def good_dict() -> dict:
    return json.loads(recorded().to_json())


def corrupt(change):
    data = good_dict()
    change(data)
    return data


BAD = {
    "not an object": ([1, 2, 3], "expected a JSON object"),
    "no format": (corrupt(lambda d: d.pop("format")), "'format'"),
    "no version": (corrupt(lambda d: d.pop("schema_version")), "schema_version"),
    "future version": (corrupt(lambda d: d.update(schema_version=99)), "newer than"),
    "events not a list": (corrupt(lambda d: d.update(events={})), "'events' should be a list"),
    "unknown kind": (
        corrupt(lambda d: d["events"][0].update(kind="rm -rf")),
        "unknown kind 'rm -rf'",
    ),
    "missing field": (corrupt(lambda d: d["events"][0].pop("op")), "missing field 'op'"),
    "wrong type": (corrupt(lambda d: d["events"][0].update(op=3)), "field 'op': expected"),
    "extra field": (
        corrupt(lambda d: d["events"][0].update(__reduce__="os.system")),
        "unknown field",
    ),
    "bad array dtype": (
        corrupt(lambda d: d["events"][0]["value"].update(dtype="object")),
        "not a numeric dtype",
    ),
    "values do not fit shape": (
        corrupt(lambda d: d["events"][0]["value"].update(shape=[7])),
        "do not match shape",
    ),
    "array as a string": (
        corrupt(lambda d: d["events"][0].update(value="np.zeros(10**12)")),
        "expected an array summary",
    ),
    "seq missing": (corrupt(lambda d: d["events"][0].pop("seq")), "'seq'"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_malformed_traces_are_refused_with_a_reason(case):
    data, message = BAD[case]
    with pytest.raises(TraceFormatError, match=message):
        Trace.from_dict(data)


def test_not_json_and_binary_files_are_refused(tmp_path):
    with pytest.raises(TraceFormatError, match="not valid JSON"):
        Trace.from_json("{'python': 'dict'}")
    path = tmp_path / "pickle.json"
    path.write_bytes(b"\x80\x04\x95\x00\xff")
    with pytest.raises(TraceFormatError, match="pickle.json: not a trace"):
        Trace.load(path)


def test_good_trace_still_loads_after_the_bad_ones():
    assert len(Trace.from_dict(good_dict())) == len(recorded())


def test_backward_steps_group_what_happened_in_each_step():
    tr = recorded()
    steps = tr.backward_steps
    assert [s.name for s in steps] == [
        "SumBackward0",
        "SigmoidBackward0",
        "MulBackward0",
        "AccumulateGrad",
        "AccumulateGrad",
    ]
    mul = steps[2]
    (collapse,) = mul.of_kind("collapse_sum")
    assert collapse["axes"] == [0] and collapse["input_shape"] == [2, 2]
    assert [r["kind"] for r in steps[3].events] == ["grad_accumulated"]


def test_replay_moves_forwards_and_backwards():
    replay = recorded().replay()
    assert len(replay) == 5 and replay.at_start and replay.current is None
    assert replay.next().name == "SumBackward0"
    assert replay.next().name == "SigmoidBackward0"
    assert replay.done == [replay.steps[0].node]
    assert replay.prev().name == "SumBackward0"
    assert replay.prev() is None and replay.at_start
    step = replay.goto(4)
    assert replay.at_end and replay.next() is None and replay.position == 4
    assert step.name == "AccumulateGrad"
    assert len(replay.grads()) == 2  # both leaves have their .grad by the end
    replay.goto(3)
    assert len(replay.grads()) == 1
    with pytest.raises(IndexError, match="out of range"):
        replay.goto(5)


def test_replay_needs_a_backward_pass():
    with wb.trace() as tr:
        wb.tensor([1.0], requires_grad=True) * 2
    assert tr.passes == [] and tr.backward_steps == []
    with pytest.raises(ValueError, match="no backward pass"):
        tr.replay()


def test_two_backward_passes_are_told_apart():
    x = wb.tensor([1.0, 2.0], requires_grad=True)
    with wb.trace() as tr:
        (x * 2).sum().backward()
        (x * x * x).sum().backward()
    first, second = tr.passes
    assert len(first.steps) == 3 and len(second.steps) == 4
    assert tr.replay(0).steps == first.steps
    assert tr.backward_steps == second.steps


def test_wb_trace_is_both_the_recorder_and_the_module():
    import workbench.trace as module

    assert module is wb.trace
    assert isinstance(wb.trace(), Trace) and isinstance(module.trace(), Trace)
    assert module.Trace is Trace is wb.Trace


def test_each_record_summarizes_arrays_as_they_were_at_that_moment():
    """A hook that writes in place changes what later records show, not earlier ones."""
    x = wb.ones(100, requires_grad=True)

    def double_in_place(p):
        p.grad.mul_(2.0)

    x.register_post_accumulate_grad_hook(double_in_place)
    with wb.trace() as tr:
        (x * 3.0).sum().backward()
    (accumulated,) = tr.of_kind("grad_accumulated")
    assert accumulated["after"]["stats"]["max"] == 3.0  # before the hook ran
    step = tr.backward_steps[-1]
    assert step.name == "AccumulateGrad"
    # the step's record comes after the hook: its grads_in array was doubled in place
    assert step.grads_in[0]["stats"]["max"] == 6.0
    assert x.grad.numpy().max() == 6.0
