"""The engine's two roads give the same gradients and publish the same events.

``backward()`` runs the speed layer (``autograd/fast.py``); the general road
(``GraphTask.run``, which the stepper drives) is the one written for reading. Every
registry sample and random programs run down both, on one graph kept with
``retain_graph=True``: first the general road, then the fast one. The leaves' grads
must be equal to the last bit and the published events equal field by field (ids
compared by the order in which each run first mentions them).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from programs import assert_same_events, random_program, sample_program
from samples import all_samples

import workbench as wb
from workbench import events
from workbench.autograd import engine
from workbench.ops import OPS

SAMPLES = [
    s for s in all_samples() if any(s.requires()) and any(OPS[op].differentiable for op in s.ops)
]


def _run(leaves, outputs, grads, fast: bool, listen: bool) -> tuple:
    """Run one backward down one road; the leaves' grads and the events it published."""
    for leaf in leaves:
        leaf.grad = None
    task = engine.make_backward_task(outputs, grads, retain_graph=True)
    if not listen:
        _run_to_end(task, fast)
        return _grads(leaves), []
    with events.collect() as got:
        _run_to_end(task, fast)
    return _grads(leaves), got.events


def _run_to_end(task, fast: bool) -> None:
    if fast:
        engine.run_to_end(task)
        return
    with wb.autograd.fast.disabled():
        engine.run_to_end(task)


def _grads(leaves) -> list:
    return [None if x.grad is None else x.grad.numpy().copy() for x in leaves]


def _assert_same_grads(general: list, fast: list) -> None:
    for i, (a, b) in enumerate(zip(general, fast)):
        assert (a is None) == (b is None), f"leaf {i}"
        if a is not None:
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b, err_msg=f"leaf {i}")


def _check_both_roads(build) -> None:
    leaves, outputs, grads = build()
    for listen in (False, True):
        general = _run(leaves, outputs, grads, fast=False, listen=listen)
        fast = _run(leaves, outputs, grads, fast=True, listen=listen)
        _assert_same_grads(general[0], fast[0])
        assert_same_events(general[1], fast[1])
    assert any(isinstance(e, events.NodeStep) for e in general[1])


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: s.name)
def test_both_roads_give_the_same_gradients_and_events(sample):
    _check_both_roads(lambda: sample_program(sample))


@pytest.mark.parametrize("seed", range(50))
def test_both_roads_agree_on_random_programs(seed):
    _check_both_roads(lambda: random_program(seed))


def test_the_comparison_sees_a_difference():
    """The event comparison is not blind: a changed gradient array is caught."""
    leaves, outputs, grads = random_program(3)
    general = _run(leaves, outputs, grads, fast=False, listen=True)[1]
    fast = _run(leaves, outputs, grads, fast=True, listen=True)[1]
    step = next(i for i, e in enumerate(fast) if isinstance(e, events.NodeStep))
    changed = dataclasses.replace(fast[step])
    changed.grads_in = tuple(None if g is None else g + 1 for g in changed.grads_in)
    with pytest.raises(AssertionError):
        assert_same_events(general, fast[:step] + [changed] + fast[step + 1 :])


def test_a_0d_sum_of_gradients_keeps_float64():
    """Two float64 gradients meeting at a 0-d value stay float64 on the fast road."""
    x = wb.tensor(0.1, dtype=wb.float64, requires_grad=True)
    z = x.clamp(min=0.0)
    (z * 1.1 + z * 1.3).backward()
    assert x.grad.dtype == np.float64
    assert x.grad.item() == 1.1 + 1.3


@pytest.mark.parametrize("way", ["tensor hook", "retain_grad", "prehook", "post hook"])
def test_a_node_with_any_hook_takes_the_general_road(way):
    """fast.run asks one question, node._hooked, for the four kinds of hooks: each way
    of adding one must set it, or the short road would skip the hook."""
    x = wb.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    assert not y.grad_fn._hooked
    seen = []
    if way == "tensor hook":
        y.register_hook(lambda g: seen.append(way))
    elif way == "retain_grad":
        y.retain_grad()
    elif way == "prehook":
        y.grad_fn.register_prehook(lambda grads: seen.append(way))
    else:
        y.grad_fn.register_hook(lambda grads_in, grads_out: seen.append(way))
    assert y.grad_fn._hooked
    y.sum().backward()
    if way == "retain_grad":
        assert y.grad.tolist() == [1.0, 1.0]
    else:
        assert seen == [way]
    assert x.grad.tolist() == [3.0, 3.0]
