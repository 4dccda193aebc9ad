"""RMSprop, Adagrad, Adadelta, the learning-rate schedulers and gradient clipping, step by
step against PyTorch 2.13 (the same parameters, the same gradients, the same rates)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import workbench as wb

torch = pytest.importorskip("torch")

START = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)


def trajectory(lib, optimizer_name, options, scheduler=None, steps=12):
    """The parameter after each step and the rates the scheduler set, minimizing Σ (p − 1)²."""
    p = lib.tensor(START.copy(), requires_grad=True)
    opt = getattr(lib.optim, optimizer_name)([p], **options)
    sched = None
    if scheduler is not None:
        name, kwargs = scheduler
        sched = getattr(lib.optim.lr_scheduler, name)(opt, **kwargs)
    params, rates = [], []
    for _ in range(steps):
        opt.zero_grad()
        ((p - 1) ** 2).sum().backward()
        opt.step()
        params.append(p.detach().numpy().copy())
        if sched is not None:
            sched.step()
            rates.append(sched.get_last_lr())
    return np.array(params), rates


@pytest.mark.parametrize(
    "name, options",
    [
        ("RMSprop", {}),
        ("RMSprop", {"lr": 0.005, "alpha": 0.9, "momentum": 0.8, "centered": True}),
        ("RMSprop", {"weight_decay": 0.1, "maximize": True}),
        ("Adagrad", {}),
        ("Adagrad", {"lr": 0.1, "lr_decay": 0.05, "initial_accumulator_value": 0.2}),
        ("Adadelta", {}),
        ("Adadelta", {"lr": 0.5, "rho": 0.8, "weight_decay": 0.01}),
    ],
)
def test_optimizers_step_as_pytorchs(name, options):
    ours, _ = trajectory(wb, name, options)
    theirs, _ = trajectory(torch, name, options)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


SCHEDULERS = [
    ("StepLR", {"step_size": 3, "gamma": 0.5}),
    ("MultiStepLR", {"milestones": [2, 5, 5], "gamma": 0.3}),
    ("ExponentialLR", {"gamma": 0.9}),
    ("CosineAnnealingLR", {"T_max": 4, "eta_min": 0.001}),
    ("LinearLR", {"start_factor": 0.25, "total_iters": 6}),
    ("LambdaLR", {"lr_lambda": lambda epoch: 0.9**epoch}),
]


@pytest.mark.parametrize("scheduler", SCHEDULERS, ids=[s[0] for s in SCHEDULERS])
def test_schedulers_set_pytorchs_rates_exactly(scheduler):
    ours_p, ours = trajectory(wb, "SGD", {"lr": 0.1, "momentum": 0.5}, scheduler)
    theirs_p, theirs = trajectory(torch, "SGD", {"lr": 0.1, "momentum": 0.5}, scheduler)
    assert ours == theirs
    np.testing.assert_allclose(ours_p, theirs_p, rtol=1e-5, atol=1e-6)


def test_reduce_on_plateau_waits_then_reduces():
    rates = {}
    for lib in (wb, torch):
        opt = lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=1.0)
        sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=2, factor=0.5, cooldown=1)
        seen = []
        for metric in [5, 4, 4, 4, 4, 4, 3, 3, 3, 3, 3]:
            sched.step(metric)
            seen.append(opt.param_groups[0]["lr"])
        rates[lib.__name__] = seen
    assert rates["workbench"] == rates["torch"]


def test_a_scheduler_stepped_before_the_optimizer_warns_as_pytorch():
    opt = wb.optim.SGD([wb.zeros(1, requires_grad=True)], lr=1.0)
    sched = wb.optim.lr_scheduler.StepLR(opt, 1)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()
    opt = wb.optim.SGD([wb.zeros(1, requires_grad=True)], lr=1.0)
    sched = wb.optim.lr_scheduler.StepLR(opt, 1)
    opt.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched.step()


def test_scheduler_state_dict_round_trip():
    opt = wb.optim.SGD([wb.zeros(1, requires_grad=True)], lr=1.0)
    sched = wb.optim.lr_scheduler.StepLR(opt, 2, 0.5)
    for _ in range(3):
        opt.step()
        sched.step()
    state = sched.state_dict()
    other = wb.optim.lr_scheduler.StepLR(wb.optim.SGD([wb.zeros(1)], lr=1.0), 2, 0.5)
    other.load_state_dict(state)
    assert other.last_epoch == 3 and other.get_last_lr() == sched.get_last_lr()


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p: wb.optim.RMSprop(p, lr=-1), "Invalid learning rate"),
        (lambda p: wb.optim.Adagrad(p, lr_decay=-1), "Invalid lr_decay"),
        (lambda p: wb.optim.Adadelta(p, rho=2), "Invalid rho"),
        (lambda p: wb.optim.lr_scheduler.StepLR(object(), 1), "not an Optimizer"),
    ],
)
def test_bad_settings_are_refused(make, message):
    with pytest.raises((ValueError, TypeError), match=message):
        make([wb.zeros(1, requires_grad=True)])


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
def test_clip_grad_norm_as_pytorch(norm_type):
    results = []
    for lib in (wb, torch):
        params = [
            lib.tensor(START.copy(), requires_grad=True),
            lib.tensor(START[0] * 3, requires_grad=True),
        ]
        (params[0] ** 3).sum().backward()
        (params[1] * 2).sum().backward()
        total = lib.nn.utils.clip_grad_norm_(params, 2.0, norm_type)
        results.append((float(total), [p.grad.numpy().copy() for p in params]))
    assert results[0][0] == pytest.approx(results[1][0], rel=1e-6)
    for ours, theirs in zip(results[0][1], results[1][1]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_clip_grad_value_clamps_each_element():
    p = wb.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (p * wb.tensor([-5.0, 0.5, 9.0])).sum().backward()
    wb.nn.utils.clip_grad_value_([p], 1.0)
    assert p.grad.tolist() == [-1.0, 0.5, 1.0]
