"""The exercise checker: is the learner's answer right, and if not, what is wrong?

One check per kind of exercise in the lessons::

    from workbench.exercises import check_rule, check_function, check_backward_loop
    from workbench.exercises import check_optimizer_step

    check_rule("sigmoid", sigmoid_rule)        # a gradient rule rule(orig, grad) -> list
    check_function(Exp, [0.5, -1.0, 2.0])     # a custom wb.autograd.Function
    check_softplus(Softplus)                  # lesson 6's three Functions: check_hypot,
                                              # check_power too
    check_backward_loop(my_backward)          # the backward algorithm, on real nodes
    check_optimizer_step(sgd_step)            # SGD with momentum, against wb.optim.SGD

three for a prediction the lesson checks against the engine: ``check_answer``
(a value), ``check_order`` (the order of the steps), ``check_table`` (a dict); and,
for the later lessons, checks of a memory measurement and a checkpointing plan
(``check_peak_measure``, ``check_segments``), a Hessian-vector product and a
Jacobian (``check_hvp``, ``check_jacobian``), two backward operators
(``check_avg_pool_backward``, ``check_take_backward``) and the cross-entropy
gradient (``check_cross_entropy_grad``); for forward mode, a JVP rule
(``check_jvp_rule``, lesson 11), the mode that builds a Jacobian in fewer passes
(``check_fewer_passes``) and per-example gradient clipping and
norms (``check_clip_per_example``, ``check_example_norms``, lesson 12); the backward
bindings of a layer written by hand and the adjoint of a value used twice
(``check_adjoint_by_hand``, ``check_used_twice``, lesson 13).

A right answer returns a :class:`Passed`, which the notebook shows as a short note
of what was checked and what the learner just proved. A wrong one raises
:class:`ExerciseError` — an ``AssertionError``, so nbgrader marks the cell failed —
whose message says, in one or two sentences, which input, which elements, expected
and got, and a diagnosis where one fits (a broadcast gradient not summed back, a
sign, a factor of 2, a node that ran twice...). In a notebook it shows without a
traceback, with a heat map of the wrong elements and, for a backward loop, the
graph with the wrong node lit.

``with trying_rule("sigmoid", sigmoid_rule):`` runs the learner's rule in the real
engine (``backward()``, the stepper, the pictures) for the span of the block.
:class:`Exercise` ties a check to its hints (a nudge, a stronger hint, the solution
after one attempt) and to its graded cell, ``grade("01-sigmoid-rule")``; an answer
that is still ``raise NotImplementedError()`` is *not answered yet*
(:class:`NotAnswered`): graded 0, and the notebook goes on. ``progress()`` lists the
exercises still open.

Every check runs under a guard (``guard.py``): from a fresh kernel's modes, put back
afterwards; within a time limit that stops the learner's endless loop and names its
line; one line when the learner presses Interrupt; and a sentence, never a traceback,
for an answer no one foresaw. tests/test_hostile_answers.py runs a table of hostile
answers against every check.

Where to read: ``diagnose.py`` (every diagnosis, one small function each),
``rules.py`` (check_rule and finite differences), ``backward_loop.py``,
``custom_functions.py``, ``descent.py`` (the SGD step), ``hints.py``; ``segment_budget.py``,
``higher_order.py``, ``backward_ops.py``, ``cross_entropy.py``, ``jvp_rules.py``,
``passes.py``, ``per_example.py``, ``backward_bindings.py``.
"""

from .answers import call_answer, check_answer, check_order, check_table
from .backward_bindings import check_adjoint_by_hand, check_used_twice
from .backward_loop import check_backward_loop
from .backward_ops import check_avg_pool_backward, check_take_backward
from .cross_entropy import check_cross_entropy_grad
from .custom_functions import check_function, check_hypot, check_power, check_softplus
from .descent import check_optimizer_step
from .diagnose import Finding, compare
from .dual_interpreter import check_dual_interpreter  # noqa: F401 (lesson 11)
from .higher_order import check_hvp, check_jacobian
from .hints import Exercise, Hint, Hints, grade, progress
from .jvp_rules import check_jvp_rule
from .passes import check_fewer_passes
from .per_example import check_clip_per_example, check_example_norms
from .report import ExerciseError, NotAnswered, Passed
from .rules import check_rule, trying_rule
from .segment_budget import check_peak_measure, check_segments
from .sum_batching import check_sum_batching_rule as check_sum_batching_rule

__all__ = [
    "Exercise",
    "ExerciseError",
    "Finding",
    "Hint",
    "Hints",
    "NotAnswered",
    "Passed",
    "call_answer",
    "check_adjoint_by_hand",
    "check_answer",
    "check_avg_pool_backward",
    "check_backward_loop",
    "check_clip_per_example",
    "check_cross_entropy_grad",
    "check_example_norms",
    "check_fewer_passes",
    "check_function",
    "check_hypot",
    "check_hvp",
    "check_jacobian",
    "check_jvp_rule",
    "check_optimizer_step",
    "check_order",
    "check_peak_measure",
    "check_power",
    "check_rule",
    "check_segments",
    "check_softplus",
    "check_table",
    "check_take_backward",
    "check_used_twice",
    "compare",
    "grade",
    "progress",
    "trying_rule",
]
