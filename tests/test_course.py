"""The learner's copies: solutions stripped as nbgrader does, made once, reset on request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.teaching import cli, course

ROOT = Path(__file__).resolve().parent.parent


def solution_cell(source: str, grade_id: str = "t-one") -> dict:
    meta = {"grade": False, "solution": True, "locked": False, "grade_id": grade_id}
    return {
        "cell_type": "code",
        "metadata": {"nbgrader": meta},
        "source": source,
        "outputs": [],
        "execution_count": None,
    }


def notebook(*cells: dict) -> dict:
    return {"cells": list(cells), "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def test_a_solution_region_becomes_the_stub_at_its_indent():
    cell = solution_cell(
        "def rule(orig, grad):\n    y = orig.out\n    ### BEGIN SOLUTION\n"
        "    return [grad * y]\n    ### END SOLUTION\n"
    )
    assert course.strip_cell(cell)["source"] == (
        "def rule(orig, grad):\n    y = orig.out\n    # YOUR CODE HERE\n"
        "    raise NotImplementedError()\n"
    )


def test_a_solution_cell_without_markers_is_replaced_whole_and_others_are_kept():
    plain = {"cell_type": "code", "metadata": {}, "source": "x = 1  # BEGIN SOLUTION-less"}
    whole = solution_cell("answer = 42")
    stripped = course.student_version(notebook(plain, whole))
    assert stripped["cells"][0]["source"] == plain["source"]
    assert stripped["cells"][1]["source"] == "# YOUR CODE HERE\nraise NotImplementedError()"


def test_an_unclosed_region_is_an_error():
    with pytest.raises(ValueError, match="never ends"):
        course.strip_cell(solution_cell("### BEGIN SOLUTION\nx = 1\n"))


def write_lessons(folder: Path) -> None:
    folder.mkdir()
    for name in ("01_one.ipynb", "02_two.ipynb"):
        cell = solution_cell("### BEGIN SOLUTION\nanswer = 1\n### END SOLUTION", name[:2])
        (folder / name).write_text(json.dumps(notebook(cell)))


def test_copies_are_made_once_and_never_overwritten(tmp_path):
    lessons, mine = tmp_path / "lessons", tmp_path / "my-lessons"
    write_lessons(lessons)
    made = course.make_copies(lessons, mine)
    assert [p.name for p in made] == ["01_one.ipynb", "02_two.ipynb"]
    copy = json.loads((mine / "01_one.ipynb").read_text())
    assert "answer = 1" not in copy["cells"][0]["source"]
    (mine / "01_one.ipynb").write_text("my work")
    assert course.make_copies(lessons, mine) == []
    assert (mine / "01_one.ipynb").read_text() == "my work"
    assert "answer = 1" in (lessons / "01_one.ipynb").read_text()  # the original is untouched


def test_reset_gives_a_fresh_copy_and_keeps_the_old_one_aside(tmp_path, capsys):
    lessons, mine = tmp_path / "lessons", tmp_path / "my-lessons"
    write_lessons(lessons)
    course.make_copies(lessons, mine)
    (mine / "02_two.ipynb").write_text("my work")
    args = ["lessons", "--lessons", str(lessons), "--mine", str(mine), "--reset", "02"]
    assert cli.main(args) == 0
    fresh = json.loads((mine / "02_two.ipynb").read_text())
    assert "YOUR CODE HERE" in fresh["cells"][0]["source"]
    kept = list((mine / "before-reset").iterdir())
    assert len(kept) == 1 and kept[0].read_text() == "my work"
    assert "kept as" in capsys.readouterr().out
    assert sorted(p.name for p in mine.glob("*.ipynb")) == ["01_one.ipynb", "02_two.ipynb"]


def test_copies_kept_by_resets_differ_in_their_first_characters(tmp_path, monkeypatch):
    """A file browser cuts long names ("01_sigmoid_gra…"): the time comes first."""
    lessons, mine = tmp_path / "lessons", tmp_path / "my-lessons"
    write_lessons(lessons)
    course.make_copies(lessons, mine)
    times = iter(["2026-11-26 12.52.30", "2026-11-26 12.53.05"])
    monkeypatch.setattr(course.time, "strftime", lambda _format: next(times))
    kept = [course.reset_copy("02", lessons, mine)[1] for _ in range(2)]
    names = [k.name for k in kept]
    assert names == ["2026-11-26 12.52.30 02_two.ipynb", "2026-11-26 12.53.05 02_two.ipynb"]
    assert names[0][:19] != names[1][:19]


def test_reset_of_an_unknown_lesson_says_which_exist(tmp_path, capsys):
    lessons = tmp_path / "lessons"
    write_lessons(lessons)
    args = ["lessons", "--lessons", str(lessons), "--mine", str(tmp_path / "m"), "--reset", "7"]
    assert cli.main(args) == 2
    assert "no lesson named '7…'" in capsys.readouterr().err


def test_lab_opens_the_learners_copies(tmp_path, monkeypatch):
    lessons, mine = tmp_path / "lessons", tmp_path / "my-lessons"
    write_lessons(lessons)
    started = []
    monkeypatch.setattr(cli.subprocess, "call", lambda cmd: started.append(cmd) or 0)
    assert cli.main(["lab", "--lessons", str(lessons), "--mine", str(mine), "--no-browser"]) == 0
    assert f"--notebook-dir={mine.resolve()}" in started[0]
    assert sorted(p.name for p in mine.iterdir()) == ["01_one.ipynb", "02_two.ipynb"]
    assert cli.main(["lab", "--lessons", str(lessons), "--source", "--no-browser"]) == 0
    assert f"--notebook-dir={lessons.resolve()}" in started[1]


def test_my_lessons_is_ignored_by_git():
    assert "/my-lessons/" in (ROOT / ".gitignore").read_text().splitlines()


def test_solutions_are_collected_from_the_source_lessons_and_read_back(tmp_path):
    lessons = tmp_path / "lessons"
    write_lessons(lessons)
    packaged = course.write_solutions(lessons, tmp_path / "solutions.json")
    assert course.solutions_of(lessons)["02"] == "answer = 1"
    assert course.solution("02", packaged) == "answer = 1"
    assert course.solution("nowhere", packaged) is None
    assert "grad * y * (1 - y)" in course.solution("01-sigmoid-rule")  # the real course
