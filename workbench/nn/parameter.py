"""Parameter: the tensors a module learns.

A Parameter is an ordinary leaf tensor that requires grad. Assigning one to a
module attribute registers it, so ``model.parameters()`` finds it and the
optimizer updates it.
"""

from __future__ import annotations

import workbench as wb
from workbench import Tensor


class Parameter(Tensor):
    """A leaf tensor that requires grad and that modules register as learnable.

    ``Parameter(t)`` shares ``t``'s memory, as in PyTorch. It requires grad even
    when built inside ``no_grad``: a layer created under ``no_grad`` must still
    train.

    ``_module_path`` is where a module holds it, as ``named_parameters()`` names it
    (``"0.weight"``, ``"fc1.bias"``): set when a module registers it and again each time
    the module is called (only then is its place in the whole model known), so that
    pictures can call it by that name rather than by an id like ``t32``.
    """

    _module_path: str | None = None

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        if data is None:
            data = wb.empty(0)
        elif not isinstance(data, Tensor):
            data = wb.as_tensor(data)
        self._start(data._data)
        if requires_grad:
            self.requires_grad_(True)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo: dict) -> Parameter:
        if id(self) in memo:
            return memo[id(self)]
        clone = Parameter(self.detach().clone(), self.requires_grad)
        if self._grad is not None:
            clone.grad = self._grad.detach().clone()
        memo[id(self)] = clone
        return clone

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (self._data, self.requires_grad))


def _rebuild_parameter(array, requires_grad: bool) -> Parameter:
    return Parameter(Tensor(array), requires_grad)
