"""nbgrader's exchange on a shared volume, with submissions no other learner can read.

nbgrader's own exchange (``nbgrader.exchange.default``) hides a submission by its name
only: ``inbound/`` cannot be listed by learners, but each submission is a folder anyone
may enter and change (mode 0777) holding files anyone may read (0644). Where every
learner's server runs as the same user (the Zero-to-JupyterHub default, uid 1000),
nothing separates them at all. This exchange is for a hub that gives each learner
their own user id and group (deploy/hub/: ``NB_UID`` and ``NB_GID`` per learner) and
the instructors one group (``NB_GID`` 2000):

- a submission's folders become 0750 and its files 0640: its owner (the learner)
  and the instructors' group may read it, no other learner can, even knowing its name.
  Its files get the instructors' group from ``inbound/`` (set-group-id) only if they
  are made in a folder that still has that bit: nbgrader's copy takes it off the
  submission's folder (it copies the folder's mode) before it writes
  ``timestamp.txt``, and a learner cannot give a file a group they are not in. So the
  submission is copied once more, file by file, into a fresh folder made in
  ``inbound/``, which takes its place;
- ``inbound/`` has the sticky bit (the hub makes it so; elsewhere :class:`StickyRelease`
  sets it at release): a learner cannot remove or rename another's submission.

On the hub the exchange's folders are the deployment's, made as root before any server
starts (deploy/hub/values.yaml's init container ``nbgrader-exchange``; the rehearsal
runs the same script), so that no learner can make a folder there before the teacher:

- the top folder: root's, mode 0755: learners enter it and add nothing;
- ``<course>/``, ``outbound/``, ``feedback/``: root's, group the instructors', which
  write there with nbgrader's ``groupshared`` setting (2775, 2775, 2771: a learner
  reads what is released, and opens feedback only by its secret name);
- ``<course>/inbound/``: 3773, sticky: every learner may hand in, none may list it or
  remove another's submission; the instructors' group reads it.

nbgrader's learner side insists on a top folder everyone may write to: the learners'
steps here (:class:`ClosedRootFetch`, :class:`ClosedRootFetchFeedback`,
:class:`ClosedRootList`, :class:`PrivateSubmit`) ask only that they may enter it.

Name them in nbgrader's config (the image's /etc/jupyter/nbgrader_config.py does)::

    c.ExchangeFactory.submit = "workbench.teaching.classroom.exchange.PrivateSubmit"
    c.ExchangeFactory.fetch_assignment = "workbench.teaching.classroom.exchange.ClosedRootFetch"
    ...

and, on the instructors' side (deploy/hub/jupyter-instructor/nbgrader_config.py)::

    c.CourseDirectory.groupshared = True
    c.ExchangeFactory.collect = "workbench.teaching.classroom.exchange.SafeCollect"

:class:`SafeCollect` trusts nothing a learner put in ``inbound/``: a submission holding
a symbolic link (to the teacher's source notebook, say), a hard link, a named pipe, a
socket or a device is skipped and reported, and the learner's newest *clean* submission
is collected instead; the others are collected as usual. A submission's time is taken
from the file system (the last change of its folder or of a file in it, which its owner
cannot set back or forward), not from its name or its ``timestamp.txt``, which the
learner wrote: a folder named for 2099 is no newer than when it was made. What the
learner's ``timestamp.txt`` claimed is kept beside it, as ``claimed_timestamp.txt``, for
the class report to flag a forged time.

A submission is bound to the user id that wrote it, not to the name it carries: a
learner can name a folder ``alice+lesson03+...`` (``nbgrader submit --student=alice``,
or ``JUPYTERHUB_USER=alice`` on their server), but it stays theirs on the file system.
:class:`SafeCollect` collects a submission only if its folder and every file in it
belong to the user id of the learner it is named for, and reports the others
("submitted as alice by uid 10042"). That id comes from ``/etc/passwd`` where learners
are Unix users (``c.SafeCollect.learner_uids = "passwd"``, the default), or from the
hub's own rule where each learner's server runs under an id the hub chose
(``"hub"``: :func:`hub_uid`, the function deploy/hub/values.yaml's ``per_user_identity``
gives servers their ids by). :class:`PrivateSubmit` refuses ``--student`` naming someone
else at once, so an honest mistake is told at submit, not at collect.

:class:`StickyRelease` is for an exchange nobody made ready, nbgrader's own (a top
folder everyone may write to), where a learner may make ``exchange/<course>`` before
the first release, to keep the teacher out: it refuses a course folder its instructor
does not own, moves it aside where the exchange allows, and otherwise stops, naming its
owner and the command that removes it. On the hub it only keeps ``inbound/`` sticky.

Fetching and feedback stay nbgrader's: feedback is released under a name only the
submitting learner can work out (a hash of their submission's secret).
"""

from __future__ import annotations

import datetime
import glob
import hashlib
import os
import pwd
import secrets
import shutil
import stat
from pathlib import Path

from nbgrader.exchange.default.collect import ExchangeCollect
from nbgrader.exchange.default.exchange import Exchange
from nbgrader.exchange.default.fetch_assignment import ExchangeFetchAssignment
from nbgrader.exchange.default.fetch_feedback import ExchangeFetchFeedback
from nbgrader.exchange.default.list import ExchangeList
from nbgrader.exchange.default.release_assignment import ExchangeReleaseAssignment
from nbgrader.exchange.default.submit import ExchangeSubmit
from nbgrader.utils import check_directory, get_username
from traitlets import Enum

from .coursedir import CLAIMED

SUBMISSION_DIR_MODE = 0o750  # owner: all; the instructors' group: read and enter
SUBMISSION_FILE_MODE = 0o640
HUB_FIRST_UID = 10000  # the hub's user ids start here (deploy/hub/values.yaml)
HUB_UID_BITS = 30  # ids below 10000 + 2**30: under 2**31, which every tool takes


def make_private(folder: Path) -> None:
    """``folder`` and everything in it readable by its owner and its group only."""
    for parent, dirs, files in os.walk(folder):
        for name in files:
            os.chmod(Path(parent) / name, SUBMISSION_FILE_MODE)
        for name in dirs:
            os.chmod(Path(parent) / name, SUBMISSION_DIR_MODE)
    os.chmod(folder, SUBMISSION_DIR_MODE)


def regroup(folder: Path) -> None:
    """Copy ``folder`` into a fresh folder beside it, which takes its name: every file
    made anew under the parent's set-group-id bit, so with the parent's group."""
    fresh = folder.with_name(f".{folder.name}.{secrets.token_hex(8)}")
    fresh.mkdir()
    for parent, dirs, files in os.walk(folder):
        target = fresh / Path(parent).relative_to(folder)
        for name in dirs:
            (target / name).mkdir()
        for name in files:
            shutil.copyfile(Path(parent) / name, target / name)  # contents only
    shutil.rmtree(folder)
    fresh.rename(folder)


class ClosedRoot(Exchange):
    """A learner's step on an exchange whose top folder the deployment made, closed to
    learners (mode 0755, root's): they need to enter it, not to write to it as
    nbgrader's own check asks (it would refuse every fetch and submit there)."""

    def ensure_root(self) -> None:
        if not check_directory(self.root, read=True, execute=True):
            self.fail(f"The exchange {self.root} is missing or closed to you: ask your instructor.")


class ClosedRootFetch(ClosedRoot, ExchangeFetchAssignment):
    """nbgrader's fetch of an assignment, on an exchange closed at the top."""


class ClosedRootFetchFeedback(ClosedRoot, ExchangeFetchFeedback):
    """nbgrader's fetch of feedback, on an exchange closed at the top."""


class ClosedRootList(ClosedRoot, ExchangeList):
    """nbgrader's list (the Assignments tab), on an exchange closed at the top."""


class PrivateSubmit(ClosedRoot, ExchangeSubmit):
    """nbgrader's submit, then the submission made private to the learner and instructors.
    ``--student`` may name only the learner who runs it: collect would skip a submission
    named for someone else anyway (:class:`SafeCollect`)."""

    def init_dest(self) -> None:
        me, named = get_username(), self.coursedir.student_id
        if named not in ("*", me):
            self.fail(
                f"You can submit only as yourself ({me}), not as {named}: leave out "
                "--student. A submission is bound to the user who wrote it, and one "
                "under another learner's name is not collected."
            )
        super().init_dest()

    def copy_files(self) -> None:
        super().copy_files()
        submission = Path(self.inbound_path) / self.assignment_filename
        regroup(submission)
        make_private(submission)


class StickyRelease(ExchangeReleaseAssignment):
    """nbgrader's release, and ``inbound/`` with the sticky bit: each learner may remove
    only their own submission (the instructor, who owns ``inbound/``, any). On an
    exchange nobody made ready (not groupshared), a course folder the instructor does
    not own is moved aside first, or named and refused."""

    def init_dest(self) -> None:
        if not self.coursedir.groupshared:
            self.claim_course_folder(Path(self.root) / self.coursedir.course_id)
        super().init_dest()
        inbound = Path(self.inbound_path)
        mode = stat.S_IMODE(inbound.stat().st_mode)
        if not mode & stat.S_ISVTX:
            os.chmod(inbound, mode | stat.S_ISVTX)

    def claim_course_folder(self, course: Path) -> None:
        """Move aside a course folder (or link) that is not the instructor's, so that the
        release makes its own; stop, saying whose it is and how to remove it, where the
        exchange's sticky bit keeps it there."""
        try:
            info = os.lstat(course)
        except FileNotFoundError:
            return
        if info.st_uid == os.geteuid() and stat.S_ISDIR(info.st_mode):
            return
        owner = user_name(info.st_uid)
        made_by = owner.replace(" ", "")  # "uid 1234", for an id with no name here
        aside = course.with_name(f".{course.name}.made-by-{made_by}-{secrets.token_hex(4)}")
        try:
            course.rename(aside)
        except OSError:
            self.fail(
                f"The exchange's course folder {course} belongs to {owner} "
                f"(uid {info.st_uid}), not to you (uid {os.geteuid()}): a learner may have "
                "made it before your first release. Nothing was released. The exchange "
                "keeps others from removing it; its owner or an administrator can: "
                f"sudo mv {course} {aside}, then release again. (deploy/hub/ makes the "
                "course folder itself, before any learner can.)"
            )
        self.log.warning(
            "The exchange's course folder %s belonged to %s (uid %d), not to you: moved "
            "aside to %s, and a course folder of yours made in its place.",
            course,
            owner,
            info.st_uid,
            aside,
        )


def user_name(uid: int) -> str:
    """The name of user id ``uid`` on this machine, or ``uid <n>`` if it has none."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def hub_uid(name: str) -> int:
    """The user id the hub's servers run under for the hub user ``name``: 10000 plus 30
    bits of the SHA-256 of the name. deploy/hub/values.yaml's ``per_user_identity`` has
    the same function (tests/test_hub_values.py checks they agree), so the instructors'
    collect works out each learner's id from the name alone, as no pod can look up
    another's."""
    digest = hashlib.sha256(name.encode("utf-8")).digest()
    return HUB_FIRST_UID + int.from_bytes(digest[:4], "big") % 2**HUB_UID_BITS


def passwd_uid(name: str) -> int:
    """The user id of the Unix user ``name`` (learners who are Unix users of one machine)."""
    return pwd.getpwnam(name).pw_uid


LEARNER_UIDS = {"passwd": passwd_uid, "hub": hub_uid}


class UnsafeSubmission(Exception):
    """A submission holding something that is not a plain file or folder."""


def check_submission(folder: Path) -> None:
    """Raise :class:`UnsafeSubmission` if ``folder``, or anything in it, is a symbolic
    link, a hard link (a file with more than one name), a pipe, a socket or a device."""
    for path in [folder, *walk_without_links(folder)]:
        info = os.lstat(path)
        kind = stat.S_IFMT(info.st_mode)
        if kind == stat.S_IFDIR:
            continue
        if kind != stat.S_IFREG:
            raise UnsafeSubmission(f"{path.relative_to(folder.parent)} is {kind_name(kind)}")
        if info.st_nlink > 1:
            raise UnsafeSubmission(
                f"{path.relative_to(folder.parent)} is a hard link ({info.st_nlink} names)"
            )


def check_owner(folder: Path, name: str, uid: int) -> None:
    """Raise :class:`UnsafeSubmission` unless ``folder`` and everything in it belong to
    ``uid``, the user id of the learner ``name`` it is named for."""
    for path in [folder, *walk_without_links(folder)]:
        owner = os.lstat(path).st_uid
        if owner != uid:
            where = "" if path == folder else f" (its {path.relative_to(folder)})"
            raise UnsafeSubmission(
                f"submitted as {name} by uid {owner}{where}; {name} is uid {uid}"
            )


def walk_without_links(folder: Path) -> list[Path]:
    """Everything under ``folder``; symbolic links listed, never followed."""
    found = []
    for parent, dirs, files in os.walk(folder, followlinks=False):
        found += [Path(parent) / name for name in [*dirs, *files]]
    return found


def kind_name(kind: int) -> str:
    names = {
        stat.S_IFLNK: "a symbolic link",
        stat.S_IFIFO: "a named pipe",
        stat.S_IFSOCK: "a socket",
        stat.S_IFCHR: "a character device",
        stat.S_IFBLK: "a block device",
    }
    return names.get(kind, "not a plain file")


def changed_at(folder: Path) -> datetime.datetime:
    """When ``folder`` or anything in it last changed (inode change time, UTC, naive as
    nbgrader's times are): its owner cannot set it, as they can a file's modification time."""
    latest = max(os.lstat(path).st_ctime for path in [folder, *walk_without_links(folder)])
    return datetime.datetime.fromtimestamp(latest, datetime.timezone.utc).replace(tzinfo=None)


def copy_plain_files(src: Path, dest: Path, ignore=None) -> None:
    """Copy the folder ``src`` into ``dest``, plain files and folders only: each file is
    opened without following a link and checked again as it is read, so a link put in
    its place after :func:`check_submission` is refused, not followed."""
    dest.mkdir(parents=True)
    for parent, dirs, files in os.walk(src, followlinks=False):
        here = Path(parent)
        skipped = set(ignore(str(here), dirs + files)) if ignore else set()
        dirs[:] = [d for d in dirs if d not in skipped]
        target = dest / here.relative_to(src)
        for name in dirs:
            if stat.S_ISLNK(os.lstat(here / name).st_mode):
                raise UnsafeSubmission(f"{name} became a symbolic link")
            (target / name).mkdir()
        for name in files:
            if name not in skipped:
                copy_plain_file(here / name, target / name)


def copy_plain_file(src: Path, dest: Path) -> None:
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(src, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
            raise UnsafeSubmission(f"{src.name} is no longer a plain file")
        with open(fd, "rb", closefd=False) as source, open(dest, "xb") as target:
            shutil.copyfileobj(source, target)
    finally:
        os.close(fd)


class SafeCollect(ExchangeCollect):
    """nbgrader's collect, trusting nothing a learner put in ``inbound/`` (see the
    module's docstring): unsafe submissions skipped and reported, times from the file
    system, files copied without following a link, each submission collected only if it
    belongs to the learner it is named for."""

    learner_uids = Enum(
        sorted(LEARNER_UIDS),
        default_value="passwd",
        help="Where a learner's user id comes from: 'passwd' (learners are Unix users "
        "of this machine) or 'hub' (deploy/hub/'s servers: hub_uid of the name).",
    ).tag(config=True)

    def learner_uid(self, name: str) -> int:
        try:
            return LEARNER_UIDS[self.learner_uids](name)
        except KeyError:
            raise UnsafeSubmission(f"no user named {name} on this machine") from None

    def init_src(self) -> None:
        super().init_src()  # the course's folders and due date; the choice is made here
        student = self.coursedir.student_id or "*"
        pattern = os.path.join(self.inbound_path, f"{student}+{self.coursedir.assignment_id}+*")
        by_learner: dict[str, list[dict]] = {}
        for path in glob.glob(pattern):
            record = self.checked_record(Path(path))
            if record is not None:
                by_learner.setdefault(record["username"], []).append(record)
        self.src_records = [self.chosen(records) for records in by_learner.values()]

    def checked_record(self, folder: Path) -> dict | None:
        """The record of a clean submission, timed by the file system; None (reported)
        for an unsafe one."""
        record = self._path_to_record(str(folder))
        try:
            check_submission(folder)
            check_owner(folder, record["username"], self.learner_uid(record["username"]))
            record["timestamp"] = changed_at(folder)
        except (UnsafeSubmission, OSError) as err:
            self.log.error(
                "Skipped the submission %s of %s: %s. It is not collected; the learner's "
                "newest clean submission is, if there is one.",
                folder.name,
                record["username"],
                err,
            )
            return None
        return record

    def chosen(self, records: list[dict]) -> dict:
        """The newest submission (before the due date, where that is asked for)."""
        newest = sorted(records, key=lambda record: record["timestamp"], reverse=True)
        if self.duedate is not None and self.before_duedate:
            in_time = [r for r in newest if r["timestamp"] <= self.duedate]
            return in_time[0] if in_time else newest[0]
        return newest[0]

    def do_copy(self, src, dest, log=None) -> None:
        """Plain files only; then the time the file system gives, in ``timestamp.txt``."""
        from nbgrader.utils import ignore_patterns

        ignore = ignore_patterns(
            exclude=self.coursedir.ignore,
            include=self.coursedir.include,
            max_file_size=self.coursedir.max_file_size,
            log=self.log,
        )
        record = next(r for r in self.src_records if r["filename"] == Path(src).name)
        try:
            copy_plain_files(Path(src), Path(dest), ignore)
        except (UnsafeSubmission, OSError) as err:
            shutil.rmtree(dest, ignore_errors=True)
            self.log.error("Skipped the submission %s: %s", Path(src).name, err)
            return
        stamp = Path(dest) / "timestamp.txt"
        if stamp.is_file():
            stamp.rename(Path(dest) / CLAIMED)
        stamp.write_text(record["timestamp"].strftime("%Y-%m-%d %H:%M:%S.%f UTC") + "\n")
