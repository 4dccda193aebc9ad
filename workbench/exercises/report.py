"""What a check says: :class:`Passed` when the answer is right, :class:`ExerciseError` when not.

``ExerciseError`` is an ``AssertionError``, so a failed check fails an nbgrader test
cell. Its message is one or two plain sentences; what a picture needs (the
:class:`~workbench.exercises.diagnose.Finding`: expected, got, the mask of wrong
elements; a graph to light up) travels with it and is drawn by its ``_repr_html_``.

In a notebook the message shows as HTML (it wraps at spaces at any width), with the
pictures under it, then a one-line error box ("ExerciseError: see the message above.")
that fails the cell, and no traceback through the checker's code: the first error
raised installs a handler for ``ExerciseError`` in IPython (:func:`show_in_notebook`).
Errors raised inside the learner's own function are turned into a short message that
names their line (:func:`learner_error`).
"""

from __future__ import annotations

import html
import re
import sys
import textwrap
import traceback
from collections.abc import Callable
from pathlib import Path

from .diagnose import Finding
from .picture import heat_map_html

PACKAGE_DIR = str(Path(__file__).resolve().parents[1])  # workbench/: frames here are ours
WRAP = 88  # characters per line of a message shown as plain text
LONGEST = 600  # characters of a learner's error shown in a check's message
SEE_ABOVE = "see the message above."  # the error line under a check's message


class ExerciseError(AssertionError):
    """A wrong answer: ``str(err)`` says what is wrong; the attributes say where.

    ``finding`` is the diagnosis (``.kind``, ``.expected``, ``.got``, ``.wrong``: the
    mask of wrong elements), ``input`` the name of the input whose gradient is wrong,
    ``picture`` a callable that draws the graph with the wrong node lit (or None).
    ``kind`` names the misconception where there is no finding ("raised NameError").
    ``parts``, for an exercise checked in parts (a rule on several calls, a prediction
    session's steps), is ``(right, asked)``: the sealed grading scores it
    ``right / asked`` of the cell's points.
    """

    def __init__(
        self,
        message: str,
        finding: Finding | None = None,
        input: str | None = None,
        picture: Callable[[], str] | None = None,
        kind: str | None = None,
        parts: tuple[int, int] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.finding = finding
        self.input = input
        self.picture = picture
        self._kind = kind
        self.parts = parts

    def in_parts(self, right: int, asked: int, unit: str) -> ExerciseError:
        """This error, for an exercise right on ``right`` of its ``asked`` parts (each a
        ``unit``: "call", "step"): its message says so where some are right."""
        told = self.message
        if right:
            told += f" (Right on {right} of {asked} {unit}s.)"
        return ExerciseError(
            told, self.finding, self.input, self.picture, self.kind, (right, asked)
        )

    @property
    def kind(self) -> str | None:
        """The misconception's id (a finding's kind: "no_upstream", "sign"...), or None.
        A notebook keeps it with the message (:data:`KIND_KEY`): the class report
        counts wrong answers by it, not by their wording, which holds the learner's values."""
        if self._kind is not None:
            return self._kind
        return None if self.finding is None else self.finding.kind

    @property
    def expected(self):
        return None if self.finding is None else self.finding.expected

    @property
    def got(self):
        return None if self.finding is None else self.finding.got

    @property
    def wrong(self):
        return None if self.finding is None else self.finding.wrong

    def visual_html(self) -> str:
        """The pictures alone: a heat map of the wrong elements, the graph with the node lit."""
        parts = []
        finding = self.finding
        if finding is not None and finding.wrong is not None and finding.got is not None:
            parts.append(heat_map_html(finding.got, finding.expected, finding.wrong, finding.what))
        if self.picture is not None:
            parts.append(self.picture())
        return "\n".join(parts)

    def _repr_html_(self) -> str:
        message = f'<p style="color:#b71c1c"><b>Not yet.</b> {html.escape(self.message)}</p>'
        return message + self.visual_html()


class NotAnswered(ExerciseError):
    """The learner's answer is still the stub: its ``raise NotImplementedError()`` ran.

    A check raises it like any wrong answer; :meth:`Exercise.grade` turns it into a
    note and a score of 0, so that Run All of a fresh copy goes on to the end.
    """

    def __init__(self, what: str) -> None:
        super().__init__(
            f"Not answered yet: your {what} still raises NotImplementedError(). Write your "
            "code in its cell in place of `# YOUR CODE HERE` and `raise NotImplementedError()`, "
            "run that cell, then this one again.",
            kind="not_answered",
        )

    def _repr_html_(self) -> str:
        return f'<p style="color:#0d47a1"><b>Open.</b> {html.escape(self.message)}</p>'


class Passed:
    """A right answer: what was checked, and what the learner just proved.

    Returned by every check, so that the cell shows it; ``bool(result)`` is True.
    """

    def __init__(self, headline: str, proof: str) -> None:
        self.headline = headline
        self.proof = proof

    def __bool__(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"✓ {self.headline}\n  {self.proof}"

    def _repr_markdown_(self) -> str:
        return f"✓ **{self.headline}**\n\n{self.proof}"

    def _repr_html_(self) -> str:
        return (
            f'<p style="color:#1b5e20">✓ <b>{html.escape(self.headline)}</b></p>'
            f"<p>{html.escape(self.proof)}</p>"
        )


class CheckInterrupted(KeyboardInterrupt):
    """The learner pressed Interrupt during a check: one line says where their code was.

    Still a ``KeyboardInterrupt``, so Run All stops as it would; a notebook shows its
    one line and no traceback (:func:`notebook_handler`).
    """


class CheckerMisuse(ValueError):
    """A lesson called a check wrongly (an op with no default inputs, no inputs at all):
    the author's mistake, not the learner's, so it goes through as a ``ValueError``."""


class CheckerStop(Exception):
    """Raised by the checker's own instruments inside the learner's code to stop it."""


PASSED_ON = (CheckerStop, ExerciseError)  # raised inside the learner's code, yet not theirs


def fail(message: str, finding: Finding | None = None, **extra) -> None:
    """Raise :class:`ExerciseError`, after making sure a notebook shows it briefly."""
    show_in_notebook()
    raise ExerciseError(message, finding, **extra)


def fail_on(finding: Finding | None, context: str) -> None:
    """Fail with ``finding``'s sentences (said in ``context``) when there is a finding;
    ``None`` is a check that found nothing wrong."""
    if finding is not None:
        fail(finding.sentences(context), finding)


def learner_error(
    err: BaseException, function: Callable, what: str, context: str = ""
) -> ExerciseError:
    """A short message for an exception raised while the learner's ``function`` ran.

    ``what`` names it ("rule sigmoid_rule", "Function Exp's backward"); ``context``
    says on what it ran ("With x of shape (2, 3)"). The message
    gives the line of *their* code that was running (the innermost frame in the
    function's file, else outside the workbench), never the engine's internals.
    """
    if is_stub(err):
        return NotAnswered(what)
    frame = learners_frame(err, function)
    where = ""
    if frame is not None:
        line = f" (`{frame.line.strip()}`)" if frame.line else ""
        where = f" on line {frame.lineno}{line}"
    message = f"your {what} raised an error{where}: {known_cause(err) or error_text(err)}"
    message = f"{context}, {message}" if context else message[0].upper() + message[1:]
    show_in_notebook()
    return ExerciseError(message, kind=f"raised {type(err).__name__}")


def is_stub(err: BaseException) -> bool:
    """Did the exercise's stub raise ``err``: a NotImplementedError from the learner's own line?

    One raised deeper down (by the workbench or numpy, for something it does not do)
    is a real error, reported as such.
    """
    if not isinstance(err, NotImplementedError):
        return False
    frames = traceback.extract_tb(err.__traceback__)
    return bool(frames) and not is_library_file(frames[-1].filename)


def error_text(err: BaseException) -> str:
    """``NameError: name 'yy' is not defined.``: the error's first line, whole.

    A first line longer than ``LONGEST`` characters ends at a space before that, with a
    note of how much was left out, never in the middle of a word or a number.
    """
    reason = str(err).strip().splitlines()[0] if str(err).strip() else ""
    if len(reason) > LONGEST:
        kept = reason[:LONGEST].rsplit(" ", 1)[0]
        reason = f"{kept} … ({len(reason) - len(kept)} more characters)"
    return f"{type(err).__name__}: {reason}." if reason else f"{type(err).__name__}."


NOT_SAVED = re.compile(
    r"rule of '(\w+)' used (?:input (\w+)|the output), which the op does not save"
)


def known_cause(err: BaseException) -> str | None:
    """Plain words for an engine error a learner's code often meets, else None."""
    unsaved = NOT_SAVED.search(str(err))
    if unsaved is None:
        return None
    op_name, name = unsaved.groups()
    op = registered_op(op_name)
    if op is None:
        return None
    return output_not_kept(op) if name is None else input_not_kept(op, name)


def input_not_kept(op, name: str) -> str:
    """A rule read input ``name``, which this call's node did not keep: why, and what to use.

    mul keeps ``a`` only for ``b``'s gradient: a call that wants none for ``b`` drops
    it. sigmoid, tanh and exp never keep their input: their rules use the output.
    """
    users = gradients_that_keep(op, name)
    if users:
        return (
            f"it used {name}, which this call did not keep: {op.name} keeps {name} only for "
            f"the gradient of {' and '.join(users)}, and orig.needs_input_grad says it is not "
            "wanted here. Compute a gradient only for the inputs that orig.needs_input_grad "
            "marks True, and return None for the others."
        )
    kept = f"it used {name}, which {op.name}'s node does not keep (orig.args holds only its shape "
    if op.save_out:
        return (
            f"{kept}and dtype): the node keeps its output y = orig.out, not {name}. "
            "Write the rule with y."
        )
    return f"{kept}and dtype): {op.name}'s gradients do not need the values of {name}."


def output_not_kept(op) -> str:
    """A rule read ``orig.out`` of an op that keeps its inputs instead (abs, mul)."""
    kept = " and ".join(f"orig.args[{i}]" for i in range(len(op.input_names)))
    inputs = "its input" if len(op.input_names) == 1 else "its inputs"
    return (
        f"it used orig.out, which {op.name}'s node does not keep: it keeps {inputs} "
        f"({kept}), not its output y. Write the rule with {kept}."
    )


def registered_op(op_name: str):
    """The registry's entry for ``op_name``, or None (the registry is read lazily)."""
    from ..ops import registry

    return registry.OPS.get(op_name)


def gradients_that_keep(op, name: str) -> list[str]:
    """The inputs whose gradients make ``op`` keep input ``name`` (mul: b's keeps a)."""
    if name not in op.input_names:
        return []
    index = op.input_names.index(name)
    users = []
    for saved, needed_by in op.save_inputs:
        if saved == index and needed_by is not None:
            users += [op.input_names[j] for j in needed_by]
    return users


def learners_frame(err: BaseException, function: Callable) -> traceback.FrameSummary | None:
    """The innermost frame of the learner's code: in their function's file, else not ours."""
    frames = traceback.extract_tb(err.__traceback__)
    home = getattr(getattr(function, "__code__", None), "co_filename", None)
    theirs = [f for f in frames if f.filename == home]
    if not theirs:
        theirs = [f for f in frames if not is_library_file(f.filename)]
    return theirs[-1] if theirs else None


def is_library_file(filename: str) -> bool:
    """Frames of the workbench, numpy or the standard library: not the learner's."""
    if filename.startswith(PACKAGE_DIR):
        return True
    prefixes = (sys.prefix, sys.base_prefix)  # a virtual environment's, and Python's own
    return "site-packages" in filename or filename.startswith(prefixes)


# ---------------------------------------------------------------- notebooks
def show_in_notebook() -> None:
    """In IPython, show an ExerciseError as its message and pictures, without a traceback.

    Installs an IPython handler for ``ExerciseError`` only (once), unless another
    library has already installed a handler of its own. The error still reaches
    IPython as an error, so nbgrader records the cell as failed.
    """
    shell = running_ipython()
    if shell is None:
        return
    if shell.custom_exceptions == HANDLED:
        return
    if shell.custom_exceptions:
        return  # another handler is installed: leave it, the usual traceback shows
    shell.set_custom_exc(HANDLED, notebook_handler)


def running_ipython():
    """The IPython shell this code runs in, or None (IPython is never imported here)."""
    module = sys.modules.get("IPython")
    if module is None:
        return None
    return module.get_ipython()


HANDLED = (ExerciseError, CheckInterrupted)  # what notebook_handler shows
KIND_KEY = "workbench"  # a shown message's output metadata: {"workbench": {"kind": id}}


def notebook_handler(shell, etype, value, tb, tb_offset=None):
    """IPython's handler for ExerciseError: the message and its pictures, then a short error;
    for an interrupted check (:class:`CheckInterrupted`) its one line alone.

    The message shows as HTML, which wraps at spaces at any width; an error box is
    preformatted text, which a notebook breaks mid-word ("expec ted") once a line is
    wider than the box. The one-line error after it is what marks the cell failed (for
    nbgrader too).
    """
    from IPython.display import display

    if isinstance(value, CheckInterrupted):
        line = f"KeyboardInterrupt: {value}"
    else:
        kind = getattr(value, "kind", None)
        display(Shown(value), metadata={KIND_KEY: {"kind": kind}} if kind else None)
        line = f"{etype.__name__}: {SEE_ABOVE}"
    show = getattr(shell, "_showtraceback", None)  # what IPython and ipykernel send errors by
    if show is not None:
        show(etype, value, [line])
    else:
        shell.showtraceback((etype, value, tb), exception_only=True)
    return []


class Shown:
    """A check's message as a notebook shows it: HTML there, lines broken at spaces elsewhere."""

    def __init__(self, error: ExerciseError) -> None:
        self.error = error

    def _repr_html_(self) -> str:
        return self.error._repr_html_()

    def __repr__(self) -> str:
        return "\n".join(wrapped(self.error.message))


def wrapped(text: str, width: int = WRAP) -> list[str]:
    """``text`` as lines of at most ``width`` characters, broken at spaces.

    A notebook's error box and nbgrader's feedback show an error as preformatted text:
    one long line is either cut off or broken mid-word ("expec ted"). Lines broken
    here at spaces show whole everywhere.
    """
    lines = []
    for paragraph in text.split("\n"):
        lines.extend(textwrap.wrap(paragraph, width, break_long_words=False) or [""])
    return lines


def call_learner(function: Callable, args: tuple, context: str = "", what: str = ""):
    """The learner's ``function`` on ``args``; an error in it becomes a short message
    (:func:`learner_error`) naming ``what`` it is and, in ``context``, on what it ran."""
    from .guard import inputs_kept, modes_kept  # guard.py builds on this module

    try:
        with modes_kept(), inputs_kept(function, args):
            return function(*args)
    except PASSED_ON:  # the checker's own stops and messages go through as they are
        raise
    except Exception as err:
        name = getattr(function, "__name__", "function")
        raise learner_error(err, function, what or f"function {name}", context) from None
