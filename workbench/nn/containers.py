"""Containers: modules that hold other modules.

``Sequential`` feeds each child's output to the next; ``ModuleList`` is a list
whose modules are registered (so their parameters are found) but which has no
``forward`` of its own.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator
from typing import Any

from .module import Module


class _ModuleSequence(Module):
    """What Sequential and ModuleList share: their children in order, counted, iterated and
    appended to (a new child is named by its position)."""

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def append(self, module: Module) -> _ModuleSequence:
        self.add_module(str(len(self)), module)
        return self


class Sequential(_ModuleSequence):
    """Chain modules: ``Sequential(Linear(2, 16), ReLU(), Linear(16, 1))``.

    Children are named ``"0"``, ``"1"``... or by the keys of an ``OrderedDict``.
    """

    def __init__(self, *args: Module) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for index, module in enumerate(args):
                self.add_module(str(index), module)

    def forward(self, input: Any) -> Any:
        for module in self._modules.values():
            input = module(input)
        return input

    def __getitem__(self, index: int | slice) -> Module:
        if isinstance(index, slice):
            return Sequential(OrderedDict(list(self._modules.items())[index]))
        return list(self._modules.values())[_checked_index(index, len(self))]


class ModuleList(_ModuleSequence):
    """A list of modules, registered as children named ``"0"``, ``"1"``..."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, index: int | slice) -> Module | ModuleList:
        if isinstance(index, slice):
            return ModuleList(list(self._modules.values())[index])
        return self._modules[str(_checked_index(index, len(self)))]

    def __setitem__(self, index: int, module: Module) -> None:
        self.add_module(str(_checked_index(index, len(self))), module)

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        for module in modules:
            self.append(module)
        return self

    def forward(self, *args: Any) -> Any:
        raise NotImplementedError(
            "ModuleList has no forward: iterate over it and call each module in your own forward"
        )


def _checked_index(index: int, length: int) -> int:
    if not -length <= index < length:
        raise IndexError(f"index {index} is out of range")
    return index % length
