"""Every check runs under a guard: fresh modes, a time limit, one line on Interrupt.

A learner's code is untrusted input to a checker. It may loop forever, switch autograd
off and leave it off, set numpy to raise on every overflow, or hand back something no
one foresaw. :func:`checker`, the decorator on every check, makes each check:

- start from the modes of a fresh kernel (:data:`FRESH`: grad mode on, no inference
  or anomaly mode, no saved-tensor hooks, float32 as the default dtype, numpy's
  default error handling), and put the learner's own modes back afterwards, whatever
  happened;
- fail, in plain words, an answer that leaves a mode changed (``wb.set_grad_enabled(False)``
  never switched back): in the learner's notebook it would break every cell after;
- stop after :data:`TIME_LIMIT_S` seconds, naming the line of the learner's code that
  was running;
- end in one line when the learner presses Interrupt (:class:`CheckInterrupted`);
- turn an error the checker did not foresee into a sentence, never a traceback
  through the checker.

The time limit. In CPython's main thread (a Jupyter kernel runs cells there) an alarm
(``signal.setitimer``) interrupts the learner's code between two bytecodes and raises
:class:`TimeUp` in it: pure Python, ``while True: pass`` included, stops. A watchdog
thread could not do this: Python cannot stop another thread's code. Where there are
no signals (a Pyodide kernel in the browser, or a check called from another thread)
a trace function (``sys.settrace``) looks at the clock on each function call, and on
each line of the learner's own code, and raises :class:`TimeUp` there. Either way a
loop that catches *everything* (a bare ``except:``) can swallow the stop: the alarm
fires again each second, the trace function only once (Python removes a trace
function that raised). A single numpy call that runs long is not interrupted until
it returns.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import inspect
import linecache
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from ..core import state
from ..core.tensor import Tensor, get_default_dtype, set_default_dtype
from .report import (
    CheckerMisuse,
    CheckInterrupted,
    ExerciseError,
    error_text,
    fail,
    is_library_file,
    show_in_notebook,
)

TIME_LIMIT_S = 30.0  # seconds a whole check may take, the learner's code included
REFIRE_S = 1.0  # the alarm fires again this often if the learner's code swallowed it


@dataclass(frozen=True)
class Modes:
    """The global modes a learner's code can change, as they are at one moment."""

    grad: bool
    inference: bool
    anomaly: tuple  # (enabled, check_nan)
    saved_hooks: tuple
    default_dtype: np.dtype
    numpy_errors: tuple  # sorted (kind, how) pairs of np.geterr()

    @classmethod
    def now(cls) -> Modes:
        return cls(
            state.grad_mode.enabled,
            state.grad_mode.inference,
            (state.anomaly.enabled, state.anomaly_checks_nan() or not state.anomaly.enabled),
            state.saved_hooks.stack,
            get_default_dtype(),
            tuple(sorted(np.geterr().items())),
        )

    def apply(self) -> None:
        """Make these the modes in force."""
        state.set_inference_flag(self.inference)
        state.set_grad_enabled_flag(self.grad)
        state.set_anomaly(*self.anomaly)
        state.cut_saved_hooks(0)
        state.push_saved_hooks(*self.saved_hooks)
        set_default_dtype(self.default_dtype)
        np.seterr(**dict(self.numpy_errors))

    def changes(self, since: Modes) -> list[str]:
        """What differs from ``since``, in the words of the call that does it."""
        said = []
        if self.grad != since.grad and not self.grad:
            said.append("autograd switched off (wb.set_grad_enabled(False), never switched back)")
        elif self.grad != since.grad:
            said.append("autograd switched on (wb.set_grad_enabled(True), never switched back)")
        if self.inference != since.inference:
            said.append("inference mode on (wb.inference_mode)")
        if self.anomaly != since.anomaly:
            said.append("anomaly mode changed (wb.autograd.set_detect_anomaly)")
        if self.saved_hooks != since.saved_hooks:
            said.append("saved-tensor hooks in force (wb.autograd.graph.saved_tensors_hooks)")
        if self.default_dtype != since.default_dtype:
            said.append(f"the default dtype set to {self.default_dtype} (wb.set_default_dtype)")
        if self.numpy_errors != since.numpy_errors:
            said.append("numpy's error handling changed (np.seterr)")
        return said


FRESH = Modes(
    grad=True,
    inference=False,
    anomaly=(False, True),
    saved_hooks=(),
    default_dtype=np.dtype("float32"),
    numpy_errors=(("divide", "warn"), ("invalid", "warn"), ("over", "warn"), ("under", "ignore")),
)


class TimeUp(BaseException):
    """Raised inside the learner's code when a check's time is up.

    A ``BaseException``, as ``KeyboardInterrupt`` is, so that the learner's
    ``except Exception:`` does not swallow it. ``args[0]`` is where their code was.
    """


class Guard(threading.local):
    depth = 0  # checks running in this thread: only the outermost guards


guard_state = Guard()


def checker(check: Callable) -> Callable:
    """Run ``check`` under the guard (see the module's docstring); nested checks run as they are."""

    @functools.wraps(check)
    def guarded(*args, **kwargs):
        if guard_state.depth:
            return check(*args, **kwargs)
        guard_state.depth += 1
        try:
            return run_guarded(check, args, kwargs)
        finally:
            guard_state.depth -= 1

    return guarded


def run_guarded(check: Callable, args: tuple, kwargs: dict):
    """``check(*args, **kwargs)`` from fresh modes, in time, its surprises as sentences."""
    learners = Modes.now()
    FRESH.apply()
    try:
        with time_limit(TIME_LIMIT_S), interrupts_watched() as pressed:
            passed = check(*args, **kwargs)
        changed = left_changed(Modes.now(), "")
        if changed:
            fail(changed)
        return passed
    except TimeUp as up:
        raise shown(took_too_long(up.args[0] if up.args else None)) from None
    except KeyboardInterrupt as stop:
        if pressed is None or pressed:
            show_in_notebook()
            raise CheckInterrupted(interrupted(stop)) from None
        raise shown(tried_to_end(stop)) from None
    except (ExerciseError, CheckerMisuse):
        raise
    except Exception as err:
        raise shown(unforeseen(err)) from None
    except BaseException as err:  # SystemExit, GeneratorExit...: raised by the answer
        raise shown(tried_to_end(err)) from None
    finally:
        learners.apply()


class interrupts_watched:
    """``with interrupts_watched() as pressed:`` — ``pressed`` becomes true when a SIGINT
    (the kernel's Interrupt, Ctrl-C) arrives during the block; None where no handler can
    be installed (not the main thread, no signals), where every KeyboardInterrupt counts
    as pressed.

    A KeyboardInterrupt the learner's code raises itself is an answer, not a press: it
    gets a verdict (:func:`tried_to_end`), as SystemExit does. The handler records the
    signal, then does what the handler before it does (raise KeyboardInterrupt).
    """

    def __enter__(self) -> list | None:
        self.pressed: list | None = []
        self.previous = None
        if not can_use_alarm():
            self.pressed = None
            return None
        try:
            self.previous = signal.signal(signal.SIGINT, self.on_interrupt)
        except (ValueError, OSError, AttributeError):
            self.pressed = None
        return self.pressed

    def __exit__(self, *exc) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)

    def on_interrupt(self, signum, frame) -> None:
        self.pressed.append(signum)
        if callable(self.previous):
            self.previous(signum, frame)
        elif self.previous != signal.SIG_IGN:
            raise KeyboardInterrupt


@contextlib.contextmanager
def modes_kept() -> Iterator[None]:
    """Around one call of the learner's code: a mode it leaves changed is put back, and
    the check fails there, before the change can break what the checker does next."""
    before = Modes.now()
    yield
    after = Modes.now()
    if after != before:
        before.apply()
        fail(left_changed(after, "", since=before))


@contextlib.contextmanager
def inputs_kept(function: Callable, args: tuple) -> Iterator[None]:
    """Around one call of the learner's ``function``: it must not change its arguments in
    place (the checker reads them again, and so does the engine in their notebook)."""
    before = [snapshot(arg) for arg in args]
    yield
    for position, (arg, then) in enumerate(zip(args, before)):
        if then is not None and not same_snapshot(snapshot(arg), then):
            name = argument_name(function, position)
            fail(
                f"Your function changed its argument {name} in place. Leave what you are "
                "given as it is: compute new tensors (x * 2, not x *= 2 or x.mul_(2)), and "
                "copy a list before you change it."
            )


def snapshot(value):
    """A copy of what a call could change in place: a tensor's or array's values, a list's
    or dict's items (themselves, not copies); None for anything else."""
    if isinstance(value, Tensor):
        return value.detach().numpy().copy()
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, (list, dict)):
        return copy.copy(value)
    return None


def same_snapshot(now, then) -> bool:
    if isinstance(then, np.ndarray):
        return now.shape == then.shape and bool(np.all((now == then) | (now != now)))
    if isinstance(then, dict):
        then, now = list(then.items()), list(now.items())
        return len(now) == len(then) and all(
            a[0] is b[0] and a[1] is b[1] for a, b in zip(now, then)
        )
    return len(now) == len(then) and all(a is b for a, b in zip(now, then))


def argument_name(function: Callable, position: int) -> str:
    """``x``, from the learner's ``def f(x, ...)``; else ``number 2``."""
    try:
        names = list(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        names = []
    if position < len(names) and not names[position].startswith("*"):
        return names[position]
    return f"number {position + 1}"


def shown(message: str) -> ExerciseError:
    show_in_notebook()
    return ExerciseError(message)


def left_changed(modes: Modes, then: str, since: Modes = FRESH) -> str:
    """What to say if the learner's code left a mode changed (``then``: what it caused)."""
    changed = modes.changes(since)
    if not changed:
        return ""
    return (
        f"Your code left {' and '.join(changed)} when it returned{then}. The check has "
        "put your modes back, but in your notebook this change stays for every cell "
        "after. Change a mode for a block only: `with wb.no_grad():` (or "
        "`with wb.set_grad_enabled(False):`) puts it back when the block ends."
    )


def unforeseen(err: Exception) -> str:
    """A sentence for an error the checker did not foresee: a mode left changed, the
    learner's line, or, in the checker itself, a gap to report."""
    changed = left_changed(Modes.now(), f", and the check could not go on ({error_text(err)})")
    if changed:
        return changed
    frame = learners_frame_of(traceback.extract_tb(err.__traceback__))
    if frame is not None:
        return f"Your code raised an error at{where_text(frame)}: {error_text(err)}"
    return (
        f"The check could not go on with your answer ({error_text(err)}). This is a gap in "
        "the checker, not a verdict on your answer: tell your teacher what you gave it."
    )


def learners_frame_of(frames) -> traceback.FrameSummary | None:
    """The innermost frame outside the workbench, numpy and Python's own library."""
    theirs = [f for f in frames if not is_library_file(f.filename)]
    return theirs[-1] if theirs else None


def where_text(frame: traceback.FrameSummary | None) -> str:
    if frame is None:
        return ""
    line = f" (`{frame.line.strip()}`)" if frame.line else ""
    return f" line {frame.lineno} of {frame.name}{line}"


def took_too_long(frame: traceback.FrameSummary | None) -> str:
    if frame is None:
        return (
            f"The check did not finish in {seconds_text()} and was stopped; it was "
            "in the engine or the checker, running what your code asked for. Does your code "
            "build a graph that grows at every step?"
        )
    return (
        f"Your code did not finish in {seconds_text()}: the check stopped it at"
        f"{where_text(frame)}. Is there a loop that never ends (a `while` whose condition "
        "stays true, a queue that never empties)?"
    )


def seconds_text() -> str:
    return "1 second" if TIME_LIMIT_S == 1 else f"{TIME_LIMIT_S:g} seconds"


def tried_to_end(err: BaseException) -> str:
    """A verdict for an answer that raised SystemExit, GeneratorExit, KeyboardInterrupt...:
    it would end the check (or the process) without one."""
    frame = learners_frame_of(traceback.extract_tb(err.__traceback__))
    where = f" at{where_text(frame)}" if frame else ""
    return (
        f"Your code raised {error_text(err)[:-1]}{where}, which would end the check "
        "without a verdict: an answer must return its result. Take that `raise` (or "
        "`exit()`, `sys.exit()`) out of your code."
    )


def interrupted(stop: KeyboardInterrupt) -> str:
    frame = learners_frame_of(traceback.extract_tb(stop.__traceback__))
    where = f" while your code ran{where_text(frame)}" if frame else ""
    return f"You stopped the check{where}."


# ---------------------------------------------------------------- the time limit
class time_limit:
    """``with time_limit(seconds):`` raises :class:`TimeUp` in the code running at the end."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def __enter__(self) -> None:
        self.by_alarm = can_use_alarm()
        if self.by_alarm:
            self.start_alarm()
        else:
            self.start_tracing()

    def __exit__(self, *exc) -> None:
        if self.by_alarm:
            self.stop_alarm()
        else:
            sys.settrace(self.previous_trace)

    def start_alarm(self) -> None:
        self.previous_handler = signal.signal(signal.SIGALRM, raise_time_up)
        self.previous_timer = signal.setitimer(signal.ITIMER_REAL, self.seconds, REFIRE_S)
        self.started = time.monotonic()

    def stop_alarm(self) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self.previous_handler)
        left, interval = self.previous_timer
        if left > 0:  # someone else's alarm (pytest-timeout's...) runs on
            elapsed = time.monotonic() - self.started
            signal.setitimer(signal.ITIMER_REAL, max(left - elapsed, 0.001), interval)

    def start_tracing(self) -> None:
        self.previous_trace = sys.gettrace()
        sys.settrace(clock_watcher(time.monotonic() + self.seconds))


def can_use_alarm() -> bool:
    """An alarm signal works in CPython's main thread, not in Pyodide or other threads."""
    return (
        hasattr(signal, "setitimer")
        and sys.platform != "emscripten"
        and threading.current_thread() is threading.main_thread()
    )


def raise_time_up(signum, frame) -> None:
    if frame is not None and frame.f_code.co_name == "__del__":
        return  # Python would swallow it there (and print it): the next alarm comes soon
    raise TimeUp(learners_line(frame))


def clock_watcher(deadline: float) -> Callable:
    """A trace function: the clock is read at each call, and at each line of the learner's
    code (library frames get no line events, which would slow the engine down)."""

    def on_line(frame, event, arg):
        if time.monotonic() > deadline:
            raise TimeUp(learners_line(frame))
        return on_line

    def on_call(frame, event, arg):
        if time.monotonic() > deadline:
            raise TimeUp(learners_line(frame))
        return None if is_library_file(frame.f_code.co_filename) else on_line

    return on_call


def learners_line(frame) -> traceback.FrameSummary | None:
    """The innermost frame of the learner's code, from the running ``frame`` outwards,
    within the check (not the cell that called it)."""
    while frame is not None and frame.f_code is not run_guarded.__code__:
        filename = frame.f_code.co_filename
        if not is_library_file(filename):
            line = linecache.getline(filename, frame.f_lineno, frame.f_globals).strip()
            return traceback.FrameSummary(
                filename, frame.f_lineno, frame.f_code.co_name, line=line or None
            )
        frame = frame.f_back
    return None
