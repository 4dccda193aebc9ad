"""TrainingMonitor: the bar, the text and the pictures follow the steps recorded; close lets go."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

from workbench.widgets import TrainingMonitor

PNG = b"\x89PNG"


def two_blobs():
    rng = np.random.default_rng(0)
    points = np.concatenate([rng.normal(-1, 0.3, (20, 2)), rng.normal(1, 0.3, (20, 2))])
    return points.astype(np.float32), np.repeat([0, 1], 20)


def by_sign(grid: np.ndarray) -> np.ndarray:
    return (grid.sum(axis=1) > 0).astype(int)


def test_the_monitor_follows_the_steps_and_redraws_every_few():
    points, labels = two_blobs()
    calls = []

    def predict(grid):
        calls.append(grid.shape)
        return by_sign(grid)

    monitor = TrainingMonitor(steps=5, points=points, labels=labels, predict=predict, every=2)
    assert monitor.progress.value == 0 and bytes(monitor.image.value).startswith(PNG)
    assert calls == [(100 * 100, 2)]  # drawn once on opening
    for loss in [1.0, 0.8, 0.5]:
        monitor.record(loss)
    assert monitor.progress.value == 3 and monitor.losses == [1.0, 0.8, 0.5]
    assert len(calls) == 2  # redrawn at step 2 only
    assert "step 3 of 5, loss 0.5000" in monitor.status.value
    monitor.record(0.4)
    monitor.record(0.3)
    assert monitor.done and len(calls) == 4  # step 4, and the last step
    assert "finished" in monitor.status.value
    with pytest.raises(RuntimeError, match="already recorded"):
        monitor.record(0.2)
    monitor.close()


def test_the_regions_are_the_predicted_classes_on_a_grid_around_the_data():
    points, labels = two_blobs()
    monitor = TrainingMonitor(steps=1, points=points, labels=labels, predict=by_sign)
    xs, ys, classes = monitor.regions()
    assert xs[0] < points[:, 0].min() and xs[-1] > points[:, 0].max()
    assert classes[0, 0] == 0 and classes[-1, -1] == 1  # lower left, upper right
    monitor.close()


def test_bad_points_are_refused_with_their_shape():
    with pytest.raises(ValueError, match=r"shape \(n, 2\), got \(4, 3\)"):
        TrainingMonitor(steps=3, points=np.zeros((4, 3)), labels=np.zeros(4), predict=by_sign)


def test_close_lets_go_of_the_model():
    class Model:
        def __call__(self, grid):
            return by_sign(grid)

    model = Model()
    points, labels = two_blobs()
    monitor = TrainingMonitor(steps=2, points=points, labels=labels, predict=model)
    ref = weakref.ref(model)
    monitor.close()
    del model
    gc.collect()
    assert ref() is None
