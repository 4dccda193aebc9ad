"""RMSprop and Adagrad: step sizes scaled by a running size of each gradient component."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from workbench import Tensor

from .optimizer import Optimizer, hyperparameters, move, regularised


def _state_like(param: Tensor, value: float = 0.0) -> Tensor:
    return Tensor._make(np.full_like(param._data, value))


def _write(buffer: Tensor, values: np.ndarray) -> None:
    """Store new values in an optimizer buffer (its own memory: changed in place)."""
    buffer._data[...] = values
    buffer._bump_version()


class RMSprop(Optimizer):
    """RMSprop (Hinton's lecture 6e), in PyTorch's formulation::

        v ← α · v + (1 − α) · g²               (running mean of g², per component)
        p ← p − lr · g / (√v + ε)

    ``centered`` divides by the running variance instead (``v − ḡ²``, ḡ the running
    mean of g); ``momentum`` keeps a velocity ``b ← μ · b + g / (√v + ε)`` and steps
    by ``lr · b``.
    """

    non_negative = ("lr", "eps", "momentum", "weight_decay", "alpha")  # checked in this order

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        momentum: float = 0.0,
        centered: bool = False,
        *,
        maximize: bool = False,
    ) -> None:
        super().__init__(params, hyperparameters(locals(), self.non_negative))

    def _initial_state(self, param: Tensor, group: dict) -> dict:
        state = {"step": 0, "square_avg": _state_like(param)}
        if group["momentum"] > 0:
            state["momentum_buffer"] = _state_like(param)
        if group["centered"]:
            state["grad_avg"] = _state_like(param)
        return state

    def _update(self, param: Tensor, grad: Tensor, group: dict, state: dict) -> None:
        state["step"] += 1
        g = regularised(param, grad, group)
        alpha = group["alpha"]
        square_avg = state["square_avg"]
        _write(square_avg, square_avg._data * alpha + (1 - alpha) * g * g)
        if group["centered"]:
            grad_avg = state["grad_avg"]
            _write(grad_avg, grad_avg._data + (g - grad_avg._data) * (1 - alpha))
            avg = np.sqrt(square_avg._data - grad_avg._data * grad_avg._data)
        else:
            avg = np.sqrt(square_avg._data)
        avg += group["eps"]
        if group["momentum"] > 0:
            buffer = state["momentum_buffer"]
            _write(buffer, buffer._data * group["momentum"] + g / avg)
            move(param, buffer._data * group["lr"])
        else:
            move(param, g / avg * group["lr"])


class Adagrad(Optimizer):
    """Adagrad (Duchi et al., 2011): each component's step shrinks with its history::

    s ← s + g²                              (sum of every g² so far)
    p ← p − lr_t · g / (√s + ε),   lr_t = lr / (1 + (t − 1) · lr_decay)
    """

    # Shaped as SGD's opening (optim/sgd.py) and every optimizer's, on purpose: each class
    # spells out PyTorch's own arguments and defaults, so that help(Adagrad) shows them.
    non_negative = ("lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps")

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-2,
        lr_decay: float = 0.0,
        weight_decay: float = 0.0,
        initial_accumulator_value: float = 0.0,
        eps: float = 1e-10,
        *,
        maximize: bool = False,
    ) -> None:
        super().__init__(params, hyperparameters(locals(), self.non_negative))
        for group in self.param_groups:  # PyTorch makes Adagrad's state up front
            for param in group["params"]:
                self.state[param] = self._initial_state(param, group)

    def _initial_state(self, param: Tensor, group: dict) -> dict:
        return {"step": 0, "sum": _state_like(param, group["initial_accumulator_value"])}

    def _update(self, param: Tensor, grad: Tensor, group: dict, state: dict) -> None:
        state["step"] += 1
        g = regularised(param, grad, group)
        lr = group["lr"] / (1 + (state["step"] - 1) * group["lr_decay"])
        total = state["sum"]
        _write(total, total._data + g * g)
        move(param, g / (np.sqrt(total._data) + group["eps"]) * lr)


class Adadelta(Optimizer):
    """Adadelta (Zeiler, 2012): a step whose size comes from the running size of past steps::

    v ← ρ · v + (1 − ρ) · g²
    Δ ← √(u + ε) / √(v + ε) · g
    u ← ρ · u + (1 − ρ) · Δ²
    p ← p − lr · Δ
    """

    non_negative = ("lr", "eps", "weight_decay")

    def __init__(
        self,
        params: Iterable,
        lr: float = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0.0,
        *,
        maximize: bool = False,
    ) -> None:
        defaults = hyperparameters(locals(), self.non_negative)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        super().__init__(params, defaults)

    def _initial_state(self, param: Tensor, group: dict) -> dict:
        return {"step": 0, "square_avg": _state_like(param), "acc_delta": _state_like(param)}

    def _update(self, param: Tensor, grad: Tensor, group: dict, state: dict) -> None:
        state["step"] += 1
        g = regularised(param, grad, group)
        rho, eps = group["rho"], group["eps"]
        square_avg, acc_delta = state["square_avg"], state["acc_delta"]
        _write(square_avg, square_avg._data * rho + (1 - rho) * g * g)
        delta = np.sqrt(acc_delta._data + eps) / np.sqrt(square_avg._data + eps) * g
        _write(acc_delta, acc_delta._data * rho + (1 - rho) * delta * delta)
        move(param, delta * group["lr"])
