"""Saved memory is computed when asked, and counted once a peak is asked for (issue 40, point 4).

``wb.autograd.saved_memory().current`` walks the savers alive; the counters behind the
peak start at ``reset_peak_saved_memory()`` (or when an event listener needs running
totals). Each test starts from a fresh book, so that it sees the engine before anything
started the counters, whatever ran earlier in the process.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

import workbench as wb
from workbench.core import events
from workbench.record import collector, memory
from workbench.utils.checkpoint import checkpoint

F32 = 4  # bytes per float32 element


@pytest.fixture(autouse=True)
def fresh_book(monkeypatch):
    """A book with no counters running, blind to the savers alive before the test: the
    graphs that earlier tests in this process still keep (kept alive here until the test
    ends, so that no new saver takes one of their ids)."""
    gc.unfreeze()
    gc.collect()
    earlier = memory.savers_holding()
    ids = {id(saver) for saver in earlier}
    find = memory.savers_holding
    monkeypatch.setattr(memory, "savers_holding", lambda: [s for s in find() if id(s) not in ids])
    book = memory._Book()
    monkeypatch.setattr(memory, "SavedMemory", book)
    yield book
    del earlier


def current() -> int:
    return wb.autograd.saved_memory().current


def test_recording_and_freeing_graphs_counts_nothing_until_a_peak_is_asked_for(fresh_book):
    x = wb.randn(1000, requires_grad=True)
    y = x.sin().exp()  # sin saves x, exp its output
    assert current() == 2 * 1000 * F32  # computed from the savers alive
    y.sum().backward()
    del y
    assert current() == 0
    assert not fresh_book.counting
    assert (fresh_book.current, fresh_book.held, fresh_book.counted) == (0, {}, {})


def test_the_computed_figure_counts_a_shared_array_once_and_forgets_dropped_graphs():
    x = wb.randn(250, requires_grad=True)  # 1000 bytes
    y = x.tanh()  # saves its output y
    z = y * x  # saves y again, and x
    assert current() == 2000
    w = (x * 2).sin()  # another graph: sin saves its input
    assert current() == 3000
    del w  # dropped without backward
    assert current() == 2000
    z.sum().backward()
    assert current() == 0


def test_the_computed_figure_sees_checkpoint_inputs_handles_and_custom_functions():
    x = wb.randn(1000, requires_grad=True)

    def chain(t):
        return t.sin().sin()

    y = checkpoint(chain, x, use_reentrant=False)
    assert current() == 1000 * F32  # the checkpoint's input only: the handles hold nothing

    class Exp(wb.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            out = t.exp()
            ctx.save_for_backward(out)  # an output: kept as its array
            return out

        @staticmethod
        def backward(ctx, g):
            return g * ctx.saved_tensors[0]

    e = Exp.apply(x)
    assert current() == 2 * 1000 * F32  # x, and e
    (y.sum() + e.sum()).backward()
    assert current() == 0


def test_a_peak_measured_from_a_reset_counts_what_was_held_before_it(fresh_book):
    x = wb.randn(1000, requires_grad=True)
    before = x.sin().sin()  # recorded before anything counts: 8000 bytes
    assert not fresh_book.counting
    wb.autograd.reset_peak_saved_memory()
    assert wb.autograd.saved_memory() == (8000, 8000)
    before.sum().backward()  # frees what was held before the reset: the counter goes down
    del before
    assert wb.autograd.saved_memory() == (0, 8000)
    after = x.sin()  # 4000 bytes: below the peak
    assert wb.autograd.saved_memory() == (4000, 8000)
    wb.autograd.reset_peak_saved_memory()
    after2 = after.exp() * after  # exp saves its output; mul saves both
    assert wb.autograd.saved_memory() == (12000, 12000)
    del after2
    assert wb.autograd.saved_memory() == (4000, 12000)
    del after
    assert wb.autograd.saved_memory() == (0, 12000)


def test_the_counters_and_the_computed_figure_agree_step_by_step(fresh_book):
    rng = np.random.default_rng(0)
    wb.autograd.reset_peak_saved_memory()
    leaves = [wb.tensor(rng.standard_normal(64 * (i + 1)), requires_grad=True) for i in range(3)]
    alive = []
    for step in range(40):
        choice = rng.integers(4)
        if choice == 0 or not alive:
            t = leaves[rng.integers(3)]
            alive.append(t.tanh() * t)
        elif choice == 1:
            alive.append(alive[rng.integers(len(alive))].exp())
        elif choice == 2:
            alive.pop(rng.integers(len(alive))).sum().backward(retain_graph=True)
        else:
            alive.pop(rng.integers(len(alive)))
        assert fresh_book.current == memory.held_now(), step


def test_a_listener_starts_the_counters_and_its_totals_count_what_was_held_before(fresh_book):
    x = wb.randn(100, requires_grad=True)
    earlier = x.sin()  # 400 bytes, recorded before anyone listened
    with events.collect("saved_tensor_packed", "saved_tensor_freed") as got:
        y = x.exp()  # saves its output: 400 more
        y.sum().backward()
    assert [(e.kind, e.nbytes, e.total_bytes) for e in got.events] == [
        ("saved_tensor_packed", 400, 800),
        ("saved_tensor_freed", 400, 400),
    ]
    del earlier
    assert current() == 0


def test_a_dropped_graph_is_heard_of_when_counted():
    x = wb.randn(100, requires_grad=True)
    with events.collect("saved_tensor_freed") as got:
        y = x.sin()
        del y
    assert [(e.slot, e.nbytes, e.total_bytes, e.tensor) for e in got.events] == [
        ("dropped", 400, 0, x.uid)
    ]


def test_the_bytes_of_a_graph_frozen_out_of_the_collectors_sight_are_found(fresh_book):
    """A long graph is hidden from the cyclic collector while it is recorded (collector.py);
    its saved tensors are found all the same, among the objects the collector tracks."""
    x = wb.randn(4, requires_grad=True)
    y, ops = x, collector.FREEZE_EVERY + 10
    for _ in range(ops):
        y = y.sin()  # saves its input: a new array of 4 floats each time
    assert gc.get_freeze_count() > 0  # (what this test is about: a frozen graph)
    assert current() == ops * 4 * F32
    del y
    assert current() == 0
