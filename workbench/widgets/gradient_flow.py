"""Gradient flow over training: per layer, how large the gradient is and how far a step moves.

Recorded once per training step, after ``optimizer.step()`` (``p.grad`` still holds the
step's gradient, and the weights have just moved):

- the **gradient norm** ‖∂L/∂W‖ of each weight (each parameter with two or more dims,
  first layer first);
- the **update-to-data ratio** ‖W_after − W_before‖ / ‖W_before‖: the share of its size
  a step changes a weight by. About 1e-3 is the usual healthy size;
- the share of **saturated** tanh and sigmoid units, measured on the training forward
  pass by forward hooks on the model's ``nn.Tanh`` and ``nn.Sigmoid`` modules: units whose
  slope is below a tenth of its peak (|tanh| > 0.95, a sigmoid below 0.03 or above 0.97).
  A tanh or sigmoid called as a function (``x.tanh()``) is not seen.

:meth:`GradientFlow.verdict` turns these into one sentence, decided by the numbers alone:
a weight update above half the weight's size is *diverging* (the optimiser overshoots: the
learning rate), unless that step's gradient was already huge for its weight, or a gradient
overflowed: that is *exploding* (gradients compounding through the depth: the init, or
global-norm clipping); a first layer whose largest gradient stays below
1/1000 of the last layer's is *vanishing* (the depth); more than half the units
saturated is *saturated* (inputs too large for the nonlinearity).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..nn import Module, Sigmoid, Tanh
from ..record.grad_mode import is_grad_enabled

HEALTHY_UPDATE = 1e-3  # the usual update-to-data ratio of a run that learns well
TOO_LARGE_UPDATE = 0.5  # a step that moves a weight by half its size overshoots
VANISHING_RATIO = 1e-3  # first layer's largest gradient over the last layer's
HUGE_GRADIENT = 10.0  # a gradient this many times its weight's size: huge from the start
SATURATED_SLOPE = 0.1  # a unit's slope below this share of its peak: saturated
SATURATED_SHARE = 0.5  # more than this share of units saturated: marked


@dataclass(frozen=True)
class FlowVerdict:
    """What the gradient flow of a run says: ``kind`` is one of
    ``"healthy"``, ``"diverging"``, ``"exploding"``, ``"vanishing"``, ``"saturated"``."""

    kind: str
    message: str

    @property
    def healthy(self) -> bool:
        return self.kind == "healthy"


class GradientFlow:
    """Per-layer gradient norms and update-to-data ratios of one model over its steps."""

    def __init__(self, model: Module) -> None:
        if not isinstance(model, Module):
            raise TypeError(
                f"GradientFlow: model must be a wb.nn.Module, got {type(model).__name__}"
            )
        self.layers = [(name, p) for name, p in model.named_parameters() if p.dim() >= 2]
        if not self.layers:
            raise ValueError("GradientFlow: the model has no weight with two or more dims")
        self.grad_norms: list[np.ndarray] = []  # one row per step, one column per layer
        self.update_ratios: list[np.ndarray] = []
        self.weight_norms: list[np.ndarray] = []  # each weight's size before the step
        self.saturation: list[float] = []  # one share per step that ran a saturating unit
        self._seen: list[tuple[int, int]] = []  # (saturated, units) since the last step
        self._before = self._weights()
        saturating = [m for m in model.modules() if isinstance(m, (Tanh, Sigmoid))]
        self.has_sigmoid = any(isinstance(m, Sigmoid) for m in saturating)
        self._hooks = [m.register_forward_hook(self._count_saturated) for m in saturating]

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.layers]

    @property
    def steps(self) -> int:
        return len(self.grad_norms)

    def _weights(self) -> list[np.ndarray]:
        return [p.detach().numpy().copy() for _, p in self.layers]

    def _count_saturated(self, module, args, output) -> None:
        if not is_grad_enabled():  # a look under no_grad (a plot, an accuracy) is no step
            return
        y = output.detach().numpy()
        slope = 1 - y**2 if isinstance(module, Tanh) else 4 * y * (1 - y)  # share of the peak
        self._seen.append((int((slope < SATURATED_SLOPE).sum()), y.size))

    def _measure(self, after: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per layer: the gradient's norm, the step's relative size, the weight's norm."""
        rows = []
        with np.errstate(all="ignore"):  # an overflowed weight is measured, not warned about
            for (_, p), old, new in zip(self.layers, self._before, after):
                grad = np.linalg.norm(p.grad.numpy()) if p.grad is not None else 0.0
                rows.append((grad, relative_change(old, new), np.linalg.norm(old)))
        norms, ratios, sizes = np.array(rows, dtype=np.float64).T
        return norms, ratios, sizes

    def record(self) -> None:
        """One step is done: read each weight's gradient and how far the step moved it."""
        after = self._weights()
        norms, ratios, sizes = self._measure(after)
        self.grad_norms.append(norms)
        self.update_ratios.append(ratios)
        self.weight_norms.append(sizes)
        if self._seen:
            saturated, units = np.sum(self._seen, axis=0)
            self.saturation.append(saturated / units)
        self._seen = []
        self._before = after

    def verdict(self) -> FlowVerdict:
        """The run so far in one sentence: diverging, exploding, vanishing, saturated or healthy."""
        if not self.grad_norms:
            return FlowVerdict("healthy", "No step recorded yet.")
        return self._exploding() or self._vanishing() or self._saturated() or self._healthy()

    def _exploding(self) -> FlowVerdict | None:
        norms, ratios = np.array(self.grad_norms), np.array(self.update_ratios)
        overflow = ~np.isfinite(norms) | ~np.isfinite(ratios)
        too_large = np.isfinite(ratios) & (ratios > TOO_LARGE_UPDATE)
        if too_large.any():
            step, layer = np.argwhere(too_large)[0]
            name, ratio = self.names[layer], ratios[step, layer]
            what = (
                f"at step {step + 1} one step changed {name} by {ratio:.0%} of its "
                f"size (a healthy step changes a weight by about {HEALTHY_UPDATE:.1%})."
            )
            size = self.weight_norms[step][layer]
            gradient = norms[step, layer] / size if size > 0 else np.inf
            if gradient > HUGE_GRADIENT:  # huge before any learning rate could act on it
                return FlowVerdict(
                    "exploding",
                    f"Exploding: {what} Its gradient was {gradient:.0e} times its own size: "
                    "the values are too large from the start, not the step, and the gradient "
                    "grew layer by layer on its way down. Start the weights smaller (the "
                    "init), scale the inputs, or clip the gradients' global norm.",
                )
            return FlowVerdict(
                "diverging",
                f"Diverging: {what} The learning rate is too large: a step that rewrites a "
                "weight instead of adjusting it overshoots what the gradient pointed at (the "
                "optimiser diverges; the gradients themselves were not huge). Lower the "
                "learning rate.",
            )
        if overflow.any():
            step, layer = np.argwhere(overflow)[0]
            return FlowVerdict(
                "exploding",
                f"Exploding: at step {step + 1} the gradient or the weights of "
                f"{self.names[layer]} overflowed to inf or nan, though no step before it "
                "changed a weight by more than half its size: look at the weights' init "
                "(start them smaller), then at the learning rate.",
            )
        return None

    def first_to_last(self) -> float:
        """The first layer's largest gradient norm over the last layer's, over all steps."""
        norms = np.array(self.grad_norms)
        last = norms[:, -1].max()
        return float(norms[:, 0].max() / last) if last > 0 else 1.0

    def _vanishing(self) -> FlowVerdict | None:
        if len(self.layers) < 2:
            return None
        ratio = self.first_to_last()
        if ratio >= VANISHING_RATIO:
            return None
        crossings = len(self.layers) - 1
        per_layer = ratio ** (1 / crossings)
        moved = float(np.median(np.array(self.update_ratios)[:, 0]))
        message = (
            f"Vanishing: the first layer's gradient is at most {ratio:.0e} of the last "
            f"layer's, so a step moves {self.names[0]} by only {moved:.0e} of its size: "
            f"it hardly learns. The cause is depth: on its way down the gradient crosses "
            f"{crossings} layers and shrinks about {1 / per_layer:.0f} times at each"
        )
        message += " (a sigmoid's slope is at most 1/4)." if self.has_sigmoid else "."
        if self.saturated_share() > SATURATED_SHARE:
            message += f" {self.saturated_share():.0%} of the units are saturated as well."
        return FlowVerdict("vanishing", message)

    def saturated_share(self) -> float:
        """The share of tanh/sigmoid units saturated, over the last ten steps (0 if none)."""
        return float(np.mean(self.saturation[-10:])) if self.saturation else 0.0

    def _saturated(self) -> FlowVerdict | None:
        share = self.saturated_share()
        if share <= SATURATED_SHARE:
            return None
        return FlowVerdict(
            "saturated",
            f"Saturated: {share:.0%} of the tanh/sigmoid units sit where their slope is "
            f"below {SATURATED_SLOPE:.0%} of its peak, so little gradient passes through "
            "them. Their inputs are too large: the weights' init, or data that is not scaled.",
        )

    def _healthy(self) -> FlowVerdict:
        moved = float(np.median(np.array(self.update_ratios)))
        return FlowVerdict(
            "healthy",
            f"Healthy: the first layer's gradient reaches {self.first_to_last():.2g} of the "
            f"last layer's, and a step changes a weight by about {moved:.0e} of its size.",
        )

    def close(self) -> None:
        """Remove the forward hooks: the model runs as it did before."""
        for handle in self._hooks:
            handle.remove()
        self._hooks = []
        self.layers = []


def relative_change(old: np.ndarray, new: np.ndarray) -> float:
    size = np.linalg.norm(old)
    with np.errstate(all="ignore"):
        change = np.linalg.norm(new - old)
    if size == 0:
        return 0.0 if change == 0 else np.inf
    return float(change / size)
