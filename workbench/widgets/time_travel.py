"""Time travel for ``.grad``: every gradient a backward pass stores, at every step.

The engine never un-runs a node, so going back a step cannot ask it to. Instead the
stepper remembers, for every tensor whose ``.grad`` a step changed (a leaf's
accumulation, a ``retain_grad()`` tensor), the value right after that step. Showing
step k then puts each such tensor's ``.grad`` back to its value at step k: the last
change at or before k, else what it held before the stepper started (which may be
the sum of an earlier ``backward()``).

So the notebook and the panel agree: after Prev, ``x.grad`` printed in the next cell
is the ``.grad`` the panel shows for the step on show.
"""

from __future__ import annotations

import bisect
import weakref
from collections.abc import Iterable

import numpy as np

from ..core import backend
from ..core.tensor import Tensor


def to_array(value) -> np.ndarray | None:
    """A private numpy copy of a Tensor or array, so later in-place updates can't change it."""
    if value is None:
        return None
    if isinstance(value, Tensor):
        value = value._data
    return np.array(backend.to_numpy(value), copy=True)


class GradHistory:
    """The ``.grad`` of each tracked tensor after every step, and a way to put it back.

    ``shown`` is the step whose gradients the tensors hold right now (-1: none ran).
    """

    def __init__(self, tensors: Iterable[Tensor]) -> None:
        self._tensors = {t.uid: weakref.ref(t) for t in tensors}
        self._initial = {uid: to_array(ref()._grad) for uid, ref in self._tensors.items()}
        self._steps: dict[str, list[int]] = {}  # tensor id -> indices of the steps that changed it
        self._values: dict[str, list[np.ndarray]] = {}  # ... and its .grad right after each
        self._changed_at: list[tuple[str, ...]] = []  # step index -> tensor ids it changed
        self.shown = -1

    def add(self, index: int, changes: Iterable[tuple[str, np.ndarray]]) -> None:
        """Step ``index`` just ran and left these ``(tensor id, .grad after)`` values."""
        assert index == len(self._changed_at), "steps are added in order"
        changed = []
        for uid, after in changes:
            if uid not in self._tensors:
                continue
            steps, values = self._steps.setdefault(uid, []), self._values.setdefault(uid, [])
            if steps and steps[-1] == index:  # changed twice in one step: keep the last
                values[-1] = after
            else:
                steps.append(index)
                values.append(after)
                changed.append(uid)
        self._changed_at.append(tuple(changed))
        self.shown = index  # the engine's own values: the step that just ran

    def value_at(self, uid: str, index: int) -> np.ndarray | None:
        """The ``.grad`` of tensor ``uid`` right after step ``index`` (-1: before any)."""
        steps = self._steps.get(uid, [])
        k = bisect.bisect_right(steps, index)
        return self._values[uid][k - 1] if k else self._initial.get(uid)

    def restore(self, index: int) -> None:
        """Give every tracked tensor its ``.grad`` of step ``index``.

        Only the tensors changed by the steps between the one shown and ``index`` are
        touched, so a step back costs as much as the step did.
        """
        if index == self.shown:
            return
        low, high = sorted((self.shown, index))
        touched = dict.fromkeys(uid for ids in self._changed_at[low + 1 : high + 1] for uid in ids)
        for uid in touched:
            self._set(uid, self.value_at(uid, index))
        self.shown = index

    def _set(self, uid: str, value: np.ndarray | None) -> None:
        tensor = self._tensors[uid]()
        if tensor is None:  # the learner dropped it: nothing to put back
            return
        if value is None:
            tensor._grad = None
            return
        array = backend.asarray(value.copy(), like=tensor._data)  # a copy the engine may add into
        tensor._grad = Tensor._make(array)
