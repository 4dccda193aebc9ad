"""Conformance with PyTorch, REFERENCE D4: tensor hooks, node hooks, post-accumulate hooks."""

from __future__ import annotations

import pytest

import workbench as wb


def T(data, requires_grad=False):
    return wb.tensor(data, dtype=wb.float64, requires_grad=requires_grad)


def values(t) -> list:
    return t.detach().numpy().tolist()


def test_d4_23_a_tensor_hook_replaces_the_gradient_until_removed():
    """test_hooks"""
    x = T([1.0, 1.0], requires_grad=True)
    y = x * 2
    handle = y.register_hook(lambda g: g * 10)
    y.sum().backward()
    assert values(x.grad) == [20.0, 20.0]
    handle.remove()
    x.grad = None
    y.sum().backward()
    assert values(x.grad) == [2.0, 2.0]


def test_d4_24_a_hook_returning_none_observes_without_changing():
    """test_hook_none"""
    x = T([1.0, 1.0], requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(values(g)))
    (x * 2).sum().backward()
    assert seen == [[2.0, 2.0]]
    assert values(x.grad) == [2.0, 2.0]


def test_d4_25_hooks_chain_in_registration_order():
    x = T([1.0, 1.0], requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: g + 1)
    y.register_hook(lambda g: g * 10)
    y.sum().backward()
    assert values(x.grad) == [40.0, 40.0]


def test_d4_26_a_leaf_hook_changes_what_is_accumulated_and_what_grad_returns():
    x = T([1.0, 1.0], requires_grad=True)
    x.register_hook(lambda g: g * 10)
    (x * 2).sum().backward()
    assert values(x.grad) == [20.0, 20.0]
    z = T([1.0, 1.0], requires_grad=True)
    z.register_hook(lambda g: g * 2)
    (gz,) = wb.autograd.grad((z * 1).sum(), z)
    assert values(gz) == [2.0, 2.0]


def test_d4_27_hooks_need_a_tensor_that_requires_grad():
    with pytest.raises(
        RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"
    ):
        T([1.0]).register_hook(lambda g: g)


def test_d4_28_hook_results_are_checked():
    x = T([1.0, 1.0], requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: T([1.0, 2.0, 3.0]))
    with pytest.raises(RuntimeError, match="has changed the size of value"):
        y.sum().backward()
    y = x * 2
    y.register_hook(lambda g: g.to(wb.float32))
    with pytest.raises(RuntimeError, match="has changed the type of value"):
        y.sum().backward()
    y = x * 2
    y.register_hook(lambda g: 3.0)
    with pytest.raises(TypeError, match="hook returned"):
        y.sum().backward()


def test_d4_29_node_hooks_see_and_may_replace_gradients():
    """test_grad_fn_prehooks, test_grad_fn_prehooks_remove_hooks"""
    a = T([1.0, 2.0], requires_grad=True)
    b = a * 3
    seen = {}

    def pre(grad_outputs):
        seen["pre"] = [values(g) for g in grad_outputs]
        return (grad_outputs[0] * 2,)

    def pre_none(grad_outputs):
        seen["pre_none"] = True

    def post(*args):  # (grad_inputs, grad_outputs)
        seen["post"] = [[None if g is None else values(g) for g in grads] for grads in args]

    b.grad_fn.register_prehook(pre)
    b.grad_fn.register_prehook(pre_none)
    b.grad_fn.register_hook(post)
    b.sum().backward(retain_graph=True)
    assert isinstance(seen["pre"], list) and seen["pre"] == [[1.0, 1.0]]
    assert seen["pre_none"] is True
    assert seen["post"] == [[[6.0, 6.0], None], [[2.0, 2.0]]]
    assert values(a.grad) == [6.0, 6.0]

    # A hook that removes another during backward: as in PyTorch, the removed hook still
    # runs in this pass (the hooks to run were fixed when the node started) and never again.
    c = a * 1
    calls = []

    def remover(grad_outputs):
        calls.append("remover")
        second.remove()

    c.grad_fn.register_prehook(remover)
    second = c.grad_fn.register_prehook(lambda g: calls.append("second"))
    c.sum().backward(retain_graph=True)
    c.sum().backward()
    assert calls == ["remover", "second", "remover"]


def test_d4_30_hooks_run_in_pytorchs_order():
    """test_post_accumulate_grad_hook_ordering: tensor.grad ends up 3."""
    tensor = T([0.0], requires_grad=True)
    order = []

    def tensor_pre(g):
        order.append("tensor pre-hook")
        return g + 1

    def node_pre(grad_outputs):
        order.append("node pre-hook")
        return (grad_outputs[0] + 1,)

    def post_acc(t):
        order.append("post-accumulate hook")
        t.grad.add_(1)

    def node_post(grad_inputs, grad_outputs):
        order.append("node post-hook")

    acc = (tensor * 1).grad_fn.next_functions[0][0]
    tensor.register_hook(tensor_pre)
    acc.register_prehook(node_pre)
    tensor.register_post_accumulate_grad_hook(post_acc)
    acc.register_hook(node_post)
    wb.autograd.backward(tensor, T([0.0]))
    assert order == ["tensor pre-hook", "node pre-hook", "post-accumulate hook", "node post-hook"]
    assert values(tensor.grad) == [3.0]


def test_d4_31_post_accumulate_hooks_are_for_leaves_and_return_none():
    x = T([1.0], requires_grad=True)
    with pytest.raises(
        RuntimeError, match="post accumulate grad hooks cannot be registered on non-leaf tensors"
    ):
        (x * 2).register_post_accumulate_grad_hook(lambda t: None)
    x.register_post_accumulate_grad_hook(lambda t: t)
    with pytest.raises(RuntimeError, match="hooks should return None."):
        (x * 2).sum().backward()
