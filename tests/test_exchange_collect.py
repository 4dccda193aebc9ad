"""nbgrader collect that trusts nothing in inbound/ (issue 37, point 1): unit tests on a
temporary exchange, without the hub (tests/test_hub.py runs the exchange for real).

A learner can put anything in their own submission folder, or hand-make one: a symbolic
link to the teacher's source notebook, a hard link, a named pipe (which made nbgrader's
collect crash and skip the other learners), a socket; a folder named for 2099 with a
forged timestamp.txt. workbench.teaching.classroom.exchange.SafeCollect skips and reports those,
collects the rest, and times each submission by the file system.
"""

from __future__ import annotations

import datetime
import logging
import os
import socket
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("nbgrader")

from nbgrader.coursedir import CourseDirectory  # noqa: E402
from traitlets.config import Config  # noqa: E402

from workbench.teaching.classroom.exchange import SafeCollect  # noqa: E402

COURSE, ASSIGNMENT, NOTEBOOK = "autodiff-workbench", "lesson01", "01_sigmoid_gradient.ipynb"
SECRET = "the teacher's source: ### BEGIN SOLUTION"


@pytest.fixture
def exchange(tmp_path, monkeypatch) -> Path:
    bin_dir = str(Path(sys.executable).parent)  # nbgrader's gradebook calls alembic there
    monkeypatch.setenv("PATH", os.pathsep.join([bin_dir, os.environ.get("PATH", "")]))
    inbound = tmp_path / "exchange" / COURSE / "inbound"
    inbound.mkdir(parents=True)
    (tmp_path / "course").mkdir()
    (tmp_path / "source.ipynb").write_text(SECRET)
    return inbound


def submit(inbound: Path, learner: str, named_for: str, text: str = "an answer") -> Path:
    """A submission folder as nbgrader's submit makes it (name, timestamp.txt, notebook)."""
    folder = inbound / f"{learner}+{ASSIGNMENT}+{named_for} UTC+{os.urandom(4).hex()}"
    folder.mkdir()
    (folder / "timestamp.txt").write_text(f"{named_for} UTC")
    (folder / NOTEBOOK).write_text(text)
    time.sleep(0.02)  # the next submission changes the file system later
    return folder


def collect(tmp_path: Path, caplog) -> dict[str, str]:
    """Run the collect; ``{learner: their collected notebook's text}``."""
    config = Config()
    config.CourseDirectory.root = str(tmp_path / "course")
    config.CourseDirectory.course_id = COURSE
    config.CourseDirectory.assignment_id = ASSIGNMENT
    config.Exchange.root = str(tmp_path / "exchange")
    collector = SafeCollect(coursedir=CourseDirectory(config=config), config=config)
    collector.log = logging.getLogger("collect")
    with caplog.at_level(logging.INFO, logger="collect"):
        collector.start()
    submitted = tmp_path / "course" / "submitted"
    return {
        learner.name: (learner / ASSIGNMENT / NOTEBOOK).read_text()
        for learner in sorted(submitted.iterdir())
    }


def errors(caplog) -> str:
    return "\n".join(r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR)


@pytest.mark.parametrize("kind", ["symlink", "hard link", "fifo", "socket"])
def test_an_unsafe_submission_is_skipped_and_reported_and_the_rest_collected(
    exchange, tmp_path, caplog, kind
):
    submit(exchange, "ada", "2026-12-01 10:00:00.000000", "ada's clean answer")
    unsafe = submit(exchange, "ada", "2026-12-02 10:00:00.000000")
    planted = unsafe / "planted.ipynb"
    if kind == "symlink":
        (unsafe / NOTEBOOK).unlink()
        (unsafe / NOTEBOOK).symlink_to(tmp_path / "source.ipynb")
    elif kind == "hard link":
        (unsafe / NOTEBOOK).unlink()
        os.link(tmp_path / "source.ipynb", unsafe / NOTEBOOK)
    elif kind == "fifo":
        os.mkfifo(planted)
    else:
        here = os.getcwd()
        os.chdir(unsafe)  # a socket's path has at most 108 bytes: bound by its name
        try:
            server = socket.socket(socket.AF_UNIX)
            server.bind(planted.name)
            server.close()
        finally:
            os.chdir(here)
    submit(exchange, "grace", "2026-12-02 11:00:00.000000", "grace's answer")
    got = collect(tmp_path, caplog)
    assert got == {"ada": "ada's clean answer", "grace": "grace's answer"}
    assert SECRET not in "".join(got.values())
    told = errors(caplog)
    assert unsafe.name in told and "ada" in told, told
    word = {"symlink": "symbolic link", "hard link": "hard link", "fifo": "named pipe"}
    assert word.get(kind, "socket") in told


def test_a_submission_folder_that_is_a_link_is_skipped(exchange, tmp_path, caplog):
    real = submit(tmp_path, "x", "2026-12-01 10:00:00.000000", "not in the inbox")
    (exchange / f"ada+{ASSIGNMENT}+2099-01-01 00:00:00.000000 UTC+ab").symlink_to(real)
    submit(exchange, "grace", "2026-12-02 11:00:00.000000", "grace's answer")
    assert collect(tmp_path, caplog) == {"grace": "grace's answer"}
    assert "symbolic link" in errors(caplog)


def test_the_submission_time_is_the_file_systems_not_the_name_or_timestamp_txt(
    exchange, tmp_path, caplog
):
    """A hand-made folder named for 2099 (timestamp.txt too), made before the learner's
    real submissions, neither wins nor dates the submission."""
    submit(exchange, "alice", "2099-01-01 00:00:00.000000", "the forged one")
    submit(exchange, "alice", "2026-12-02 09:00:00.000000", "alice's first")
    before = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    submit(exchange, "alice", "2026-12-02 10:00:00.000000", "alice's second")
    after = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    assert collect(tmp_path, caplog) == {"alice": "alice's second"}
    stamp = tmp_path / "course" / "submitted" / "alice" / ASSIGNMENT / "timestamp.txt"
    from nbgrader.utils import parse_utc

    recorded = parse_utc(stamp.read_text().strip())
    assert (
        before - datetime.timedelta(seconds=1) <= recorded <= after + datetime.timedelta(seconds=1)
    ), recorded


def test_the_instructors_collect_is_the_safe_one():
    """The hub's instructors run nbgrader with deploy/hub/jupyter-instructor/'s config."""
    from nbgrader.exchange import ExchangeFactory

    config = Config()
    path = Path(__file__).resolve().parent.parent / "deploy/hub/jupyter-instructor"
    exec((path / "nbgrader_config.py").read_text(), {"get_config": lambda: config})
    assert ExchangeFactory(config=config).collect is SafeCollect
