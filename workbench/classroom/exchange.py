"""nbgrader's exchange on a shared volume, with submissions no other learner can read.

nbgrader's own exchange (``nbgrader.exchange.default``) hides a submission by its name
only: ``inbound/`` cannot be listed by learners, but each submission is a folder anyone
may enter and change (mode 0777) holding files anyone may read (0644). Where every
learner's server runs as the same user (the Zero-to-JupyterHub default, uid 1000),
nothing separates them at all. This exchange is for a hub that gives each learner
their own user id (deploy/hub/: ``NB_UID`` per learner) and the instructors one
group (``NB_GID`` 2000):

- a submission's folders become 0750 and its files 0640: its owner (the learner)
  and the instructors' group may read it, no other learner can, even knowing its name.
  Its files get the instructors' group from ``inbound/`` (set-group-id) only if they
  are made in a folder that still has that bit: nbgrader's copy takes it off the
  submission's folder (it copies the folder's mode) before it writes
  ``timestamp.txt``, and a learner cannot give a file a group they are not in. So the
  submission is copied once more, file by file, into a fresh folder made in
  ``inbound/``, which takes its place;
- ``inbound/`` gets the sticky bit at release: a learner cannot remove or rename
  another's submission.

Name it in nbgrader's config (the image's /etc/jupyter/nbgrader_config.py does)::

    c.ExchangeFactory.submit = "workbench.classroom.exchange.PrivateSubmit"
    c.ExchangeFactory.release_assignment = "workbench.classroom.exchange.StickyRelease"

Fetching, collecting and feedback stay nbgrader's: feedback is released under a name
only the submitting learner can work out (a hash of their submission's secret).
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
from pathlib import Path

from nbgrader.exchange.default.release_assignment import ExchangeReleaseAssignment
from nbgrader.exchange.default.submit import ExchangeSubmit

SUBMISSION_DIR_MODE = 0o750  # owner: all; the instructors' group: read and enter
SUBMISSION_FILE_MODE = 0o640


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


class PrivateSubmit(ExchangeSubmit):
    """nbgrader's submit, then the submission made private to the learner and instructors."""

    def copy_files(self) -> None:
        super().copy_files()
        submission = Path(self.inbound_path) / self.assignment_filename
        regroup(submission)
        make_private(submission)


class StickyRelease(ExchangeReleaseAssignment):
    """nbgrader's release, and ``inbound/`` with the sticky bit: each learner may remove
    only their own submission (the instructor, who owns ``inbound/``, any)."""

    def init_dest(self) -> None:
        super().init_dest()
        inbound = Path(self.inbound_path)
        mode = stat.S_IMODE(inbound.stat().st_mode)
        if not mode & stat.S_ISVTX:
            os.chmod(inbound, mode | stat.S_ISVTX)
