"""Loss modules: each one keeps its settings and calls one loss function of ``F``.

``reduction`` is ``'mean'`` (the default), ``'sum'`` or ``'none'`` (one loss per
element), as in PyTorch.
"""

from __future__ import annotations

from workbench import Tensor
from workbench.core import checks

from . import functional as F
from .module import Module


class _Loss(Module):
    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = checks.reduction(type(self).__name__, reduction)

    def _options(self, **values) -> dict:
        """``reduction`` plus the settings that differ from PyTorch's defaults."""
        options = {key: value for key, value in values.items() if value is not None}
        options["reduction"] = self.reduction
        return options


class MSELoss(_Loss):
    """Mean squared error: ``mean((input − target)²)``."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """Mean absolute error: ``mean(|input − target|)``."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.l1_loss(input, target, reduction=self.reduction)


class NLLLoss(_Loss):
    """Negative log-likelihood of class indices, given log-probabilities ``(N, C)``."""

    def __init__(
        self, weight: Tensor | None = None, ignore_index: int = -100, reduction: str = "mean"
    ) -> None:
        super().__init__(reduction)
        self.weight = weight
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        options = self._options(
            weight=self.weight,
            ignore_index=self.ignore_index if self.ignore_index != -100 else None,
        )
        return F.nll_loss(input, target, **options)


class CrossEntropyLoss(NLLLoss):
    """``nll_loss(log_softmax(logits), target)``: the classifier's loss, from raw logits."""

    def __init__(
        self,
        weight: Tensor | None = None,
        ignore_index: int = -100,
        reduction: str = "mean",
        label_smoothing: float = 0.0,
    ) -> None:
        super().__init__(weight, ignore_index, reduction)
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        options = self._options(
            weight=self.weight,
            ignore_index=self.ignore_index if self.ignore_index != -100 else None,
            label_smoothing=self.label_smoothing or None,
        )
        return F.cross_entropy(input, target, **options)


class BCELoss(_Loss):
    """Binary cross-entropy of probabilities in (0, 1): ``−[y ln p + (1 − y) ln(1 − p)]``."""

    def __init__(self, weight: Tensor | None = None, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.weight = weight

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy(input, target, **self._options(weight=self.weight))


class BCEWithLogitsLoss(_Loss):
    """``BCELoss(sigmoid(x), y)`` computed stably from logits ``x``."""

    def __init__(
        self,
        weight: Tensor | None = None,
        reduction: str = "mean",
        pos_weight: Tensor | None = None,
    ) -> None:
        super().__init__(reduction)
        self.weight = weight
        self.pos_weight = pos_weight

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        options = self._options(weight=self.weight, pos_weight=self.pos_weight)
        return F.binary_cross_entropy_with_logits(input, target, **options)
