"""``wb.Size``: a tensor's shape, a tuple of ints that prints as PyTorch prints it.

``x.shape`` and ``x.size()`` return one, so ``print(x.size())`` shows
``torch.Size([6, 1, 5, 5])`` as in a PyTorch tutorial; it is a tuple for everything
else (``x.shape == (6, 1, 5, 5)``, ``n, c, h, w = x.shape``, ``x.shape[1:]``).
"""

from __future__ import annotations

import math


class Size(tuple):
    """A tuple of dimension sizes; ``numel()`` is their product."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"torch.Size([{', '.join(str(n) for n in self)}])"

    __str__ = __repr__

    def __getitem__(self, key):
        item = tuple.__getitem__(self, key)
        return Size(item) if isinstance(key, slice) else item

    def __add__(self, other) -> Size:
        return Size(tuple.__add__(self, tuple(other)))

    def numel(self) -> int:
        """The number of elements a tensor of this shape holds."""
        return math.prod(self)
