"""The hook-order contract (REFERENCE D4.25, D4.30) and saved-tensor hooks.

PyTorch runs, for each node of a backward pass: tensor hooks → node pre-hooks →
the node (for a leaf: accumulate into .grad, then post-accumulate-grad hooks) →
node post-hooks. The HookFired events come out in the same order.
"""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from tests.helpers import torch
from workbench.core import events


def hook_log(lib):
    """Register every kind of hook on y = x*2 and on the leaf x; return the firing order."""
    log = []
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    y.register_hook(lambda g: log.append("y tensor hook"))
    y.grad_fn.register_prehook(lambda g: log.append("y node pre-hook"))
    y.grad_fn.register_hook(lambda gi, go: log.append("y node post-hook"))
    x.register_hook(lambda g: log.append("x tensor hook"))
    x.register_post_accumulate_grad_hook(lambda p: log.append("x post-accumulate hook"))
    acc = y.grad_fn.next_functions[0][0]
    acc.register_prehook(lambda g: log.append("x node pre-hook"))
    acc.register_hook(lambda gi, go: log.append("x node post-hook"))
    y.sum().backward()
    return log


EXPECTED_ORDER = [
    "y tensor hook",
    "y node pre-hook",
    "y node post-hook",
    "x tensor hook",
    "x node pre-hook",
    "x post-accumulate hook",
    "x node post-hook",
]


def test_hooks_fire_in_pytorch_order():
    assert hook_log(wb) == EXPECTED_ORDER


@pytest.mark.skipif(torch is None, reason="needs torch to compare with")
def test_hook_order_matches_torch():
    assert hook_log(wb) == hook_log(torch)


def test_hook_fired_events_follow_the_same_order():
    with events.collect("hook_fired") as got:
        hook_log(wb)
    assert [e.hook for e in got.events] == [
        "tensor",
        "retain_grad",
        "node_pre",
        "node_post",
        "tensor",
        "node_pre",
        "post_accumulate",
        "node_post",
    ]


def test_post_accumulate_grad_hook_ordering_gives_3():
    """REFERENCE D4.30: ((1 - 2) / 5 + 0.5) * 10 = 3, only in the documented order."""
    t = wb.rand(3, requires_grad=True)
    acc = t.clone().grad_fn.next_functions[0][0]
    t.register_hook(lambda g: g - 2.0)
    acc.register_prehook(lambda grad_out: (grad_out[0] / 5.0,))

    def post_accumulate_hook(p):
        p.grad.add_(0.5)

    t.register_post_accumulate_grad_hook(post_accumulate_hook)

    def acc_post_hook(grad_in, grad_out):
        t.grad = grad_out[0] * 10

    acc.register_hook(acc_post_hook)
    t.sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), [3.0, 3.0, 3.0], rtol=1e-6)


def test_tensor_hooks_chain_in_registration_order():
    """REFERENCE D4.25: g+1 then g*10 gives (1·2 + ... ) = 40 per element."""
    x = wb.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: g + 1)
    y.register_hook(lambda g: g * 10)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [40.0, 40.0])


def retained_and_leaf_grads(lib):
    """y.grad sees tensor hooks but not node pre-hooks (PyTorch's engine does the same)."""
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    y.register_hook(lambda g: g * 3)
    y.grad_fn.register_prehook(lambda g: (g[0] * 10,))
    y.sum().backward()
    return y.grad.tolist(), x.grad.tolist()


def test_retained_grad_is_stored_after_tensor_hooks_before_node_pre_hooks():
    assert retained_and_leaf_grads(wb) == ([3.0, 3.0], [60.0, 60.0])


@pytest.mark.skipif(torch is None, reason="needs torch to compare with")
def test_retained_grad_matches_torch():
    assert retained_and_leaf_grads(wb) == retained_and_leaf_grads(torch)


# ------------------------------------------------------------- saved tensors
def test_saved_tensors_hooks_pack_in_forward_unpack_in_backward():
    calls = []

    def pack(t):
        calls.append(("pack", t.shape))
        return t.detach().numpy().copy()

    def unpack(array):
        calls.append(("unpack", array.shape))
        return wb.tensor(array)

    x = wb.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with wb.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = (x * x).sum()
    assert calls == [("pack", (3,)), ("pack", (3,))]  # mul saves both of its inputs
    y.backward()
    assert [c[0] for c in calls] == ["pack", "pack", "unpack", "unpack"]
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])


def test_saved_tensors_hooks_apply_only_inside_the_block_and_nest():
    used = []
    x = wb.tensor([1.0, 2.0], requires_grad=True)
    outer = wb.autograd.graph.saved_tensors_hooks(lambda t: used.append("outer") or t, lambda t: t)
    inner = wb.autograd.graph.saved_tensors_hooks(lambda t: used.append("inner") or t, lambda t: t)
    with outer:
        x.exp()
        with inner:
            x.exp()
        x.exp()
    x.exp()
    assert used == ["outer", "inner", "outer"]


def test_unpack_must_return_a_tensor():
    x = wb.tensor([1.0, 2.0], requires_grad=True)
    with wb.autograd.graph.saved_tensors_hooks(lambda t: t, lambda p: "not a tensor"):
        y = x.exp().sum()
    with pytest.raises(TypeError, match="unpack_hook expected to be a Tensor"):
        y.backward()


def test_pack_and_unpack_are_published():
    x = wb.tensor([1.0, 2.0], requires_grad=True)
    with events.collect("hook_fired") as got:
        with wb.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            y = x.exp().sum()
        y.backward()
    assert [e.hook for e in got.events] == ["pack", "unpack"]
    assert got.events[0].target == x.uid or got.events[0].target.startswith("t")
