"""The ``workbench`` command.

``workbench lab`` opens your copies of the lessons in JupyterLab (made on first use in
``my-lessons/``, solutions removed; ``--source`` opens the originals, with solutions;
``--port 9000 --no-browser`` for a headless machine; other options, such as
``--ServerApp.ip=0.0.0.0``, go to JupyterLab); ``workbench lessons --reset 01`` gives you
a fresh copy of lesson 01; ``workbench render run.json --kind backward --step 12 -o
step12.svg`` draws a saved trace (``.svg``, ``.png`` or ``.dot``).

For teachers (``workbench.teaching.classroom``): ``workbench course DIR`` makes an nbgrader course
directory from the lessons (``--exam`` takes the hints out), ``workbench answer-key``
writes every solution in one file, ``workbench class-report DIR`` shows how the class
did per exercise, ``workbench schedule`` each lesson's time to do.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


NO_LAB = (
    "workbench lab: JupyterLab is not installed in this environment. "
    "Install it with `pip install 'autodiff-workbench[lab]'` (or `make lab` in a checkout)."
)


def lab_command(
    lessons: Path, port: int | None, open_browser: bool, extra: list | tuple = ()
) -> list:
    """The JupyterLab command line; as root JupyterLab refuses to start without --allow-root.

    ``extra`` options are passed to JupyterLab as they are.
    """
    cmd = [sys.executable, "-m", "jupyterlab", f"--notebook-dir={lessons}"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    if port is not None:
        cmd.append(f"--port={port}")
    if not open_browser:
        cmd.append("--no-browser")
    return cmd + list(extra)


# The course's JupyterLab defaults ("Save Jupyter widget state in notebooks" on), where
# JupyterLab reads them: {sys.prefix}/share/jupyter/lab/settings/overrides.d/*.json.
LAB_DEFAULTS = Path("share/jupyter/lab/settings/overrides.d/autodiff-workbench.json")


def install_lab_defaults(prefix: Path = Path(sys.prefix)) -> bool:
    """Put the course's lab defaults (``workbench/lab_defaults.json``) where the JupyterLab
    of ``prefix`` reads them, when they are missing; True if they were put there.

    With widget state saved in the notebook, a notebook reopened after its kernel is gone
    draws each widget with the course's "run this cell again" note instead of
    JupyterLab's "Error displaying widget: model not found". ``workbench lab`` calls this
    for its own environment; the hub's image, for the learners' (setup-learner-env.sh).
    A learner can still turn the setting off in JupyterLab's settings.
    """
    target = prefix / LAB_DEFAULTS
    if target.exists():
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes((Path(__file__).parents[1] / "lab_defaults.json").read_bytes())
    return True


def cmd_lab(args) -> int:
    from . import course

    lessons = Path(args.lessons).resolve()
    if not lessons.is_dir():
        print(f"workbench lab: no lessons folder at {lessons}", file=sys.stderr)
        return 2
    if importlib.util.find_spec("jupyterlab") is None:
        print(NO_LAB, file=sys.stderr)
        return 2
    if not args.source:
        mine = Path(args.mine).resolve()
        made = course.make_copies(lessons, mine)
        if made:
            print(f"made your copies of {len(made)} lessons in {mine} (solutions removed)")
        lessons = mine
    if install_lab_defaults():
        print("JupyterLab will save widget state in your notebooks (the course's default)")
    cmd = lab_command(lessons, args.port, not args.no_browser, args.jupyter_options)
    print("starting:", " ".join(cmd), flush=True)
    if args.no_browser:
        print("open the URL with ?token=... that JupyterLab prints below", flush=True)
    return subprocess.call(cmd)


def cmd_lessons(args) -> int:
    """Make the learner's copies, or restore a fresh copy of one lesson."""
    from . import course

    lessons, mine = Path(args.lessons).resolve(), Path(args.mine).resolve()
    if args.reset is None:
        made = course.make_copies(lessons, mine)
        print(f"{mine}: {len(made)} new copies; {len(course.lesson_paths(mine))} lessons in all")
        return 0
    try:
        fresh, kept = course.reset_copy(args.reset, lessons, mine)
    except ValueError as err:
        print(f"workbench lessons: {err}", file=sys.stderr)
        return 2
    if kept is not None:
        print(f"your copy is kept as {kept}")
    print(f"a fresh copy: {fresh}")
    return 0


def cmd_render(args) -> int:
    """Draw a saved trace; every failure is one clear line, not a traceback.

    Exit status 2: a bad file or request, or the renderer failed or ran out of time;
    3: no renderer installed.
    """
    from ..trace import Trace, TraceFormatError
    from ..viz import RendererMissing, RenderError, draw

    out = Path(args.output or Path(args.trace).with_suffix(f".{args.kind}.svg"))
    try:
        trace = Trace.load(args.trace)
        graph = draw(trace, kind=args.kind, step=args.step, fold_limit=args.fold_limit)
        graph.save(out, timeout=args.timeout)
    except RendererMissing as err:
        print(f"workbench render: {err}", file=sys.stderr)
        return 3
    except (OSError, TraceFormatError, ValueError, IndexError, RenderError) as err:
        print(f"workbench render: {err}", file=sys.stderr)
        return 2
    print(f"wrote {out}")
    return 0


def add_lesson_folders(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lessons", default=str(ROOT / "lessons"), help="the source lessons")
    parser.add_argument(
        "--mine", default=str(ROOT / "my-lessons"), help="your copies (git ignores it)"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="workbench", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    lab = sub.add_parser("lab", help="open your copies of the lessons in JupyterLab")
    add_lesson_folders(lab)
    lab.add_argument("--source", action="store_true", help="open the originals (solutions in)")
    lab.add_argument("--port", type=int, default=None)
    lab.add_argument("--no-browser", action="store_true")
    lab.set_defaults(func=cmd_lab)
    lessons = sub.add_parser("lessons", help="make your copies of the lessons, or reset one")
    add_lesson_folders(lessons)
    lessons.add_argument(
        "--reset", metavar="LESSON", help="a fresh copy of one lesson, e.g. 01 (yours is kept)"
    )
    lessons.set_defaults(func=cmd_lessons)
    render = sub.add_parser("render", help="draw a saved trace as SVG, PNG or DOT")
    render.add_argument("trace", help="a trace saved with Trace.save (JSON)")
    render.add_argument("--kind", choices=("backward", "forward"), default="backward")
    render.add_argument(
        "--step",
        type=int,
        default=None,
        help="highlight backward step k (from 1, as the stepper counts)",
    )
    render.add_argument("-o", "--output", help="out.svg, out.png or out.dot")
    render.add_argument(
        "--fold-limit", type=int, default=150, help="fold graphs bigger than this many vertices"
    )
    render.add_argument(
        "--timeout", type=float, default=None, help="seconds the layout may take (default 30)"
    )
    render.set_defaults(func=cmd_render)
    from .classroom.commands import add_commands

    add_commands(sub)  # the teacher's: course, answer-key, class-report, schedule
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown and args.command != "lab":
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    args.jupyter_options = unknown  # `workbench lab` passes them on to JupyterLab
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
