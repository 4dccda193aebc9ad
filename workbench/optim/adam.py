"""Adam and AdamW: per-parameter step sizes from running moments of the gradient."""

from __future__ import annotations

from collections.abc import Iterable

import workbench as wb
from workbench import Tensor

from .optimizer import Optimizer, check_betas, hyperparameters


class Adam(Optimizer):
    """Adam (Kingma & Ba, 2015), in PyTorch's formulation.

    Per parameter it keeps ``m`` (running mean of g) and ``v`` (running mean of g²)::

        t ← t + 1
        m ← β₁ · m + (1 − β₁) · g
        v ← β₂ · v + (1 − β₂) · g²
        p ← p − lr / (1 − β₁ᵗ) · m / (√v / √(1 − β₂ᵗ) + ε)

    The ``1 − βᵗ`` factors (bias correction) undo the pull towards zero of moments
    that start at zero. ``weight_decay`` adds ``wd · p`` to the gradient (L2);
    ``amsgrad`` divides by the largest ``v`` seen so far instead of the current one.
    """

    decoupled_weight_decay = False
    non_negative = ("lr", "eps", "weight_decay")  # checked in this order, before betas

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
    ) -> None:
        defaults = hyperparameters(locals(), self.non_negative)
        check_betas(betas)
        super().__init__(params, {**defaults, "betas": tuple(betas)})

    def _initial_state(self, param: Tensor, group: dict) -> dict:
        # the step count is a tensor, as PyTorch's: a traced step reads it at each run
        state = {
            "step": wb.tensor(0.0, device=param.device),
            "exp_avg": wb.zeros_like(param),
            "exp_avg_sq": wb.zeros_like(param),
        }
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = wb.zeros_like(param)
        return state

    def _update(self, param: Tensor, grad: Tensor, group: dict, state: dict) -> None:
        beta1, beta2 = group["betas"]
        lr, weight_decay = group["lr"], group["weight_decay"]
        if group["maximize"]:
            grad = -grad
        if weight_decay != 0:
            if self.decoupled_weight_decay:
                param.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(param, alpha=weight_decay)
        state["step"].add_(1)
        step = state["step"].to(wb.float64)  # the corrections in double, as PyTorch's floats
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
        exp_avg_sq.mul_(beta2).add_(grad * grad, alpha=1 - beta2)
        step_size = lr / (1 - beta1**step)
        second = exp_avg_sq
        if group["amsgrad"]:
            max_sq = state["max_exp_avg_sq"]
            max_sq.copy_(wb.maximum(max_sq, exp_avg_sq))
            second = max_sq
        denom = second.sqrt() / (1 - beta2**step).sqrt() + group["eps"]
        param.sub_(exp_avg / denom * step_size)


class AdamW(Adam):
    """Adam with *decoupled* weight decay (Loshchilov & Hutter, 2019).

    Instead of adding ``wd · p`` to the gradient (which Adam then rescales), AdamW
    shrinks the parameter directly before the Adam step: ``p ← p · (1 − lr · wd)``.
    """

    decoupled_weight_decay = True

    # Adam's signature again, so that help(AdamW) shows PyTorch's default weight_decay=1e-2.
    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
    ) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize)
