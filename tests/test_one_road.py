"""The engine's one loop does what the reference backward does, step by step.

``workbench/autograd/reference.py`` is the specification. Every registry sample and
random programs are built afresh for each run and differentiated four ways:

- by the reference, with every node it runs recorded (the node, the gradients that
  reached it, the gradients it sent);
- by ``backward()``, with nobody listening;
- by ``backward()`` while a listener collects the events;
- by the stepper's road: ``make_backward_task(...).steps()`` pulled one step at a time.

The leaves' ``.grad`` must be equal to the last bit in all four, and the engine's
steps (its NodeStep events, and the Steps the stepper pulls) must be the reference's
run: the same nodes in the same order, with the same gradients in and out. Nodes are
matched across the fresh copies by their place in creation order. Stepping and
listening must also publish the same events as each other.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from programs import assert_same_events, random_program, sample_program
from samples import all_samples

import workbench as wb
from workbench.core import events

try:
    import torch
except ImportError:
    torch = None
from workbench.autograd import entry_points, reference
from workbench.ops import OPS
from workbench.record.graph import walk

SAMPLES = [
    s for s in all_samples() if any(s.requires()) and any(OPS[op].differentiable for op in s.ops)
]


@dataclasses.dataclass
class Run:
    grads: list  # each leaf's .grad afterwards (an array, or None)
    steps: list  # (node rank, grads in, grads out) for each node that ran
    events: list  # what a listener heard


def _loss(outputs: list, grads: list):
    """One scalar whose gradient w.r.t. each output is that output's fixed gradient."""
    total = None
    for out, grad in zip(outputs, grads):
        term = (out * grad).sum().real  # complex samples: a real loss, as backward() needs
        total = term if total is None else total + term
    return total


def _arrays(grads) -> tuple:
    return tuple(None if g is None else g.detach().numpy().copy() for g in grads)


def _build(build):
    """A fresh copy of the program: its leaves, its loss, and each node's creation rank."""
    leaves, outputs, grads = build()
    assert outputs, "the program makes no output that requires grad"
    loss = _loss(outputs, grads)
    nodes = sorted(walk([loss.grad_fn]), key=lambda node: node._seq)
    return leaves, loss, {node: rank for rank, node in enumerate(nodes)}


def _leaf_grads(leaves) -> list:
    return [None if x.grad is None else x.grad.numpy() for x in leaves]


def by_reference(build, monkeypatch) -> Run:
    leaves, loss, rank = _build(build)
    steps = []
    run_node = reference.run_node

    def recorded(node, grads):
        grads_out = run_node(node, grads)
        sent = [
            g if child is not None else None
            for (child, _), g in zip(node.next_functions, grads_out)
        ]
        steps.append((rank[node], _arrays(grads), _arrays(sent)))
        return grads_out

    with monkeypatch.context() as patch:
        patch.setattr(reference, "run_node", recorded)
        reference.backward(loss)
    return Run(_leaf_grads(leaves), steps, [])


def by_backward(build, listen: bool) -> Run:
    leaves, loss, rank = _build(build)
    if not listen:
        loss.backward()
        return Run(_leaf_grads(leaves), [], [])
    by_uid = {node.uid: r for node, r in rank.items()}
    with events.collect() as heard:
        loss.backward()
    steps = [
        (by_uid[e.node], _copies(e.grads_in), _copies(e.grads_out))
        for e in heard.events
        if isinstance(e, events.NodeStep)
    ]
    return Run(_leaf_grads(leaves), steps, heard.events)


def by_stepping(build) -> Run:
    leaves, loss, rank = _build(build)
    task = entry_points.make_backward_task(loss)
    steps = []
    with events.collect() as heard:
        for step in task.steps():
            steps.append((rank[step.node], _arrays(step.grads_in), _arrays(step.grads_out)))
    return Run(_leaf_grads(leaves), steps, heard.events)


def _copies(arrays) -> tuple:
    return tuple(None if a is None else np.array(a) for a in arrays)


def _assert_same_grads(expected: list, got: list, how: str) -> None:
    assert len(expected) == len(got)
    for i, (a, b) in enumerate(zip(expected, got)):
        assert (a is None) == (b is None), f"{how}: leaf {i}: one .grad is None"
        if a is not None:
            assert a.dtype == b.dtype, f"{how}: leaf {i}: {a.dtype} vs {b.dtype}"
            np.testing.assert_array_equal(a, b, err_msg=f"{how}: leaf {i}")


def _assert_same_steps(expected: list, got: list, how: str) -> None:
    order = [rank for rank, _, _ in expected]
    assert [rank for rank, _, _ in got] == order, f"{how}: another order of nodes"
    for (rank, grads_in, grads_out), (_, got_in, got_out) in zip(expected, got):
        for what, a, b in (("in", grads_in, got_in), ("out", grads_out, got_out)):
            where = f"{how}: node {rank}, gradients {what}"
            assert len(a) == len(b), where
            for x, y in zip(a, b):
                assert (x is None) == (y is None), where
                if x is not None:
                    assert x.dtype == y.dtype, where
                    np.testing.assert_array_equal(x, y, err_msg=where)


def _check(build, monkeypatch) -> None:
    spec = by_reference(build, monkeypatch)
    assert spec.steps, "the reference ran no node"
    _assert_same_grads(spec.grads, by_backward(build, listen=False).grads, "backward()")
    listened = by_backward(build, listen=True)
    _assert_same_grads(spec.grads, listened.grads, "backward(), listened to")
    _assert_same_steps(spec.steps, listened.steps, "backward()'s NodeStep events")
    stepped = by_stepping(build)
    _assert_same_grads(spec.grads, stepped.grads, "stepped")
    _assert_same_steps(spec.steps, stepped.steps, "the stepper's Steps")
    assert_same_events(listened.events, stepped.events)


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: s.name)
def test_the_engine_runs_the_reference_on_every_sample(sample, monkeypatch):
    _check(lambda: sample_program(sample), monkeypatch)


@pytest.mark.parametrize("seed", range(100))
def test_the_engine_runs_the_reference_on_random_programs(seed, monkeypatch):
    _check(lambda: random_program(seed), monkeypatch)


def test_the_comparison_sees_a_difference(monkeypatch):
    """Neither comparison is blind: a changed gradient, or two nodes swapped, is caught."""
    spec = by_reference(lambda: random_program(3), monkeypatch)
    changed = list(spec.steps)
    rank, grads_in, grads_out = changed[1]
    changed[1] = (rank, tuple(None if g is None else g + 1 for g in grads_in), grads_out)
    with pytest.raises(AssertionError):
        _assert_same_steps(spec.steps, changed, "changed")
    swapped = [spec.steps[1], spec.steps[0], *spec.steps[2:]]
    with pytest.raises(AssertionError, match="another order"):
        _assert_same_steps(spec.steps, swapped, "swapped")
    listened = by_backward(lambda: random_program(3), listen=True).events
    step = next(i for i, e in enumerate(listened) if isinstance(e, events.NodeStep))
    event = dataclasses.replace(listened[step])
    event.grads_in = tuple(None if g is None else g + 1 for g in event.grads_in)
    with pytest.raises(AssertionError):
        assert_same_events(listened, listened[:step] + [event] + listened[step + 1 :])


def test_a_leaf_runs_as_soon_as_it_is_ready_as_in_pytorch():
    """PyTorch gives AccumulateGrad the highest priority: with a leaf node made earlier
    (kept alive by another graph), it runs before an op node recorded later."""
    x = wb.tensor([1.0, 2.0], requires_grad=True)
    c = wb.tensor([0.5, -1.0], requires_grad=True)
    keep = (x * 3).sum()  # noqa: F841  (keeps x's AccumulateGrad alive, made early)
    loss = (x * c.exp()).sum()
    names = []
    with events.collect() as heard:
        loss.backward()
    for e in heard.events:
        if isinstance(e, events.NodeStep):
            names.append(e.name if e.leaf is None else f"leaf {'x' if e.leaf == x.uid else 'c'}")
    assert names == ["SumBackward0", "MulBackward0", "leaf x", "ExpBackward0", "leaf c"]
    if torch is not None:
        assert names == _torch_order()


def _torch_order() -> list:
    """The same program in PyTorch: the order its nodes run in (seen by pre-hooks)."""
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    c = torch.tensor([0.5, -1.0], requires_grad=True)
    keep = (x * 3).sum()  # noqa: F841
    loss = (x * c.exp()).sum()
    ran = []
    for node in walk([loss.grad_fn]):
        name = type(node).__name__
        if name == "AccumulateGrad":
            name = "leaf x" if node.variable is x else "leaf c"
        node.register_prehook(lambda grads, name=name: ran.append(name))
    loss.backward()
    return ran


@pytest.mark.parametrize("way", ["tensor hook", "retain_grad", "prehook", "post hook"])
def test_a_node_with_any_hook_is_marked(way):
    """The loop looks for hooks only at nodes marked ``_hooked``: every way of adding one
    must mark the node, or the hook would be skipped."""
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
    assert seen == ([] if way == "retain_grad" else [way])
    assert x.grad.tolist() == [3.0, 3.0]


def test_a_0d_sum_of_gradients_keeps_float64():
    """Two float64 gradients meeting at a 0-d value stay a float64 array."""
    x = wb.tensor(0.1, dtype=wb.float64, requires_grad=True)
    z = x.clamp(min=0.0)
    (z * 1.1 + z * 1.3).backward()
    assert x.grad.dtype == np.float64
    assert x.grad.item() == 1.1 + 1.3
