"""nbgrader collect that trusts nothing in inbound/ (issue 37, point 1): unit tests on a
temporary exchange, without the hub (tests/test_hub.py runs the exchange for real).

A learner can put anything in their own submission folder, or hand-make one: a symbolic
link to the teacher's source notebook, a hard link, a named pipe (which made nbgrader's
collect crash and skip the other learners), a socket; a folder named for 2099 with a
forged timestamp.txt; a folder named for another learner (issue 37, point 2).
workbench.teaching.classroom.exchange.SafeCollect skips and reports those, collects the rest,
times each submission by the file system, and collects a submission only if it belongs
to the Unix user it is named for. Each learner here is a Unix user of this machine (made
for the test, removed after it: root only, as tests/test_hub.py).
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

pytest.importorskip("nbgrader")

from nbgrader.coursedir import CourseDirectory  # noqa: E402
from traitlets.config import Config  # noqa: E402

from workbench.teaching.classroom.exchange import (  # noqa: E402
    CLAIMED,
    PrivateSubmit,
    SafeCollect,
    StickyRelease,
    hub_uid,
)

COURSE, ASSIGNMENT, NOTEBOOK = "autodiff-workbench", "lesson01", "01_sigmoid_gradient.ipynb"
SECRET = "the teacher's source: ### BEGIN SOLUTION"
LEARNERS = ("ada", "grace", "alice", "bob")


@pytest.fixture(scope="module")
def users() -> dict[str, str]:
    """``{learner: their Unix user's name}``: one Unix user per learner, made for the
    test (a random tag in each name) and removed after it."""
    if os.geteuid() != 0 or shutil.which("useradd") is None:
        pytest.skip("one Unix user per learner: needs root and useradd (as tests/test_hub.py)")
    tag = os.urandom(3).hex()
    names = {learner: f"{learner}{tag}" for learner in LEARNERS}
    made = []
    try:
        for name in names.values():
            subprocess.run(["useradd", "--no-create-home", name], check=True, capture_output=True)
            made.append(name)
        yield names
    finally:
        for name in made:
            subprocess.run(["userdel", name], check=False, capture_output=True)


@pytest.fixture
def exchange(tmp_path, monkeypatch, users) -> Path:
    bin_dir = str(Path(sys.executable).parent)  # nbgrader's gradebook calls alembic there
    monkeypatch.setenv("PATH", os.pathsep.join([bin_dir, os.environ.get("PATH", "")]))
    inbound = tmp_path / "exchange" / COURSE / "inbound"
    inbound.mkdir(parents=True)
    (tmp_path / "course").mkdir()
    (tmp_path / "source.ipynb").write_text(SECRET)
    return inbound


def submit(
    inbound: Path, learner: str, named_for: str, text: str = "an answer", by: str | None = None
) -> Path:
    """A submission folder as nbgrader's submit makes it (name, timestamp.txt, notebook),
    named for the Unix user ``learner`` and owned by ``by`` (by default, ``learner``)."""
    folder = inbound / f"{learner}+{ASSIGNMENT}+{named_for} UTC+{os.urandom(4).hex()}"
    folder.mkdir()
    (folder / "timestamp.txt").write_text(f"{named_for} UTC")
    (folder / NOTEBOOK).write_text(text)
    give(folder, by or learner)
    time.sleep(0.02)  # the next submission changes the file system later
    return folder


def give(folder: Path, user: str) -> None:
    """``folder`` and everything in it (links themselves, not what they name) to ``user``."""
    uid = pwd.getpwnam(user).pw_uid
    for path in [folder, *folder.rglob("*")]:
        os.lchown(path, uid, -1)


def settings(course: Path, exchange: Path) -> Config:
    """nbgrader's settings for lesson 1 of the course, in ``course`` and ``exchange``."""
    config = Config()
    config.CourseDirectory.root = str(course)
    config.CourseDirectory.course_id = COURSE
    config.CourseDirectory.assignment_id = ASSIGNMENT
    config.Exchange.root = str(exchange)
    return config


def run_exchange(kind: type, config: Config, caplog):
    """Run one of the exchange's steps (``kind``: SafeCollect...), its log caught."""
    step = kind(coursedir=CourseDirectory(config=config), config=config)
    step.log = logging.getLogger(kind.__name__)
    with caplog.at_level(logging.INFO, logger=kind.__name__):
        step.start()
    return step


def collect(tmp_path: Path, caplog, learner_uids: str = "passwd") -> dict[str, str]:
    """Run the collect; ``{learner: their collected notebook's text}``."""
    config = settings(tmp_path / "course", tmp_path / "exchange")
    config.SafeCollect.learner_uids = learner_uids
    run_exchange(SafeCollect, config, caplog)
    submitted = tmp_path / "course" / "submitted"
    return {
        learner.name: (learner / ASSIGNMENT / NOTEBOOK).read_text()
        for learner in sorted(submitted.iterdir())
    }


def errors(caplog) -> str:
    return "\n".join(r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR)


@pytest.mark.parametrize("kind", ["symlink", "hard link", "fifo", "socket"])
def test_an_unsafe_submission_is_skipped_and_reported_and_the_rest_collected(
    exchange, tmp_path, caplog, kind, users
):
    ada, grace = users["ada"], users["grace"]
    submit(exchange, ada, "2026-12-01 10:00:00.000000", "ada's clean answer")
    unsafe = submit(exchange, ada, "2026-12-02 10:00:00.000000")
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
    give(unsafe, ada)  # all ada's: what is refused is the kind of file
    submit(exchange, grace, "2026-12-02 11:00:00.000000", "grace's answer")
    got = collect(tmp_path, caplog)
    assert got == {ada: "ada's clean answer", grace: "grace's answer"}
    assert SECRET not in "".join(got.values())
    told = errors(caplog)
    assert unsafe.name in told and ada in told, told
    word = {"symlink": "symbolic link", "hard link": "hard link", "fifo": "named pipe"}
    assert word.get(kind, "socket") in told


def test_a_submission_folder_that_is_a_link_is_skipped(exchange, tmp_path, caplog, users):
    ada, grace = users["ada"], users["grace"]
    real = submit(tmp_path, ada, "2026-12-01 10:00:00.000000", "not in the inbox")
    link = exchange / f"{ada}+{ASSIGNMENT}+2099-01-01 00:00:00.000000 UTC+ab"
    link.symlink_to(real)
    os.lchown(link, pwd.getpwnam(ada).pw_uid, -1)
    submit(exchange, grace, "2026-12-02 11:00:00.000000", "grace's answer")
    assert collect(tmp_path, caplog) == {grace: "grace's answer"}
    assert "symbolic link" in errors(caplog)


def test_the_submission_time_is_the_file_systems_not_the_name_or_timestamp_txt(
    exchange, tmp_path, caplog, users
):
    """A hand-made folder named for 2099 (timestamp.txt too), made before the learner's
    real submissions, neither wins nor dates the submission."""
    alice = users["alice"]
    submit(exchange, alice, "2099-01-01 00:00:00.000000", "the forged one")
    submit(exchange, alice, "2026-12-02 09:00:00.000000", "alice's first")
    before = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    submit(exchange, alice, "2026-12-02 10:00:00.000000", "alice's second")
    after = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    assert collect(tmp_path, caplog) == {alice: "alice's second"}
    folder = tmp_path / "course" / "submitted" / alice / ASSIGNMENT
    from nbgrader.utils import parse_utc

    recorded = parse_utc((folder / "timestamp.txt").read_text().strip())
    assert (
        before - datetime.timedelta(seconds=1) <= recorded <= after + datetime.timedelta(seconds=1)
    ), recorded
    # What the learner's timestamp.txt claimed is kept for the class report to compare.
    assert (folder / CLAIMED).read_text() == "2026-12-02 10:00:00.000000 UTC"


# ------------------------------------------------------------------ point 2: as oneself
@pytest.mark.parametrize("whole", [True, False], ids=["folder", "one file"])
def test_a_submission_under_another_learners_name_is_skipped_and_reported(
    exchange, tmp_path, caplog, users, whole
):
    """bob hands in a folder named for alice (``nbgrader submit --student=alice``, or
    ``JUPYTERHUB_USER=alice`` on his server; later, so it would be the one collected):
    it is bob's on the file system, so alice's own submission is collected, and the
    teacher is told who handed in what. A file of bob's in alice's folder is refused too."""
    alice, bob, grace = users["alice"], users["bob"], users["grace"]
    submit(exchange, alice, "2026-12-02 09:00:00.000000", "alice's own answer")
    if whole:
        forged = submit(exchange, alice, "2026-12-02 10:00:00.000000", "bob's answer", by=bob)
    else:
        forged = submit(exchange, alice, "2026-12-02 10:00:00.000000", "alice's second")
        os.lchown(forged / NOTEBOOK, pwd.getpwnam(bob).pw_uid, -1)
    submit(exchange, bob, "2026-12-02 10:30:00.000000", "bob's own answer")
    submit(exchange, grace, "2026-12-02 11:00:00.000000", "grace's answer")
    got = collect(tmp_path, caplog)
    assert got == {alice: "alice's own answer", bob: "bob's own answer", grace: "grace's answer"}
    told = errors(caplog)
    bob_uid, alice_uid = pwd.getpwnam(bob).pw_uid, pwd.getpwnam(alice).pw_uid
    assert forged.name in told and f"submitted as {alice} by uid {bob_uid}" in told, told
    assert f"{alice} is uid {alice_uid}" in told


def test_on_the_hub_a_learners_id_is_the_hubs_id_of_their_name(exchange, tmp_path, caplog):
    """On the hub no pod can look up another's id: collect works it out as the hub's hook
    gave it (hub_uid), so a folder named for alice by any other id is refused."""
    alice, bob = "alice@school.example", "bob@school.example"
    mine = submit_owned(exchange, alice, hub_uid(alice), "2026-12-02 09:00:00.000000", "alice's")
    forged = submit_owned(exchange, alice, hub_uid(bob), "2026-12-02 10:00:00.000000", "bob's")
    assert collect(tmp_path, caplog, learner_uids="hub") == {alice: "alice's"}
    assert f"submitted as {alice} by uid {hub_uid(bob)}" in errors(caplog)
    assert mine.name not in errors(caplog) and forged.name in errors(caplog)


def submit_owned(inbound: Path, learner: str, uid: int, named_for: str, text: str) -> Path:
    """A submission named for ``learner`` owned by the user id ``uid`` (no Unix user)."""
    folder = submit(inbound, learner, named_for, text, by="root")
    for path in [folder, *folder.rglob("*")]:
        os.lchown(path, uid, -1)
    time.sleep(0.02)
    return folder


def test_submit_refuses_another_learners_name(tmp_path, monkeypatch):
    """``nbgrader submit --student=<someone else>`` stops at once, saying why."""
    from nbgrader.auth import Authenticator
    from nbgrader.exchange import ExchangeError
    from nbgrader.utils import get_username

    inbound = tmp_path / "exchange" / COURSE / "inbound"
    inbound.mkdir(parents=True)
    config = settings(tmp_path / "course", tmp_path / "exchange")
    me = get_username()
    for named, refused in [("alice", True), (me, False)]:
        config.CourseDirectory.student_id = named
        submitter = PrivateSubmit(
            coursedir=CourseDirectory(config=config),
            authenticator=Authenticator(config=config),
            config=config,
        )
        submitter.set_timestamp()
        if refused:
            with pytest.raises(ExchangeError, match=f"only as yourself \\({me}\\), not as alice"):
                submitter.init_dest()
        else:
            submitter.init_dest()
            assert submitter.assignment_filename.startswith(f"{me}+{ASSIGNMENT}+")


# ------------------------------------------------------------------ point 1: the course folder
def release(tmp_path: Path, source: Path, caplog) -> StickyRelease:
    """The instructor (this process) releases lesson 1 from ``source``."""
    return run_exchange(StickyRelease, settings(source, tmp_path / "exchange"), caplog)


@pytest.fixture
def reachable(tmp_path) -> Path:
    """A folder every user can reach (pytest's own are root's alone), removed after."""
    folder = Path(tempfile.mkdtemp(prefix="workbench-exchange-"))
    os.chmod(folder, 0o755)
    yield folder
    shutil.rmtree(folder)


@pytest.fixture
def course_source(reachable) -> Path:
    source = reachable / "course"
    (source / "release" / ASSIGNMENT).mkdir(parents=True)
    (source / "release" / ASSIGNMENT / NOTEBOOK).write_text("the released notebook")
    return source


@pytest.mark.parametrize("sticky", [False, True], ids=["exchange 0777", "exchange 1777"])
def test_a_course_folder_a_learner_made_first_does_not_keep_the_teacher_out(
    reachable, course_source, caplog, users, sticky
):
    """On an exchange nobody made ready (nbgrader's own: a top folder everyone may write
    to; the hub makes the course's folder itself, tests/test_hub_exchange.py), bob makes
    exchange/<course> before the first release. Where the exchange lets the teacher move
    it (0777), it is moved aside and the release goes on, with a warning naming bob; where
    it does not (1777: sticky), the release stops, naming bob and the command that removes
    it. Either way nothing goes into bob's folder."""
    from nbgrader.exchange import ExchangeError

    exchange = reachable / "exchange"
    exchange.mkdir()
    os.chmod(exchange, 0o1777 if sticky else 0o777)
    squatted = exchange / COURSE
    (squatted / "outbound" / ASSIGNMENT).mkdir(parents=True)
    give(squatted, users["bob"])
    bob, bob_uid = users["bob"], pwd.getpwnam(users["bob"]).pw_uid
    teacher_uid = pwd.getpwnam(users["alice"]).pw_uid  # alice teaches here
    give(course_source, users["alice"])
    if sticky:
        with pytest.raises(ExchangeError), as_user(teacher_uid):
            release(reachable, course_source, caplog)
        told = "\n".join(r.getMessage() for r in caplog.records)
        assert f"{squatted} belongs to {bob} (uid {bob_uid})" in told, told
        assert f"sudo mv {squatted} " in told and "Nothing was released" in told
        assert list((squatted / "outbound" / ASSIGNMENT).iterdir()) == []
        return
    with as_user(teacher_uid):
        release(reachable, course_source, caplog)
    told = "\n".join(r.getMessage() for r in caplog.records)
    assert f"belonged to {bob} (uid {bob_uid})" in told, told
    assert os.stat(squatted).st_uid == teacher_uid
    assert (squatted / "outbound" / ASSIGNMENT / NOTEBOOK).read_text() == "the released notebook"
    (aside,) = [p for p in exchange.iterdir() if p.name.startswith(f".{COURSE}.made-by-{bob}-")]
    assert os.stat(aside).st_uid == bob_uid


@contextlib.contextmanager
def as_user(uid: int):
    """This process acts as user ``uid`` (its effective id) inside the block: the file
    system's checks are that user's (nbgrader's modules are imported before, as root)."""
    import nbgrader.exchange.default.release_assignment  # noqa: F401

    os.seteuid(uid)
    try:
        yield
    finally:
        os.seteuid(0)


def test_the_instructors_collect_is_the_safe_one():
    """The hub's instructors run nbgrader with deploy/hub/jupyter-instructor/'s config,
    which takes each learner's id from the hub's rule."""
    from nbgrader.exchange import ExchangeFactory

    config = Config()
    path = Path(__file__).resolve().parent.parent / "deploy/hub/jupyter-instructor"
    exec((path / "nbgrader_config.py").read_text(), {"get_config": lambda: config})
    assert ExchangeFactory(config=config).collect is SafeCollect
    assert config.SafeCollect.learner_uids == "hub"


def test_the_instructors_config_sets_no_outdated_collectapp_option():
    """nbgrader warns "Use ExchangeCollect in config, not CollectApp" at every collect when
    the config names CollectApp (issue 37, point 9); the hub's own owner check is SafeCollect's."""
    from traitlets.config.loader import PyFileConfigLoader

    path = Path(__file__).resolve().parent.parent / "deploy/hub/jupyter-instructor"
    config = PyFileConfigLoader("nbgrader_config.py", str(path)).load_config()
    assert "CollectApp" not in config
    collect = SafeCollect(coursedir=CourseDirectory(config=config), config=config)
    assert collect.check_owner is False and collect.learner_uids == "hub"
