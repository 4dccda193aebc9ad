"""Running the hooks a node carries, in PyTorch's order, with PyTorch's checks of what
they return.

The engine calls these only at nodes marked ``_hooked`` (adding any hook marks the node):
tensor hooks (``register_hook``, :func:`run_tensor_hook`), node pre-hooks
(:func:`call_pre_hooks`), post-hooks (:func:`call_post_hooks`) and a leaf's
post-accumulate hooks (:func:`call_post_accumulate_hooks`). Each firing is an event.
"""

from __future__ import annotations

import numpy as np

from ..core import events
from ..core.tensor import Tensor
from ..record.graph import AccumulateGrad, Node, OpNode


def run_tensor_hook(hook, grad: Tensor, node: Node) -> Tensor:
    result = hook(grad)
    if events.listening:
        target = node.variable.uid if isinstance(node, AccumulateGrad) else node.uid
        events.publish(events.HookFired(hook="tensor", target=target, replaced=result is not None))
    if result is None:
        return grad
    if not isinstance(result, Tensor):
        raise TypeError(
            f"expected a Tensor or None from hook '{_hook_name(hook)}', but the hook returned "
            f"{type(result).__name__}"
        )
    if result.shape != grad.shape:
        raise RuntimeError(
            f"hook '{_hook_name(hook)}' has changed the size of value: expected "
            f"{tuple(grad.shape)}, got {tuple(result.shape)}"
        )
    if result.dtype != grad.dtype:
        raise RuntimeError(
            f"hook '{_hook_name(hook)}' has changed the type of value: expected {grad.dtype}, "
            f"got {result.dtype}"
        )
    return result


def call_post_accumulate_hooks(leaf: Tensor) -> None:
    for hook in list(leaf._post_acc_hooks.values()):
        if hook(leaf) is not None:
            raise RuntimeError("hooks should return None.")
        if events.listening:
            events.publish(
                events.HookFired(hook="post_accumulate", target=leaf.uid, replaced=False)
            )


def _hook_name(hook) -> str:
    return getattr(hook, "__name__", type(hook).__name__)


def call_pre_hooks(node: Node, grads: list) -> list:
    for hook in list(node._pre_hooks.values()):
        result = hook(tuple(grads))
        if events.listening:
            events.publish(
                events.HookFired(hook="node_pre", target=node.uid, replaced=result is not None)
            )
        if result is not None:
            grads = _replaced_by_hook(hook, result, grads)
    if type(node) is OpNode and grads[0] is None:  # a hook took the gradient away: zeros
        grads = [_zeros_like_output(node)]
    return grads


def call_post_hooks(node: Node, grads_out, grads_in) -> list:
    for hook in list(node._post_hooks.values()):
        result = hook(tuple(grads_out), tuple(grads_in))
        if events.listening:
            events.publish(
                events.HookFired(hook="node_post", target=node.uid, replaced=result is not None)
            )
        if result is not None:
            grads_out = _replaced_by_hook(hook, result, grads_out, none_stays=True)
    return list(grads_out)


def _replaced_by_hook(hook, result, old, none_stays: bool = False) -> list:
    """A node hook's replacement gradients, checked as PyTorch checks them: a tuple of one
    Tensor (or None) per gradient, each the size of the one it replaces. A post-hook may
    not give a gradient where there was none (``none_stays``): that edge leads nowhere."""
    name = _hook_name(hook)
    if not isinstance(result, (tuple, list)):
        raise TypeError(f"expected tuple, but hook '{name}' returned '{type(result).__name__}'")
    if len(result) != len(old):
        raise RuntimeError(
            f"hook '{name}' has returned an incorrect number of values (got {len(result)}, "
            f"but expected {len(old)})"
        )
    for i, (new, was) in enumerate(zip(result, old)):
        if new is None:
            continue
        if not isinstance(new, Tensor):
            raise TypeError(
                f"hook '{name}' returned a {type(new).__name__} at position {i}: expected a "
                "Tensor or None"
            )
        if was is None and none_stays:
            raise RuntimeError(
                f"hook '{name}': can't replace a None gradient with a non-None value (position {i})"
            )
        if was is not None and new.shape != was.shape:
            raise RuntimeError(
                f"hook '{name}' has changed the size of value at position {i}: expected "
                f"{tuple(was.shape)}, got {tuple(new.shape)}"
            )
    return list(result)


def _zeros_like_output(node: OpNode) -> Tensor:
    out = node.output()
    if out is None:
        raise RuntimeError(f"{node.name()}: a gradient is missing and the output is gone")
    return Tensor._make(np.zeros_like(out._data))
