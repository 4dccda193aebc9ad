"""Traces: recording, summaries, JSON round trip, refusing bad files, replay."""

from __future__ import annotations

import gc
import json

import numpy as np
import pytest

import workbench as wb
from workbench.core import events
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
    step = replay.goto(5)  # steps count from 1, as the stepper's panel counts
    assert replay.at_end and replay.next() is None and replay.step == 5
    assert step.name == "AccumulateGrad"
    assert len(replay.grads()) == 2  # both leaves have their .grad by the end
    replay.goto(4)
    assert len(replay.grads()) == 1
    with pytest.raises(IndexError, match="out of range"):
        replay.goto(6)


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


# ------------------------------------------------------ exact statistics of large arrays
def large_array() -> np.ndarray:
    """100,000 normal floats whose extremes sit where no sample of the mean looks."""
    a = np.random.default_rng(0).standard_normal(100_000).astype(np.float32)
    a[12_344], a[54_322] = -7.5, 9.25  # (even columns: the strided view keeps them)
    return a


LAYOUTS = {
    "flat": lambda a: a,
    "C order": lambda a: a.reshape(250, 400),
    "Fortran order": lambda a: np.asfortranarray(a.reshape(250, 400)),
    "transposed": lambda a: a.reshape(400, 250).T,
    "strided": lambda a: a.reshape(250, 400)[:, ::2],
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("bad", [None, np.nan, np.inf, -np.inf])
def test_large_arrays_keep_exact_min_max_and_count_every_nonfinite_entry(layout, bad):
    a = large_array()
    if bad is not None:
        a[778] = bad  # a single entry, off the sampling grid
    view = LAYOUTS[layout](a)
    stats = summarize(view)["stats"]
    finite = view[np.isfinite(view)]
    assert stats["nonfinite"] == view.size - finite.size == (0 if bad is None else 1)
    assert stats["min"] == finite.min() and stats["max"] == finite.max()
    assert stats["min"] == -7.5 and stats["max"] == 9.25
    assert stats["mean"] == pytest.approx(float(finite.mean()), abs=0.1)


def test_statistics_of_other_dtypes():
    flags = summarize(np.arange(100) % 3 == 0)["stats"]
    assert (flags["min"], flags["max"], flags["nonfinite"]) == (0.0, 1.0, 0)
    assert flags["mean"] == pytest.approx(0.34)
    ints = summarize(np.arange(-50, 50, dtype=np.int64))["stats"]
    assert (ints["min"], ints["max"]) == (-50.0, 49.0)
    waves = summarize(np.full(100, 3 + 4j))["stats"]
    assert waves["min"] == waves["max"] == 5.0  # complex arrays: statistics of |z|
    assert summarize(np.full(100, np.nan))["stats"]["nonfinite"] == 100


# ------------------------------------- one summary per array, never a stale one
def array_summaries(value):
    """What a trace should record for an array field: summaries taken right now."""
    if isinstance(value, tuple):
        return [None if v is None else summarize(v) for v in value]
    return None if value is None else summarize(value)


def traced_and_fresh(run) -> tuple[list, list]:
    """Record ``run()`` with a trace and, beside it, summarize every array when published."""
    fresh = []

    def summarize_now(event):
        fields = vars(event).items()
        fresh.append({n: array_summaries(v) for n, v in fields if n in events.ARRAY_FIELDS})

    # No garbage may die during the run: a dropped graph's SavedTensorFreed, published from
    # the collector while a subscriber handles another event, reaches the two subscribers
    # in different orders, and the lists no longer pair event by event (seen once in the
    # full suite, after earlier tests left cyclic garbage).
    gc.collect()
    gc.disable()
    try:
        with wb.trace() as tr, events.subscribe(summarize_now):
            run()
    finally:
        gc.enable()
    return tr.records, fresh


def mlp_step():
    """Two layers: matmul, broadcast bias, relu, mean squared error (a bench step, small)."""
    rng = np.random.default_rng(1)
    w1 = wb.tensor(rng.standard_normal((20, 16)).astype(np.float32), requires_grad=True)
    b1 = wb.zeros(16, requires_grad=True)
    w2 = wb.tensor(rng.standard_normal((16, 10)).astype(np.float32), requires_grad=True)
    x = wb.tensor(rng.standard_normal((8, 20)).astype(np.float32))
    y = wb.tensor(rng.standard_normal((8, 10)).astype(np.float32))
    h = (wb.matmul(x, w1) + b1).relu()
    return w1, wb.matmul(h, w2), y


def plain_backward():
    _, out, y = mlp_step()
    ((out - y) * (out - y)).mean().backward()


def hook_writes_nan_through_numpy():
    _, out, y = mlp_step()

    def poison(grad):
        grad.numpy()[3, 4] = np.nan  # bypasses the version counter

    out.register_hook(poison)
    (out * y).sum().backward()


def hook_writes_then_runs_an_identity_op():
    _, out, y = mlp_step()

    def poison_and_look(grad):
        grad.numpy()[0, 0] = -123.0  # a new minimum
        wb.ops.grad.no_grad(grad)  # an op whose output is its input's very array

    out.register_hook(poison_and_look)
    (out * y).sum().backward()


def forward_writes_between_ops():
    a = wb.tensor(np.arange(100.0)) * 2.0
    wb.ops.grad.no_grad(a)
    a.numpy()[5] = np.nan
    wb.ops.grad.no_grad(a)  # the same array again, changed


def sin_grad_then_write(orig, grad):
    (x,) = orig.args
    g = grad * x.cos()
    g[0, 0] = float("nan")  # in place, into the array the multiplication just made
    return [g]


def rule_writes_into_its_own_result():
    sin = wb.ops.registry.OPS["sin"]
    rule, sin.gradient = sin.gradient, sin_grad_then_write
    try:
        _, out, y = mlp_step()
        (out.sin() * y).sum().backward()
    finally:
        sin.gradient = rule


class ScaleInPlace(wb.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2.0

    @staticmethod
    def backward(ctx, grad):
        grad.numpy()[...] *= 2.0  # writes into the gradient it was handed
        return grad


def function_writes_into_its_gradient():
    _, out, y = mlp_step()
    (ScaleInPlace.apply(out) * y).sum().backward()


def accumulating_twice():
    _, out, y = mlp_step()
    loss = ((out - y) * (out - y)).mean()
    loss.backward(retain_graph=True)
    loss.backward()  # adds into each .grad in place


SCENARIOS = {
    "plain backward": plain_backward,
    "hook writes NaN through numpy": hook_writes_nan_through_numpy,
    "hook writes, then an op hands the array back": hook_writes_then_runs_an_identity_op,
    "forward code writes between two ops": forward_writes_between_ops,
    "rule writes into its own result": rule_writes_into_its_own_result,
    "custom Function writes into its gradient": function_writes_into_its_gradient,
    "accumulating into .grad twice": accumulating_twice,
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_every_record_shows_its_arrays_as_they_were_when_published(scenario):
    """Summaries shared between events are never stale: each equals one taken on the spot."""
    records, fresh = traced_and_fresh(SCENARIOS[scenario])
    assert len(records) == len(fresh)
    for record, now in zip(records, fresh):
        for name, summaries in now.items():
            assert record[name] == summaries, f"{record['kind']} #{record['seq']}: {name}"


def test_a_nan_written_between_two_events_shows_in_the_later_one():
    records, _ = traced_and_fresh(hook_writes_nan_through_numpy)
    steps = {}
    for record in records:  # the first step of each name
        if record["kind"] == "node_step":
            steps.setdefault(record["name"], record)
    made = steps["MulBackward0"]["grads_out"][0]  # the gradient of out, then the hook ran
    received = steps["MmBackward0"]["grads_in"][0]  # the same array, one NaN later
    assert made["shape"] == received["shape"] == [8, 10]
    assert made["stats"]["nonfinite"] == 0
    assert received["stats"]["nonfinite"] == 1


def test_a_gradient_handed_from_step_to_step_is_summarized_once(monkeypatch):
    import workbench.trace as trace_module

    summarized = []
    real = trace_module.summarize
    monkeypatch.setattr(
        trace_module, "summarize", lambda a, small: summarized.append(a) or real(a, small)
    )
    with events.collect("node_step") as steps:  # keeps the arrays alive: ids stay theirs
        records, _ = traced_and_fresh(plain_backward)
    handed_on = {id(g): g for step in steps.events for g in step.grads_out if g is not None}
    received = [g for step in steps.events for g in step.grads_in if id(g) in handed_on]
    assert received  # the same arrays, in later steps' records
    for grad in handed_on.values():
        assert sum(a is grad for a in summarized) == 1


def test_a_trace_holds_an_array_only_while_the_engine_does():
    held = []
    with wb.trace() as tr:
        _, out, y = mlp_step()

        def look(grad):  # runs once Sum and Mul have run, before out's matmul node
            held.append((dict(tr._shared.step), set(tr._shared.flowing), id(grad._data)))

        out.register_hook(look)
        (out * y).sum().backward()
        shared = tr._shared
        assert not shared.step and not shared.flowing and not shared.bound_for  # pass over
    ((step, flowing, grad),) = held
    assert step == {}  # what Sum and Mul made and did not hand on is let go
    assert flowing == {grad}  # Mul's gradient for out, on its way to out's node
