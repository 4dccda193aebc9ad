"""TrainingMonitor's gradient flow: each verdict flips between a sick and a healthy real run.

The runs are small networks trained on three spirals (lesson 9's data set). Each sick
run is paired with the cure a learner would try, from the same seeds: the verdict must
name the problem on the first and be healthy on the second.
"""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from workbench import nn
from workbench.widgets import TrainingMonitor
from workbench.widgets.gradient_flow import GradientFlow

SEEDS = (0, 1, 2)


def spirals(points_per_class=100, classes=3):
    rng = np.random.default_rng(0)
    radius = np.tile(np.linspace(0.1, 1.0, points_per_class), classes)
    label = np.repeat(np.arange(classes), points_per_class)
    angle = label * (2 * np.pi / classes) + radius * 4 + rng.normal(0, 0.15, radius.size)
    xy = np.stack([radius * np.sin(angle), radius * np.cos(angle)], axis=1)
    return wb.tensor(xy.astype(np.float32)), wb.tensor(label)


X, Y = spirals()


def stack(activation, depth, width=32):
    """``depth`` Linear layers, ``activation`` between them, PyTorch's default init."""
    layers = [nn.Linear(2, width), activation()]
    for _ in range(depth - 2):
        layers += [nn.Linear(width, width), activation()]
    return nn.Sequential(*layers, nn.Linear(width, 3))


def init_weights(net, init):
    for module in net.modules():
        if isinstance(module, nn.Linear):
            init(module.weight)
            nn.init.zeros_(module.bias)
    return net


def he(weight):
    return nn.init.kaiming_normal_(weight, nonlinearity="relu")


def too_wide(weight):
    return nn.init.normal_(weight, 0.0, 8.0)


def train(net, lr, steps=80):
    """Train with plain SGD under a TrainingMonitor that watches the gradient flow."""
    monitor = TrainingMonitor(
        steps, X, Y, predict=lambda g: np.zeros(len(g)), every=steps, model=net
    )
    optimizer = wb.optim.SGD(net.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    for _ in range(steps):
        optimizer.zero_grad()
        loss = loss_fn(net(X), Y)
        loss.backward()
        optimizer.step()
        monitor.record(loss.item())
    verdict, losses = monitor.verdict, monitor.losses
    monitor.close()
    return verdict, losses


def seeded(seed, build):
    wb.manual_seed(seed)
    return build()


@pytest.mark.parametrize("seed", SEEDS)
def test_a_deep_sigmoid_net_vanishes_and_relu_with_he_init_cures_it(seed):
    sick, sick_losses = train(seeded(seed, lambda: stack(nn.Sigmoid, 8)), lr=0.5)
    assert sick.kind == "vanishing", sick.message
    assert "depth" in sick.message and "7 layers" in sick.message and "1/4" in sick.message
    assert sick_losses[-1] > 1.0  # it did not learn: the verdict is about a real failure
    cured, cured_losses = train(seeded(seed, lambda: init_weights(stack(nn.ReLU, 8), he)), lr=0.02)
    assert cured.kind == "healthy", cured.message
    assert cured_losses[-1] < 0.9 * cured_losses[0]
    shallow, _ = train(seeded(seed, lambda: stack(nn.Sigmoid, 3)), lr=0.5)
    assert shallow.kind == "healthy", shallow.message  # the sigmoid alone is not the cause


@pytest.mark.parametrize("seed", SEEDS)
def test_a_too_large_learning_rate_diverges_and_a_smaller_one_cures_it(seed):
    """Optimiser divergence, not exploding gradients: the gradients were not huge."""
    sick, sick_losses = train(seeded(seed, lambda: stack(nn.ReLU, 3)), lr=5.0)
    assert sick.kind == "diverging", sick.message
    assert "learning rate is too large" in sick.message and "init" not in sick.message
    cured, cured_losses = train(seeded(seed, lambda: stack(nn.ReLU, 3)), lr=0.5)
    assert cured.kind == "healthy", cured.message
    assert cured_losses[-1] < 0.8 * min(sick_losses[-10:])


def thirty_times_he(weight):
    he(weight)
    with wb.no_grad():
        weight.mul_(30.0)


@pytest.mark.parametrize("seed", SEEDS)
def test_weights_started_far_too_large_explode_and_he_init_cures_it(seed):
    """The same explosion with a modest learning rate: the init is named, not the step."""
    build = lambda init: lambda: init_weights(stack(nn.ReLU, 8), init)  # noqa: E731
    sick, _ = train(seeded(seed, build(thirty_times_he)), lr=0.02, steps=20)
    assert sick.kind == "exploding", sick.message
    assert "too large from the start" in sick.message and "init" in sick.message
    assert "learning rate is too large" not in sick.message
    cured, _ = train(seeded(seed, build(he)), lr=0.02, steps=20)
    assert cured.kind == "healthy", cured.message


@pytest.mark.parametrize("seed", SEEDS)
def test_weights_started_too_wide_saturate_tanh_and_the_default_init_does_not(seed):
    sick, _ = train(seeded(seed, lambda: init_weights(stack(nn.Tanh, 3), too_wide)), lr=0.1)
    assert sick.kind == "saturated", sick.message
    share = int(sick.message.split("%")[0].split()[-1])
    assert share > 50
    cured, _ = train(seeded(seed, lambda: stack(nn.Tanh, 3)), lr=0.1)
    assert cured.kind == "healthy", cured.message


def test_the_recorded_numbers_are_the_gradient_norms_and_the_steps_relative_size():
    wb.manual_seed(0)
    net = stack(nn.Tanh, 3)
    flow = GradientFlow(net)
    optimizer = wb.optim.SGD(net.parameters(), lr=0.1)
    before = [p.detach().numpy().copy() for p in (net[0].weight, net[2].weight, net[4].weight)]
    optimizer.zero_grad()
    nn.CrossEntropyLoss()(net(X), Y).backward()
    optimizer.step()
    flow.record()
    assert flow.names == ["0.weight", "2.weight", "4.weight"]
    for layer, (p, old) in enumerate(zip((net[0].weight, net[2].weight, net[4].weight), before)):
        grad = p.grad.numpy()
        assert np.isclose(flow.grad_norms[0][layer], np.sqrt((grad.astype(np.float64) ** 2).sum()))
        step = np.sqrt(((p.detach().numpy() - old).astype(np.float64) ** 2).sum())
        assert np.isclose(
            flow.update_ratios[0][layer],
            step / np.sqrt((old.astype(np.float64) ** 2).sum()),
            rtol=1e-5,
        )
        assert np.isclose(
            flow.update_ratios[0][layer],
            0.1 * np.linalg.norm(grad) / np.linalg.norm(old),
            rtol=1e-3,
        )
    assert len(flow.saturation) == 1 and flow._seen == []  # the step's forward, counted
    with wb.no_grad():
        net(X)  # a look, not a step: not counted
    assert flow._seen == []
    net(X)
    assert len(flow._seen) == 2  # a forward that records: both tanh layers counted
    flow.close()
    flow._seen = []
    net(X)
    assert flow._seen == []  # closed: the hooks are gone


def test_the_monitor_draws_the_flow_and_closing_removes_its_hooks():
    wb.manual_seed(0)
    net = stack(nn.Tanh, 3)
    monitor = TrainingMonitor(2, X, Y, predict=lambda g: np.zeros(len(g)), every=1, model=net)
    assert monitor.diagnosis in monitor.children and "No step" in monitor.diagnosis.value
    optimizer = wb.optim.SGD(net.parameters(), lr=0.1)
    for _ in range(2):
        optimizer.zero_grad()
        loss = nn.CrossEntropyLoss()(net(X), Y)
        loss.backward()
        optimizer.step()
        monitor.record(loss.item())
    assert monitor.flow.steps == 2 and "Healthy" in monitor.diagnosis.value
    flow = monitor.flow
    monitor.close()
    net(X)
    assert flow._seen == []  # closing the monitor left no hook on the model


def test_without_a_model_there_is_no_verdict_and_a_bad_model_is_refused():
    monitor = TrainingMonitor(1, X, Y, predict=lambda g: np.zeros(len(g)))
    with pytest.raises(RuntimeError, match="model="):
        _ = monitor.verdict
    monitor.close()
    with pytest.raises(TypeError, match="wb.nn.Module"):
        TrainingMonitor(1, X, Y, predict=lambda g: np.zeros(len(g)), model=lambda x: x)
    with pytest.raises(ValueError, match="no weight"):
        GradientFlow(nn.ReLU())
