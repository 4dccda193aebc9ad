"""A prediction session of the stepper, graded: predict every step of a backward pass.

Lesson 2's exercise. The stepper in predict mode (``BackwardStepper(loss, predict=True)``)
asks, before each step, what it will send; here the learner writes all the answers
down at once::

    def predicted_steps():
        return [step_1, step_2, ...]   # one prediction per step, as stepper.predict takes it

:func:`check_whole_pass` runs :func:`session_loss`'s pass in a real stepper in
predict mode and hands it the answers one by one, exactly as ``stepper.predict`` would
take them from the learner, so each wrong step gets the stepper's own verdict: the
exercise checkers' diagnoses (a broadcast gradient not summed back, a sign, a factor,
the other input's gradient). A wrong step is still revealed and the session goes on,
so every step is graded on its own; the message names each wrong step and its score.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import workbench as wb

from ..core.tensor import Tensor
from .answers import call_answer
from .guard import checker
from .report import Passed, fail

WHAT = "function predicted_steps"
MOST_ITEMS = 10_000  # numbers in one prediction: far more than any step here has


def session_loss() -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """``(x * w + b).sum()``: w (2,) and b (1,) broadcast over x (2, 2). Six steps."""
    x = wb.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True, name="x")
    w = wb.tensor([0.5, -1.0], requires_grad=True, name="w")
    b = wb.tensor([2.0], requires_grad=True, name="b")
    return (x * w + b).sum(), x, w, b


@checker
def check_whole_pass(predicted_steps: Callable[[], list]) -> Passed:
    """``predicted_steps()`` must predict every step of :func:`session_loss`'s pass."""
    from ..widgets import BackwardStepper

    answers = call_answer(predicted_steps, what=WHAT)
    loss, *_ = session_loss()
    stepper = BackwardStepper(loss, predict=True, tries=1)  # one answer per step, as written
    findings: list = []
    try:
        wrong = grade_session(stepper, answers, findings)
        right, asked = stepper.score
    finally:
        stepper.close()
    if wrong:
        first = findings[0] if findings else None
        fail(f"{right} of {asked} steps right. " + " ".join(wrong), first, parts=(right, asked))
    return Passed(
        f"All {asked} steps of the backward pass predicted right.",
        "You ran backward in your head: each node's rule on the gradient that reached it, "
        "the broadcast inputs' gradients summed back to their shapes, and each leaf's "
        ".grad filled from what its AccumulateGrad received.",
    )


def grade_session(stepper, answers, findings: list) -> list[str]:
    """Each answer given to the stepper in turn; a sentence per step it found wrong.

    ``findings`` collects the diagnoses, for the notebook's picture of the wrong elements.
    """
    steps = stepper.total
    if not isinstance(answers, (list, tuple)):
        fail(
            f"Your {WHAT} returns a {type(answers).__name__}: return a list of {steps} "
            "predictions, one per step of the backward pass."
        )
    if len(answers) != steps:
        fail(
            f"Your {WHAT} returns {len(answers)} predictions; this backward pass has {steps} "
            "steps: return one prediction per step, step 1 first."
        )
    wrong, given_wrong = [], []  # sentences; (step, arrays) of each wrong prediction
    for step, answer in enumerate(answers, start=1):
        answer = plain(answer, step)
        verdict = stepper.predict(answer)
        if not verdict.counted:
            fail(f"Step {step}: {verdict.message}")
        if verdict.right:
            continue
        name = stepper.record.name
        earlier = carried_from(answer, given_wrong)
        if earlier is not None:  # the learner's own wrong gradient, passed on: no new cause
            wrong.append(
                f"Step {step} ({name}): your answer is the gradient you predicted at step "
                f"{earlier}, and that one is wrong: here the mistake only carried on."
            )
        else:
            wrong.append(f"Step {step} ({name}): {verdict.message}")
            findings.extend(verdict.findings)
        given_wrong.append((step, wrong_values(verdict, answer)))
    return wrong


def wrong_values(verdict, answer) -> list[np.ndarray]:
    """The wrong gradients of a prediction, as the diagnoses saw them (a wrong shape's:
    the answer's arrays of that shape)."""
    found = []
    for finding in verdict.findings:
        if finding.got is not None:
            found.append(np.asarray(finding.got))
        elif "got_shape" in finding.details:
            shape = tuple(finding.details["got_shape"])
            found.extend(a for a in arrays_of(answer) if a.shape == shape)
    return found


def arrays_of(answer) -> list[np.ndarray]:
    """The prediction as one array, and each of its items as one (what converts)."""
    items = [answer, *answer] if isinstance(answer, list) else [answer]
    found = []
    for item in items:
        try:
            found.append(np.asarray(item, dtype=np.float64))
        except (TypeError, ValueError, OverflowError):
            continue  # a dict (a glimpse), None, a ragged list: nothing to compare
    return found


def carried_from(answer, given_wrong: list) -> int | None:
    """The earlier step whose wrong gradient this answer repeats, if any."""
    mine = arrays_of(answer)
    for step, values in given_wrong:
        for old in values:
            if any(a.shape == old.shape and np.allclose(a, old) for a in mine):
                return step
    return None


def plain(answer, step: int, depth: int = 0):
    """A prediction with PyTorch tensors as arrays; text, True/False and huge ones refused.

    The stepper reads numbers, arrays, Tensors, lists of them and dicts (a big gradient's
    shape and a few elements); what a learner's Python can hand back beyond that is
    refused here with a sentence.
    """
    if depth > 3:
        fail(f"Step {step}: your prediction is nested too deep to be a gradient.")
    from ..widgets.verdicts import is_torch, short, torch_values

    if is_torch(answer):  # read as the stepper reads one (requires grad, bfloat16)
        try:
            return torch_values(answer)
        except ValueError as err:
            fail(f"Step {step}: your prediction holds {err}: write each gradient as numbers.")
    if isinstance(answer, (bool, np.bool_, str, bytes)):
        fail(
            f"Step {step}: your prediction holds {short(answer)}: write each gradient as numbers "
            "(None for an input that takes no gradient)."
        )
    if isinstance(answer, (list, tuple)):
        if len(answer) > MOST_ITEMS:
            fail(f"Step {step}: your prediction holds {len(answer)} values, far too many.")
        return [plain(item, step, depth + 1) for item in answer]
    if isinstance(answer, np.ndarray) and (answer.dtype == bool or answer.size > MOST_ITEMS):
        fail(f"Step {step}: write each gradient as numbers, at most {MOST_ITEMS} of them.")
    return answer
