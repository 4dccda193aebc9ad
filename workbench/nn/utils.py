"""``torch.nn.utils``'s gradient clipping: call it between ``loss.backward()`` and
``optimizer.step()`` to keep one large gradient from throwing the parameters far."""

from __future__ import annotations

import math
from collections.abc import Iterable

import workbench as wb
from workbench import Tensor


def _with_grads(parameters) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p for p in parameters if p.grad is not None]


def clip_grad_norm_(
    parameters: Iterable[Tensor] | Tensor,
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach=None,
) -> Tensor:
    """Scale every gradient by ``min(1, max_norm / (‖g‖ + 10⁻⁶))``, ``‖g‖`` the norm of all
    the gradients together; return that total norm."""
    params = _with_grads(parameters)
    if not params:
        return wb.tensor(0.0)
    with wb.no_grad():
        norms = wb.stack([p.grad.norm(norm_type) for p in params])
        total = norms.max() if norm_type == float("inf") else norms.norm(norm_type)
        if error_if_nonfinite and not math.isfinite(total.item()):
            raise RuntimeError(
                f"The total norm of order {norm_type} for gradients from `parameters` is "
                "non-finite, so it cannot be clipped."
            )
        scale = (max_norm / (total + 1e-6)).clamp(max=1.0)
        for p in params:
            p.grad.mul_(scale.to(p.grad.dtype))
    return total


def clip_grad_value_(parameters: Iterable[Tensor] | Tensor, clip_value: float, foreach=None):
    """Clamp every gradient element into ``[−clip_value, clip_value]``."""
    with wb.no_grad():
        for p in _with_grads(parameters):
            p.grad.clamp_(-clip_value, clip_value)
