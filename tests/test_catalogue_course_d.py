"""Misconception catalogues of lessons 8 and 9: average pooling's and take's backward,
the cross-entropy gradient, SGD with momentum, gradient accumulation over micro-batches.

Each mistake is one learners make, run through the check the lesson runs; the check
must name it (``says``) and never give it the cause it used to (``never``). Each right
answer is written another way and must pass.
"""

from __future__ import annotations

import numpy as np
import pytest
from catalogue import Catalogue, Mistake, Right, not_yet

import workbench as wb
from workbench.exercises import (
    NotAnswered,
    check_avg_pool_backward,
    check_cross_entropy_grad,
    check_optimizer_step,
    check_take_backward,
)
from workbench.exercises.micro_batches import check_accumulated_gradients
from workbench.exercises.safe_where import check_safe_sqrt
from workbench.nn import functional as F
from workbench.ops import grad as G

EXPECTED_GOT = "was expected"  # the words of a message that shows expected against got


# ------------------------------------------------------------ average pooling
def spread(share: np.ndarray, shape: tuple, k: int) -> np.ndarray:
    x_bar = np.zeros(shape)
    oh, ow = share.shape[-2:]
    x_bar[..., : oh * k, : ow * k] = share.repeat(k, axis=-2).repeat(k, axis=-1)
    return x_bar


def pool_right(output_grad, data, pool_size):
    return spread(output_grad.numpy() / pool_size**2, data.shape, pool_size)


def pool_by_loops(output_grad, data, pool_size):
    k = pool_size
    g = output_grad.numpy()
    x_bar = np.zeros(data.shape)
    for i in range(g.shape[-2]):
        for j in range(g.shape[-1]):
            x_bar[..., i * k : (i + 1) * k, j * k : (j + 1) * k] = g[..., i, j, None, None] / k**2
    return x_bar


def pool_with_kron(output_grad, data, pool_size):
    k = pool_size
    block = np.kron(output_grad.numpy(), np.ones((k, k))) / (k * k)
    x_bar = np.zeros(data.shape)
    x_bar[..., : block.shape[-2], : block.shape[-1]] = block
    return wb.tensor(x_bar)


def pool_with_tensor_ops(output_grad, data, pool_size):
    k = pool_size
    n, c, oh, ow = output_grad.shape
    share = (output_grad / (k * k))[:, :, :, None, :, None].expand(n, c, oh, k, ow, k)
    covered = share.reshape(n, c, oh * k, ow * k)
    height, width = data.shape[-2:]
    return wb.pad(covered, (0, width - ow * k, 0, height - oh * k))


def pool_undivided(output_grad, data, pool_size):
    return spread(output_grad.numpy(), data.shape, pool_size)


def pool_divided_by_k(output_grad, data, pool_size):
    return spread(output_grad.numpy() / pool_size, data.shape, pool_size)


def pool_without_zeros_for_the_edge(output_grad, data, pool_size):
    k = pool_size
    return output_grad.numpy().repeat(k, axis=-2).repeat(k, axis=-1) / (k * k)


def pool_windows_of_two(output_grad, data, pool_size):
    return spread(output_grad.numpy() / 4, data.shape, 2)


def pool_without_upstream(output_grad, data, pool_size):
    return spread(np.ones(output_grad.shape) / pool_size**2, data.shape, pool_size)


def pool_routed_to_the_max(output_grad, data, pool_size):
    return G.max_pool2d_backward(output_grad, data, pool_size=pool_size, strides=pool_size)


def pool_loops_swapped(output_grad, data, pool_size):
    k = pool_size
    g = output_grad.numpy()
    x_bar = np.zeros(data.shape)
    for i in range(g.shape[-2]):
        for j in range(g.shape[-1]):
            x_bar[..., i * k : (i + 1) * k, j * k : (j + 1) * k] = g[..., j, i, None, None] / k**2
    return x_bar


def pool_shape_of_upstream(output_grad, data, pool_size):
    return output_grad.numpy() / pool_size**2


def pool_wrong_sign(output_grad, data, pool_size):
    return -pool_right(output_grad, data, pool_size)


def pool_upstream_of_the_next_window(output_grad, data, pool_size):
    """Off by one window along the columns: ȳ[..., i, j + 1]. No known cause."""
    shifted = np.roll(output_grad.numpy(), -1, axis=-1)
    return spread(shifted / pool_size**2, data.shape, pool_size)


def pool_as_a_list(output_grad, data, pool_size):
    return pool_right(output_grad, data, pool_size).tolist()


POOL = Catalogue(
    exercise="08-conv-pool-avg-pool",
    check=check_avg_pool_backward,
    mistakes=[
        Mistake(
            "the division by k² forgotten",
            pool_undivided,
            says=["4 times the expected value", "divide its ȳ by k · k = 4"],
            kind="factor",
        ),
        Mistake(
            "divided by k, not k²",
            pool_divided_by_k,
            says=["not by k"],
            kind="factor",
        ),
        Mistake(
            "the edge no window covers left out",
            pool_without_zeros_for_the_edge,
            says=[
                "With x of shape (1, 2, 5, 5)",
                "Start from zeros shaped like data, (1, 2, 5, 5)",
            ],
            never=["summed back", "matmul", "transpose"],
            kind="shape",
        ),
        Mistake(
            "windows of 2 written in",
            pool_windows_of_two,
            says=["With x of shape (2, 3, 6, 6)", "what 2 × 2 windows would give"],
        ),
        Mistake(
            "the local derivative not multiplied by ȳ",
            pool_without_upstream,
            says=["local derivative alone", "Multiply it by the window's ȳ"],
        ),
        Mistake(
            "ȳ routed to the maximum, as max pooling does",
            pool_routed_to_the_max,
            says=["went to its largest input", "average pooling shares it"],
        ),
        Mistake(
            "rows and columns swapped",
            pool_loops_swapped,
            says=["rows and columns swapped (transposed)"],
        ),
        Mistake(
            "one value per window returned (ȳ's shape)",
            pool_shape_of_upstream,
            says=["has shape (1, 1, 2, 2) where (1, 1, 4, 4)", "has the shape of ȳ"],
            never=["summed back", "matmul", "transpose"],
            kind="shape",
        ),
        Mistake(
            "a sign",
            pool_wrong_sign,
            says=["wrong sign"],
            kind="sign",
        ),
        Mistake(
            "ȳ of the next window: no cause the check can know",
            pool_upstream_of_the_next_window,
            says=["your x̄ is wrong at", EXPECTED_GOT],
            kind="elements",
        ),
        Mistake(
            "a list returned",
            pool_as_a_list,
            says=["is a list: return a Tensor or a numpy array"],
        ),
    ],
    rights=[
        Right("repeat along the last two axes (the lesson's)", pool_right),
        Right("a loop over the windows", pool_by_loops),
        Right("np.kron, returned as a Tensor", pool_with_kron),
        Right("tensor ops: expand, reshape, pad", pool_with_tensor_ops),
    ],
)


# ------------------------------------------------------------------------ take
def take_right(output_grad, x, indices):
    x_bar = np.zeros(x.numel())
    np.add.at(x_bar, indices.numpy().reshape(-1), output_grad.numpy().reshape(-1))
    return x_bar.reshape(x.shape)


def take_by_bincount(output_grad, x, indices):
    counts = np.bincount(
        indices.numpy().reshape(-1), weights=output_grad.numpy().reshape(-1), minlength=x.numel()
    )
    return wb.tensor(counts).reshape(x.shape)


def take_by_a_loop(output_grad, x, indices):
    x_bar = np.zeros(x.shape)
    flat = x_bar.reshape(-1)  # a view: writes land in x_bar
    for i, g in zip(indices.numpy().reshape(-1), output_grad.numpy().reshape(-1)):
        flat[i] += g
    return x_bar


def take_by_a_matrix_product(output_grad, x, indices):
    hits = (indices.reshape(-1, 1) == wb.arange(x.numel())).double()  # a row per index
    return (output_grad.reshape(1, -1) @ hits).reshape(x.shape)


def take_assigned(output_grad, x, indices):
    x_bar = np.zeros(x.numel())
    x_bar[indices.numpy().reshape(-1)] = output_grad.numpy().reshape(-1)
    return x_bar.reshape(x.shape)


def take_fancy_plus_equals(output_grad, x, indices):
    x_bar = np.zeros(x.numel())
    x_bar[indices.numpy().reshape(-1)] += output_grad.numpy().reshape(-1)
    return x_bar.reshape(x.shape)


def take_left_flat(output_grad, x, indices):
    return take_right(output_grad, x, indices).reshape(-1)


def take_counts(output_grad, x, indices):
    x_bar = np.zeros(x.numel())
    np.add.at(x_bar, indices.numpy().reshape(-1), 1.0)
    return x_bar.reshape(x.shape)


def take_forward_values(output_grad, x, indices):
    x_bar = np.zeros(x.numel())
    flat = indices.numpy().reshape(-1)
    np.add.at(x_bar, flat, x.numpy().reshape(-1)[flat])
    return x_bar.reshape(x.shape)


def take_the_gather(output_grad, x, indices):
    return output_grad.numpy()


def take_wrong_sign(output_grad, x, indices):
    return -take_right(output_grad, x, indices)


def take_reversed_upstream(output_grad, x, indices):
    """ȳ read backwards: no cause the check can know."""
    flipped = output_grad.numpy().reshape(-1)[::-1].reshape(output_grad.shape)
    return take_right(wb.tensor(flipped), x, indices)


TAKE = Catalogue(
    exercise="08-conv-pool-take",
    check=check_take_backward,
    mistakes=[
        Mistake(
            "= instead of += : fancy-index assignment",
            take_assigned,
            says=["(3) kept only its last gradient", "np.add.at"],
        ),
        Mistake(
            "fancy-index += with a repeated index",
            take_fancy_plus_equals,
            says=["(3) kept only its last gradient", "x̄[i] += ȳ both keep one value"],
        ),
        Mistake(
            "left flat, not reshaped to x",
            take_left_flat,
            says=["With x of shape (2, 3)", "is still flat", "(reshaped, its values are right)"],
            never=["summed back", "matmul", "transpose"],
            kind="shape",
        ),
        Mistake(
            "the local derivative not multiplied by ȳ",
            take_counts,
            says=["counts how often", "local derivative alone"],
        ),
        Mistake(
            "x's values where ȳ was due (operands swapped)",
            take_forward_values,
            says=["values taken from x", "carries ȳ"],
        ),
        Mistake(
            "ȳ returned as it is (its shape)",
            take_the_gather,
            says=["has the shape of ȳ"],
            never=["summed back", "matmul", "transpose"],
            kind="shape",
        ),
        Mistake("a sign", take_wrong_sign, says=["wrong sign"], kind="sign"),
        Mistake(
            "ȳ read backwards: no cause the check can know",
            take_reversed_upstream,
            says=["your x̄ is wrong at", EXPECTED_GOT],
            kind="elements",
        ),
    ],
    rights=[
        Right("np.add.at (the lesson's)", take_right),
        Right("np.bincount with weights, as a Tensor", take_by_bincount),
        Right("a Python loop that adds", take_by_a_loop),
        Right("tensor ops: ȳ times a one-hot matrix of the indices", take_by_a_matrix_product),
    ],
)


# ----------------------------------------------------------------- cross-entropy
def onehot(logits, labels) -> np.ndarray:
    return np.eye(logits.shape[1])[labels.numpy()]


def xent_right(logits, labels):
    p = logits.softmax(1)
    return (p - wb.tensor(onehot(logits, labels))) / logits.shape[0]


def xent_by_numpy(logits, labels):
    z = logits.numpy()
    e = np.exp(z - z.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    p[np.arange(len(z)), labels.numpy()] -= 1
    return p / len(z)


def xent_via_log_softmax(logits, labels):
    return (F.log_softmax(logits, 1).exp() - wb.tensor(onehot(logits, labels))) / len(labels)


def xent_by_autograd(logits, labels):
    z = logits.detach().requires_grad_()
    return wb.autograd.grad(F.cross_entropy(z, labels), z)[0]


def xent_summed(logits, labels):
    return xent_right(logits, labels) * logits.shape[0]


def xent_by_classes(logits, labels):
    return xent_right(logits, labels) * logits.shape[0] / logits.shape[1]


def xent_by_every_element(logits, labels):
    return xent_right(logits, labels) / logits.shape[1]


def xent_without_onehot(logits, labels):
    return logits.softmax(1) / logits.shape[0]


def xent_without_softmax(logits, labels):
    return -wb.tensor(onehot(logits, labels)) / logits.shape[0]


def xent_over_the_batch(logits, labels):
    return (logits.softmax(0) - wb.tensor(onehot(logits, labels))) / logits.shape[0]


def xent_transposed(logits, labels):
    return xent_right(logits, labels).T


def xent_onehot_per_point(logits, labels):
    n = logits.shape[0]
    return (logits.softmax(1).numpy()[:, :1] - np.eye(n)[labels.numpy()]) / n


def xent_wrong_sign(logits, labels):
    return -xent_right(logits, labels)


def xent_log_probabilities(logits, labels):
    """log p where p was due: no cause the check can know."""
    return (F.log_softmax(logits, 1) - wb.tensor(onehot(logits, labels))) / logits.shape[0]


def xent_as_a_list(logits, labels):
    return xent_right(logits, labels).tolist()


XENT = Catalogue(
    exercise="09-training-xent-grad",
    check=check_cross_entropy_grad,
    mistakes=[
        Mistake(
            "the 1/N of the mean forgotten",
            xent_summed,
            says=["4 times the expected value", "divide by N = 4"],
            kind="factor",
        ),
        Mistake(
            "divided by C, the classes, not N",
            xent_by_classes,
            says=["divided by C = 3, the number of classes"],
            kind="factor",
        ),
        Mistake(
            "divided by N · C (a mean over every element)",
            xent_by_every_element,
            says=["divided by N · C = 12"],
            kind="factor",
        ),
        Mistake(
            "the one-hot forgotten",
            xent_without_onehot,
            says=["softmax(z) / N alone", "subtract the one-hot"],
        ),
        Mistake(
            "the softmax forgotten (nll_loss's gradient alone)",
            xent_without_softmax,
            says=["−onehot / N alone", "adds softmax(z) / N"],
        ),
        Mistake(
            "the softmax over the wrong axis",
            xent_over_the_batch,
            says=["over each row (the classes, axis 1), not over the batch"],
        ),
        Mistake(
            "a transpose",
            xent_transposed,
            says=["has shape (3, 4) where (4, 3)", "is transposed"],
            never=["matmul", "summed back"],
            kind="shape",
        ),
        Mistake(
            "a one-hot with a column per point",
            xent_onehot_per_point,
            says=["a column per point", "np.eye(C) with C = 3"],
            never=["matmul", "summed back", "transpose"],
            kind="shape",
        ),
        Mistake("a sign", xent_wrong_sign, says=["wrong sign"], kind="sign"),
        Mistake(
            "log p where p was due: no cause the check can know",
            xent_log_probabilities,
            says=["your ∂L/∂z is wrong at", EXPECTED_GOT],
            kind="elements",
        ),
        Mistake(
            "a list returned",
            xent_as_a_list,
            says=["is a list: return a Tensor or a numpy array"],
            never=["orig.args"],
        ),
    ],
    rights=[
        Right("softmax, one-hot, / N in tensor ops (the lesson's)", xent_right),
        Right("numpy: a stable softmax, 1 subtracted at the labels", xent_by_numpy),
        Right("exp of log_softmax", xent_via_log_softmax),
        Right("the engine's own gradient", xent_by_autograd),
    ],
)


# ------------------------------------------------------------- optimizer step
def sgd_right(params, state, lr, momentum):
    with wb.no_grad():
        for i, p in enumerate(params):
            b = state.get(i)
            b = p.grad.clone() if b is None else momentum * b + p.grad
            state[i] = b
            p -= lr * b


def sgd_from_zero(params, state, lr, momentum):
    with wb.no_grad():
        for i, p in enumerate(params):
            state[i] = b = momentum * state.get(i, wb.zeros_like(p)) + p.grad
            p.sub_(lr * b)


def sgd_through_data(params, state, lr, momentum):
    """No no_grad: .data writes bypass autograd, as old PyTorch code did."""
    for i, p in enumerate(params):
        b = state.get(i)
        b = p.grad.clone() if b is None else momentum * b + p.grad
        state[i] = b
        p.data -= lr * b


def sgd_lr_in_the_velocity(params, state, lr, momentum):
    """v ← μ · v + lr · g, p ← p − v: the same steps while lr stays the same."""
    with wb.no_grad():
        for i, p in enumerate(params):
            v = state.get(i)
            v = lr * p.grad if v is None else momentum * v + lr * p.grad
            state[i] = v
            p.add_(-v)


@wb.no_grad()
def sgd_decorated(params, state, lr, momentum):
    for i, p in enumerate(params):
        if i not in state:
            state[i] = p.grad.detach().clone()
        else:
            state[i].mul_(momentum).add_(p.grad)
        p.add_(state[i], alpha=-lr)


def sgd_without_no_grad(params, state, lr, momentum):
    for i, p in enumerate(params):
        b = state.get(i)
        b = p.grad.clone() if b is None else momentum * b + p.grad
        state[i] = b
        p -= lr * b


def sgd_without_no_grad_by_copy(params, state, lr, momentum):
    for i, p in enumerate(params):
        state[i] = b = momentum * state.get(i, wb.zeros_like(p)) + p.grad
        p.copy_(p - lr * b)


def sgd_no_grad_for_the_velocity_only(params, state, lr, momentum):
    for i, p in enumerate(params):
        with wb.no_grad():
            state[i] = b = momentum * state.get(i, wb.zeros_like(p)) + p.grad
        p -= lr * b


def sgd_grad_left_off(params, state, lr, momentum):
    wb.set_grad_enabled(False)
    sgd_right(params, state, lr, momentum)


def sgd_without_momentum(params, state, lr, momentum):
    with wb.no_grad():
        for p in params:
            p -= lr * p.grad


def sgd_velocity_not_stored(params, state, lr, momentum):
    with wb.no_grad():
        for i, p in enumerate(params):
            b = state.get(i)
            b = p.grad.clone() if b is None else momentum * b + p.grad
            p -= lr * b


def sgd_averaged(params, state, lr, momentum):
    with wb.no_grad():
        for i, p in enumerate(params):
            state[i] = b = momentum * state.get(i, wb.zeros_like(p)) + (1 - momentum) * p.grad
            p -= lr * b


def sgd_velocity_after_the_step(params, state, lr, momentum):
    with wb.no_grad():
        for i, p in enumerate(params):
            b = state.get(i, wb.zeros_like(p))
            p -= lr * b
            state[i] = momentum * b + p.grad


def sgd_velocity_after_the_step_from_g(params, state, lr, momentum):
    with wb.no_grad():
        for i, p in enumerate(params):
            b = state.get(i)
            if b is None:
                b = p.grad.clone()
            p -= lr * b
            state[i] = momentum * b + p.grad


def sgd_aliased(params, state, lr, momentum):
    with wb.no_grad():
        for i, p in enumerate(params):
            b = state.get(i)
            b = p.grad if b is None else momentum * b + p.grad
            state[i] = b
            p -= lr * b


def sgd_aliased_in_place(params, state, lr, momentum):
    with wb.no_grad():
        for i, p in enumerate(params):
            if i not in state:
                state[i] = p.grad
            else:
                state[i].mul_(momentum).add_(p.grad)
            p -= lr * state[i]


def sgd_lr_twice(params, state, lr, momentum):
    with wb.no_grad():
        for i, p in enumerate(params):
            state[i] = b = momentum * state.get(i, wb.zeros_like(p)) + lr * p.grad
            p -= lr * b


def sgd_uphill(params, state, lr, momentum):
    with wb.no_grad():
        for i, p in enumerate(params):
            state[i] = b = momentum * state.get(i, wb.zeros_like(p)) + p.grad
            p += lr * b


def sgd_rebinds(params, state, lr, momentum):
    with wb.no_grad():
        for i, p in enumerate(params):
            state[i] = b = momentum * state.get(i, wb.zeros_like(p)) + p.grad
            p = p - lr * b  # noqa: PLW2901  (the mistake: a new tensor, the parameter unchanged)


def sgd_lr_forgotten(params, state, lr, momentum):
    with wb.no_grad():
        for i, p in enumerate(params):
            state[i] = b = momentum * state.get(i, wb.zeros_like(p)) + p.grad
            p -= b


def sgd_momentum_in_the_step(params, state, lr, momentum):
    """p ← p − lr · μ · b: a factor the check cannot trace to its cause."""
    with wb.no_grad():
        for i, p in enumerate(params):
            state[i] = b = momentum * state.get(i, wb.zeros_like(p)) + p.grad
            p -= lr * momentum * b


def sgd_nesterov(params, state, lr, momentum):
    """Nesterov's step, where plain momentum was asked: at step 1 a factor 1 + μ."""
    with wb.no_grad():
        for i, p in enumerate(params):
            state[i] = b = momentum * state.get(i, wb.zeros_like(p)) + p.grad
            p -= lr * (p.grad + momentum * b)


def sgd_weight_decay(params, state, lr, momentum):
    """A weight decay nobody asked for: no cause the check can know."""
    with wb.no_grad():
        for i, p in enumerate(params):
            g = p.grad + 0.01 * p
            state[i] = b = momentum * state.get(i, wb.zeros_like(p)) + g
            p -= lr * b


def sgd_typo(params, state, lr, momentum):
    with wb.no_grad():
        for p in params:
            p -= lr * p.gradient


MOMENTUM = Catalogue(
    exercise="09-training-momentum",
    check=check_optimizer_step,
    mistakes=[
        Mistake(
            "the update made without no_grad",
            sgd_without_no_grad,
            says=["while autograd was recording", "`p -= lr * b`", "with wb.no_grad():"],
            never=["raised an error"],
        ),
        Mistake(
            "without no_grad, through copy_",
            sgd_without_no_grad_by_copy,
            says=["while autograd was recording", "with wb.no_grad():"],
        ),
        Mistake(
            "no_grad around the velocity only",
            sgd_no_grad_for_the_velocity_only,
            says=["while autograd was recording", "with wb.no_grad():"],
        ),
        Mistake(
            "autograd switched off and left off",
            sgd_grad_left_off,
            says=["left autograd switched off", "with wb.no_grad():"],
        ),
        Mistake(
            "no momentum",
            sgd_without_momentum,
            says=["At step 2", "plain SGD without momentum"],
        ),
        Mistake(
            "the velocity not kept in state",
            sgd_velocity_not_stored,
            says=["plain SGD without momentum", "Keep it in state"],
        ),
        Mistake(
            "a damped velocity: (1 − μ) · g",
            sgd_averaged,
            says=["At step 1", "Your velocity is an average"],
            kind="factor",
        ),
        Mistake(
            "the velocity updated after the step",
            sgd_velocity_after_the_step,
            says=["the velocity of the step before"],
            never=["in place"],
            kind="zeros",
        ),
        Mistake(
            "the velocity updated after the step, started at g",
            sgd_velocity_after_the_step_from_g,
            says=["At step 2", "the velocity of the step before"],
        ),
        Mistake(
            "the momentum buffer not copied (aliasing p.grad)",
            sgd_aliased,
            says=["At step 2", "p.grad itself, not a copy", "p.grad.clone()"],
        ),
        Mistake(
            "the momentum buffer aliasing p.grad, updated in place",
            sgd_aliased_in_place,
            says=["p.grad itself, not a copy"],
        ),
        Mistake(
            "lr applied twice",
            sgd_lr_twice,
            says=["apply lr twice"],
            kind="factor",
        ),
        Mistake(
            "a sign: a step uphill",
            sgd_uphill,
            says=["wrong sign", "Step against the gradient"],
            kind="sign",
        ),
        Mistake(
            "= instead of an in-place change: p rebound",
            sgd_rebinds,
            says=["left every parameter as it was", "p = p - lr * b makes a new tensor"],
            kind="zeros",
        ),
        Mistake(
            "lr forgotten",
            sgd_lr_forgotten,
            says=["1/lr = 20 times too large"],
            kind="factor",
        ),
        Mistake(
            "an unknown factor: momentum in the step",
            sgd_momentum_in_the_step,
            says=["9/10 of the expected value", "off by a constant factor of 10/9"],
            never=["lr", "in place", "velocity"],
            kind="factor",
        ),
        Mistake(
            "Nesterov's step: a factor at step 1, no cause named",
            sgd_nesterov,
            says=["At step 1", "1.9 times the expected value"],
            never=["lr", "in place", "velocity"],
            kind="factor",
        ),
        Mistake(
            "a weight decay nobody asked for: no cause the check can know",
            sgd_weight_decay,
            says=["the change your step made to w is wrong at", EXPECTED_GOT],
            kind="elements",
        ),
        Mistake(
            "a typo: an error in the step",
            sgd_typo,
            says=["Your step sgd_typo raised an error on line", "p.gradient"],
        ),
    ],
    rights=[
        Right("clone at first, then μ · b + g (the lesson's)", sgd_right),
        Right("started from zeros, sub_", sgd_from_zero),
        Right("through .data, without no_grad", sgd_through_data),
        Right("lr inside the velocity: v ← μ · v + lr · g", sgd_lr_in_the_velocity),
        Right("@no_grad decorator, buffer updated in place after a copy", sgd_decorated),
    ],
)


# ------------------------------------------------------- gradient accumulation
def accumulate_right(model, loss_fn, X, y, micro_batch):
    N = len(y)
    for start in range(0, N, micro_batch):
        xb, yb = X[start : start + micro_batch], y[start : start + micro_batch]
        (loss_fn(model(xb), yb) * (len(yb) / N)).backward()


def accumulate_sums(model, loss_fn, X, y, micro_batch):
    for xb, yb in zip(X.split(micro_batch), y.split(micro_batch)):
        (F.cross_entropy(model(xb), yb, reduction="sum") / len(y)).backward()


def accumulate_then_divide(model, loss_fn, X, y, micro_batch):
    for xb, yb in zip(X.split(micro_batch), y.split(micro_batch)):
        (loss_fn(model(xb), yb) * len(yb)).backward()
    with wb.no_grad():
        for p in model.parameters():
            p.grad /= len(y)


def accumulate_by_hand(model, loss_fn, X, y, micro_batch):
    params = list(model.parameters())
    for start in range(0, len(y), micro_batch):
        xb, yb = X[start : start + micro_batch], y[start : start + micro_batch]
        grads = wb.autograd.grad(loss_fn(model(xb), yb) * len(yb) / len(y), params)
        for p, g in zip(params, grads):
            p.grad = g if p.grad is None else p.grad + g


def accumulate_unscaled(model, loss_fn, X, y, micro_batch):
    for start in range(0, len(y), micro_batch):
        loss_fn(model(X[start : start + micro_batch]), y[start : start + micro_batch]).backward()


def accumulate_by_count(model, loss_fn, X, y, micro_batch):
    count = -(-len(y) // micro_batch)
    for xb, yb in zip(X.split(micro_batch), y.split(micro_batch)):
        (loss_fn(model(xb), yb) / count).backward()


def accumulate_means_over_n(model, loss_fn, X, y, micro_batch):
    for xb, yb in zip(X.split(micro_batch), y.split(micro_batch)):
        (loss_fn(model(xb), yb) / len(y)).backward()


def accumulate_zeroed_each_time(model, loss_fn, X, y, micro_batch):
    for start in range(0, len(y), micro_batch):
        model.zero_grad()
        xb, yb = X[start : start + micro_batch], y[start : start + micro_batch]
        (loss_fn(model(xb), yb) * (len(yb) / len(y))).backward()


def accumulate_assigned(model, loss_fn, X, y, micro_batch):
    params = list(model.parameters())
    for start in range(0, len(y), micro_batch):
        xb, yb = X[start : start + micro_batch], y[start : start + micro_batch]
        grads = wb.autograd.grad(loss_fn(model(xb), yb) * len(yb) / len(y), params)
        for p, g in zip(params, grads):
            p.grad = g


def accumulate_floor_division(model, loss_fn, X, y, micro_batch):
    for k in range(len(y) // micro_batch):
        xb, yb = (
            X[k * micro_batch : (k + 1) * micro_batch],
            y[k * micro_batch : (k + 1) * micro_batch],
        )
        (loss_fn(model(xb), yb) * (len(yb) / len(y))).backward()


def accumulate_backward_twice(model, loss_fn, X, y, micro_batch):
    """backward twice on each micro-batch: a factor 2 the check cannot trace."""
    for start in range(0, len(y), micro_batch):
        xb, yb = X[start : start + micro_batch], y[start : start + micro_batch]
        loss = loss_fn(model(xb), yb) * (len(yb) / len(y))
        loss.backward(retain_graph=True)
        loss.backward()


def accumulate_stepped(model, loss_fn, X, y, micro_batch):
    accumulate_right(model, loss_fn, X, y, micro_batch)
    with wb.no_grad():
        for p in model.parameters():
            p -= 0.1 * p.grad


def accumulate_nothing(model, loss_fn, X, y, micro_batch):
    for start in range(0, len(y), micro_batch):
        loss_fn(model(X[start : start + micro_batch]), y[start : start + micro_batch])


def accumulate_first_points_twice(model, loss_fn, X, y, micro_batch):
    """Each micro-batch starts at 0: no cause the check can know."""
    for _ in range(0, len(y), micro_batch):
        xb, yb = X[:micro_batch], y[:micro_batch]
        (loss_fn(model(xb), yb) * (len(yb) / len(y))).backward()


ACCUMULATE = Catalogue(
    exercise="09-training-accumulate",
    check=check_accumulated_gradients,
    mistakes=[
        Mistake(
            "the micro-batches' means not scaled",
            accumulate_unscaled,
            says=["3 times the expected value", "scale each micro-batch's loss by its share"],
            kind="factor",
        ),
        Mistake(
            "divided by the number of micro-batches",
            accumulate_by_count,
            says=["sizes [4, 4, 2]", "divided each micro-batch's mean loss by the number"],
        ),
        Mistake(
            "a mean divided by N again",
            accumulate_means_over_n,
            says=["1/3 of the expected value", "a mean has already divided"],
            kind="factor",
        ),
        Mistake(
            "zero_grad inside the loop",
            accumulate_zeroed_each_time,
            says=["the last micro-batch's gradient alone"],
        ),
        Mistake(
            "= instead of += : p.grad assigned",
            accumulate_assigned,
            says=["the last micro-batch's gradient alone", "replaced by assigning p.grad"],
        ),
        Mistake(
            "the last, smaller micro-batch left out",
            accumulate_floor_division,
            says=["sizes [4, 4, 2]", "The last, smaller micro-batch is missing"],
        ),
        Mistake(
            "backward run twice",
            accumulate_backward_twice,
            says=["2 times the expected value"],
            kind="factor",
        ),
        Mistake(
            "a step taken",
            accumulate_stepped,
            says=["your function changed w1", "take no step"],
        ),
        Mistake(
            "no backward at all",
            accumulate_nothing,
            says=["w1.grad is None", "Run backward() on each micro-batch's loss"],
            never=["return a tensor"],
            kind="missing",
        ),
        Mistake(
            "every micro-batch the first one: no cause the check can know",
            accumulate_first_points_twice,
            says=["w1.grad is wrong at", EXPECTED_GOT],
            kind="elements",
        ),
    ],
    rights=[
        Right("each mean scaled by its size over N (the lesson's)", accumulate_right),
        Right("sums, each divided by N", accumulate_sums),
        Right("means times sizes, the sum divided by N at the end", accumulate_then_divide),
        Right("autograd.grad, added into p.grad by hand", accumulate_by_hand),
    ],
)


# ------------------------------------------------------------- a safe where (lesson 8)
def safe_sqrt_right(x):
    safe = wb.where(x > 0, x, 1)
    return wb.where(x > 0, safe.sqrt(), 0)


def safe_sqrt_by_relu(x):
    return x.relu().sqrt()  # relu′(0) = 0 stops sqrt's infinite slope at the boundary


def safe_sqrt_masked(x):
    positive = x > 0
    safe = wb.where(positive, x, wb.ones_like(x))
    return safe.sqrt() * positive


SAFE_WHERE = Catalogue(
    exercise="08-conv-pool-safe-where",
    check=check_safe_sqrt,
    mistakes=[
        Mistake(
            "one where: NaN from the untaken branch",
            lambda x: wb.where(x > 0, x.sqrt(), 0),
            says=["NaN at x = -2, -0.5, 0", "the untaken branch", "safe = wb.where(x > 0, x, 1)"],
            kind="untaken_branch",
        ),
        Mistake(
            "a clamp: the gradient gets through at the boundary",
            lambda x: x.clamp(min=0).sqrt(),
            says=["inf at the boundary x = 0", "clamp(min=0)"],
            kind="boundary",
        ),
        Mistake(
            "x >= 0: the sqrt branch taken at 0",
            lambda x: wb.where(x >= 0, wb.where(x >= 0, x, 1).sqrt(), 0),
            says=["inf at the boundary x = 0", "x >= 0"],
            kind="boundary",
        ),
        Mistake(
            "no outer where: the placeholder's value at 0",
            lambda x: wb.where(x > 0, x, 1).sqrt(),
            says=["your value is 1, 1, 1 at x = -2, -0.5, 0", "must be 0"],
            kind="value_at_zero",
        ),
        Mistake(
            "numpy: no graph",
            lambda x: np.sqrt(np.maximum(x.detach().numpy(), 0)),
            says=["returned a value of type ndarray", "tensor operations"],
        ),
        Mistake(
            "a tiny epsilon: a huge gradient at 0, no cause the check can know",
            lambda x: (x.clamp(min=0) + 1e-30).sqrt() - 1e-15,
            says=["your gradient is wrong at 1 element", EXPECTED_GOT],
            kind="elements",
        ),
    ],
    rights=[
        Right("the double where (the lesson's)", safe_sqrt_right),
        Right("relu, then sqrt", safe_sqrt_by_relu),
        Right("a mask times the sqrt of a safe input", safe_sqrt_masked),
    ],
)


CATALOGUES = [SAFE_WHERE, POOL, TAKE, XENT, MOMENTUM, ACCUMULATE]


@pytest.mark.parametrize("catalogue", CATALOGUES, ids=lambda c: c.exercise)
def test_an_unanswered_exercise_is_not_answered_yet(catalogue):
    """The learner's copy (the stub's ``raise NotImplementedError()``): not a mistake."""
    with pytest.raises(NotAnswered) as caught:
        catalogue.check(not_yet)
    assert str(caught.value).startswith("Not answered yet")
