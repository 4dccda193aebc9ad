"""The nbgrader exchange as the hub deploys it (issue 37, point 1): its folders made by
values.yaml's own init container script before any server starts, the hub's own nbgrader
settings, and one Unix user per person with the ids the hub's hook gives them.

A learner cannot make a folder in the exchange before the teacher does (another course,
the course's own folder, an assignment in ``outbound/``), and the whole path still works:
the teacher releases, two learners list, fetch and submit, the teacher collects and
returns feedback, each learner fetches their own. Each step runs in this process under
that person's user and group ids (switched back to root after it), so the file system's
checks are theirs; tests/test_hub.py runs the same through a real hub.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

pytest.importorskip("nbgrader")

from nbgrader.api import Gradebook  # noqa: E402
from nbgrader.auth import Authenticator  # noqa: E402
from nbgrader.coursedir import CourseDirectory  # noqa: E402
from nbgrader.exchange import ExchangeFactory  # noqa: E402
from test_hub_values import fake_spawner, identity_hook  # noqa: E402
from traitlets.config import Config  # noqa: E402
from traitlets.config.loader import PyFileConfigLoader  # noqa: E402

from workbench.teaching.classroom.coursedir import COURSE_ID  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
HUB = ROOT / "deploy" / "hub"
sys.path.insert(0, str(HUB))
from rehearsal_exchange import make_exchange  # noqa: E402

VALUES = yaml.safe_load((HUB / "values.yaml").read_text())
ASSIGNMENT, NOTEBOOK = "lesson01", "01_sigmoid_gradient.ipynb"
USERS_GROUP = 100  # docker-stacks' start.sh adds every server's user to it


@dataclass
class Person:
    name: str
    uid: int
    gid: int
    home: Path
    instructor: bool = False

    @property
    def groups(self) -> list[int]:
        return [self.gid, USERS_GROUP]


@pytest.fixture(scope="module")
def place():
    """A folder every user can reach (pytest's own are root's alone), removed after."""
    folder = Path(tempfile.mkdtemp(prefix="workbench-hub-exchange-"))
    os.chmod(folder, 0o755)
    yield folder
    shutil.rmtree(folder)


@pytest.fixture(scope="module")
def people(place) -> dict[str, Person]:
    """The teacher and two learners: Unix users made for the test (a random tag in each
    name) with the user and group ids values.yaml's hook gives those names, each with a
    home of their own; removed after it."""
    if os.geteuid() != 0 or shutil.which("useradd") is None:
        pytest.skip("one Unix user per person: needs root and useradd (as tests/test_hub.py)")
    tag = os.urandom(3).hex()
    names = {who: f"{who}{tag}" for who in ("teacher", "ada", "grace")}
    hook, made, found = identity_hook(), [], {}
    try:
        for who, name in names.items():
            spawner = fake_spawner(name, ["instructors"] * (who == "teacher"), list(names.values()))
            hook(spawner)
            uid, gid = int(spawner.environment["NB_UID"]), int(spawner.environment["NB_GID"])
            subprocess.run(
                ["useradd", "--no-create-home", "-N", "-u", str(uid), name],
                check=True,
                capture_output=True,
            )
            made.append(name)
            home = place / "home" / name
            home.mkdir(parents=True)
            os.chown(home, uid, gid)
            home.chmod(0o700)
            found[who] = Person(name, uid, gid, home, instructor=who == "teacher")
        yield found
    finally:
        for name in made:
            subprocess.run(["userdel", name], check=False, capture_output=True)


@contextlib.contextmanager
def as_person(person: Person):
    """This process runs as ``person`` inside the block (real and effective ids, and their
    groups, as their server would), root again after it."""
    groups = os.getgroups()
    os.setgroups(person.groups)
    os.setresgid(person.gid, person.gid, 0)
    os.setresuid(person.uid, person.uid, 0)
    try:
        yield
    finally:
        os.setresuid(0, 0, 0)
        os.setresgid(0, 0, 0)
        os.setgroups(groups)


def hub_settings(person: Person, exchange: Path, monkeypatch) -> Config:
    """nbgrader's settings on this person's server: the image's (/etc/jupyter), and the
    instructors' on top for the teacher; their home in place of ``~``."""
    monkeypatch.setenv("NBGRADER_EXCHANGE", str(exchange))
    folders = [HUB / "jupyter"] + [HUB / "jupyter-instructor"] * person.instructor
    config = Config()
    for folder in folders:
        config.merge(PyFileConfigLoader("nbgrader_config.py", str(folder)).load_config())
    config.CourseDirectory.root = str(person.home / "course")
    config.CourseDirectory.assignment_id = ASSIGNMENT
    config.Exchange.assignment_dir = str(person.home)
    config.Exchange.cache = str(person.home / ".cache" / "nbgrader")
    return config


def step(person: Person, kind: str, exchange: Path, monkeypatch):
    """One nbgrader step (``kind``: ExchangeFactory's, as "FetchAssignment") as ``person``,
    with their server's settings; what it returns."""
    config = hub_settings(person, exchange, monkeypatch)
    make = getattr(ExchangeFactory(config=config), kind)
    coursedir, authenticator = CourseDirectory(config=config), Authenticator(config=config)
    with as_person(person):
        return make(coursedir=coursedir, authenticator=authenticator, config=config).start()


def gradebook(teacher: Person, monkeypatch) -> None:
    """The course's gradebook, made as root (nbgrader runs alembic from this Python, which
    only root can reach here), then the teacher's as their whole course directory is."""
    bin_dir = str(Path(sys.executable).parent)
    monkeypatch.setenv("PATH", os.pathsep.join([bin_dir, os.environ.get("PATH", "")]))
    course = teacher.home / "course"
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", COURSE_ID):
        pass
    for path in [course, *course.rglob("*")]:
        os.chown(path, teacher.uid, teacher.gid)


def refused(person: Person, action) -> bool:
    with as_person(person):
        try:
            action()
        except PermissionError:
            return True
    return False


def test_no_learner_takes_a_folder_first_and_the_class_still_runs(place, people, monkeypatch):
    teacher, ada, grace = people["teacher"], people["ada"], people["grace"]
    exchange = place / "exchange"
    make_exchange(exchange, VALUES)
    course = exchange / COURSE_ID

    # Before the first release: the course's folders are there, root's and the
    # instructors'; a learner can make nothing in the exchange, nor move what is there.
    info = course.stat()
    assert (info.st_uid, info.st_gid) == (0, teacher.gid)
    assert stat.S_IMODE(exchange.stat().st_mode) == 0o755
    for made_first in [
        exchange / "othercourse",
        exchange / f".{COURSE_ID}",
        course / "mine",
        course / "outbound" / ASSIGNMENT,
        course / "feedback" / "mine",
    ]:
        assert refused(grace, made_first.mkdir), made_first
    assert refused(grace, lambda: course.rename(exchange / "moved"))
    assert refused(grace, lambda: os.listdir(course / "inbound"))

    # The teacher releases lesson 1 into the deployment's folders (as a group).
    source = teacher.home / "course" / "release" / ASSIGNMENT
    source.mkdir(parents=True)
    (source / NOTEBOOK).write_text("the released notebook")
    gradebook(teacher, monkeypatch)
    step(teacher, "ReleaseAssignment", exchange, monkeypatch)

    # Each learner lists, fetches, answers and submits.
    for learner in (ada, grace):
        listed = step(learner, "List", exchange, monkeypatch)
        assert [a["assignment_id"] for a in listed] == [ASSIGNMENT]
        step(learner, "FetchAssignment", exchange, monkeypatch)
        fetched = learner.home / ASSIGNMENT / NOTEBOOK
        assert fetched.read_text() == "the released notebook"
        with as_person(learner):
            fetched.write_text(f"{learner.name}'s answer")
        step(learner, "Submit", exchange, monkeypatch)

    # The teacher collects each learner's own, and returns feedback.
    step(teacher, "Collect", exchange, monkeypatch)
    submitted = teacher.home / "course" / "submitted"
    for learner in (ada, grace):
        handed_in = submitted / learner.name / ASSIGNMENT
        assert (handed_in / NOTEBOOK).read_text() == f"{learner.name}'s answer"
        with as_person(teacher):
            feedback = teacher.home / "course" / "feedback" / learner.name / ASSIGNMENT
            feedback.mkdir(parents=True)
            for name in ("timestamp.txt", "submission_secret.txt"):
                shutil.copyfile(handed_in / name, feedback / name)
            (feedback / NOTEBOOK.replace(".ipynb", ".html")).write_text(f"for {learner.name}")
    step(teacher, "ReleaseFeedback", exchange, monkeypatch)
    assert refused(grace, lambda: os.listdir(course / "feedback"))

    # Each learner fetches their own feedback, and only theirs.
    for learner in (ada, grace):
        step(learner, "FetchFeedback", exchange, monkeypatch)
        (page,) = (learner.home / ASSIGNMENT / "feedback").glob("*/*.html")
        assert page.read_text() == f"for {learner.name}"
    assert pwd.getpwuid(os.getuid()).pw_name == "root"
