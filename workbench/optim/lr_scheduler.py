"""Learning-rate schedules, as ``torch.optim.lr_scheduler``: call ``scheduler.step()``
once per epoch (or per batch), after ``optimizer.step()``.

A scheduler changes ``group["lr"]`` in each of the optimizer's parameter groups. The
rules are written as PyTorch writes them, each new rate computed from the current one
(``lr ← lr · γ`` every ``step_size`` epochs), so the rates are PyTorch's to the last bit;
each docstring gives the closed form, which is easier to read.
"""

from __future__ import annotations

import bisect
import math
import numbers
import warnings
from collections import Counter

from .optimizer import Optimizer


def _numbers(scheduler: str, **values) -> None:
    """The scheduler's settings that must be real numbers: PyTorch's TypeError, said
    where the scheduler is made (PyTorch's own comes from Python at some later step)."""
    for name, value in values.items():
        if not isinstance(value, numbers.Real):
            raise TypeError(f"{scheduler}: {name} must be a number, not {type(value).__name__}")


def _period(scheduler: str, name: str, value) -> None:
    """A number of epochs the schedule counts modulo (StepLR's ``step_size``,
    CosineAnnealingLR's ``T_max``): 0 is PyTorch's ZeroDivisionError, said where the
    scheduler is made (PyTorch's own comes from ``%`` at the first step)."""
    if value == 0:
        raise ZeroDivisionError(
            f"{scheduler}: {name} is 0: the schedule counts epochs modulo {name} (integer "
            "modulo by zero)"
        )


class LRScheduler:
    """The base class: it remembers each group's starting rate (``initial_lr``) and
    counts epochs in ``last_epoch``; subclasses say how ``get_lr`` moves the rates."""

    def _keep_numbers(self, **settings) -> None:
        """Keep a scheduler's settings that must be real numbers as its attributes
        (``self.gamma``), refusing any other value with PyTorch's TypeError."""
        _numbers(type(self).__name__, **settings)
        for name, value in settings.items():
            setattr(self, name, value)

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when "
                        "resuming an optimizer"
                    )
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._step_count = 0
        self._is_initial = True
        self.step()  # epoch 0: the starting rates (PyTorch's initial step)
        self._is_initial = False

    def get_lr(self) -> list[float]:
        raise NotImplementedError(f"{type(self).__name__} must implement get_lr")

    def get_last_lr(self) -> list[float]:
        """The rates the last ``step()`` set, one per parameter group."""
        return self._last_lr

    def step(self, epoch: int | None = None) -> None:
        if self._step_count == 1 and not getattr(self.optimizer, "_opt_called", False):
            warnings.warn(
                "Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch "
                "1.1.0 and later, you should call them in the opposite order: "
                "`optimizer.step()` before `lr_scheduler.step()`.  Failure to do this will "
                "result in PyTorch skipping the first value of the learning rate schedule.",
                UserWarning,
                stacklevel=2,
            )
        self._step_count += 1
        if epoch is None:
            self.last_epoch += 1
            rates = self.get_lr()
        else:
            self.last_epoch = epoch
            closed_form = getattr(self, "_closed_form_lr", None)
            rates = closed_form() if closed_form else self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, rates):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def _current(self) -> list[float]:
        return [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict:
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict) -> None:
        self.__dict__.update(state_dict)


_LRScheduler = LRScheduler


class LambdaLR(LRScheduler):
    """``lr = initial_lr · lr_lambda(epoch)`` (one function, or one per group)."""

    def __init__(self, optimizer: Optimizer, lr_lambda, last_epoch: int = -1) -> None:
        groups = len(optimizer.param_groups)
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != groups:
                raise ValueError(
                    f"LambdaLR: expected {groups} lr_lambdas, one per parameter group, but got "
                    f"{len(lr_lambda)}"
                )
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * groups
        for f in self.lr_lambdas:  # (PyTorch's TypeError is Python's, at the first step)
            if not callable(f):
                raise TypeError(f"LambdaLR: lr_lambda must be callable, not {type(f).__name__}")
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [base * f(self.last_epoch) for f, base in zip(self.lr_lambdas, self.base_lrs)]

    def state_dict(self) -> dict:
        state = super().state_dict()
        state["lr_lambdas"] = [None] * len(self.lr_lambdas)  # functions are not saved
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        lambdas = self.lr_lambdas
        super().load_state_dict(state_dict)
        self.lr_lambdas = lambdas


class StepLR(LRScheduler):
    """``lr = initial_lr · γ^⌊epoch / step_size⌋``: multiplied by γ every ``step_size`` epochs."""

    def __init__(
        self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1
    ) -> None:
        self._keep_numbers(step_size=step_size, gamma=gamma)
        _period("StepLR", "step_size", step_size)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._current()
        return [lr * self.gamma for lr in self._current()]

    def _closed_form_lr(self) -> list[float]:
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """``lr = initial_lr · γ^(milestones passed)``: multiplied by γ at each milestone epoch."""

    def __init__(
        self, optimizer: Optimizer, milestones, gamma: float = 0.1, last_epoch: int = -1
    ) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch not in self.milestones:
            return self._current()
        factor = self.gamma ** self.milestones[self.last_epoch]
        return [lr * factor for lr in self._current()]

    def _closed_form_lr(self) -> list[float]:
        passed = bisect.bisect_right(sorted(self.milestones.elements()), self.last_epoch)
        return [base * self.gamma**passed for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """``lr = initial_lr · γ^epoch``."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self._keep_numbers(gamma=gamma)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self._is_initial:
            return self._current()
        return [lr * self.gamma for lr in self._current()]

    def _closed_form_lr(self) -> list[float]:
        return [base * self.gamma**self.last_epoch for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """``lr = η_min + (initial_lr − η_min) · (1 + cos(π · epoch / T_max)) / 2``: half a
    cosine from the starting rate down to ``eta_min`` over ``T_max`` epochs (then back up)."""

    # Shaped as StepLR's __init__ above, on purpose: each scheduler spells out PyTorch's own
    # arguments and checks its own period, named as PyTorch's messages name it.
    def __init__(
        self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1
    ) -> None:
        self._keep_numbers(T_max=T_max, eta_min=eta_min)
        _period("CosineAnnealingLR", "T_max", T_max)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        epoch, period, low = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return self._current()
        if self._step_count == 1 and epoch > 0:  # resumed: start from the closed form
            return self._closed_form_lr()
        if (epoch - 1 - period) % (2 * period) == 0:  # at the bottom: turn back up
            return [
                lr + (base - low) * (1 - math.cos(math.pi / period)) / 2
                for base, lr in zip(self.base_lrs, self._current())
            ]
        ratio = (1 + math.cos(math.pi * epoch / period)) / (
            1 + math.cos(math.pi * (epoch - 1) / period)
        )
        return [ratio * (lr - low) + low for lr in self._current()]

    def _closed_form_lr(self) -> list[float]:
        cosine = (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
        return [self.eta_min + (base - self.eta_min) * cosine for base in self.base_lrs]


class LinearLR(LRScheduler):
    """The rate goes linearly from ``start_factor · initial_lr`` to ``end_factor ·
    initial_lr`` over ``total_iters`` epochs, then stays."""

    def __init__(
        self,
        optimizer: Optimizer,
        start_factor: float = 1.0 / 3,
        end_factor: float = 1.0,
        total_iters: int = 5,
        last_epoch: int = -1,
    ) -> None:
        if not 0 < start_factor <= 1:
            raise ValueError(
                "Starting multiplicative factor expected to be greater than 0 and less or equal "
                "to 1."
            )
        if not 0 <= end_factor <= 1:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        start, end, total = self.start_factor, self.end_factor, self.total_iters
        if self.last_epoch == 0:
            return [lr * start for lr in self._current()]
        if self._is_initial or self.last_epoch > total:
            return self._current()
        factor = 1.0 + (end - start) / (total * start + (self.last_epoch - 1) * (end - start))
        return [lr * factor for lr in self._current()]

    def _closed_form_lr(self) -> list[float]:
        done = min(self.total_iters, self.last_epoch) / self.total_iters
        factor = self.start_factor + (self.end_factor - self.start_factor) * done
        return [base * factor for base in self.base_lrs]


class ReduceLROnPlateau:
    """Multiply the rate by ``factor`` when ``scheduler.step(metric)`` has not improved for
    ``patience`` epochs (``mode="min"``: lower is better; ``"max"``: higher)."""

    def __init__(
        self,
        optimizer: Optimizer,
        mode: str = "min",
        factor: float = 0.1,
        patience: int = 10,
        threshold: float = 1e-4,
        threshold_mode: str = "rel",
        cooldown: int = 0,
        min_lr: float | list[float] = 0.0,
        eps: float = 1e-8,
    ) -> None:
        groups = len(optimizer.param_groups)
        lows = list(min_lr) if isinstance(min_lr, (list, tuple)) else [min_lr] * groups
        if len(lows) != groups:
            raise ValueError(
                f"ReduceLROnPlateau: expected {groups} min_lrs, one per parameter group, got "
                f"{len(lows)}"
            )
        _numbers("ReduceLROnPlateau", **{f"min_lr[{i}]": low for i, low in enumerate(lows)})
        _numbers("ReduceLROnPlateau", factor=factor, patience=patience, threshold=threshold)
        _numbers("ReduceLROnPlateau", cooldown=cooldown, eps=eps)
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        for name, value in (("mode", mode), ("threshold_mode", threshold_mode)):
            if not isinstance(value, str):  # PyTorch's TypeError (from joining it to a str)
                raise TypeError(
                    f"ReduceLROnPlateau: {name} must be a str, not {type(value).__name__}"
                )
        if mode not in ("min", "max"):
            raise ValueError(f"mode {mode} is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"threshold mode {threshold_mode} is unknown!")
        self.optimizer = optimizer
        self.min_lrs = lows
        self.mode, self.factor, self.patience = mode, factor, patience
        self.threshold, self.threshold_mode = threshold, threshold_mode
        self.cooldown, self.eps = cooldown, eps
        self.best = math.inf if mode == "min" else -math.inf
        self.num_bad_epochs = 0
        self.cooldown_counter = 0
        self.last_epoch = 0
        self._last_lr = [group["lr"] for group in optimizer.param_groups]

    def step(self, metrics) -> None:
        try:
            current = float(metrics)
        except (TypeError, ValueError) as error:  # PyTorch's float() error, said here
            raise type(error)(
                f"ReduceLROnPlateau.step(): metrics must be a number: {error}"
            ) from None
        self.last_epoch += 1
        if self._better(current):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            self._reduce()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def _better(self, value: float) -> bool:
        """Better than the best so far by more than ``threshold`` (relative or absolute)."""
        relative = self.threshold_mode == "rel"
        if self.mode == "min":
            return value < (
                self.best * (1 - self.threshold) if relative else self.best - self.threshold
            )
        return value > (
            self.best * (1 + self.threshold) if relative else self.best + self.threshold
        )

    def _reduce(self) -> None:
        for group, low in zip(self.optimizer.param_groups, self.min_lrs):
            new = max(group["lr"] * self.factor, low)
            if group["lr"] - new > self.eps:
                group["lr"] = new

    def get_last_lr(self) -> list[float]:
        return self._last_lr


def __getattr__(name: str):
    from ..compat.torch_alias import not_here

    raise AttributeError(not_here(__name__, name))
