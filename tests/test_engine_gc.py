"""backward() pauses Python's cyclic garbage collector while it runs, and restores it;
recording a big graph keeps it out of the collector's walks (autograd/collector.py)."""

from __future__ import annotations

import gc

import pytest

import workbench as wb
from workbench.record.collector import BIG_GRAPH, FREEZE_EVERY


def _big_loss(hook):
    """A chain of BIG_GRAPH nodes whose loss calls ``hook`` as backward starts."""
    x, loss = _chain(BIG_GRAPH)
    loss.register_hook(hook)
    return x, loss


@pytest.mark.parametrize("enabled", [True, False])
def test_backward_through_a_big_graph_pauses_the_collector_and_restores_it(enabled):
    seen = []
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        _, y = _big_loss(lambda grad: seen.append(gc.isenabled()))
        y.backward()
        assert seen == [False]  # paused during the pass
        assert gc.isenabled() is enabled  # and back as it was after
    finally:
        gc.enable() if was else gc.disable()


def test_a_small_graph_leaves_the_collector_alone():
    seen = []
    x = wb.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 3.0).sum()
    y.register_hook(lambda grad: seen.append(gc.isenabled()))
    y.backward()
    assert seen == [True]


def test_the_collector_is_restored_when_backward_raises():
    _, y = _big_loss(lambda grad: 1 / 0)
    assert gc.isenabled()
    with pytest.raises(ZeroDivisionError):
        y.backward()
    assert gc.isenabled()


def test_grad_pauses_too_and_a_stepped_pass_resumes_it_between_steps():
    seen = []
    x, y = _big_loss(lambda grad: seen.append(gc.isenabled()))
    wb.autograd.grad(y, x, retain_graph=True)
    task = wb.autograd.make_backward_task(y)
    between = [gc.isenabled() for _ in task.steps()]  # a widget between two steps
    assert seen == [False, False]  # while a node runs, stepped or not
    assert all(between) and len(between) == BIG_GRAPH + 2  # the learner's code: it is on
    assert gc.isenabled()


def test_overlapping_passes_share_one_pause():
    """Two passes (two threads) that overlap: the collector stays off until both end.

    Each pass once checked ``gc.isenabled()`` and then called ``gc.disable()`` on its
    own: a pass that started while another had paused the collector saw it off, and
    never turned it back on, so overlapping passes could leave it off for good.
    """
    from workbench.record import collector

    assert gc.isenabled()
    collector.pause()
    collector.pause()  # the second starts while the first has the collector paused
    collector.resume()
    assert not gc.isenabled()  # the second pass is still running
    collector.resume()
    assert gc.isenabled()  # the last pass to end restores it


def _chain(n: int):
    x = wb.tensor([1.0], requires_grad=True)
    y = x
    for _ in range(n):
        y = y * 1.0
    return x, y.sum()


def test_recording_a_big_graph_freezes_it_and_backward_unfreezes():
    """The collector does not walk a growing graph; after backward it sees all again."""
    gc.unfreeze()
    x, loss = _chain(FREEZE_EVERY + 1)  # crosses at least one freeze point
    assert gc.get_freeze_count() > 0
    loss.backward()
    assert gc.get_freeze_count() == 0
    assert x.grad.item() == 1.0


def test_cyclic_garbage_is_collected_before_a_freeze():
    """Young reference cycles are freed before the freeze, not frozen with the graph."""
    import weakref

    class Cycle:
        pass

    gc.unfreeze()
    cycle = Cycle()
    cycle.me = cycle
    dead = weakref.ref(cycle)
    del cycle
    x, loss = _chain(FREEZE_EVERY + 1)
    assert gc.get_freeze_count() > 0
    assert dead() is None
    loss.backward()
    assert gc.get_freeze_count() == 0
