"""Misconception catalogues of lessons 5, 6 and 7: checkpointing, custom Functions, higher order.

Each exercise's check (the same function its lesson calls) runs the mistakes learners
make, each of which it must name (and no wrong cause), and right answers written in
other ways, which must pass.
"""

from __future__ import annotations

import numpy as np
import pytest
from catalogue import Catalogue, Mistake, Right

import workbench as wb
from workbench.autograd import Function
from workbench.exercises import (
    ExerciseError,
    NotAnswered,
    check_function,
    check_hvp,
    check_hypot,
    check_jacobian,
    check_peak_measure,
    check_power,
    check_segments,
    check_softplus,
)
from workbench.utils.checkpoint import checkpoint_sequential
from workbench.viz.memory import watch_memory


# ------------------------------------------------------- 05-checkpointing-peak
def run_step(layers, x, segments):
    checkpoint_sequential(layers, segments, x, use_reentrant=False).sum().backward()


def peak_saved(layers, x, segments):
    start = wb.autograd.saved_memory().current
    wb.autograd.reset_peak_saved_memory()
    run_step(layers, x, segments)
    return wb.autograd.saved_memory().peak - start


def peak_reset_first(layers, x, segments):
    wb.autograd.reset_peak_saved_memory()  # the peak is now what is held: read it as the start
    start = wb.autograd.saved_memory().peak
    run_step(layers, x, segments)
    return wb.autograd.saved_memory().peak - start


def peak_watched(layers, x, segments):
    with watch_memory() as memory:  # resets the peak, and counts above what was held
        run_step(layers, x, segments)
    return memory.peak_bytes


def peak_held_before(layers, x, segments):
    wb.autograd.reset_peak_saved_memory()
    run_step(layers, x, segments)
    return wb.autograd.saved_memory().peak


def peak_not_reset(layers, x, segments):
    start = wb.autograd.saved_memory().current
    run_step(layers, x, segments)
    return wb.autograd.saved_memory().peak - start


def peak_reads_current(layers, x, segments):
    start = wb.autograd.saved_memory().current
    wb.autograd.reset_peak_saved_memory()
    run_step(layers, x, segments)
    return wb.autograd.saved_memory().current - start


def peak_reset_after(layers, x, segments):
    start = wb.autograd.saved_memory().current
    run_step(layers, x, segments)
    wb.autograd.reset_peak_saved_memory()
    return wb.autograd.saved_memory().peak - start


def peak_ignores_segments(layers, x, segments):
    return peak_saved(layers, x, 1)


def peak_in_kib(layers, x, segments):
    return peak_saved(layers, x, segments) // 1024


def peak_and_current(layers, x, segments):
    wb.autograd.reset_peak_saved_memory()
    run_step(layers, x, segments)
    return wb.autograd.saved_memory()


def peak_forward_only(layers, x, segments):
    start = wb.autograd.saved_memory().current
    wb.autograd.reset_peak_saved_memory()
    checkpoint_sequential(layers, segments, x, use_reentrant=False).sum()
    return wb.autograd.saved_memory().peak - start


def peak_of_one_more_segment(layers, x, segments):
    return peak_saved(layers, x, min(segments + 1, len(layers)))


PEAK = Catalogue(
    exercise="05-checkpointing-peak",
    check=check_peak_measure,
    mistakes=[
        Mistake(
            "the bytes held before the step not subtracted",
            peak_held_before,
            says=["counts the", "another graph already held", "Subtract saved_memory().current"],
        ),
        Mistake(
            "the peak not reset before the step",
            peak_not_reset,
            says=["an earlier, bigger peak", "reset_peak_saved_memory() before the step"],
            never=["read saved_memory().peak, not .current"],
        ),
        Mistake(
            "the current bytes read after backward, not the peak",
            peak_reads_current,
            says=["what is still held once backward has freed the graph", "saved_memory().peak"],
            never=["an earlier, bigger peak"],
        ),
        Mistake(
            "the peak reset after the step, not before",
            peak_reset_after,
            says=["what is still held once backward has freed the graph", "before the step"],
            never=["read saved_memory().peak, not .current"],
        ),
        Mistake(
            "the segment count ignored (always 1 segment)",
            peak_ignores_segments,
            says=["for 1, 3, 6, 12 and 2 segments alike", "pass segments on"],
            never=["an earlier, bigger peak", "reset_peak"],
        ),
        Mistake(
            "KiB where bytes were asked for",
            peak_in_kib,
            says=["that is the peak in KiB", "Return bytes"],
        ),
        Mistake(
            "the counters returned, not a number of bytes",
            peak_and_current,
            says=["returned a SavedMemoryStats", "return the bytes, an int"],
        ),
        Mistake(
            "the forward pass measured, not the backward",
            peak_forward_only,
            says=["the peak of the forward pass alone", "peak comes in backward"],
        ),
        Mistake(
            "a measurement it cannot explain",
            peak_of_one_more_segment,
            says=["where the step's peak was"],
            kind="elements",
        ),
    ],
    rights=[
        Right("the start read before the reset", peak_saved),
        Right("the reset first, the start read from the fresh peak", peak_reset_first),
        Right("watch_memory's peak_bytes", peak_watched),
    ],
)


# ----------------------------------------------------- 05-checkpointing-budget
def segments_for(budget, layers, x):
    for segments in range(1, len(layers) + 1):
        if peak_saved(layers, x, segments) <= budget:
            return segments
    return None


def segments_from_a_table(budget, layers, x):
    peaks = {s: peak_watched(layers, x, s) for s in range(1, len(layers) + 1)}
    fits = [s for s, peak in peaks.items() if peak <= budget]
    return min(fits) if fits else None


def segments_by_next(budget, layers, x):
    counts = range(1, len(layers) + 1)
    return next((s for s in counts if peak_reset_first(layers, x, s) <= budget), None)


def segments_least_peak(budget, layers, x):
    if segments_for(budget, layers, x) is None:
        return None
    return min(range(1, len(layers) + 1), key=lambda s: peak_saved(layers, x, s))


def segments_from_the_top(budget, layers, x):
    for segments in range(len(layers), 0, -1):
        if peak_saved(layers, x, segments) <= budget:
            return segments
    return None


def segments_strictly_under(budget, layers, x):
    for segments in range(1, len(layers) + 1):
        if peak_saved(layers, x, segments) < budget:
            return segments
    return None


def segments_never_none(budget, layers, x):
    return segments_for(budget, layers, x) or len(layers)


def segments_from_two(budget, layers, x):
    for segments in range(2, len(layers) + 1):
        if peak_saved(layers, x, segments) <= budget:
            return segments
    return None


def segments_at_most_two(budget, layers, x):
    found = segments_for(budget, layers, x)
    return None if found is None else min(found, 2)


def segments_returns_the_peak(budget, layers, x):
    found = segments_for(budget, layers, x)
    return None if found is None else peak_saved(layers, x, found)


def segments_unreset_peaks(budget, layers, x):
    for segments in range(1, len(layers) + 1):
        if peak_not_reset(layers, x, segments) <= budget:
            return segments
    return None


BUDGET = Catalogue(
    exercise="05-checkpointing-budget",
    check=check_segments,
    mistakes=[
        Mistake(
            "the least peak, not the fewest segments that fit",
            segments_least_peak,
            says=["fits too", "return the fewest segments that fit"],
        ),
        Mistake(
            "the search from the most segments down",
            segments_from_the_top,
            says=["fits too", "return the fewest segments that fit"],
        ),
        Mistake(
            "a peak equal to the budget taken as over it (< for <=)",
            segments_strictly_under,
            says=["exactly the budget", "<="],
            never=["try every segment count", "return the fewest segments that fit"],
        ),
        Mistake(
            "a count where no count fits",
            segments_never_none,
            says=["no segment count fits", "return None"],
        ),
        Mistake(
            "the search started at 2 segments",
            segments_from_two,
            says=["1 segment (nothing checkpointed) fits too", "return the fewest segments"],
        ),
        Mistake(
            "a count over the budget",
            segments_at_most_two,
            says=["you chose 2 segments", "over the budget", "3 segments fit"],
        ),
        Mistake(
            "the peak returned, not the count",
            segments_returns_the_peak,
            says=["return a whole number of segments from 1 to 12"],
        ),
        Mistake(
            "each count measured without resetting the peak",
            segments_unreset_peaks,
            says=["you returned None, but", "within the budget"],
            never=["try every segment count"],
        ),
    ],
    rights=[
        Right("the first count that fits, from 1 up", segments_for),
        Right("a table of peaks, the smallest count that fits", segments_from_a_table),
        Right("next() over the counts", segments_by_next),
    ],
)


# ------------------------------------------------- 06-custom-functions-softplus
class Softplus(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0) + (-x.abs()).exp().log1p()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.sigmoid()


class SoftplusRelu(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.relu() + (1 + (-x.abs()).exp()).log()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad / (1 + (-x).exp())  # e^{-x} may be inf: then the gradient is 0, rightly


class SoftplusWhere(Function):
    @staticmethod
    def forward(ctx, x):
        y = wb.where(x > 0, x + (-x).exp().log1p(), x.exp().log1p())
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * (1 - (-y).exp())  # σ(x) = 1 − e^{−y}, written in the output


class SoftplusNaive(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (1 + x.exp()).log()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.sigmoid()


class SoftplusNaiveBackward(Softplus):
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.exp() / (1 + x.exp())


class SoftplusNoUpstream(Softplus):
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return x.sigmoid()


class SoftplusAtTheOutput(Function):
    @staticmethod
    def forward(ctx, x):
        y = x.clamp(min=0) + (-x.abs()).exp().log1p()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y.sigmoid()


class SoftplusNothingSaved(Function):
    @staticmethod
    def forward(ctx, x):
        return x.clamp(min=0) + (-x.abs()).exp().log1p()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.sigmoid()


class SoftplusMirrored(Softplus):
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (1 - x.sigmoid())


class SoftplusSign(Softplus):
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return -grad * x.sigmoid()


SOFTPLUS = Catalogue(
    exercise="06-custom-functions-softplus",
    check=check_softplus,
    mistakes=[
        Mistake(
            "log(1 + eˣ) as written: e^x overflows",
            SoftplusNaive,
            says=["infinity", "x = 800", "overflows"],
            never=["divided by zero", "log of a negative number"],
        ),
        Mistake(
            "eˣ / (1 + eˣ) in backward: inf / inf",
            SoftplusNaiveBackward,
            says=["NaN", "x = 800", "overflows"],
            never=["divided by zero", "log of a negative number"],
        ),
        Mistake(
            "ȳ forgotten",
            SoftplusNoUpstream,
            says=["the local derivative alone", "Multiply it by ȳ"],
        ),
        Mistake(
            "σ of the output, not of the input",
            SoftplusAtTheOutput,
            says=["the derivative taken at the output y, not at the input x"],
        ),
        Mistake(
            "nothing saved in forward",
            SoftplusNothingSaved,
            says=["ctx.saved_tensors is empty", "ctx.save_for_backward"],
        ),
        Mistake("a sign", SoftplusSign, says=["wrong sign"], kind="sign"),
        Mistake(
            "σ(−x) in place of σ(x)",
            SoftplusMirrored,
            says=["where", "was expected"],
            kind="elements",
        ),
    ],
    rights=[
        Right("max(x, 0) + log1p(e^{−|x|}), σ(x)", Softplus),
        Right("relu + log(1 + e^{−|x|}), 1 / (1 + e^{−x})", SoftplusRelu),
        Right("where, the output saved, 1 − e^{−y}", SoftplusWhere),
    ],
)


# --------------------------------------------------- 06-custom-functions-hypot
class Hypot(Function):
    @staticmethod
    def forward(ctx, a, b):
        y = (a * a + b * b).sqrt()
        ctx.save_for_backward(a, b, y)
        return y

    @staticmethod
    def backward(ctx, grad):
        a, b, y = ctx.saved_tensors
        return grad * a / y, grad * b / y


class HypotRecomputed(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return (a**2 + b**2).sqrt()

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        scale = grad / (a**2 + b**2).sqrt()
        return [scale * a, scale * b]


class HypotWanted(Hypot):
    @staticmethod
    def backward(ctx, grad):
        a, b, y = ctx.saved_tensors
        a_bar = grad * a / y if ctx.needs_input_grad[0] else None
        b_bar = grad * b / y if ctx.needs_input_grad[1] else None
        return a_bar, b_bar


class HypotCopiedA(Hypot):
    @staticmethod
    def backward(ctx, grad):
        a, b, y = ctx.saved_tensors
        return grad * a / y, grad * a / y


class HypotCopiedB(Hypot):
    @staticmethod
    def backward(ctx, grad):
        a, b, y = ctx.saved_tensors
        return grad * b / y, grad * b / y


class HypotSwapped(Hypot):
    @staticmethod
    def backward(ctx, grad):
        a, b, y = ctx.saved_tensors
        return grad * b / y, grad * a / y


class HypotNoUpstream(Hypot):
    @staticmethod
    def backward(ctx, grad):
        a, b, y = ctx.saved_tensors
        return a / y, b / y


class HypotTwice(Hypot):
    @staticmethod
    def backward(ctx, grad):
        a, b, y = ctx.saved_tensors
        return grad * 2 * a / y, grad * 2 * b / y  # the 2 of a², without the ½ of √


class HypotOneGradient(Hypot):
    @staticmethod
    def backward(ctx, grad):
        a, b, y = ctx.saved_tensors
        return grad * a / y


class HypotUnpackedInAnotherOrder(Hypot):
    @staticmethod
    def backward(ctx, grad):
        y, a, b = ctx.saved_tensors  # saved as (a, b, y)
        return grad * a / y, grad * b / y


class HypotOverSquare(Hypot):
    @staticmethod
    def backward(ctx, grad):
        a, b, y = ctx.saved_tensors
        return grad * a / (a * a + b * b), grad * b / (a * a + b * b)


HYPOT = Catalogue(
    exercise="06-custom-functions-hypot",
    check=check_hypot,
    mistakes=[
        Mistake(
            "a's rule copied into b's place",
            HypotCopiedA,
            says=["your gradient for b is the one a should get", "b's own partial derivative"],
            never=["swapped"],
        ),
        Mistake(
            "b's rule copied into a's place",
            HypotCopiedB,
            says=["your gradient for a is the one b should get", "a's own partial derivative"],
            never=["swapped"],
        ),
        Mistake(
            "the two gradients swapped",
            HypotSwapped,
            says=["swapped", "in the order of forward's inputs"],
        ),
        Mistake("ȳ forgotten", HypotNoUpstream, says=["the local derivative alone"]),
        Mistake(
            "the 2 of a² kept, the ½ of the square root forgotten",
            HypotTwice,
            says=["2 times the expected value", "a 2 (or a ½)"],
        ),
        Mistake(
            "one gradient for two inputs",
            HypotOneGradient,
            says=["returned 1 gradient where 2 were expected"],
        ),
        Mistake(
            "saved tensors unpacked in another order",
            HypotUnpackedInAnotherOrder,
            says=["where", "was expected"],
            kind="elements",
        ),
        Mistake(
            "divided by a² + b² where y was meant",
            HypotOverSquare,
            says=["where", "was expected"],
            kind="elements",
        ),
    ],
    rights=[
        Right("a, b and y saved", Hypot),
        Right("y recomputed in backward, a list returned", HypotRecomputed),
        Right("needs_input_grad consulted", HypotWanted),
    ],
)


# --------------------------------------------------- 06-custom-functions-power
class Power(Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.k = k
        ctx.save_for_backward(x)
        return x**k

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * ctx.k * x ** (ctx.k - 1), None


class PowerFromTheOutput(Function):
    @staticmethod
    def forward(ctx, x, k):
        y = x.pow(k)
        ctx.k = k
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return [grad * ctx.k * y / x, None]  # k xᵏ⁻¹ = k y / x (x has no zero here)


class PowerWanted(Power):
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        x_bar = ctx.k * x.pow(ctx.k - 1) * grad if ctx.needs_input_grad[0] else None
        return x_bar, None


class PowerNoNone(Power):
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * ctx.k * x ** (ctx.k - 1)


class PowerZeroForK(Power):
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * ctx.k * x ** (ctx.k - 1), 0


class PowerSwapped(Power):
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return None, grad * ctx.k * x ** (ctx.k - 1)


class PowerNoK(Power):
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x ** (ctx.k - 1), None


class PowerNoUpstream(Power):
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return ctx.k * x ** (ctx.k - 1), None


class PowerSavesK(Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(x, k)
        return x**k

    @staticmethod
    def backward(ctx, grad):
        x, k = ctx.saved_tensors
        return grad * k * x ** (k - 1), None


class PowerKNotKept(Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(x)
        return x**k

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * k * x ** (k - 1), None  # noqa: F821 (k is forward's, the mistake)


class PowerExponentNotLowered(Power):
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * ctx.k * x**ctx.k, None


POWER = Catalogue(
    exercise="06-custom-functions-power",
    check=check_power,
    mistakes=[
        Mistake(
            "the None for k forgotten",
            PowerNoNone,
            says=["returned 1 gradient where 2 were expected", "None for an input"],
        ),
        Mistake(
            "a 0 for k, not None",
            PowerZeroForK,
            says=["your gradient for k should be None", "return None in its place"],
            never=["not a Tensor", "Build it with tensor operations"],
        ),
        Mistake(
            "(None, x̄): the gradients swapped",
            PowerSwapped,
            says=["swapped", "in the order of forward's inputs"],
        ),
        Mistake("the factor k forgotten", PowerNoK, says=["1/3 of the expected value"]),
        Mistake("ȳ forgotten", PowerNoUpstream, says=["the local derivative alone"]),
        Mistake(
            "k saved with save_for_backward",
            PowerSavesK,
            says=["save_for_backward is for tensors", "ctx.k = k"],
        ),
        Mistake(
            "k not kept on ctx",
            PowerKNotKept,
            says=["k is an argument of forward", "ctx.k = k"],
        ),
        Mistake(
            "xᵏ where xᵏ⁻¹ was meant",
            PowerExponentNotLowered,
            says=["where", "was expected"],
            kind="elements",
        ),
    ],
    rights=[
        Right("k on ctx, x saved", Power),
        Right("from the output, k y / x, a list", PowerFromTheOutput),
        Right("needs_input_grad consulted, pow()", PowerWanted),
    ],
)


# ------------------------------------------------------------ 07-higher-order-hvp
def hvp(f, x, v):
    (g,) = wb.autograd.grad(f(x), x, create_graph=True)
    (hv,) = wb.autograd.grad((g * v).sum(), x)
    return hv


def hvp_as_grad_outputs(f, x, v):
    (g,) = wb.autograd.grad(f(x), x, create_graph=True)
    return wb.autograd.grad(g, x, v)[0]  # vᵀ ∂g/∂x, with v as ȳ


def hvp_by_backward(f, x, v):
    f(x).backward(create_graph=True)
    g = x.grad
    x.grad = None  # or the second backward adds H·v to g
    (v * g).sum().backward()
    return x.grad


def hvp_no_create_graph(f, x, v):
    (g,) = wb.autograd.grad(f(x), x)
    return wb.autograd.grad((g * v).sum(), x)[0]


def hvp_retain_not_create(f, x, v):
    (g,) = wb.autograd.grad(f(x), x, retain_graph=True)
    return wb.autograd.grad((g * v).sum(), x)[0]


def hvp_gradient_only(f, x, v):
    return wb.autograd.grad(f(x), x)[0]


def hvp_without_v(f, x, v):
    (g,) = wb.autograd.grad(f(x), x, create_graph=True)
    return wb.autograd.grad(g.sum(), x)[0]


def hvp_directional(f, x, v):
    (g,) = wb.autograd.grad(f(x), x, create_graph=True)
    return (g * v).sum()


def hvp_x_grad_not_reset(f, x, v):
    f(x).backward(create_graph=True)
    (x.grad * v).sum().backward()
    return x.grad


def hvp_elementwise(f, x, v):
    (g,) = wb.autograd.grad(f(x), x)
    return g * v


def hvp_sign(f, x, v):
    return -hvp(f, x, v)


HVP = Catalogue(
    exercise="07-higher-order-hvp",
    check=check_hvp,
    mistakes=[
        Mistake(
            "create_graph forgotten",
            hvp_no_create_graph,
            says=["without create_graph=True"],
            never=["Traceback"],
        ),
        Mistake(
            "retain_graph where create_graph was needed",
            hvp_retain_not_create,
            says=["without create_graph=True"],
        ),
        Mistake("the gradient itself", hvp_gradient_only, says=["the gradient g = ∇f(x) itself"]),
        Mistake("v left out: H·1", hvp_without_v, says=["the Hessian times ones"]),
        Mistake(
            "the directional derivative g·v, not differentiated again",
            hvp_directional,
            says=["one number", "differentiate it again"],
        ),
        Mistake(
            "x.grad not reset between the two backward passes",
            hvp_x_grad_not_reset,
            says=["∇f(x) + H·v", "x.grad = None"],
            never=["the gradient g = ∇f(x) itself"],
        ),
        Mistake("a sign", hvp_sign, says=["wrong sign"], kind="sign"),
        Mistake(
            "g · v elementwise, no second backward",
            hvp_elementwise,
            says=["where", "was expected"],
            kind="elements",
        ),
    ],
    rights=[
        Right("grad of (g * v).sum()", hvp),
        Right("v as the second grad's grad_outputs", hvp_as_grad_outputs),
        Right("backward twice, x.grad reset between", hvp_by_backward),
    ],
)


# ------------------------------------------------------- 07-higher-order-jacobian
def jacobian(f, x):
    y = f(x)
    rows = []
    for i in range(y.numel()):
        onehot = wb.zeros(y.numel(), dtype=y.dtype)
        onehot[i] = 1.0
        (row,) = wb.autograd.grad(y, x, onehot.reshape(y.shape), retain_graph=True)
        rows.append(row)
    return wb.stack(rows).reshape(*y.shape, *x.shape)


def jacobian_of_elements(f, x):
    y = f(x).reshape(-1)
    rows = [wb.autograd.grad(y[i], x, retain_graph=True)[0] for i in range(y.shape[0])]
    return wb.stack(rows).reshape(tuple(f(x).shape) + tuple(x.shape))


def jacobian_by_backward(f, x):
    y = f(x)
    rows = []
    for i in range(y.numel()):
        x.grad = None
        onehot = np.zeros(y.numel())
        onehot[i] = 1.0
        y.backward(wb.tensor(onehot.reshape(y.shape)), retain_graph=True)
        rows.append(x.grad.numpy())
    return np.stack(rows).reshape(tuple(y.shape) + tuple(x.shape))


def jacobian_graph_freed(f, x):
    y = f(x)
    rows = [wb.autograd.grad(y[i], x)[0] for i in range(y.shape[0])]
    return wb.stack(rows)


def jacobian_of_the_sum(f, x):
    return wb.autograd.grad(f(x).sum(), x)[0]


def jacobian_accumulating(f, x):
    y = f(x)
    rows = []
    for i in range(y.numel()):
        onehot = np.zeros(y.numel())
        onehot[i] = 1.0
        y.backward(wb.tensor(onehot.reshape(y.shape)), retain_graph=True)
        rows.append(x.grad.clone())
    return wb.stack(rows).reshape(*y.shape, *x.shape)


def jacobian_transposed(f, x):
    return jacobian(f, x).T


def jacobian_rows_reversed(f, x):
    y = f(x)
    rows = []
    for i in reversed(range(y.numel())):
        onehot = wb.zeros(y.numel(), dtype=y.dtype)
        onehot[i] = 1.0
        (row,) = wb.autograd.grad(y, x, onehot.reshape(y.shape), retain_graph=True)
        rows.append(row)
    return wb.stack(rows).reshape(*y.shape, *x.shape)


def jacobian_flat(f, x):
    return jacobian(f, x).reshape(f(x).numel(), x.numel())


def jacobian_of_ones(f, x):
    y = f(x)
    rows = []
    for _ in range(y.numel()):
        (row,) = wb.autograd.grad(y, x, wb.ones_like(y), retain_graph=True)
        rows.append(row)
    return wb.stack(rows).reshape(*y.shape, *x.shape)


def jacobian_weighted_by_y(f, x):
    y = f(x)
    rows = []
    for i in range(y.numel()):
        head = np.zeros(y.numel())
        head[i] = y.reshape(-1)[i].item()  # ȳ = y at i, not 1
        (row,) = wb.autograd.grad(y, x, wb.tensor(head.reshape(y.shape)), retain_graph=True)
        rows.append(row)
    return wb.stack(rows).reshape(*y.shape, *x.shape)


JACOBIAN = Catalogue(
    exercise="07-higher-order-jacobian",
    check=check_jacobian,
    mistakes=[
        Mistake(
            "retain_graph forgotten",
            jacobian_graph_freed,
            says=["found the graph freed", "retain_graph=True"],
        ),
        Mistake(
            "the gradient of the sum",
            jacobian_of_the_sum,
            says=["the gradient of f(x).sum()", "one-hot"],
        ),
        Mistake(
            "rows read from x.grad, which adds up",
            jacobian_accumulating,
            says=["x.grad kept adding up"],
        ),
        Mistake(
            "transposed",
            jacobian_transposed,
            says=["x's axes first", "f(x).shape + x.shape"],
            never=["matmul"],
        ),
        Mistake(
            "rows in reverse order",
            jacobian_rows_reversed,
            says=["row of yours is a row of J", "another order", "element i"],
        ),
        Mistake(
            "one row per output, but a matrix of (outputs, inputs)",
            jacobian_flat,
            says=["Reshape it to f(x).shape + x.shape", "its values are right"],
            never=["a gradient always has the shape of the input"],
        ),
        Mistake(
            "ȳ all ones for every row",
            jacobian_of_ones,
            says=["Every row is the gradient of f(x).sum()", "one-hot"],
        ),
        Mistake(
            "ȳ = y at i, not 1",
            jacobian_weighted_by_y,
            says=["where", "was expected"],
            kind="elements",
        ),
    ],
    rights=[
        Right("one-hot ȳ, wb.autograd.grad", jacobian),
        Right("a gradient per element of the flattened output", jacobian_of_elements),
        Right("backward with x.grad reset, numpy rows", jacobian_by_backward),
    ],
)


CATALOGUES = [PEAK, BUDGET, SOFTPLUS, HYPOT, POWER, HVP, JACOBIAN]


def test_every_exercise_of_lessons_5_to_7_has_a_catalogue():
    wanted = {
        "05-checkpointing-peak",
        "05-checkpointing-budget",
        "06-custom-functions-softplus",
        "06-custom-functions-hypot",
        "06-custom-functions-power",
        "07-higher-order-hvp",
        "07-higher-order-jacobian",
    }
    assert {c.exercise for c in CATALOGUES} == wanted
    for catalogue in CATALOGUES:
        assert len(catalogue.rights) >= 2 and catalogue.mistakes


def stub_forward(answer: type[Function]) -> type[Function]:
    """The learner copy of a Function exercise: forward and backward still the stub."""

    class Stub(answer):
        @staticmethod
        def forward(ctx, *inputs):
            # YOUR CODE HERE
            raise NotImplementedError()

        @staticmethod
        def backward(ctx, grad):
            # YOUR CODE HERE
            raise NotImplementedError()

    return Stub


def stub_backward(answer: type[Function]) -> type[Function]:
    """forward answered, backward still the stub."""

    class Stub(answer):
        @staticmethod
        def backward(ctx, grad):
            # YOUR CODE HERE
            raise NotImplementedError()

    return Stub


@pytest.mark.parametrize("stub", [stub_forward, stub_backward])
@pytest.mark.parametrize(
    "check, answer", [(check_softplus, Softplus), (check_hypot, Hypot), (check_power, Power)]
)
def test_a_function_still_the_stub_is_not_answered_yet(check, answer, stub):
    with pytest.raises(NotAnswered) as caught:
        check(stub(answer))
    assert str(caught.value).startswith("Not answered yet") and "Traceback" not in str(caught.value)


def test_a_straight_through_gradient_is_shown_element_by_element_with_no_cause():
    """Lesson 6's clip that passes ȳ everywhere: ȳ · clip′(y) is ȳ too (clip′ is 1 on
    every output), so "the derivative taken at the output" would be a wrong cause."""

    class Clip(Function):
        @staticmethod
        def forward(ctx, x):
            return x.clamp(-1.0, 1.0)

        @staticmethod
        def backward(ctx, grad):
            return grad

    values = [[0.5, -1.5, 0.2], [2.0, -0.3, 0.9]]
    with pytest.raises(ExerciseError) as caught:
        check_function(Clip, values, reference=lambda t: t.clamp(-1.0, 1.0))
    assert caught.value.kind == "elements" and "output" not in str(caught.value)
    assert caught.value.wrong.tolist() == [[False, True, False], [True, False, False]]
