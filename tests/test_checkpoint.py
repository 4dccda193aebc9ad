"""Activation checkpointing (issue 6): same gradients, less saved memory, recomputation you can see.

Covers ``wb.utils.checkpoint`` (REFERENCE D17.131-138), the TVM markers
``start_checkpoint``/``end_checkpoint`` (B1, D17.139) and ``wb.autograd.saved_memory``.
"""

from __future__ import annotations

import gc
import warnings

import numpy as np
import pytest

import workbench as wb
from workbench.core import events, state
from workbench.ops.markers import end_checkpoint, start_checkpoint
from workbench.utils.checkpoint import checkpoint, checkpoint_sequential

F32 = 4  # bytes per float32 element


@pytest.fixture(autouse=True)
def _no_stage_left_open():
    """A failing marker test must not leave its stage (and hooks) open for the next test."""
    yield
    left = wb.autograd.recompute.abandon_open_stage()
    assert left is None, "a test left a start_checkpoint stage open"
    assert not state.saved_hooks.stack


@pytest.fixture(autouse=True)
def _no_garbage_from_earlier_tests():
    """Saved-memory counts must not move when a collection frees an earlier test's
    cyclic garbage mid-test: free it all first (frozen objects included)."""
    gc.unfreeze()
    gc.collect()


def held() -> int:
    return wb.autograd.saved_memory().current


def grads(*tensors) -> list:
    """Copies of the tensors' .grad arrays; clears them for the next run."""
    out = []
    for t in tensors:
        out.append(None if t.grad is None else t.grad.numpy().copy())
        t.grad = None
    return out


def assert_same(a: list, b: list) -> None:
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def dropout(x, p=0.5):
    """nn.functional.dropout: its mask comes from wb's generator, so it follows the RNG state."""
    return wb.nn.functional.dropout(x, p)


def factory_dropout(x, p=0.5):
    """Dropout written with a factory mask and a multiply (a mask the graph sees as a leaf)."""
    keep = wb.rand_like(x) >= p
    return x * keep.float() / (1 - p)


@pytest.fixture
def params():
    return wb.randn(6, 6, requires_grad=True), wb.randn(6, requires_grad=True)


def block(x, w, b):
    return (x @ w + b).tanh().sin()


# ---------------------------------------------------------------- checkpoint(fn)
def test_gradients_equal_and_fn_runs_once_forward_once_backward(params):  # D17.131
    w, b = params
    x = wb.randn(3, 6, requires_grad=True)
    calls = []

    def fn(x):
        calls.append(wb.is_grad_enabled())
        return block(x, w, b)

    fn(x).pow(2).sum().backward()
    plain = grads(x, w, b)
    calls.clear()
    y = checkpoint(fn, x, use_reentrant=False)
    assert len(calls) == 1
    y.pow(2).sum().backward()
    assert calls == [True, True]  # once in forward, once in backward with grad enabled
    assert_same(grads(x, w, b), plain)


def test_omitting_use_reentrant_warns():  # D17.132
    x = wb.randn(3, requires_grad=True)
    with pytest.warns(UserWarning, match="the use_reentrant parameter should be passed explicitly"):
        checkpoint(lambda t: t.sin(), x)
    with pytest.warns(UserWarning, match="the use_reentrant parameter should be passed explicitly"):
        checkpoint_sequential([wb.sin, wb.cos], 2, x)


@pytest.mark.parametrize("drop", [dropout, factory_dropout])
@pytest.mark.parametrize("use_reentrant", [False, True])
def test_dropout_mask_is_recomputed_identically(use_reentrant, drop):  # D17.133
    x = wb.ones(2000, requires_grad=True)
    y = checkpoint(drop, x, use_reentrant=use_reentrant)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), (y.detach().numpy() != 0) * 2.0)


def test_without_preserved_rng_state_the_recomputed_mask_differs():  # D17.133
    x = wb.ones(2000, requires_grad=True)
    y = checkpoint(dropout, x, use_reentrant=False, preserve_rng_state=False)
    y.sum().backward()
    assert not np.array_equal(x.grad.numpy(), (y.detach().numpy() != 0) * 2.0)


def test_dropout_network_gradients_equal_plain(params):
    w, b = params
    x = wb.randn(4, 6)

    def fn(h):
        return dropout(block(h, w, b))

    wb.manual_seed(3)
    fn(x).sum().backward()
    plain = grads(w, b)
    wb.manual_seed(3)
    checkpoint(fn, x, use_reentrant=False).sum().backward()
    assert_same(grads(w, b), plain)


def test_reentrant_is_incompatible_with_grad_and_backward_inputs():  # D17.134
    x = wb.randn(3, requires_grad=True)
    y = checkpoint(lambda t: t.exp(), x, use_reentrant=True).sum()
    with pytest.raises(RuntimeError, match=r"incompatible with \.grad\(\) or passing an `inputs`"):
        wb.autograd.grad(y, x, retain_graph=True)
    with pytest.raises(RuntimeError, match="use_reentrant=True, torch.utils.checkpoint"):
        y.backward(inputs=[x])


def test_reentrant_gradients_equal_plain(params):
    w, b = params
    x = wb.randn(3, 6, requires_grad=True)
    block(x, w, b).sum().backward()
    plain = grads(x, w, b)
    checkpoint(block, x, w, b, use_reentrant=True).sum().backward()
    assert_same(grads(x, w, b), plain)


def test_reentrant_without_inputs_requiring_grad_warns_and_returns_no_graph(params):  # D17.135
    w, b = params
    x = wb.randn(3, 6)
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        y = checkpoint(lambda t: block(t, w, b), x, use_reentrant=True)
    assert not y.requires_grad


def test_non_reentrant_gives_closure_parameters_gradients(params):  # D17.135
    w, b = params
    x = wb.randn(3, 6)
    block(x, w, b).sum().backward()
    plain = grads(w, b)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning without use_reentrant=True
        y = checkpoint(lambda t: block(t, w, b), x, use_reentrant=False)
    y.sum().backward()
    assert_same(grads(w, b), plain)


def test_recomputation_with_other_shapes_is_detected():  # D17.136
    calls = []

    def fn(x):
        calls.append(1)
        h = x * 2
        return h.sin() if len(calls) == 1 else h[:2].sin()

    x = wb.randn(4, requires_grad=True)
    y = checkpoint(fn, x, use_reentrant=False)
    with pytest.raises(RuntimeError, match="Recomputed values for the following tensors have"):
        y.sum().backward()


def test_recomputation_saving_fewer_tensors_is_detected():
    calls = []

    def fn(x):
        calls.append(1)
        return x.sin().cos() if len(calls) == 1 else x * 2

    x = wb.randn(4, requires_grad=True)
    y = checkpoint(fn, x, use_reentrant=False)
    with pytest.raises(RuntimeError, match="A different number of tensors was saved"):
        y.sum().backward()


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_checkpoint_sequential_matches_plain(use_reentrant):  # D17.137
    ws = [wb.randn(5, 5, requires_grad=True) for _ in range(4)]
    functions = [lambda h, w=w: (h @ w).tanh() for w in ws]
    x = wb.randn(2, 5, requires_grad=True)
    h = x
    for f in functions:
        h = f(h)
    h.sum().backward()
    plain = grads(x, *ws)
    out = checkpoint_sequential(functions, 2, x, use_reentrant=use_reentrant)
    out.sum().backward()
    assert_same(grads(x, *ws), plain)


def test_checkpoint_sequential_takes_a_module_with_children():
    class Chain:
        def __init__(self, layers):
            self.layers = layers

        def children(self):
            return iter(self.layers)

    x = wb.randn(2, 3, requires_grad=True)
    out = checkpoint_sequential(Chain([wb.sin, wb.exp, wb.tanh]), 3, x, use_reentrant=False)
    out.sum().backward()
    got = grads(x)
    x.sin().exp().tanh().sum().backward()
    assert_same(got, grads(x))


def test_hook_on_parameter_used_inside_and_outside_fires_once(params):  # D17.138
    w, _ = params
    fired = []
    w.register_hook(lambda g: fired.append(g.numpy().copy()))
    x = wb.randn(2, 6, requires_grad=True)
    (checkpoint(lambda t: (t @ w).sin(), x, use_reentrant=False) @ w).sum().backward()
    assert len(fired) == 1
    np.testing.assert_array_equal(fired[0], w.grad.numpy())
    got = grads(x, w)
    ((x @ w).sin() @ w).sum().backward()
    assert_same(got, grads(x, w))


def test_nested_checkpoints(params):
    w, b = params
    x = wb.randn(3, 6, requires_grad=True)
    calls = {"outer": 0, "inner": 0}

    def inner(h):
        calls["inner"] += 1
        return block(h, w, b)

    def outer(h):
        calls["outer"] += 1
        h = (h * 2).cos()
        return checkpoint(inner, h, use_reentrant=False).exp()

    outer(x).sum().backward()
    plain = grads(x, w, b)
    calls.update(outer=0, inner=0)
    checkpoint(outer, x, use_reentrant=False).sum().backward()
    assert_same(grads(x, w, b), plain)
    # outer: forward + recompute; inner: forward, inside the outer recompute, own recompute
    assert calls == {"outer": 2, "inner": 3}


def test_autograd_grad_and_keyword_arguments(params):
    w, b = params
    x = wb.randn(3, 6, requires_grad=True)
    expected = wb.autograd.grad(block(x, w, b).sum(), [x, w])
    y = checkpoint(block, x, w=w, b=b, use_reentrant=False)
    got = wb.autograd.grad(y.sum(), [x, w])
    for a, e in zip(got, expected):
        np.testing.assert_array_equal(a.numpy(), e.numpy())


def test_reentrant_rejects_keyword_arguments(params):
    w, b = params
    with pytest.raises(ValueError, match="Unexpected keyword arguments: w,b"):
        checkpoint(block, wb.randn(2, 6), w=w, b=b, use_reentrant=True)


def test_second_order_gradients_through_a_checkpoint():
    x = wb.randn(5, requires_grad=True)

    def fn(t):
        return t.sin() * t.exp()

    (g,) = wb.autograd.grad(fn(x).sum(), x, create_graph=True)
    (plain,) = wb.autograd.grad(g.sum(), x)
    (g,) = wb.autograd.grad(checkpoint(fn, x, use_reentrant=False).sum(), x, create_graph=True)
    (got,) = wb.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(got.numpy(), plain.numpy(), rtol=1e-6)


def test_in_place_change_of_an_input_after_forward_is_caught():
    x = wb.randn(4, requires_grad=True)
    h = x * 1
    y = checkpoint(lambda t: t.sin(), h, use_reentrant=False)
    h.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_second_backward_needs_retain_graph():
    x = wb.randn(4, requires_grad=True)
    y = checkpoint(lambda t: t.sin().exp(), x, use_reentrant=False).sum()
    y.backward(retain_graph=True)
    first = grads(x)
    y.backward()
    assert_same(grads(x), first)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


# ----------------------------------------------------------------- saved memory
def test_saved_bytes_drop_as_computed_by_hand():
    x = wb.randn(1000, requires_grad=True)  # 4000 bytes

    def chain(t):  # ten sin ops: each saves its input
        for _ in range(10):
            t = t.sin()
        return t

    base = held()
    y = chain(x)
    assert held() - base == 10 * 1000 * F32  # x and nine intermediates
    del y
    assert held() == base  # a graph dropped without backward lets go of everything
    wb.autograd.reset_peak_saved_memory()
    y = checkpoint(chain, x, use_reentrant=False)
    assert held() - base == 1000 * F32  # only the checkpoint's input
    y.sum().backward()
    assert held() == base
    # backward recomputes all ten, then frees them one by one
    assert wb.autograd.saved_memory().peak - base == 10 * 1000 * F32


def test_dropout_masks_are_recomputed_not_kept():
    x = wb.randn(500, requires_grad=True)  # 2000 bytes

    def fn(t):
        return dropout(t).sin()  # dropout keeps its mask, sin its input

    base = held()
    y = fn(x)
    assert held() - base == 2 * 2000
    del y
    y = checkpoint(fn, x, use_reentrant=False)
    assert held() - base == 2000  # the checkpoint's input only
    y.sum().backward()
    assert held() == base


def test_an_array_saved_by_several_nodes_counts_once():
    x = wb.randn(250, requires_grad=True)  # 1000 bytes
    base = held()
    y = x.tanh()  # saves its output y
    z = y * x  # saves y again, and x
    assert held() - base == 2000
    z.sum().backward()
    assert held() == base


def test_custom_function_saved_memory_is_released():
    class Square(wb.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = wb.randn(100, requires_grad=True)
    base = held()
    y = Square.apply(x)
    assert held() - base == 400
    y.sum().backward()
    assert held() == base
    y = Square.apply(x)
    del y
    assert held() == base


def test_memory_events_replay_the_counter():
    x = wb.randn(100, requires_grad=True)
    with events.collect() as got:
        y = checkpoint_sequential([wb.sin] * 6, 3, x, use_reentrant=False)
        y.sum().backward()
        del y
    memory = [
        e for e in got.events if isinstance(e, (events.SavedTensorPacked, events.SavedTensorFreed))
    ]
    assert memory and memory[-1].total_bytes == held()
    recompute = [e for e in got.events if isinstance(e, events.CheckpointRecompute)]
    assert [e.phase for e in recompute] == ["begin", "end", "begin", "end"]
    ends = [e for e in recompute if e.phase == "end"]
    assert all(e.nbytes == 400 and len(e.nodes) == 2 for e in ends)  # 2 sins, 1 new array each


def test_nodes_know_their_segment_and_recomputation():
    x = wb.randn(3, requires_grad=True)
    y = checkpoint(lambda t: t.sin().exp(), x, use_reentrant=False)
    z = y.cos()
    exp_node = y.grad_fn
    sin_node = exp_node.next_functions[0][0]
    segment = exp_node.metadata["checkpoint"]
    assert sin_node.metadata["checkpoint"] == segment
    assert "checkpoint" not in z.grad_fn.metadata
    z.sum().backward(retain_graph=True)
    assert exp_node.metadata["recomputed"] == 1 and sin_node.metadata["recomputed"] == 1


# -------------------------------------------------------------- TVM markers
def marked_net(x, w, marked, drop=dropout):
    h = x
    for _ in range(3):
        if marked:
            h = start_checkpoint(h)
        h = drop((h @ w).tanh()).sin()
        if marked:
            h = end_checkpoint(h)
    return (h * h).sum()


@pytest.mark.parametrize("drop", [dropout, factory_dropout])
def test_marker_stages_give_equal_gradients_and_hold_less(drop):  # D17.139
    w = wb.randn(8, 8, requires_grad=True)
    x = wb.randn(4, 8, requires_grad=True)
    base = held()
    wb.manual_seed(1)
    loss = marked_net(x, w, marked=False, drop=drop)
    plain_bytes = held() - base
    loss.backward()
    plain = grads(x, w)
    wb.manual_seed(1)
    loss = marked_net(x, w, marked=True, drop=drop)
    marked_bytes = held() - base
    loss.backward()
    assert_same(grads(x, w), plain)
    assert marked_bytes < plain_bytes
    assert held() == base


def test_marker_stage_with_several_inputs_follows_the_tvm_example():
    a = wb.randn(2, 2, requires_grad=True)
    b = wb.randn(2, 2, requires_grad=True)
    c, d = a * 2, b * 2
    c_cp, d_cp = start_checkpoint(c), start_checkpoint(d)
    e = (c_cp * d_cp).exp()
    e_out = end_checkpoint(e)
    assert e.grad_fn.metadata["checkpoint"] == e_out.grad_fn.next_functions[0][0].metadata.get(
        "checkpoint"
    )
    assert e_out.grad_fn.name() == "EndCheckpointBackward0"
    e_out.sum().backward()
    got = grads(a, b)
    ((a * 2) * (b * 2)).exp().sum().backward()
    assert_same(got, grads(a, b))


def test_markers_take_tensors_only():  # D17.139
    with pytest.raises(TypeError, match="The argument of start_checkpoint should be a Tensor"):
        start_checkpoint(1.0)
    with pytest.raises(TypeError, match="The argument of end_checkpoint should be a Tensor"):
        end_checkpoint((wb.ones(2),))
    with pytest.raises(RuntimeError, match="without a matching start_checkpoint"):
        end_checkpoint(wb.ones(2))


def test_marker_stage_recomputes_once_and_publishes_it():
    x = wb.randn(5, requires_grad=True)
    with events.collect() as got:
        h = start_checkpoint(x)
        y = end_checkpoint(h.sin().exp().cos())
        y.sum().backward()
    recompute = [e for e in got.events if isinstance(e, events.CheckpointRecompute)]
    assert [e.phase for e in recompute] == ["begin", "end"]
    assert len(recompute[1].nodes) == 3
    # sin saves the stage input (kept by the stage already); exp saves its output and cos
    # saves that same array again: one recomputed array of 5 floats
    assert recompute[1].nbytes == 5 * F32


def test_stage_inside_checkpoint_and_checkpoint_inside_stage(params):
    w, b = params
    x = wb.randn(3, 6, requires_grad=True)

    def with_stage(h):
        h = start_checkpoint(h.cos())
        return end_checkpoint(block(h, w, b)).exp()

    with_stage(x).sum().backward()
    plain = grads(x, w, b)
    checkpoint(with_stage, x, use_reentrant=False).sum().backward()
    assert_same(grads(x, w, b), plain)
    h = start_checkpoint(x.cos())
    h = checkpoint(block, h, w, b, use_reentrant=False)
    end_checkpoint(block(h, w, b).exp()).sum().backward()
    nested = grads(x, w, b)
    block(block(x.cos(), w, b), w, b).exp().sum().backward()
    assert_same(nested, grads(x, w, b))


def test_an_error_inside_fn_leaves_no_hooks_behind():
    def broken(t):
        t.sin()
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        checkpoint(broken, wb.randn(3, requires_grad=True), use_reentrant=False)
    assert not state.saved_hooks.stack


def test_an_error_between_markers_can_be_cleaned_up():
    x = wb.randn(3, requires_grad=True)
    h = start_checkpoint(x)
    with pytest.raises(Exception, match="matmul"):
        h @ wb.randn(4, 4)
    y = h.exp()  # recorded on the still-open stage
    stage = wb.autograd.recompute.abandon_open_stage()
    assert stage is not None and y.grad_fn.metadata["checkpoint"] == stage.segment
    y.sum().backward()  # replayed from the tape
    np.testing.assert_allclose(x.grad.numpy(), x.exp().detach().numpy())
