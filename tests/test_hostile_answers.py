"""Hostile answers against every check: a clear sentence, never a pass, modes put back.

The checks are found, not listed: every function of ``workbench.exercises`` that returns
a :class:`Passed` (a new check is in the table the day it is written), and every
exercise of the lessons, as its misconception catalogue calls its check (the lessons'
``Exercise`` registry by grade id; tests/test_catalogue_coverage.py holds the
catalogues to the lessons). Each gets the same table of hostile answers:

- values of the wrong kind: complex, whole numbers, True/False, text, a PyTorch tensor
  that requires grad, a list of arrays, a ragged list, ``10**400``, NaN, None, a dict,
  an object whose ``==`` raises, a megabyte of numbers;
- functions that raise, print a megabyte, change their inputs in place and hand them
  back, return aliases of their inputs, change a global mode, or never return.

A function-taking check gets each value as what its answer returns (and as the
answer itself); a value-taking check gets each function as its answer. Every one
must end in an :class:`ExerciseError` (a ``NotAnswered`` for the stub) whose message
is a sentence of the check's (no traceback, no "gap in the checker"), the modes the
learner had before the check must be theirs after, and an endless loop must stop
within the time limit. A right answer from a catalogue that also leaves a mode
changed fails, and leaves the learner's modes as they were.
"""

from __future__ import annotations

import importlib
import inspect
import io
import os
import re
import signal
import sys
import threading
import time
from contextlib import redirect_stdout

import numpy as np
import pytest
import torch
from kernel_run import run_in_kernel

import workbench as wb
import workbench.exercises as exercises
from workbench.autograd import Function
from workbench.exercises import ExerciseError, guard
from workbench.exercises.guard import Modes
from workbench.exercises.report import CheckInterrupted

LIMIT_S = 0.5  # the time limit the hang cases run under
RIGHT_ANSWER_LIMIT_S = 30.0  # the checks' own limit: for answers that end, however slowly
LONGEST_MESSAGE = 3000  # characters: a message is a sentence or two, never a dump


# ------------------------------------------------------------------ the checks
def public_checks() -> dict:
    """Every function in workbench.exercises' modules that returns a Passed: the checks."""
    found = {}
    for info in sorted(exercises_modules()):
        module = importlib.import_module(f"workbench.exercises.{info}")
        for name, function in vars(module).items():
            wrapped = inspect.unwrap(function) if callable(function) else None
            if inspect.isfunction(wrapped) and wrapped.__module__ == module.__name__:
                if inspect.get_annotations(wrapped).get("return") == "Passed":
                    found[name] = function
    return found


def exercises_modules() -> list:
    from pathlib import Path

    folder = Path(exercises.__file__).parent
    return [p.stem for p in folder.glob("*.py") if p.stem != "__init__"]


CHECKS = public_checks()

# How a check that takes more than the learner's answer is called in the table.
CALLS = {
    "check_answer": lambda answer: CHECKS["check_answer"]("x.grad", [1.0, 2.0], answer),
    "check_order": lambda answer: CHECKS["check_order"]("the order", ["mul", "sum"], answer),
    "check_table": lambda answer: CHECKS["check_table"]("the counts", {"mul": 1}, answer),
    "check_function": lambda answer: CHECKS["check_function"](answer, [0.5, -1.0]),
    "check_rule": lambda answer: CHECKS["check_rule"]("sigmoid", answer),
    "check_jvp_rule": lambda answer: CHECKS["check_jvp_rule"]("mul", answer),
}
VALUE_CHECKS = {"check_answer", "check_order", "check_table"}  # the answer is a value


def takes_a_function_class(name: str) -> bool:
    annotation = inspect.signature(inspect.unwrap(CHECKS[name])).parameters
    first = next(iter(annotation.values()))
    return "type[Function]" in str(first.annotation)


def catalogue_checks() -> dict:
    """Each exercise of the lessons (its grade id), as its catalogue calls its check."""
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    coverage = importlib.import_module("test_catalogue_coverage")
    return dict(sorted(coverage.CATALOGUES.items()))


CATALOGUES = catalogue_checks()


def call_of(name: str):
    return CALLS.get(name, CHECKS[name])


# ------------------------------------------------------------------ hostile answers
class EqualityRaises:
    def __eq__(self, other):
        raise RuntimeError("no comparing me")

    __hash__ = object.__hash__

    def __array__(self, *args, **kwargs):
        raise RuntimeError("no reading me")


def hostile_values() -> dict:
    grad = torch.tensor([5.0, 7.0], requires_grad=True)
    return {
        "complex": np.array([1 + 5j, 2 + 0j]),
        "complex, no imaginary part": np.array([1 + 0j, 2 + 0j]),
        "a complex tensor": wb.tensor([1 + 5j, 2 + 0j]),
        "whole numbers": np.array([3, 7]),
        "True/False": np.array([True, False]),
        "a bool tensor": wb.tensor([True, False]),
        "text": "1, 2",
        "a torch tensor that requires grad": grad * 1,
        "a complex torch tensor": torch.tensor([1 + 5j, 2 + 0j]),
        "a list of arrays": [np.ones(2), np.ones(3)],
        "a ragged list": [[1.0], [2.0, 3.0]],
        "10**400": [10**400],
        "10**400 alone": 10**400,
        "NaN": [float("nan"), float("nan")],
        "infinity": np.array([np.inf, -np.inf]),
        "None": None,
        "a dict": {"x": 1.0},
        "an object whose == raises": EqualityRaises(),
        "a megabyte of numbers": np.ones(1 << 17),
        "an empty array": np.zeros(0),
        "a 0-d array": np.array(1.0),
    }


def raises(*args, **kwargs):
    raise ValueError("the learner's own error")


def prints_a_megabyte(*args, **kwargs):
    print("x" * (1 << 20))


def mutates_its_inputs(*args, **kwargs):
    """Zeroes every tensor and array it is given, empties every list and dict; returns
    the first argument (an alias)."""
    for arg in args:
        if isinstance(arg, wb.Tensor) and arg.dtype.kind in "fc":
            with wb.no_grad():
                arg.zero_()
        elif isinstance(arg, np.ndarray) and arg.flags.writeable:
            arg[...] = 0
        elif isinstance(arg, (list, dict)):
            arg.clear()
    return args[0] if args else None


def returns_an_alias(*args, **kwargs):
    return args[0] if args else None


def returns_all_its_inputs(*args, **kwargs):
    return list(args)


def never_returns(*args, **kwargs):
    while True:
        pass


def never_returns_and_catches_exceptions(*args, **kwargs):
    while True:
        try:
            time.sleep(0.001)
        except Exception:
            pass


def leaves_grad_off(*args, **kwargs):
    wb.set_grad_enabled(False)


def leaves_anomaly_on(*args, **kwargs):
    wb.autograd.set_detect_anomaly(True)


def leaves_float64_default(*args, **kwargs):
    wb.set_default_dtype(wb.float64)


def makes_numpy_raise(*args, **kwargs):
    np.seterr(all="raise")


def stays_in_inference_mode(*args, **kwargs):
    wb.inference_mode().__enter__()


def leaves_hooks_on(*args, **kwargs):
    wb.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t).__enter__()


MODE_CHANGES = [
    leaves_grad_off,
    leaves_anomaly_on,
    leaves_float64_default,
    makes_numpy_raise,
    stays_in_inference_mode,
    leaves_hooks_on,
]
BEHAVIOURS = [
    raises,
    prints_a_megabyte,
    mutates_its_inputs,
    returns_an_alias,
    returns_all_its_inputs,
    never_returns,
    never_returns_and_catches_exceptions,
    *MODE_CHANGES,
]


def returning(value):
    def answer(*args, **kwargs):
        return value

    return answer


def as_function_class(behaviour) -> type:
    """A custom Function whose forward and backward both behave as ``behaviour``."""

    class Hostile(Function):
        @staticmethod
        def forward(ctx, *args):
            return behaviour(*args)

        @staticmethod
        def backward(ctx, *grads):
            return behaviour(*grads)

    Hostile.__name__ = behaviour.__name__
    return Hostile


def answers_for(name: str) -> list:
    """``(label, answer)`` pairs: every hostile value and behaviour, shaped for the check."""
    values = hostile_values()
    if name in VALUE_CHECKS:
        return [*values.items(), *((b.__name__, b) for b in BEHAVIOURS)]
    shape = as_function_class if name in FUNCTION_CLASS_CHECKS else (lambda f: f)
    pairs = [(f"returns {label}", shape(returning(v))) for label, v in values.items()]
    pairs += [(b.__name__, shape(b)) for b in BEHAVIOURS]
    pairs += [(f"is {label}", v) for label, v in values.items()]
    return pairs


FUNCTION_CLASS_CHECKS = {name for name in CHECKS if takes_a_function_class(name)}
TABLE = [
    pytest.param(name, label, answer, id=f"{name} / {label}")
    for name in sorted(CHECKS)
    for label, answer in answers_for(name)
]


# ------------------------------------------------------------------ the verdicts
@pytest.fixture(autouse=True)
def learners_own_modes(monkeypatch):
    """The learner's modes before each check: not a fresh kernel's (float64 default dtype,
    numpy ignoring overflow), so that putting them back is seen; a short time limit."""
    monkeypatch.setattr(guard, "TIME_LIMIT_S", LIMIT_S)
    before = Modes.now()
    wb.set_default_dtype(wb.float64)
    old = np.seterr(over="ignore")
    learners = Modes.now()
    yield learners
    assert Modes.now() == learners, Modes.now().changes(learners)
    np.seterr(**old)
    before.apply()


def verdict(check, answer) -> ExerciseError:
    """The check's error for ``answer``: a sentence of its own, in time."""
    started = time.monotonic()
    with redirect_stdout(io.StringIO()):
        try:
            passed = check(answer)
        except ExerciseError as error:
            caught = error
        else:
            pytest.fail(f"a hostile answer passed: {passed!r}")
    elapsed = time.monotonic() - started
    message = str(caught)
    assert message and len(message) < LONGEST_MESSAGE, message[:LONGEST_MESSAGE]
    assert "Traceback" not in message and "gap in the checker" not in message, message
    assert elapsed < LIMIT_S + 20, f"{elapsed:.1f} s"
    return caught


@pytest.mark.parametrize("name, label, answer", TABLE)
def test_a_hostile_answer_gets_a_sentence_and_leaves_the_modes(
    name, label, answer, learners_own_modes, monkeypatch
):
    if not label.startswith(never_returns.__name__):  # only endless answers meet the 0.5 s
        monkeypatch.setattr(guard, "TIME_LIMIT_S", RIGHT_ANSWER_LIMIT_S)
    verdict(call_of(name), answer)
    assert Modes.now() == learners_own_modes


def catalogue_table() -> list:
    """Each lesson exercise, with its right answers made to leave a mode changed."""
    params = []
    for exercise, catalogue in CATALOGUES.items():
        for right in catalogue.rights:
            for change in MODE_CHANGES:
                answer = leaking(right.answer, change)
                if answer is not None:
                    label = f"{exercise} / {right.name} / {change.__name__}"
                    params.append(pytest.param(catalogue.check, answer, change, id=label))
    return params


def leaking(right, change):
    """``right``, changed to leave a mode changed after doing its job (None: a value)."""
    if isinstance(right, type) and issubclass(right, Function):

        class Leaking(right):
            @staticmethod
            def forward(ctx, *args):
                out = right.forward(ctx, *args)
                change()
                return out

        Leaking.__name__ = right.__name__
        return Leaking
    if not callable(right):
        return None

    def answer(*args, **kwargs):
        result = right(*args, **kwargs)
        change()
        return result

    answer.__name__ = getattr(right, "__name__", "answer")
    return answer


@pytest.mark.parametrize("check, answer, change", catalogue_table())
def test_a_right_answer_that_leaves_a_mode_changed_fails(check, answer, change, monkeypatch):
    """Turning grad mode off where it is already off (in a rule, which the engine runs
    under no_grad; in a Function's forward, which apply runs under no_grad) changes
    nothing: that answer may pass. Every other change fails, and is put back."""
    # A right answer never hangs; on a busy machine (anomaly mode on, a checkpointing
    # budget that runs the model many times) it may take more than the hang cases' limit.
    monkeypatch.setattr(guard, "TIME_LIMIT_S", RIGHT_ANSWER_LIMIT_S)
    if change is leaves_grad_off:
        try:
            with redirect_stdout(io.StringIO()):
                check(answer)
        except ExerciseError as error:
            assert "Your code left autograd switched off" in str(error), str(error)
        return
    error = verdict(check, answer)
    assert "Your code left" in str(error), str(error)


@pytest.mark.parametrize("exercise", sorted(CATALOGUES))
def test_every_exercise_stops_an_endless_answer_in_time(exercise):
    catalogue = CATALOGUES[exercise]
    right = catalogue.rights[0].answer
    shape = as_function_class if isinstance(right, type) else (lambda f: f)
    error = verdict(catalogue.check, shape(never_returns))
    assert "did not finish in 0.5 seconds" in str(error), str(error)


def test_every_check_is_in_the_table():
    assert len(CHECKS) >= 20, sorted(CHECKS)
    assert set(CALLS) <= set(CHECKS), set(CALLS) - set(CHECKS)


def test_every_check_is_guarded():
    unguarded = [name for name, f in CHECKS.items() if f is inspect.unwrap(f)]
    assert not unguarded, f"checks without @checker: {unguarded}"


# ------------------------------------------------------------------ the examples of issue 24
def test_a_complex_answer_for_a_real_gradient_is_wrong():
    with pytest.raises(ExerciseError, match="is complex"):
        exercises.check_answer("x.grad", [1.0, 2.0], np.array([1 + 5j, 2]))


def test_a_number_too_large_for_a_float_is_named():
    with pytest.raises(ExerciseError, match="too large for a float64"):
        exercises.check_answer("x.grad", [1.0], [10**400])


def test_a_torch_tensor_that_requires_grad_is_read_as_numbers():
    answer = torch.tensor([1.0, 2.0], requires_grad=True) * 1
    assert exercises.check_answer("x.grad", [1.0, 2.0], answer)


def test_whole_numbers_are_a_right_prediction_and_true_false_is_not():
    assert exercises.check_answer("x.grad", [2.0, 4.0], [2, 4])
    with pytest.raises(ExerciseError, match="True/False"):
        exercises.check_answer("x.grad", [1.0, 0.0], [True, False])


def test_orders_and_tables_of_arrays_compare_by_value():
    assert exercises.check_order("the grads", [np.ones(2)], [np.ones(2)])
    assert exercises.check_table("the grads", {"x": np.ones(2)}, {"x": np.ones(2)})
    with pytest.raises(ExerciseError, match="position 1"):
        exercises.check_order("the grads", [np.ones(2)], [np.ones(3)])
    with pytest.raises(ExerciseError, match="for 'x'"):
        exercises.check_table("the counts", {"x": 1}, {"x": True})


# ------------------------------------------------------------------ answers that lie
class LyingEq:
    """Equal to anything; hashed as "mul", so that a dict finds it under that key."""

    def __eq__(self, other):
        return True

    def __hash__(self):
        return hash("mul")


class LyingWord(str):
    def __eq__(self, other):
        return True

    __hash__ = str.__hash__


class LyingCount(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


class LyingLength(list):
    def __len__(self):
        return 2


class Peeking:
    """An answer that hands numpy the checker's own expected values (``expected``, found
    in the calling frames) instead of computing anything."""

    def __array__(self, dtype=None, copy=None):
        frame = sys._getframe(1)
        while frame is not None and "expected" not in frame.f_locals:
            frame = frame.f_back
        return np.asarray(frame.f_locals["expected"], dtype=float)

    def __float__(self):
        return 2.0


def lying_answers() -> list:
    """``(check, answer)``: answers whose ``==``, ``len``, ``__array__`` or ``__float__``
    would make a check that trusts them say right (issue 37, point 8)."""
    order = lambda answer: exercises.check_order("the order", ["mul", "sum"], answer)  # noqa: E731
    table = lambda answer: exercises.check_table("the counts", {"mul": 1}, answer)  # noqa: E731
    value = lambda answer: exercises.check_answer("x.grad", [1.0, 2.0], answer)  # noqa: E731
    number = lambda answer: exercises.check_answer("the count", 2.0, answer)  # noqa: E731
    return [
        pytest.param(order, [LyingWord("a"), LyingWord("b")], id="order / str subclass"),
        pytest.param(order, [LyingEq(), LyingEq()], id="order / objects equal to anything"),
        pytest.param(order, LyingLength(["mul"]), id="order / a list that says it has 2"),
        pytest.param(table, {"mul": LyingCount(7)}, id="table / int subclass"),
        pytest.param(table, {"mul": LyingEq()}, id="table / value equal to anything"),
        pytest.param(table, {LyingEq(): 1}, id="table / key equal to anything"),
        pytest.param(value, Peeking(), id="answer / __array__ peeking at the checker"),
        pytest.param(value, [Peeking(), Peeking()], id="answer / a list of them"),
        pytest.param(number, Peeking(), id="answer / __float__"),
        pytest.param(number, LyingCount(7), id="answer / int subclass"),
    ]


@pytest.mark.parametrize("check, answer", lying_answers())
def test_an_answer_that_lies_is_never_right(check, answer):
    with pytest.raises(ExerciseError):
        check(answer)


def test_plain_answers_of_numpys_own_kinds_are_still_read():
    """What a learner computes with numpy (np.int64 counts, np.float64 values) or
    PyTorch is read as numbers, not refused as an object of their own."""
    assert exercises.check_table("the counts", {"mul": 1}, {np.str_("mul"): np.int64(1)})
    assert exercises.check_order("the order", ["mul", "sum"], (np.str_("mul"), "sum"))
    assert exercises.check_answer("x.grad", [1.0, 2.0], [np.float64(1.0), np.int64(2)])
    assert exercises.check_answer("x.grad", [1.0, 2.0], [wb.tensor(1.0), torch.tensor(2.0)])


def test_a_lambda_is_not_a_function_class():
    with pytest.raises(ExerciseError, match="not a Function"):
        exercises.check_function(lambda x: x.exp(), [0.5])


def test_a_backward_loop_that_switches_grad_off_is_named_and_grad_mode_comes_back():
    def backward(root):
        wb.set_grad_enabled(False)
        root.backward()

    with pytest.raises(ExerciseError, match="left autograd switched off"):
        exercises.check_backward_loop(backward)
    assert wb.is_grad_enabled()


def test_an_endless_rule_names_its_line():
    def sigmoid_rule(orig, grad):
        while True:
            pass

    with pytest.raises(ExerciseError) as caught:
        exercises.check_rule("sigmoid", sigmoid_rule)
    message = str(caught.value)
    assert "did not finish in 0.5 seconds" in message
    assert "of sigmoid_rule (`while True:`)" in message or "of sigmoid_rule (`pass`)" in message


def test_a_loop_that_never_calls_apply_is_stopped():
    def backward(root):
        ready = [root.grad_fn]
        while ready:
            ready[-1].name()  # looks at the node, never runs it

    with pytest.raises(
        ExerciseError, match=r"did not finish .* of backward \(`(while ready:|ready)"
    ):
        exercises.check_backward_loop(backward)


def test_a_momentum_step_without_clone_fails():
    def sgd_step(params, state, lr, momentum):
        with wb.no_grad():
            for i, p in enumerate(params):
                b = state.get(i)
                b = p.grad if b is None else momentum * b + p.grad  # p.grad itself, no copy
                state[i] = b
                p -= lr * b

    with pytest.raises(ExerciseError, match="Your velocity is p.grad itself, not a copy"):
        exercises.check_optimizer_step(sgd_step)


def test_an_optimizer_step_that_forgets_no_grad_fails():
    def sgd_step(params, state, lr, momentum):
        for i, p in enumerate(params):
            b = state.get(i)
            b = p.grad.clone() if b is None else momentum * b + p.grad
            state[i] = b
            p -= lr * b  # autograd is recording: the engine refuses, as PyTorch's does

    with pytest.raises(ExerciseError, match="while autograd was recording"):
        exercises.check_optimizer_step(sgd_step)


# ------------------------------------------------------------------ without signals
def test_without_signals_a_trace_budget_stops_an_endless_loop(monkeypatch):
    """As in Pyodide: no alarm signal, so the clock is read by a trace function."""
    monkeypatch.setattr(guard, "can_use_alarm", lambda: False)

    def sigmoid_rule(orig, grad):
        count = 0
        while True:
            count += 1

    tracing = sys.gettrace()
    with pytest.raises(ExerciseError, match=r"of sigmoid_rule \(`(count \+= 1|while True:)`\)"):
        exercises.check_rule("sigmoid", sigmoid_rule)
    assert sys.gettrace() is tracing  # the trace function before the check is back


def test_a_check_in_another_thread_is_stopped_too():
    found = []

    def run():
        try:
            exercises.check_rule("sigmoid", never_returns)
        except ExerciseError as error:
            found.append(str(error))

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive()
    assert found and "did not finish" in found[0], found


def test_someone_elses_alarm_keeps_running():
    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *a: fired.append(True))
    try:
        signal.setitimer(signal.ITIMER_REAL, 2.0)
        with pytest.raises(ExerciseError):
            exercises.check_rule("sigmoid", raises)
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 0 < left < 2.0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# ------------------------------------------------------------------ Interrupt
def test_an_interrupt_is_one_line_naming_the_learners_line():
    def sigmoid_rule(orig, grad):
        os.kill(os.getpid(), signal.SIGINT)  # what the kernel's Interrupt sends
        while True:
            pass

    with pytest.raises(CheckInterrupted) as caught:
        exercises.check_rule("sigmoid", sigmoid_rule)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("You stopped the check while your code ran line ")
    assert re.search(r"of sigmoid_rule \(`(os.kill|while True|pass)", message), message
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    assert wb.is_grad_enabled()


def test_call_answer_is_guarded_too():
    with pytest.raises(ExerciseError, match="did not finish"):
        exercises.call_answer(never_returns)
    assert exercises.call_answer(lambda: 3) == 3


# ------------------------------------------------------------------ in a real kernel
KERNEL_CELLS = [
    "import os, signal\n"
    "import workbench as wb\n"
    "from workbench.exercises import check_backward_loop, check_rule, guard\n"
    "guard.TIME_LIMIT_S = 1",
    # the Interrupt button sends SIGINT to the kernel: here the learner's code sends it
    "def sigmoid_rule(orig, grad):\n"
    "    os.kill(os.getpid(), signal.SIGINT)\n"
    "    while True:\n"
    "        pass\n"
    "\n"
    "check_rule('sigmoid', sigmoid_rule)",
    "def sigmoid_rule(orig, grad):\n"
    "    while True:\n"
    "        pass\n"
    "\n"
    "check_rule('sigmoid', sigmoid_rule)",
    "def backward(root):\n"
    "    wb.set_grad_enabled(False)\n"
    "    root.backward()\n"
    "\n"
    "check_backward_loop(backward)",
    "print(wb.is_grad_enabled(), wb.get_default_dtype())",
]


@pytest.fixture(scope="module")
def kernel_outputs(tmp_path_factory):
    return run_in_kernel(KERNEL_CELLS, tmp_path_factory.mktemp("kernel"))


def error_of(outputs) -> dict:
    (error,) = [o for o in outputs if o["output_type"] == "error"]
    return error


def test_in_a_kernel_an_interrupted_check_is_one_line(kernel_outputs):
    error = error_of(kernel_outputs[1])
    assert error["ename"] == "CheckInterrupted"
    (line,) = error["traceback"]
    assert line.startswith("KeyboardInterrupt: You stopped the check while your code ran line ")
    assert "of sigmoid_rule (`" in line
    assert [o for o in kernel_outputs[1] if o["output_type"] != "error"] == []


def test_in_a_kernel_an_endless_rule_is_stopped_and_named(kernel_outputs):
    error = error_of(kernel_outputs[2])
    assert error["traceback"] == ["ExerciseError: see the message above."]
    (shown,) = [o for o in kernel_outputs[2] if o["output_type"] == "display_data"]
    text = shown["data"]["text/plain"]
    assert "did not finish in 1 second:" in text and "of sigmoid_rule" in text


def test_in_a_kernel_grad_mode_comes_back_after_a_loop_that_switched_it_off(kernel_outputs):
    error = error_of(kernel_outputs[3])
    assert error["traceback"] == ["ExerciseError: see the message above."]
    (printed,) = kernel_outputs[4]
    assert printed["text"] == "True float32\n"


# ------------------------------------------------------------------ random answers (make fuzz)
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**400), max_value=10**400)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.complex_numbers(allow_nan=True, allow_infinity=True)
    | st.text(max_size=5)
)
ARRAYS = hnp.arrays(
    st.sampled_from(["float64", "float32", "int64", "bool", "complex128", "uint8", "<U3"]),
    hnp.array_shapes(min_dims=0, max_dims=3, max_side=3),
)
ANSWERS = st.recursive(
    SCALARS | ARRAYS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)
FUZZED = ["check_answer", "check_order", "check_table", "check_collapse_sum", "check_x_grad"]


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(answer=ANSWERS, name=st.sampled_from(FUZZED))
def test_a_random_answer_gets_a_verdict_or_a_pass_never_a_crash(answer, name):
    """Any nested value, as the answer (or what the answer returns): an ExerciseError of
    the check's own words, or a pass only where the value is the expected one."""
    guard.TIME_LIMIT_S = 30.0  # hypothesis traces the code it runs: slow, but no answer hangs
    check = call_of(name)
    given_answer = answer if name in VALUE_CHECKS else returning(answer)
    before = Modes.now()
    try:
        with redirect_stdout(io.StringIO()):
            passed = check(given_answer)
    except ExerciseError as error:
        message = str(error)
        assert "gap in the checker" not in message and len(message) < LONGEST_MESSAGE, message
    else:
        assert name == "check_answer" and np.array_equal(np.asarray(answer), [1.0, 2.0]), passed
    assert Modes.now() == before
