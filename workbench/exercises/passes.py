"""Check a learner's prediction of the cheaper mode for a whole Jacobian (lesson 11).

::

    def fewer_passes(n_inputs, n_outputs):   # f: R^n_inputs -> R^n_outputs
        ...                                  # "forward" or "reverse"

    check_fewer_passes(fewer_passes)

The check does not take the answer from the shapes: for each size it builds a small
function f(x) = tanh(W @ x) and counts the passes by running them, forward mode's
``wb.func.jvp`` once per column of J and reverse mode's ``vjp_fn`` once per row
(:func:`count_passes`), then holds the learner's answer to those counts. Where the two
counts are equal either answer is right.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..core.tensor import Tensor
from .guard import checker
from .report import Passed, call_learner, fail

SIZES = [(2, 50), (50, 2), (1, 10), (10, 1), (3, 3), (100, 1)]
NAMES = {"forward": "forward", "jacfwd": "forward", "reverse": "reverse", "jacrev": "reverse"}


def count_passes(n_inputs: int, n_outputs: int, seed: int = 0) -> dict:
    """``{"forward": jvp calls, "reverse": vjp_fn calls}`` that build the Jacobian of
    f(x) = tanh(W @ x), W of shape (n_outputs, n_inputs): one jvp per unit tangent (a
    column of J), one vjp_fn per one-hot cotangent (a row). Counted as they run; the two
    Jacobians are checked equal."""
    from ..func import jvp, vjp

    rng = np.random.default_rng(seed)
    w = Tensor(rng.standard_normal((n_outputs, n_inputs)))
    x = Tensor(rng.standard_normal(n_inputs))

    def f(v):
        return (w @ v).tanh()

    calls = {"forward": 0, "reverse": 0}
    columns = []
    for unit in np.eye(n_inputs):
        calls["forward"] += 1
        columns.append(jvp(f, (x,), (Tensor(unit),))[1].numpy())
    _, vjp_fn = vjp(f, x)
    rows = []
    for one_hot in np.eye(n_outputs):
        calls["reverse"] += 1
        rows.append(vjp_fn(Tensor(one_hot))[0].numpy())
    if not np.allclose(np.stack(columns, axis=1), np.stack(rows), rtol=1e-10, atol=1e-12):
        raise AssertionError("jvp's columns and vjp's rows gave two Jacobians")
    return calls


@checker
def check_fewer_passes(fewer_passes: Callable[[int, int], str]) -> Passed:
    """Check ``fewer_passes(n_inputs, n_outputs)`` against passes counted by running them."""
    wrong = []
    for n_inputs, n_outputs in SIZES:
        context = f"For f: R^{n_inputs} → R^{n_outputs}"
        got = call_learner(fewer_passes, (n_inputs, n_outputs), context, "function fewer_passes")
        mode = mode_named(got, context)
        calls = count_passes(n_inputs, n_outputs)
        other = "reverse" if mode == "forward" else "forward"
        if calls[mode] > calls[other]:
            wrong.append((context, mode, calls))
    unequal = [size for size in SIZES if size[0] != size[1]]
    if wrong and len(wrong) == len(unequal):
        fail(
            f"Each of your answers names the mode with more passes ({first_wrong(wrong)}). "
            "Your comparison is swapped: forward mode costs one pass per input, reverse "
            "mode one per output, so the mode to name is the one whose count is smaller."
        )
    if wrong:
        context, mode, calls = wrong[0]
        fail(f"{counts_text(context, mode, calls)}. {advice(mode)}")
    return Passed(
        "Your prediction is right.",
        "On six sizes of f, from R² → R⁵⁰ to R¹⁰⁰ → R¹ (a loss of 100 weights), the mode you "
        "named took no more passes than the other, counted by running them: forward mode "
        "costs one pass per input, reverse mode one per output.",
    )


def first_wrong(wrong: list) -> str:
    text = counts_text(*wrong[0])
    return text[:1].lower() + text[1:]


def counts_text(context: str, mode: str, calls: dict) -> str:
    return (
        f"{context}, you answered '{mode}', but forward mode took {calls['forward']} jvp "
        f"passes (one per input) and reverse mode {calls['reverse']} vjp passes (one per "
        "output)"
    )


def mode_named(got, context: str) -> str:
    """'forward' or 'reverse' from the learner's answer; anything else refused in words."""
    if isinstance(got, str) and got.strip().lower() in NAMES:
        return NAMES[got.strip().lower()]
    shown = repr(got) if isinstance(got, (str, int, float, bool, type(None))) else type(got)
    shown = shown if not isinstance(shown, type) else f"a {shown.__name__}"
    fail(
        f"{context}, your function returned {str(shown)[:80]}. Return the name of a mode: "
        "'forward' or 'reverse'."
    )


def advice(mode: str) -> str:
    """What the counts say to do: a pass of forward mode gives one column of J, a pass
    of reverse mode one row."""
    if mode == "reverse":
        return (
            "Reverse mode wins for a loss (many inputs, one output), but a pass of it gives "
            "one row of J: with more outputs than inputs, forward mode needs fewer passes."
        )
    return (
        "A pass of forward mode gives one column of J, one per input: with more inputs than "
        "outputs, reverse mode (one row per pass) needs fewer."
    )
