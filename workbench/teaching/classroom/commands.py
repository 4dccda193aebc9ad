"""The teacher's ``workbench`` commands: ``course``, ``answer-key``, ``class-report``, ``schedule``.

Each prints one line per thing it wrote, and on a bad request one clear line on
stderr with exit status 2 (never a traceback).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import course

EXAM_MADE = " (exam: no hints; WORKBENCH_EXAM=1 set in its first code cell)"


def cmd_course(args) -> int:
    from .coursedir import make_course

    try:
        made = make_course(
            Path(args.directory).resolve(),
            args.lessons_wanted,
            whole=args.whole,
            exam=args.exam,
            course_id=args.course_id,
            lessons=Path(args.lessons),
        )
    except ValueError as err:
        print(f"workbench course: {err}", file=sys.stderr)
        return 2
    for assignment, notebooks in made.items():
        names = ", ".join(path.name for path in notebooks)
        print(f"source/{assignment}: {names}" + (EXAM_MADE if args.exam else ""))
    # nbgrader generate_assignment takes one assignment a call
    steps = " && ".join(f"nbgrader generate_assignment {name}" for name in made)
    print(f"next, in {args.directory}: {steps}")
    return 0


def cmd_answer_key(args) -> int:
    from .solution_key import write_answer_key

    out = Path(args.output)
    if not has_lessons(Path(args.lessons), "answer-key"):
        return 2
    count = write_answer_key(out, Path(args.lessons))
    print(f"wrote {out}: the solutions of {count} exercises (for the teacher only)")
    return 0


def cmd_class_report(args) -> int:
    from .class_report import as_table, class_report, save_chart, write_csv

    try:
        report = class_report(Path(args.directory), args.assignment or None)
    except (FileNotFoundError, ImportError) as err:
        print(f"workbench class-report: {err}", file=sys.stderr)
        return 2
    print(as_table(report))
    if args.csv:
        written = write_csv(report, Path(args.csv))
        print(f"wrote {', '.join(str(path) for path in written)}")
    if args.chart:
        save_chart(report, Path(args.chart))
        print(f"wrote {args.chart}")
    return 0


def cmd_schedule(args) -> int:
    from .schedule import as_markdown, schedule

    rates = {
        "words_per_minute": args.words_per_minute,
        "per_code_cell": args.minutes_per_code_cell,
        "per_point": args.minutes_per_point,
    }
    if not has_lessons(Path(args.lessons), "schedule"):
        return 2
    print(as_markdown(schedule(Path(args.lessons)), **rates))
    return 0


def has_lessons(folder: Path, command: str) -> bool:
    """True if ``folder`` holds lesson notebooks; else say so, rather than write an empty
    answer key or schedule and report success (an installed package may ship no lessons)."""
    if folder.is_dir() and any(folder.glob("[0-9]*.ipynb")):
        return True
    print(
        f"workbench {command}: no lesson notebooks in {folder}; "
        "name the course's lessons folder with --lessons",
        file=sys.stderr,
    )
    return False


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add the teacher's commands to the ``workbench`` command's subcommands."""
    from .schedule import MINUTES_PER_CODE_CELL, MINUTES_PER_POINT, WORDS_PER_MINUTE

    source = str(course.LESSONS)
    made = sub.add_parser("course", help="an nbgrader course directory made from the lessons")
    made.add_argument("directory", help="the course directory (made if missing)")
    made.add_argument(
        "lessons_wanted", nargs="*", metavar="LESSON", help="lessons by number (all if none)"
    )
    made.add_argument("--whole", action="store_true", help="one assignment, 'course', for all")
    made.add_argument(
        "--exam",
        action="store_true",
        help="take hints out and turn the exam switch (WORKBENCH_EXAM=1) on",
    )
    made.add_argument("--course-id", default="autodiff-workbench")
    made.add_argument("--lessons", default=source, help="the source lessons (solutions in)")
    made.set_defaults(func=cmd_course)

    key = sub.add_parser("answer-key", help="every exercise's solution, for the teacher")
    key.add_argument("-o", "--output", default="answer-key.md", help=".md or .ipynb")
    key.add_argument("--lessons", default=source)
    key.set_defaults(func=cmd_answer_key)

    report = sub.add_parser("class-report", help="pass rates and common mistakes, per exercise")
    report.add_argument("directory", help="the nbgrader course directory, after autograde")
    report.add_argument("--assignment", action="append", help="only this one (repeatable)")
    report.add_argument(
        "--csv",
        help="also write the report as CSV: this file by exercise, and beside it "
        "NAME-misconceptions.csv, NAME-learners.csv, NAME-suspicious.csv",
    )
    report.add_argument("--chart", help="also draw the pass rates (PNG)")
    report.set_defaults(func=cmd_class_report)

    plan = sub.add_parser("schedule", help="each lesson's estimated time to do")
    plan.add_argument("--lessons", default=source)
    plan.add_argument("--words-per-minute", type=float, default=WORDS_PER_MINUTE)
    plan.add_argument("--minutes-per-code-cell", type=float, default=MINUTES_PER_CODE_CELL)
    plan.add_argument("--minutes-per-point", type=float, default=MINUTES_PER_POINT)
    plan.set_defaults(func=cmd_schedule)
