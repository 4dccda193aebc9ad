"""Optimizer: the base class that holds parameter groups and per-parameter state.

An optimizer never builds a graph: ``step()`` runs under ``no_grad`` and changes
each parameter in place (``p.add_(...)``), exactly as ``torch.optim`` does. That
in-place change bumps the parameter's version counter, so a graph that saved
the old value refuses to backward through it.

Each update is written with tensor ops (``buf.mul_(m).add_(g)``), so the one definition
serves eager training and a ``wb.compile``d training step, whose tracer writes the same
ops into the program (``wb.program``: the writes become bindings and write-backs).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable
from copy import deepcopy
from typing import Any

import numpy as np

import workbench as wb
from workbench import Tensor
from workbench.core import checks
from workbench.ops.inplace import check_inplace
from workbench.program.tracer import section


class Optimizer:
    """Base of SGD, Adam and AdamW.

    ``params`` is an iterable of tensors, or of dicts (*parameter groups*) each with
    a ``"params"`` list and its own settings (``{"params": head, "lr": 1e-2}``).
    Settings a group leaves out come from ``defaults``.
    """

    def __init__(self, params: Iterable, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self.state: dict[Tensor, dict[str, Any]] = {}
        self.param_groups: list[dict[str, Any]] = []
        if isinstance(params, Tensor) or not isinstance(params, Iterable):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                f"dicts, but got {type(params).__name__}"
            )
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own settings (e.g. a new layer to fine-tune)."""
        group = dict(param_group)
        if "params" not in group:
            raise KeyError(
                f"'params': a parameter group needs its 'params' (got the keys {list(group)})"
            )
        params = group["params"]
        group["params"] = [params] if isinstance(params, Tensor) else list(params)
        for param in group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError(
                    f"optimizer can only optimize Tensors, but one of the params is "
                    f"{type(param).__name__}"
                )
            if not param.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            group.setdefault(name, default)
        existing = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in existing for p in group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget the gradients of the last backward (``.grad = None`` by default)."""
        for group in self.param_groups:
            for param in group["params"]:
                if param.grad is None:
                    continue
                if set_to_none:
                    param.grad = None
                else:
                    param.grad = param.grad.detach()
                    with wb.no_grad():
                        param.grad.zero_()

    def step(self, closure: Callable[[], Tensor] | None = None) -> Tensor | None:
        """Update every parameter that has a gradient; ``closure`` re-evaluates the loss."""
        loss = None
        self._opt_called = True  # a scheduler's step() checks that this step came first
        if closure is not None:
            with wb.enable_grad():
                loss = closure()
        section(f"{type(self).__name__}.step()")  # a traced training step prints it there
        with wb.no_grad():
            for group in self.param_groups:
                for param in group["params"]:
                    grad = param.grad
                    if grad is not None:
                        self._update(param, grad, group, self._state_of(param, group))
        return loss

    def _state_of(self, param: Tensor, group: dict) -> dict:
        """``param``'s state, made by ``_initial_state`` before its first update."""
        state = self.state.get(param)
        if not state:
            state = self.state[param] = self._initial_state(param, group)
        return state

    def _initial_state(self, param: Tensor, group: dict) -> dict:
        """What the optimizer keeps for ``param`` from its first step (Adam's moments at 0...):
        nothing by default."""
        return {}

    def _update(self, param: Tensor, grad: Tensor, group: dict, state: dict) -> None:
        """Change ``param`` in place using ``grad``, the group's settings and its state."""
        raise NotImplementedError  # abstract: each optimizer has its own rule

    # -------------------------------------------------------------- state dict
    def state_dict(self) -> dict[str, Any]:
        """The settings and per-parameter state, parameters referred to by index."""
        index = {}
        groups = []
        for group in self.param_groups:
            saved = {key: value for key, value in group.items() if key != "params"}
            saved["params"] = []
            for param in group["params"]:
                index.setdefault(id(param), len(index))
                saved["params"].append(index[id(param)])
            groups.append(saved)
        state = {
            index[id(param)]: {key: _detach(value) for key, value in values.items()}
            for param, values in self.state.items()
        }
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        by_index = {}
        for mine, saved in zip(self.param_groups, groups):
            if len(mine["params"]) != len(saved["params"]):
                raise ValueError(
                    "loaded state dict contains a parameter group that doesn't match the size "
                    "of optimizer's group"
                )
            by_index.update(zip(saved["params"], mine["params"]))
            mine.update({key: value for key, value in saved.items() if key != "params"})
        self.state = {
            by_index[i]: {key: _loaded(key, value, by_index[i]) for key, value in values.items()}
            for i, values in state_dict["state"].items()
        }

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(k for k in group if k != "params"):
                lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)


def _detach(value: Any) -> Any:
    return value.detach() if isinstance(value, Tensor) else value


def _loaded(key: str, value: Any, param: Tensor) -> Any:
    """A copy of a saved state value for ``param``. As PyTorch does on load, a tensor
    (Adam's moments...) takes a floating parameter's dtype: float32 moments saved from a
    float32 model would otherwise update a float64 one in float32. The step count stays."""
    if not isinstance(value, Tensor):
        return deepcopy(value)
    value = value.detach().clone()
    if key != "step" and wb.is_floating_point(param):
        value = value.to(param.dtype)
    return value


# PyTorch's words for a hyperparameter in its messages where they are not "<name> value"
_LABELS = {"lr": "learning rate", "eps": "epsilon value"}


def hyperparameters(arguments: dict[str, Any], non_negative: tuple[str, ...]) -> dict[str, Any]:
    """An optimizer's ``defaults``, the settings of every parameter group: the arguments of
    its ``__init__`` (its ``locals()``, taken before any other name is bound) but ``params``,
    by PyTorch's names and in its order. Those named in ``non_negative`` (the optimizer's
    class attribute of that name) are checked first, in that order, with PyTorch's messages
    (``Invalid learning rate: -1.0``)."""
    for name in non_negative:
        if name == "weight_decay":  # not a bool either
            check_weight_decay(arguments[name])
        else:
            check_non_negative(_LABELS.get(name, f"{name} value"), arguments[name])
    skipped = ("self", "params", "__class__")  # __class__: there when __init__ calls super()
    return {name: value for name, value in arguments.items() if name not in skipped}


def regularised(param: Tensor, grad: Tensor, group: dict) -> np.ndarray:
    """The gradient as a rule uses it: negated with ``maximize``, plus ``wd · p`` (L2)."""
    g = -grad._data if group["maximize"] else grad._data
    if group["weight_decay"] != 0:
        g = g + param._data * group["weight_decay"]
    return g


def move(param: Tensor, step: np.ndarray) -> None:
    """``p ← p − step`` in place, as ``p.sub_()`` would (version bump included)."""
    check_inplace(param)
    param._data -= step
    param._bump_version()


def check_non_negative(name: str, value: float) -> None:
    """PyTorch's argument checks: ``Invalid learning rate: -1.0``. NaN is refused too, as
    Adam's and RMSprop's ``not 0.0 <= lr`` refuse it. (PyTorch's SGD checks ``lr < 0.0``,
    which NaN passes; the workbench refuses it there as well: a NaN rate or momentum
    silently turns every weight NaN at the first step.) A value that is not a number is
    PyTorch's TypeError, said here rather than left to the comparison; a Python int
    beyond 64 bits its OverflowError, which PyTorch raises in the step that hands the
    number to a kernel (and never where its step does the sum in Python floats, as for
    Adam's learning rate): here where it is given, for every optimizer alike."""
    if not isinstance(value, (numbers.Real, Tensor)):
        raise TypeError(f"Invalid {name}: expected a real number, got {type(value).__name__}")
    if isinstance(value, numbers.Integral) and not checks.INT_LOW <= value <= checks.INT_HIGH:
        raise OverflowError(
            f"Invalid {name}: {value} is too big to convert (a number an optimizer hands to a "
            "kernel lies between -2**63 and 2**64 - 1)"
        )
    if not 0.0 <= value:
        raise ValueError(f"Invalid {name}: {value}")


def check_weight_decay(value: float) -> None:
    """``weight_decay``: a non-negative number, not a bool. PyTorch adds ``wd · p`` with
    ``wd`` as the alpha of an add, where a bool is its RuntimeError ("Boolean alpha only
    supported for Boolean results"); ``weight_decay=True`` is a flag mistyped."""
    if isinstance(value, (bool, np.bool_)):
        raise RuntimeError(
            f"Invalid weight_decay value: {value}: a bool weight decay is refused (Boolean "
            "alpha only supported for Boolean results); give the decay as a number"
        )
    check_non_negative("weight_decay value", value)


def check_betas(betas) -> None:
    """Adam's ``betas``: two numbers in [0, 1). PyTorch reads ``betas[0]`` and ``betas[1]``,
    so a single beta is its IndexError and a value that is not a pair its TypeError."""
    if not isinstance(betas, (tuple, list)):
        raise TypeError(
            f"Invalid betas: expected a pair (beta1, beta2), got {type(betas).__name__}"
        )
    if len(betas) < 2:
        raise IndexError(f"Invalid betas: expected a pair (beta1, beta2), got {len(betas)} value")
    for i, beta in enumerate(betas):
        if not isinstance(beta, (numbers.Real, Tensor)):
            raise TypeError(f"Invalid beta parameter at index {i}: {type(beta).__name__}")
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {beta}")
