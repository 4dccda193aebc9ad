"""Stochastic gradient descent, with momentum, dampening, Nesterov and weight decay."""

from __future__ import annotations

from collections.abc import Iterable

from workbench import Tensor

from .optimizer import Optimizer, hyperparameters, move, regularised


class SGD(Optimizer):
    """``p ← p − lr · g``, PyTorch's formulation of every option.

    With ``weight_decay`` the gradient becomes ``g + wd · p`` (L2 regularisation).
    With ``momentum`` a velocity ``b`` is kept per parameter::

        b ← g                                (first step)
        b ← momentum · b + (1 − dampening) · g
        g ← g + momentum · b   (nesterov)    or   g ← b

    (PyTorch folds the learning rate out of the velocity, unlike some textbooks, so
    changing ``lr`` mid-training does not rescale the stored velocity.)
    """

    non_negative = ("lr", "momentum", "weight_decay")  # checked in this order

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-3,
        momentum: float = 0.0,
        dampening: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
    ) -> None:
        defaults = hyperparameters(locals(), self.non_negative)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def _update(self, param: Tensor, grad: Tensor, group: dict, state: dict) -> None:
        # step() runs under no_grad, so nothing here records: the formulas run on the
        # arrays. The parameter and the momentum buffer (the optimizer's own memory) are
        # changed in place, with a version bump each, as p.sub_() would; a new array is
        # made only where PyTorch makes a new tensor, so grad itself is never written.
        g = regularised(param, grad, group)  # g + wd · p
        momentum = group["momentum"]
        if momentum != 0:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = Tensor._make(g.copy())
            else:
                buf._data *= momentum
                buf._data += g * (1 - group["dampening"])
                buf._bump_version()
            g = g + buf._data * momentum if group["nesterov"] else buf._data
        move(param, g * group["lr"])
