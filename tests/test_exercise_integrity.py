"""Answers that would pass a check without doing the exercise, or escape the checker.

A rule exercise asks the learner to write the op's gradient rule; an answer that hands
the work to the engine's own rule (directly, through the registry, through backward on
the op, through ``as_torch``'s ``torch``) is refused with a message that says so. An
answer that raises ``SystemExit``, ``GeneratorExit`` or ``KeyboardInterrupt`` gets a
verdict, not an exit from the check (issue 37, points 3 and 8).
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

import workbench as wb
from workbench.exercises import ExerciseError, check_rule
from workbench.ops import OPS
from workbench.ops.activations import sigmoid_grad


def refused(op_name: str, rule) -> str:
    with pytest.raises(ExerciseError) as info:
        check_rule(op_name, rule)
    return info.value.message


def through_the_registry(orig, grad):
    return wb.ops.OPS["sigmoid"].gradient(orig, grad)


def through_the_function_itself(orig, grad):
    return sigmoid_grad(orig, grad)


def through_the_nodes_op(orig, grad):
    return orig.op.gradient(orig, grad)


def through_backward_on_the_op(orig, grad):
    y = orig.out.detach()
    x = wb.log(y / (1 - y)).requires_grad_()  # sigmoid's input, from its output
    with wb.enable_grad():  # a rule runs under no_grad, as in the engine
        return list(wb.autograd.grad(wb.sigmoid(x), x, grad))


def through_the_forward_rule(orig, grad):
    y = orig.out.detach()
    x = wb.log(y / (1 - y))
    return [wb.func.jvp(wb.sigmoid, (x,), (grad,))[1]]


def through_as_torch(orig, grad):
    wb.as_torch()
    import torch

    y = orig.out.detach()
    x = torch.log(y / (1 - y)).requires_grad_()
    with torch.enable_grad():
        torch.sigmoid(x).backward(grad)
    return [x.grad]


ENGINE_ROUTES = [
    through_the_registry,
    through_the_function_itself,
    through_the_nodes_op,
    through_backward_on_the_op,
    through_the_forward_rule,
]


@pytest.mark.parametrize("rule", ENGINE_ROUTES, ids=lambda rule: rule.__name__)
def test_a_rule_that_calls_the_engines_rule_is_refused_and_told_so(rule):
    message = refused("sigmoid", rule)
    assert "engine's own rule for sigmoid" in message, message
    assert OPS["sigmoid"].gradient is sigmoid_grad  # the registry is as it was


def test_the_engines_rule_through_as_torch_is_refused(tmp_path):
    """``as_torch()`` cannot be undone in a process: run in a child."""
    import subprocess
    import sys
    import textwrap

    script = tmp_path / "as_torch.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import workbench as wb
            from workbench.exercises import ExerciseError, check_rule

            {textwrap.indent(_source(through_as_torch), " " * 12).strip()}

            try:
                check_rule("sigmoid", through_as_torch)
            except ExerciseError as err:
                print(err.message)
            """
        )
    )
    done = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=120)
    assert "engine's own rule for sigmoid" in done.stdout, done.stdout + done.stderr


def _source(function) -> str:
    import inspect

    return inspect.getsource(function)


def test_pytorchs_own_backward_is_refused_too():
    torch = pytest.importorskip("torch")

    def through_pytorch(orig, grad):
        y = torch.from_numpy(orig.out.detach().numpy())
        x = torch.log(y / (1 - y)).requires_grad_()
        with torch.enable_grad():
            torch.sigmoid(x).backward(torch.from_numpy(grad.numpy()))
        return [wb.tensor(x.grad.numpy())]

    message = refused("sigmoid", through_pytorch)
    assert "PyTorch's backward ran inside it" in message, message


def test_a_rule_of_its_own_still_passes_and_may_use_other_ops_rules():
    def sigmoid_rule(orig, grad):
        y = orig.out
        return [grad * y * (1 - y)]

    def tanh_from_sigmoid(orig, grad):  # tanh(x) = 2σ(2x) − 1: backward through sigmoid
        y = orig.out.detach()
        x = (0.5 * wb.log((1 + y) / (1 - y))).requires_grad_()
        with wb.enable_grad():
            (gx,) = wb.autograd.grad(2 * wb.sigmoid(2 * x) - 1, x, grad)
        return [gx]

    assert check_rule("sigmoid", sigmoid_rule)
    assert check_rule("tanh", tanh_from_sigmoid)


def test_a_right_rule_passes_after_a_refused_one():
    refused("sigmoid", through_the_registry)
    assert check_rule("sigmoid", lambda orig, grad: [grad * orig.out * (1 - orig.out)])
    assert np.isfinite(wb.sigmoid(wb.tensor([0.5], requires_grad=True)).sum().item())


# ------------------------------------------------- an answer that tries to end the check
def sigmoid_rule_raising(exception: BaseException):
    def sigmoid_rule(orig, grad):
        raise exception

    return sigmoid_rule


@pytest.mark.parametrize(
    "exception",
    [SystemExit(0), SystemExit(1), GeneratorExit(), KeyboardInterrupt(), BaseException("x")],
    ids=lambda e: f"{type(e).__name__}({', '.join(map(repr, e.args))})",
)
def test_an_answer_that_raises_an_exit_or_an_interrupt_gets_a_verdict(exception):
    message = refused("sigmoid", sigmoid_rule_raising(exception))
    assert type(exception).__name__ in message, message
    assert "line" in message and "raise exception" in message, message
    assert wb.is_grad_enabled()


def test_an_answer_cannot_end_a_checking_script_with_status_0(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "check.py"
    script.write_text(  # (an object's __array__ is never called: tests/test_hostile_answers.py)
        "from workbench.exercises import call_answer, check_answer\n"
        "def x_grad():\n"
        "    raise SystemExit(0)\n"
        "check_answer('x.grad', [1.0, 2.0], call_answer(x_grad))\n"
        "print('passed')\n"
    )
    done = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "passed" not in done.stdout
    assert "ExerciseError" in done.stderr and "SystemExit" in done.stderr, done.stderr


# ------------------------------------------------- a right answer in low precision
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_a_right_answer_in_low_precision_is_right_and_a_wrong_one_wrong(dtype):
    from workbench.exercises import check_answer

    truth = np.array([0.1, -0.3, 2.5, 1e-3])
    assert check_answer("x.grad", truth, wb.tensor(truth).to(getattr(wb, dtype)))
    torch = pytest.importorskip("torch")
    assert check_answer("x.grad", truth, torch.tensor(truth).to(getattr(torch, dtype)))
    with pytest.raises(ExerciseError, match="element"):
        check_answer("x.grad", truth, wb.tensor(truth * 1.05).to(getattr(wb, dtype)))


# ------------------------------------------------- grading apart from the learner's code
HELP = """\
sigmoid_exercise = Exercise(
    "01-sigmoid-rule",
    lambda rule: check_rule("sigmoid", rule),
    hints=["a nudge", "a stronger hint"],
    answer="sigmoid_rule",
)
"""
RIGHT = "def sigmoid_rule(orig, grad):\n    y = orig.out\n    return [grad * y * (1 - y)]\n"


def notebook_run(*cells: str) -> dict:
    """A notebook's globals after its cells ran: the imports, the help cell, ``cells``."""
    namespace: dict = {"__name__": "__main__"}
    for cell in ("from workbench.exercises import Exercise, check_rule, grade", HELP, *cells):
        exec(compile(cell, "<cell>", "exec"), namespace)
    return namespace


def sealed(namespace: dict):
    from workbench.exercises.sealed import sealed_grade

    return sealed_grade("01-sigmoid-rule", namespace, HELP)


def test_the_sealed_grader_passes_a_right_answer_and_fails_a_wrong_one(monkeypatch, capsys):
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    assert sealed(notebook_run(RIGHT)) is None
    assert "Your rule for sigmoid is right" in capsys.readouterr().out
    with pytest.raises(AssertionError, match="Multiply it by"):
        sealed(notebook_run(RIGHT.replace("grad * y", "y")))
    assert sealed(notebook_run()).__class__.__name__ == "Unanswered"


DISARMS = {
    "grade replaced": "import workbench.exercises as _e\n_e.grade = lambda *a, **k: None",
    "hints.grade replaced": "import workbench.exercises.hints as _h\n_h.grade = lambda *a: None",
    "check_answer replaced": "import workbench.exercises as _e\n_e.check_answer = print",
    "a tolerance widened": "import workbench.exercises.diagnose as _d\n_d.RTOL = 1e9",
    "the registry's check": (
        "import workbench.exercises.hints as _h\n"
        "_h.EXERCISES['01-sigmoid-rule'].checker = lambda rule: None"
    ),
    "the registry emptied": "import workbench.exercises.hints as _h\n_h.EXERCISES.clear()",
    "a method": (
        "import workbench.exercises.hints as _h\n_h.Exercise.grade = lambda self, *a: None"
    ),
    "the notebook's name": "check_rule = lambda *a, **k: None",
    "a check's inner function": (
        "import workbench.exercises.rules as _r\n"
        "_r.check_rule.__closure__[0].cell_contents = lambda *a, **k: None"
    ),
}


@pytest.mark.parametrize("disarm", DISARMS.values(), ids=DISARMS.keys())
def test_a_disarmed_checker_scores_0_and_says_what_was_changed(disarm, monkeypatch):
    """The notebook's code changes the checker before the graded cell: the sealed grader
    grades with a fresh one, and fails the exercise even for a right answer."""
    import workbench.exercises as live

    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    kept = {
        name: dict(vars(module))
        for name, module in sys.modules.items()
        if name.startswith("workbench.exercises")
    }
    kept_methods = dict(vars(live.hints.Exercise))
    kept_closure = live.rules.check_rule.__closure__[0].cell_contents
    try:
        namespace = notebook_run(RIGHT, disarm)
        with pytest.raises(AssertionError, match="The checker was changed by code in this"):
            sealed(namespace)
    finally:
        for name, values in kept.items():
            vars(sys.modules[name]).update(values)
        for name, value in kept_methods.items():
            if not name.startswith("__"):
                setattr(live.hints.Exercise, name, value)
        live.rules.check_rule.__closure__[0].cell_contents = kept_closure
        live.hints.EXERCISES.clear()
