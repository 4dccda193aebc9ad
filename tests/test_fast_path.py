"""Op recording's shortcut (``fast.record_node``) builds the node ``OpNode(...)`` builds.

Every registry sample and random programs are recorded twice: once with the speed
layer on, once inside ``wb.autograd.fast.disabled()`` (the plain ``OpNode``
constructor). The two graphs must match node for node (kind, op, attrs, edges,
needs_input_grad, input shapes and dtypes, what was saved), the events published
while recording must be equal, and so must the gradients.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from programs import assert_same_events, canonical, random_program, sample_program
from samples import all_samples

import workbench as wb
from workbench import events
from workbench.autograd.graph import NOT_SAVED, OpNode, SavedTensor
from workbench.ops import OPS

SAMPLES = [
    s for s in all_samples() if any(s.requires()) and any(OPS[op].differentiable for op in s.ops)
]


def _record(build, fast: bool) -> tuple:
    """Build the program with the speed layer on or off; its parts and the events.

    Saved-memory totals in the events count from what was held before the build."""
    before = wb.autograd.saved_memory().current
    with events.collect() as got:
        if fast:
            leaves, outputs, grads = build()
        else:
            with wb.autograd.fast.disabled():
                leaves, outputs, grads = build()
    seen = [
        dataclasses.replace(e, total_bytes=e.total_bytes - before)
        if hasattr(e, "total_bytes")
        else e
        for e in got.events
    ]
    return leaves, outputs, grads, seen


def _nodes(outputs: list) -> list:
    """Every node below the outputs, in a fixed order (a walk with a stack)."""
    order, seen = [], set()
    stack = [o.grad_fn for o in reversed(outputs) if o.grad_fn is not None]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        order.append(node)
        stack.extend(child for child, _ in reversed(node.next_functions))
    return order


def _slot_kind(slot) -> str | tuple:
    """What a slot holds; for a saved tensor, every field ``fast.save`` fills in."""
    if slot is NOT_SAVED:
        return "not saved"
    if type(slot) is SavedTensor:
        return (
            "saved",
            slot.tensor is None,
            None if slot.array is None else (slot.array.shape, slot.array.dtype),
            slot.held is not None,
            slot.version,
            slot.output_nr,
            slot.unpack_hook,
            slot.added,
        )
    return repr(slot)


def _describe(node, index: dict, ids: dict) -> dict:
    """What a node holds, with nodes named by their place in the walk."""
    described = {
        "kind": type(node).__name__,
        "name": node.name(),
        "edges": [(None if c is None else index[c], nr) for c, nr in node.next_functions],
    }
    if isinstance(node, OpNode):
        described.update(
            op=node.op.name,
            attrs=repr(dict(node.attrs)),
            needs=node.needs_input_grad,
            meta=node.input_meta,
            inputs=[_slot_kind(s) for s in node.inputs],
            saved_out=_slot_kind(node.saved_out),
            metadata=canonical(dict(node.metadata), ids),
        )
    return described


def _check_same_recording(build) -> None:
    plain = _record(build, fast=False)
    fast = _record(build, fast=True)
    assert_same_events(plain[3], fast[3])
    plain_nodes, fast_nodes = _nodes(plain[1]), _nodes(fast[1])
    assert len(plain_nodes) == len(fast_nodes)
    plain_index = {n: i for i, n in enumerate(plain_nodes)}
    fast_index = {n: i for i, n in enumerate(fast_nodes)}
    plain_ids, fast_ids = {}, {}  # checkpoint ids in metadata, by order of mention
    for i, (a, b) in enumerate(zip(plain_nodes, fast_nodes)):
        assert _describe(a, plain_index, plain_ids) == _describe(b, fast_index, fast_ids), i
    ranks = [sorted(nodes, key=lambda n: n._seq) for nodes in (plain_nodes, fast_nodes)]
    assert [plain_index[n] for n in ranks[0]] == [fast_index[n] for n in ranks[1]]
    # backward frees what was saved (fast.release, or OpNode.release): the same bytes
    freed = []
    for road, (_, outputs, grads) in (("plain", plain[:3]), ("fast", fast[:3])):
        before = wb.autograd.saved_memory().current
        if road == "plain":
            with wb.autograd.fast.disabled():
                wb.autograd.backward(outputs, grads)
        else:
            wb.autograd.backward(outputs, grads)
        freed.append(before - wb.autograd.saved_memory().current)
    assert freed[0] == freed[1]
    freed_slots = [
        [_slot_kind(s) for n in nodes if isinstance(n, OpNode) for s in (*n.inputs, n.saved_out)]
        for nodes in (plain_nodes, fast_nodes)
    ]
    assert freed_slots[0] == freed_slots[1]
    for x, y in zip(plain[0], fast[0]):
        assert (x.grad is None) == (y.grad is None)
        if x.grad is not None:
            np.testing.assert_array_equal(x.grad.numpy(), y.grad.numpy())


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: s.name)
def test_the_fast_recorder_builds_the_plain_node(sample):
    _check_same_recording(lambda: sample_program(sample))


@pytest.mark.parametrize("seed", range(30))
def test_the_fast_recorder_builds_the_plain_node_in_random_programs(seed):
    _check_same_recording(lambda: random_program(seed))


class _Halves(wb.autograd.Function):
    """Two outputs: the second output's edges carry output_nr 1."""

    @staticmethod
    def forward(ctx, x):
        return x * 0.5, x * 0.25

    @staticmethod
    def backward(ctx, grad_a, grad_b):
        return grad_a * 0.5 + grad_b * 0.25


def test_an_edge_to_a_second_output_keeps_its_number():
    def build():
        x = wb.tensor([1.0, 2.0], requires_grad=True)
        a, b = _Halves.apply(x)
        return [x], [(b * b).sum() + a.sum()], [wb.tensor(1.0, dtype=wb.float64)]

    _check_same_recording(build)
    _, outputs, _, _ = _record(build, fast=True)
    mul = outputs[0].grad_fn.next_functions[0][0].next_functions[0][0]
    assert mul.next_functions[0][1] == 1


@pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")
def test_recording_inside_a_name_scope_and_in_anomaly_mode():
    def build():
        x = wb.tensor([1.0, 2.0], requires_grad=True)
        with wb.name_scope("block"), wb.autograd.detect_anomaly():
            y = (x * x).sigmoid()
        return [x], [y], [wb.ones(2)]

    _check_same_recording(build)
    for fast in (False, True):
        _, outputs, _, _ = _record(build, fast)
        node = outputs[0].grad_fn
        assert node.metadata["scope"] == ("block",)
        assert node._forward_stack


def test_the_switch_turns_the_speed_layer_off_and_back_on():
    assert wb.autograd.fast.is_enabled()
    with wb.autograd.fast.disabled():
        assert not wb.autograd.fast.is_enabled()
    assert wb.autograd.fast.is_enabled()
    wb.autograd.fast.set_enabled(False)
    try:
        assert not wb.autograd.fast.is_enabled()
    finally:
        wb.autograd.fast.set_enabled(True)
